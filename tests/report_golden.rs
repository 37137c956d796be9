//! Golden files of the three report formats and the printed summary, for a small
//! comparison that has every outcome category (tests/fixtures/compare/all-outcomes.jsonl).
//! The reviewed outputs live in tests/golden/; a change in any output is a reviewed diff.

mod common;

use common::Env;
use std::path::{Path, PathBuf};

fn golden_env() -> Env {
    let env = Env::with_archive();
    env.babel(&[
        "run",
        "create",
        "g",
        "--model",
        "m",
        "--benchmark",
        "golden",
    ])
    .assert()
    .success();
    env.babel(&["import", "g", "--format", "canonical"])
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compare/all-outcomes.jsonl"),
        )
        .assert()
        .success();
    env
}

fn report(env: &Env, name: &str) -> (String, String) {
    let dest: PathBuf = env.path().join(name);
    let output = env
        .babel(&["compare", "g", "--items"])
        .arg(&dest)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stdout = stdout.replace(&dest.display().to_string(), "REPORT");
    (std::fs::read_to_string(&dest).unwrap(), stdout)
}

fn golden(name: &str, content: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("golden");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(name, content));
}

#[test]
fn csv_report_golden() {
    let env = golden_env();
    let (csv, summary) = report(&env, "items.csv");
    golden("items.csv", &csv);
    golden("summary.txt", &summary);
}

#[test]
fn jsonl_report_golden() {
    let env = golden_env();
    let (jsonl, _) = report(&env, "items.jsonl");
    golden("items.jsonl", &jsonl);
}

#[test]
fn html_report_golden_without_its_static_style_and_script() {
    // The stylesheet and the script are constant; the golden keeps what varies with the
    // data: the summary markup and the embedded items JSON.
    let env = golden_env();
    let (html, _) = report(&env, "items.html");
    let body_start = html.find("<body>").expect("a body");
    let data_end = html[body_start..]
        .find("</script>")
        .map(|i| body_start + i + "</script>".len())
        .expect("the data script");
    golden("items.html", &html[body_start..data_end]);
}

#[test]
fn no_dataset_string_breaks_out_of_the_html_report() {
    // "Every string from a model or a dataset is escaped": the fixture's response
    // `</script><img src=x onerror=alert(1)>` must not appear as markup anywhere.
    let env = golden_env();
    let (html, _) = report(&env, "items.html");
    assert_eq!(
        html.matches("</script").count(),
        2,
        "only the page's own two scripts close"
    );
    assert!(!html.contains("<img"), "no injected element");
    assert!(html.contains("\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e"));
}
