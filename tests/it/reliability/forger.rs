//! The forger: an attacker with a short script who edits an archive's data and then makes
//! the archive look consistent again (issue 18). Each scripted forgery below is one an
//! earlier babel let through; each must now be found, "with and without a cited head as
//! the rules say":
//!
//! - an entry appended over an edit (a second seal, an import that registers an edited
//!   file again, an adoption snapshot of the edited manifest, an entry in the older
//!   format that records only hashes): found by the replay alone, and against an anchor;
//! - a deletion appended (a run recorded as absent from this copy): found against an
//!   anchor cited before it; alone it is what a partial copy looks like, and validate
//!   names it in a note;
//! - an edit followed by an ordinary `import`, `attach` or `seal`: the write refuses and
//!   writes nothing, so the edit stays visible;
//! - an edit followed by `export` or `export-eee`: refused, nothing written;
//! - a manifest's record count raised, alone or with the history rewritten to match: the
//!   import refuses it, and sizes nothing from that count.
//!
//! What an anchor cannot prove, and this suite does not pretend it does: a forger who
//! rewrites the whole history (and every copy and citation of it) makes a consistent
//! archive; only a head cited before the rewrite tells (tests/it/history.rs).

use crate::common::{Env, canonical_line, rechain_history, rewrite_records, sha256_hex};
use serde_json::{Value, json};

const R1: &str = "runs/r1/manifest.json";

/// An archive with a sealed run r1 and an open run r2, each with one import, and the head
/// cited once it was so: `(env, cited head)`.
fn archive() -> (Env, String) {
    let env = Env::with_archive();
    for run in ["r1", "r2"] {
        env.babel(&["run", "create", run, "--model", "m", "--benchmark", "b"])
            .assert()
            .success();
        let lines: Vec<String> = (0..4)
            .map(|i| canonical_line(&format!("q{i}"), "original", Some(i % 2 == 0)))
            .collect();
        let input = env.input(&format!("{run}.jsonl"), lines.join("\n") + "\n");
        env.babel(&["import", run, "--format", "canonical", &input])
            .assert()
            .success();
    }
    env.babel(&["seal", "r1"]).assert().success();
    let cited = crate::hub_support::head_of(&env.root());
    (env, cited)
}

/// r1's first record flipped, its records file rewritten and the manifest's hash of it
/// updated: the edit every forgery below starts from.
fn edit_r1(env: &Env) {
    rewrite_records(env, "r1", 0, |rows| {
        rows[0]["correct"] = Value::Bool(!rows[0]["correct"].as_bool().unwrap());
    });
}

/// Appends `entry` (its `seq`, `prev` and `at` filled in) to the history, re-chained.
fn append(env: &Env, mut entry: Value) {
    rechain_history(env, |entries| {
        let last = entries.last().unwrap().clone();
        entry["seq"] = json!(entries.len() + 1);
        entry["at"] = last["at"].clone();
        entry["babel_version"] = last["babel_version"].clone();
        entries.push(entry);
    });
}

fn manifest(env: &Env, path: &str) -> (Value, String) {
    let bytes = std::fs::read(env.archived(path)).unwrap();
    (serde_json::from_slice(&bytes).unwrap(), sha256_hex(&bytes))
}

/// The validation verdict, with and without `--since cited`: (exit code, text).
fn verdicts(env: &Env, cited: &str) -> [(Option<i32>, String); 2] {
    let run = |extra: &[&str]| {
        let output = env
            .babel(&[&["validate"][..], extra].concat())
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    [run(&[]), run(&["--since", cited])]
}

fn assert_found_both_ways(env: &Env, cited: &str, what: &str, needle: &str) {
    for (code, text) in verdicts(env, cited) {
        assert_eq!(code, Some(1), "{what}: not found:\n{text}");
        assert!(text.contains(needle), "{what}: no {needle:?} in:\n{text}");
        assert!(
            !text.contains("no longer holds entry"),
            "{what}: appended, not rewritten: the anchor holds:\n{text}"
        );
    }
}

/// A forgery: the history entry it appends, made from the edited archive.
type Forge = fn(&Env) -> Value;

#[test]
fn an_entry_appended_over_an_edit_is_found_with_and_without_an_anchor() {
    let forgeries: [(&str, Forge); 4] = [
        ("a second seal", |env| {
            let (_, sha) = manifest(env, R1);
            json!({"operation": "seal", "subject": "runs/r1", "manifests": {R1: sha},
                   "changes": [{"change": "seal", "path": R1, "sealed_at": "2026-12-02T12:00:00Z"}]})
        }),
        ("an import that registers the edited file again", |env| {
            let (manifest, sha) = manifest(env, R1);
            let mut import = manifest["imports"][0].clone();
            import["seq"] = json!(2);
            json!({"operation": "import", "subject": "runs/r1", "manifests": {R1: sha},
                   "changes": [{"change": "extend", "path": R1, "imports": [import], "attachments": []}]})
        }),
        ("an adoption snapshot of the edited manifest", |env| {
            let (manifest, sha) = manifest(env, R1);
            json!({"operation": "adopt", "subject": ".", "manifests": {R1: sha},
                   "changes": [{"change": "snapshot", "path": R1, "manifest": manifest}]})
        }),
        ("an entry in the older format, hashes only", |env| {
            let (_, sha) = manifest(env, R1);
            json!({"operation": "seal", "subject": "runs/r1", "manifests": {R1: sha}})
        }),
    ];
    let mut found = 0;
    for (what, forge) in forgeries {
        let (env, cited) = archive();
        edit_r1(&env);
        let entry = forge(&env);
        append(&env, entry);
        assert_found_both_ways(&env, &cited, what, "is not a legal write");
        found += 1;
    }
    eprintln!(
        "forger: {found} of 4 entries appended over an edit found, with and without an anchor"
    );
}

#[test]
fn an_appended_deletion_is_found_against_a_head_cited_before_it() {
    let (env, cited) = archive();
    std::fs::remove_dir_all(env.archived("runs/r1")).unwrap();
    append(
        &env,
        json!({"operation": "hub-pull", "subject": ".",
               "manifests": {"babel-archive.json": manifest(&env, "babel-archive.json").1, R1: null},
               "changes": [{"change": "remove", "path": R1}]}),
    );
    let [(alone, text), (anchored, anchored_text)] = verdicts(&env, &cited);
    // Alone it looks like a copy restored from a publication of some runs: legal, but
    // named.
    assert_eq!(alone, Some(0), "{text}");
    assert!(
        text.contains("runs/r1/manifest.json: note:") && text.contains("absent from this copy"),
        "{text}"
    );
    assert_eq!(anchored, Some(1), "{anchored_text}");
    assert!(
        anchored_text.contains("it existed at the entry"),
        "{anchored_text}"
    );

    // The same deletion recorded in the older format (a null hash, no change) is not a
    // legal write at all.
    let (env, cited) = archive();
    std::fs::remove_dir_all(env.archived("runs/r1")).unwrap();
    append(
        &env,
        json!({"operation": "hub-pull", "subject": ".", "manifests": {R1: null}}),
    );
    assert_found_both_ways(
        &env,
        &cited,
        "a deletion in the older format",
        "is not a legal write",
    );
    eprintln!("forger: 2 of 2 appended deletions found against the cited head");
}

#[test]
fn an_edit_is_never_laundered_by_an_ordinary_write() {
    let writes: [(&str, &[&str]); 3] = [
        (
            "import",
            &["import", "r2", "--format", "canonical", "inputs/more.jsonl"],
        ),
        ("attach", &["attach", "r2", "inputs/notes.txt"]),
        ("seal", &["seal", "r2"]),
    ];
    let mut refused = 0;
    for (what, args) in writes {
        for hashed in [true, false] {
            let (env, _) = archive();
            env.input(
                "more.jsonl",
                canonical_line("q9", "original", Some(true)) + "\n",
            );
            env.input("notes.txt", "notes\n");
            if hashed {
                // The edit with the manifest's hash of the file updated: only the history
                // can tell.
                rewrite_records(&env, "r2", 0, |rows| {
                    rows[0]["correct"] = Value::Bool(!rows[0]["correct"].as_bool().unwrap());
                });
            } else {
                // The file edited alone: its hash in the manifest tells.
                let records = env.archived("runs/r2/records/0001.parquet");
                let mut rows = crate::common::records_file_rows(&records);
                rows[0]["correct"] = Value::Bool(!rows[0]["correct"].as_bool().unwrap());
                crate::common::write_records_file(&records, &rows);
            }
            let before = crate::common::files_under(&env.root());
            let output = env.babel(args).output().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            if !hashed && what == "attach" {
                // An attachment builds on the manifest only; the edit is not laundered,
                // validate still finds it.
                assert!(output.status.success(), "{stderr}");
                assert_eq!(env.validate_json()["ok"], false);
                continue;
            }
            assert_eq!(output.status.code(), Some(1), "{what} ({hashed}): {stderr}");
            assert!(
                stderr.contains("changed outside babel") && stderr.contains("babel validate"),
                "{what} ({hashed}): {stderr}"
            );
            assert_eq!(
                crate::common::files_under(&env.root()),
                before,
                "{what}: nothing was written"
            );
            assert_eq!(
                env.validate_json()["ok"],
                false,
                "{what}: the edit stays visible"
            );
            refused += 1;
        }
    }
    eprintln!("forger: {refused} of 5 writes over an edit refused, nothing written");
}

/// "Every write verifies what it builds on", and "every input is bounded by what the
/// machine has": a manifest claiming 2^40 records once sized the import's identity set
/// (an allocation of 48 TB, and an abort) before the history was consulted. Now the
/// history refuses it first; laundered into a rewritten history, nothing is sized from its
/// count beyond what any import reserves, and the rows of its records file refuse it.
#[test]
fn a_manifest_claiming_more_records_than_it_holds_is_refused_and_sizes_nothing() {
    for laundered in [false, true] {
        let (env, _) = archive();
        let path = env.archived("runs/r2/manifest.json");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("\"count\":4").count(), 1, "{text}");
        std::fs::write(
            &path,
            text.replace("\"count\":4", "\"count\":1099511627776"),
        )
        .unwrap();
        if laundered {
            // The history rewritten to record the edit: only the records file tells.
            crate::common::launder_history(&env);
        }
        let input = env.input(
            "more.jsonl",
            canonical_line("q9", "original", Some(true)) + "\n",
        );
        let before = crate::common::files_under(&env.root());
        let output = env
            .babel(&["import", "r2", "--format", "canonical", &input])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(1),
            "laundered {laundered}: {stderr}"
        );
        let told = if laundered {
            "manifest.json is damaged: import 1 registers 1099511627776 records, but records/0001.parquet (whose SHA-256 is the one registered) holds 4; the history records the manifest as it is, so the history was rewritten with it"
        } else {
            "manifest.json is damaged: it differs from the manifest history entry"
        };
        assert!(
            stderr.contains(told) && stderr.contains("nothing was written"),
            "laundered {laundered}: {stderr}"
        );
        assert_eq!(crate::common::files_under(&env.root()), before);
    }
}

#[test]
fn an_edited_run_is_never_exported() {
    let mut refused = 0;
    for hashed in [true, false] {
        let (env, _) = archive();
        if hashed {
            edit_r1(&env);
        } else {
            let records = env.archived("runs/r1/records/0001.parquet");
            let mut rows = crate::common::records_file_rows(&records);
            rows[0]["correct"] = Value::Bool(!rows[0]["correct"].as_bool().unwrap());
            crate::common::write_records_file(&records, &rows);
        }
        for args in [
            &["export", "--run", "r1", "r1.tar.zst"][..],
            &["export-eee", "r1", "eee-out"][..],
        ] {
            let output = env.babel(args).output().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
            assert!(
                stderr.contains("validate finds") && stderr.contains("records/0001.parquet")
                    || stderr.contains("manifest.json"),
                "{args:?}: {stderr}"
            );
            assert!(!env.path().join("r1.tar.zst").exists());
            assert!(!env.path().join("eee-out").exists());
            refused += 1;
        }
    }
    eprintln!("forger: {refused} of 4 exports of an edited run refused, nothing written");
}
