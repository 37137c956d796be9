//! The README quickstart: `babel demo` builds a valid archive from the bundled examples.

#[test]
fn the_demo_builds_a_valid_archive_and_shows_a_rejection() {
    let env = crate::common::Env::new();
    let dir = env.path().join("demo");
    let output = env
        .babel(&["demo", "--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for expected in [
        "imported 12 records -> runs/capitals-demo/raw/0001-capitals.jsonl",
        "rejected, as it should be: 7 problems",
        "imported 16 records -> runs/paired-demo/raw/0001-capitals-paired.jsonl",
        "imported 36 records (one per document and filter)",
        "a strict run: imported 17 records, each checked against the item bank",
        "other     run demo-7b-step2000, variant original, model demo-org/demo-7b (17 records)",
        "validate: ok (5 run(s), 23 file(s), 98 record(s) checked)",
    ] {
        assert!(stdout.contains(expected), "{expected:?} not in:\n{stdout}");
    }
    let report = std::fs::read_to_string(dir.join("capitals-report.html")).unwrap();
    assert!(
        report.starts_with("<!DOCTYPE html>")
            && report.contains("capitals-demo: original vs rephrased")
            && report.contains("<script id=\"babel-index\""),
        "the HTML report of the demo"
    );
    // The archive it leaves is one the real binary validates on its own.
    let root = dir.join("archive");
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_babel"))
        .args(["--root", root.to_str().unwrap(), "validate"])
        .output()
        .unwrap();
    assert!(check.status.success());
    // Every "Try:" line works as printed: without babel on the PATH, it names this binary.
    let tries: Vec<&str> = stdout
        .lines()
        .skip_while(|line| *line != "Try:")
        .skip(1)
        .filter_map(|line| line.strip_prefix("  "))
        .collect();
    assert_eq!(tries.len(), 4, "{stdout}");
    for line in tries {
        let mut words = line.split_whitespace();
        let program = words.next().unwrap();
        assert_eq!(
            std::fs::canonicalize(program).unwrap(),
            std::fs::canonicalize(env!("CARGO_BIN_EXE_babel")).unwrap(),
            "{line}"
        );
        let tried = std::process::Command::new(program)
            .args(words)
            .current_dir(env.path())
            .output()
            .unwrap();
        assert!(
            tried.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&tried.stderr)
        );
    }
    // A second demo into the same folder is refused rather than mixed in.
    let again = env
        .babel(&["demo", "--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
}
