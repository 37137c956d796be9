//! The comparison summary: outcome counts and paired statistics overall, per benchmark, per
//! language and per filter. Accuracy and its delta use only matched pairs whose correctness
//! is known on both sides (the [`PairedTable`]); unscored and one-sided items are counted,
//! never scored. Beside them, each side alone ([`SideAlone`]): the accuracy of all of its
//! scored records, unmatched and run-local ones too, which describes a side but compares
//! nothing. Pure arithmetic over a [`Comparison`].
//!
//! Every statistic treats its pairs as independent. Items of one question under several
//! filters or repeat_ids are not, so the summary keeps the spec's item identity and counts
//! but says so in a [`PoolingCaveat`] and breaks the table down per filter.

use serde::Serialize;

use super::stats::{ConfidenceLevel, PairedStats, PairedTable, wilson_interval};
use super::{Comparison, Outcome, PerSide, Scored, SideLabel};

/// How many items fall in each outcome category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct OutcomeCounts {
    pub both_correct: u64,
    pub both_wrong: u64,
    pub correct_to_wrong: u64,
    pub wrong_to_correct: u64,
    pub unscored: u64,
    pub only_baseline: u64,
    pub only_variant: u64,
}

impl OutcomeCounts {
    /// Counts one more item of `outcome`.
    pub fn add(&mut self, outcome: Outcome) {
        *self.slot(outcome) += 1;
    }

    fn slot(&mut self, outcome: Outcome) -> &mut u64 {
        match outcome {
            Outcome::BothCorrect => &mut self.both_correct,
            Outcome::BothWrong => &mut self.both_wrong,
            Outcome::CorrectToWrong => &mut self.correct_to_wrong,
            Outcome::WrongToCorrect => &mut self.wrong_to_correct,
            Outcome::Unscored => &mut self.unscored,
            Outcome::OnlyBaseline => &mut self.only_baseline,
            Outcome::OnlyVariant => &mut self.only_variant,
        }
    }

    /// The count of one outcome.
    pub fn get(&self, outcome: Outcome) -> u64 {
        match outcome {
            Outcome::BothCorrect => self.both_correct,
            Outcome::BothWrong => self.both_wrong,
            Outcome::CorrectToWrong => self.correct_to_wrong,
            Outcome::WrongToCorrect => self.wrong_to_correct,
            Outcome::Unscored => self.unscored,
            Outcome::OnlyBaseline => self.only_baseline,
            Outcome::OnlyVariant => self.only_variant,
        }
    }

    /// All items counted.
    pub fn items(&self) -> u64 {
        Outcome::ALL.iter().map(|&outcome| self.get(outcome)).sum()
    }

    /// Items present on both sides (scored or not).
    pub fn matched(&self) -> u64 {
        self.items() - self.only_baseline - self.only_variant
    }

    /// The 2×2 table of matched pairs with known correctness on both sides.
    pub fn paired_table(&self) -> PairedTable {
        PairedTable {
            both_correct: self.both_correct,
            correct_to_wrong: self.correct_to_wrong,
            wrong_to_correct: self.wrong_to_correct,
            both_wrong: self.both_wrong,
        }
    }
}

/// Counts and statistics of a set of items (all of them, or one benchmark or language).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// Items in the set.
    pub items: u64,
    /// Items present on both sides.
    pub matched: u64,
    pub outcomes: OutcomeCounts,
    /// Paired statistics of the known pairs; null when there is no known pair.
    pub statistics: Option<PairedStats>,
}

impl Group {
    fn of(outcomes: OutcomeCounts, confidence: ConfidenceLevel) -> Self {
        Self {
            items: outcomes.items(),
            matched: outcomes.matched(),
            outcomes,
            statistics: PairedStats::from_table(&outcomes.paired_table(), confidence),
        }
    }
}

/// One side as the summary describes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideSummary {
    pub run_id: String,
    pub variant_id: String,
    /// The run's model.
    pub model: String,
    /// Records of this side with a stable identity (each is one item).
    pub records: u64,
    /// Records of this side left out because their identity is run-local.
    pub run_local_excluded: u64,
    /// This side on its own, unpaired.
    pub alone: SideAlone,
}

/// One side on its own, unpaired: every record of the side whose correctness is known,
/// matched or not, run-local ones too (a record without a stable ID "still contributes to
/// independent summaries when correctness is available"). It describes the side; the
/// paired statistics are what compare the two sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideAlone {
    /// Records with known correctness.
    pub scored: u64,
    /// Of those, correct ones.
    pub correct: u64,
    /// correct / scored; null when no record is scored.
    pub accuracy: Option<f64>,
    /// Wilson score interval of the accuracy at the summary's confidence level.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

impl SideAlone {
    fn of(scored: Scored, confidence: ConfidenceLevel) -> Self {
        let interval = wilson_interval(scored.correct, scored.known, confidence);
        Self {
            scored: scored.known,
            correct: scored.correct,
            accuracy: (scored.known > 0).then(|| scored.correct as f64 / scored.known as f64),
            ci_low: interval.map(|i| i.low),
            ci_high: interval.map(|i| i.high),
        }
    }
}

/// The breakdown of one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchmarkGroup {
    pub benchmark: String,
    #[serde(flatten)]
    pub group: Group,
}

/// The breakdown of one language (null when records name none).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LanguageGroup {
    pub language: Option<String>,
    #[serde(flatten)]
    pub group: Group,
}

/// The breakdown of one filter (the harness's processing pipeline, `none` by default).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FilterGroup {
    pub filter: String,
    #[serde(flatten)]
    pub group: Group,
}

/// Present when one question `(benchmark, language, script, question_id)` is several
/// items, under several filters or repeat_ids: its pairs are not independent, so the
/// statistics that pool them report intervals too narrow and McNemar p-values too small.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PoolingCaveat {
    /// Distinct questions among the items.
    pub questions: u64,
    /// Distinct filters among the items.
    pub filters: u64,
    /// Distinct repeat_ids among the items.
    pub repeat_ids: u64,
    /// Some question is an item under more than one filter: the overall, per-benchmark and
    /// per-language statistics pool them; each per-filter table does not.
    pub pools_filters: bool,
    /// Some question is more than one item under one filter (several repeat_ids): every
    /// table pools them, the per-filter ones too.
    pub pools_repeats: bool,
    /// The caveat in words, as the text summary and the HTML report print it.
    pub message: String,
}

impl PoolingCaveat {
    fn new(
        items: u64,
        questions: u64,
        question_filters: u64,
        filters: u64,
        repeat_ids: u64,
    ) -> Option<Self> {
        let pools_filters = questions < question_filters;
        let pools_repeats = question_filters < items;
        let held = format!(
            "{items} items hold {} under {} and {}",
            counted(questions, "question", "questions"),
            counted(filters, "filter", "filters"),
            counted(repeat_ids, "repeat_id", "repeat_ids"),
        );
        let dependent =
            "which are not independent (their intervals are too narrow and McNemar p too small)";
        let message = match (pools_filters, pools_repeats) {
            (false, false) => return None,
            (true, false) => format!(
                "{held}: the overall, per-benchmark and per-language statistics pool the pairs of one question under several filters, {dependent}. Read the per-filter table, one filter at a time."
            ),
            (true, true) => format!(
                "{held}: the overall, per-benchmark and per-language statistics pool the pairs of one question under several filters and repeats, {dependent}. Read the per-filter table, one filter at a time; it still pools the repeats, so take its intervals and p-values as optimistic."
            ),
            (false, true) => format!(
                "{held}: every table pools repeated measurements of one question, {dependent}. Take the intervals and p-values as optimistic."
            ),
        };
        Some(Self {
            questions,
            filters,
            repeat_ids,
            pools_filters,
            pools_repeats,
            message,
        })
    }
}

fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Everything `babel compare` reports about a comparison besides its items.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub baseline: SideSummary,
    pub variant: SideSummary,
    /// The two-sided confidence level of every interval, e.g. 0.95.
    pub confidence_level: ConfidenceLevel,
    /// All items.
    #[serde(flatten)]
    pub overall: Group,
    /// The same table per benchmark, sorted by benchmark.
    pub by_benchmark: Vec<BenchmarkGroup>,
    /// The same table per language, sorted (null first).
    pub by_language: Vec<LanguageGroup>,
    /// The same table per filter, sorted by filter.
    pub by_filter: Vec<FilterGroup>,
    /// Why pooled statistics overstate their evidence, when they do; null otherwise.
    pub pooling_caveat: Option<PoolingCaveat>,
}

fn side_summary(
    label: &SideLabel,
    records: u64,
    run_local: u64,
    scored: Scored,
    confidence: ConfidenceLevel,
) -> SideSummary {
    SideSummary {
        run_id: label.run_id.clone(),
        variant_id: label.variant_id.clone(),
        model: label.model.clone(),
        records,
        run_local_excluded: run_local,
        alone: SideAlone::of(scored, confidence),
    }
}

/// What the join counted, item by item: the material of a [`Summary`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tally {
    pub overall: OutcomeCounts,
    /// Per benchmark, sorted by name.
    pub by_benchmark: Vec<(String, OutcomeCounts)>,
    /// Per language, sorted (null first).
    pub by_language: Vec<(Option<String>, OutcomeCounts)>,
    /// Per filter, sorted by name.
    pub by_filter: Vec<(String, OutcomeCounts)>,
    /// Distinct questions `(benchmark, language, script, question_id)` among the items.
    pub questions: u64,
    /// Distinct (question, filter) pairs among the items.
    pub question_filters: u64,
    /// Distinct repeat_ids among the items.
    pub repeat_ids: u64,
    /// Records of each side that are items (stable identities).
    pub records: PerSide,
    /// Records of each side with known correctness, run-local ones included.
    pub scored: PerSide<Scored>,
}

impl Summary {
    /// The statistics of `comparison`'s counts at `confidence`.
    pub fn of(comparison: &Comparison, confidence: ConfidenceLevel) -> Self {
        let tally = &comparison.tally;
        let excluded = comparison.run_local_excluded;
        let pooling_caveat = PoolingCaveat::new(
            tally.overall.items(),
            tally.questions,
            tally.question_filters,
            tally.by_filter.len() as u64,
            tally.repeat_ids,
        );
        Self {
            baseline: side_summary(
                &comparison.baseline,
                tally.records.baseline,
                excluded.baseline,
                tally.scored.baseline,
                confidence,
            ),
            variant: side_summary(
                &comparison.variant,
                tally.records.variant,
                excluded.variant,
                tally.scored.variant,
                confidence,
            ),
            confidence_level: confidence,
            overall: Group::of(tally.overall, confidence),
            by_benchmark: tally
                .by_benchmark
                .iter()
                .map(|(benchmark, counts)| BenchmarkGroup {
                    benchmark: benchmark.clone(),
                    group: Group::of(*counts, confidence),
                })
                .collect(),
            by_language: tally
                .by_language
                .iter()
                .map(|(language, counts)| LanguageGroup {
                    language: language.clone(),
                    group: Group::of(*counts, confidence),
                })
                .collect(),
            by_filter: tally
                .by_filter
                .iter()
                .map(|(filter, counts)| FilterGroup {
                    filter: filter.clone(),
                    group: Group::of(*counts, confidence),
                })
                .collect(),
            pooling_caveat,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::{join, record};

    #[test]
    fn accuracy_and_its_delta_use_only_matched_pairs_known_on_both_sides() {
        // "Aggregate accuracy and its delta use only matched pairs with known correctness on
        // both sides." Unscored (null) and one-sided items are counted but not scored.
        let comparison = join(
            vec![
                record("original", "a", "en", Some(true)),
                record("original", "b", "en", Some(true)),
                record("original", "c", "en", None),
                record("original", "d", "en", Some(true)),
            ],
            vec![
                record("rephrased", "a", "en", Some(true)),
                record("rephrased", "b", "en", Some(false)),
                record("rephrased", "c", "en", Some(false)),
                record("rephrased", "e", "en", Some(false)),
            ],
        )
        .unwrap()
        .comparison;
        let summary = Summary::of(&comparison, ConfidenceLevel::NINETY_FIVE);
        assert_eq!(summary.overall.items, 5);
        assert_eq!(summary.overall.matched, 3);
        let counts = summary.overall.outcomes;
        assert_eq!(
            (
                counts.both_correct,
                counts.correct_to_wrong,
                counts.unscored,
                counts.only_baseline,
                counts.only_variant
            ),
            (1, 1, 1, 1, 1)
        );
        let stats = summary.overall.statistics.expect("two known pairs");
        assert_eq!(stats.pairs, 2);
        assert_eq!(stats.baseline_accuracy, 1.0);
        assert_eq!(stats.variant_accuracy, 0.5);
        assert_eq!(summary.baseline.records, 4);
        assert_eq!(summary.variant.records, 4);
        assert_eq!(summary.pooling_caveat, None, "one filter, one repeat_id");
    }

    /// Both sides of `questions` × `filters` × `repeats` items; a question is correct on
    /// the baseline and wrong on the variant under every filter and repeat.
    fn grid(questions: &[&str], filters: &[&str], repeats: u64) -> Comparison {
        let records = |variant: &str, correct: bool| {
            let mut records = Vec::new();
            for question in questions {
                for filter in filters {
                    for repeat_id in 0..repeats {
                        let mut r = record(variant, question, "en", Some(correct));
                        r.filter = (*filter).into();
                        r.repeat_id = repeat_id;
                        records.push(r);
                    }
                }
            }
            records
        };
        join(records("original", true), records("rephrased", false))
            .unwrap()
            .comparison
    }

    #[test]
    fn a_question_under_several_filters_is_one_pair_per_filter_in_the_per_filter_table() {
        // The item identity keeps filter ("(benchmark, language, script, question_id, filter,
        // repeat_id)"), so 12 docs under 3 filters are 36 items and the pooled tables count
        // 36 pairs; each per-filter table counts each question once.
        let docs: Vec<String> = (1..=12).map(|i| format!("g{i:03}")).collect();
        let docs: Vec<&str> = docs.iter().map(String::as_str).collect();
        let filters = ["strict-match", "flexible-extract", "shout"];
        let summary = Summary::of(&grid(&docs, &filters, 1), ConfidenceLevel::NINETY_FIVE);
        assert_eq!(summary.overall.items, 36);
        assert_eq!(
            summary.overall.statistics.as_ref().map(|s| s.pairs),
            Some(36)
        );
        let per_filter: Vec<(&str, Option<u64>)> = summary
            .by_filter
            .iter()
            .map(|g| {
                (
                    g.filter.as_str(),
                    g.group.statistics.as_ref().map(|s| s.pairs),
                )
            })
            .collect();
        assert_eq!(
            per_filter,
            [
                ("flexible-extract", Some(12)),
                ("shout", Some(12)),
                ("strict-match", Some(12)),
            ]
        );
        let caveat = summary
            .pooling_caveat
            .expect("one question under three filters");
        assert_eq!(
            (caveat.questions, caveat.filters, caveat.repeat_ids),
            (12, 3, 1)
        );
        assert!(caveat.pools_filters && !caveat.pools_repeats);
        assert!(
            caveat
                .message
                .starts_with("36 items hold 12 questions under 3 filters and 1 repeat_id:"),
            "{}",
            caveat.message
        );
        assert!(
            caveat
                .message
                .ends_with("Read the per-filter table, one filter at a time."),
            "{}",
            caveat.message
        );
    }

    #[test]
    fn repeats_of_one_question_are_pooled_in_every_table_and_say_so() {
        let summary = Summary::of(
            &grid(&["a", "b"], &["none"], 3),
            ConfidenceLevel::NINETY_FIVE,
        );
        assert_eq!(
            summary.by_filter[0]
                .group
                .statistics
                .as_ref()
                .map(|s| s.pairs),
            Some(6)
        );
        let caveat = summary
            .pooling_caveat
            .expect("three repeats of each question");
        assert_eq!(
            (caveat.questions, caveat.filters, caveat.repeat_ids),
            (2, 1, 3)
        );
        assert!(!caveat.pools_filters && caveat.pools_repeats);
        assert!(
            caveat
                .message
                .contains("every table pools repeated measurements"),
            "{}",
            caveat.message
        );

        let both = Summary::of(&grid(&["a"], &["x", "y"], 2), ConfidenceLevel::NINETY_FIVE);
        let caveat = both.pooling_caveat.expect("two filters, two repeats");
        assert!(caveat.pools_filters && caveat.pools_repeats);
        assert!(
            caveat.message.contains("it still pools the repeats"),
            "{}",
            caveat.message
        );
    }

    #[test]
    fn filters_of_different_questions_need_no_caveat() {
        // Two filters, but no question under both: every pair is a different question.
        let mut strict = record("original", "b", "en", Some(true));
        strict.filter = "strict-match".into();
        let mut strict_variant = record("rephrased", "b", "en", Some(true));
        strict_variant.filter = "strict-match".into();
        let comparison = join(
            vec![record("original", "a", "en", Some(true)), strict],
            vec![record("rephrased", "a", "en", Some(false)), strict_variant],
        )
        .unwrap()
        .comparison;
        let summary = Summary::of(&comparison, ConfidenceLevel::NINETY_FIVE);
        assert_eq!(summary.by_filter.len(), 2);
        assert_eq!(summary.pooling_caveat, None);
    }

    #[test]
    fn the_summary_carries_the_confidence_level_it_was_computed_at() {
        let level = ConfidenceLevel::new(0.9).unwrap();
        let summary = Summary::of(&grid(&["a"], &["none"], 1), level);
        assert_eq!(summary.confidence_level, level);
        let json = serde_json::to_value(&summary).unwrap();
        assert_eq!(json["confidence_level"], 0.9);
        assert_eq!(json["statistics"]["confidence_level"], 0.9);
        assert!(json["by_filter"][0]["filter"] == "none");
        assert!(json["pooling_caveat"].is_null());
    }

    #[test]
    fn a_group_without_known_pairs_has_no_statistics() {
        let comparison = join(
            vec![record("original", "a", "en", None)],
            vec![record("rephrased", "a", "en", Some(true))],
        )
        .unwrap()
        .comparison;
        let summary = Summary::of(&comparison, ConfidenceLevel::NINETY_FIVE);
        assert_eq!(summary.overall.outcomes.unscored, 1);
        assert_eq!(summary.overall.statistics, None);
    }

    #[test]
    fn breakdowns_split_by_benchmark_and_by_language() {
        let mut other = record("original", "a", "fr", Some(true));
        other.benchmark = "zeta".into();
        let mut other_variant = record("rephrased", "a", "fr", Some(false));
        other_variant.benchmark = "zeta".into();
        let comparison = join(
            vec![record("original", "a", "en", Some(true)), other],
            vec![record("rephrased", "a", "en", Some(true)), other_variant],
        )
        .unwrap()
        .comparison;
        let summary = Summary::of(&comparison, ConfidenceLevel::NINETY_FIVE);
        let benchmarks: Vec<(&str, u64, u64)> = summary
            .by_benchmark
            .iter()
            .map(|g| {
                (
                    g.benchmark.as_str(),
                    g.group.outcomes.both_correct,
                    g.group.outcomes.correct_to_wrong,
                )
            })
            .collect();
        assert_eq!(benchmarks, [("bench", 1, 0), ("zeta", 0, 1)]);
        let languages: Vec<Option<&str>> = summary
            .by_language
            .iter()
            .map(|g| g.language.as_deref())
            .collect();
        assert_eq!(languages, [Some("en"), Some("fr")]);
    }
}
