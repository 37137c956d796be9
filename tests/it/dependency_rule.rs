//! The dependency rule, kept honest: every module of the library uses only the modules
//! its layer may (the map in `src/lib.rs`), and only the modules that read or write files
//! reach the filesystem.

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

/// Every module of the library: the crate modules it may use, and whether it may reach
/// the filesystem (the layer map of `src/lib.rs`). A new module must be added here.
const MODULES: [(&str, &[&str], bool); 18] = [
    ("canonical_json", &["jsonl", "record"], false),
    ("jsonl", &["canonical_json", "record"], false),
    ("record", &["canonical_json", "jsonl"], false),
    ("clock", &[], false),
    ("parallel", &[], false),
    // Reads input files (JSON documents, ZIP logs, Parquet) for import and validate.
    ("inputs", &["canonical_json", "jsonl", "record"], true),
    (
        "adapters",
        &["canonical_json", "inputs", "jsonl", "record"],
        false,
    ),
    ("compare", &["record"], false),
    ("matrix", &[], false),
    ("panel", &["compare"], false),
    // Writes its files only through `durable`.
    (
        "report",
        &[
            "canonical_json",
            "compare",
            "durable",
            "panel",
            "parallel",
            "record",
        ],
        false,
    ),
    ("durable", &[], true),
    (
        "archive",
        &[
            "adapters",
            "canonical_json",
            "clock",
            "compare",
            "durable",
            "inputs",
            "jsonl",
            "matrix",
            "panel",
            "parallel",
            "record",
        ],
        true,
    ),
    (
        "pipeline",
        &["archive", "compare", "panel", "parallel", "report"],
        false,
    ),
    (
        "eee_export",
        &[
            "archive",
            "canonical_json",
            "clock",
            "compare",
            "durable",
            "parallel",
            "record",
            "report",
        ],
        true,
    ),
    (
        "bundle",
        &["archive", "canonical_json", "durable", "jsonl", "record"],
        true,
    ),
    ("hub", &["archive", "durable"], true),
    // Describes what the layers below computed; reads and writes nothing.
    ("outputs", &["archive", "hub"], false),
];

/// The crate modules `src/lib.rs` declares.
fn declared_modules(root: &Path) -> Vec<String> {
    std::fs::read_to_string(root.join("src/lib.rs"))
        .unwrap()
        .lines()
        .filter_map(|line| line.strip_prefix("pub mod "))
        .map(|name| name.trim_end_matches(';').to_owned())
        .collect()
}

#[test]
fn every_module_of_the_library_is_in_the_layer_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut declared = declared_modules(root);
    declared.sort();
    let mut mapped: Vec<String> = MODULES.iter().map(|(m, _, _)| (*m).to_owned()).collect();
    mapped.sort();
    assert_eq!(
        declared, mapped,
        "src/lib.rs and the layer map here must list the same modules"
    );
}

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
fn every_module_uses_only_its_layers_and_only_the_filesystem_where_allowed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut offences = Vec::new();
    for (module, allowed, filesystem) in MODULES {
        let mut files = Vec::new();
        let dir = root.join("src").join(module);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        } else {
            files.push(root.join(format!("src/{module}.rs")));
        }
        for file in files {
            // A module's unit tests read their fixtures as tests do.
            if file.file_name().is_some_and(|name| name == "tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let place = format!("{}:{}", file.display(), number + 1);
                // The report layer reaches a file only through `durable`, which it may use.
                let calls_fs = !filesystem && !code.contains("durable::");
                if calls_fs && let Some(word) = FILESYSTEM.iter().find(|w| code.contains(*w)) {
                    offences.push(format!("{place}: {word}"));
                }
                for used in code.split("crate::").skip(1) {
                    // `use crate::{a, b}` would hide which modules it names from this
                    // check: the rule asks for one path per module.
                    if used.trim_start().starts_with('{') {
                        offences.push(format!("{place}: a grouped use of crate::{{...}}"));
                    }
                    let name: String = used
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() && name != module && !allowed.contains(&name.as_str()) {
                        offences.push(format!("{place}: uses crate::{name}"));
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
