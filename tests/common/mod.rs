//! Shared test environment: a temporary archive and the real `babel` binary run against it.
//! Each test crate uses what it needs, so unused helpers are expected here.
#![allow(dead_code)]

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// The pinned clock every test run uses, so manifests and snapshots are reproducible.
pub const TIMESTAMP: &str = "2026-12-02T12:00:00Z";

/// A temporary folder holding an archive at `root()` and inputs beside it.
pub struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    /// A new, empty environment (no archive yet).
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("a temporary folder"),
        }
    }

    /// An environment with an initialized archive.
    pub fn with_archive() -> Self {
        let env = Self::new();
        env.babel(&["init"]).assert().success();
        env
    }

    /// An environment with an archive and an open run `r1` of model `m1`.
    pub fn with_run() -> Self {
        let env = Self::with_archive();
        env.babel(&["run", "create", "r1", "--model", "m1", "--benchmark", "b"])
            .assert()
            .success();
        env
    }

    /// The archive root.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("archive")
    }

    /// The environment folder (inputs live here, outside the archive).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A path under the archive root.
    pub fn archived(&self, relative: &str) -> PathBuf {
        self.root().join(relative)
    }

    /// Writes an input file beside the archive and returns its path.
    pub fn input(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.dir.path().join("inputs").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// The babel binary with `--root` set to this archive and the clock pinned.
    pub fn babel(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_babel"));
        command
            .arg("--root")
            .arg(self.root())
            .args(args)
            .env("BABEL_TIMESTAMP", TIMESTAMP)
            .env_remove("BABEL_ROOT")
            .env_remove("BABEL_FAULT");
        command
    }

    /// Runs `babel validate --json` and returns the parsed report.
    pub fn validate_json(&self) -> serde_json::Value {
        let output = self.babel(&["validate", "--json"]).output().unwrap();
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "validate --json printed no JSON ({e}): {}",
                String::from_utf8_lossy(&output.stderr)
            )
        })
    }

    /// The run's records as parsed JSON values (`babel records`).
    pub fn records(&self, run: &str) -> Vec<serde_json::Value> {
        let output = self.babel(&["records", run]).output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// Every file under the archive root (ROOT-relative, sorted), `.babel/` excluded.
    pub fn files(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![self.root()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let entry = entry.unwrap();
                let path = entry.path();
                let relative = path
                    .strip_prefix(self.root())
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                if relative == ".babel" {
                    continue;
                }
                if path.is_dir() {
                    stack.push(path);
                } else {
                    out.push(relative);
                }
            }
        }
        out.sort();
        out
    }
}

/// One canonical record line for question `q`, variant `v`.
pub fn canonical_line(q: &str, v: &str, correct: Option<bool>) -> String {
    serde_json::json!({
        "question_id": q,
        "variant_id": v,
        "language": "en",
        "input": {"question": format!("question {q}?")},
        "target": "a",
        "prediction": if correct == Some(true) { "a" } else { "b" },
        "correct": correct,
    })
    .to_string()
}
