//! The HTML report: one self-contained page that works offline from file://, with no
//! server and no network request.
//!
//! The page shell and the summary are an askama template (`templates/report.html`,
//! HTML-escaped by default). The items follow in two parts, so that a page of 40,000
//! few-shot items stays small and opens fast:
//!
//! - the index (`#babel-index`): a column per field the list, the filters and the search
//!   need (outcome, labels, question_id, the question text, the searched text), each a
//!   JSON array compressed with raw deflate and base64-encoded, inflated by the browser's
//!   own `DecompressionStream` when the page opens;
//! - the details (`#babel-details`): both sides' full fields, 64 items to a chunk, each
//!   chunk compressed alike and inflated only when one of its items is opened (the page
//!   finds its text by the offset the index's meta gives, `chunk_text_starts`). Within a
//!   chunk every string of 128 bytes or more is stored once and referenced, so a
//!   few-shot prompt repeated in every choice's request (and in neighbouring items) is
//!   written once.
//!
//! Items are read in order on one thread and handed to the workers in jobs of whole
//! chunks: a worker parses its items, writes and deflates their chunks, and compresses its
//! part of every index column; parts are joined in order into one deflate stream per
//! column ([`PartedColumn`]), so the page is the same whichever worker made which part.
//!
//! Vanilla JS (`templates/report.js`) renders only the rows in view, and every dataset or
//! model string reaches the page through `textContent`, never as markup. The JSON around
//! the base64 is written with every `<`, `>` and `&` as a `\u` escape, so no string can
//! close a script element (`</script>`) or open a comment.

use askama::Template;

use super::embed::{Part, PartedColumn, ScriptSafe};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use flate2::Compression;
use flate2::write::DeflateEncoder;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io::{self, Write};

use super::details::{self, Checked, Strings};
use super::question::question_text;
use super::{EACH_SIDE_ALONE, Load, LoadedItem, each_side_alone, level, p_value, percent, points};
use crate::canonical_json::Json;
use crate::compare::summary::{Group, Summary};
use crate::compare::{Comparison, Outcome, SideLabel};
use crate::record::{JsonChecker, StoredField, StoredRecord};

/// Marks where the items JSON goes in the rendered shell. It cannot come from data: every
/// value in the template is HTML-escaped, which turns `<` into `&lt;`.
const DATA_MARKER: &str = "<!--babel:items-->";

const STYLE: &str = include_str!("../../templates/report.css");
const SCRIPT: &str = include_str!("../../templates/report.js");

/// One figure of the summary cards.
struct Card {
    label: &'static str,
    value: String,
    detail: String,
}

/// One outcome in the legend and the distribution bar.
struct OutcomeShare {
    name: &'static str,
    label: String,
    count: u64,
    /// Width in the distribution bar, e.g. `"12.50"` (percent of all items).
    width: String,
}

/// One row of a breakdown table.
struct BreakdownRow {
    name: String,
    items: u64,
    pairs: u64,
    baseline: String,
    variant: String,
    delta: String,
    delta_ci: String,
    correct_to_wrong: u64,
    wrong_to_correct: u64,
    mcnemar_p: String,
    consistency: String,
    unscored: u64,
    only_baseline: u64,
    only_variant: u64,
}

#[derive(Template)]
#[template(path = "report.html")]
struct Shell<'a> {
    title: String,
    baseline: &'a SideLabel,
    variant: &'a SideLabel,
    baseline_records: u64,
    variant_records: u64,
    run_local: String,
    /// Each side alone, when it says more than the paired accuracies; or empty.
    alone: String,
    /// The confidence level of every interval, e.g. `95%`.
    level: String,
    /// The pooling caveat, or empty.
    caveat: String,
    cards: Vec<Card>,
    shares: Vec<OutcomeShare>,
    by_benchmark: Vec<BreakdownRow>,
    by_language: Vec<BreakdownRow>,
    by_filter: Vec<BreakdownRow>,
    version: &'static str,
    style: &'static str,
    script: &'static str,
    data_marker: &'static str,
}

fn breakdown_row(name: String, group: &Group) -> BreakdownRow {
    let counts = &group.outcomes;
    let dash = || "–".to_owned();
    let stats = group.statistics.as_ref();
    BreakdownRow {
        name,
        items: group.items,
        pairs: stats.map_or(0, |s| s.pairs),
        baseline: stats.map_or_else(dash, |s| percent(s.baseline_accuracy)),
        variant: stats.map_or_else(dash, |s| percent(s.variant_accuracy)),
        delta: stats.map_or_else(dash, |s| points(s.delta)),
        delta_ci: stats.map_or_else(dash, |s| {
            format!("{} to {}", points(s.delta_ci_low), points(s.delta_ci_high))
        }),
        correct_to_wrong: counts.correct_to_wrong,
        wrong_to_correct: counts.wrong_to_correct,
        mcnemar_p: stats.map_or_else(dash, |s| p_value(s.mcnemar_exact_p)),
        consistency: stats.map_or_else(dash, |s| percent(s.consistency)),
        unscored: counts.unscored,
        only_baseline: counts.only_baseline,
        only_variant: counts.only_variant,
    }
}

fn cards(summary: &Summary) -> Vec<Card> {
    let overall = &summary.overall;
    let mut cards = vec![Card {
        label: "Items",
        value: overall.items.to_string(),
        detail: format!(
            "{} matched · {} only baseline · {} only variant",
            overall.matched, overall.outcomes.only_baseline, overall.outcomes.only_variant
        ),
    }];
    let Some(s) = &overall.statistics else {
        cards.push(Card {
            label: "Known pairs",
            value: "0".into(),
            detail: "no matched item has known correctness on both sides".into(),
        });
        return cards;
    };
    let level = level(summary.confidence_level);
    cards.extend([
        Card {
            label: "Known pairs",
            value: s.pairs.to_string(),
            detail: format!("unscored, left out: {}", overall.outcomes.unscored),
        },
        Card {
            label: "Baseline accuracy",
            value: percent(s.baseline_accuracy),
            detail: format!(
                "{level} Wilson {} – {}",
                percent(s.baseline_ci_low),
                percent(s.baseline_ci_high)
            ),
        },
        Card {
            label: "Variant accuracy",
            value: percent(s.variant_accuracy),
            detail: format!(
                "{level} Wilson {} – {}",
                percent(s.variant_ci_low),
                percent(s.variant_ci_high)
            ),
        },
        Card {
            label: "Delta (variant − baseline)",
            value: points(s.delta),
            detail: format!(
                "{level} CI {} to {} (Newcombe)",
                points(s.delta_ci_low),
                points(s.delta_ci_high)
            ),
        },
        Card {
            label: "McNemar exact p",
            value: p_value(s.mcnemar_exact_p),
            detail: format!(
                "{} correct → wrong · {} wrong → correct",
                s.correct_to_wrong, s.wrong_to_correct
            ),
        },
        Card {
            label: "Consistency",
            value: percent(s.consistency),
            detail: "known pairs with the same outcome on both sides".into(),
        },
    ]);
    cards
}

/// The outcome's label with a real arrow (`correct → wrong`); the text summary keeps ASCII.
fn arrow_label(outcome: Outcome) -> String {
    outcome.label().replace("->", "→")
}

fn shares(summary: &Summary) -> Vec<OutcomeShare> {
    let total = summary.overall.items.max(1) as f64;
    Outcome::ALL
        .iter()
        .map(|&outcome| {
            let count = summary.overall.outcomes.get(outcome);
            OutcomeShare {
                name: outcome.name(),
                label: arrow_label(outcome),
                count,
                width: format!("{:.2}", count as f64 * 100.0 / total),
            }
        })
        .collect()
}

/// Items per detail chunk at most: the page inflates one chunk when an item of it is
/// opened.
const CHUNK_ITEMS: usize = 64;
/// A chunk also ends once its items' stored records hold this many bytes: 64 items of
/// long-context records (1.4 MB a side) were 180 MB for a worker to hold and for the page
/// to inflate when one of them was opened.
const CHUNK_BYTES: usize = 4 << 20;
/// How much of each target, prediction and response the search covers, in characters.
pub const SEARCH_CHARS: usize = 256;

/// Detail chunks per worker job: a job's items are checked, written and compressed on one
/// worker, its part of every index column included. At most two jobs per worker are in
/// flight (`parallel`), so this and [`JOB_BYTES`] bound the memory a report holds.
const JOB_CHUNKS: usize = 16;
/// The stored bytes after which a job ends at its next whole chunk (a job of few-shot
/// items is a few chunks).
const JOB_BYTES: usize = 4 << 20;

/// Interns repeated strings (benchmarks, languages, source paths) as indices, numbered in
/// the order they are first seen.
#[derive(Default)]
struct Table {
    index: HashMap<String, usize>,
    null: Option<usize>,
    values: Vec<Option<String>>,
}

impl Table {
    fn id(&mut self, value: Option<&str>) -> usize {
        let found = match value {
            Some(text) => self.index.get(text).copied(),
            None => self.null,
        };
        if let Some(id) = found {
            return id;
        }
        let id = self.values.len();
        self.values.push(value.map(str::to_owned));
        match value {
            Some(text) => {
                self.index.insert(text.to_owned(), id);
            }
            None => self.null = Some(id),
        }
        id
    }
}

/// The names of the index columns, in the order [`IndexPart::compress`] gives them.
const INDEX_COLUMNS: [&str; 11] = [
    "outcome",
    "benchmark",
    "language",
    "question_id",
    "script",
    "filter",
    "repeat_id",
    "baseline_mark",
    "variant_mark",
    "question",
    "search",
];

/// One job's part of the page's index: what the list, the filters and the search need, a
/// column each.
struct IndexPart {
    outcome: Part,
    benchmark: Part,
    language: Part,
    question_id: Part,
    script: Part,
    filter: Part,
    repeat_id: Part,
    /// Per side: 0 no record, 1 correct, 2 wrong, 3 unknown.
    baseline_mark: Part,
    variant_mark: Part,
    /// The question text the list shows (report::question).
    question: Part,
    /// The rest of what the search covers.
    search: Part,
}

impl IndexPart {
    fn new(job: usize) -> Self {
        Self {
            outcome: Part::new(job),
            benchmark: Part::new(job),
            language: Part::new(job),
            question_id: Part::new(job),
            script: Part::new(job),
            filter: Part::new(job),
            repeat_id: Part::new(job),
            baseline_mark: Part::new(job),
            variant_mark: Part::new(job),
            question: Part::new(job),
            search: Part::new(job),
        }
    }

    /// Adds an item's entry to every column: `sides` are its records, checked; `labels`
    /// its benchmark's and language's numbers in the page's tables.
    fn push(&mut self, outcome: Outcome, sides: &Sides<'_>, labels: [usize; 2]) -> io::Result<()> {
        let any = sides[0]
            .as_ref()
            .or(sides[1].as_ref())
            .expect("an item has a record");
        let identity = any.record.identity();
        let outcome = Outcome::ALL
            .iter()
            .position(|&o| o == outcome)
            .unwrap_or_default();
        self.outcome.push(&outcome)?;
        self.benchmark.push(&labels[0])?;
        self.language.push(&labels[1])?;
        self.question_id.push(identity.question_id)?;
        self.script.push(&identity.script)?;
        self.filter.push(identity.filter)?;
        self.repeat_id.push(&identity.repeat_id)?;
        self.baseline_mark.push(&mark(sides[0].as_ref()))?;
        self.variant_mark.push(&mark(sides[1].as_ref()))?;
        // Each side's question, read once: the first listed, both searched.
        let questions = sides.each_ref().map(|side| {
            side.as_ref()
                .map(|side| question_text(&side.input).unwrap_or_default())
        });
        let listed = questions
            .iter()
            .flatten()
            .next()
            .cloned()
            .unwrap_or_default();
        self.question.push(&listed)?;
        self.search.push(&search_text(sides, &questions, &listed))
    }

    /// Every column's part, compressed, in the order of [`INDEX_COLUMNS`].
    fn compress(self) -> io::Result<[Vec<u8>; INDEX_COLUMNS.len()]> {
        Ok([
            self.outcome.compress()?,
            self.benchmark.compress()?,
            self.language.compress()?,
            self.question_id.compress()?,
            self.script.compress()?,
            self.filter.compress()?,
            self.repeat_id.compress()?,
            self.baseline_mark.compress()?,
            self.variant_mark.compress()?,
            self.question.compress()?,
            self.search.compress()?,
        ])
    }
}

/// An item's two sides (baseline, variant), each checked when it has a record.
type Sides<'r> = [Option<Checked<'r>>; 2];

fn mark(side: Option<&Checked<'_>>) -> u8 {
    match side.map(|side| side.record.correct) {
        None => 0,
        Some(Some(true)) => 1,
        Some(Some(false)) => 2,
        Some(None) => 3,
    }
}

/// A value as the page shows and searches it: a string as is, anything else as JSON.
fn shown(value: &Json<'_>) -> String {
    match value.as_string() {
        Some(text) => text.into_owned(),
        None => serde_json::to_string_pretty(&value.to_value()).unwrap_or_default(),
    }
}

fn first_chars(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// What the search covers of an item besides its question_id and `listed` question: each
/// side's question (`questions`, read by the caller) where it differs from the listed one
/// (the page searches that column too), and the start of its target, prediction and
/// response.
fn search_text(sides: &Sides<'_>, questions: &[Option<String>; 2], listed: &str) -> String {
    let mut parts = Vec::new();
    for (side, question) in sides.iter().zip(questions) {
        let (Some(side), Some(question)) = (side, question) else {
            continue;
        };
        if question != listed {
            parts.push(question.clone());
        }
        for value in [&side.target, &side.prediction, &side.response] {
            parts.push(first_chars(&shown(value), SEARCH_CHARS).to_owned());
        }
    }
    parts.join("\n")
}

/// The chunk being filled: its items' sides and their long strings.
#[derive(Default)]
struct Chunk {
    items: Vec<u8>,
    strings: Strings,
    count: usize,
}

impl Chunk {
    /// Adds an item's two sides; `sources` are their source paths' numbers in the page's
    /// table.
    fn push(&mut self, sides: &Sides<'_>, sources: [Option<usize>; 2]) {
        if self.count > 0 {
            self.items.push(b',');
        }
        self.items.push(b'[');
        for (i, (side, source)) in sides.iter().zip(sources).enumerate() {
            if i > 0 {
                self.items.push(b',');
            }
            details::write_side(side.as_ref(), source, &mut self.strings, &mut self.items);
        }
        self.items.push(b']');
        self.count += 1;
    }

    /// `{"s": [strings], "i": [[baseline, variant], ...]}`, deflated, base64.
    fn finish(&mut self) -> io::Result<String> {
        let mut json = Vec::with_capacity(self.items.len() + 64);
        json.extend_from_slice(b"{\"s\":");
        serde_json::to_writer(&mut json, &self.strings.values)?;
        json.extend_from_slice(b",\"i\":[");
        json.extend_from_slice(&self.items);
        json.extend_from_slice(b"]}");
        let mut encoder =
            DeflateEncoder::new(Vec::new(), Compression::new(super::embed::ON_DEMAND_LEVEL));
        encoder.write_all(&json)?;
        let encoded = STANDARD.encode(encoder.finish()?);
        *self = Chunk::default();
        Ok(encoded)
    }
}

/// What the page needs besides the items.
#[derive(Serialize)]
struct PageMeta<'a> {
    baseline: &'a SideLabel,
    variant: &'a SideLabel,
    outcomes: Vec<Map<String, Value>>,
    benchmarks: &'a [Option<String>],
    languages: &'a [Option<String>],
    sources: &'a [Option<String>],
    items: usize,
    /// The first item of every detail chunk (chunks end at [`CHUNK_ITEMS`] items or
    /// [`CHUNK_BYTES`], so the page looks an item's chunk up).
    chunk_starts: &'a [usize],
    /// Where each chunk's base64 begins in the text of `#babel-details` (base64 is ASCII,
    /// so bytes and the page's string positions agree): the page cuts out the one chunk it
    /// opens, where parsing the whole element took most of a first open (0.7 s and as
    /// many bytes again as the element on a 211 MB page).
    chunk_text_starts: &'a [u64],
    search_chars: usize,
}

fn outcome_list() -> Vec<Map<String, Value>> {
    Outcome::ALL
        .iter()
        .map(|outcome| {
            let mut map = Map::new();
            map.insert("name".into(), outcome.name().into());
            map.insert("label".into(), arrow_label(*outcome).into());
            map
        })
        .collect()
}

/// An item of a job, with the numbers the producer gave its labels and sources in item
/// order (the page's tables number them as first seen).
struct JobItem {
    item: LoadedItem,
    labels: [usize; 2],
    sources: [Option<usize>; 2],
}

/// Items for one worker: whole detail chunks, numbered in order.
struct Job {
    number: usize,
    items: Vec<JobItem>,
    /// Where each chunk of the job ends in its items.
    chunk_ends: Vec<usize>,
}

/// What a worker made of a job: its detail chunks (deflated, base64) and its part of
/// every index column (compressed).
struct Done {
    chunks: Vec<String>,
    parts: [Vec<u8>; INDEX_COLUMNS.len()],
}

fn work(job: Job) -> io::Result<Done> {
    let mut index = IndexPart::new(job.number);
    let mut chunks = Vec::new();
    let mut chunk = Chunk::default();
    let mut checker = JsonChecker::default();
    let mut ends = job.chunk_ends.iter().peekable();
    // The items are borrowed and freed together with the job: they were allocated on the
    // reading thread, and freed one by one here they contended with its next allocations
    // for the heap's lock (a second of system time on 2 x 1M items, BENCHMARKS.md).
    for (n, entry) in job.items.iter().enumerate() {
        let item = &entry.item;
        let sides = [
            check(item.baseline.as_ref(), &mut checker)?,
            check(item.variant.as_ref(), &mut checker)?,
        ];
        index.push(item.outcome, &sides, entry.labels)?;
        chunk.push(&sides, entry.sources);
        if ends.next_if_eq(&&(n + 1)).is_some() {
            chunks.push(chunk.finish()?);
        }
    }
    Ok(Done {
        chunks,
        parts: index.compress()?,
    })
}

fn check<'r>(
    side: Option<&'r StoredRecord>,
    checker: &mut JsonChecker,
) -> io::Result<Option<Checked<'r>>> {
    side.map(|record| details::check(record, checker))
        .transpose()
}

/// The page's tables of labels and sources, filled in item order.
#[derive(Default)]
struct Tables {
    benchmarks: Table,
    languages: Table,
    sources: Table,
}

impl Tables {
    fn entry(&mut self, item: LoadedItem) -> JobItem {
        let identity = item.identity();
        let labels = [
            self.benchmarks.id(Some(identity.benchmark)),
            self.languages.id(identity.language),
        ];
        let mut source = |side: Option<&StoredRecord>| {
            side.map(|r| {
                let path = r.get(StoredField::SourcePath).unwrap_or_default();
                self.sources.id(Some(path))
            })
        };
        let sources = [
            source(item.baseline.as_ref()),
            source(item.variant.as_ref()),
        ];
        JobItem {
            item,
            labels,
            sources,
        }
    }
}

/// The two data elements of the page: the detail chunks (`#babel-details`, a JSON array
/// of base64 raw-deflate chunks), streamed as items are read, then the index and the
/// tables (`#babel-index`). Neither can close its script element: base64 has no `<`, and
/// the JSON around it is written through [`ScriptSafe`].
///
/// Items are read here in order and handed to the workers a job at a time; each job's
/// chunks and index parts come back in order (the index columns are joined from parts
/// compressed apart, [`PartedColumn`]). An error stops the report: a record that cannot
/// be read from the spill as soon as it is read, a record whose stored text is damaged
/// when its job comes back (so with two damaged records, which one is named can vary).
fn write_data(comparison: &Comparison, load: Load<'_>, out: &mut dyn Write) -> io::Result<()> {
    let mut tables = Tables::default();
    let mut columns: Vec<PartedColumn> = INDEX_COLUMNS
        .iter()
        .map(|_| PartedColumn::default())
        .collect();
    out.write_all(b"<script id=\"babel-details\" type=\"application/json\">[")?;
    let mut items = comparison.items.iter().peekable();
    let mut jobs = 0usize;
    let mut chunks = 0usize;
    // The first item of every chunk, and how many items were handed out.
    let mut chunk_starts = Vec::new();
    let mut loaded = 0usize;
    // Past the element's opening `[`.
    let (mut written, mut chunk_text_starts) = (1u64, Vec::new());
    crate::parallel::map_ordered(
        crate::parallel::workers(),
        || -> io::Result<Option<Job>> {
            if items.peek().is_none() {
                return Ok(None);
            }
            let mut job = Job {
                number: jobs,
                items: Vec::new(),
                chunk_ends: Vec::new(),
            };
            jobs += 1;
            let (mut bytes, mut chunk_bytes, mut chunk_items) = (0, 0, 0);
            for item in items.by_ref() {
                let item = LoadedItem::load(item, load)?;
                bytes += item.size();
                chunk_bytes += item.size();
                chunk_items += 1;
                job.items.push(tables.entry(item));
                if chunk_items == CHUNK_ITEMS || chunk_bytes >= CHUNK_BYTES {
                    job.chunk_ends.push(job.items.len());
                    (chunk_bytes, chunk_items) = (0, 0);
                    if job.chunk_ends.len() == JOB_CHUNKS || bytes >= JOB_BYTES {
                        break;
                    }
                }
            }
            if chunk_items > 0 {
                job.chunk_ends.push(job.items.len());
            }
            // Each chunk of the job starts where the one before it ended.
            let starts = std::iter::once(0).chain(job.chunk_ends.iter().copied());
            chunk_starts.extend(
                starts
                    .take(job.chunk_ends.len())
                    .map(|start| loaded + start),
            );
            loaded += job.items.len();
            Ok(Some(job))
        },
        work,
        |done: io::Result<Done>| {
            let done = done?;
            for encoded in done.chunks {
                if chunks > 0 {
                    out.write_all(b",\n")?;
                    written += 2;
                }
                chunks += 1;
                out.write_all(b"\"")?;
                chunk_text_starts.push(written + 1);
                out.write_all(encoded.as_bytes())?;
                out.write_all(b"\"")?;
                written += encoded.len() as u64 + 2;
            }
            for (column, part) in columns.iter_mut().zip(&done.parts) {
                column.append(part);
            }
            Ok(())
        },
    )?;
    out.write_all(b"]</script>\n<script id=\"babel-index\" type=\"application/json\">")?;
    let meta = PageMeta {
        baseline: &comparison.baseline,
        variant: &comparison.variant,
        outcomes: outcome_list(),
        benchmarks: &tables.benchmarks.values,
        languages: &tables.languages.values,
        sources: &tables.sources.values,
        items: comparison.items.len(),
        chunk_starts: &chunk_starts,
        chunk_text_starts: &chunk_text_starts,
        search_chars: SEARCH_CHARS,
    };
    let columns: Map<String, Value> = INDEX_COLUMNS
        .iter()
        .zip(columns)
        .map(|(name, column)| Ok(((*name).to_owned(), Value::String(column.finish()?))))
        .collect::<io::Result<_>>()?;
    let mut safe = ScriptSafe(&mut *out);
    safe.write_all(b"{\"meta\":")?;
    serde_json::to_writer(&mut safe, &meta)?;
    safe.write_all(b",\"columns\":")?;
    serde_json::to_writer(&mut safe, &columns)?;
    safe.write_all(b"}")?;
    out.write_all(b"</script>")
}

/// Renders the page: the shell with the summary, the streamed items, the script.
pub fn render(
    comparison: &Comparison,
    summary: &Summary,
    load: Load<'_>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let side_name = |label: &SideLabel| format!("{} · {}", label.run_id, label.variant_id);
    let title = if comparison.baseline.run_id == comparison.variant.run_id {
        format!(
            "{}: {} vs {}",
            comparison.baseline.run_id,
            comparison.baseline.variant_id,
            comparison.variant.variant_id
        )
    } else {
        format!(
            "{} vs {}",
            side_name(&comparison.baseline),
            side_name(&comparison.variant)
        )
    };
    let excluded = comparison.run_local_excluded;
    let shell = Shell {
        title,
        baseline: &comparison.baseline,
        variant: &comparison.variant,
        baseline_records: summary.baseline.records,
        variant_records: summary.variant.records,
        run_local: if excluded.baseline + excluded.variant == 0 {
            String::new()
        } else {
            format!(
                "Run-local records excluded (they never pair): {} baseline, {} variant.",
                excluded.baseline, excluded.variant
            )
        },
        alone: each_side_alone(summary)
            .map(|line| format!("{EACH_SIDE_ALONE}: {line}."))
            .unwrap_or_default(),
        level: level(summary.confidence_level),
        caveat: summary
            .pooling_caveat
            .as_ref()
            .map(|caveat| caveat.message.clone())
            .unwrap_or_default(),
        cards: cards(summary),
        shares: shares(summary),
        by_benchmark: summary
            .by_benchmark
            .iter()
            .map(|g| breakdown_row(g.benchmark.clone(), &g.group))
            .collect(),
        by_language: summary
            .by_language
            .iter()
            .map(|g| {
                breakdown_row(
                    g.language.clone().unwrap_or_else(|| "(none)".into()),
                    &g.group,
                )
            })
            .collect(),
        by_filter: summary
            .by_filter
            .iter()
            .map(|g| breakdown_row(g.filter.clone(), &g.group))
            .collect(),
        version: env!("CARGO_PKG_VERSION"),
        style: STYLE,
        script: SCRIPT,
        data_marker: DATA_MARKER,
    };
    let page = shell.render().map_err(io::Error::other)?;
    let (head, tail) = page
        .split_once(DATA_MARKER)
        .ok_or_else(|| io::Error::other("the report template lost its data marker"))?;
    out.write_all(head.as_bytes())?;
    write_data(comparison, load, out)?;
    out.write_all(tail.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Side;
    use crate::compare::stats::ConfidenceLevel;
    use crate::compare::tests::{join, record};
    use crate::record::StoredRecord;

    /// The page of a two-question comparison whose second question is also an item under
    /// a second filter, with the summary at `confidence`.
    fn page(confidence: ConfidenceLevel) -> String {
        let mut baseline = vec![
            record("original", "q1", "en", Some(true)),
            record("original", "q2", "en", Some(false)),
        ];
        let mut variant = vec![
            record("rephrased", "q1", "en", Some(false)),
            record("rephrased", "q2", "en", Some(true)),
        ];
        for (records, id, correct) in [
            (&mut baseline, "original", true),
            (&mut variant, "rephrased", false),
        ] {
            let mut other = record(id, "q2", "en", Some(correct));
            other.filter = "strict-match".into();
            records.push(other);
        }
        let joined = join(baseline, variant).unwrap();
        let comparison = &joined.comparison;
        let summary = Summary::of(comparison, confidence);
        let mut out = Vec::new();
        let load = |side: Side, row: u32| {
            Ok(match side {
                Side::Baseline => StoredRecord::of(&joined.baseline[row as usize]).unwrap(),
                Side::Variant => StoredRecord::of(&joined.variant[row as usize]).unwrap(),
            })
        };
        render(comparison, &summary, &load, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_page_states_the_confidence_level_the_summary_was_computed_at() {
        // `Summary::of` takes any level; the page must not claim 95% for a 90% summary.
        let html = page(ConfidenceLevel::new(0.9).unwrap());
        assert!(!html.contains("95%"), "a 95% left on a 90% page");
        for expected in [
            "<th>delta 90% CI</th>",
            "Intervals are 90%:",
            "90% Wilson",
            "90% CI",
        ] {
            assert!(html.contains(expected), "{expected:?} missing");
        }
        assert!(page(ConfidenceLevel::NINETY_FIVE).contains("Intervals are 95%:"));
    }

    #[test]
    fn the_page_shows_the_per_filter_table_and_the_pooling_caveat() {
        let html = page(ConfidenceLevel::NINETY_FIVE);
        assert!(html.contains("Per filter"), "the per-filter table");
        assert!(html.contains("<td class=\"name\">strict-match</td>"));
        assert!(html.contains("<p class=\"caveat\" role=\"note\">"));
        assert!(html.contains("3 items hold 2 questions under 2 filters and 1 repeat_id"));
    }

    /// A data element of `html`, parsed.
    fn element(html: &str, id: &str) -> Value {
        serde_json::from_str(element_text(html, id)).unwrap()
    }

    /// The text of the page's data element `id`, as the page's `textContent` reads it.
    fn element_text<'h>(html: &'h str, id: &str) -> &'h str {
        let start = html
            .find(&format!("<script id=\"{id}\" type=\"application/json\">"))
            .expect("the data element");
        let text = &html[start..];
        &text[text.find('>').unwrap() + 1..text.find("</script>").unwrap()]
    }

    /// A base64 raw-deflate value of the page, inflated and parsed.
    fn inflate(base64: &Value) -> Value {
        use std::io::Read;
        let bytes = STANDARD.decode(base64.as_str().unwrap()).unwrap();
        let mut json = String::new();
        flate2::read::DeflateDecoder::new(&bytes[..])
            .read_to_string(&mut json)
            .unwrap();
        serde_json::from_str(&json).unwrap()
    }

    #[test]
    fn a_page_made_of_many_jobs_reads_as_one() {
        // 300 items of 80 KB (40 KB a side) end their chunks once past CHUNK_BYTES, and
        // their jobs at the first chunk end past JOB_BYTES; the 900 short ones after them
        // make chunks of CHUNK_ITEMS, jobs of JOB_CHUNKS chunks and a last, short one.
        // The page's chunk starts say where each chunk begins, every index column holds
        // one entry per item in item order, and every side its record.
        let mut baseline = Vec::new();
        let mut variant = Vec::new();
        for n in 0..1200 {
            let mut b = record("original", &format!("q{n:05}"), "en", Some(n % 2 == 0));
            if n < 300 {
                b.input = serde_json::json!({"question": format!("{n} {}", "w".repeat(40_000))});
            }
            let mut v = b.clone();
            v.variant_id = "rephrased".into();
            v.correct = Some(n % 3 == 0);
            baseline.push(b);
            variant.push(v);
        }
        let joined = join(baseline, variant).unwrap();
        let mut comparison = joined.comparison.clone();
        comparison.sort_by_identity(&joined.baseline[..], &joined.variant[..]);
        let summary = Summary::of(&comparison, ConfidenceLevel::NINETY_FIVE);
        let load = |side: Side, row: u32| {
            Ok(match side {
                Side::Baseline => StoredRecord::of(&joined.baseline[row as usize]).unwrap(),
                Side::Variant => StoredRecord::of(&joined.variant[row as usize]).unwrap(),
            })
        };
        let mut out = Vec::new();
        render(&comparison, &summary, &load, &mut out).unwrap();
        let html = String::from_utf8(out).unwrap();

        let chunks: Vec<Value> = element(&html, "babel-details")
            .as_array()
            .unwrap()
            .iter()
            .map(inflate)
            .collect();
        let sizes: Vec<usize> = chunks
            .iter()
            .map(|c| c["i"].as_array().unwrap().len())
            .collect();
        // A chunk of long items ends at the first item that takes it to CHUNK_BYTES (53
        // items); the sixth holds the last 35 long items and 29 short ones; then the short
        // items fill whole chunks.
        let item_bytes = [&joined.baseline[0], &joined.variant[0]]
            .iter()
            .map(|record| StoredRecord::of(record).unwrap().text_len())
            .sum::<usize>();
        let long = CHUNK_BYTES.div_ceil(item_bytes);
        assert_eq!(sizes[..5], [long; 5], "{sizes:?}");
        assert!(sizes[5..sizes.len() - 1].iter().all(|&n| n == CHUNK_ITEMS));
        assert_eq!(sizes.iter().sum::<usize>(), 1200);
        let index = element(&html, "babel-index");
        let starts: Vec<usize> = serde_json::from_value(index["meta"]["chunk_starts"].clone())
            .expect("the chunk starts");
        let expected_starts: Vec<usize> = sizes
            .iter()
            .scan(0, |start, size| {
                let this = *start;
                *start += size;
                Some(this)
            })
            .collect();
        assert_eq!(starts, expected_starts);
        // Each chunk's base64 is found where the meta says, up to the next quote.
        let text_starts: Vec<usize> =
            serde_json::from_value(index["meta"]["chunk_text_starts"].clone())
                .expect("the chunk text starts");
        let details = element_text(&html, "babel-details");
        assert_eq!(text_starts.len(), chunks.len());
        for (number, &start) in text_starts.iter().enumerate() {
            let end = start + details[start..].find('"').unwrap();
            assert_eq!(&details[start - 1..start], "\"");
            assert_eq!(
                inflate(&Value::String(details[start..end].into())),
                chunks[number]
            );
        }
        let chunk_of = |n: usize| starts.iter().rposition(|&start| start <= n).unwrap();
        let ids = inflate(&index["columns"]["question_id"]);
        let expected: Vec<String> = (0..1200).map(|n| format!("q{n:05}")).collect();
        assert_eq!(ids, serde_json::json!(expected));
        for name in INDEX_COLUMNS {
            let column = inflate(&index["columns"][name]);
            assert_eq!(column.as_array().unwrap().len(), 1200, "{name}");
        }
        let questions = inflate(&index["columns"]["question"]);
        for n in [0usize, 63, 64, 299, 300, 1199] {
            let number = chunk_of(n);
            let chunk = &chunks[number];
            let item = &chunk["i"][n - starts[number]];
            assert_eq!(item[0][0], Value::Bool(n % 2 == 0), "baseline of item {n}");
            assert_eq!(item[1][0], Value::Bool(n % 3 == 0), "variant of item {n}");
            let question = &item[0][1]["question"];
            if n < 300 {
                let long = &chunk["s"][question["\u{0}"].as_u64().unwrap() as usize];
                assert_eq!(long, &questions[n], "item {n}");
                assert!(long.as_str().unwrap().starts_with(&format!("{n} ")));
            } else {
                assert_eq!(question, &Value::String(format!("q{n:05}?")), "item {n}");
            }
        }
    }

    #[test]
    fn embedded_json_cannot_close_its_script_element() {
        // "Every string from a model or a dataset is escaped": in JSON, `<`, `>` and `&`
        // only occur inside strings, so escaping them keeps the same value.
        let mut out = Vec::new();
        let value = serde_json::json!({"response": "</script><img src=x onerror=alert(1)> & <!--"});
        serde_json::to_writer(ScriptSafe(&mut out), &value).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            !text.contains('<') && !text.contains('>') && !text.contains('&'),
            "{text}"
        );
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }
}
