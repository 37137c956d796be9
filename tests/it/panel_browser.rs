//! The panel dashboard in a real browser (Debian's headless Chromium, driven by the pinned
//! playwright-core `.ci/setup-browser` installs, through tests/browser/drive-panel.cjs):
//! opened from file://, searched key by key, filtered by a flag and by a language, an item
//! opened to its question and every side's prediction and response. Each count the page
//! shows is checked against what this test computes from the inputs and from `babel panel
//! --json`; no network request may be made, and a prediction holding `</script><img ...>`
//! stays text. The screenshot is kept in target/browser-artifacts/.

use crate::common::{CHROMIUM, Env, chromium, playwright, playwright_modules, tools_or_skip};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

const HOSTILE: &str = "</script><img src=x onerror=alert(1)>";

/// Side k answers question q right when (q + k) % 4 != 0, except that question q7 is
/// wrong everywhere (a broken key) and side 2 never saw q3; languages alternate en / tr.
fn answer(q: usize, k: usize) -> Option<bool> {
    if q == 3 && k == 2 {
        return None;
    }
    Some(q != 7 && !(q + k).is_multiple_of(4))
}

#[test]
fn the_dashboard_searches_filters_opens_and_stays_offline_in_a_real_browser() {
    if !tools_or_skip(&[chromium(), playwright()]) {
        return;
    }
    let env = Env::with_archive();
    let (sides, questions) = (5, 24);
    for k in 0..sides {
        let run = format!("r{k}");
        env.babel(&[
            "run",
            "create",
            &run,
            "--model",
            &format!("model-{k}"),
            "--benchmark",
            "b",
        ])
        .assert()
        .success();
        let lines: Vec<String> = (0..questions)
            .filter_map(|q| {
                let correct = answer(q, k)?;
                let prediction = if k == 1 && q == 5 { HOSTILE.to_owned() } else { format!("answer {q}-{k}") };
                Some(
                    json!({"question_id": format!("q{q:02}"), "variant_id": "original",
                           "language": if q % 2 == 0 { "en" } else { "tr" },
                           "input": {"question": format!("What is question number {q}?")},
                           "target": "a", "prediction": prediction, "response": format!("I say {q}"),
                           "correct": correct})
                    .to_string(),
                )
            })
            .collect();
        let input = env.input(&format!("{run}.jsonl"), lines.join("\n") + "\n");
        env.babel(&["import", &run, "--format", "canonical", &input])
            .assert()
            .success();
    }
    let summary = crate::common::babel_json(&env, &["panel", "--all", "--variant", "original"]);
    let page = env.path().join("panel.html");
    env.babel(&[
        "panel",
        "--all",
        "--variant",
        "original",
        "--items",
        page.to_str().unwrap(),
    ])
    .assert()
    .success();
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/browser-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let config = env.path().join("drive.json");
    std::fs::write(
        &config,
        json!({"chromium": CHROMIUM, "userDataDir": env.path().join("profile"), "page": page,
               "screenshot": artifacts.join("panel.png"), "query": "number 1",
               "flag": "consensus", "language": "tr", "open": "q05"})
        .to_string(),
    )
    .unwrap();
    let output = Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/drive-panel.cjs"))
        .arg(&config)
        .env("NODE_PATH", playwright_modules())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the driver failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    println!(
        "panel dashboard: first render {} ms, search max {} ms per key",
        seen["first_render_ms"], seen["keystroke_max_ms"]
    );
    assert_eq!(
        seen["requests"],
        json!([]),
        "no network request of any kind"
    );
    assert_eq!(seen["console_errors"], json!([]));
    assert_eq!(
        seen["dialogs"].as_array().map_or(0, Vec::len),
        0,
        "no script ran from the data"
    );
    assert_eq!(seen["initial"]["filtered"], questions);
    // "number 1" matches the questions 1 and 10..19 by their text.
    assert_eq!(seen["searched"]["filtered"], 11);
    // The broken key is the one consensus-wrong item, as --json counts it.
    assert_eq!(summary["flags"]["consensus_wrong"], 1);
    assert_eq!(seen["flag"]["filtered"], 1);
    assert_eq!(seen["flag"]["rows"], json!(["q07"]));
    assert_eq!(seen["language"]["filtered"], questions / 2);
    // The opened item: its question, and every side's prediction, the hostile one as text.
    let detail = &seen["open"]["detail"];
    assert_eq!(detail["question"], "What is question number 5?");
    let sides_seen = detail["sides"].as_array().unwrap();
    assert_eq!(sides_seen.len(), sides);
    for side in sides_seen {
        let k = side["side"].as_u64().unwrap() as usize;
        let expected = if k == 1 {
            HOSTILE.to_owned()
        } else {
            format!("answer 5-{k}")
        };
        assert_eq!(side["prediction"], expected.as_str(), "{side}");
        assert_eq!(side["response"], "I say 5", "{side}");
    }
    assert_eq!(seen["open"]["images"], 0);
    assert_eq!(seen["open"]["added_scripts"], 0);
}
