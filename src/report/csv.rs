//! The CSV report: a header and one row per item, the identity first, then each side's
//! fields side by side (`baseline_*`, `variant_*`).
//!
//! Cells: null (and a side without a record) is blank; strings are written as they are;
//! numbers and booleans as JSON writes them; arrays and objects JSON-encoded. A string
//! cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'`
//! so that spreadsheets show it as text instead of evaluating it as a formula. That makes
//! CSV a viewing format: JSONL keeps exact values (and the difference of null and "").

use std::borrow::Cow;
use std::io::{self, Write};

use super::{Load, LoadedItem};
use crate::canonical_json::next_escape;
use crate::compare::{Comparison, Side};
use crate::record::{Locator, StoredField, StoredRecord};

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
pub fn text_cell(text: &str) -> Cow<'_, str> {
    if text.starts_with(FORMULA_STARTS) {
        Cow::Owned(format!("'{text}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// The cell of a stored nested value: blank for null, text for a string, its canonical
/// JSON for the rest (a string that does not decode is shown as stored). A string with
/// nothing escaped (and nothing JSON must escape) is its text between the quotes.
fn json_cell(json: Option<&str>) -> Cow<'_, str> {
    match json {
        None | Some("null") => Cow::Borrowed(""),
        Some(text) if text.starts_with('"') => {
            let inner = text
                .strip_prefix('"')
                .and_then(|rest| rest.strip_suffix('"'))
                .filter(|inner| next_escape(inner.as_bytes(), 0).is_none());
            match inner {
                Some(inner) => text_cell(inner),
                None => serde_json::from_str::<String>(text)
                    .map(|decoded| Cow::Owned(text_cell(&decoded).into_owned()))
                    .unwrap_or(Cow::Borrowed(text)),
            }
        }
        Some(text) => Cow::Borrowed(text),
    }
}

/// A text cell of an optional field (blank when absent).
pub fn optional_cell(text: Option<&str>) -> Cow<'_, str> {
    text.map(text_cell).unwrap_or_default()
}

/// Writes one side's cells of a row (blank without a record).
fn side_cells<W: Write>(
    record: Option<&StoredRecord>,
    writer: &mut ::csv::Writer<W>,
) -> ::csv::Result<()> {
    use StoredField as F;
    let Some(r) = record else {
        for _ in SIDE_COLUMNS {
            writer.write_field("")?;
        }
        return Ok(());
    };
    let text = |field: StoredField| optional_cell(r.get(field));
    let raw = |field: StoredField| Cow::Borrowed(r.get(field).unwrap_or_default());
    let line = r
        .source_line
        .filter(|_| matches!(r.locator(), Locator::Line(_)))
        .map(|line| Cow::Owned(line.to_string()))
        .unwrap_or_default();
    let correct = match r.correct {
        Some(true) => "true",
        Some(false) => "false",
        None => "",
    };
    for cell in [
        text(F::RunId),
        text(F::VariantId),
        text(F::Model),
        text(F::RephrasingModel),
        Cow::Borrowed(correct),
        json_cell(r.get(F::Input)),
        json_cell(r.get(F::Target)),
        json_cell(r.get(F::Prediction)),
        json_cell(r.get(F::Response)),
        raw(F::Scores),
        raw(F::Metrics),
        raw(F::Warnings),
        raw(F::Extra),
        text(F::SourcePath),
        line,
        text(F::SourceMember),
        text(F::SourcePointer),
    ] {
        writer.write_field(cell.as_bytes())?;
    }
    Ok(())
}

pub fn csv_error(error: ::csv::Error) -> io::Error {
    match error.into_kind() {
        ::csv::ErrorKind::Io(error) => error,
        other => io::Error::other(format!("{other:?}")),
    }
}

/// Writes the header and one row per item (items are loaded and written on the workers,
/// [`super::write_rows`]; a record is one row wherever its job starts, so the bytes are
/// those of one writer).
pub fn render(comparison: &Comparison, load: Load<'_>, out: &mut dyn Write) -> io::Result<()> {
    // The outcome, then the item's identity.
    let mut header: Vec<String> = std::iter::once("outcome")
        .chain(super::IDENTITY_COLUMNS)
        .map(str::to_owned)
        .collect();
    for side in [Side::Baseline, Side::Variant] {
        header.extend(SIDE_COLUMNS.iter().map(|c| format!("{side}_{c}")));
    }
    let mut writer = ::csv::Writer::from_writer(&mut *out);
    writer.write_record(&header).map_err(csv_error)?;
    writer.flush()?;
    drop(writer);
    super::write_rows(&comparison.items, load, out, |items| {
        // Each cell is written as it is made, borrowed from the record where it can be
        // (a String per cell cost an eighth of the report's CPU; BENCHMARKS.md).
        let mut writer = ::csv::Writer::from_writer(Vec::with_capacity(items.len() * 512));
        for item in items {
            let item = LoadedItem::load(item, load)?;
            let identity = item.identity();
            for cell in [
                Cow::Borrowed(item.outcome.name()),
                text_cell(identity.benchmark),
                optional_cell(identity.language),
                optional_cell(identity.script),
                text_cell(identity.question_id),
                text_cell(identity.filter),
                Cow::Owned(identity.repeat_id.to_string()),
            ] {
                writer.write_field(cell.as_bytes()).map_err(csv_error)?;
            }
            side_cells(item.baseline.as_ref(), &mut writer).map_err(csv_error)?;
            side_cells(item.variant.as_ref(), &mut writer).map_err(csv_error)?;
            writer.write_record(None::<&[u8]>).map_err(csv_error)?;
        }
        writer
            .into_inner()
            .map_err(|error| io::Error::other(error.to_string()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(json_cell(None), "");
        assert_eq!(json_cell(Some("null")), "");
        assert_eq!(json_cell(Some("{\"index\":0}")), "{\"index\":0}");
        assert_eq!(json_cell(Some("[1,\"a\"]")), "[1,\"a\"]");
        assert_eq!(json_cell(Some("-1.5")), "-1.5", "a number is not a formula");
        assert_eq!(json_cell(Some("true")), "true");
        assert_eq!(json_cell(Some("\"=cmd\"")), "'=cmd");
        assert_eq!(json_cell(Some("\"a\\nb\"")), "a\nb", "a string is decoded");
        for damaged in ["\"abc", "\"a\"b\"", "\"a\u{1}b\"", "\"a\\qb\""] {
            assert_eq!(json_cell(Some(damaged)), damaged, "shown as stored");
        }
    }
}
