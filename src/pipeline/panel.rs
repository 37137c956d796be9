//! The library form of `babel panel`: check the item file's destination → select the
//! sides (refusing what may not be compared) → key each side's rows (both cores, one
//! side per task, handed back in order) → join them into the item grid → summarize →
//! optionally write the item file, reading each side's predictions and responses again
//! only for the HTML dashboard.
//!
//! It owns no rule of its own: selection and comparability are
//! `archive::comparison::panel`'s, the join and the figures `panel`'s, the rendering
//! `report::panel`'s.

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
/// its JSON text, cut to [`DETAIL_CHARS`] characters.
fn shown(canonical: &str) -> String {
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

/// Each item's question text (from the first side whose record has one) and each side's
/// prediction and response, read again from the records files: `rows_to_items[side][row]`
/// is the item of each of the side's rows (`u32::MAX` for a run-local one).
fn details(
    archive: &Archive,
    sides: &[ComparisonSide],
    rows_to_items: &[Vec<u32>],
    items: usize,
) -> Result<Details, ArchiveError> {
    let mut details = Details {
        question: vec![String::new(); items],
        sides: Vec::with_capacity(sides.len()),
    };
    let columns = Columns::of(&[Column::Input, Column::Prediction, Column::Response]);
    let mut questions = QuestionReader::default();
    for (side, row_items) in sides.iter().zip(rows_to_items) {
        let mut cells: Vec<Option<(String, String)>> = vec![None; items];
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
                cells[item] = Some((
                    shown(text(Column::Prediction)),
                    shown(text(Column::Response)),
                ));
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
        details.sides.push(cells);
    }
    Ok(details)
}
