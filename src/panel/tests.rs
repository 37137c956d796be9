//! Every panel statistic against independent implementations: the values that
//! statsmodels (`cochrans_q`, `mcnemar(exact=True)`, `multipletests(method="holm")`,
//! `proportion_confint(method="wilson")`), scikit-learn (`cohen_kappa_score`) and scipy
//! (`kendalltau`, `pointbiserialr`) give on ten generated panels — with unknowns, ties,
//! constant sides, a side with no known item, an empty and an all-constant matched set,
//! tiny and large (20 sides × 2,000 items). `scripts/panel_reference.py` wrote them to
//! `tests/fixtures/panel/reference.json`; every value must agree to 1e-9.

use serde_json::Value;

use super::grid::{Cell, Grid};
use super::summary::{ItemLabels, PanelSummary, SideInfo, summarize};
use crate::compare::stats::ConfidenceLevel;

fn reference() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/panel/reference.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The grid, sides and labels of one reference panel.
fn panel(panel: &Value) -> (Grid, Vec<SideInfo>, ItemLabels) {
    let cells: Vec<&str> = panel["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let items = cells[0].len();
    let mut grid = Grid::new(cells.len(), items);
    for (side, column) in cells.iter().enumerate() {
        for (item, cell) in column.bytes().enumerate() {
            let cell = match cell {
                b'1' => Cell::Correct,
                b'0' => Cell::Wrong,
                _ => Cell::Unknown,
            };
            grid.set(side, item, cell);
        }
    }
    let sides = (0..cells.len())
        .map(|s| SideInfo {
            run_id: format!("s{s}"),
            variant_id: "original".into(),
            model: format!("m{s}"),
            records: items as u64,
            run_local: 0,
        })
        .collect();
    let labels: Vec<(String, String)> = panel["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l[0].as_str().unwrap().to_owned(),
                l[1].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mut benchmarks: Vec<String> = labels.iter().map(|l| l.0.clone()).collect();
    benchmarks.sort();
    benchmarks.dedup();
    let mut languages: Vec<Option<String>> = labels.iter().map(|l| Some(l.1.clone())).collect();
    languages.sort();
    languages.dedup();
    let item_labels = ItemLabels {
        benchmark: labels
            .iter()
            .map(|l| benchmarks.binary_search(&l.0).unwrap() as u32)
            .collect(),
        language: labels
            .iter()
            .map(|l| languages.binary_search(&Some(l.1.clone())).unwrap() as u32)
            .collect(),
        benchmarks,
        languages,
    };
    (grid, sides, item_labels)
}

/// Agreement to 1e-9, absolute or relative (p-values far in the tail are compared
/// relatively); null must be null.
fn close(found: Option<f64>, expected: &Value, what: &str) {
    match (found, expected.as_f64()) {
        (None, None) => {}
        (Some(found), Some(expected)) => {
            let difference = (found - expected).abs();
            assert!(
                difference <= 1e-9 || difference <= 1e-9 * expected.abs(),
                "{what}: {found} but the reference says {expected}"
            );
        }
        (found, _) => panic!("{what}: {found:?} but the reference says {expected}"),
    }
}

#[test]
fn every_statistic_agrees_with_the_independent_implementations() {
    let reference = reference();
    let confidence = ConfidenceLevel::new(0.95).unwrap();
    let mut checked = 0usize;
    for case in reference["panels"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let expected = &case["expected"];
        let (grid, sides, labels) = panel(case);
        let summary = summarize(&grid, &sides, &labels, confidence);
        checked += sides_agree(name, &summary, expected);
        matched_agrees(name, &summary, expected);
        checked += pairs_agree(name, &summary, expected);
        checked += slices_agree(name, &summary, expected);
        checked += items_agree(name, &summary, expected);
    }
    assert!(checked > 9_000, "{checked} values checked");
}

/// Each side's counts, accuracy and Wilson interval; the number of values checked.
fn sides_agree(name: &str, summary: &PanelSummary, expected: &Value) -> usize {
    let mut checked = 0;
    for (i, (found, want)) in summary
        .sides
        .iter()
        .zip(expected["sides"].as_array().unwrap())
        .enumerate()
    {
        let what = format!("{name} side {i}");
        assert_eq!(found.known, want["known"].as_u64().unwrap(), "{what}");
        assert_eq!(found.correct, want["correct"].as_u64().unwrap(), "{what}");
        close(
            found.accuracy,
            &want["accuracy"],
            &format!("{what} accuracy"),
        );
        close(found.ci_low, &want["ci_low"], &format!("{what} Wilson low"));
        close(
            found.ci_high,
            &want["ci_high"],
            &format!("{what} Wilson high"),
        );
        checked += 5;
    }
    checked
}

/// Cochran's Q over the items known on every side.
fn matched_agrees(name: &str, summary: &PanelSummary, expected: &Value) {
    let matched = &expected["matched"];
    assert_eq!(
        summary.matched.items,
        matched["items"].as_u64().unwrap(),
        "{name}"
    );
    assert_eq!(
        summary.matched.df,
        matched["df"].as_u64().unwrap(),
        "{name}"
    );
    close(
        summary.matched.cochran_q,
        &matched["cochran_q"],
        &format!("{name} Cochran's Q"),
    );
    close(
        summary.matched.p_value,
        &matched["p_value"],
        &format!("{name} Cochran's p"),
    );
}

/// Each pair's table, delta, McNemar p, Holm-adjusted p and kappa; the number of values
/// checked.
fn pairs_agree(name: &str, summary: &PanelSummary, expected: &Value) -> usize {
    let mut checked = 0;
    let pairs = expected["pairs"].as_array().unwrap();
    assert_eq!(summary.pairs.len(), pairs.len(), "{name}");
    for (found, want) in summary.pairs.iter().zip(pairs) {
        let what = format!("{name} pair ({}, {})", found.a, found.b);
        assert_eq!(found.a as u64, want["a"].as_u64().unwrap(), "{what}");
        assert_eq!(found.b as u64, want["b"].as_u64().unwrap(), "{what}");
        for (field, value) in [
            ("known_pairs", found.known_pairs),
            ("both_correct", found.both_correct),
            ("both_wrong", found.both_wrong),
            ("a_only_correct", found.a_only_correct),
            ("b_only_correct", found.b_only_correct),
        ] {
            assert_eq!(value, want[field].as_u64().unwrap(), "{what} {field}");
        }
        close(found.delta, &want["delta"], &format!("{what} delta"));
        close(
            found.mcnemar_p,
            &want["mcnemar_p"],
            &format!("{what} McNemar"),
        );
        close(
            found.mcnemar_p_holm,
            &want["mcnemar_p_holm"],
            &format!("{what} Holm"),
        );
        close(found.kappa, &want["kappa"], &format!("{what} kappa"));
        checked += 9;
    }
    checked
}

/// Each benchmark's and language's per-side accuracy and Kendall's tau-b; the number of
/// values checked.
fn slices_agree(name: &str, summary: &PanelSummary, expected: &Value) -> usize {
    let mut checked = 0;
    for (key, slices) in [
        ("by_benchmark", &summary.by_benchmark),
        ("by_language", &summary.by_language),
    ] {
        let wanted = expected[key].as_array().unwrap();
        assert_eq!(slices.len(), wanted.len(), "{name} {key}");
        for (found, want) in slices.iter().zip(wanted) {
            let what = format!("{name} {key} {:?}", found.value);
            assert_eq!(found.value.as_deref(), want["value"].as_str(), "{what}");
            for (side, (f, w)) in found
                .sides
                .iter()
                .zip(want["sides"].as_array().unwrap())
                .enumerate()
            {
                assert_eq!(f.known, w["known"].as_u64().unwrap(), "{what} side {side}");
                assert_eq!(
                    f.correct,
                    w["correct"].as_u64().unwrap(),
                    "{what} side {side}"
                );
                close(
                    f.accuracy,
                    &w["accuracy"],
                    &format!("{what} side {side} accuracy"),
                );
            }
            close(
                found.kendall_tau,
                &want["kendall_tau"],
                &format!("{what} Kendall's tau-b"),
            );
            checked += 1;
        }
    }
    checked
}

/// Each item's counts, point-biserial correlation and flags, and the flag total; the
/// number of values checked.
fn items_agree(name: &str, summary: &PanelSummary, expected: &Value) -> usize {
    let mut checked = 0;
    let items = expected["items"].as_array().unwrap();
    assert_eq!(summary.item_stats.len(), items.len(), "{name}");
    for (i, (found, want)) in summary.item_stats.iter().zip(items).enumerate() {
        let what = format!("{name} item {i}");
        assert_eq!(found.known, want["known"].as_u64().unwrap(), "{what}");
        assert_eq!(found.correct, want["correct"].as_u64().unwrap(), "{what}");
        close(
            found.point_biserial,
            &want["point_biserial"],
            &format!("{what} point-biserial"),
        );
        assert_eq!(
            found.consensus_wrong,
            want["consensus_wrong"].as_bool().unwrap(),
            "{what}"
        );
        assert_eq!(
            found.negative_discrimination,
            want["negative_discrimination"].as_bool().unwrap(),
            "{what}"
        );
        checked += 3;
    }
    assert_eq!(
        summary.flags.consensus_wrong,
        items
            .iter()
            .filter(|i| i["consensus_wrong"] == true)
            .count() as u64
    );
    checked
}

#[test]
fn robustness_counts_items_known_on_every_variant_of_a_run() {
    // Run r with three variants and run q with one: only r has a robustness line.
    let mut grid = Grid::new(4, 5);
    let rows = ["CCWW.", "CWWCC", "CCW.C", "WWWWW"];
    for (side, row) in rows.iter().enumerate() {
        for (item, cell) in row.bytes().enumerate() {
            let cell = match cell {
                b'C' => Cell::Correct,
                b'W' => Cell::Wrong,
                _ => Cell::Unknown,
            };
            grid.set(side, item, cell);
        }
    }
    let side = |run: &str, variant: &str| SideInfo {
        run_id: run.into(),
        variant_id: variant.into(),
        model: "m".into(),
        records: 5,
        run_local: 0,
    };
    let sides = [
        side("r", "original"),
        side("r", "rephrased"),
        side("r", "translated"),
        side("q", "original"),
    ];
    let labels = ItemLabels {
        benchmarks: vec!["b".into()],
        benchmark: vec![0; 5],
        languages: vec![None],
        language: vec![0; 5],
    };
    let summary = summarize(&grid, &sides, &labels, ConfidenceLevel::new(0.95).unwrap());
    assert_eq!(summary.robustness.len(), 1);
    let r = &summary.robustness[0];
    // Items 0, 1, 2 are known on all three variants: C,C,C (all correct), C,W,C (mixed),
    // W,W,W (all wrong); item 3 is unknown on translated, item 4 on original.
    assert_eq!((r.items, r.all_correct, r.all_wrong, r.mixed), (3, 1, 1, 1));
    assert_eq!(r.consistency, Some(2.0 / 3.0));
    assert_eq!(r.variants, ["original", "rephrased", "translated"]);
    assert_eq!(summary.by_language[0].value, None);
}
