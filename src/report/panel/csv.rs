//! The panel's items as CSV: a header, then one row per item: the identity (`benchmark`,
//! `language`, `script`, `question_id`, `filter`, `repeat_id`), one column per side named
//! `run:variant` holding `true`, `false` or blank (unknown, or no record), then `known`,
//! `correct`, `point_biserial` (blank when undefined), `consensus_wrong` and
//! `negative_discrimination`. Text cells are escaped for spreadsheets as in the
//! comparison report (a leading `'` before `=`, `+`, `-`, `@`, a tab or a CR).

use std::io::{self, Write};

use super::PanelItems;
use crate::report::csv::{csv_error, optional_cell, text_cell};

/// The identity columns, then the sides', then these.
pub const ITEM_COLUMNS: [&str; 5] = [
    "known",
    "correct",
    "point_biserial",
    "consensus_wrong",
    "negative_discrimination",
];

/// Writes the header and one row per item.
pub fn render(items: &PanelItems<'_>, out: &mut dyn Write) -> io::Result<()> {
    let mut writer = ::csv::Writer::from_writer(out);
    let sides = items.grid.sides();
    let mut header: Vec<String> = crate::report::IDENTITY_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .collect();
    header.extend((0..sides).map(|side| text_cell(&items.side_name(side)).into_owned()));
    header.extend(ITEM_COLUMNS.iter().map(|c| c.to_string()));
    writer.write_record(&header).map_err(csv_error)?;
    let mut row: Vec<String> = Vec::with_capacity(header.len());
    for (index, item) in items.items.iter().enumerate() {
        row.clear();
        row.push(text_cell(&item.benchmark).into_owned());
        row.push(optional_cell(item.language.as_deref()).into_owned());
        row.push(optional_cell(item.script.as_deref()).into_owned());
        row.push(text_cell(&item.question_id).into_owned());
        row.push(text_cell(&item.filter).into_owned());
        row.push(item.repeat_id.to_string());
        for side in 0..sides {
            row.push(match items.grid.cell(side, index).known() {
                Some(true) => "true".into(),
                Some(false) => "false".into(),
                None => String::new(),
            });
        }
        let stats = items.stats(index);
        row.push(stats.known.to_string());
        row.push(stats.correct.to_string());
        row.push(
            stats
                .point_biserial
                .map(|r| r.to_string())
                .unwrap_or_default(),
        );
        row.push(stats.consensus_wrong.to_string());
        row.push(stats.negative_discrimination.to_string());
        writer.write_record(&row).map_err(csv_error)?;
    }
    writer.flush()
}
