//! The summary `babel panel` prints: a leaderboard, Cochran's Q over the matched items,
//! the pairs that still differ after Holm's adjustment, per-slice ranking agreement,
//! variant robustness and the flag counts. Long tables are cut, with a note that
//! `--json` and `--items` hold everything, so that it stays readable at 100 sides.

use std::io::{self, Write};

use crate::panel::summary::PanelSummary;
use crate::report::{level, p_value, percent, points};

/// Rows of the leaderboard shown in full; beyond it the top and the bottom are.
const LEADERBOARD_ROWS: usize = 40;
/// Significant pairs shown.
const PAIR_ROWS: usize = 20;
/// The significance level the pairwise table applies to Holm-adjusted p-values.
pub const ALPHA: f64 = 0.05;

fn side_name(summary: &PanelSummary, side: usize) -> String {
    let s = &summary.sides[side];
    format!("{}:{}", s.run_id, s.variant_id)
}

/// Writes the summary.
pub fn render(summary: &PanelSummary, out: &mut dyn Write) -> io::Result<()> {
    write_counts(summary, out)?;
    write_leaderboard(summary, out)?;
    write_cochran_q(summary, out)?;
    write_significant_pairs(summary, out)?;
    write_slice_rankings(summary, out)?;
    write_robustness(summary, out)?;
    writeln!(
        out,
        "Flags: {} items wrong on every one of at least 3 sides that know them (consensus_wrong: check the answer key), {} with negative discrimination (known on at least 5 sides; better sides get them wrong more often)",
        summary.flags.consensus_wrong, summary.flags.negative_discrimination
    )?;
    writeln!(
        out,
        "Unknown correctness is never counted as wrong; every figure uses only known values."
    )
}

/// The opening lines: how many sides and items, and the run-local records left out.
fn write_counts(summary: &PanelSummary, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "panel: {} sides, {} items ({} known on every side)",
        summary.sides.len(),
        summary.items,
        summary.matched.items
    )?;
    let run_local: u64 = summary.sides.iter().map(|s| s.run_local).sum();
    if run_local > 0 {
        writeln!(
            out,
            "  {run_local} records with run-local identities are left out (never paired; counted per side in --json)"
        )?;
    }
    writeln!(out)
}

/// The leaderboard: by accuracy, sides without a known item last; beyond
/// `LEADERBOARD_ROWS` only the top and the bottom are shown.
fn write_leaderboard(summary: &PanelSummary, out: &mut dyn Write) -> io::Result<()> {
    let confidence = crate::compare::stats::ConfidenceLevel::new(summary.confidence_level)
        .expect("a summary's level is valid");
    let mut order: Vec<usize> = (0..summary.sides.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |s: usize| summary.sides[s].accuracy.unwrap_or(-1.0);
        key(b).total_cmp(&key(a)).then(a.cmp(&b))
    });
    let width = order
        .iter()
        .map(|&s| side_name(summary, s).len())
        .max()
        .unwrap_or(4)
        .clamp(4, 48);
    writeln!(
        out,
        "  {:>4}  {:<width$}  {:>8}  {:<18}  {:>8}  {:>8}",
        "rank",
        "side",
        "accuracy",
        format!("{} CI", level(confidence)),
        "known",
        "unknown"
    )?;
    let mut previous = None;
    for (rank, side) in leaderboard_rows(&order) {
        if previous.is_some_and(|p: usize| rank > p + 1) {
            writeln!(
                out,
                "  {:>4}  … {} more (all of them in --json and --items)",
                "",
                rank - previous.unwrap_or(0) - 1
            )?;
        }
        previous = Some(rank);
        let s = &summary.sides[side];
        let (accuracy, interval) = match (s.accuracy, s.ci_low, s.ci_high) {
            (Some(a), Some(l), Some(h)) => {
                (percent(a), format!("[{}, {}]", percent(l), percent(h)))
            }
            _ => ("-".into(), "no known item".into()),
        };
        let mut name = side_name(summary, side);
        if name.chars().count() > width {
            name = format!("{}…", name.chars().take(width - 1).collect::<String>());
        }
        writeln!(
            out,
            "  {:>4}  {:<width$}  {:>8}  {:<18}  {:>8}  {:>8}",
            rank + 1,
            name,
            accuracy,
            interval,
            s.known,
            summary.items - s.known
        )?;
    }
    writeln!(out)
}

/// The (rank, side) rows of the leaderboard that are shown, in rank order.
fn leaderboard_rows(order: &[usize]) -> Vec<(usize, usize)> {
    if order.len() <= LEADERBOARD_ROWS {
        order.iter().copied().enumerate().collect()
    } else {
        let top = LEADERBOARD_ROWS * 3 / 4;
        let bottom = LEADERBOARD_ROWS - top;
        order
            .iter()
            .copied()
            .enumerate()
            .filter(|(rank, _)| *rank < top || *rank >= order.len() - bottom)
            .collect()
    }
}

/// Cochran's Q over the items known on every side, or why there is none.
fn write_cochran_q(summary: &PanelSummary, out: &mut dyn Write) -> io::Result<()> {
    match (summary.matched.cochran_q, summary.matched.p_value) {
        (Some(q), Some(p)) => writeln!(
            out,
            "Cochran's Q over the {} items known on every side: {q:.3} (df {}), p = {}",
            summary.matched.items,
            summary.matched.df,
            p_value(p)
        ),
        _ if summary.matched.items == 0 => {
            writeln!(out, "Cochran's Q: no item is known on every side")
        }
        _ => writeln!(
            out,
            "Cochran's Q: undefined (every one of the {} items known on every side has the same outcome on all of them)",
            summary.matched.items
        ),
    }
}

/// The pairs whose Holm-adjusted McNemar p is below `ALPHA`, smallest first, at most
/// `PAIR_ROWS` of them.
fn write_significant_pairs(summary: &PanelSummary, out: &mut dyn Write) -> io::Result<()> {
    let mut significant: Vec<&crate::panel::summary::PairSummary> = summary
        .pairs
        .iter()
        .filter(|p| p.mcnemar_p_holm.is_some_and(|p| p < ALPHA))
        .collect();
    significant.sort_by(|a, b| {
        a.mcnemar_p_holm
            .unwrap_or(1.0)
            .total_cmp(&b.mcnemar_p_holm.unwrap_or(1.0))
            .then((a.a, a.b).cmp(&(b.a, b.b)))
    });
    writeln!(
        out,
        "Pairs that differ after Holm's adjustment (exact McNemar, p < {ALPHA}): {} of {}",
        significant.len(),
        summary.pairs.len()
    )?;
    if significant.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "  {:<24}  {:<24}  {:>9}  {:<18}  {:>9}  {:>9}  {:>6}  {:>6}",
        "a", "b", "delta b-a", "CI", "McNemar p", "Holm p", "kappa", "pairs"
    )?;
    for pair in significant.iter().take(PAIR_ROWS) {
        let interval = match (pair.delta_ci_low, pair.delta_ci_high) {
            (Some(l), Some(h)) => format!("[{}, {}]", points(l), points(h)),
            _ => "-".into(),
        };
        writeln!(
            out,
            "  {:<24}  {:<24}  {:>9}  {:<18}  {:>9}  {:>9}  {:>6}  {:>6}",
            side_name(summary, pair.a),
            side_name(summary, pair.b),
            pair.delta.map_or("-".into(), points),
            interval,
            pair.mcnemar_p.map_or("-".into(), p_value),
            pair.mcnemar_p_holm.map_or("-".into(), p_value),
            pair.kappa.map_or("-".into(), |k| format!("{k:.2}")),
            pair.known_pairs
        )?;
    }
    if significant.len() > PAIR_ROWS {
        writeln!(
            out,
            "  … {} more (every pair in --json)",
            significant.len() - PAIR_ROWS
        )?;
    }
    Ok(())
}

/// Kendall's tau-b of each benchmark's and each language's ranking against the overall
/// one, where there are at least two slices.
fn write_slice_rankings(summary: &PanelSummary, out: &mut dyn Write) -> io::Result<()> {
    for (what, slices) in [
        ("benchmark", &summary.by_benchmark),
        ("language", &summary.by_language),
    ] {
        if slices.len() < 2 {
            continue;
        }
        let taus: Vec<String> = slices
            .iter()
            .map(|s| {
                format!(
                    "{} {}",
                    s.value.as_deref().unwrap_or("(none)"),
                    s.kendall_tau.map_or("-".into(), |t| format!("{t:.2}"))
                )
            })
            .collect();
        writeln!(
            out,
            "Ranking per {what} against the overall one (Kendall's tau-b): {}",
            taus.join(", ")
        )?;
    }
    Ok(())
}

/// One line per run compared over several variants.
fn write_robustness(summary: &PanelSummary, out: &mut dyn Write) -> io::Result<()> {
    for r in &summary.robustness {
        writeln!(
            out,
            "Robustness of run {} over {} variants ({}): {} items known on all, {} correct on all, {} wrong on all, {} mixed; consistency {}",
            r.run_id,
            r.variants.len(),
            r.variants.join(", "),
            r.items,
            r.all_correct,
            r.all_wrong,
            r.mixed,
            r.consistency.map_or("-".into(), percent)
        )?;
    }
    Ok(())
}
