//! A full disk: "Every write command interrupted by ENOSPC leaves nothing pending." (issue
//! 13) Each write command runs on a small tmpfs filled so that only 0, 1, 2, ... pages
//! are free, which stops it at a different step each time. Afterwards, with the space
//! given back: no journal and no `.new` file is left, a failed command changed no byte of
//! the archive, and the archive validates.
//!
//! Mounting needs root. Where it is impossible the test prints why and passes, unless
//! `BABEL_REQUIRE_ROOT=1` (set by `reliability/run.sh` as root) makes that a failure.

use crate::common::{Env, canonical_line};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const PAGE: u64 = 4096;
/// Attempts stop once this many in a row completed (more space changes nothing).
const COMPLETED_IN_A_ROW: u32 = 2;

/// Every file under `root` with its bytes.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                stack.push(path);
            } else if relative != ".babel/lock" {
                out.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for (relative, bytes) in tree(from) {
        let target = to.join(relative);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, bytes).unwrap();
    }
    for dir in [
        "runs",
        "item-banks",
        "protocols",
        "model-panels",
        "calibrations",
        "releases",
        ".babel/staging",
    ] {
        std::fs::create_dir_all(to.join(dir)).unwrap();
    }
}

/// Fills the filesystem at `dir`, then frees `pages` pages.
fn fill_leaving(dir: &Path, pages: u64) -> PathBuf {
    use std::io::Write;
    let filler = dir.join("filler");
    let mut file = std::fs::File::create(&filler).unwrap();
    let chunk = vec![0u8; PAGE as usize];
    while file.write_all(&chunk).is_ok() {}
    let _ = file.sync_all();
    let len = std::fs::metadata(&filler).unwrap().len();
    file.set_len(len.saturating_sub(pages * PAGE)).unwrap();
    filler
}

fn babel(root: &Path, args: &[&str], cwd: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_babel"))
        .current_dir(cwd)
        .arg("--root")
        .arg(root)
        .args(args)
        .env("BABEL_TIMESTAMP", crate::common::TIMESTAMP)
        .output()
        .unwrap()
}

/// Runs `args` against a copy of `source` (or a fresh folder, for init) on a disk with
/// 0, 1, 2, ... free pages until it completes; checks what each attempt left. Returns how
/// many failed with ENOSPC and how many succeeded.
fn under_full_disk(
    env: &Env,
    mounted: &crate::common::Tmpfs,
    source: Option<&Path>,
    args: &[&str],
) -> (u32, u32) {
    let (mut failed, mut succeeded) = (0, 0);
    for pages in 0.. {
        assert!(
            pages < 400,
            "{args:?}: still failing with {pages} free pages"
        );
        if succeeded >= COMPLETED_IN_A_ROW {
            break;
        }
        let root = mounted.path.join("archive");
        if root.exists() {
            std::fs::remove_dir_all(&root).unwrap();
        }
        if let Some(source) = source {
            copy_tree(source, &root);
        }
        let before = if root.exists() {
            tree(&root)
        } else {
            BTreeMap::new()
        };
        let filler = fill_leaving(&mounted.path, pages);
        let output = babel(&root, args, env.path());
        std::fs::remove_file(filler).unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let what = format!("{args:?} with {pages} free page(s)");
        match output.status.code() {
            Some(0) => succeeded += 1,
            Some(1) => {
                assert!(stderr.contains("No space left"), "{what}: {stderr}");
                failed += 1;
                let after = if root.exists() {
                    tree(&root)
                } else {
                    BTreeMap::new()
                };
                let changed: Vec<&String> = after
                    .keys()
                    .chain(before.keys())
                    .filter(|k| after.get(*k) != before.get(*k))
                    .collect();
                assert!(
                    changed.is_empty(),
                    "{what}: a failed write changed {changed:?}"
                );
            }
            other => panic!("{what}: exit {other:?}: {stderr}"),
        }
        if root.join("babel-archive.json").exists() {
            let files = tree(&root);
            assert!(
                !files.contains_key(".babel/journal.json"),
                "{what}: a journal is pending"
            );
            let leftovers: Vec<&String> = files.keys().filter(|k| k.ends_with(".new")).collect();
            assert!(leftovers.is_empty(), "{what}: {leftovers:?}");
            let validate = babel(&root, &["validate"], env.path());
            assert!(
                validate.status.success(),
                "{what}: {}",
                String::from_utf8_lossy(&validate.stdout)
            );
        }
    }
    (failed, succeeded)
}

#[test]
fn every_write_command_on_a_full_disk_leaves_nothing_pending() {
    let env = Env::with_run();
    let Some(mounted) = crate::common::tmpfs_or_skip(&env, "4m") else {
        return;
    };
    let lines: Vec<String> = (0..300)
        .map(|q| canonical_line(&format!("question-{q:04}"), "original", Some(q % 3 == 0)))
        .collect();
    let input = env
        .path()
        .join(env.input("a.jsonl", lines.join("\n") + "\n"));
    let attachment = env
        .path()
        .join(env.input("results.json", "x".repeat(20_000)));
    let bank = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/benchmark/item-bank.json");
    let (input, attachment, bank) = (
        input.to_str().unwrap(),
        attachment.to_str().unwrap(),
        bank.to_str().unwrap(),
    );
    let source = env.root();
    let cases: Vec<(Option<&Path>, Vec<&str>)> = vec![
        (None, vec!["init"]),
        (
            Some(&source),
            vec![
                "run",
                "create",
                "r2",
                "--model",
                "m",
                "--benchmark",
                "b",
                "--meta",
                "note=x",
            ],
        ),
        (
            Some(&source),
            vec![
                "import",
                "r1",
                "--format",
                "canonical",
                input,
                "--attach",
                attachment,
            ],
        ),
        (Some(&source), vec!["attach", "r1", attachment]),
        (Some(&source), vec!["seal", "r1"]),
        (
            Some(&source),
            vec!["artifact", "add", "item-bank", "bank", bank],
        ),
    ];
    for (source, args) in cases {
        let (failed, succeeded) = under_full_disk(&env, &mounted, source, &args);
        eprintln!("{args:?}: {failed} attempt(s) stopped by ENOSPC, {succeeded} completed");
        assert!(
            failed > 0,
            "{args:?}: the disk was never full enough to stop it"
        );
        assert!(succeeded > 0, "{args:?}: never enough space to complete");
    }
}

/// "A failed read or copy stops the import first, so its error comes first: the records
/// writer's own (a full disk, say) would be a consequence" (src/archive/import/lines.rs).
/// A disk that fills while the raw copy is written names the copy, and the import leaves
/// nothing behind.
#[test]
fn an_import_that_fills_the_disk_names_the_raw_copy() {
    let env = Env::with_run();
    let Some(mounted) = crate::common::tmpfs_or_skip(&env, "4m") else {
        return;
    };
    let padding = "x".repeat(400);
    let lines: Vec<String> = (0..5_000)
        .map(|q| {
            canonical_line(&format!("question-{q:05}"), "original", Some(true)).replace(
                "\"correct\"",
                &format!("\"extra\": {{\"note\": \"{padding}\"}}, \"correct\""),
            )
        })
        .collect();
    let input = env
        .path()
        .join(env.input("big.jsonl", lines.join("\n") + "\n"));
    let root = mounted.path.join("archive");
    copy_tree(&env.root(), &root);
    let before = tree(&root);
    // Room for a seventh of the 2.6 MB input: the copy, written as the lines are read,
    // fills it. The records writer, stopped then, may fail on the full disk too: the copy
    // is the one named.
    let filler = fill_leaving(&mounted.path, 96);
    let input = input.to_str().unwrap();
    let output = babel(
        &root,
        &["import", "r1", "--format", "canonical", input],
        env.path(),
    );
    std::fs::remove_file(filler).unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("writing ")
            && stderr.contains("/runs/r1/raw/0001-big.jsonl: No space left"),
        "{stderr}"
    );
    assert_eq!(tree(&root), before, "a failed import leaves nothing");
}

/// A report is written around the page cache where the filesystem allows it: a disk that
/// fills while it is written stops the report, names it, and leaves no part of it.
#[test]
fn a_report_that_fills_the_disk_names_the_report_and_leaves_nothing() {
    let env = Env::with_run();
    let Some(mounted) = crate::common::tmpfs_or_skip(&env, "32m") else {
        return;
    };
    let padding = "y".repeat(400);
    let lines: Vec<String> = (0..5_000)
        .map(|q| {
            canonical_line(&format!("question-{q:05}"), "original", Some(q % 2 == 0)).replace(
                "\"correct\"",
                &format!("\"extra\": {{\"note\": \"{padding}\"}}, \"correct\""),
            )
        })
        .collect();
    let input = env.input("big.jsonl", lines.join("\n") + "\n");
    env.babel(&["run", "create", "r2", "--model", "m2", "--benchmark", "b"])
        .assert()
        .success();
    for run in ["r1", "r2"] {
        env.babel(&["import", run, "--format", "canonical", &input])
            .assert()
            .success();
    }
    let out = mounted.path.join("reports");
    std::fs::create_dir_all(&out).unwrap();
    // Room for a few hundred kilobytes of a report of more than 5 MB.
    let filler = fill_leaving(&mounted.path, 64);
    let report = out.join("items.jsonl");
    let write_report = || {
        let report = report.to_str().unwrap();
        let args = ["compare", "r1", "--other-run", "r2", "--items", report];
        babel(&env.root(), &args, env.path())
    };
    let output = write_report();
    std::fs::remove_file(filler).unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("writing ") && stderr.contains("items.jsonl: No space left"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        0,
        "nothing left where the report was to be"
    );
    // With the room back, the same report is written whole.
    let output = write_report();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(std::fs::metadata(&report).unwrap().len() > 5_000_000);
}
