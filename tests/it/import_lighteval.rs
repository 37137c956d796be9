//! `babel import --format lighteval` on real lighteval 0.13.0 output
//! (`tests/fixtures/lighteval-0.13.0/`, see its NOTES.md): babel's accuracy per task
//! equals lighteval's own `results[task]` aggregate, `doc.id` positions never pair, the
//! ids a task kept (`doc.specific.id`) pair with the lm-eval, Inspect and HELM fixtures,
//! and hostile copies are refused with the file and row named and nothing written.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::common::Env;

const OUT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/lighteval-0.13.0/out"
);

/// The run folders of the fixture and the model each names.
const RUNS: [(&str, &str); 2] = [("custom-seed1", "babel-policy"), ("dummy-seed42", "dummy")];

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The single file under `dir` whose name contains `part`.
fn file_named(dir: &Path, part: &str) -> PathBuf {
    let found: Vec<PathBuf> = files_under(dir)
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_str().unwrap().contains(part))
        .collect();
    assert_eq!(found.len(), 1, "{part} in {}: {found:?}", dir.display());
    found[0].clone()
}

/// A copy of one run folder of the fixture under `env`, for a test to edit.
fn copy_of(env: &Env, run: &str) -> PathBuf {
    let from = Path::new(OUT).join(run);
    let to = env.path().join(run);
    for file in files_under(&from) {
        let target = to.join(file.strip_prefix(&from).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&file, &target).unwrap();
    }
    to
}

fn create(env: &Env, run: &str, model: &str) {
    env.babel(&["run", "create", run, "--model", model])
        .assert()
        .success();
}

/// An import expected to be refused, nothing written: its stderr.
fn refused(env: &Env, run: &str, args: &[&str], input: &Path) -> String {
    crate::common::refused_import(env, run, "lighteval", args, input)
}

#[test]
fn accuracy_of_every_task_equals_lightevals_own_aggregate() {
    // "Accuracy of every imported task equals the tool's own aggregate to 1e-12:
    // lighteval's results[task].acc / em" (issue 19).
    let env = Env::with_archive();
    let mut checked = 0;
    for (folder, model) in RUNS {
        create(&env, folder, model);
        env.babel(&["import", folder, "--format", "lighteval"])
            .arg(Path::new(OUT).join(folder))
            .assert()
            .success();
        let results = read_json(&file_named(&Path::new(OUT).join(folder), "results_"));
        let records = env.records(folder);
        for (task, metric) in [("babel_mc|0", "acc"), ("babel_gen|0", "em")] {
            let of_task: Vec<&Value> = records
                .iter()
                .filter(|r| r["extra"]["task"] == task)
                .collect();
            assert!(!of_task.is_empty(), "{folder} {task}");
            assert!(of_task.iter().all(|r| r["correct"].is_boolean()));
            let right = of_task.iter().filter(|r| r["correct"] == true).count();
            let ours = right as f64 / of_task.len() as f64;
            let theirs = results["results"][task][metric].as_f64().unwrap();
            assert!(
                (ours - theirs).abs() < 1e-12,
                "{folder} {task} {metric}: babel {ours}, lighteval {theirs}"
            );
            // The benchmark is the task without its few-shot suffix, the count kept.
            assert!(of_task.iter().all(
                |r| r["benchmark"] == task[..task.len() - 2] && r["extra"]["num_fewshot"] == 0
            ));
            checked += 1;
        }
    }
    assert_eq!(checked, 4);
}

#[test]
fn continuous_metrics_are_kept_logprobs_are_scores_and_no_answer_is_inferred() {
    let env = Env::with_archive();
    create(&env, "c", "babel-policy");
    env.babel(&["import", "c", "--format", "lighteval"])
        .arg(Path::new(OUT).join("custom-seed1"))
        .assert()
        .success();
    for record in env.records("c") {
        let metrics = record["metrics"].as_object().unwrap();
        if record["benchmark"] == "babel_mc" {
            assert!(metrics["mrr"].is_number(), "{record}");
            assert_eq!(record["scores"]["logprobs"].as_array().unwrap().len(), 4);
            assert!(
                record["prediction"].is_null(),
                "no winner from logprobs: {record}"
            );
            assert_eq!(record["input"]["choices"].as_array().unwrap().len(), 4);
        } else {
            assert!(metrics["f1"].is_number(), "{record}");
            assert!(record["response"].is_string(), "{record}");
        }
        assert!(record["target"].is_string(), "{record}");
        if let Some(choices) = record["input"]["choices"].as_array() {
            // The target is the gold choice's text.
            let gold = record["extra"]["gold_index"].as_u64().unwrap() as usize;
            assert_eq!(record["target"], choices[gold], "{record}");
        }
    }
}

#[test]
fn positional_ids_never_pair_and_kept_ids_pair_with_lm_eval_inspect_and_helm() {
    // "Positional ids never pair by default (a test compares two runs and finds no
    // matched items, with the hint); with the id options the same questions pair with the
    // lm-eval, Inspect and HELM runs (20 matched for every pair)" (issue 19).
    let env = Env::with_archive();
    for (folder, model) in RUNS {
        create(&env, folder, model);
        env.babel(&["import", folder, "--format", "lighteval"])
            .arg(Path::new(OUT).join(folder))
            .assert()
            .success();
    }
    let records = env.records("custom-seed1");
    assert!(
        records.iter().all(|r| r["identity_scope"] == "run-local"
            && r["warnings"].to_string().contains("--id-field"))
    );
    let summary = crate::common::babel_json(
        &env,
        &["compare", "custom-seed1", "--other-run", "dummy-seed42"],
    );
    assert_eq!(summary["matched"], 0, "{summary}");
    assert_eq!(summary["baseline"]["run_local_excluded"], 32, "{summary}");

    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let harness = file_named(
        &fixtures.join("lm-eval-0.4.13/original/dummy-p"),
        "samples_babel_mc_original_",
    );
    let inspect = fixtures.join(
        "inspect-ai-0.3.285/logs/seed1/2026-12-03T14-54-39-00-00_babel-mc_L3aC6TktMr8Qp7aQ5S3fqq.eval",
    );
    let helm = fixtures.join("crfm-helm-0.5.16/runs/babel_mc:model=simple_model1");
    // One details file alone, with the results JSON lighteval wrote beside it.
    let details = file_named(&Path::new(OUT).join("custom-seed1"), "details_babel_mc|0");
    let mut id_field = vec!["--id-field", "doc.specific.id"];
    for (run, model, format, input) in [
        ("h", "dummy", "harness", &harness),
        ("i", "mockllm/model", "inspect", &inspect),
        ("m", "simple/model1", "helm", &helm),
        ("l", "babel-policy", "lighteval", &details),
    ] {
        create(&env, run, model);
        let extra = if format == "lighteval" {
            std::mem::take(&mut id_field)
        } else {
            Vec::new()
        };
        env.babel(&["import", run, "--format", format, "--benchmark", "babel_mc"])
            .args(&extra)
            .arg(input)
            .assert()
            .success();
    }
    for other in ["h", "i", "m"] {
        let summary = crate::common::babel_json(&env, &["compare", "l", "--other-run", other]);
        assert_eq!(summary["matched"], 20, "l vs {other}: {summary}");
    }
}

#[test]
fn two_few_shot_settings_of_one_task_are_distinct_only_through_variant() {
    // "Two few-shot settings of one task in one run are distinct identities only through
    // --variant; otherwise a clear duplicate error" (issue 19). dummy-fewshot2 is
    // babel_mc|2, dummy-seed42 holds babel_mc|0: the same 20 positions.
    let env = Env::with_archive();
    create(&env, "d", "dummy");
    let zero = file_named(&Path::new(OUT).join("dummy-seed42"), "details_babel_mc|0");
    let two = file_named(&Path::new(OUT).join("dummy-fewshot2"), "details_babel_mc|2");
    env.babel(&["import", "d", "--format", "lighteval"])
        .arg(&zero)
        .assert()
        .success();
    let output = env
        .babel(&["import", "d", "--format", "lighteval"])
        .arg(&two)
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("duplicate record identity (benchmark=babel_mc"),
        "{stderr}"
    );
    assert_eq!(
        env.records("d").len(),
        20,
        "nothing of the refused import was written"
    );
    env.babel(&[
        "import",
        "d",
        "--format",
        "lighteval",
        "--variant",
        "fewshot-2",
    ])
    .arg(&two)
    .assert()
    .success();
    let records = env.records("d");
    let results = read_json(&file_named(
        &Path::new(OUT).join("dummy-fewshot2"),
        "results_",
    ));
    let of_two: Vec<&Value> = records
        .iter()
        .filter(|r| r["variant_id"] == "fewshot-2")
        .collect();
    assert_eq!(of_two.len(), 20);
    assert!(of_two.iter().all(|r| r["extra"]["num_fewshot"] == 2));
    let right = of_two.iter().filter(|r| r["correct"] == true).count() as f64;
    let theirs = results["results"]["babel_mc|2"]["acc"].as_f64().unwrap();
    assert!(
        (right / 20.0 - theirs).abs() < 1e-12,
        "{right} of 20 vs {theirs}"
    );
}

#[test]
fn a_model_name_with_an_organization_nests_its_folders_and_still_finds_its_results() {
    // lighteval writes details/<model_name>/... and results/<model_name>/...: a Hub id
    // (org/name) is two folders.
    let env = Env::with_archive();
    create(&env, "c", "babel-policy");
    let copy = copy_of(&env, "custom-seed1");
    for part in ["details", "results"] {
        let from = copy.join(part).join("babel-policy");
        let to = copy.join(part).join("org");
        std::fs::create_dir_all(&to).unwrap();
        std::fs::rename(&from, to.join("babel-policy")).unwrap();
    }
    let results = file_named(&copy, "results_");
    let mut json = read_json(&results);
    json["config_general"]["model_name"] = "org/babel-policy".into();
    std::fs::write(&results, serde_json::to_vec(&json).unwrap()).unwrap();
    create(&env, "o", "org/babel-policy");
    env.babel(&["import", "o", "--format", "lighteval"])
        .arg(&copy)
        .assert()
        .success();
    assert_eq!(env.records("o").len(), 32);
    create(&env, "f", "org/babel-policy");
    env.babel(&["import", "f", "--format", "lighteval"])
        .arg(file_named(&copy, "details_babel_mc|0"))
        .assert()
        .success();
    assert_eq!(env.records("f").len(), 20);
}

#[test]
fn a_missing_results_file_another_model_or_a_link_is_refused() {
    let env = Env::with_archive();
    create(&env, "c", "babel-policy");
    let copy = copy_of(&env, "custom-seed1");
    let results = file_named(&copy, "results_");
    let kept = env.path().join("kept-results.json");
    std::fs::rename(&results, &kept).unwrap();
    let stderr = refused(&env, "c", &[], &copy);
    assert!(
        stderr.contains("has no results file results/babel-policy/results_"),
        "{stderr}"
    );
    // One details file alone: its results file is looked for where lighteval writes it.
    let details = file_named(&copy, "details_babel_mc|0");
    let stderr = refused(&env, "c", &[], &details);
    assert!(stderr.contains("has no results file"), "{stderr}");
    assert!(
        stderr.contains("results_2026-12-03T23-42-37.569981.json is missing"),
        "{stderr}"
    );
    // A link in its place is refused, not followed.
    std::os::unix::fs::symlink(&kept, &results).unwrap();
    let stderr = refused(&env, "c", &[], &details);
    assert!(stderr.contains("is a symbolic link"), "{stderr}");
    let stderr = refused(&env, "c", &[], &copy);
    assert!(stderr.contains("which is a symbolic link"), "{stderr}");
    std::fs::remove_file(&results).unwrap();
    std::fs::rename(&kept, &results).unwrap();

    create(&env, "o", "other/model");
    let stderr = refused(&env, "o", &[], &copy);
    assert!(
        stderr.contains("\"babel-policy\"") && stderr.contains("\"other/model\""),
        "{stderr}"
    );
}

#[test]
fn a_truncated_or_mistyped_parquet_file_is_refused_naming_file_and_row() {
    let env = Env::with_archive();
    create(&env, "c", "babel-policy");
    let copy = copy_of(&env, "custom-seed1");
    let details = file_named(&copy, "details_babel_gen|0");
    let bytes = std::fs::read(&details).unwrap();
    std::fs::write(&details, &bytes[..bytes.len() / 2]).unwrap();
    let stderr = refused(&env, "c", &[], &copy);
    assert!(stderr.contains("details_babel_gen|0"), "{stderr}");
    assert!(
        stderr.contains("not a Parquet file babel can read"),
        "{stderr}"
    );

    // A damaged footer (every byte of the last 200 flipped in turn) is refused or read,
    // never a crash: the Parquet reader's trust in offsets is guarded. A flip that still
    // reads is imported into its own run.
    let mut run = String::from("d0");
    create(&env, &run, "babel-policy");
    for back in 9..200 {
        let mut damaged = bytes.clone();
        let at = bytes.len() - back;
        damaged[at] ^= 0x5a;
        std::fs::write(&details, &damaged).unwrap();
        let output = env
            .babel(&["import", &run, "--format", "lighteval"])
            .arg(&copy)
            .output()
            .unwrap();
        assert!(
            matches!(output.status.code(), Some(0 | 1)),
            "byte {at}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        if output.status.success() {
            run = format!("d{back}");
            create(&env, &run, "babel-policy");
        }
    }

    // A details file whose doc column is a string, not lighteval's struct.
    write_parquet(
        &details,
        "doc",
        Arc::new(arrow_array::StringArray::from(vec!["q"])),
    );
    let stderr = refused(&env, "c", &[], &copy);
    assert!(stderr.contains("details_babel_gen|0"), "{stderr}");
    assert!(stderr.contains("/0") && stderr.contains("doc"), "{stderr}");
    assert!(
        stderr.contains("expected lighteval's doc struct"),
        "{stderr}"
    );
}

#[test]
fn a_parquet_row_too_deep_or_too_large_to_store_is_refused() {
    // Nothing stored may fail to read back: a value nested as deep as the strict reader
    // refuses (the 128th level, the row's own object counted) is refused at import.
    let env = Env::with_archive();
    create(&env, "c", "babel-policy");
    let copy = copy_of(&env, "custom-seed1");
    let details = file_named(&copy, "details_babel_gen|0");
    let fixture = std::fs::read(&details).unwrap();
    let before = env.files();
    // The row, doc and specific are three levels: 125 lists make the 128th.
    with_deep_doc(&details, 125);
    let stderr = refused(&env, "c", &[], &copy);
    assert!(stderr.contains("details_babel_gen|0"), "{stderr}");
    assert!(
        stderr.contains("row 0: doc.specific.deep[0]")
            && stderr.contains("nests arrays and objects 128 levels deep"),
        "{stderr}"
    );
    assert_eq!(env.files(), before);
    // One level less is read and stored, reads back whole, and validate agrees.
    std::fs::write(&details, &fixture).unwrap();
    with_deep_doc(&details, 124);
    env.babel(&["import", "c", "--format", "lighteval"])
        .arg(&copy)
        .assert()
        .success();
    env.babel(&["validate"]).assert().success();
    let records = env.records("c");
    let mut value = &records[0]["extra"]["specific"]["deep"];
    for _ in 0..124 {
        value = &value[0];
    }
    assert_eq!(value, 1, "the deepest value is stored");
    create(&env, "d", "babel-policy");
    let before = env.files();

    // A schema 32,000 levels deep (16,000 lists), which the Parquet reader recurses
    // through as it decodes the footer: past the main thread's stack, and refused.
    // (Written on a thread with room for the writer's own recursion.)
    std::fs::write(&details, &fixture).unwrap();
    let path = details.clone();
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || with_deep_doc(&path, 16_000))
        .unwrap()
        .join()
        .unwrap();
    let stderr = refused(&env, "d", &[], &copy);
    assert!(
        stderr.contains(
            "a column is nested 32003 levels deep in the schema, more than the 264 babel reads"
        ),
        "{stderr}"
    );
    assert_eq!(env.files(), before);

    // "No item may exceed 64 MiB": a row is an item, however well it compresses.
    let long = "x".repeat((64 << 20) + 1);
    write_parquet(
        &details,
        "doc",
        Arc::new(arrow_array::StringArray::from(vec![long.as_str()])),
    );
    let stderr = refused(&env, "d", &[], &copy);
    assert!(
        stderr.contains("row 0 holds more than the 67108864 bytes babel reads of one item"),
        "{stderr}"
    );
    assert_eq!(env.files(), before);

    use arrow_array::Array;
    // Empty lists are almost free in Parquet and not in memory: each counts as its `[]`
    // and a separator, so 23 million of them (69 MB as text) are refused too.
    let empty = 23_000_000;
    let item = Arc::new(arrow_schema::Field::new(
        "item",
        arrow_schema::DataType::Int64,
        true,
    ));
    let inner = arrow_array::ListArray::new(
        item,
        arrow_buffer::OffsetBuffer::new_zeroed(empty),
        Arc::new(arrow_array::Int64Array::from(Vec::<i64>::new())),
        None,
    );
    let field = Arc::new(arrow_schema::Field::new(
        "item",
        inner.data_type().clone(),
        true,
    ));
    let lists: arrow_array::ArrayRef = Arc::new(arrow_array::ListArray::new(
        field,
        arrow_buffer::OffsetBuffer::from_lengths([empty]),
        Arc::new(inner),
        None,
    ));
    write_parquet(&details, "doc", lists);
    let stderr = refused(&env, "d", &[], &copy);
    assert!(
        stderr.contains("row 0 holds more than the 67108864 bytes babel reads of one item"),
        "{stderr}"
    );
    assert_eq!(env.files(), before);
}

#[test]
fn a_row_babel_cannot_hold_stops_the_file_whichever_batch_holds_it() {
    // A row nested too deep in the 31st of 50 copies of the fixture's rows (its batch of
    // items one of many, those before it already with the workers) refuses the whole
    // file, once, naming the row, and nothing is written.
    use arrow_array::cast::AsArray;
    use arrow_array::{ArrayRef, StringArray};
    let env = Env::with_archive();
    create(&env, "c", "babel-policy");
    let copy = copy_of(&env, "custom-seed1");
    let details = file_named(&copy, "details_babel_gen|0");
    let fixture = fixture_batch(&details);
    let rows = fixture.num_rows();
    let (copies, bad_copy, bad_row) = (50, 30, 5);
    let doc = fixture.column_by_name("doc").unwrap().as_struct();
    let ids = doc.column_by_name("id").unwrap().as_string::<i32>();
    let batches: Vec<_> = (0..copies)
        .map(|copy| {
            let deep = deep_list(rows, 125, |row| copy == bad_copy && row == bad_row);
            let ids: ArrayRef = Arc::new(StringArray::from_iter_values(
                ids.iter().map(|id| format!("{copy}-{}", id.unwrap())),
            ));
            with_doc(
                &fixture,
                &[("id", ids), ("specific", specific_of("deep", deep))],
            )
        })
        .collect();
    write_batches_as(&details, &batches, Default::default());
    let stderr = refused(&env, "c", &[], &copy);
    let row = bad_copy * rows + bad_row;
    assert_eq!(
        stderr
            .matches(&format!("row {row}: doc.specific.deep[0]"))
            .count(),
        1,
        "{stderr}"
    );
    let deep = "nests arrays and objects 128 levels deep";
    assert_eq!(stderr.matches(deep).count(), 1, "{stderr}");
}

/// `rows` values of `levels` nested lists around a 1, null at the top but in the rows
/// `valid` admits.
fn deep_list(rows: usize, levels: usize, valid: impl Fn(usize) -> bool) -> arrow_array::ArrayRef {
    let mut deep: arrow_array::ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![1; rows]));
    for level in 0..levels {
        let field = Arc::new(arrow_schema::Field::new(
            "item",
            deep.data_type().clone(),
            true,
        ));
        let offsets = arrow_buffer::OffsetBuffer::from_lengths(vec![1; rows]);
        let nulls = (level + 1 == levels).then(|| (0..rows).map(&valid).collect());
        deep = Arc::new(arrow_array::ListArray::new(field, offsets, deep, nulls));
    }
    deep
}

/// Rewrites a details file with each row's `doc.specific` (which the record keeps in
/// `extra`) replaced by `{"deep": ...}`: an integer inside `levels` lists.
fn with_deep_doc(details: &Path, levels: usize) {
    with_specific(details, "deep", |rows| deep_list(rows, levels, |_| true));
}

/// Rewrites a details file with each row's `doc.specific` replaced by `{key: value}`, the
/// values made by `values` for the file's number of rows.
fn with_specific(details: &Path, key: &str, values: impl FnOnce(usize) -> arrow_array::ArrayRef) {
    with_specific_as(details, key, values, Default::default());
}

/// [`with_specific`], written with the encoder's `properties`.
fn with_specific_as(
    details: &Path,
    key: &str,
    values: impl FnOnce(usize) -> arrow_array::ArrayRef,
    properties: parquet::file::properties::WriterProperties,
) {
    let batch = fixture_batch(details);
    let specific = specific_of(key, values(batch.num_rows()));
    write_batches_as(
        details,
        &[with_doc(&batch, &[("specific", specific)])],
        properties,
    );
}

/// The one batch of the fixture's details file at `details`.
fn fixture_batch(details: &Path) -> arrow_array::RecordBatch {
    let file = std::fs::File::open(details).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<_> = reader.map(Result::unwrap).collect();
    assert_eq!(batches.len(), 1, "the fixture is one batch");
    batches.into_iter().next().unwrap()
}

/// A `doc.specific` column holding `values` under `key`.
fn specific_of(key: &str, values: arrow_array::ArrayRef) -> arrow_array::ArrayRef {
    use arrow_array::Array;
    Arc::new(arrow_array::StructArray::new(
        vec![Arc::new(arrow_schema::Field::new(
            key,
            values.data_type().clone(),
            true,
        ))]
        .into(),
        vec![values],
        None,
    ))
}

/// `batch` with these members of its `doc` struct in place of its own (added after them
/// when it has none of that name).
fn with_doc(
    batch: &arrow_array::RecordBatch,
    members: &[(&str, arrow_array::ArrayRef)],
) -> arrow_array::RecordBatch {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    let doc = batch.column_by_name("doc").unwrap().as_struct();
    let (mut fields, mut columns): (Vec<_>, Vec<_>) = doc
        .fields()
        .iter()
        .cloned()
        .zip(doc.columns().iter().cloned())
        .unzip();
    for (name, column) in members {
        let field = Arc::new(arrow_schema::Field::new(
            *name,
            column.data_type().clone(),
            true,
        ));
        match fields.iter().position(|f| f.name() == name) {
            Some(at) => (fields[at], columns[at]) = (field, column.clone()),
            None => {
                fields.push(field);
                columns.push(column.clone());
            }
        }
    }
    let doc: arrow_array::ArrayRef = Arc::new(arrow_array::StructArray::new(
        fields.into(),
        columns,
        doc.nulls().cloned(),
    ));
    let columns = batch
        .schema_ref()
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, column)| {
            let column = match field.name().as_str() {
                "doc" => doc.clone(),
                _ => column.clone(),
            };
            (field.name().clone(), column)
        });
    arrow_array::RecordBatch::try_from_iter(columns).unwrap()
}

/// Writes a one-column Parquet file.
fn write_parquet(path: &Path, column: &str, values: arrow_array::ArrayRef) {
    write_batch(
        path,
        &arrow_array::RecordBatch::try_from_iter([(column, values)]).unwrap(),
    );
}

/// Writes a Parquet file of one batch (without the Arrow schema, whose own reader stops
/// short of 128 levels of nesting).
fn write_batch(path: &Path, batch: &arrow_array::RecordBatch) {
    write_batches_as(path, std::slice::from_ref(batch), Default::default());
}

/// Writes a Parquet file of `batches` as [`write_batch`] does, with the encoder's
/// `properties`.
fn write_batches_as(
    path: &Path,
    batches: &[arrow_array::RecordBatch],
    properties: parquet::file::properties::WriterProperties,
) {
    let file = std::fs::File::create(path).unwrap();
    let options = parquet::arrow::arrow_writer::ArrowWriterOptions::new()
        .with_skip_arrow_metadata(true)
        .with_properties(properties);
    let mut writer =
        parquet::arrow::ArrowWriter::try_new_with_options(file, batches[0].schema(), options)
            .unwrap();
    for batch in batches {
        writer.write(batch).unwrap();
    }
    writer.close().unwrap();
}

/// Imports the fixture with every row's `doc.specific` one `value_bytes` value, its
/// details written with `properties`: the rows, the import's peak memory in KiB, and the
/// details file's size.
fn import_with_long_specific(
    value_bytes: usize,
    properties: parquet::file::properties::WriterProperties,
) -> (usize, u64, u64) {
    let env = Env::with_archive();
    create(&env, "c", "babel-policy");
    let copy = copy_of(&env, "custom-seed1");
    let details = file_named(&copy, "details_babel_gen|0");
    let mut rows = 0;
    with_specific_as(
        &details,
        "context",
        |n| {
            rows = n;
            let text = "lorem ipsum ".repeat(value_bytes / 12);
            Arc::new(arrow_array::StringArray::from(vec![text; n]))
        },
        properties,
    );
    let size = std::fs::metadata(&details).unwrap().len();
    let peak_kib = crate::common::peak_kib(
        &env,
        &[
            "import".as_ref(),
            "c".as_ref(),
            "--format".as_ref(),
            "lighteval".as_ref(),
            "-q".as_ref(),
            copy.as_os_str(),
        ],
    );
    (rows, peak_kib, size)
}

#[test]
fn long_rows_are_decoded_a_few_at_a_time() {
    // Every row of a details file given a `doc.specific` of 16 MiB: read 256 rows to a
    // batch, the file's rows were all decoded at once (422 MB peak for these 12; a batch
    // of long-context prompts, 256 of 1.4 MB, took 839 MB); now a batch holds about 32 MiB
    // of the row group (228 MB peak, the rest being each item's copies in flight).
    let (rows, peak_kib, _) = import_with_long_specific(16 << 20, Default::default());
    assert!(
        rows >= 10,
        "the fixture's {rows} rows make more than 160 MiB"
    );
    println!("{rows} rows of 16 MiB imported at a {peak_kib} KiB peak");
    // Under one and a half times the rows' text: decoded all at once, the rows alone were
    // that, their row objects and records beside them.
    let all_rows_kib = rows as u64 * (16 << 10);
    assert!(
        peak_kib < all_rows_kib * 3 / 2,
        "{peak_kib} KiB for {rows} rows of 16 MiB"
    );
}

#[test]
fn a_long_dictionary_value_is_decoded_a_few_rows_at_a_time() {
    // Every row's `doc.specific` is one 24 MiB value, stored once in the column's
    // dictionary: the file is a few kilobytes, its pages a few bits per row. Batches sized
    // by the pages decoded every row at once.
    let properties = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
        .set_dictionary_page_size_limit(1 << 30)
        .build();
    let (rows, peak_kib, size) = import_with_long_specific(24 << 20, properties);
    assert!(size < 1 << 20, "the details file is {size} bytes");
    println!("{rows} rows sharing a 24 MiB value imported at a {peak_kib} KiB peak");
    // 597 MB for 12 rows when they were decoded at once, 308 MB a row at a time (the
    // rest is the item's copies in flight, as for rows stored whole).
    let all_rows_kib = rows as u64 * (24 << 10);
    assert!(
        peak_kib < all_rows_kib * 3 / 2,
        "{peak_kib} KiB for {rows} rows of 24 MiB"
    );
}

#[test]
fn validate_finds_a_changed_byte_in_the_details_or_the_results() {
    let env = Env::with_archive();
    create(&env, "c", "babel-policy");
    env.babel(&["import", "c", "--format", "lighteval"])
        .arg(Path::new(OUT).join("custom-seed1"))
        .assert()
        .success();
    assert_eq!(env.validate_json()["ok"], true);
    // The raw folder of the babel_mc import: its details file and its results beside it.
    let details = file_named(&env.archived("runs/c/raw"), "details_babel_mc_0");
    let folder = details.parent().unwrap();
    for part in ["details_babel_mc_0", "results-results_"] {
        let file = file_named(folder, part);
        let original = std::fs::read(&file).unwrap();
        let mut changed = original.clone();
        changed[original.len() / 2] ^= 1;
        std::fs::write(&file, &changed).unwrap();
        let report = env.validate_json();
        assert_eq!(report["ok"], false, "{part}");
        assert!(report.to_string().contains(part), "{report}");
        std::fs::write(&file, &original).unwrap();
    }
    assert_eq!(env.validate_json()["ok"], true);
}
