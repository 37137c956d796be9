//! The CSV report: a header and one row per item, the identity first, then each side's
//! fields side by side (`baseline_*`, `variant_*`).
//!
//! Cells: null (and a side without a record) is blank; strings are written as they are;
//! numbers and booleans as JSON writes them; arrays and objects JSON-encoded. A string
//! cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'`
//! so that spreadsheets show it as text instead of evaluating it as a formula. That makes
//! CSV a viewing format: JSONL keeps exact values (and the difference of null and "").

use serde_json::{Map, Value};
use std::io::{self, Write};

use super::{Load, LoadedItem};
use crate::compare::{Comparison, Side};
use crate::record::{Locator, Record};

/// The identity columns, in order.
const IDENTITY_COLUMNS: [&str; 7] = [
    "outcome",
    "benchmark",
    "language",
    "script",
    "question_id",
    "filter",
    "repeat_id",
];

/// The per-side columns, in order, each written once with `baseline_` and `variant_`.
const SIDE_COLUMNS: [&str; 17] = [
    "run_id",
    "variant_id",
    "model",
    "rephrasing_model",
    "correct",
    "input",
    "target",
    "prediction",
    "response",
    "scores",
    "metrics",
    "warnings",
    "extra",
    "source_path",
    "source_line",
    "source_member",
    "source_pointer",
];

/// Characters that make a spreadsheet read a cell as a formula.
const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// A text cell, with a leading `'` when it would start a spreadsheet formula.
pub fn text_cell(text: &str) -> String {
    if text.starts_with(FORMULA_STARTS) {
        format!("'{text}")
    } else {
        text.to_owned()
    }
}

/// The cell of a JSON value: blank for null, text for strings, JSON for the rest.
pub fn value_cell(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(text) => text_cell(text),
        other => other.to_string(),
    }
}

fn map_cell(map: &Map<String, Value>) -> String {
    serde_json::to_string(map).unwrap_or_default()
}

fn optional_cell(text: Option<&str>) -> String {
    text.map(text_cell).unwrap_or_default()
}

fn side_cells(record: Option<&Record>, row: &mut Vec<String>) {
    let Some(r) = record else {
        row.extend(std::iter::repeat_n(String::new(), SIDE_COLUMNS.len()));
        return;
    };
    row.extend([
        text_cell(&r.run_id),
        text_cell(&r.variant_id),
        text_cell(&r.model),
        optional_cell(r.rephrasing_model.as_deref()),
        r.correct.map(|c| c.to_string()).unwrap_or_default(),
        value_cell(&r.input),
        value_cell(&r.target),
        value_cell(&r.prediction),
        value_cell(&r.response),
        map_cell(&r.scores),
        map_cell(&r.metrics),
        serde_json::to_string(&r.warnings).unwrap_or_default(),
        map_cell(&r.extra),
        text_cell(&r.source.path),
        r.source
            .line_number()
            .map(|line| line.to_string())
            .unwrap_or_default(),
        match &r.source.locator {
            Locator::Member(member) => text_cell(member),
            _ => String::new(),
        },
        match &r.source.locator {
            Locator::Pointer(pointer) => text_cell(pointer),
            _ => String::new(),
        },
    ]);
}

pub fn csv_error(error: ::csv::Error) -> io::Error {
    match error.into_kind() {
        ::csv::ErrorKind::Io(error) => error,
        other => io::Error::other(format!("{other:?}")),
    }
}

/// Writes the header and one row per item.
pub fn render(comparison: &Comparison, load: Load<'_>, out: &mut dyn Write) -> io::Result<()> {
    let mut writer = ::csv::Writer::from_writer(out);
    let mut header: Vec<String> = IDENTITY_COLUMNS.iter().map(|c| c.to_string()).collect();
    for side in [Side::Baseline, Side::Variant] {
        header.extend(SIDE_COLUMNS.iter().map(|c| format!("{side}_{c}")));
    }
    writer.write_record(&header).map_err(csv_error)?;
    let mut row: Vec<String> = Vec::with_capacity(header.len());
    for item in &comparison.items {
        let item = LoadedItem::load(item, &mut *load)?;
        row.clear();
        let record = item.any_record();
        row.extend([
            item.outcome.name().to_owned(),
            text_cell(&record.benchmark),
            optional_cell(record.language.as_deref()),
            optional_cell(record.script.as_deref()),
            text_cell(&record.question_id),
            text_cell(&record.filter),
            record.repeat_id.to_string(),
        ]);
        side_cells(item.baseline.as_ref(), &mut row);
        side_cells(item.variant.as_ref(), &mut row);
        writer.write_record(&row).map_err(csv_error)?;
    }
    writer.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formula_like_strings_are_escaped_for_spreadsheets() {
        // "formula-like strings are escaped for spreadsheet use"
        for formula in ["=1+1", "+1", "-2", "@SUM(A1)", "\tx", "\rx"] {
            assert_eq!(text_cell(formula), format!("'{formula}"));
        }
        assert_eq!(text_cell("Paris"), "Paris");
        assert_eq!(text_cell("a=b"), "a=b");
    }

    #[test]
    fn null_is_blank_and_nested_values_are_json_encoded() {
        // "Nested values are JSON-encoded, null is blank"
        assert_eq!(value_cell(&Value::Null), "");
        assert_eq!(value_cell(&json!({"index": 0})), "{\"index\":0}");
        assert_eq!(value_cell(&json!([1, "a"])), "[1,\"a\"]");
        assert_eq!(
            value_cell(&json!(-1.5)),
            "-1.5",
            "a number is not a formula"
        );
        assert_eq!(value_cell(&json!(true)), "true");
        assert_eq!(value_cell(&json!("=cmd")), "'=cmd");
    }
}
