//! The streaming import writes what the tree-based import wrote (issue 20): the archive
//! built by `scripts/golden-archive.sh` has, file for file, the SHA-256 an earlier build
//! gave it. Part `tree` (the bundled examples, BENCHMARK_WORKFLOW.md's strict runs and
//! artifacts, and the fixtures of every producer the tree-based build read) against the
//! last build with the tree-based import path (`tests/fixtures/golden/archive.sha256`,
//! whose first line names it); part `later` (the lighteval and OpenCompass outputs, whose
//! adapters came after the streaming import) against the first build that imported them
//! (`tests/fixtures/golden/later.sha256`). Records files, raw copies, manifests, the
//! registered artifacts and the history log: a faster path may change no stored byte.
//! When the stored format changes on purpose, the files are regenerated with the script
//! and the commit says why.

use std::process::Command;

/// Runs the script's `part` with today's build and compares its output with `golden`.
fn matches_golden(part: &str, golden: &str) {
    let work = tempfile::tempdir().unwrap();
    let output = Command::new("bash")
        .arg("scripts/golden-archive.sh")
        .arg(env!("CARGO_BIN_EXE_babel"))
        .arg(work.path().join("golden"))
        .arg(part)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "golden-archive.sh {part} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let expected = std::fs::read_to_string(golden).expect("the golden file");
    let expected: Vec<&str> = expected.lines().filter(|l| !l.starts_with('#')).collect();
    let actual = String::from_utf8(output.stdout).unwrap();
    let actual: Vec<&str> = actual.lines().collect();
    let differing: Vec<String> = expected
        .iter()
        .filter(|line| !actual.contains(line))
        .map(|line| format!("expected {line}"))
        .chain(
            actual
                .iter()
                .filter(|line| !expected.contains(line))
                .map(|line| format!("built    {line}")),
        )
        .collect();
    assert!(
        differing.is_empty(),
        "part {part}: the archive differs from the earlier build's:\n{}",
        differing.join("\n")
    );
    assert_eq!(
        actual.len(),
        expected.len(),
        "part {part}: every file of the sequence was hashed"
    );
}

#[test]
fn the_archive_is_byte_identical_to_what_the_tree_based_import_wrote() {
    matches_golden("tree", "tests/fixtures/golden/archive.sha256");
}

#[test]
fn lighteval_and_opencompass_imports_write_what_their_first_build_wrote() {
    matches_golden("later", "tests/fixtures/golden/later.sha256");
}
