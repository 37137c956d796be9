//! `babel import --format opencompass` on real OpenCompass 0.5.4 output
//! (`tests/fixtures/opencompass-0.5.4/`, see its NOTES.md): babel's accuracy per dataset
//! equals OpenCompass's own aggregate (a percentage) as a fraction, the circular
//! aggregates are recomputed from the four rotations, positions never pair while `--ids`
//! pairs the questions with the lm-eval, Inspect and HELM fixtures, and hostile copies are
//! refused with the file and item named and nothing written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::Env;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/opencompass-0.5.4"
);
const OUTPUTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/opencompass-0.5.4/outputs/20261203_234822"
);
const MODEL: &str = "babel-fake-seed1";

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn aggregate(abbr: &str, key: &str) -> f64 {
    let results = read_json(&Path::new(OUTPUTS).join(format!("results/{MODEL}/{abbr}.json")));
    results[key].as_f64().unwrap() / 100.0
}

fn data(name: &str) -> String {
    format!("{FIXTURE}/data/{name}")
}

fn predictions(abbr: &str) -> PathBuf {
    Path::new(OUTPUTS).join(format!("predictions/{MODEL}/{abbr}.json"))
}

fn import(env: &Env, run: &str, args: &[&str], input: &Path) -> Vec<Value> {
    env.babel(&["run", "create", run, "--model", MODEL])
        .assert()
        .success();
    env.babel(&["import", run, "--format", "opencompass"])
        .args(args)
        .arg(input)
        .assert()
        .success();
    env.records(run)
}

fn accuracy(records: &[&Value]) -> f64 {
    let right = records.iter().filter(|r| r["correct"] == true).count();
    right as f64 / records.len() as f64
}

fn close(ours: f64, theirs: f64, what: &str) {
    assert!(
        (ours - theirs).abs() < 1e-12,
        "{what}: babel {ours}, OpenCompass {theirs}"
    );
}

#[test]
fn accuracy_of_every_dataset_equals_opencompass_own_aggregate_as_a_fraction() {
    // "Accuracy of every imported task equals the tool's own aggregate to 1e-12:
    // OpenCompass's accuracy / 100 (and acc_origin, perf_circular recomputed from the four
    // rotations)" (issue 19).
    let env = Env::with_archive();
    let records = import(&env, "o", &[], Path::new(OUTPUTS));
    let of = |abbr: &str| -> Vec<&Value> {
        records
            .iter()
            .filter(|r| r["extra"]["dataset"] == abbr)
            .collect()
    };
    for abbr in ["babel_mc_gen", "babel_mc_ppl"] {
        let rows = of(abbr);
        assert_eq!(rows.len(), 20);
        close(accuracy(&rows), aggregate(abbr, "accuracy"), abbr);
    }

    let circular = of("babel_mc_circular");
    assert_eq!(circular.len(), 80);
    close(
        accuracy(&circular),
        aggregate("babel_mc_circular", "acc_circular"),
        "acc_circular",
    );
    let origin: Vec<&Value> = circular
        .iter()
        .copied()
        .filter(|r| r["variant_id"] == "circular-0")
        .collect();
    close(
        accuracy(&origin),
        aggregate("babel_mc_circular", "acc_origin"),
        "acc_origin",
    );
    // Per question: how many of its four rotations are right.
    let mut right_per_question: BTreeMap<String, u32> = BTreeMap::new();
    for record in &circular {
        *right_per_question
            .entry(record["question_id"].as_str().unwrap().to_owned())
            .or_default() += u32::from(record["correct"] == true);
    }
    assert_eq!(right_per_question.len(), 20);
    let share = |at_least: u32| {
        right_per_question
            .values()
            .filter(|n| **n >= at_least)
            .count() as f64
            / 20.0
    };
    close(
        share(4),
        aggregate("babel_mc_circular", "perf_circular"),
        "perf_circular",
    );
    for k in 1..=3 {
        let key = format!("more_{k}_circular");
        close(share(k), aggregate("babel_mc_circular", &key), &key);
    }

    // Free generation: OpenCompass wrote only the aggregate, so every item is unknown,
    // never wrong.
    let generation = of("babel_gen");
    assert_eq!(generation.len(), 12);
    for record in generation {
        assert!(record["correct"].is_null(), "{record}");
        assert!(
            record["warnings"]
                .to_string()
                .contains("no per-item correct"),
            "{record}"
        );
    }
}

#[test]
fn the_four_rotations_are_variants_of_one_question_and_compare() {
    let env = Env::with_archive();
    let records = import(&env, "o", &[], &predictions("babel_mc_circular"));
    for (position, record) in records.iter().enumerate() {
        let position = record["extra"]["position"]
            .as_u64()
            .unwrap_or(position as u64);
        assert_eq!(
            record["variant_id"],
            format!("circular-{}", position % 4),
            "{record}"
        );
        assert_eq!(record["extra"]["rotation"], position % 4);
    }
    let summary = crate::common::babel_json(
        &env,
        &[
            "compare",
            "o",
            "--baseline",
            "circular-0",
            "--variant",
            "circular-1",
        ],
    );
    assert_eq!(summary["matched"], 0, "run-local: {summary}");
    let env = Env::with_archive();
    import(
        &env,
        "o",
        &[
            "--ids",
            &format!("babel_mc_circular={}", data("babel_mc.jsonl")),
        ],
        &predictions("babel_mc_circular"),
    );
    let summary = crate::common::babel_json(
        &env,
        &[
            "compare",
            "o",
            "--baseline",
            "circular-0",
            "--variant",
            "circular-1",
        ],
    );
    assert_eq!(summary["matched"], 20, "{summary}");
}

#[test]
fn a_parsed_letter_the_reply_does_not_contain_is_flagged() {
    // OptionSimAccEvaluator maps any reply, even "I'm not sure.", to some option.
    let env = Env::with_archive();
    let records = import(&env, "o", &[], &predictions("babel_mc_gen"));
    let flagged: Vec<&Value> = records
        .iter()
        .filter(|r| {
            r["warnings"]
                .to_string()
                .contains("a letter the reply does not contain")
        })
        .collect();
    for record in &records {
        let reply = record["response"].as_str().unwrap();
        let letter = record["prediction"].as_str().unwrap();
        assert_eq!(
            flagged.contains(&record),
            !reply.contains(letter),
            "{record}"
        );
    }
    assert!(
        flagged.iter().any(|r| r["response"] == "I'm not sure."),
        "the fixture's unanswerable replies are flagged: {flagged:?}"
    );
}

#[test]
fn positions_never_pair_and_ids_pair_with_lm_eval_inspect_and_helm() {
    // "Positional ids never pair by default ...; with the id options the same questions
    // pair with the lm-eval, Inspect and HELM runs (20 matched for every pair)" (issue 19).
    let env = Env::with_archive();
    for run in ["a", "b"] {
        import(
            &env,
            run,
            &["--benchmark", "babel_mc"],
            &predictions("babel_mc_gen"),
        );
    }
    let summary = crate::common::babel_json(&env, &["compare", "a", "--other-run", "b"]);
    assert_eq!(summary["matched"], 0, "{summary}");
    assert_eq!(summary["baseline"]["run_local_excluded"], 20, "{summary}");

    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let harness: Vec<PathBuf> = std::fs::read_dir(fixtures.join("lm-eval-0.4.13/original/dummy-p"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().unwrap().contains("samples_babel_mc_original_"))
        .collect();
    let inspect = fixtures.join(
        "inspect-ai-0.3.285/logs/seed1/2026-12-03T14-54-39-00-00_babel-mc_L3aC6TktMr8Qp7aQ5S3fqq.eval",
    );
    let helm = fixtures.join("crfm-helm-0.5.16/runs/babel_mc:model=simple_model1");
    for (run, model, format, input) in [
        ("h", "dummy", "harness", &harness[0]),
        ("i", "mockllm/model", "inspect", &inspect),
        ("m", "simple/model1", "helm", &helm),
    ] {
        env.babel(&["run", "create", run, "--model", model])
            .assert()
            .success();
        env.babel(&["import", run, "--format", format, "--benchmark", "babel_mc"])
            .arg(input)
            .assert()
            .success();
    }
    for abbr in ["babel_mc_gen", "babel_mc_ppl"] {
        let run = abbr.replace('_', "-");
        let records = import(
            &env,
            &run,
            &[
                "--benchmark",
                "babel_mc",
                "--ids",
                &format!("{abbr}={}", data("babel_mc.jsonl")),
            ],
            &predictions(abbr),
        );
        assert!(records.iter().all(|r| r["identity_scope"] == "stable"));
        for other in ["h", "i", "m"] {
            let summary = crate::common::babel_json(&env, &["compare", &run, "--other-run", other]);
            assert_eq!(summary["matched"], 20, "{run} vs {other}: {summary}");
        }
    }
    // The dataset file is archived with the import, and validate re-checks it.
    let ids = env.archived("runs/babel-mc-gen/raw/0001-babel_mc_gen.json/ids-babel_mc.jsonl");
    assert_eq!(
        std::fs::read(&ids).unwrap(),
        std::fs::read(data("babel_mc.jsonl")).unwrap()
    );
    assert_eq!(env.validate_json()["ok"], true);
    let mut changed = std::fs::read(&ids).unwrap();
    changed[10] ^= 1;
    std::fs::write(&ids, changed).unwrap();
    let report = env.validate_json();
    assert_eq!(report["ok"], false);
    assert!(
        report.to_string().contains("ids-babel_mc.jsonl"),
        "{report}"
    );
}

/// A copy of the outputs folder under `env`, for a test to edit.
fn copy_of_outputs(env: &Env) -> PathBuf {
    let to = env.path().join("outputs");
    let mut stack = vec![PathBuf::from(OUTPUTS)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let target = to.join(path.strip_prefix(OUTPUTS).unwrap());
            if path.is_dir() {
                std::fs::create_dir_all(&target).unwrap();
                stack.push(path);
            } else {
                std::fs::copy(&path, &target).unwrap();
            }
        }
    }
    to
}

/// An import expected to be refused, nothing written: its stderr.
fn refused(env: &Env, run: &str, args: &[&str], input: &Path) -> String {
    crate::common::refused_import(env, run, "opencompass", args, input)
}

#[test]
fn an_output_folder_of_more_than_ten_thousand_entries_is_refused() {
    // Folders count as entries too, empty ones included: 10,001 of them beside the
    // real outputs are refused, where counting only files let 30,000 through.
    let env = Env::with_archive();
    env.babel(&["run", "create", "o", "--model", MODEL])
        .assert()
        .success();
    let outputs = copy_of_outputs(&env);
    for i in 0..100 {
        for j in 0..101 {
            std::fs::create_dir_all(outputs.join(format!("configs/d{i}/e{j}"))).unwrap();
        }
    }
    let stderr = refused(&env, "o", &[], &outputs);
    assert!(stderr.contains("holds more than 10000 entries"), "{stderr}");
}

#[test]
fn hostile_outputs_are_refused_with_the_file_and_item_named() {
    let env = Env::with_archive();
    env.babel(&["run", "create", "o", "--model", MODEL])
        .assert()
        .success();
    let outputs = copy_of_outputs(&env);
    let ids_file = |name: &str, lines: &dyn Fn(Vec<&str>) -> Vec<String>| {
        let text = std::fs::read_to_string(data("babel_mc.jsonl")).unwrap();
        let path = env.path().join(name);
        std::fs::write(&path, lines(text.lines().collect()).join("\n") + "\n").unwrap();
        path
    };

    // An id file shorter than the predictions.
    let short = ids_file("short.jsonl", &|lines| {
        lines[..10].iter().map(|l| l.to_string()).collect()
    });
    let ids = format!("babel_mc_gen={}", short.display());
    let stderr = refused(&env, "o", &["--ids", &ids], &predictions("babel_mc_gen"));
    assert!(stderr.contains("babel_mc_gen.json"), "{stderr}");
    assert!(stderr.contains("item 10 is question 10"), "{stderr}");
    assert!(stderr.contains("has 10 lines"), "{stderr}");

    // Duplicated ids: line 3 says q002 again.
    let duplicated = ids_file("dup.jsonl", &|lines| {
        let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        out[2] = out[2].replace("\"q003\"", "\"q002\"");
        out
    });
    let ids = format!("babel_mc_gen={}", duplicated.display());
    let stderr = refused(&env, "o", &["--ids", &ids], &predictions("babel_mc_gen"));
    assert!(
        stderr.contains("duplicate") && stderr.contains("q002"),
        "{stderr}"
    );

    // An --ids name that is no dataset of the input.
    let ids = format!("nope={}", short.display());
    let stderr = refused(&env, "o", &["--ids", &ids], &predictions("babel_mc_gen"));
    assert!(stderr.contains("holds no such dataset"), "{stderr}");

    // A missing results file, in a folder and beside one predictions file.
    let results = outputs.join(format!("results/{MODEL}/babel_mc_ppl.json"));
    let kept = env.path().join("kept.json");
    std::fs::rename(&results, &kept).unwrap();
    let stderr = refused(&env, "o", &[], &outputs);
    assert!(
        stderr.contains("has no results file results/babel-fake-seed1/babel_mc_ppl.json"),
        "{stderr}"
    );
    let lone = outputs.join(format!("predictions/{MODEL}/babel_mc_ppl.json"));
    let stderr = refused(&env, "o", &[], &lone);
    assert!(stderr.contains("babel_mc_ppl.json is missing"), "{stderr}");
    std::fs::rename(&kept, &results).unwrap();

    // A truncated predictions file, and an item of the wrong type.
    let generated = outputs.join(format!("predictions/{MODEL}/babel_mc_gen.json"));
    let text = std::fs::read_to_string(&generated).unwrap();
    std::fs::write(&generated, &text[..text.len() / 2]).unwrap();
    let stderr = refused(&env, "o", &[], &outputs);
    assert!(stderr.contains("babel_mc_gen.json"), "{stderr}");
    assert!(
        stderr.contains("not the JSON document the format reads: byte"),
        "{stderr}"
    );
    let mut document: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    document.insert("7".into(), Value::String("oops".into()));
    std::fs::write(&generated, serde_json::to_string(&document).unwrap()).unwrap();
    let stderr = refused(&env, "o", &[], &outputs);
    assert!(
        stderr.contains("babel_mc_gen.json") && stderr.contains("/7"),
        "{stderr}"
    );
    assert!(
        stderr.contains("member \"7\" is the string \"oops\", not an object"),
        "{stderr}"
    );
    assert!(!stderr.contains("does not hold"), "{stderr}");

    // Results that are not of these predictions: the details reversed, an entry missing, an
    // entry no item has, a position far beyond them, two repeats (n = 2), and an --ids
    // file one line off.
    let results_path = outputs.join(format!("results/{MODEL}/babel_mc_gen.json"));
    let original = std::fs::read_to_string(&results_path).unwrap();
    let edited = |edit: &dyn Fn(&mut Value)| {
        let mut results: Value = serde_json::from_str(&original).unwrap();
        edit(&mut results);
        std::fs::write(&results_path, serde_json::to_vec(&results).unwrap()).unwrap();
    };
    std::fs::write(&generated, &text).unwrap();
    for (edit, expected) in [
        (
            &(|r: &mut Value| r["details"].as_array_mut().unwrap().reverse())
                as &dyn Fn(&mut Value),
            "the details entry of item 0 is \"babel_mc_gen_19\", another item",
        ),
        (
            &|r: &mut Value| {
                r["details"].as_array_mut().unwrap().pop();
            },
            "results/babel-fake-seed1/babel_mc_gen.json has no details entry for item 19",
        ),
        (
            &|r: &mut Value| {
                let details = r["details"].as_array_mut().unwrap();
                let extra = details[0].clone();
                details.push(extra);
            },
            "results/babel-fake-seed1/babel_mc_gen.json scores an item the predictions file does not hold (details entry 20)",
        ),
        (
            &|r: &mut Value| {
                r["details"] = serde_json::json!({"type": "GEN", "18446744073709551615": {}});
            },
            "has no details entry for item 0",
        ),
        (
            &|r: &mut Value| r["details"][3]["correct"] = serde_json::json!([true, false]),
            "has 2 values of correct: OpenCompass repeated each item (n > 1)",
        ),
    ] {
        edited(edit);
        let stderr = refused(&env, "o", &[], &outputs);
        assert!(stderr.contains(expected), "{expected}: {stderr}");
        // An item refused for its own problem is not also an unscored entry.
        assert_eq!(
            stderr.contains("does not hold"),
            expected.contains("does not hold"),
            "{expected}: {stderr}"
        );
    }
    std::fs::write(&results_path, &original).unwrap();
    let shifted = ids_file("shifted.jsonl", &|lines| {
        let mut out = vec![
            lines[0]
                .replace("\"q001\"", "\"q000\"")
                .replace("capital of France", "capital of Spain"),
        ];
        out.extend(lines.iter().map(|l| l.to_string()));
        out
    });
    let ids = format!("babel_mc_gen={}", shifted.display());
    let stderr = refused(&env, "o", &["--ids", &ids], &predictions("babel_mc_gen"));
    assert!(
        stderr.contains("record 1 of the --ids file of babel_mc_gen asks \"What is the capital of Spain?\", which the prompt of item 0 does not contain"),
        "{stderr}"
    );

    // Options that do not apply are refused, not ignored.
    let stderr = refused(
        &env,
        "o",
        &["--id-field", "id"],
        &predictions("babel_mc_gen"),
    );
    assert!(
        stderr.contains("--id-field names the id column of an --ids file"),
        "{stderr}"
    );
    let ids = format!("babel_mc_gen={}", data("babel_mc.jsonl"));
    let stderr = refused(
        &env,
        "o",
        &["--ids", &ids, "--ids", &ids],
        &predictions("babel_mc_gen"),
    );
    assert!(
        stderr.contains("--ids names \"babel_mc_gen\" twice"),
        "{stderr}"
    );

    // Results of another model.
    env.babel(&["run", "create", "x", "--model", "other"])
        .assert()
        .success();
    let stderr = refused(&env, "x", &[], &predictions("babel_mc_ppl"));
    assert!(
        stderr.contains("\"babel-fake-seed1\"") && stderr.contains("\"other\""),
        "{stderr}"
    );
}

#[test]
fn a_predictions_file_named_from_inside_its_folder_still_names_its_model_and_results() {
    let env = Env::with_archive();
    let inside = |run: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_babel"))
            .current_dir(Path::new(OUTPUTS).join(format!("predictions/{MODEL}")))
            .arg("--root")
            .arg(env.root())
            .args([
                "import",
                run,
                "--format",
                "opencompass",
                "babel_mc_ppl.json",
            ])
            .env_remove("BABEL_ROOT")
            .output()
            .unwrap()
    };
    env.babel(&["run", "create", "x", "--model", "other"])
        .assert()
        .success();
    let output = inside("x");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(!output.status.success());
    assert!(stderr.contains("\"babel-fake-seed1\""), "{stderr}");
    env.babel(&["run", "create", "o", "--model", MODEL])
        .assert()
        .success();
    let output = inside("o");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(env.records("o").len(), 20);
}

#[test]
fn a_results_file_of_numbers_is_held_once_not_copied() {
    // A results file held as a tree takes tens of times its size when its details are
    // numbers (a list of 200 per item here), and its details were copied out of it: 3.7 GB
    // for 94 MB before the eighth session of 2026-12-05, 2.2 GB since (moved, not copied).
    // Here 40,000 items, 30 MB of results: 1.4 GB (47 times the file) copied, 0.84 GB (28
    // times) moved.
    let env = Env::with_archive();
    let folder = env.path().join("numbers");
    let (predictions, results) = (folder.join("predictions/m"), folder.join("results/m"));
    std::fs::create_dir_all(&predictions).unwrap();
    std::fs::create_dir_all(&results).unwrap();
    let numbers: Vec<String> = (0..200).map(|n| n.to_string()).collect();
    let numbers = numbers.join(",");
    let (mut details, mut items) = (String::from("{\"type\":\"GEN\""), String::from("{"));
    for i in 0..40_000 {
        details.push_str(&format!(
            ",\"{i}\":{{\"prompt\":\"q{i}\",\"predictions\":\"a\",\"references\":\"a\",\"scores\":[{numbers}]}}"
        ));
        let comma = if i > 0 { "," } else { "" };
        items.push_str(&format!(
            "{comma}\"{i}\":{{\"origin_prompt\":\"q{i}\",\"prediction\":\"a\",\"gold\":\"a\"}}"
        ));
    }
    details.push('}');
    items.push('}');
    let results_text = format!("{{\"accuracy\":100.0,\"details\":{details}}}");
    std::fs::write(results.join("x.json"), &results_text).unwrap();
    std::fs::write(predictions.join("x.json"), items).unwrap();
    env.babel(&["run", "create", "n", "--model", "m"])
        .assert()
        .success();
    let peak_kib = crate::common::import_peak_kib(&env, "n", "opencompass", &folder);
    let size_kib = results_text.len() as u64 / 1024;
    println!("results of {size_kib} KiB imported with a peak of {peak_kib} KiB");
    assert!(
        peak_kib < 36 * size_kib,
        "peak {peak_kib} KiB for {size_kib} KiB"
    );
    assert_eq!(env.records("n").len(), 40_000);
}

/// Items are read as members, not trees: FORMAT.md, "An integer no double holds is refused
/// at its own path in the line" (here, in the item), and only where the record keeps it.
#[test]
fn an_integer_no_double_holds_is_refused_where_the_item_holds_it_and_only_if_kept() {
    let env = Env::with_archive();
    let outputs = copy_of_outputs(&env);
    let ppl = outputs.join(format!("predictions/{MODEL}/babel_mc_ppl.json"));
    let original: Value = read_json(&ppl);
    let big = serde_json::json!(12345678901234567890u64);
    let write = |edit: &dyn Fn(&mut Value)| {
        let mut document = original.clone();
        edit(&mut document);
        std::fs::write(&ppl, serde_json::to_vec_pretty(&document).unwrap()).unwrap();
    };

    // A member of a label the record does not keep (OpenCompass's `testing input`).
    write(&|d| d["0"]["label: A"]["testing input"] = big.clone());
    let records = import(&env, "kept", &[], &ppl);
    assert_eq!(records.len(), 20);
    assert_eq!(
        records[0]["input"]["prompts"]["A"],
        original["0"]["label: A"]["prompt"]
    );

    // The same integer where the record keeps it: the gold, and a label's perplexity.
    env.babel(&["run", "create", "refused", "--model", MODEL])
        .assert()
        .success();
    for (edit, field) in [
        (
            &(|d: &mut Value| d["3"]["gold"] = serde_json::json!([1, big.clone()]))
                as &dyn Fn(&mut Value),
            "#/3: field gold[1]: the integer 12345678901234567890 has no exact JSON double",
        ),
        (
            &|d: &mut Value| d["5"]["label: C"]["PPL"] = big.clone(),
            "#/5: field [\"label: C\"].PPL: the integer 12345678901234567890 has no exact JSON double",
        ),
    ] {
        write(edit);
        let stderr = refused(&env, "refused", &[], &ppl);
        assert!(stderr.contains(field), "{field}: {stderr}");
        assert!(
            stderr.contains("write integers beyond 2^53 as strings"),
            "{stderr}"
        );
    }
}
