//! The comparison summary: outcome counts and paired statistics overall, per benchmark and
//! per language. Accuracy and its delta use only matched pairs whose correctness is known
//! on both sides (the [`PairedTable`]); unscored and one-sided items are counted, never
//! scored. Pure arithmetic over a [`Comparison`].

use serde::Serialize;
use std::collections::BTreeMap;

use super::stats::{ConfidenceLevel, PairedStats, PairedTable};
use super::{Comparable, Comparison, Outcome, PerSide, SideLabel};

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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideSummary {
    pub run_id: String,
    pub variant_id: String,
    /// Records of this side with a stable identity (each is one item).
    pub records: u64,
    /// Records of this side left out because their identity is run-local.
    pub run_local_excluded: u64,
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

/// Everything `babel compare` reports about a comparison besides its items.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub baseline: SideSummary,
    pub variant: SideSummary,
    /// All items.
    #[serde(flatten)]
    pub overall: Group,
    /// The same table per benchmark, sorted by benchmark.
    pub by_benchmark: Vec<BenchmarkGroup>,
    /// The same table per language, sorted (null first).
    pub by_language: Vec<LanguageGroup>,
}

fn side_summary(label: &SideLabel, records: u64, run_local: u64) -> SideSummary {
    SideSummary {
        run_id: label.run_id.clone(),
        variant_id: label.variant_id.clone(),
        records,
        run_local_excluded: run_local,
    }
}

impl Summary {
    /// Counts every item of `comparison` and computes the statistics at `confidence`.
    pub fn of<R: Comparable>(comparison: &Comparison<R>, confidence: ConfidenceLevel) -> Self {
        let mut overall = OutcomeCounts::default();
        let mut by_benchmark: BTreeMap<&str, OutcomeCounts> = BTreeMap::new();
        let mut by_language: BTreeMap<Option<&str>, OutcomeCounts> = BTreeMap::new();
        let mut records = PerSide::default();
        for item in &comparison.items {
            let outcome = item.outcome();
            let (benchmark, language, ..) = item.any_record().identity_key();
            overall.add(outcome);
            by_benchmark.entry(benchmark).or_default().add(outcome);
            by_language.entry(language).or_default().add(outcome);
            records.baseline += u64::from(item.baseline().is_some());
            records.variant += u64::from(item.variant().is_some());
        }
        let excluded = comparison.run_local_excluded;
        Self {
            baseline: side_summary(&comparison.baseline, records.baseline, excluded.baseline),
            variant: side_summary(&comparison.variant, records.variant, excluded.variant),
            overall: Group::of(overall, confidence),
            by_benchmark: by_benchmark
                .into_iter()
                .map(|(benchmark, counts)| BenchmarkGroup {
                    benchmark: benchmark.to_owned(),
                    group: Group::of(counts, confidence),
                })
                .collect(),
            by_language: by_language
                .into_iter()
                .map(|(language, counts)| LanguageGroup {
                    language: language.map(str::to_owned),
                    group: Group::of(counts, confidence),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::compare;
    use crate::compare::tests::{record, side};

    #[test]
    fn accuracy_and_its_delta_use_only_matched_pairs_known_on_both_sides() {
        // "Aggregate accuracy and its delta use only matched pairs with known correctness on
        // both sides." Unscored (null) and one-sided items are counted but not scored.
        let comparison = compare(
            side(
                "original",
                vec![
                    record("original", "a", "en", Some(true)),
                    record("original", "b", "en", Some(true)),
                    record("original", "c", "en", None),
                    record("original", "d", "en", Some(true)),
                ],
            ),
            side(
                "rephrased",
                vec![
                    record("rephrased", "a", "en", Some(true)),
                    record("rephrased", "b", "en", Some(false)),
                    record("rephrased", "c", "en", Some(false)),
                    record("rephrased", "e", "en", Some(false)),
                ],
            ),
        )
        .unwrap();
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
    }

    #[test]
    fn a_group_without_known_pairs_has_no_statistics() {
        let comparison = compare(
            side("original", vec![record("original", "a", "en", None)]),
            side(
                "rephrased",
                vec![record("rephrased", "a", "en", Some(true))],
            ),
        )
        .unwrap();
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
        let comparison = compare(
            side(
                "original",
                vec![record("original", "a", "en", Some(true)), other],
            ),
            side(
                "rephrased",
                vec![record("rephrased", "a", "en", Some(true)), other_variant],
            ),
        )
        .unwrap();
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
