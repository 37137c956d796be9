//! `babel import --format inspect` on real Inspect AI 0.3.285 logs
//! (`tests/fixtures/inspect-ai-0.3.285/`, see its NOTES.md): for every scorer whose
//! values are only `C`, `I` and `N`, babel's accuracy equals the log's own
//! `results.scores[].metrics.accuracy`; unknown scores stay unknown; positional ids never
//! pair; `.eval` and `.json` logs of the same task give the same records; every record's
//! locator resolves in the archived log, and validate finds one that does not.

use crate::common::Env;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const LOGS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/inspect-ai-0.3.285/logs/seed1"
);

/// Every log of the fixture, sorted by name.
fn logs() -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(LOGS)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    logs.sort();
    assert_eq!(logs.len(), 10, "five tasks, each as .eval and .json");
    logs
}

/// The log of `task` (`mc`, `gen`, `noid`, `epochs`) in `extension`; for `mc` the first
/// (the original variant) unless `rephrased`.
fn log(task: &str, extension: &str, rephrased: bool) -> PathBuf {
    let matching: Vec<PathBuf> = logs()
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name.contains(&format!("_babel-{task}_")) && name.ends_with(extension)
        })
        .collect();
    matching[usize::from(rephrased)].clone()
}

/// What the log itself says, read without babel's adapter: its header (`header.json` of
/// a `.eval`, the document of a `.json` with its bare `NaN` tokens made null) and, per
/// score name, the value every sample got (`None` where a sample has none).
fn log_truth(path: &Path) -> (Value, BTreeMap<String, Vec<Option<Value>>>) {
    let (header, samples) = if path.extension().unwrap() == "eval" {
        let mut zip =
            babel::inputs::zip::ZipInput::new(std::fs::File::open(path).unwrap()).unwrap();
        let header: Value =
            serde_json::from_slice(&zip.read("header.json", 1 << 30).unwrap()).unwrap();
        // The light per-sample rows Inspect writes beside the samples.
        let summaries = zip.read("summaries.json", 1 << 30).unwrap();
        let summaries = String::from_utf8(summaries)
            .unwrap()
            .replace(":NaN", ":null");
        let summaries: Vec<Value> = serde_json::from_str(&summaries).unwrap();
        (header, summaries)
    } else {
        let text = std::fs::read_to_string(path)
            .unwrap()
            .replace(": NaN", ": null");
        let document: Value = serde_json::from_str(&text).unwrap();
        let samples = document["samples"].as_array().unwrap().clone();
        (document, samples)
    };
    let mut values: BTreeMap<String, Vec<Option<Value>>> = BTreeMap::new();
    for score in header["results"]["scores"].as_array().unwrap() {
        let name = score["name"].as_str().unwrap();
        let column = samples
            .iter()
            .map(|s| s["scores"].get(name).map(|v| v["value"].clone()))
            .collect();
        values.insert(name.to_owned(), column);
    }
    (header, values)
}

fn import(env: &Env, run: &str, file: &Path, meta: &[&str], extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["run", "create", run, "--model", "mockllm/model"];
    for m in meta {
        args.extend(["--meta", m]);
    }
    env.babel(&args).assert().success();
    env.babel(&["import", run, "--format", "inspect"])
        .arg(file)
        .args(extra)
        .assert()
        .success();
    env.records(run)
}

/// The mean of the known `correct` values, and how many were known.
fn accuracy(records: &[Value]) -> (f64, usize) {
    let known: Vec<bool> = records
        .iter()
        .filter_map(|r| r["correct"].as_bool())
        .collect();
    let right = known.iter().filter(|c| **c).count();
    (right as f64 / known.len() as f64, known.len())
}

#[test]
fn every_c_i_n_scorer_of_every_log_has_the_logs_own_accuracy() {
    // "For every scorer with only C/I/N values, babel's accuracy must equal the log's own
    // results.scores[].metrics.accuracy to 1e-12" (issue 14).
    let env = Env::with_archive();
    let mut checked = 0;
    for (index, path) in logs().iter().enumerate() {
        let (header, values) = log_truth(path);
        for score in header["results"]["scores"].as_array().unwrap() {
            let name = score["name"].as_str().unwrap();
            let only_cin = values[name]
                .iter()
                .all(|v| matches!(v.as_ref().and_then(Value::as_str), Some("C" | "I" | "N")));
            if !only_cin {
                continue;
            }
            let run = format!("r{index}-{name}");
            let metric = format!("correctness_metric={name}");
            let records = import(&env, &run, path, &[&metric], &[]);
            let (babel, known) = accuracy(&records);
            // choice(), match() and includes() report `accuracy`; exact() reports `mean`,
            // the same mean of 1 (C) and 0 (I, N) per sample.
            let metrics = &score["metrics"];
            let theirs = metrics.get("accuracy").unwrap_or(&metrics["mean"])["value"]
                .as_f64()
                .unwrap();
            assert!(
                (babel - theirs).abs() <= 1e-12,
                "{}: scorer {name}: babel {babel}, Inspect {theirs}",
                path.display()
            );
            assert_eq!(
                known,
                records.len(),
                "a C/I/N scorer leaves nothing unknown"
            );
            checked += 1;
        }
    }
    // mc ×4 logs (choice), gen ×2 (match, includes), epochs ×2 (exact); noid's graded
    // scorer has P, NaN and a missing score, so it is not a C/I/N scorer.
    assert_eq!(checked, 10);
}

#[test]
fn unknown_scores_stay_unknown_and_n_counts_as_wrong_with_a_warning() {
    for extension in ["eval", "json"] {
        let env = Env::with_archive();
        let path = log("noid", extension, false);
        let records = import(&env, "noid", &path, &[], &[]);
        let (_, values) = log_truth(&path);
        let graded = &values["graded"];
        assert_eq!(records.len(), graded.len());
        for (record, value) in records.iter().zip(graded) {
            let expected = match value.as_ref().map(|v| v.as_str()) {
                Some(Some("C")) => Some(true),
                Some(Some("I" | "N")) => Some(false),
                // P (partial credit), NaN (read as null) and no score at all.
                _ => None,
            };
            assert_eq!(record["correct"].as_bool(), expected, "{record}");
            if let Some(Some(letter)) = value.as_ref().map(|v| v.as_str()) {
                assert_eq!(record["metrics"]["graded"], letter, "the value is kept");
            }
            if value.as_ref().and_then(|v| v.as_str()) == Some("N") {
                assert!(
                    record["warnings"]
                        .to_string()
                        .contains("gave N (no answer)"),
                    "{record}"
                );
            }
        }
        // The fixture has all five kinds (NOTES.md): C, P, I, N, NaN and {}.
        let unknown = records.iter().filter(|r| r["correct"].is_null()).count();
        assert_eq!(unknown, 3, "P, NaN and the missing score");
    }
}

#[test]
fn positional_ids_are_run_local_and_never_pair_unless_the_user_says_they_are_names() {
    // noid has no ids in its data: Inspect numbered the samples 1..6. epochs has integer
    // ids 1..4 of its own, which nothing in the log tells apart from positions.
    let env = Env::with_archive();
    let eval = import(&env, "a", &log("noid", "eval", false), &[], &[]);
    let json = import(&env, "b", &log("noid", "json", false), &[], &[]);
    for record in eval.iter().chain(&json) {
        assert_eq!(record["identity_scope"], "run-local", "{record}");
        assert!(
            record["warnings"].to_string().contains("--id-field id"),
            "the warning says how to declare them names: {record}"
        );
    }
    let summary = crate::common::babel_json(&env, &["compare", "a", "--other-run", "b"]);
    assert_eq!(summary["matched"], 0, "{summary}");
    assert_eq!(summary["baseline"]["run_local_excluded"], 6);

    let declared = import(
        &env,
        "c",
        &log("epochs", "eval", false),
        &[],
        &["--id-field", "id"],
    );
    assert!(declared.iter().all(|r| r["identity_scope"] == "stable"));
    let ids: Vec<&str> = declared
        .iter()
        .map(|r| r["question_id"].as_str().unwrap())
        .collect();
    let mut distinct = ids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct, ["1", "2", "3", "4"]);
}

#[test]
fn epochs_are_repeats_of_one_question() {
    for extension in ["eval", "json"] {
        let env = Env::with_archive();
        let records = import(
            &env,
            "e",
            &log("epochs", extension, false),
            &[],
            &["--id-field", "id"],
        );
        assert_eq!(records.len(), 8, "4 ids × 2 epochs");
        let mut keys: Vec<(String, u64)> = records
            .iter()
            .map(|r| {
                assert_eq!(
                    r["repeat_id"].as_u64().unwrap() + 1,
                    r["extra"]["epoch"].as_u64().unwrap()
                );
                (
                    r["question_id"].as_str().unwrap().to_owned(),
                    r["repeat_id"].as_u64().unwrap(),
                )
            })
            .collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 8, "(id, epoch) is the key");
    }
}

#[test]
fn several_scorers_and_no_choice_leave_correctness_unknown_naming_them() {
    let env = Env::with_archive();
    let records = import(&env, "g", &log("gen", "eval", false), &[], &[]);
    for record in &records {
        assert!(record["correct"].is_null(), "{record}");
        let warnings = record["warnings"].to_string();
        assert!(
            warnings.contains("match") && warnings.contains("includes"),
            "{warnings}"
        );
        assert!(
            record["metrics"]["match"].is_string() && record["metrics"]["includes"].is_string()
        );
    }
    // A correctness_metric that names no scorer of the log is refused, with the scorers.
    env.babel(&[
        "run",
        "create",
        "x",
        "--model",
        "m",
        "--meta",
        "correctness_metric=acc",
    ])
    .assert()
    .success();
    let output = env
        .babel(&["import", "x", "--format", "inspect"])
        .arg(log("gen", "eval", false))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("\"acc\" is none of this log's scorers (match, includes)"),
        "{stderr}"
    );
}

#[test]
fn eval_and_json_logs_of_one_task_give_the_same_records() {
    // The two formats come from two runs with identical outputs; only uuids, timestamps
    // and the locators differ (NOTES.md).
    let env = Env::with_archive();
    for task in ["mc", "gen", "noid", "epochs"] {
        let eval = import(
            &env,
            &format!("{task}-eval"),
            &log(task, "eval", false),
            &[],
            &[],
        );
        let json = import(
            &env,
            &format!("{task}-json"),
            &log(task, "json", false),
            &[],
            &[],
        );
        let comparable = |records: &[Value]| -> Vec<Value> {
            let mut rows: Vec<Value> = records
                .iter()
                .map(|r| {
                    let mut r = r.clone();
                    let object = r.as_object_mut().unwrap();
                    for key in ["run_id", "source", "question_id", "extra"] {
                        object.remove(key);
                    }
                    let warnings: Vec<Value> = object["warnings"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|w| {
                            !w.as_str()
                                .unwrap()
                                .contains("which Inspect gives a sample without an id")
                        })
                        .cloned()
                        .collect();
                    object.insert("warnings".into(), warnings.into());
                    r
                })
                .collect();
            rows.sort_by_key(|r| r.to_string());
            rows
        };
        assert_eq!(comparable(&eval), comparable(&json), "task {task}");
        let source = &eval[0]["source"];
        assert!(
            source["member"].as_str().unwrap().starts_with("samples/"),
            "{source}"
        );
        assert_eq!(json[0]["source"]["pointer"], "/samples/0");
    }
}

#[test]
fn the_manifest_keeps_the_producer_and_the_item_list_shows_the_question() {
    let env = Env::with_archive();
    import(
        &env,
        "mc",
        &log("mc", "eval", true),
        &[],
        &["--variant", "rephrased"],
    );
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(env.archived("runs/mc/manifest.json")).unwrap(),
    )
    .unwrap();
    let producer = &manifest["imports"][0]["producer"];
    assert_eq!(producer["framework"], "inspect_ai");
    assert_eq!(producer["version"], "0.3.285");
    assert_eq!(producer["model"], "mockllm/model");
    assert_eq!(producer["task"], "babel_mc");
    assert_eq!(producer["task_version"], 1);
    assert_eq!(producer["task_args"]["variant"], "rephrased");
    assert_eq!(producer["dataset"]["name"], "babel_mc_rephrased");
    assert_eq!(producer["revision"]["commit"], "d198661");
    let records = env.records("mc");
    assert!(records.iter().all(|r| r["variant_id"] == "rephrased"));
    assert!(records[0]["input"]["question"].is_string());
    assert_eq!(records[0]["input"]["choices"].as_array().unwrap().len(), 4);
}

#[test]
fn validate_resolves_every_locator_in_the_archived_log() {
    let env = Env::with_archive();
    import(&env, "r", &log("mc", "eval", false), &[], &[]);
    import(&env, "s", &log("mc", "json", false), &[], &[]);
    env.babel(&["validate"]).assert().success();
    crate::common::rewrite_records(&env, "r", 0, |records| {
        records[0]["source"]["member"] = "samples/q999_epoch_1.json".into();
        records[1]["source"] = serde_json::json!({"path": records[1]["source"]["path"], "line": 3});
    });
    crate::common::rewrite_records(&env, "s", 0, |records| {
        records[0]["source"]["pointer"] = "/samples/20".into();
        records[1]["source"]["pointer"] = "/samples/01".into();
    });
    crate::common::launder_history(&env);
    let output = env.babel(&["validate"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8(output.stdout).unwrap();
    for expected in [
        "source member \"samples/q999_epoch_1.json\" is not an item member of",
        ":3 is not the kind of locator",
        "source pointer \"/samples/20\" is not an item of",
        "source pointer \"/samples/01\" is not an item of",
    ] {
        assert!(text.contains(expected), "{expected:?} not in:\n{text}");
    }
}

#[test]
fn a_file_that_is_not_an_inspect_log_is_refused_whole_and_nothing_is_written() {
    let env = Env::with_archive();
    env.babel(&["run", "create", "r", "--model", "m"])
        .assert()
        .success();
    let before = env.files();
    let not_zip = env.input("log.eval", b"{\"not\": \"a zip\"}");
    let jsonl = env.input("log.jsonl", b"{}\n");
    for (file, expected) in [
        (not_zip, "not a ZIP archive"),
        (jsonl, "is not an Inspect log"),
    ] {
        let output = env
            .babel(&["import", "r", "--format", "inspect", &file])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{file}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{stderr}");
    }
    assert_eq!(env.files(), before);
}

#[test]
fn integer_ids_are_run_local_even_beside_named_ones_and_another_reducer_is_said() {
    // Derived from the real noid log: its first sample given a name, as a dataset where
    // only some records have ids would log (Inspect numbers the others by position).
    let env = Env::with_archive();
    let text = std::fs::read_to_string(log("noid", "json", false)).unwrap();
    let mixed = text.replacen("\"id\": 1,", "\"id\": \"named\",", 1);
    assert_ne!(mixed, text, "the fixture's first sample has id 1");
    let path = env.input("2026-12-03T14-55-25-00-00_babel-noid_mixed.json", mixed);
    let records = import(&env, "m", &env.path().join(path), &[], &[]);
    for record in &records {
        let named = record["question_id"] == "named";
        assert_eq!(record["identity_scope"] == "stable", named, "{record}");
    }
    // Derived from the real epochs log: its scores reduced with max instead of mean.
    let text = std::fs::read_to_string(log("epochs", "json", false)).unwrap();
    let max = text.replace("\"reducer\": \"mean\"", "\"reducer\": \"max\"");
    assert_ne!(max, text, "the fixture reduces with mean");
    let path = env.input("2026-12-03T14-55-30-00-00_babel-epochs_max.json", max);
    let records = import(
        &env,
        "e",
        &env.path().join(path),
        &[],
        &["--id-field", "id"],
    );
    assert!(
        records[0]["warnings"]
            .to_string()
            .contains("reduces its 2 epochs with max"),
        "{}",
        records[0]["warnings"]
    );
}

#[test]
fn a_changed_byte_in_an_archived_log_is_found() {
    // The raw log is hashed while its items are counted (a document) or apart (a ZIP).
    for extension in ["json", "eval"] {
        let env = Env::with_archive();
        import(&env, "r", &log("mc", extension, false), &[], &[]);
        let manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(env.archived("runs/r/manifest.json")).unwrap(),
        )
        .unwrap();
        let raw = format!(
            "runs/r/{}",
            manifest["imports"][0]["raw"]["path"].as_str().unwrap()
        );
        let mut bytes = std::fs::read(env.archived(&raw)).unwrap();
        let at = bytes.len() - 3;
        bytes[at] ^= 0x01;
        std::fs::write(env.archived(&raw), bytes).unwrap();
        let output = env.babel(&["validate"]).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{extension}");
        let text = String::from_utf8(output.stdout).unwrap();
        assert!(text.contains(&format!("{raw}: [sha256]")), "{text}");
    }
}

/// A stored (uncompressed) ZIP of `members`, each (name in the central directory, name in
/// its local header, bytes), written by hand so that it can say what no ZIP writer would.
fn handmade_zip(members: &[(String, String, Vec<u8>)]) -> Vec<u8> {
    let stored: Vec<ZipMember> = members
        .iter()
        .map(|(central, local, bytes)| ZipMember {
            central: central.clone(),
            local: local.clone(),
            method: 0,
            data: bytes.clone(),
            crc: crc32(bytes),
            size: bytes.len(),
        })
        .collect();
    zip_of(&stored)
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(bytes);
    crc.sum()
}

/// One member of a ZIP archive written by hand: its names in the central directory and in
/// its local header, its method and (compressed) data, and the CRC-32 and size it records.
#[derive(Clone)]
struct ZipMember {
    central: String,
    local: String,
    method: u16,
    data: Vec<u8>,
    crc: u32,
    size: usize,
}

fn zip_of(members: &[ZipMember]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    let u16le = |v: usize| (v as u16).to_le_bytes();
    let u32le = |v: usize| (v as u32).to_le_bytes();
    for member in members {
        let crc = member.crc.to_le_bytes();
        let offset = out.len();
        // Version 63 reads Zstandard (method 93).
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        out.extend_from_slice(&u16le(63));
        out.extend_from_slice(&u16le(0));
        out.extend_from_slice(&member.method.to_le_bytes());
        out.extend_from_slice(&[0, 0, 0x21, 0]);
        out.extend_from_slice(&crc);
        out.extend_from_slice(&u32le(member.data.len()));
        out.extend_from_slice(&u32le(member.size));
        out.extend_from_slice(&u16le(member.local.len()));
        out.extend_from_slice(&u16le(0));
        out.extend_from_slice(member.local.as_bytes());
        out.extend_from_slice(&member.data);
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&u16le(63));
        central.extend_from_slice(&u16le(63));
        central.extend_from_slice(&u16le(0));
        central.extend_from_slice(&member.method.to_le_bytes());
        central.extend_from_slice(&[0, 0, 0x21, 0]);
        central.extend_from_slice(&crc);
        central.extend_from_slice(&u32le(member.data.len()));
        central.extend_from_slice(&u32le(member.size));
        central.extend_from_slice(&u16le(member.central.len()));
        central.extend_from_slice(&[0; 12]);
        central.extend_from_slice(&u32le(offset));
        central.extend_from_slice(member.central.as_bytes());
    }
    let at = out.len();
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&u16le(members.len()));
    out.extend_from_slice(&u16le(members.len()));
    out.extend_from_slice(&u32le(central.len()));
    out.extend_from_slice(&u32le(at));
    out.extend_from_slice(&u16le(0));
    out
}

#[test]
fn members_of_every_method_are_inflated_and_checked_as_the_zip_crate_checks_them() {
    // babel inflates Zstandard members itself, one context per thread; stored and deflated
    // ones the zip crate inflates. Every member comes out as it went in, and one whose
    // bytes are not what its header records is refused naming it.
    let texts: Vec<Vec<u8>> = (0..5)
        .map(|n| {
            format!(
                "{{\"id\": \"q{n}\", \"text\": \"{}\"}}",
                "abc ".repeat(500 * n + 1)
            )
            .into_bytes()
        })
        .collect();
    let deflated = |bytes: &[u8]| {
        let mut encoder =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut encoder, bytes).unwrap();
        encoder.finish().unwrap()
    };
    let member = |name: &str, method: u16, text: &[u8]| ZipMember {
        central: name.to_owned(),
        local: name.to_owned(),
        method,
        data: match method {
            93 => zstd::bulk::compress(text, 3).unwrap(),
            8 => deflated(text),
            _ => text.to_vec(),
        },
        crc: crc32(text),
        size: text.len(),
    };
    let members = vec![
        member("samples/a.json", 93, &texts[0]),
        member("samples/b.json", 8, &texts[1]),
        member("samples/c.json", 93, &texts[2]),
        member("samples/d.json", 0, &texts[3]),
        member("samples/e.json", 93, &texts[4]),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.eval");
    let open = |members: &[ZipMember]| {
        std::fs::write(&path, zip_of(members)).unwrap();
        babel::inputs::zip::ZipInput::new(std::fs::File::open(&path).unwrap()).unwrap()
    };
    let mut zip = open(&members);
    // The zip crate, reading the same archive, agrees.
    let mut reference = zip::ZipArchive::new(std::fs::File::open(&path).unwrap()).unwrap();
    for (name, text) in ["a", "b", "c", "d", "e"].iter().zip(&texts) {
        let name = format!("samples/{name}.json");
        assert_eq!(&zip.read(&name, 1 << 20).unwrap(), text, "{name}");
        let mut inflated = Vec::new();
        std::io::Read::read_to_end(&mut reference.by_name(&name).unwrap(), &mut inflated).unwrap();
        assert_eq!(&inflated, text, "{name}, by the zip crate");
    }

    let refused = |members: &[ZipMember], limit: u64| {
        open(members)
            .read("samples/c.json", limit)
            .expect_err("refused")
            .to_string()
    };
    let mut damaged = members.clone();
    damaged[2].crc ^= 1;
    let message = refused(&damaged, 1 << 20);
    assert!(
        message.contains("samples/c.json") && message.contains("CRC-32"),
        "{message}"
    );

    let mut short = members.clone();
    short[2].size = texts[2].len() - 1;
    let message = refused(&short, 1 << 20);
    assert!(
        message.contains(&format!(
            "the {} bytes the archive records",
            texts[2].len() - 1
        )),
        "{message}"
    );

    // More compressed bytes than the recorded size can take: refused before inflating.
    let mut padded = members.clone();
    padded[2].data = zstd::bulk::compress(&texts[2].repeat(40), 3).unwrap();
    padded[2].data.extend(std::iter::repeat_n(0, 4096));
    padded[2].size = 10;
    let message = refused(&padded, 1 << 20);
    assert!(
        message.contains("more than the 10 bytes the archive records take"),
        "{message}"
    );

    let message = refused(&members, 100);
    assert!(
        message.contains("more than the 100 a member may hold"),
        "{message}"
    );
}

/// The members of the mc `.eval` log, each inflated, changed by `edit` (given its name and
/// text) and compressed again with Zstandard, as Inspect writes them.
fn mc_members_edited(mut edit: impl FnMut(&str, &mut Vec<u8>)) -> Vec<ZipMember> {
    let original = log("mc", ".eval", false);
    let mut zip =
        babel::inputs::zip::ZipInput::new(std::fs::File::open(&original).unwrap()).unwrap();
    zip.names()
        .unwrap()
        .into_iter()
        .map(|name| {
            let mut text = zip.read(&name, 1 << 30).unwrap();
            edit(&name, &mut text);
            ZipMember {
                central: name.clone(),
                local: name,
                method: 93,
                data: zstd::bulk::compress(&text, 3).unwrap(),
                crc: crc32(&text),
                size: text.len(),
            }
        })
        .collect()
}

#[test]
fn a_damaged_sample_member_stops_the_file_naming_it_wherever_it_is_inflated() {
    // Sample members are inflated on the workers that parse them: a member whose bytes are
    // not what the archive records still refuses the file as the reading thread did,
    // naming the member once, and leaves nothing of the file in the archive. Each sample
    // is padded past a batch's mebibyte, so that every sample is a batch of its own and
    // the reader is still handing out batches when a middle one fails.
    let padding = format!("{{\"padding\": \"{}\", ", "x".repeat(1 << 20));
    let members = mc_members_edited(|name, text| {
        if name.starts_with("samples/") {
            assert_eq!(text.first(), Some(&b'{'), "{name}");
            text.splice(..1, padding.bytes());
        }
    });
    let samples: Vec<usize> = (0..members.len())
        .filter(|&i| members[i].central.starts_with("samples/"))
        .collect();
    assert!(samples.len() >= 20, "{} samples", samples.len());
    let env = Env::with_archive();
    env.babel(&["run", "create", "r", "--model", "mockllm/model"])
        .assert()
        .success();
    let before = env.files();
    for damaged in [
        samples[0],
        samples[samples.len() / 2],
        samples[samples.len() - 1],
    ] {
        let mut bad = members.clone();
        bad[damaged].crc ^= 1;
        let name = format!("damaged-{damaged}.eval");
        let file = env.input(&name, zip_of(&bad));
        let stderr = crate::common::refused_import(&env, "r", "inspect", &[], Path::new(&file));
        let member = &members[damaged].central;
        let told = format!("member {member}: cannot be inflated (its CRC-32 is");
        assert_eq!(stderr.matches(&told).count(), 1, "{stderr}");
        assert_eq!(stderr.matches("CRC-32").count(), 1, "{stderr}");
        assert!(
            stderr.contains("copy it again from where the evaluation wrote it"),
            "{stderr}"
        );
        assert_eq!(env.files(), before, "{name}");
    }
    // Undamaged, the same members make a record of every sample.
    let whole = env.input("whole.eval", zip_of(&members));
    env.babel(&["import", "r", "--format", "inspect", &whole])
        .assert()
        .success();
    assert_eq!(env.records("r").len(), samples.len());
}

#[test]
fn a_sample_member_that_is_not_json_is_refused_at_its_line_and_column() {
    // Inspect writes each sample as one line of JSON, but a member may span lines: the
    // refusal names the member and the line and byte column inside it (the offending `@`
    // opens the third line, after its two spaces of indent).
    let mut broken = None;
    let members = mc_members_edited(|name, text| {
        if broken.is_none() && name.starts_with("samples/") {
            let sample: Value = serde_json::from_slice(text).unwrap();
            let pretty = serde_json::to_string_pretty(&sample).unwrap();
            let mut lines: Vec<&str> = pretty.lines().collect();
            let third = format!("  @{}", &lines[2][2..]);
            lines[2] = &third;
            *text = lines.join("\n").into_bytes();
            broken = Some(name.to_owned());
        }
    });
    let broken = broken.expect("the log has samples");
    let env = Env::with_archive();
    env.babel(&["run", "create", "r", "--model", "mockllm/model"])
        .assert()
        .success();
    let file = env.input("broken.eval", zip_of(&members));
    let stderr = crate::common::refused_import(&env, "r", "inspect", &[], Path::new(&file));
    let told = format!("broken.eval!{broken}:3:3: invalid JSON: key must be a string");
    assert!(stderr.contains(&told), "{told:?} not in {stderr}");
}

#[test]
fn a_zip_log_whose_headers_disagree_is_refused() {
    // "A duplicated ZIP member, a duplicated header.json, or a central-directory name that
    // differs from the local header are refused like duplicate JSON keys." (issue 18)
    let original = log("mc", ".eval", false);
    let mut zip =
        babel::inputs::zip::ZipInput::new(std::fs::File::open(&original).unwrap()).unwrap();
    let members: Vec<(String, String, Vec<u8>)> = zip
        .names()
        .unwrap()
        .into_iter()
        .map(|name| {
            let bytes = zip.read(&name, 1 << 30).unwrap();
            (name.clone(), name, bytes)
        })
        .collect();
    let sample = members
        .iter()
        .position(|(name, _, _)| name.starts_with("samples/"))
        .unwrap();
    let mut header_twice = members.clone();
    let mut other_header: Value =
        serde_json::from_slice(&members.iter().find(|m| m.0 == "header.json").unwrap().2).unwrap();
    other_header["eval"]["task"] = "another_task".into();
    header_twice.push((
        "header.json".into(),
        "header.json".into(),
        serde_json::to_vec(&other_header).unwrap(),
    ));
    let mut sample_twice = members.clone();
    sample_twice.push(members[sample].clone());
    let mut renamed = members.clone();
    renamed[sample].1 = renamed[sample].1.replace("samples/", "samplez/");
    let env = Env::with_archive();
    env.babel(&["run", "create", "r", "--model", "mockllm/model"])
        .assert()
        .success();
    let name = original.file_name().unwrap().to_str().unwrap().to_owned();
    let cases = [
        ("as written, stored", members, None),
        (
            "header.json twice",
            header_twice,
            Some("duplicate file names"),
        ),
        ("a sample twice", sample_twice, Some("duplicate file names")),
        (
            "a local name that is not the central one",
            renamed,
            Some("header"),
        ),
    ];
    for (what, members, refused) in cases {
        let file = env.path().join(what.replace(' ', "-")).join(&name);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, handmade_zip(&members)).unwrap();
        let before = crate::common::files_under(&env.root());
        let output = env
            .babel(&["import", "r", "--format", "inspect", "--benchmark", "mc"])
            .arg(&file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        match refused {
            None => {
                assert!(output.status.success(), "{what}: {stderr}");
                env.babel(&["run", "create", "r2", "--model", "mockllm/model"])
                    .assert()
                    .success();
            }
            Some(needle) => {
                assert_eq!(output.status.code(), Some(1), "{what}: {stderr}");
                assert!(
                    stderr.contains(needle) && stderr.contains("every member must be named once"),
                    "{what}: {stderr}"
                );
                assert_eq!(
                    crate::common::files_under(&env.root()),
                    before,
                    "{what}: nothing written"
                );
            }
        }
    }
}

#[test]
fn a_log_of_another_model_is_refused_naming_both() {
    let env = Env::with_archive();
    env.babel(&["run", "create", "r", "--model", "gpt-x"])
        .assert()
        .success();
    let output = env
        .babel(&["import", "r", "--format", "inspect"])
        .arg(log("mc", ".eval", false))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "eval.model: the log's model is \"mockllm/model\", but run r is of model \"gpt-x\""
        ),
        "{stderr}"
    );
    assert!(stderr.contains("--allow-other-model"), "{stderr}");
}

/// The mc `.json` log with its samples repeated to `count`, each under its own id,
/// numbered down so that file order is not id order; the sample at `broken` gets an id
/// that is neither a string nor an integer.
fn many_samples(count: usize, broken: Option<usize>) -> Vec<u8> {
    let text = std::fs::read_to_string(log("mc", "json", false))
        .unwrap()
        .replace(": NaN", ": null");
    let mut document: Value = serde_json::from_str(&text).unwrap();
    let samples = document["samples"].as_array().unwrap().clone();
    let many: Vec<Value> = (0..count)
        .map(|n| {
            let mut sample = samples[n % samples.len()].clone();
            sample["id"] = match broken == Some(n) {
                true => Value::Bool(true),
                false => format!("q{:04}", count - n).into(),
            };
            sample
        })
        .collect();
    document["samples"] = many.into();
    serde_json::to_vec_pretty(&document).unwrap()
}

#[test]
fn a_log_of_many_samples_is_normalized_in_batches_and_kept_in_file_order() {
    // Items are parsed and normalized on worker threads, 64 to a batch: 300 samples are
    // five batches, and the records must still come out as the file lists them.
    let env = Env::with_archive();
    let file = env.input("many.json", many_samples(300, None));
    let records = import(&env, "r", Path::new(&file), &[], &[]);
    let seen: Vec<(String, String)> = records
        .iter()
        .map(|r| {
            let id = r["question_id"].as_str().unwrap();
            let pointer = r["source"]["pointer"].as_str().unwrap();
            (
                id.rsplit(':').next().unwrap().to_owned(),
                pointer.to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = (0..300)
        .map(|n| (format!("q{:04}", 300 - n), format!("/samples/{n}")))
        .collect();
    assert_eq!(seen, expected);
    env.babel(&["validate"]).assert().success();

    // A bad sample in the fourth batch: the import is refused naming it, nothing is kept.
    env.babel(&["run", "create", "s", "--model", "mockllm/model"])
        .assert()
        .success();
    let before = env.files();
    let file = env.input("broken.json", many_samples(300, Some(250)));
    let output = env
        .babel(&["import", "s", "--format", "inspect", &file])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/samples/250"), "{stderr}");
    assert_eq!(
        stderr.matches("/samples/").count(),
        1,
        "one problem: {stderr}"
    );
    assert_eq!(env.files(), before);
}

/// What an import told its progress bar, in order.
#[derive(Default)]
struct Recorded(std::cell::RefCell<Vec<(&'static str, u64)>>);

impl babel::archive::import::Progress for Recorded {
    fn begin_file(&self, _name: &str, bytes: u64) {
        self.0.borrow_mut().push(("begin", bytes));
    }

    fn advance(&self, bytes: u64) {
        self.0.borrow_mut().push(("advance", bytes));
    }

    fn end_file(&self) {
        self.0.borrow_mut().push(("end", 0));
    }
}

#[test]
fn the_progress_of_a_log_counts_its_copy_and_then_its_items_as_they_are_read() {
    // A structured input is read twice, copied whole and then item by item: its bar is
    // twice the file long, the copy fills half of it, the items the rest while they are
    // read (a mebibyte at a time), and it ends full.
    let env = Env::with_archive();
    env.babel(&["run", "create", "r", "--model", "mockllm/model"])
        .assert()
        .success();
    let file = env
        .path()
        .join(env.input("many.json", many_samples(2000, None)));
    let size = std::fs::metadata(&file).unwrap().len();
    assert!(size > 4 << 20, "a log of several mebibytes: {size} bytes");
    let archive = babel::archive::Archive::open(&env.root()).unwrap();
    let session = archive.write_session("import", None, &mut |_| {}).unwrap();
    let recorded = Recorded::default();
    let run = babel::archive::layout::RunId::parse("r").unwrap();
    let options = babel::archive::import::ImportOptions::new(babel::adapters::Format::INSPECT);
    babel::archive::import::import(&session, &run, &[file], &options, &recorded).unwrap();

    let events = recorded.0.into_inner();
    assert_eq!(events.first(), Some(&("begin", 2 * size)));
    assert_eq!(events.last(), Some(&("end", 0)));
    let advances: Vec<u64> = events
        .iter()
        .filter(|(what, _)| *what == "advance")
        .map(|(_, bytes)| *bytes)
        .collect();
    assert_eq!(advances.iter().sum::<u64>(), 2 * size, "{events:?}");
    // Where the copy ends, the items begin: several steps after it, not one at the end.
    let mut counted = 0;
    let copy_steps = advances
        .iter()
        .take_while(|bytes| {
            counted += **bytes;
            counted <= size
        })
        .count();
    assert_eq!(
        advances[..copy_steps].iter().sum::<u64>(),
        size,
        "{events:?}"
    );
    assert!(advances.len() - copy_steps >= 3, "{events:?}");
}

#[test]
fn members_no_record_holds_are_still_read_by_every_rule() {
    // The adapter builds only the members it reads; a sample's `events` (most of a log's
    // bytes) are checked as they are read, never built, and are held to the same rules.
    let text = String::from_utf8(many_samples(3, None)).unwrap();
    let mut document: Value = serde_json::from_str(&text).unwrap();
    for (n, sample) in document["samples"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        sample["events"] = serde_json::json!([{"event": "marker", "value": n}]);
        sample["dataset_key"] = format!("k{n}").into();
    }
    let text = serde_json::to_string_pretty(&document).unwrap();
    let env = Env::with_archive();

    // A non-finite number in the events: read as null, and the record says so.
    let nan = env.input(
        "nan.json",
        text.replacen("\"value\": 1", "\"value\": NaN", 1),
    );
    let records = import(&env, "r", Path::new(&nan), &[], &[]);
    let warned: Vec<bool> = records
        .iter()
        .map(|r| {
            r["warnings"]
                .to_string()
                .contains("NaN at events[0].value was read as null")
        })
        .collect();
    assert_eq!(warned, [false, true, false], "{records:?}");

    // A member the adapter does not read can still name the question.
    let keyed = env.input("keyed.json", text.clone());
    let records = import(
        &env,
        "k",
        Path::new(&keyed),
        &[],
        &["--id-field", "dataset_key"],
    );
    let ids: Vec<&str> = records
        .iter()
        .map(|r| r["question_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["k0", "k1", "k2"]);

    // A duplicate key deep in the events: the sample is refused, naming where.
    env.babel(&["run", "create", "d", "--model", "mockllm/model"])
        .assert()
        .success();
    let before = env.files();
    let duplicate = env.input(
        "duplicate.json",
        text.replacen(
            "\"event\": \"marker\"",
            "\"event\": \"marker\", \"event\": 2",
            2,
        ),
    );
    let output = env
        .babel(&["import", "d", "--format", "inspect", &duplicate])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("/samples/0") && stderr.contains("events[0].event"),
        "{stderr}"
    );
    assert!(stderr.contains("duplicate key"), "{stderr}");
    assert_eq!(env.files(), before);
}

#[test]
fn a_sample_longer_than_the_item_limit_refuses_the_json_log_naming_its_byte() {
    // Items are read where the copy's scan found them, which only the read can measure:
    // the real noid log with its first sample made 64 MiB long is refused whole, at that
    // sample's first byte, and nothing is written.
    const LIMIT: usize = 64 << 20;
    let env = Env::with_archive();
    env.babel(&["run", "create", "r", "--model", "mockllm/model"])
        .assert()
        .success();
    // The log holds NaN, which serde_json does not read: the sample is lengthened as text,
    // a member put before its first.
    let text = std::fs::read_to_string(log("noid", "json", false)).unwrap();
    let samples = text.find("\"samples\": [").unwrap();
    let start = samples + text[samples..].find('{').unwrap();
    let padding = format!("\"padding\": \"{}\", ", "x".repeat(LIMIT));
    let long = [&text[..=start], &padding, &text[start + 1..]].concat();
    let path = env
        .path()
        .join("2026-12-03T14-55-25-00-00_babel-noid_long.json");
    std::fs::write(&path, &long).unwrap();
    let stderr = crate::common::refused_import(&env, "r", "inspect", &[], &path);
    let expected = format!("byte {start}: a value longer than {LIMIT} bytes");
    assert!(stderr.contains(&expected), "{expected:?} not in {stderr}");
}

/// Samples are read as members, not trees: FORMAT.md, "An integer no double holds is
/// refused at its own path in the line" (here, in the sample), and only where the record
/// keeps it.
#[test]
fn an_integer_no_double_holds_is_refused_where_the_sample_holds_it_and_only_if_kept() {
    let env = Env::with_archive();
    let text = std::fs::read_to_string(log("mc", ".json", false)).unwrap();
    let samples = text.find("\"samples\": [").unwrap();
    let edited = |from: &str, to: &str| {
        let at = samples + text[samples..].find(from).unwrap();
        let path = env.path().join("edited.json");
        std::fs::write(
            &path,
            format!("{}{to}{}", &text[..at], &text[at + from.len()..]),
        )
        .unwrap();
        path
    };
    // The first sample's token usage, which the record does not keep.
    let unkept = edited(
        "\"input_tokens\": 68,",
        "\"input_tokens\": 12345678901234567890,",
    );
    let records = import(&env, "kept", &unkept, &[], &[]);
    assert_eq!(records.len(), 20);
    // Its scorer's answer, which is the record's prediction.
    let kept = edited("\"answer\": \"B\",", "\"answer\": [12345678901234567890],");
    env.babel(&["run", "create", "refused", "--model", "mockllm/model"])
        .assert()
        .success();
    let stderr = crate::common::refused_import(&env, "refused", "inspect", &[], &kept);
    assert!(
        stderr.contains(
            "#/samples/0: field scores.choice.answer[0]: the integer 12345678901234567890 has no exact JSON double"
        ),
        "{stderr}"
    );
}
