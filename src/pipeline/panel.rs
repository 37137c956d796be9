//! The library form of `babel panel`: check the item file's destination → select the
//! sides (refusing what may not be compared) → key each side's rows (both cores, one
//! side per task, handed back in order) → join them into the item grid → summarize →
//! optionally write the item file, reading each side's predictions and responses again
//! only for the HTML dashboard.
//!
//! It owns no rule of its own: selection and comparability are
//! `archive::comparison::panel`'s, the join and the figures `panel`'s, the rendering
//! `report::panel`'s.

use std::borrow::Cow;
use std::path::PathBuf;

use serde::Serialize;

use crate::archive::comparison::ComparisonSide;
use crate::archive::comparison::panel::{self as sides, PanelSelection};
use crate::archive::records::{Column, Columns};
use crate::archive::{Archive, ArchiveError};
use crate::compare::keys::{Interner, NULL_SYMBOL};
use crate::compare::stats::ConfidenceLevel;
use crate::panel::summary::{PanelSummary, SideInfo, summarize};
use crate::panel::{ItemIdentity, ItemIndex, KeyedRows};
use crate::report::panel::{DETAIL_CHARS, Details, ItemRow, PanelFormat, PanelItems};
use crate::report::question::QuestionReader;

use super::ReportWritten;

/// Where and how to write the item file.
#[derive(Debug, Clone)]
pub struct ItemsRequest {
    /// A new file outside the archive.
    pub path: PathBuf,
    pub format: PanelFormat,
}

/// A panel to compute.
#[derive(Debug, Clone)]
pub struct PanelRequest {
    pub selection: PanelSelection,
    pub confidence: ConfidenceLevel,
    pub items: Option<ItemsRequest>,
}

/// What a panel found, and the item file it wrote: `babel panel --json` prints it, the
/// summary's fields then `items_file` (null without `--items`).
#[derive(Debug, Clone, Serialize)]
pub struct PanelOutcome {
    #[serde(flatten)]
    pub summary: PanelSummary,
    #[serde(rename = "items_file")]
    pub items: Option<ReportWritten>,
}

fn label(side: &ComparisonSide) -> String {
    format!("{}:{}", side.run, side.variant_id)
}

/// Computes a panel.
pub fn panel(archive: &Archive, request: &PanelRequest) -> Result<PanelOutcome, ArchiveError> {
    let destination = request
        .items
        .as_ref()
        .map(|items| {
            archive
                .layout()
                .derived_destination(&items.path, false)
                .map(|path| (path, items.format))
        })
        .transpose()?;
    let sides = sides::select(archive, &request.selection)?;
    let interner = Interner::new();
    let mut index = ItemIndex::default();
    let mut next = 0;
    let damaged = |side: &ComparisonSide, reason: String| ArchiveError::Damaged {
        path: archive
            .layout()
            .resolve(&crate::archive::layout::run_relative(&side.run, "")),
        reason,
    };
    crate::parallel::map_ordered(
        crate::parallel::workers().min(sides.len()),
        || {
            let side = sides.get(next);
            next += 1;
            Ok(side)
        },
        |side: &ComparisonSide| (side, sides::keyed_rows(archive, side, &interner)),
        |(side, rows): (&ComparisonSide, Result<KeyedRows, String>)| {
            let rows = rows.map_err(|reason| damaged(side, reason))?;
            index
                .add_side(&rows, &label(side), &interner)
                .map_err(|duplicate| damaged(side, duplicate.to_string()))
        },
    )?;
    let counts = index.counts().to_vec();
    let (identities, grid, labels, rows_to_items) = index.finish(&interner, destination.is_some());
    let infos: Vec<SideInfo> = sides
        .iter()
        .zip(&counts)
        .map(|(side, &(records, run_local))| SideInfo {
            run_id: side.run.to_string(),
            variant_id: side.variant_id.clone(),
            model: side.manifest.model().to_owned(),
            records,
            run_local,
        })
        .collect();
    let summary = summarize(&grid, &infos, &labels, request.confidence);
    let Some((path, format)) = destination else {
        return Ok(PanelOutcome {
            summary,
            items: None,
        });
    };
    let rows: Vec<ItemRow> = identities.iter().map(|i| item_row(i, &interner)).collect();
    let details = match format {
        PanelFormat::Html => Some(details(archive, &sides, &rows_to_items, rows.len())?),
        _ => None,
    };
    let title = format!("{} sides, {} items", sides.len(), rows.len());
    let items = PanelItems {
        summary: &summary,
        items: &rows,
        grid: &grid,
        details: details.as_ref(),
        title: &title,
    };
    let digest =
        crate::report::panel::write_new(&path, format, &items).map_err(ArchiveError::Io)?;
    Ok(PanelOutcome {
        items: Some(ReportWritten {
            path,
            format: format.name(),
            items: rows.len(),
            bytes: digest.bytes,
            sha256: digest.sha256,
        }),
        summary,
    })
}

fn item_row(identity: &ItemIdentity, interner: &Interner) -> ItemRow {
    let name = |symbol: u32| {
        (symbol != NULL_SYMBOL)
            .then(|| interner.name(symbol))
            .flatten()
    };
    ItemRow {
        benchmark: name(identity.benchmark).unwrap_or_default(),
        language: name(identity.language),
        script: name(identity.script),
        question_id: identity.question_id.clone(),
        filter: name(identity.filter).unwrap_or_default(),
        repeat_id: identity.repeat_id,
    }
}

/// A stored JSON value as the dashboard shows it: a string as itself, anything else as
/// its JSON text, cut to [`DETAIL_CHARS`] characters (borrowed when it is so already).
fn shown(canonical: &str) -> Cow<'_, str> {
    let plain = canonical
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        // No escape, quote or control byte: the string's text is what is between its quotes.
        .filter(|plain| !plain.bytes().any(|b| b == b'\\' || b == b'"' || b < 0x20));
    let text = match plain {
        Some(plain) => Cow::Borrowed(plain),
        // Canonical text never has more, but a damaged or foreign file may: decoded as
        // the stored text it is (whitespace after the string included).
        None if canonical.starts_with('"') => {
            serde_json::from_str::<String>(canonical).map_or(Cow::Borrowed(canonical), Cow::Owned)
        }
        None if canonical == "null" => Cow::Borrowed(""),
        None => Cow::Borrowed(canonical),
    };
    match text.char_indices().nth(DETAIL_CHARS) {
        Some((at, _)) => Cow::Owned(format!("{}…", &text[..at])),
        None => text,
    }
}

/// Each item's question text (from the first side whose record has one) and each side's
/// prediction and response, read again from the records files: `rows_to_items[side][row]`
/// is the item of each of the side's rows (`u32::MAX` for a run-local one).
fn details(
    archive: &Archive,
    sides: &[ComparisonSide],
    rows_to_items: &[Vec<u32>],
    items: usize,
) -> Result<Details, ArchiveError> {
    let mut details = Details::new(items);
    let columns = Columns::of(&[Column::Input, Column::Prediction, Column::Response]);
    let mut questions = QuestionReader::default();
    for (side, row_items) in sides.iter().zip(rows_to_items) {
        let number = details.add_side();
        let mut row = 0;
        sides::scan(archive, side, columns, |batch, selected| {
            for &at in selected {
                let item = row_items[row];
                row += 1;
                if item == u32::MAX {
                    continue;
                }
                let item = item as usize;
                let text = |column| batch.text(column, at).unwrap_or("null");
                details.set(
                    number,
                    item,
                    &shown(text(Column::Prediction)),
                    &shown(text(Column::Response)),
                );
                if details.question[item].is_empty()
                    && let Some(question) = questions.question(text(Column::Input))
                {
                    details.question[item] = question;
                }
            }
            Ok(true)
        })
        .map_err(|reason| ArchiveError::Damaged {
            path: archive
                .layout()
                .resolve(&crate::archive::layout::run_relative(&side.run, "")),
            reason,
        })?;
    }
    Ok(details)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the dashboard showed before texts were borrowed: every string decoded.
    fn decoded_then_cut(canonical: &str) -> String {
        let text = if canonical.starts_with('"') {
            serde_json::from_str::<String>(canonical).unwrap_or_else(|_| canonical.to_owned())
        } else if canonical == "null" {
            String::new()
        } else {
            canonical.to_owned()
        };
        match text.char_indices().nth(DETAIL_CHARS) {
            Some((at, _)) => format!("{}…", &text[..at]),
            None => text,
        }
    }

    #[test]
    fn a_borrowed_text_is_the_decoded_one() {
        let long = "ş".repeat(DETAIL_CHARS);
        let longer = "ş".repeat(DETAIL_CHARS + 1);
        let cases = [
            r#""B""#.to_owned(),
            r#""""#.to_owned(),
            r#""a\"b""#.to_owned(),
            r#""caf\u00e9 \n""#.to_owned(),
            "\"raw\ncontrol\"".to_owned(),
            r#""an "inner" quote""#.to_owned(),
            r#""unclosed"#.to_owned(),
            r#"""#.to_owned(),
            "null".to_owned(),
            "3.5".to_owned(),
            r#"{"index":2}"#.to_owned(),
            format!("\"{long}\""),
            format!("\"{longer}\""),
            format!("\"{longer}\\n\""),
            format!("[\"{longer}\"]"),
        ];
        for canonical in cases {
            assert_eq!(
                shown(&canonical),
                decoded_then_cut(&canonical),
                "{canonical}"
            );
        }
        // Not canonical (a damaged or foreign file): decoded as before.
        for canonical in ["\"abc\" ", "\"abc\"\n", "\"a\\nb\"\t", " \"abc\""] {
            assert_eq!(shown(canonical), decoded_then_cut(canonical), "{canonical}");
        }
        // A plain string is borrowed, not copied.
        assert!(matches!(shown("\"B\""), Cow::Borrowed("B")));
    }
}
