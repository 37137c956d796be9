//! The crash loop: "≥ 500 `babel import` processes SIGKILLed at random moments; after each,
//! recovery, `validate` passes and the run holds all of that import or none; report the
//! commit steps hit." The suite runs `BABEL_CRASH_KILLS` (default 30) kills; the script
//! runs 500 and more.
//!
//! Each kill is classified by what it left before recovery, which says where in the
//! commit sequence it struck: before the journal, while writing data (journal without the
//! manifest's hash), between the hash and the rename, after the rename (committed, journal
//! not yet cleared), or after the journal was cleared.

use super::{Random, count};
use crate::common::{Env, ImportClock, Kill, canonical_line};
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;

/// Lines per import: long enough that a kill lands inside it most of the time.
const LINES: u32 = 3000;
/// Imports per run before the loop moves to a new run (validation stays quick).
const IMPORTS_PER_RUN: u64 = 20;

fn imports_of(env: &Env, run: &str) -> usize {
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(env.archived(&format!("runs/{run}/manifest.json"))).unwrap(),
    )
    .unwrap();
    manifest["imports"].as_array().unwrap().len()
}

/// Where the kill struck, from what it left (before any recovery).
fn classify(env: &Env, run: &str, imports_before: usize) -> &'static str {
    let journal = std::fs::read(env.archived(".babel/journal.json"))
        .ok()
        .map(|bytes| serde_json::from_slice::<Value>(&bytes).unwrap());
    let grew = imports_of(env, run) > imports_before;
    match (journal, grew) {
        (None, false) => "1 before the journal was written",
        (Some(j), false) if j["commit"]["sha256"].is_null() => "2 journalled, writing data",
        (Some(_), false) => "3 manifest hash journalled, not yet renamed",
        (Some(_), true) => "4 committed, journal not yet cleared",
        (None, true) => "5 complete",
    }
}

#[test]
fn imports_killed_at_random_moments_are_entire_or_absent() {
    let kills = count("BABEL_CRASH_KILLS", 30);
    let mut random = Random::new("crash loop");
    let env = Env::with_archive();

    // Spread the kills over an import's duration.
    let sample: Vec<String> = (0..LINES)
        .map(|q| canonical_line(&format!("q{q}"), "v", Some(true)))
        .collect();
    let sample = sample.join("\n") + "\n";
    let mut clock = ImportClock::measure(sample.as_bytes());

    let mut steps: BTreeMap<&str, u64> = BTreeMap::new();
    let mut signalled = 0;
    for kill in 0..kills {
        let run = format!("r{}", kill / IMPORTS_PER_RUN);
        if kill % IMPORTS_PER_RUN == 0 {
            env.babel(&["run", "create", &run, "--model", "m1", "--benchmark", "b"])
                .assert()
                .success();
        }
        let variant = format!("v{kill}");
        let lines: Vec<String> = (0..LINES)
            .map(|q| canonical_line(&format!("q{q}"), &variant, Some(q % 2 == 0)))
            .collect();
        let input = env.input(&format!("{variant}.jsonl"), lines.join("\n") + "\n");
        let imports_before = imports_of(&env, &run);
        let records_before = env.records(&run).len();

        // Half the kills anywhere in the import, half near its end, where the commit
        // sequence runs (its steps last microseconds).
        let at = if kill % 2 == 0 {
            random.unit() * 1.3
        } else {
            0.8 + random.unit() * 0.35
        };
        let Kill { status, delay } = clock.kill_import(&env, &run, &input, at);
        if status.signal() == Some(9) {
            signalled += 1;
        }
        *steps
            .entry(classify(&env, &run, imports_before))
            .or_default() += 1;

        let recovery = env.babel(&["init"]).output().unwrap();
        assert!(recovery.status.success());
        let validate = env.babel(&["validate", &run, "--json"]).output().unwrap();
        let report: Value = serde_json::from_slice(&validate.stdout).unwrap();
        assert_eq!(
            report["ok"], true,
            "kill {kill} after {delay:?}: {report:#}"
        );
        let records = env.records(&run).len();
        assert!(
            records == records_before || records == records_before + LINES as usize,
            "kill {kill} after {delay:?} ({status}): {records_before} → {records} records, a partial import"
        );
        std::fs::remove_file(env.path().join(&input)).unwrap();
    }
    let whole = env.validate_json();
    assert_eq!(whole["ok"], true, "{whole:#}");
    eprintln!(
        "crash loop: {kills} imports killed ({signalled} by SIGKILL while running), import of {LINES} lines takes {:?}",
        clock.typical()
    );
    for (step, hits) in &steps {
        eprintln!("  {step}: {hits}");
    }
    // Calibrated perfectly, two kills in three land while the import runs (half are
    // aimed past its typical end on purpose); a third is the floor that says the loop
    // did interrupt imports, with room for a machine whose load swings under the tests.
    assert!(
        signalled * 3 >= kills,
        "at least a third of the kills must land while the import runs ({signalled} of {kills} did)"
    );
}
