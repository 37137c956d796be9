//! The same error has the same exit code from every command, and the codes are listed in
//! one place (`Exit`) and in `babel --help` (issue 21). Each error below is raised through
//! every command that can meet it, and README.md's table is checked against
//! `babel --help`.

use crate::common::{Env, example};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// The exit code of each command line, with its stderr for the failure message.
fn codes(env: &Env, commands: &[&[&str]]) -> Vec<(String, Option<i32>, String)> {
    commands
        .iter()
        .map(|args| {
            let output = env.babel(args).output().unwrap();
            (
                args.join(" "),
                output.status.code(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        })
        .collect()
}

/// Every command of `commands` exits with `code`, and says `message` on stderr.
fn assert_all(env: &Env, code: i32, message: &str, commands: &[&[&str]]) {
    for (command, got, stderr) in codes(env, commands) {
        assert_eq!(got, Some(code), "babel {command}: {stderr}");
        assert!(stderr.contains(message), "babel {command}: {stderr}");
    }
}

/// An archive with the example bank and protocol, a sealed strict run `strict`, an open
/// strict run `open-strict` and a sealed general run `general` with the capitals example.
fn archive() -> Env {
    let env = Env::with_archive();
    env.register_example_benchmark();
    env.strict_run("strict", "demo-org/demo", "demo-1b");
    env.strict_run("open-strict", "demo-org/demo", "demo-7b-step1000");
    env.babel(&["seal", "strict"]).assert().success();
    let capitals = example("canonical/capitals.jsonl");
    for args in [
        &[
            "run",
            "create",
            "general",
            "--model",
            "demo-model",
            "--benchmark",
            "world-capitals",
        ][..],
        &["import", "general", "--format", "canonical", &capitals],
        &["seal", "general"],
    ] {
        env.babel(args).assert().success();
    }
    env
}

#[test]
fn an_unknown_run_is_2_from_every_command() {
    let env = archive();
    let capitals = example("canonical/capitals.jsonl");
    assert_all(
        &env,
        2,
        "no run \"nope\" in this archive",
        &[
            &["show", "nope"],
            &["records", "nope"],
            &["seal", "nope"],
            &["attach", "nope", &capitals],
            &["import", "nope", "--format", "canonical", &capitals],
            &["compare", "nope"],
            &["compare", "general", "--other-run", "nope"],
            &["panel", "nope", "general:original"],
            &["validate", "nope"],
            &["log", "nope"],
            &["export-eee", "nope", "eee"],
            &["export", "--run", "nope", "x.tar.zst"],
            &[
                "matrix",
                "--bank",
                "capitals-bank",
                "--runs",
                "nope",
                "--out",
                "m.csv",
            ],
            &["hub-plan", "--repo", "a/b", "--runs", "nope"],
        ],
    );
}

#[test]
fn an_unknown_artifact_is_2_from_every_command() {
    let env = archive();
    assert_all(
        &env,
        2,
        "\"nope\" is registered",
        &[
            &["artifact", "show", "item-bank", "nope"],
            &[
                "matrix", "--bank", "nope", "--runs", "strict", "--out", "m.csv",
            ],
            &[
                "run",
                "create",
                "s2",
                "--model",
                "m",
                "--item-bank",
                "nope",
                "--protocol",
                "capitals-0shot",
            ],
            &["export", "--release", "nope", "x.tar.zst"],
            &["panel", "--model-panel", "nope", "--variant", "original"],
        ],
    );
}

#[test]
fn not_an_archive_is_2_from_every_command() {
    let env = Env::new();
    let commands: &[&[&str]] = &[
        &["show", "r1"],
        &["list"],
        &["records", "r1"],
        &["validate"],
        &["log"],
        &["seal", "r1"],
        &["compare", "r1"],
        &["artifact", "list"],
        &["matrix", "--bank", "b", "--runs", "r1", "--out", "m.csv"],
        &["export", "--run", "r1", "x.tar.zst"],
        &["export-eee", "r1", "eee"],
        &["import-bundle", "x.tar.zst"],
        &["hub-plan", "--repo", "a/b"],
    ];
    assert_all(&env, 2, "is not a babel archive", commands);
}

#[test]
fn a_run_whose_state_forbids_the_command_is_2() {
    let env = archive();
    let capitals = example("canonical/capitals.jsonl");
    assert_all(
        &env,
        2,
        "run \"general\" is sealed",
        &[
            &["import", "general", "--format", "canonical", &capitals],
            &["attach", "general", &capitals],
            &["seal", "general"],
        ],
    );
    assert_all(
        &env,
        2,
        "run open-strict is open",
        &[&["export", "--run", "open-strict", "x.tar.zst"]],
    );
}

#[test]
fn a_strict_and_a_general_run_are_refused_alike_by_compare_panel_and_matrix() {
    let env = archive();
    assert_all(
        &env,
        2,
        "is a strict benchmark run and run \"general\" is not",
        &[
            &["compare", "strict", "--other-run", "general"],
            &["panel", "strict", "general:original"],
        ],
    );
    assert_all(
        &env,
        2,
        "is not a strict benchmark run",
        &[&[
            "matrix",
            "--bank",
            "capitals-bank",
            "--runs",
            "strict,general",
            "--out",
            "m.csv",
        ]],
    );
}

#[test]
fn an_output_that_exists_is_2_from_every_command() {
    let env = archive();
    for name in ["report.html", "items.csv", "m.csv", "x.tar.zst"] {
        std::fs::write(env.path().join(name), "mine\n").unwrap();
    }
    std::fs::create_dir(env.path().join("demo")).unwrap();
    assert_all(
        &env,
        2,
        "already exists",
        &[
            &["compare", "general", "--items", "report.html"],
            &["panel", "strict", "open-strict", "--items", "items.csv"],
            &[
                "matrix",
                "--bank",
                "capitals-bank",
                "--runs",
                "strict",
                "--out",
                "m.csv",
            ],
            &["export", "--run", "strict", "x.tar.zst"],
            &["demo", "--dir", "demo"],
        ],
    );
}

#[test]
fn a_missing_input_file_is_1_from_every_command() {
    let env = archive();
    env.babel(&["run", "create", "fresh", "--model", "m"])
        .assert()
        .success();
    assert_all(
        &env,
        1,
        "No such file or directory",
        &[
            &["import", "fresh", "--format", "canonical", "absent.jsonl"],
            &["attach", "fresh", "absent.json"],
            &["artifact", "add", "item-bank", "b2", "absent.json"],
            &["verify-bundle", "absent.tar.zst"],
            &["import-bundle", "absent.tar.zst"],
        ],
    );
}

#[test]
fn the_readme_lists_the_exit_codes_of_babel_help() {
    let env = Env::new();
    let help = env.babel(&["--help"]).output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let section = help
        .split("Exit codes:\n")
        .nth(1)
        .expect("babel --help lists the exit codes");
    // Each code starts a line `  N  meaning`; continuation lines are indented further.
    let mut listed: Vec<(String, String)> = Vec::new();
    for line in section.lines().take_while(|line| !line.is_empty()) {
        let words = line.split_whitespace().collect::<Vec<_>>().join(" ");
        match line.as_bytes().get(2) {
            Some(digit) if digit.is_ascii_digit() => {
                let (code, meaning) = words.split_once(' ').unwrap();
                listed.push((code.to_owned(), meaning.to_owned()));
            }
            _ => {
                let last = listed.last_mut().expect("a code before its continuation");
                last.1 = format!("{} {words}", last.1);
            }
        }
    }
    let codes: Vec<&str> = listed.iter().map(|(code, _)| code.as_str()).collect();
    assert_eq!(codes, ["0", "1", "2", "3", "4", "5"]);
    let readme = std::fs::read_to_string(format!("{REPO}/README.md")).unwrap();
    for (code, meaning) in &listed {
        let row = format!("| {code} | {meaning} |");
        assert!(readme.contains(&row), "README.md lacks the row {row}");
    }
}
