//! The dependency rule, kept honest: adapters, comparisons and report renderers never touch
//! the filesystem (they take and return values, readers and writers); only `archive` and
//! `durable` write files, and the CLI decides where.

use std::path::Path;

const PURE: [&str; 3] = ["src/adapters", "src/compare", "src/report"];
const FORBIDDEN: [&str; 7] = [
    "std::fs",
    "fs::",
    "File::",
    "OpenOptions",
    "tempfile",
    "read_dir",
    "canonicalize",
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
fn pure_layers_make_no_filesystem_calls() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in PURE {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(!files.is_empty(), "the pure layers exist");
    let mut offences = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if let Some(word) = FORBIDDEN.iter().find(|w| code.contains(*w)) {
                offences.push(format!("{}:{}: {word}", file.display(), number + 1));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "filesystem calls in pure layers:\n{}",
        offences.join("\n")
    );
}
