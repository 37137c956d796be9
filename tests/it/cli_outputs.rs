//! What every command prints, text and `--json`, pinned by insta snapshots of real runs on
//! the bundled examples and fixtures: "every command's text and JSON output is pinned by
//! an insta snapshot of a real run" (issue 21). A change in output is a reviewed diff of
//! `tests/it/snapshots/`.
//!
//! Each snapshot is one transcript: the command line, the exit code, stdout and stderr.
//! The clock is pinned (`BABEL_TIMESTAMP`), so times and hashes are the same on every run;
//! only what depends on the machine is redacted: the temporary folder (`[ENV]`), the
//! binary's path (`[BABEL]`), the repository (`[REPO]`), and, against the test Hub, its
//! address and the commit IDs it makes up.

use std::path::Path;

use crate::common::{Env, example};
use crate::hub_server::HubServer;
use crate::hub_support::hub;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// `text` as a regular expression that matches only itself.
fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The insta settings of this module: the machine-dependent parts of `env` redacted.
fn settings(env: &Env) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_snapshot_path("snapshots/cli_outputs");
    let bin = Path::new(env!("CARGO_BIN_EXE_babel"));
    settings.add_filter(&literal(&bin.to_string_lossy()), "[BABEL]");
    if let Ok(canonical) = bin.canonicalize() {
        settings.add_filter(&literal(&canonical.to_string_lossy()), "[BABEL]");
    }
    settings.add_filter(&literal(REPO), "[REPO]");
    for dir in [env.path().to_path_buf(), env.path().canonicalize().unwrap()] {
        settings.add_filter(&literal(&dir.to_string_lossy()), "[ENV]");
    }
    settings
}

/// One run of `command` as a reviewed text: the command line, exit code, stdout, stderr.
fn transcript(args: &[&str], mut command: assert_cmd::Command) -> String {
    let output = command.output().unwrap();
    let mut text = format!(
        "$ babel {}\nexit: {}\n",
        args.join(" "),
        output
            .status
            .code()
            .map_or_else(|| "signal".to_owned(), |c| c.to_string())
    );
    for (name, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        if !bytes.is_empty() {
            text.push_str(&format!("--- {name}\n{}", String::from_utf8_lossy(bytes)));
        }
    }
    text
}

/// Runs `babel args` in `env` and snapshots its transcript as `name`.
fn snapshot(env: &Env, name: &str, args: &[&str]) {
    let text = transcript(args, env.babel(args));
    settings(env).bind(|| insta::assert_snapshot!(name, text));
}

fn harness_fixture(name: &str) -> String {
    format!("{REPO}/tests/fixtures/lm-eval-0.4.13/original/dummy-p/{name}")
}

const HARNESS_SAMPLES: &str = "samples_babel_gen_2026-12-02T12-52-40.515719.jsonl";
const HARNESS_RESULTS: &str = "results_2026-12-02T12-52-40.515719.json";

#[test]
fn runs_imports_records_and_validation() {
    let env = Env::new();
    snapshot(&env, "init", &["init"]);
    snapshot(
        &env,
        "run_create",
        &[
            "run",
            "create",
            "capitals",
            "--model",
            "demo-model",
            "--benchmark",
            "world-capitals",
            "--meta",
            "dataset_revision=demo-1",
        ],
    );
    snapshot(
        &env,
        "import",
        &[
            "import",
            "capitals",
            "--format",
            "canonical",
            &example("canonical/capitals.jsonl"),
        ],
    );
    env.babel(&["run", "create", "harness", "--model", "dummy-p"])
        .assert()
        .success();
    snapshot(
        &env,
        "import_json",
        &[
            "import",
            "harness",
            "--format",
            "harness",
            &harness_fixture(HARNESS_SAMPLES),
            "--attach",
            &harness_fixture(HARNESS_RESULTS),
            "--json",
        ],
    );
    let notes = env.input("notes.txt", "evaluated on a quiet afternoon\n");
    snapshot(&env, "attach", &["attach", "capitals", &notes]);
    snapshot(&env, "show", &["show", "capitals"]);
    snapshot(&env, "show_json", &["show", "capitals", "--json"]);
    snapshot(
        &env,
        "records",
        &["records", "capitals", "--variant", "rephrased"],
    );
    snapshot(&env, "seal", &["seal", "capitals"]);
    snapshot(&env, "list", &["list"]);
    snapshot(&env, "list_json", &["list", "--json"]);
    snapshot(&env, "log", &["log"]);
    snapshot(&env, "log_json", &["log", "capitals", "--json"]);
    snapshot(&env, "validate", &["validate"]);
    snapshot(&env, "validate_json", &["validate", "capitals", "--json"]);
    snapshot(&env, "compare", &["compare", "capitals"]);
    snapshot(
        &env,
        "compare_json",
        &["compare", "capitals", "--items", "capitals.csv", "--json"],
    );
    snapshot(&env, "export_eee", &["export-eee", "capitals", "eee"]);
    snapshot(
        &env,
        "export_eee_json",
        &[
            "export-eee",
            "harness",
            "eee",
            "--developer",
            "dummy",
            "--json",
        ],
    );
}

/// An archive with the example item bank and protocol and three sealed strict runs.
fn benchmark_archive() -> Env {
    let env = Env::with_archive();
    env.register_example_benchmark();
    for (run, model) in [
        ("demo-7b-step1000", "demo-org/demo-7b"),
        ("demo-7b-step2000", "demo-org/demo-7b"),
        ("demo-1b", "demo-org/demo-1b"),
    ] {
        env.strict_run(run, model, run);
        env.babel(&["seal", run]).assert().success();
    }
    env
}

#[test]
fn artifacts_matrix_and_panel() {
    let env = Env::with_archive();
    snapshot(
        &env,
        "artifact_add",
        &[
            "artifact",
            "add",
            "item-bank",
            "capitals-bank",
            &example("benchmark/item-bank.json"),
        ],
    );
    snapshot(
        &env,
        "artifact_add_json",
        &[
            "artifact",
            "add",
            "protocol",
            "capitals-0shot",
            &example("benchmark/protocol.json"),
            "--json",
        ],
    );
    snapshot(
        &env,
        "artifact_show",
        &["artifact", "show", "protocol", "capitals-0shot"],
    );
    snapshot(
        &env,
        "artifact_show_json",
        &["artifact", "show", "protocol", "capitals-0shot", "--json"],
    );
    snapshot(&env, "artifact_list", &["artifact", "list"]);
    snapshot(&env, "artifact_list_json", &["artifact", "list", "--json"]);

    let env = benchmark_archive();
    snapshot(
        &env,
        "matrix",
        &[
            "matrix",
            "--bank",
            "capitals-bank",
            "--runs",
            "demo-7b-step1000,demo-7b-step2000,demo-1b",
            "--out",
            "responses.csv",
        ],
    );
    let sides = ["demo-7b-step1000", "demo-7b-step2000", "demo-1b"];
    let mut panel = vec!["panel"];
    panel.extend(sides);
    snapshot(&env, "panel", &panel);
    panel.extend(["--items", "panel.csv", "--json"]);
    snapshot(&env, "panel_json", &panel);
}

#[test]
fn release_bundles() {
    let env = benchmark_archive();
    snapshot(
        &env,
        "export",
        &["export", "--run", "demo-7b-step1000", "study.tar.zst"],
    );
    snapshot(
        &env,
        "export_json",
        &[
            "export",
            "--run",
            "demo-7b-step1000",
            "--run",
            "demo-1b",
            "pair.tar.zst",
            "--json",
        ],
    );
    snapshot(&env, "verify_bundle", &["verify-bundle", "study.tar.zst"]);
    snapshot(
        &env,
        "verify_bundle_json",
        &["verify-bundle", "study.tar.zst", "--json"],
    );
    let other = Env::with_archive();
    let bundle = env.path().join("study.tar.zst");
    let bundle = bundle.to_str().unwrap();
    let text = transcript(
        &["import-bundle", "[ENV]/study.tar.zst"],
        other.babel(&["import-bundle", bundle]),
    );
    let mut redacted = settings(&other);
    redacted.add_filter(&literal(&env.path().to_string_lossy()), "[ENV]");
    redacted.bind(|| insta::assert_snapshot!("import_bundle", text));
    let pair = env.path().join("pair.tar.zst");
    let text = transcript(
        &["import-bundle", "[ENV]/pair.tar.zst", "--json"],
        other.babel(&["import-bundle", pair.to_str().unwrap(), "--json"]),
    );
    redacted.bind(|| insta::assert_snapshot!("import_bundle_json", text));
}

/// Runs a Hub command against `server` and snapshots it; the server's address and the
/// commit IDs it makes up are redacted.
fn hub_snapshot(env: &Env, server: &HubServer, name: &str, args: &[&str]) {
    let text = transcript(args, hub(env, server, args));
    let mut settings = settings(env);
    settings.add_filter(&literal(server.endpoint()), "[HUB]");
    settings.add_filter(r"\b[0-9a-f]{40}\b", "[COMMIT]");
    settings.bind(|| insta::assert_snapshot!(name, text));
}

#[test]
fn the_hub_plan_push_and_pull() {
    let env = crate::hub_support::archive();
    let server = HubServer::start();
    let repo = "tester/outputs";
    hub_snapshot(&env, &server, "hub_plan", &["hub-plan", "--repo", repo]);
    hub_snapshot(
        &env,
        &server,
        "hub_plan_json",
        &["hub-plan", "--repo", repo, "--runs", "r2", "--json"],
    );
    hub_snapshot(
        &env,
        &server,
        "hub_push",
        &["hub-push", "--repo", repo, "--create", "-m", "first"],
    );
    env.babel(&["seal", "r2"]).assert().success();
    hub_snapshot(
        &env,
        &server,
        "hub_push_json",
        &["hub-push", "--repo", repo, "--json"],
    );
    for (name, dest, json) in [
        ("hub_pull", "pulled", None),
        ("hub_pull_json", "pulled-json", Some("--json")),
    ] {
        let mut args = vec![
            "hub-pull",
            "--repo",
            repo,
            "--revision",
            "main",
            "--dest",
            dest,
        ];
        args.extend(json);
        hub_snapshot(&env, &server, name, &args);
    }
}

#[test]
fn the_demo() {
    let env = Env::new();
    let dir = env.path().join("demo");
    let text = transcript(
        &["demo", "--dir", "[ENV]/demo"],
        env.babel(&["demo", "--dir", dir.to_str().unwrap()]),
    );
    settings(&env).bind(|| insta::assert_snapshot!("demo", text));
}

#[test]
fn the_help_lists_the_commands_and_the_exit_codes() {
    let env = Env::new();
    snapshot(&env, "help", &["--help"]);
}
