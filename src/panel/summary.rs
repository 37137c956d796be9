//! Every figure of a panel, computed from its [`Grid`]: per side, the matched set
//! (Cochran's Q), every pair of sides (2×2 counts, the paired delta with Newcombe's
//! interval, exact McNemar with Holm's adjustment over all pairs, Cohen's κ), per
//! benchmark and per language (each side's accuracy and Kendall's τ-b against the overall
//! ranking), variant robustness per run, and per item (counts, point-biserial
//! discrimination, flags). Only known cells count: unknown is never wrong, and every
//! figure says over how many known values it is.
//!
//! Pure: the grid and the labels in, serializable figures out. FORMAT.md ("Panels") and
//! PANEL.md define each figure with its reference.

use serde::Serialize;

use super::grid::{Cell, Grid, has, mask_of};
use super::stats::{cochran_q, cohen_kappa, holm, kendall_tau_b, pearson};
use crate::compare::stats::{
    ConfidenceLevel, PairedTable, mcnemar_exact_p, paired_delta_interval, wilson_interval,
};

/// What the summary needs to know of a side besides its cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideInfo {
    pub run_id: String,
    pub variant_id: String,
    pub model: String,
    /// Records of the side (its run's records of its variant).
    pub records: u64,
    /// Of those, records with a run-local identity: never joined, left out of the grid.
    pub run_local: u64,
}

/// The labels of the items, interned: item i's benchmark is `benchmarks[benchmark[i]]`,
/// its language `languages[language[i]]` (null for none).
#[derive(Debug, Clone, Default)]
pub struct ItemLabels {
    pub benchmarks: Vec<String>,
    pub benchmark: Vec<u32>,
    pub languages: Vec<Option<String>>,
    pub language: Vec<u32>,
}

/// One side of the leaderboard.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideSummary {
    pub run_id: String,
    pub variant_id: String,
    pub model: String,
    pub records: u64,
    pub run_local: u64,
    /// Items of the panel whose correctness this side knows.
    pub known: u64,
    pub correct: u64,
    pub accuracy: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

/// The items known on every side, and Cochran's Q over them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Matched {
    pub items: u64,
    pub cochran_q: Option<f64>,
    pub df: u64,
    pub p_value: Option<f64>,
}

/// Two sides, `a` < `b` (indices into `sides`), over the items known on both.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairSummary {
    pub a: usize,
    pub b: usize,
    pub known_pairs: u64,
    pub both_correct: u64,
    pub both_wrong: u64,
    pub a_only_correct: u64,
    pub b_only_correct: u64,
    /// accuracy(b) − accuracy(a) on the known pairs.
    pub delta: Option<f64>,
    pub delta_ci_low: Option<f64>,
    pub delta_ci_high: Option<f64>,
    pub mcnemar_p: Option<f64>,
    pub mcnemar_p_holm: Option<f64>,
    pub kappa: Option<f64>,
}

/// One side within a slice (a benchmark or a language).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SliceSide {
    pub known: u64,
    pub correct: u64,
    pub accuracy: Option<f64>,
}

/// One benchmark or language: each side's figures there, and how its ranking of the sides
/// agrees with the overall one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SliceSummary {
    pub value: Option<String>,
    pub sides: Vec<SliceSide>,
    pub kendall_tau: Option<f64>,
}

/// A run that appears with two or more variants: how often its verdict on an item holds
/// across them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Robustness {
    pub run_id: String,
    pub variants: Vec<String>,
    /// Items known on every one of those variants.
    pub items: u64,
    pub all_correct: u64,
    pub all_wrong: u64,
    pub mixed: u64,
    /// (all correct + all wrong) / items.
    pub consistency: Option<f64>,
}

/// How many items carry each flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct Flags {
    pub consensus_wrong: u64,
    pub negative_discrimination: u64,
}

/// One item's figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ItemStats {
    pub known: u64,
    pub correct: u64,
    /// Pearson's r between the item's correctness on the sides that know it and those
    /// sides' accuracies.
    pub point_biserial: Option<f64>,
    /// Known on at least 3 sides and wrong on every one: a candidate answer-key error.
    pub consensus_wrong: bool,
    /// Known on at least 5 sides, and point-biserial below 0: better sides get it wrong
    /// more often.
    pub negative_discrimination: bool,
    /// Known on at least 2 sides, correct on some and wrong on others.
    pub discordant: bool,
}

/// The items flagged `consensus_wrong` are known on at least this many sides.
pub const CONSENSUS_MIN_SIDES: u64 = 3;
/// The items flagged `negative_discrimination` are known on at least this many sides.
pub const DISCRIMINATION_MIN_SIDES: u64 = 5;

/// Every figure of a panel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PanelSummary {
    pub confidence_level: f64,
    pub items: u64,
    pub sides: Vec<SideSummary>,
    pub matched: Matched,
    pub pairs: Vec<PairSummary>,
    pub by_benchmark: Vec<SliceSummary>,
    pub by_language: Vec<SliceSummary>,
    pub robustness: Vec<Robustness>,
    pub flags: Flags,
    /// Per item, in grid order (not serialized: `--items` writes them).
    #[serde(skip)]
    pub item_stats: Vec<ItemStats>,
}

fn ratio(correct: u64, known: u64) -> Option<f64> {
    (known > 0).then(|| correct as f64 / known as f64)
}

/// Computes every figure of `grid`, whose sides are `sides` and items labelled `labels`.
pub fn summarize(
    grid: &Grid,
    sides: &[SideInfo],
    labels: &ItemLabels,
    confidence: ConfidenceLevel,
) -> PanelSummary {
    assert_eq!(grid.sides(), sides.len());
    let side_summaries: Vec<SideSummary> = sides
        .iter()
        .enumerate()
        .map(|(index, info)| {
            let (known, correct) = grid.side_counts(index, None);
            let interval = wilson_interval(correct, known, confidence);
            SideSummary {
                run_id: info.run_id.clone(),
                variant_id: info.variant_id.clone(),
                model: info.model.clone(),
                records: info.records,
                run_local: info.run_local,
                known,
                correct,
                accuracy: ratio(correct, known),
                ci_low: interval.map(|i| i.low),
                ci_high: interval.map(|i| i.high),
            }
        })
        .collect();
    let accuracies: Vec<Option<f64>> = side_summaries.iter().map(|s| s.accuracy).collect();
    let item_stats = items(grid, &accuracies);
    let flags = Flags {
        consensus_wrong: item_stats.iter().filter(|i| i.consensus_wrong).count() as u64,
        negative_discrimination: item_stats
            .iter()
            .filter(|i| i.negative_discrimination)
            .count() as u64,
    };
    PanelSummary {
        confidence_level: confidence.level(),
        items: grid.items() as u64,
        matched: matched(grid),
        pairs: pairs(grid, confidence),
        by_benchmark: slices(
            grid,
            &labels.benchmark,
            labels.benchmarks.len(),
            &accuracies,
            |v| Some(labels.benchmarks[v].clone()),
        ),
        by_language: slices(
            grid,
            &labels.language,
            labels.languages.len(),
            &accuracies,
            |v| labels.languages[v].clone(),
        ),
        robustness: robustness(grid, sides),
        sides: side_summaries,
        flags,
        item_stats,
    }
}

fn matched(grid: &Grid) -> Matched {
    let all: Vec<usize> = (0..grid.sides()).collect();
    let mask = grid.known_on_all(&all);
    let items = mask.iter().map(|w| u64::from(w.count_ones())).sum();
    let columns: Vec<u64> = all
        .iter()
        .map(|&side| grid.side_counts(side, Some(&mask)).1)
        .collect();
    let rows = (0..grid.items())
        .filter(|&item| has(&mask, item))
        .map(|item| grid.item_counts(item).1);
    let q = if items > 0 {
        cochran_q(&columns, rows)
    } else {
        None
    };
    Matched {
        items,
        cochran_q: q.map(|(q, _)| q),
        df: grid.sides().saturating_sub(1) as u64,
        p_value: q.map(|(_, p)| p),
    }
}

fn pairs(grid: &Grid, confidence: ConfidenceLevel) -> Vec<PairSummary> {
    let mut pairs = Vec::new();
    for a in 0..grid.sides() {
        for b in a + 1..grid.sides() {
            let counts = grid.pair(a, b);
            let n = counts.known_pairs();
            let table = PairedTable {
                both_correct: counts.both_correct,
                correct_to_wrong: counts.a_only_correct,
                wrong_to_correct: counts.b_only_correct,
                both_wrong: counts.both_wrong,
            };
            let interval = paired_delta_interval(&table, confidence);
            pairs.push(PairSummary {
                a,
                b,
                known_pairs: n,
                both_correct: counts.both_correct,
                both_wrong: counts.both_wrong,
                a_only_correct: counts.a_only_correct,
                b_only_correct: counts.b_only_correct,
                delta: (n > 0).then(|| {
                    (counts.b_only_correct as f64 - counts.a_only_correct as f64) / n as f64
                }),
                delta_ci_low: interval.map(|i| i.low),
                delta_ci_high: interval.map(|i| i.high),
                mcnemar_p: (n > 0)
                    .then(|| mcnemar_exact_p(counts.a_only_correct, counts.b_only_correct)),
                mcnemar_p_holm: None,
                kappa: cohen_kappa(
                    counts.both_correct,
                    counts.a_only_correct,
                    counts.b_only_correct,
                    counts.both_wrong,
                ),
            });
        }
    }
    let adjusted = holm(&pairs.iter().map(|p| p.mcnemar_p).collect::<Vec<_>>());
    for (pair, p) in pairs.iter_mut().zip(adjusted) {
        pair.mcnemar_p_holm = p;
    }
    pairs
}

/// The slices of one label (`of[item]` indexes `count` values), sorted by value (a null
/// value first).
fn slices(
    grid: &Grid,
    of: &[u32],
    count: usize,
    overall: &[Option<f64>],
    value: impl Fn(usize) -> Option<String>,
) -> Vec<SliceSummary> {
    let mut slices: Vec<SliceSummary> = (0..count)
        .filter(|&v| of.contains(&(v as u32)))
        .map(|v| {
            let mask = mask_of(grid.items(), |item| of[item] == v as u32);
            let sides: Vec<SliceSide> = (0..grid.sides())
                .map(|side| {
                    let (known, correct) = grid.side_counts(side, Some(&mask));
                    SliceSide {
                        known,
                        correct,
                        accuracy: ratio(correct, known),
                    }
                })
                .collect();
            let (x, y): (Vec<f64>, Vec<f64>) = sides
                .iter()
                .zip(overall)
                .filter_map(|(slice, overall)| Some((slice.accuracy?, (*overall)?)))
                .unzip();
            SliceSummary {
                value: value(v),
                sides,
                kendall_tau: kendall_tau_b(&x, &y),
            }
        })
        .collect();
    slices.sort_by(|a, b| a.value.cmp(&b.value));
    slices
}

fn robustness(grid: &Grid, sides: &[SideInfo]) -> Vec<Robustness> {
    let mut runs: Vec<(&str, Vec<usize>)> = Vec::new();
    for (index, side) in sides.iter().enumerate() {
        match runs.iter_mut().find(|(run, _)| *run == side.run_id) {
            Some((_, members)) => members.push(index),
            None => runs.push((&side.run_id, vec![index])),
        }
    }
    runs.into_iter()
        .filter(|(_, members)| members.len() >= 2)
        .map(|(run, members)| {
            let mask = grid.known_on_all(&members);
            let (mut items, mut all_correct, mut all_wrong) = (0, 0, 0);
            for item in (0..grid.items()).filter(|&item| has(&mask, item)) {
                items += 1;
                let correct = members
                    .iter()
                    .filter(|&&side| grid.cell(side, item) == Cell::Correct)
                    .count();
                if correct == members.len() {
                    all_correct += 1;
                } else if correct == 0 {
                    all_wrong += 1;
                }
            }
            Robustness {
                run_id: run.to_owned(),
                variants: members
                    .iter()
                    .map(|&m| sides[m].variant_id.clone())
                    .collect(),
                items,
                all_correct,
                all_wrong,
                mixed: items - all_correct - all_wrong,
                consistency: ratio(all_correct + all_wrong, items),
            }
        })
        .collect()
}

fn items(grid: &Grid, accuracies: &[Option<f64>]) -> Vec<ItemStats> {
    let mut x = Vec::with_capacity(grid.sides());
    let mut y = Vec::with_capacity(grid.sides());
    (0..grid.items())
        .map(|item| {
            x.clear();
            y.clear();
            for (side, accuracy) in accuracies.iter().enumerate() {
                if let (Some(correct), Some(accuracy)) = (grid.cell(side, item).known(), accuracy) {
                    x.push(if correct { 1.0 } else { 0.0 });
                    y.push(*accuracy);
                }
            }
            let known = x.len() as u64;
            let correct = x.iter().filter(|v| **v == 1.0).count() as u64;
            let point_biserial = pearson(&x, &y);
            ItemStats {
                known,
                correct,
                point_biserial,
                consensus_wrong: known >= CONSENSUS_MIN_SIDES && correct == 0,
                negative_discrimination: known >= DISCRIMINATION_MIN_SIDES
                    && point_biserial.is_some_and(|r| r < 0.0),
                discordant: known >= 2 && correct > 0 && correct < known,
            }
        })
        .collect()
}
