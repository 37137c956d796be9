//! Golden files of the three report formats and the printed summary, for a small
//! comparison that has every outcome category (tests/fixtures/compare/all-outcomes.jsonl).
//! The reviewed outputs live in tests/it/golden/; a change in any output is a reviewed diff.

use crate::common::Env;
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

/// The page's two data elements, decoded: the index (meta and each column inflated) and
/// every detail chunk inflated, as one pretty JSON document a reviewer can read.
fn decoded_data(html: &str) -> serde_json::Value {
    use base64::Engine;
    use std::io::Read;
    let element = |id: &str| -> serde_json::Value {
        let start = html
            .find(&format!("<script id=\"{id}\" type=\"application/json\">"))
            .expect("the data element");
        let text = &html[start..];
        let text = &text[text.find('>').unwrap() + 1..text.find("</script>").unwrap()];
        serde_json::from_str(text).unwrap()
    };
    let inflate = |base64: &serde_json::Value| -> serde_json::Value {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(base64.as_str().unwrap())
            .unwrap();
        let mut json = String::new();
        flate2::read::DeflateDecoder::new(&bytes[..])
            .read_to_string(&mut json)
            .unwrap();
        serde_json::from_str(&json).unwrap()
    };
    let index = element("babel-index");
    let columns: serde_json::Map<String, serde_json::Value> = index["columns"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, column)| (name.clone(), inflate(column)))
        .collect();
    let chunks: Vec<serde_json::Value> = element("babel-details")
        .as_array()
        .unwrap()
        .iter()
        .map(inflate)
        .collect();
    serde_json::json!({"meta": index["meta"], "columns": columns, "details": chunks})
}

#[test]
fn html_report_golden_without_its_static_style_and_script() {
    // The stylesheet and the script are constant; the golden keeps what varies with the
    // data: the summary markup, and the embedded data decoded.
    let env = golden_env();
    let (html, _) = report(&env, "items.html");
    let body_start = html.find("<body>").expect("a body");
    let data_start = html
        .find("<script id=\"babel-details\"")
        .expect("the data elements");
    golden("items.html", &html[body_start..data_start]);
    golden(
        "items.html.data.json",
        &serde_json::to_string_pretty(&decoded_data(&html)).unwrap(),
    );
}

#[test]
fn no_dataset_string_breaks_out_of_the_html_report() {
    // "Every string from a model or a dataset is escaped": the fixture's response
    // `</script><img src=x onerror=alert(1)>` must not appear as markup anywhere; it is
    // in the compressed details, and reaches the page only through textContent.
    let env = golden_env();
    let (html, _) = report(&env, "items.html");
    assert_eq!(
        html.matches("</script").count(),
        3,
        "only the page's own three scripts close"
    );
    assert!(!html.contains("<img"), "no injected element");
    assert!(
        decoded_data(&html)
            .to_string()
            .contains("</script><img src=x onerror=alert(1)>"),
        "the response is in the data, intact"
    );
}
