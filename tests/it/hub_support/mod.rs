//! What the Hub tests share: a small archive with runs, an attachment that the Hub stores
//! with LFS and artifact registry files, built by the real babel binary; babel commands
//! pointed at a local test Hub; and file-tree helpers. A test crate using it also declares
//! `mod common;` and `mod hub_server;`.
// Each test crate uses a different part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use assert_cmd::Command;

use crate::common::{Env, canonical_line};
use crate::hub_server::HubServer;

/// A binary attachment (NUL bytes make the Hub store it with LFS).
pub fn binary_bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|n| (n as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Registry files of one item bank and one calibration, as an artifacts command would
/// leave them (babel publishes every file under the five registries).
/// The registered artifacts of [`archive`]: ROOT-relative files under the registries.
pub fn registry_files(env: &Env) -> Vec<String> {
    let mut files = Vec::new();
    for registry in [
        "item-banks",
        "protocols",
        "model-panels",
        "calibrations",
        "releases",
    ] {
        let dir = env.archived(registry);
        for id in std::fs::read_dir(&dir).unwrap() {
            let id = id.unwrap().file_name().into_string().unwrap();
            for file in ["artifact.json", "manifest.json"] {
                files.push(format!("{registry}/{id}/{file}"));
            }
        }
    }
    files.sort();
    files
}

fn sha256_of(path: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(std::fs::read(path).unwrap());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Registers the example bank and protocol, a sealed strict run `s1`, and a calibration
/// `cal-1` whose only input run is `s1`.
fn register_benchmark(env: &Env) {
    env.register_example_benchmark();
    env.strict_run("s1", "demo-org/demo-7b", "demo-7b-step1000");
    env.babel(&["seal", "s1"]).assert().success();
    let pin = |registry: &str, id: &str| serde_json::json!({"id": id, "sha256": sha256_of(&env.archived(&format!("{registry}/{id}/artifact.json")))});
    let calibration = serde_json::json!({
        "format": "babel-calibration",
        "schema_version": 1,
        "description": "difficulties computed elsewhere",
        "item_bank": pin("item-banks", "capitals-bank"),
        "protocol": pin("protocols", "capitals-0shot"),
        "method": {"software": "hand", "model": "Rasch"},
        "input_runs": [{"run_id": "s1", "manifest_sha256": sha256_of(&env.archived("runs/s1/manifest.json"))}],
        "item_parameters": {"cap-fr": {"difficulty": 0.5}},
    });
    let file = env.input("calibration.json", calibration.to_string());
    env.babel(&["artifact", "add", "calibration", "cal-1", &file])
        .assert()
        .success();
}

/// An archive with runs `r1` (two imports, a text and a binary attachment) and `r2`
/// (one import), and a registered bank, protocol and calibration whose input is the
/// sealed strict run `s1`.
pub fn archive() -> Env {
    let env = Env::with_run();
    let lines = |variant: &str| -> String {
        (0..6)
            .map(|q| canonical_line(&format!("q{q}"), variant, Some(q % 2 == 0)))
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    };
    let a = env.input("original.jsonl", lines("original"));
    let b = env.input("rephrased.jsonl", lines("rephrased"));
    env.babel(&["import", "r1", "--format", "canonical", &a, &b])
        .assert()
        .success();
    let results = env.input("results.json", "{\"acc\": 0.5}\n");
    let weights = env.input("weights.bin", binary_bytes(3000, 7));
    env.babel(&["attach", "r1", &results, &weights])
        .assert()
        .success();
    env.babel(&["run", "create", "r2", "--model", "m2", "--benchmark", "b"])
        .assert()
        .success();
    let c = env.input("r2.jsonl", lines("original"));
    env.babel(&["import", "r2", "--format", "canonical", &c])
        .assert()
        .success();
    register_benchmark(&env);
    // A dataset card that already declares its configurations is published as written,
    // so a pulled archive is byte for byte the one pushed.
    std::fs::write(
        env.archived("README.md"),
        format!("---\n{}---\n# test archive\n", babel::hub::card::CONFIGS),
    )
    .unwrap();
    assert_eq!(env.validate_json()["ok"], true);
    env
}

/// A babel command against `server`, with the test token and an isolated `HF_HOME`, and
/// retry waits scaled down to a thousandth.
pub fn hub(env: &Env, server: &HubServer, args: &[&str]) -> Command {
    let mut command = env.babel(args);
    command
        .env("HF_ENDPOINT", server.endpoint())
        .env("HF_TOKEN", server.token())
        .env("HF_HOME", env.path().join("hf-home"))
        .env("BABEL_HUB_TIME_SCALE", "0.001")
        .env_remove("HF_TOKEN_PATH");
    command
}

/// Output as text, for messages.
pub fn text(output: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Pushes the archive with `args` (after `--repo repo`) and returns the printed commit.
pub fn push(env: &Env, server: &HubServer, repo: &str, args: &[&str]) -> String {
    let mut all = vec!["hub-push", "--repo", repo];
    all.extend_from_slice(args);
    let output = hub(env, server, &all).output().unwrap();
    assert!(
        output.status.success(),
        "hub-push failed: {}",
        text(&output)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let commit = stdout.lines().last().unwrap_or("").to_owned();
    assert!(
        commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
        "the last line is not a commit ID: {stdout}"
    );
    commit
}

/// Every file under `root` (relative `/` paths) with its bytes, `.babel/` excluded.
pub fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .replace('\\', "/");
            if relative == ".babel" {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    if root.exists() {
        walk(root, root, &mut out);
    }
    out
}

/// Every entry (files and folders) directly under `dir`, sorted.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(read) => read
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

/// The history head of the archive at `root`, as `babel log` prints it (`SEQ:SHA256`).
pub fn head_of(root: &std::path::Path) -> String {
    let head: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("history/HEAD")).unwrap()).unwrap();
    format!("{}:{}", head["seq"], head["sha256"].as_str().unwrap())
}
