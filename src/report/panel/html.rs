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

use super::{DETAIL_CHARS, Details, PanelItems};
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

/// A chunk of the details, as it is written.
#[derive(Serialize)]
struct Chunk<'a> {
    /// The chunk's distinct texts, in the order its items first show them.
    strings: Vec<&'a str>,
    /// Per item, per side: the numbers in `strings` of the prediction and response.
    items: Vec<Vec<Option<[usize; 2]>>>,
}

/// A chunk: `{"strings": [...], "items": [[null | [prediction, response] per side] per
/// item]}`, each prediction and response an index into `strings`.
fn details(details: Option<&Details>) -> io::Result<String> {
    let mut chunks: Vec<String> = Vec::new();
    let Some(details) = details else {
        return script_json(&chunks);
    };
    // Where each of the details' texts is in the chunk being made: `(chunk + 1, index)`,
    // so that no table is cleared between chunks.
    let mut placed = vec![(0u32, 0u32); details.text_count()];
    let n = details.question.len();
    let mut start = 0;
    let mut stamp = 0u32;
    while start < n {
        let end = (start + CHUNK_ITEMS).min(n);
        stamp += 1;
        let mut strings = Vec::new();
        let mut local = |number: u32| {
            let (seen, index) = &mut placed[number as usize];
            if *seen != stamp {
                *seen = stamp;
                *index = u32::try_from(strings.len()).expect("fewer strings than texts");
                strings.push(details.text(number));
            }
            *index as usize
        };
        let items = (start..end)
            .map(|item| {
                (0..details.side_count())
                    .map(|side| {
                        let [prediction, response] = details.cell(side, item)?;
                        Some([local(prediction), local(response)])
                    })
                    .collect()
            })
            .collect();
        let chunk = Chunk { strings, items };
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
        details: details(items.details)?,
    };
    out.write_all(page.render().map_err(io::Error::other)?.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::embed::inflate;

    /// Chunks of the details, decoded: per item, per side, its prediction and response.
    fn decoded(details: &Details) -> Vec<Vec<Option<[String; 2]>>> {
        let chunks: Vec<String> =
            serde_json::from_str(&self::details(Some(details)).unwrap()).unwrap();
        let mut items = Vec::new();
        for chunk in chunks {
            let chunk: serde_json::Value = serde_json::from_str(&inflate(&chunk)).unwrap();
            let strings: Vec<&str> = chunk["strings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap())
                .collect();
            let mut distinct = strings.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(
                distinct.len(),
                strings.len(),
                "a chunk holds each text once"
            );
            for item in chunk["items"].as_array().unwrap() {
                items.push(
                    item.as_array()
                        .unwrap()
                        .iter()
                        .map(|cell| {
                            let [p, r] = serde_json::from_value::<Option<[usize; 2]>>(cell.clone())
                                .unwrap()?;
                            Some([strings[p].to_owned(), strings[r].to_owned()])
                        })
                        .collect(),
                );
            }
        }
        items
    }

    #[test]
    fn a_chunk_is_written_as_the_page_reads_it() {
        let mut details = Details::new(2);
        let (a, b) = (details.add_side(), details.add_side());
        details.set(a, 0, "A", "because");
        details.set(b, 0, "B", "because");
        details.set(b, 1, "A", "\"quoted\"");
        let chunks: Vec<String> =
            serde_json::from_str(&self::details(Some(&details)).unwrap()).unwrap();
        let texts: Vec<String> = chunks.iter().map(|chunk| inflate(chunk)).collect();
        assert_eq!(
            texts,
            [
                r#"{"strings":["A","because","B","\"quoted\""],"items":[[[0,1],[2,1]],[null,[0,3]]]}"#
            ]
        );
    }

    #[test]
    fn every_chunk_holds_the_texts_of_its_own_items_once() {
        // Texts repeat within a chunk, across chunks and across sides; some cells are empty.
        let items = 2 * CHUNK_ITEMS + 3;
        let mut details = Details::new(items);
        let mut expected = vec![vec![None; 3]; items];
        for _ in 0..3 {
            let side = details.add_side();
            for item in (0..items).filter(|item| !(item + side).is_multiple_of(5)) {
                let prediction = format!("choice {}", (item * 7 + side) % 4);
                let response = format!("because {}", item % (CHUNK_ITEMS + 1));
                details.set(side, item, &prediction, &response);
                expected[item][side] = Some([prediction, response]);
            }
        }
        assert_eq!(decoded(&details), expected);
    }
}
