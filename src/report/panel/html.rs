//! The panel's items as one self-contained HTML dashboard (`templates/panel.html`,
//! `panel.js`, `panel.css`): the leaderboard with intervals, the pairwise heatmap
//! (delta, Holm p, κ), accuracy by language and by benchmark × side, and the item × side
//! grid with search and filters, an item opening to its question and each side's
//! prediction and response. It works from `file://` with no server; its CSP forbids
//! every fetch.
//!
//! The data, so that it stays small at 100 sides × 100,000 items: the summary as JSON
//! (`panel-meta`); the item columns (identity, question text, counts, flags) as one
//! raw-deflate, base64 JSON object (`panel-index`); the cells packed two bits each,
//! item-major, deflated (`panel-cells`: 0 unknown, 1 wrong, 2 correct); and each
//! side's prediction and response in chunks of [`CHUNK_ITEMS`] items, each deflated on
//! its own and inflated only when one of its items is opened (`panel-details`), every
//! distinct string of a chunk stored once. Every string reaches the page as text.

use std::io::{self, Write};

use askama::Template;
use serde::Serialize;
use serde_json::json;

use super::{DETAIL_CHARS, PanelItems};
use crate::report::Names;
use crate::report::embed::{ScriptSafe, deflated_base64};

const STYLE: &str = include_str!("../../../templates/panel.css");
const SCRIPT: &str = include_str!("../../../templates/panel.js");

/// Items per details chunk.
pub const CHUNK_ITEMS: usize = 256;

#[derive(Template)]
#[template(path = "panel.html")]
struct Page<'a> {
    title: &'a str,
    version: &'a str,
    style: &'a str,
    script: &'a str,
    meta: String,
    index: String,
    cells: String,
    details: String,
}

/// JSON for a `<script>` element.
fn script_json<T: Serialize>(value: &T) -> io::Result<String> {
    let mut out = Vec::new();
    serde_json::to_writer(ScriptSafe(&mut out), value)?;
    String::from_utf8(out).map_err(io::Error::other)
}

fn index(items: &PanelItems<'_>) -> io::Result<String> {
    let (mut benchmarks, mut languages, mut filters) =
        (Names::default(), Names::default(), Names::default());
    let n = items.items.len();
    let mut benchmark = Vec::with_capacity(n);
    let mut language = Vec::with_capacity(n);
    let mut filter = Vec::with_capacity(n);
    for item in items.items {
        benchmark.push(benchmarks.id(&item.benchmark) as i64);
        language.push(
            item.language
                .as_deref()
                .map_or(-1, |l| languages.id(l) as i64),
        );
        filter.push(filters.id(&item.filter) as i64);
    }
    let stats = &items.summary.item_stats;
    let flags: Vec<u8> = stats
        .iter()
        .map(|s| {
            u8::from(s.consensus_wrong)
                | u8::from(s.negative_discrimination) << 1
                | u8::from(s.discordant) << 2
        })
        .collect();
    let question: Vec<&str> = match items.details {
        Some(details) => details.question.iter().map(String::as_str).collect(),
        None => vec![""; n],
    };
    let index = json!({
        "question_id": items.items.iter().map(|i| i.question_id.as_str()).collect::<Vec<_>>(),
        "benchmark": benchmark,
        "benchmarks": benchmarks.values,
        "language": language,
        "languages": languages.values,
        "filter": filter,
        "filters": filters.values,
        "repeat_id": items.items.iter().map(|i| i.repeat_id).collect::<Vec<_>>(),
        "question": question,
        "known": stats.iter().map(|s| s.known).collect::<Vec<_>>(),
        "correct": stats.iter().map(|s| s.correct).collect::<Vec<_>>(),
        "flags": flags,
    });
    deflated_base64(&serde_json::to_vec(&index)?)
}

fn cells(items: &PanelItems<'_>) -> io::Result<String> {
    let sides = items.grid.sides();
    let mut packed = vec![0u8; (items.items.len() * sides).div_ceil(4)];
    for item in 0..items.items.len() {
        for side in 0..sides {
            let k = item * sides + side;
            packed[k >> 2] |= items.grid.cell(side, item).code() << ((k & 3) * 2);
        }
    }
    deflated_base64(&packed)
}

/// A chunk: `{"strings": [...], "items": [[null | [prediction, response] per side] per
/// item]}`, each prediction and response an index into `strings`.
fn details(items: &PanelItems<'_>) -> io::Result<String> {
    let mut chunks: Vec<String> = Vec::new();
    let Some(details) = items.details else {
        return script_json(&chunks);
    };
    let n = items.items.len();
    let mut start = 0;
    while start < n {
        let end = (start + CHUNK_ITEMS).min(n);
        let mut strings = Names::default();
        let rows: Vec<Vec<Option<[usize; 2]>>> = (start..end)
            .map(|item| {
                details
                    .sides
                    .iter()
                    .map(|side| {
                        side[item].as_ref().map(|(prediction, response)| {
                            [strings.id(prediction), strings.id(response)]
                        })
                    })
                    .collect()
            })
            .collect();
        let chunk = json!({"strings": strings.values, "items": rows});
        chunks.push(deflated_base64(&serde_json::to_vec(&chunk)?)?);
        start = end;
    }
    script_json(&chunks)
}

/// Writes the dashboard.
pub fn render(items: &PanelItems<'_>, out: &mut dyn Write) -> io::Result<()> {
    let mut meta = serde_json::to_value(items.summary)?;
    meta["title"] = json!(items.title);
    meta["chunk"] = json!(CHUNK_ITEMS);
    meta["detail_chars"] = json!(DETAIL_CHARS);
    let page = Page {
        title: items.title,
        version: env!("CARGO_PKG_VERSION"),
        style: STYLE,
        script: SCRIPT,
        meta: script_json(&meta)?,
        index: index(items)?,
        cells: cells(items)?,
        details: details(items)?,
    };
    out.write_all(page.render().map_err(io::Error::other)?.as_bytes())
}
