//! The HTML report: one self-contained page that works offline from file://, with no
//! server and no network request.
//!
//! The page shell and the summary are an askama template (`templates/report.html`,
//! HTML-escaped by default); the items follow as one JSON document inside a
//! `<script type="application/json">` element, streamed item by item rather than built as
//! one string; vanilla JS (`templates/report.js`) renders only the rows in view, and
//! every dataset or model string reaches the page through `textContent`, never as markup.
//! In the embedded JSON every `<`, `>` and `&` is written as a `\u` escape, so no string
//! can close the script element (`</script>`) or open a comment.

use askama::Template;
use serde::Serialize;
use serde::ser::{SerializeTuple, Serializer};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io::{self, Write};

use super::{EACH_SIDE_ALONE, Load, LoadedItem, each_side_alone, level, p_value, percent, points};
use crate::compare::summary::{Group, Summary};
use crate::compare::{Comparison, Outcome, SideLabel};
use crate::record::Record;

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

/// Writes JSON text for a `<script>` element: `<`, `>` and `&` (which JSON only ever
/// holds inside strings) become `\u003c`, `\u003e` and `\u0026`, the same string to
/// `JSON.parse`.
struct ScriptSafe<W>(W);

impl<W: Write> Write for ScriptSafe<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut start = 0;
        for (i, byte) in buf.iter().enumerate() {
            let escaped: &[u8] = match byte {
                b'<' => b"\\u003c",
                b'>' => b"\\u003e",
                b'&' => b"\\u0026",
                _ => continue,
            };
            self.0.write_all(&buf[start..i])?;
            self.0.write_all(escaped)?;
            start = i + 1;
        }
        self.0.write_all(&buf[start..])?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Interns repeated strings (benchmarks, languages, source paths) as indices, numbered in
/// the order they are first seen.
#[derive(Default)]
struct Table {
    index: HashMap<Option<String>, usize>,
    values: Vec<Option<String>>,
}

impl Table {
    fn id(&mut self, value: Option<&str>) -> usize {
        if let Some(&id) = self.index.get(&value.map(str::to_owned)) {
            return id;
        }
        self.values.push(value.map(str::to_owned));
        self.index
            .insert(value.map(str::to_owned), self.values.len() - 1);
        self.values.len() - 1
    }
}

/// One side of an item as the page reads it: an array, so that 200,000 items do not
/// repeat every key. The order is `SIDE_FIELDS` in report.js.
struct SideView<'a> {
    record: &'a Record,
    source: usize,
}

impl Serialize for SideView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.record;
        let mut tuple = serializer.serialize_tuple(12)?;
        tuple.serialize_element(&r.correct)?;
        tuple.serialize_element(&r.input)?;
        tuple.serialize_element(&r.target)?;
        tuple.serialize_element(&r.prediction)?;
        tuple.serialize_element(&r.response)?;
        tuple.serialize_element(&r.scores)?;
        tuple.serialize_element(&r.metrics)?;
        tuple.serialize_element(&r.warnings)?;
        tuple.serialize_element(&self.source)?;
        tuple.serialize_element(&r.source.line_number())?;
        tuple.serialize_element(&r.rephrasing_model)?;
        tuple.serialize_element(&r.extra)?;
        tuple.end()
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

fn side_view<'a>(record: &'a Record, sources: &mut Table) -> SideView<'a> {
    SideView {
        record,
        source: sources.id(Some(&record.source.path)),
    }
}

/// The items first, then what they refer to (the tables fill while the items stream).
fn write_data(comparison: &Comparison, load: Load<'_>, out: &mut dyn Write) -> io::Result<()> {
    let mut benchmarks = Table::default();
    let mut languages = Table::default();
    let mut sources = Table::default();
    let mut out = ScriptSafe(out);
    out.write_all(b"{\"items\":[")?;
    for (n, item) in comparison.items.iter().enumerate() {
        if n > 0 {
            out.write_all(b",\n")?;
        }
        let item = LoadedItem::load(item, &mut *load)?;
        let record = item.any_record();
        let outcome = Outcome::ALL
            .iter()
            .position(|&o| o == item.outcome)
            .unwrap_or_default();
        let benchmark = benchmarks.id(Some(&record.benchmark));
        let language = languages.id(record.language.as_deref());
        let baseline = item.baseline.as_ref().map(|r| side_view(r, &mut sources));
        let variant = item.variant.as_ref().map(|r| side_view(r, &mut sources));
        let row = (
            outcome,
            benchmark,
            language,
            &record.question_id,
            &record.script,
            &record.filter,
            record.repeat_id,
            baseline,
            variant,
        );
        serde_json::to_writer(&mut out, &row)?;
    }
    let meta = PageMeta {
        baseline: &comparison.baseline,
        variant: &comparison.variant,
        outcomes: outcome_list(),
        benchmarks: &benchmarks.values,
        languages: &languages.values,
        sources: &sources.values,
    };
    out.write_all(b"],\n\"meta\":")?;
    serde_json::to_writer(&mut out, &meta)?;
    out.write_all(b"}")
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
        let mut load = |side: Side, row: u32| {
            Ok(match side {
                Side::Baseline => joined.baseline[row as usize].clone(),
                Side::Variant => joined.variant[row as usize].clone(),
            })
        };
        render(comparison, &summary, &mut load, &mut out).unwrap();
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
