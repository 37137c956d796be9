//! The README's session and import examples run as written, from the repository's root,
//! on the bundled examples and fixtures: a reader who copies them gets what they say.

use std::path::Path;

use crate::common::{Env, Tool, tools_or_skip};

/// The shell blocks of the README between two headings.
fn shell_blocks(from: &str, to: &str) -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme
        .find(from)
        .expect("the first heading is in the README");
    let end = readme[start..]
        .find(to)
        .expect("the second heading follows")
        + start;
    readme[start..end]
        .split("```sh\n")
        .skip(1)
        .map(|block| block.split("```").next().unwrap())
        .collect()
}

#[test]
fn the_session_and_import_examples_run_as_written() {
    if !tools_or_skip(&[Tool::probe(
        "jq",
        "setup-readme-tools",
        std::process::Command::new("jq").arg("--version"),
    )]) {
        return;
    }
    let env = Env::new();
    let script = shell_blocks("## A session", "## Commands");
    assert!(script.contains("export BABEL_ROOT=~/evals"), "{script}");
    let archive = env.path().join("evals");
    let script = script.replace(
        "export BABEL_ROOT=~/evals",
        &format!("export BABEL_ROOT='{}'", archive.display()),
    );
    // `babel` on the PATH is the binary under test.
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_babel"), bin.join("babel")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = std::process::Command::new("bash")
        .args(["-e", "-o", "pipefail", "-c", &script])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("PATH", path)
        .env_remove("BABEL_ROOT")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // What the comments say the examples show.
    assert!(stdout.contains("panel: 5 sides"), "{stdout}");
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_babel"))
        .arg("--root")
        .arg(&archive)
        .arg("validate")
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}
