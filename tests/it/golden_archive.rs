//! The streaming import writes what the tree-based import wrote (issue 20): the archive
//! built from the bundled examples and the producers' fixtures by `scripts/golden-archive.sh`
//! has, file for file, the SHA-256 the tree-based build gave it
//! (`tests/fixtures/golden/archive.sha256`, whose first line names that build). Records
//! files, raw copies, manifests and the history log: a faster path may change no stored
//! byte. When the stored format changes on purpose, the file is regenerated with the
//! script and the commit says why.

use std::process::Command;

#[test]
fn the_archive_is_byte_identical_to_what_the_tree_based_import_wrote() {
    let work = tempfile::tempdir().unwrap();
    let output = Command::new("bash")
        .arg("scripts/golden-archive.sh")
        .arg(env!("CARGO_BIN_EXE_babel"))
        .arg(work.path().join("golden"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "golden-archive.sh failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let expected =
        std::fs::read_to_string("tests/fixtures/golden/archive.sha256").expect("the golden file");
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
        "the archive differs from the tree-based build's:\n{}",
        differing.join("\n")
    );
    assert_eq!(
        actual.len(),
        expected.len(),
        "every file of the sequence was hashed"
    );
}
