//! The dependency rule, kept honest (ARCHITECTURE: `cli → archive → adapters → jsonl,
//! record`; `compare → record`; `report → compare`; the pure layers never touch the
//! filesystem). Only `archive` and `durable` write files, and the CLI decides where.

use std::path::Path;

/// Calls that reach the filesystem.
const FILESYSTEM: [&str; 7] = [
    "std::fs",
    "fs::",
    "File::",
    "OpenOptions",
    "tempfile",
    "read_dir",
    "canonicalize",
];

/// Each pure layer, and the crate modules it must not use.
const LAYERS: [(&str, &[&str]); 6] = [
    (
        "src/jsonl",
        &[
            "archive", "adapters", "compare", "report", "hub", "matrix", "durable",
        ],
    ),
    (
        "src/record",
        &[
            "archive", "adapters", "compare", "report", "hub", "matrix", "durable",
        ],
    ),
    (
        "src/adapters",
        &["archive", "compare", "report", "hub", "matrix", "durable"],
    ),
    (
        "src/compare",
        &["archive", "adapters", "report", "hub", "matrix", "durable"],
    ),
    ("src/report", &["archive", "adapters", "hub", "matrix"]),
    (
        "src/matrix",
        &["archive", "adapters", "compare", "report", "hub", "durable"],
    ),
];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn pure_layers_make_no_filesystem_calls_and_use_only_the_layers_below() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut offences = Vec::new();
    for (dir, forbidden_modules) in LAYERS {
        let mut files = Vec::new();
        rust_files(&root.join(dir), &mut files);
        assert!(!files.is_empty(), "{dir} exists");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let place = format!("{}:{}", file.display(), number + 1);
                // The report layer reaches a file only through `durable`, which it may use.
                let calls_fs = dir != "src/report" || !code.contains("durable::");
                if calls_fs && let Some(word) = FILESYSTEM.iter().find(|w| code.contains(*w)) {
                    offences.push(format!("{place}: {word}"));
                }
                for module in forbidden_modules {
                    if code.contains(&format!("crate::{module}")) {
                        offences.push(format!("{place}: uses crate::{module}"));
                    }
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "dependency rule broken:\n{}",
        offences.join("\n")
    );
}
