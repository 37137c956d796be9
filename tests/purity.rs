//! The dependency rule, kept honest: adapters, the comparison core and the report
//! renderers never touch the filesystem themselves ("no filesystem calls in src/adapters,
//! src/compare, src/report"); reports reach a file only through `durable`.

use std::path::Path;

const FORBIDDEN: [&str; 7] = [
    "std::fs",
    "fs::",
    "File::",
    "OpenOptions",
    "read_dir",
    "canonicalize",
    "tempfile",
];

#[test]
fn pure_layers_make_no_filesystem_calls() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut offences = Vec::new();
    for layer in ["adapters", "compare", "report"] {
        for entry in std::fs::read_dir(root.join(layer)).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            for (number, line) in text.lines().enumerate() {
                if line.trim_start().starts_with("//") {
                    continue;
                }
                for call in FORBIDDEN {
                    if line.contains(call) {
                        offences.push(format!("{}:{}: {call}", path.display(), number + 1));
                    }
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "filesystem calls in a pure layer:\n{}",
        offences.join("\n")
    );
}
