//! Random mutations: "≥ 1,000 random single mutations of a realistic archive (byte flips
//! in every file kind, truncation, deletion of files and of whole runs, renames, stray
//! files, swapped lines, manifest fields edited to other valid values and
//! re-canonicalized): 100 % detected, each naming the affected path." The suite runs
//! `BABEL_MUTATIONS` (default 150); the script 2,000 and more.
//!
//! The archive is `babel demo`'s (canonical, paired, harness and strict runs, an
//! attachment, an item bank and a protocol) with one run sealed. Each mutation is applied
//! to a fresh copy; `validate --json` must fail with a finding on the path it changed.

use super::{Random, count};
use crate::common::Env;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

type Files = BTreeMap<String, Vec<u8>>;

fn read_tree(root: &Path) -> Files {
    let mut out = Files::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if relative.starts_with(".babel") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

fn write_tree(root: &Path, files: &Files) {
    for (relative, bytes) in files {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// The realistic archive, as files.
fn realistic() -> Files {
    let env = Env::new();
    let demo = env.path().join("demo");
    let output = Command::new(env!("CARGO_BIN_EXE_babel"))
        .args(["demo", "--dir"])
        .arg(&demo)
        .env("BABEL_TIMESTAMP", crate::common::TIMESTAMP)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let root = demo.join("archive");
    let seal = Command::new(env!("CARGO_BIN_EXE_babel"))
        .arg("--root")
        .arg(&root)
        .args(["seal", "capitals-demo"])
        .output()
        .unwrap();
    assert!(seal.status.success());
    read_tree(&root)
}

/// One mutation: what was done, the paths a finding may name, and the changed files
/// (`None`: deleted).
struct Mutation {
    what: String,
    /// A finding must name one of these paths, or (for a folder) a path inside it.
    paths: Vec<String>,
    changes: Vec<(String, Option<Vec<u8>>)>,
}

fn pick<'a>(random: &mut Random, items: &'a [String]) -> &'a String {
    &items[random.below(items.len() as u64) as usize]
}

/// A leaf of a JSON value changed to another value of its type; `None` if it has none.
fn edit_leaf(value: &mut Value, random: &mut Random, path: &mut String) -> bool {
    match value {
        Value::Object(map) if !map.is_empty() => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = pick(random, &keys).clone();
            path.push_str(&format!(".{key}"));
            edit_leaf(map.get_mut(&key).unwrap(), random, path)
        }
        Value::Array(items) if !items.is_empty() => {
            let at = random.below(items.len() as u64) as usize;
            path.push_str(&format!("[{at}]"));
            edit_leaf(&mut items[at], random, path)
        }
        Value::String(s) => {
            *s = if s.is_empty() {
                "x".into()
            } else {
                let mut chars: Vec<char> = s.chars().collect();
                let at = random.below(chars.len() as u64) as usize;
                chars[at] = if chars[at] == 'a' { 'b' } else { 'a' };
                chars.into_iter().collect()
            };
            true
        }
        Value::Number(n) => {
            *value = Value::from(n.as_u64().map_or(1, |n| n + 1 + random.below(3)));
            true
        }
        Value::Bool(b) => {
            *b = !*b;
            true
        }
        _ => false,
    }
}

fn mutate(files: &Files, random: &mut Random) -> Option<Mutation> {
    let names: Vec<String> = files.keys().cloned().collect();
    let file = pick(random, &names).clone();
    let bytes = &files[&file];
    let folder = |path: &str| {
        path.rsplit_once('/')
            .map_or(String::new(), |(d, _)| d.to_owned())
    };
    Some(match random.below(8) {
        0 => {
            let at = random.below(bytes.len() as u64) as usize;
            let mask = 1 + random.below(255) as u8;
            let mut changed = bytes.clone();
            changed[at] ^= mask;
            Mutation {
                what: format!("flip byte {at} of {file} with {mask:#04x}"),
                paths: vec![file.clone()],
                changes: vec![(file, Some(changed))],
            }
        }
        1 => {
            let len = random.below(bytes.len() as u64) as usize;
            Mutation {
                what: format!("truncate {file} to {len} bytes"),
                paths: vec![file.clone()],
                changes: vec![(file, Some(bytes[..len].to_vec()))],
            }
        }
        2 => Mutation {
            what: format!("delete {file}"),
            paths: vec![file.clone()],
            changes: vec![(file, None)],
        },
        3 => {
            let runs: Vec<String> = names
                .iter()
                .filter_map(|n| n.strip_suffix("/manifest.json"))
                .filter(|n| n.starts_with("runs/") || !n.contains("runs"))
                .filter(|n| n.contains('/'))
                .map(str::to_owned)
                .collect();
            let dir = pick(random, &runs).clone();
            Mutation {
                what: format!("delete the folder {dir}"),
                paths: vec![dir.clone()],
                changes: names
                    .iter()
                    .filter(|n| n.starts_with(&format!("{dir}/")))
                    .map(|n| (n.clone(), None))
                    .collect(),
            }
        }
        4 => {
            let renamed = format!("{}/renamed-{}", folder(&file), random.below(1000));
            let renamed = renamed.trim_start_matches('/').to_owned();
            Mutation {
                what: format!("rename {file} to {renamed}"),
                paths: vec![file.clone(), renamed.clone()],
                changes: vec![(file, None), (renamed, Some(bytes.clone()))],
            }
        }
        5 => {
            let dir = folder(&file);
            if dir.is_empty() {
                // ROOT may hold the user's own files (FORMAT.md): not a mutation of data.
                return None;
            }
            let stray = format!("{dir}/stray-{}.json", random.below(1000));
            Mutation {
                what: format!("add {stray}"),
                paths: vec![stray.clone()],
                changes: vec![(stray, Some(b"{}\n".to_vec()))],
            }
        }
        6 => {
            let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
            if lines.len() < 2 {
                return None;
            }
            let a = random.below(lines.len() as u64) as usize;
            let b = random.below(lines.len() as u64) as usize;
            if lines[a] == lines[b] {
                return None;
            }
            let mut swapped = lines.clone();
            swapped.swap(a, b);
            Mutation {
                what: format!("swap lines {} and {} of {file}", a + 1, b + 1),
                paths: vec![file.clone()],
                changes: vec![(file, Some(swapped.concat()))],
            }
        }
        _ => {
            let manifests: Vec<String> = names
                .iter()
                .filter(|n| {
                    n.ends_with(".json") && !n.contains("/raw/") && !n.contains("/attachments/")
                })
                .cloned()
                .collect();
            let manifest = pick(random, &manifests).clone();
            let mut value: Value = serde_json::from_slice(&files[&manifest]).ok()?;
            let mut field = String::new();
            if !edit_leaf(&mut value, random, &mut field) {
                return None;
            }
            let bytes = babel::canonical_json::to_canonical_bytes(&value).ok()?;
            if bytes == files[&manifest] {
                return None;
            }
            Mutation {
                what: format!("edit {manifest} field {field} and re-canonicalize"),
                paths: vec![manifest.clone()],
                changes: vec![(manifest, Some(bytes))],
            }
        }
    })
}

#[test]
fn every_random_single_mutation_is_found_naming_its_path() {
    let wanted = count("BABEL_MUTATIONS", 150);
    let mut random = Random::new("mutations");
    let original = realistic();
    let scratch = tempfile::tempdir().unwrap();
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    let mut done = 0;
    while done < wanted {
        let Some(mutation) = mutate(&original, &mut random) else {
            continue;
        };
        let mut files = original.clone();
        for (path, change) in &mutation.changes {
            match change {
                Some(bytes) => files.insert(path.clone(), bytes.clone()),
                None => files.remove(path),
            };
        }
        let (code, named) = validate_copy(&scratch.path().join(format!("m{done}")), &files);
        let found = mutation.paths.iter().any(|path| {
            named
                .iter()
                .any(|n| n == path || n.starts_with(&format!("{path}/")))
        });
        assert!(
            code == Some(1) && found,
            "mutation {done} not found ({}): exit {code:?}, findings on {named:?}",
            mutation.what,
        );
        let kind = mutation.what.split_whitespace().next().unwrap().to_owned();
        *kinds.entry(kind).or_default() += 1;
        done += 1;
    }
    eprintln!("mutations: {done} of {done} found, each naming its path; by kind: {kinds:?}");
}

/// Validates `files` written at a fresh `root`; returns the exit code and the finding paths.
fn validate_copy(root: &Path, files: &Files) -> (Option<i32>, Vec<String>) {
    write_tree(root, files);
    let output = Command::new(env!("CARGO_BIN_EXE_babel"))
        .arg("--root")
        .arg(root)
        .args(["validate", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    let paths = report["findings"]
        .as_array()
        .map(|f| {
            f.iter()
                .map(|f| f["path"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default();
    std::fs::remove_dir_all(root).unwrap();
    (output.status.code(), paths)
}

#[test]
fn every_byte_of_every_file_flipped_in_turn_is_found() {
    // "every byte of every file of a realistic archive flipped in turn": the suite flips
    // every BABEL_FLIP_STRIDE-th byte (default: about 300 flips over the archive, each
    // file at least once); the script flips every byte (BABEL_FLIP_STRIDE=1).
    let original = realistic();
    let total: usize = original.values().map(Vec::len).sum();
    let stride = count("BABEL_FLIP_STRIDE", (total / 300).max(1) as u64) as usize;
    let scratch = tempfile::tempdir().unwrap();
    let mut flips = 0u64;
    for (path, bytes) in &original {
        for at in (0..bytes.len()).step_by(stride.min(bytes.len().max(1))) {
            let mut files = original.clone();
            files.get_mut(path).unwrap()[at] ^= 0x01;
            let (code, named) = validate_copy(&scratch.path().join(format!("f{flips}")), &files);
            assert!(
                code == Some(1) && named.contains(path),
                "flipping byte {at} of {path} was not found: exit {code:?}, findings on {named:?}"
            );
            flips += 1;
        }
    }
    eprintln!(
        "byte flips: {flips} of {flips} found ({} files, {total} bytes, stride {stride})",
        original.len()
    );
}
