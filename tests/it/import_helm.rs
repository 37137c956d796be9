//! `babel import --format helm` on a real HELM 0.5.16 run folder
//! (`tests/fixtures/crfm-helm-0.5.16/`, see its NOTES.md): the folder is archived whole,
//! records are joined with their per-instance stats, babel's accuracy per variant equals
//! the run's own `stats.json` mean, and the same questions compare item by item with the
//! lm-eval and Inspect fixtures. Cases the real run lacks (positional ids, `count: 0`, no
//! correctness stat) are derived from it by editing a copy, as each test says.

use crate::common::Env;
use serde_json::Value;
use std::path::{Path, PathBuf};

const RUN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/crfm-helm-0.5.16/runs/babel_mc:model=simple_model1"
);

fn import(env: &Env, run: &str, folder: &Path, meta: &[&str]) -> Vec<Value> {
    let mut args = vec!["run", "create", run, "--model", "simple/model1"];
    for m in meta {
        args.extend(["--meta", m]);
    }
    env.babel(&args).assert().success();
    env.babel(&["import", run, "--format", "helm"])
        .arg(folder)
        .assert()
        .success();
    env.records(run)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A copy of the real run folder under `env`, for a test to edit.
fn copy_of_run(env: &Env, name: &str) -> PathBuf {
    let copy = env.path().join(name);
    std::fs::create_dir_all(&copy).unwrap();
    for entry in std::fs::read_dir(RUN).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
    }
    copy
}

#[test]
fn accuracy_per_variant_equals_the_runs_own_stats_for_every_0_1_stat() {
    // "babel's accuracy equals the run's stats.json mean for that stat and split"
    // (issue 14). The original variant is the stat without a perturbation; lowercase is
    // the one computed on the perturbed instances.
    let env = Env::with_archive();
    let stats = read_json(&Path::new(RUN).join("stats.json"));
    let mut checked = 0;
    for stat in [
        "exact_match",
        "quasi_exact_match",
        "prefix_exact_match",
        "quasi_prefix_exact_match",
    ] {
        let run = stat.replace('_', "-");
        let meta = format!("correctness_metric={stat}");
        let records = import(&env, &run, Path::new(RUN), &[&meta]);
        for (variant, perturbation) in [("original", None), ("lowercase", Some("perturbed"))] {
            let theirs = stats
                .as_array()
                .unwrap()
                .iter()
                .find(|s| {
                    let name = &s["name"];
                    name["name"] == stat
                        && name["split"] == "test"
                        && name["perturbation"]["computed_on"].as_str() == perturbation
                })
                .unwrap_or_else(|| panic!("stats.json has {stat} for {variant}"))["mean"]
                .as_f64()
                .unwrap();
            let known: Vec<bool> = records
                .iter()
                .filter(|r| r["variant_id"] == variant)
                .map(|r| r["correct"].as_bool().expect("every item has the stat"))
                .collect();
            assert_eq!(known.len(), 40, "20 questions × 2 train trials");
            let babel = known.iter().filter(|c| **c).count() as f64 / known.len() as f64;
            assert!(
                (babel - theirs).abs() <= 1e-12,
                "{stat} {variant}: babel {babel}, HELM {theirs}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 8);
}

#[test]
fn identity_is_instance_perturbation_and_trial_and_the_folder_is_archived_whole() {
    let env = Env::with_archive();
    let records = import(&env, "h", Path::new(RUN), &[]);
    assert_eq!(records.len(), 80);
    let mut keys: Vec<(String, String, u64)> = records
        .iter()
        .map(|r| {
            assert_eq!(r["identity_scope"], "stable");
            (
                r["question_id"].as_str().unwrap().to_owned(),
                r["variant_id"].as_str().unwrap().to_owned(),
                r["repeat_id"].as_u64().unwrap(),
            )
        })
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 80, "(id, perturbation, train trial) is the key");
    // MC: the target is the correct choice's text, and a letter would map through
    // output_mapping (this model answers "Answer:", which maps to nothing).
    let first = &records[0];
    assert_eq!(first["target"], "Paris");
    assert_eq!(first["prediction"], "Answer:");
    assert_eq!(first["input"]["question"], "What is the capital of France?");
    assert_eq!(first["source"]["pointer"], "/request_states/0");
    // Every file of the folder is archived byte for byte, and registered.
    let manifest = read_json(&env.archived("runs/h/manifest.json"));
    let import = &manifest["imports"][0];
    let mut archived: Vec<&str> = std::iter::once(&import["raw"])
        .chain(import["companions"].as_array().unwrap())
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    archived.sort();
    let mut given: Vec<String> = std::fs::read_dir(RUN)
        .unwrap()
        .map(|e| {
            format!(
                "raw/0001-babel_mc_model=simple_model1/{}",
                e.unwrap().file_name().to_str().unwrap()
            )
        })
        .collect();
    given.sort();
    assert_eq!(archived, given);
    for path in &given {
        let name = path.rsplit('/').next().unwrap();
        assert_eq!(
            std::fs::read(env.archived(&format!("runs/h/{path}"))).unwrap(),
            std::fs::read(Path::new(RUN).join(name)).unwrap()
        );
    }
    assert_eq!(import["producer"]["framework"], "helm");
    assert_eq!(import["producer"]["model"], "simple/model1");
    assert_eq!(import["producer"]["run"], "babel_mc:model=simple_model1");
    env.babel(&["validate"]).assert().success();
}

#[test]
fn positional_ids_are_run_local_and_a_count_0_stat_is_unknown() {
    // Derived from the real run: every instance id renamed to HELM's positional form
    // (id0, id1, ...), as HELM writes when any instance lacks an id; and q001's
    // exact_match given count 0 without a mean, as HELM writes for stats it could not
    // compute.
    let env = Env::with_archive();
    let folder = copy_of_run(&env, "positional");
    for file in ["scenario_state.json", "per_instance_stats.json"] {
        let path = folder.join(file);
        let mut text = std::fs::read_to_string(&path).unwrap();
        for n in 1..=20 {
            text = text.replace(&format!("\"q{n:03}\""), &format!("\"id{}\"", n - 1));
        }
        std::fs::write(&path, text).unwrap();
    }
    let path = folder.join("per_instance_stats.json");
    let mut stats = read_json(&path);
    for entry in stats.as_array_mut().unwrap() {
        if entry["instance_id"] == "id0" {
            for stat in entry["stats"].as_array_mut().unwrap() {
                if stat["name"]["name"] == "exact_match" {
                    *stat = serde_json::json!({"name": stat["name"].clone(), "count": 0, "sum": 0, "sum_squared": 0});
                }
            }
        }
    }
    std::fs::write(&path, serde_json::to_string_pretty(&stats).unwrap()).unwrap();
    let records = import(&env, "p", &folder, &[]);
    for record in &records {
        assert_eq!(record["identity_scope"], "run-local", "{record}");
        let q1 = record["question_id"].as_str().unwrap().ends_with(":id0");
        assert_eq!(record["correct"].is_null(), q1, "{record}");
        if q1 {
            assert!(
                record["warnings"].to_string().contains("count 0"),
                "{record}"
            );
        }
    }
    let other = import(&env, "p2", &folder, &[]);
    assert_eq!(other.len(), 80);
    let summary = crate::common::babel_json(&env, &["compare", "p", "--other-run", "p2"]);
    assert_eq!(
        summary["matched"], 0,
        "positional ids never pair: {summary}"
    );
}

#[test]
fn a_run_without_its_correctness_stat_has_correct_null_everywhere() {
    // Derived from the real run: every 0/1 stat removed from per_instance_stats.json,
    // as in HELM runs whose metrics compute none (NOTES.md: simple1).
    let env = Env::with_archive();
    let folder = copy_of_run(&env, "no-stat");
    let path = folder.join("per_instance_stats.json");
    let mut stats = read_json(&path);
    for entry in stats.as_array_mut().unwrap() {
        entry["stats"]
            .as_array_mut()
            .unwrap()
            .retain(|s| !s["name"]["name"].as_str().unwrap().contains("exact_match"));
    }
    std::fs::write(&path, serde_json::to_string_pretty(&stats).unwrap()).unwrap();
    let records = import(&env, "n", &folder, &[]);
    assert!(records.iter().all(|r| r["correct"].is_null()));
    assert!(
        records[0]["warnings"]
            .to_string()
            .contains("no exact_match stat")
    );
}

#[test]
fn the_same_questions_compare_across_lm_eval_inspect_and_helm() {
    // The fixtures share q001..q020; filed under one benchmark name they pair.
    let env = Env::with_archive();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let harness: Vec<PathBuf> = std::fs::read_dir(fixtures.join("lm-eval-0.4.13/original/dummy-p"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().unwrap().contains("samples_babel_mc_original_"))
        .collect();
    let inspect = fixtures.join(
        "inspect-ai-0.3.285/logs/seed1/2026-12-03T14-54-39-00-00_babel-mc_L3aC6TktMr8Qp7aQ5S3fqq.eval",
    );
    // Each run is of the model its framework's own output names (the harness writes none).
    for (run, model, format, input) in [
        ("h", "dummy", "harness", &harness[0]),
        ("i", "mockllm/model", "inspect", &inspect),
        ("m", "simple/model1", "helm", &PathBuf::from(RUN)),
    ] {
        env.babel(&["run", "create", run, "--model", model])
            .assert()
            .success();
        env.babel(&["import", run, "--format", format, "--benchmark", "babel_mc"])
            .arg(input)
            .assert()
            .success();
    }
    for (a, b) in [("h", "i"), ("h", "m"), ("i", "m")] {
        let summary = crate::common::babel_json(&env, &["compare", a, "--other-run", b]);
        // HELM's second train trial (repeat 1) has no counterpart; q001..q020 pair.
        assert_eq!(summary["matched"], 20, "{a} vs {b}: {summary}");
    }
}

#[test]
fn validate_finds_a_changed_or_stray_file_in_the_raw_folder() {
    let env = Env::with_archive();
    import(&env, "h", Path::new(RUN), &[]);
    let folder = "runs/h/raw/0001-babel_mc_model=simple_model1";
    let stats = env.archived(&format!("{folder}/per_instance_stats.json"));
    let mut bytes = std::fs::read(&stats).unwrap();
    bytes[100] ^= 1;
    std::fs::write(&stats, bytes).unwrap();
    std::fs::write(env.archived(&format!("{folder}/extra.json")), b"{}").unwrap();
    let output = env.babel(&["validate"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains(&format!("{folder}/per_instance_stats.json")),
        "{text}"
    );
    assert!(
        text.contains(&format!("{folder}/extra.json: [untracked]")),
        "{text}"
    );
}

#[test]
fn a_file_or_a_variant_is_a_usage_error() {
    let env = Env::with_archive();
    env.babel(&["run", "create", "h", "--model", "m"])
        .assert()
        .success();
    let file = Path::new(RUN).join("scenario_state.json");
    for (args, expected) in [
        (vec![file.to_str().unwrap()], "is not a folder"),
        (
            vec![RUN, "--variant", "x"],
            "--variant does not apply to HELM runs",
        ),
    ] {
        let output = env
            .babel(&["import", "h", "--format", "helm"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{stderr}");
    }
}

#[test]
fn a_validation_split_is_its_own_filter_and_language_modeling_windows_are_one_record() {
    // Derived from the real run: q001..q005 moved to a `valid` split (in the request
    // states and in their stats) and scored right, as HELM runs that evaluate both splits.
    let env = Env::with_archive();
    let folder = copy_of_run(&env, "split");
    let moved = |id: &str| ["q001", "q002", "q003", "q004", "q005"].contains(&id);
    let state_path = folder.join("scenario_state.json");
    let mut state = read_json(&state_path);
    for request in state["request_states"].as_array_mut().unwrap() {
        if moved(request["instance"]["id"].as_str().unwrap()) {
            request["instance"]["split"] = "valid".into();
        }
    }
    std::fs::write(&state_path, serde_json::to_string_pretty(&state).unwrap()).unwrap();
    let stats_path = folder.join("per_instance_stats.json");
    let mut stats = read_json(&stats_path);
    for entry in stats.as_array_mut().unwrap() {
        if moved(entry["instance_id"].as_str().unwrap()) {
            for stat in entry["stats"].as_array_mut().unwrap() {
                stat["name"]["split"] = "valid".into();
                if stat["name"]["name"] == "exact_match" {
                    stat["mean"] = 1.0.into();
                }
            }
        }
    }
    std::fs::write(&stats_path, serde_json::to_string_pretty(&stats).unwrap()).unwrap();
    let records = import(&env, "s", &folder, &[]);
    for record in &records {
        let valid = moved(record["question_id"].as_str().unwrap());
        assert_eq!(
            record["filter"],
            if valid { "valid" } else { "none" },
            "{record}"
        );
        assert_eq!(record["correct"], valid, "{record}");
    }

    // Derived from the real run: the method made language_modeling and every request
    // state repeated, as HELM writes one request state per window of a long instance.
    let folder = copy_of_run(&env, "lm");
    let spec_path = folder.join("run_spec.json");
    let mut spec = read_json(&spec_path);
    spec["adapter_spec"]["method"] = "language_modeling".into();
    std::fs::write(&spec_path, serde_json::to_string_pretty(&spec).unwrap()).unwrap();
    let state_path = folder.join("scenario_state.json");
    let mut state = read_json(&state_path);
    let states = state["request_states"].as_array_mut().unwrap();
    let windows: Vec<Value> = states.iter().flat_map(|s| [s.clone(), s.clone()]).collect();
    *states = windows;
    std::fs::write(&state_path, serde_json::to_string_pretty(&state).unwrap()).unwrap();
    let records = import(&env, "l", &folder, &[]);
    assert_eq!(
        records.len(),
        80,
        "one record per instance, trial and perturbation"
    );
    assert!(
        records[0]["warnings"]
            .to_string()
            .contains("language-modeling instance")
    );
}

#[test]
fn a_link_in_a_run_folder_is_refused_not_followed() {
    // "A HELM run folder with a symlink (to /etc/hostname, or a token file) is followed
    // and its content archived and published: refuse symlinks in folder inputs."
    let env = Env::with_archive();
    env.babel(&["run", "create", "h", "--model", "simple/model1"])
        .assert()
        .success();
    let copy = copy_of_run(&env, "linked");
    std::fs::write(env.path().join("token"), "hf_secret\n").unwrap();
    std::os::unix::fs::symlink(env.path().join("token"), copy.join("notes.json")).unwrap();
    let before = crate::common::files_under(&env.root());
    let output = env
        .babel(&["import", "h", "--format", "helm"])
        .arg(&copy)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("\"notes.json\", which is a symbolic link"),
        "{stderr}"
    );
    assert_eq!(crate::common::files_under(&env.root()), before);
}

#[test]
fn a_folder_of_many_files_or_of_colliding_names_is_told_clearly() {
    // A run folder's files are held open while they are imported: a soft limit of open
    // files below their number is raised (to the hard limit) ...
    let env = Env::with_archive();
    let many = copy_of_run(&env, "many");
    for i in 0..100 {
        std::fs::write(many.join(format!("extra{i}.txt")), "x\n").unwrap();
    }
    env.babel(&["run", "create", "r", "--model", "simple/model1"])
        .assert()
        .success();
    let limited = |limit: &str| {
        let babel = env.babel(&["import", "r", "--format", "helm", "-q"]);
        std::process::Command::new("sh")
            .current_dir(env.path())
            .arg("-c")
            .arg(format!("ulimit {limit} 64 && exec \"$0\" \"$@\""))
            .arg(babel.get_program())
            .args(babel.get_args())
            .arg(&many)
            .env("BABEL_TIMESTAMP", crate::common::TIMESTAMP)
            .output()
            .unwrap()
    };
    let output = limited("-n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("holds more files than this process may keep open")
            && stderr.contains("raise the limit (`ulimit -n`)"),
        "{stderr}"
    );
    assert!(env.records("r").is_empty());
    let output = limited("-Sn");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!env.records("r").is_empty());

    // ... and two names stored as one are named, not left to a failed write.
    let colliding = copy_of_run(&env, "colliding");
    std::fs::write(colliding.join("stats.json."), "{}\n").unwrap();
    env.babel(&["run", "create", "c", "--model", "simple/model1"])
        .assert()
        .success();
    let stderr = crate::common::refused_import(&env, "c", "helm", &[], &colliding);
    assert!(
        stderr.contains("\"stats.json\"")
            && stderr.contains("\"stats.json.\"")
            && stderr.contains("would be stored under one name")
            && stderr.contains("rename one of the two"),
        "{stderr}"
    );
    // Names that differ only in letter case are one file on macOS and Windows.
    std::fs::remove_file(colliding.join("stats.json.")).unwrap();
    std::fs::write(colliding.join("Stats.json"), "{}\n").unwrap();
    let stderr = crate::common::refused_import(&env, "c", "helm", &[], &colliding);
    assert!(
        stderr.contains("\"Stats.json\"") && stderr.contains("differ only in letter case"),
        "{stderr}"
    );
}

#[test]
fn a_header_file_that_is_not_json_is_named_with_its_line_column_and_field() {
    let env = Env::with_archive();
    let broken = copy_of_run(&env, "broken");
    let path = broken.join("run_spec.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let at = text.find("\"global_suffix\": ").unwrap() + "\"global_suffix\": ".len();
    std::fs::write(&path, format!("{}, {}", &text[..at], &text[at..])).unwrap();
    // Where the stray comma is, counted here: lines and columns from 1.
    let line = text[..at].matches('\n').count() + 1;
    let column = at - text[..at].rfind('\n').map_or(0, |newline| newline + 1) + 1;
    env.babel(&["run", "create", "r", "--model", "simple/model1"])
        .assert()
        .success();
    let stderr = crate::common::refused_import(&env, "r", "helm", &[], &broken);
    let expected = format!(
        "run_spec.json: line {line}, column {column}: field adapter_spec.global_suffix: invalid JSON"
    );
    assert!(stderr.contains(&expected), "{expected:?} not in {stderr}");
}

#[test]
fn a_run_of_another_model_is_refused_or_kept_with_a_warning() {
    // "An Inspect log, HELM run or EEE file whose own model differs from the run's model
    // is imported silently today and relabelled. Refuse it [...] naming both models; an
    // explicit flag may accept it and record a warning on every record."
    let env = Env::with_archive();
    env.babel(&["run", "create", "other", "--model", "gpt-x"])
        .assert()
        .success();
    let output = env
        .babel(&["import", "other", "--format", "helm", RUN])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("\"simple/model1\"")
            && stderr.contains("\"gpt-x\"")
            && stderr.contains("--allow-other-model"),
        "{stderr}"
    );
    env.babel(&[
        "import",
        "other",
        "--format",
        "helm",
        "--allow-other-model",
        RUN,
    ])
    .assert()
    .success();
    let records = env.records("other");
    assert!(!records.is_empty());
    for record in &records {
        assert_eq!(record["model"], "gpt-x");
        assert!(
            record["warnings"].as_array().unwrap().iter().any(|w| w
                .as_str()
                .unwrap()
                .contains("\"simple/model1\", not the run's model")),
            "{record}"
        );
    }
}

#[test]
fn a_large_stats_file_is_streamed_in_bounded_memory() {
    // "HELM: per_instance_stats.json is streamed and only the stats of the instances in
    // the run are kept (≤ 512 MB peak for a 300 MB file)." A run of 24,000 instances,
    // 80 stats each: a 300 MB stats file and a small scenario state.
    let env = Env::with_archive();
    let folder = env.path().join("big-run");
    std::fs::create_dir(&folder).unwrap();
    let real = Path::new(RUN);
    for name in ["run_spec.json", "scenario.json"] {
        std::fs::copy(real.join(name), folder.join(name)).unwrap();
    }
    let instances = 24_000;
    let mut states = String::from("{\"request_states\": [");
    let mut stats = std::io::BufWriter::new(
        std::fs::File::create(folder.join("per_instance_stats.json")).unwrap(),
    );
    use std::io::Write;
    stats.write_all(b"[").unwrap();
    for i in 0..instances {
        if i > 0 {
            states.push(',');
            stats.write_all(b",").unwrap();
        }
        states.push_str(&format!(
            "{{\"instance\": {{\"id\": \"q{i}\", \"split\": \"test\", \"input\": {{\"text\": \"question {i}\"}}, \"references\": [{{\"output\": {{\"text\": \"a\"}}, \"tags\": [\"correct\"]}}]}}, \"train_trial_index\": 0, \"request\": {{\"prompt\": \"question {i}\"}}, \"result\": {{\"success\": true, \"completions\": [{{\"text\": \"a\"}}]}}}}"
        ));
        write!(
            stats,
            "{{\"instance_id\": \"q{i}\", \"train_trial_index\": 0, \"stats\": ["
        )
        .unwrap();
        for s in 0..80 {
            if s > 0 {
                stats.write_all(b", ").unwrap();
            }
            let name = if s == 0 {
                "exact_match".to_owned()
            } else {
                format!("stat_{s}")
            };
            write!(stats, "{{\"name\": {{\"name\": \"{name}\", \"split\": \"test\"}}, \"count\": 1, \"sum\": 1.0, \"sum_squared\": 1.0, \"min\": 1.0, \"max\": 1.0, \"mean\": 1.0, \"variance\": 0.0, \"stddev\": 0.0}}").unwrap();
        }
        stats.write_all(b"]}").unwrap();
    }
    stats.write_all(b"]").unwrap();
    drop(stats);
    states.push_str("]}");
    std::fs::write(folder.join("scenario_state.json"), states).unwrap();
    let stats_bytes = std::fs::metadata(folder.join("per_instance_stats.json"))
        .unwrap()
        .len();
    assert!(stats_bytes > 300_000_000, "{stats_bytes}");
    env.babel(&["run", "create", "big", "--model", "simple/model1"])
        .assert()
        .success();
    let peak_kib = crate::common::import_peak_kib(&env, "big", "helm", &folder);
    println!("HELM stats of {stats_bytes} bytes imported with a peak of {peak_kib} KiB");
    assert!(peak_kib < 512 * 1024, "peak {peak_kib} KiB");
    assert_eq!(env.records("big").len(), instances);
}

#[test]
fn a_bad_per_instance_stats_element_stops_the_run_wherever_its_batch_is_read() {
    // The elements of per_instance_stats.json are parsed on the workers and added to the
    // index in file order: the first bad one, in one of many batches, is the one named,
    // once (with a later one bad too), and nothing is written. 400 elements of about 17 KB
    // each are seven batches.
    let env = Env::with_archive();
    let stats: Vec<Value> = read_json(&Path::new(RUN).join("per_instance_stats.json"))
        .as_array()
        .unwrap()
        .clone();
    let many: Vec<Value> = (0..400)
        .map(|n| {
            let mut entry = stats[n % stats.len()].clone();
            let id = entry["instance_id"].as_str().unwrap().to_owned();
            entry["instance_id"] = format!("{id}-{}", n / stats.len()).into();
            entry
        })
        .collect();
    type Damage = fn(&mut Vec<Value>);
    let cases: [(&str, Damage, &str); 3] = [
        (
            "no-id",
            |many| many[300]["instance_id"] = Value::Null,
            "per_instance_stats.json#/300: field instance_id: expected a string",
        ),
        (
            "twice",
            |many| many[351] = many[350].clone(),
            "per_instance_stats.json#/351: a second entry for instance",
        ),
        (
            "both",
            |many| {
                many[351] = many[350].clone();
                many[300]["instance_id"] = Value::Null;
            },
            "per_instance_stats.json#/300: field instance_id: expected a string",
        ),
    ];
    for (name, damage, told) in cases {
        let folder = copy_of_run(&env, name);
        let mut damaged = many.clone();
        damage(&mut damaged);
        std::fs::write(
            folder.join("per_instance_stats.json"),
            serde_json::to_string_pretty(&damaged).unwrap(),
        )
        .unwrap();
        env.babel(&["run", "create", name, "--model", "simple/model1"])
            .assert()
            .success();
        let stderr = crate::common::refused_import(&env, name, "helm", &[], &folder);
        assert_eq!(stderr.matches(told).count(), 1, "{name}: {stderr}");
        assert_eq!(
            stderr.matches("per_instance_stats.json#/").count(),
            1,
            "{name}: {stderr}"
        );
    }
}

#[test]
fn a_header_file_beyond_what_the_memory_cgroup_leaves_is_refused_naming_the_budget() {
    // A header file is read whole and held as a tree, so an import reads no more of them
    // than 1/32 of the memory it may still take: under a job scheduler's or a container's
    // memory cgroup, the room under that limit, not the machine's. A run whose
    // run_spec.json is 8 MiB (the real one, then spaces) imports on the machine (where
    // 256 MiB are free), and is refused inside a cgroup of 128 MiB made below the test's
    // own, whose room gives a budget of at most 4 MiB.
    const LIMIT: u64 = 128 << 20;
    let Some(cgroup) = crate::common::MemoryCgroup::create_or_skip(LIMIT) else {
        return;
    };
    let env = Env::with_archive();
    let padded = copy_of_run(&env, "padded");
    let spec = padded.join("run_spec.json");
    let mut text = std::fs::read(&spec).unwrap();
    let size = 8 << 20;
    text.resize(size, b' ');
    std::fs::write(&spec, &text).unwrap();
    for run in ["inside", "outside"] {
        env.babel(&["run", "create", run, "--model", "simple/model1"])
            .assert()
            .success();
    }
    let output = env
        .babel_inside(&cgroup, &["import", "inside", "--format", "helm"])
        .arg(&padded)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let told = format!("run_spec.json is {size} bytes, more than the ");
    let at = stderr
        .find(&told)
        .unwrap_or_else(|| panic!("{told:?} not in {stderr}"));
    let budget: u64 = stderr[at + told.len()..]
        .split(' ')
        .next()
        .and_then(|figure| figure.parse().ok())
        .unwrap_or_else(|| panic!("no figure after {told:?} in {stderr}"));
    assert!(
        budget > 0 && budget <= LIMIT / 32,
        "{budget} bytes read whole in a cgroup of {LIMIT}"
    );
    assert!(env.records("inside").is_empty());
    // The same run on the machine, outside the cgroup, is read.
    env.babel(&["import", "outside", "--format", "helm"])
        .arg(&padded)
        .assert()
        .success();
    assert!(!env.records("outside").is_empty());
}

/// Request states are read as members, not trees: FORMAT.md, "An integer no double holds
/// is refused at its own path in the line" (here, in the request state), and only where
/// the record keeps it.
#[test]
fn an_integer_no_double_holds_is_refused_where_the_state_holds_it_and_only_if_kept() {
    let env = Env::with_archive();
    let folder = copy_of_run(&env, "big");
    let state_path = folder.join("scenario_state.json");
    let original = read_json(&state_path);
    let big = serde_json::json!(12345678901234567890u64);
    let write = |edit: &dyn Fn(&mut Value)| {
        let mut state = original.clone();
        edit(&mut state["request_states"]);
        std::fs::write(&state_path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
    };

    // A request field the record does not keep (HELM's sampling temperature).
    write(&|states| states[0]["request"]["temperature"] = big.clone());
    let records = import(&env, "kept", &folder, &[]);
    assert_eq!(
        records.len(),
        original["request_states"].as_array().unwrap().len()
    );

    // The same integer where the record keeps it: a choice's text, and the output mapping.
    env.babel(&["run", "create", "refused", "--model", "simple/model1"])
        .assert()
        .success();
    for (edit, field) in [
        (
            &(|s: &mut Value| s[2]["instance"]["references"][1]["output"]["text"] = big.clone())
                as &dyn Fn(&mut Value),
            "#/request_states/2: field instance.references[1].output.text: the integer 12345678901234567890",
        ),
        (
            &|s: &mut Value| s[3]["output_mapping"]["B"] = serde_json::json!([big.clone()]),
            "#/request_states/3: field output_mapping.B[0]: the integer 12345678901234567890",
        ),
    ] {
        write(edit);
        let stderr = crate::common::refused_import(&env, "refused", "helm", &[], &folder);
        assert!(stderr.contains(field), "{field}: {stderr}");
    }
}
