//! The plain-text summary `babel compare` prints: the two sides, the outcome counts, the
//! paired statistics of the known pairs, the pooling caveat when one question is several
//! items, each side alone when it has scored records the pairs leave out, and the same
//! table per benchmark, per language and per filter. Plain ASCII columns, no colour.

use std::io::{self, Write};

use super::{EACH_SIDE_ALONE, each_side_alone, level, p_value, percent, points};
use crate::compare::Outcome;
use crate::compare::summary::{Group, OutcomeCounts, SideSummary, Summary};

fn side_line(name: &str, side: &SideSummary) -> String {
    format!(
        "{name:<9} run {}, variant {}, model {} ({} records",
        side.run_id, side.variant_id, side.model, side.records
    ) + &if side.run_local_excluded > 0 {
        format!(
            "; {} run-local records excluded, they never pair)",
            side.run_local_excluded
        )
    } else {
        ")".to_owned()
    }
}

/// Each side on its own, when it holds scored records the known pairs leave out.
fn alone(out: &mut dyn Write, summary: &Summary) -> io::Result<()> {
    let Some(line) = each_side_alone(summary) else {
        return Ok(());
    };
    writeln!(out)?;
    writeln!(out, "{}", EACH_SIDE_ALONE.to_lowercase())?;
    writeln!(out, "  accuracy     {line}")
}

/// Why no item paired, when none did though both sides hold records: the benchmark names
/// of each side when they differ (the usual cause: one side imported without
/// `--benchmark`), else the run-local identities left out, else the question ids.
fn no_pair_hint(summary: &Summary) -> Option<String> {
    let (baseline, variant) = (&summary.baseline, &summary.variant);
    let holds = |side: &SideSummary| side.records + side.run_local_excluded > 0;
    if summary.overall.matched > 0 || !holds(baseline) || !holds(variant) {
        return None;
    }
    let names = |only: fn(&OutcomeCounts) -> u64| -> Vec<&str> {
        summary
            .by_benchmark
            .iter()
            .filter(|g| g.group.matched > 0 || only(&g.group.outcomes) > 0)
            .map(|g| g.benchmark.as_str())
            .collect()
    };
    let on_baseline = names(|c| c.only_baseline);
    let on_variant = names(|c| c.only_variant);
    let shared = on_baseline.iter().any(|b| on_variant.contains(b));
    Some(
        if !on_baseline.is_empty() && !on_variant.is_empty() && !shared {
            format!(
                "hint: no item is on both sides: the baseline names benchmark {}, the variant {}. \
             If they hold the same questions, import both with the same --benchmark NAME.",
                on_baseline.join(", "),
                on_variant.join(", ")
            )
        } else if baseline.run_local_excluded + variant.run_local_excluded > 0 {
            format!(
                "hint: no item is on both sides: {} baseline and {} variant records have run-local \
             ids (positions), which never pair. If the data has ids, name them at import: --id-field \
             (OpenCompass: --ids NAME=FILE); FORMAT.md says where each format keeps them.",
                baseline.run_local_excluded, variant.run_local_excluded
            )
        } else {
            "hint: no item is on both sides: the sides share no (benchmark, language, script, \
         question_id, filter, repeat_id). Check each side's question ids with `babel records`."
                .to_owned()
        },
    )
}

/// Writes the summary as people read it.
pub fn render(summary: &Summary, out: &mut dyn Write) -> io::Result<()> {
    let level = level(summary.confidence_level);
    write_sides(summary, out)?;
    write_outcomes(summary, out)?;
    write_statistics(summary, &level, out)?;
    if let Some(hint) = no_pair_hint(summary) {
        writeln!(out, "{hint}")?;
    }
    alone(out, summary)?;
    if let Some(caveat) = &summary.pooling_caveat {
        writeln!(out)?;
        wrapped(out, "caveat    ", &caveat.message)?;
    }
    write_breakdowns(summary, &level, out)
}

/// The two sides and the item counts.
fn write_sides(summary: &Summary, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", side_line("baseline", &summary.baseline))?;
    // Two runs compare a run with another; one run, a variant with its baseline.
    let other = if summary.variant.run_id == summary.baseline.run_id {
        "variant"
    } else {
        "other"
    };
    writeln!(out, "{}", side_line(other, &summary.variant))?;
    let overall = &summary.overall;
    let counts = &overall.outcomes;
    writeln!(
        out,
        "items     {} ({} matched, {} only baseline, {} only variant)",
        overall.items, overall.matched, counts.only_baseline, counts.only_variant
    )
}

/// The table of outcome counts.
fn write_outcomes(summary: &Summary, out: &mut dyn Write) -> io::Result<()> {
    let counts = &summary.overall.outcomes;
    writeln!(out)?;
    writeln!(out, "outcome            items")?;
    for outcome in Outcome::ALL {
        let note = match outcome {
            Outcome::Unscored => "  (correctness unknown on a side; never counted as wrong)",
            _ => "",
        };
        writeln!(
            out,
            "  {:<16} {:>5}{note}",
            outcome.label(),
            counts.get(outcome)
        )?;
    }
    writeln!(out)
}

/// The paired statistics of the known pairs, or why there are none.
fn write_statistics(summary: &Summary, level: &str, out: &mut dyn Write) -> io::Result<()> {
    let Some(stats) = &summary.overall.statistics else {
        return writeln!(
            out,
            "no matched item has known correctness on both sides: no accuracy, delta or test"
        );
    };
    writeln!(
        out,
        "known pairs {} (matched items with known correctness on both sides)",
        stats.pairs
    )?;
    writeln!(
        out,
        "  accuracy     baseline {} [{}, {}]  variant {} [{}, {}]  ({level} Wilson)",
        percent(stats.baseline_accuracy),
        percent(stats.baseline_ci_low),
        percent(stats.baseline_ci_high),
        percent(stats.variant_accuracy),
        percent(stats.variant_ci_low),
        percent(stats.variant_ci_high),
    )?;
    writeln!(
        out,
        "  delta        {} [{}, {}]  (variant - baseline; {level} Newcombe 1998 method 10)",
        points(stats.delta),
        points(stats.delta_ci_low),
        points(stats.delta_ci_high),
    )?;
    writeln!(
        out,
        "  McNemar      exact two-sided p = {} on {} discordant pairs ({} correct -> wrong, {} wrong -> correct)",
        p_value(stats.mcnemar_exact_p),
        stats.discordant_pairs,
        stats.correct_to_wrong,
        stats.wrong_to_correct
    )?;
    writeln!(
        out,
        "  consistency  {} of known pairs have the same outcome on both sides",
        percent(stats.consistency)
    )
}

/// The tables per benchmark, per language and per filter; a table of one row repeats the
/// headline, so it folds into one line.
fn write_breakdowns(summary: &Summary, level: &str, out: &mut dyn Write) -> io::Result<()> {
    let benchmarks: Vec<(String, &Group)> = summary
        .by_benchmark
        .iter()
        .map(|g| (g.benchmark.clone(), &g.group))
        .collect();
    let languages: Vec<(String, &Group)> = summary
        .by_language
        .iter()
        .map(|g| (g.language.clone().unwrap_or_else(|| "-".into()), &g.group))
        .collect();
    let filters: Vec<(String, &Group)> = summary
        .by_filter
        .iter()
        .map(|g| (g.filter.clone(), &g.group))
        .collect();
    let tables = [
        ("benchmark", benchmarks),
        ("language", languages),
        ("filter", filters),
    ];
    let single: Vec<String> = tables
        .iter()
        .filter(|(_, groups)| groups.len() == 1)
        .map(
            |(title, groups)| match (*title, summary.by_language.first()) {
                ("language", Some(only)) if only.language.is_none() => "no language".to_owned(),
                _ => format!("{title} {}", groups[0].0),
            },
        )
        .collect();
    if !single.is_empty() {
        writeln!(out)?;
        writeln!(out, "every item has {}", single.join(", "))?;
    }
    for (title, groups) in tables.iter().filter(|(_, groups)| groups.len() > 1) {
        writeln!(out)?;
        breakdown(out, title, level, groups)?;
    }
    Ok(())
}

/// Lines of the wrapped caveat, at most this wide unless one word is wider.
const WIDTH: usize = 92;

/// Writes `label` then `text`, wrapped at [`WIDTH`], continuation lines indented under it.
fn wrapped(out: &mut dyn Write, label: &str, text: &str) -> io::Result<()> {
    let indent = " ".repeat(label.len());
    let mut line = label.to_owned();
    for word in text.split_whitespace() {
        let empty = line.len() == indent.len();
        if !empty && line.len() + 1 + word.len() > WIDTH {
            writeln!(out, "{line}")?;
            line.clone_from(&indent);
        } else if !empty {
            line.push(' ');
        }
        line.push_str(word);
    }
    writeln!(out, "{line}")
}

/// One row of a breakdown table, as cells.
fn row_cells(name: &str, group: &Group) -> Vec<String> {
    let counts = &group.outcomes;
    let mut cells = vec![name.to_owned(), group.items.to_string()];
    match &group.statistics {
        Some(s) => cells.extend([
            s.pairs.to_string(),
            percent(s.baseline_accuracy),
            percent(s.variant_accuracy),
            points(s.delta),
            format!("[{}, {}]", points(s.delta_ci_low), points(s.delta_ci_high)),
            s.correct_to_wrong.to_string(),
            s.wrong_to_correct.to_string(),
            p_value(s.mcnemar_exact_p),
            percent(s.consistency),
        ]),
        None => cells.extend([
            "0".to_owned(),
            "-".to_owned(),
            "-".to_owned(),
            "-".to_owned(),
            "-".to_owned(),
            counts.correct_to_wrong.to_string(),
            counts.wrong_to_correct.to_string(),
            "-".to_owned(),
            "-".to_owned(),
        ]),
    }
    cells.extend([
        counts.unscored.to_string(),
        counts.only_baseline.to_string(),
        counts.only_variant.to_string(),
    ]);
    cells
}

fn breakdown(
    out: &mut dyn Write,
    title: &str,
    level: &str,
    groups: &[(String, &Group)],
) -> io::Result<()> {
    let interval = format!("delta {level} CI");
    let header: Vec<String> = [
        title,
        "items",
        "pairs",
        "baseline",
        "variant",
        "delta",
        &interval,
        "c->w",
        "w->c",
        "McNemar p",
        "consistency",
        "unscored",
        "only-b",
        "only-v",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let rows: Vec<Vec<String>> = groups
        .iter()
        .map(|(name, group)| row_cells(name, group))
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|column| {
            rows.iter()
                .chain(std::iter::once(&header))
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::from(" ");
        for (column, cell) in row.iter().enumerate() {
            let pad = widths[column] - cell.chars().count();
            line.push(' ');
            if column == 0 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::ConfidenceLevel;
    use crate::compare::tests::{join, record};

    fn text(confidence: ConfidenceLevel, second_filter: bool) -> String {
        let mut baseline = vec![record("original", "q1", "en", Some(true))];
        let mut variant = vec![record("rephrased", "q1", "en", Some(false))];
        if second_filter {
            for (records, id) in [(&mut baseline, "original"), (&mut variant, "rephrased")] {
                let mut other = record(id, "q1", "en", Some(true));
                other.filter = "strict-match".into();
                records.push(other);
            }
        }
        let comparison = join(baseline, variant).unwrap().comparison;
        let mut out = Vec::new();
        render(&Summary::of(&comparison, confidence), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_text_states_the_confidence_level_the_summary_was_computed_at() {
        // Two filters, so a breakdown table (with its CI column) is printed.
        let summary = text(ConfidenceLevel::new(0.9).unwrap(), true);
        assert!(!summary.contains("95%"), "{summary}");
        for expected in ["(90% Wilson)", "90% Newcombe", "delta 90% CI"] {
            assert!(
                summary.contains(expected),
                "{expected:?} missing:\n{summary}"
            );
        }
    }

    #[test]
    fn the_text_prints_the_per_filter_table_and_a_wrapped_caveat_when_filters_mix() {
        let summary = text(ConfidenceLevel::NINETY_FIVE, true);
        assert!(summary.contains("\n  filter "), "{summary}");
        assert!(summary.contains("\n  strict-match "), "{summary}");
        let caveat: Vec<&str> = summary
            .lines()
            .skip_while(|line| !line.starts_with("caveat    2 items hold 1 question"))
            .take_while(|line| !line.is_empty())
            .collect();
        assert!(caveat.len() > 1, "{summary}");
        assert!(caveat.iter().all(|line| line.len() <= WIDTH), "{caveat:?}");
        assert!(
            caveat[1..]
                .iter()
                .all(|line| line.starts_with("          "))
        );
        assert!(caveat.last().unwrap().ends_with("one filter at a time."));
        assert!(!text(ConfidenceLevel::NINETY_FIVE, false).contains("caveat"));
    }
}
