//! `babel export-eee`: a run written as Every Eval Ever 0.3.0 files, one aggregate
//! `<uuid>.json` and one instance-level `<uuid>_samples.jsonl` per (benchmark, variant),
//! under `DIR/data/<benchmark>/<developer>/<model>/` as EEE's datastore lays them out.
//!
//! EEE cannot say "unknown": its rows require a numeric `score` and a boolean
//! `is_correct`. So a record whose correctness is unknown is never written as a row (it
//! would read as wrong); each aggregate result counts them in
//! `metric_config.additional_details.unknown_correctness`, and a (benchmark, variant)
//! without one known record gets no files. Question IDs are written as they are, with
//! their identity scope in the row's metadata. The output is deterministic: UUIDs and
//! times derive from the run (its manifest's hash, its creation time), not from the clock.
//!
//! The records are read into trees and their rows written on worker threads, batch by
//! batch, and the rows spilled in record order to an unnamed temporary file in the
//! destination folder (on its disk, not in a `/tmp` that may be memory), from which each
//! samples file is then copied: what grows with the run is 16 bytes per stretch of
//! consecutive rows of one (benchmark, variant), one stretch in a run of one, one per row
//! where variants alternate.
//!
//! An export reads the archive through its readers and writes only under the destination
//! the user names, each file new and atomic; it never writes under ROOT. (Named for its
//! command: `babel export` is the release bundle's, in `bundle`.)

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::archive::layout::{self, RunId, run_relative};
use crate::archive::manifest::RunManifest;
use crate::archive::read;
use crate::archive::records::{Batch, Columns};
use crate::archive::{Archive, ArchiveError};
use crate::canonical_json::{Json, to_canonical_string};
use crate::compare::stats::{ConfidenceLevel, wilson_interval};
use crate::durable::{self, hex, io_at};
use crate::parallel;
use crate::record::{IdentityScope, Record};
use crate::report::question::question_text;

/// The EEE schema version written.
pub const SCHEMA_VERSION: &str = "0.3.0";

/// What an export wrote.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct EeeExport {
    /// The files written, aggregate then samples per (benchmark, variant).
    pub files: Vec<PathBuf>,
    /// Instance-level rows written (records with known correctness).
    pub rows: u64,
    /// Records left out because their correctness is unknown.
    pub unknown: u64,
    /// `benchmark/variant` selections with no known record, so no files.
    pub without_known: Vec<String>,
}

/// One (benchmark, variant) of the run.
#[derive(Default)]
struct Group {
    /// Per filter: (known, correct, unknown).
    tallies: BTreeMap<String, (u64, u64, u64)>,
    /// Where its rows are in the [`Spill`], in record order, runs of rows that follow one
    /// another there taken together (a run of one (benchmark, variant) is one span).
    spans: Vec<Range<u64>>,
}

impl Group {
    /// How many instance rows it has: one per record of known correctness.
    fn rows(&self) -> u64 {
        self.tallies.values().map(|&(known, _, _)| known).sum()
    }
}

/// Every group's instance rows, as JSON lines, in an unnamed temporary file of the
/// destination folder, in the order they are made; each samples file is then copied from
/// its group's spans. Held in memory, the rows of a million records and each file made
/// whole of them took 2.5 GB (BENCHMARKS.md, "Every Eval Ever export").
struct Spill {
    file: BufWriter<File>,
    written: u64,
}

/// What a failure to write the [`Spill`] says it was doing (in the destination folder).
const SPILLING: &str = "spilling instance rows to a temporary file in";

/// How much of a group's rows is read back from the spill at a time.
const COPY_BYTES: u64 = 1 << 20;

impl Spill {
    fn new(dir: &Path) -> io::Result<Self> {
        Ok(Self {
            file: BufWriter::with_capacity(1 << 20, tempfile::tempfile_in(dir)?),
            written: 0,
        })
    }

    /// Appends a row of `group`, and a line end.
    fn push(&mut self, group: &mut Group, row: &str) -> io::Result<()> {
        self.file.write_all(row.as_bytes())?;
        self.file.write_all(b"\n")?;
        let start = self.written;
        self.written += row.len() as u64 + 1;
        match group.spans.last_mut() {
            Some(span) if span.end == start => span.end = self.written,
            _ => group.spans.push(start..self.written),
        }
        Ok(())
    }

    /// The spill, written whole, to read back.
    fn finish(self) -> io::Result<File> {
        self.file
            .into_inner()
            .map_err(io::IntoInnerError::into_error)
    }
}

/// Copies `spans` of `spill` (in `dir`) to `out`, the samples file `dest`, in order.
fn copy_spans(
    spill: &File,
    spans: &[Range<u64>],
    out: &mut dyn Write,
    (dir, dest): (&Path, &Path),
) -> Result<(), durable::PathIoError> {
    let mut buffer = Vec::new();
    for span in spans {
        let mut at = span.start;
        while at < span.end {
            let len = (span.end - at).min(COPY_BYTES) as usize;
            buffer.resize(len, 0);
            spill.read_exact_at(&mut buffer, at).map_err(io_at(
                "reading back instance rows from a temporary file in",
                dir,
            ))?;
            out.write_all(&buffer).map_err(io_at("writing", dest))?;
            at += len as u64;
        }
    }
    Ok(())
}

/// Writes `run` of `archive` as EEE files under `dir` (created if missing). Refuses,
/// before writing anything, when any file it would write exists.
pub fn export_eee(
    archive: &Archive,
    run: &RunId,
    dir: &Path,
    developer: Option<&str>,
) -> Result<EeeExport, ArchiveError> {
    let dir = &archive.layout().derived_destination(dir, true)?;
    let manifest = archive.run_manifest(run)?;
    // The records it reads are checked first, history included: an edit made outside
    // babel is refused, never published to Every Eval Ever.
    crate::archive::require_whole(
        &format!("export-eee of run {run}"),
        crate::archive::validate::validate(archive, std::slice::from_ref(run))?,
    )?;
    let manifest_path = archive
        .layout()
        .resolve(&run_relative(run, layout::MANIFEST));
    let manifest_sha256 = durable::digest_file(&manifest_path)?.sha256;
    let (developer, model_dir) = model_path(manifest.model(), developer);
    // EEE's model ID is `<developer>/<model>`, as its datastore folders are.
    let model = match developer.as_str() {
        "unknown" => manifest.model().to_owned(),
        known => format!("{known}/{model_dir}"),
    };
    let evaluated_at = crate::clock::unix_seconds(&manifest.created_at)
        .map_or_else(|| manifest.created_at.clone(), |s| s.to_string());

    let mut export = EeeExport::default();
    std::fs::create_dir_all(dir).map_err(io_at("creating", dir))?;
    let mut spill = Spill::new(dir).map_err(io_at(SPILLING, dir))?;
    let groups = group_records(
        archive,
        run,
        &manifest,
        &model,
        &mut export,
        &mut spill,
        dir,
    )?;
    let spill = spill.finish().map_err(io_at(SPILLING, dir))?;
    let mut planned = Vec::new();
    for ((benchmark, variant), group) in groups {
        if group.rows() == 0 {
            export.without_known.push(format!("{benchmark}/{variant}"));
            continue;
        }
        let uuid = uuid_for(&manifest_sha256, run.as_str(), &benchmark, &variant);
        let folder = format!(
            "data/{}/{}/{}",
            component(&benchmark),
            component(&developer),
            component(&model_dir)
        );
        planned.push((benchmark, variant, group, uuid, folder));
    }
    for (_, _, _, uuid, folder) in &planned {
        refuse_existing(&dir.join(folder), uuid)?;
    }
    for (benchmark, variant, group, uuid, folder) in planned {
        let target = dir.join(&folder);
        std::fs::create_dir_all(&target).map_err(io_at("creating", &target))?;
        let id = evaluation_id(&benchmark, &model, run.as_str(), &variant);
        let samples_path = target.join(format!("{uuid}_samples.jsonl"));
        let digest = durable::write_new_atomically(&samples_path, |out| {
            copy_spans(&spill, &group.spans, out, (dir, &samples_path))
        })?;
        let aggregate = aggregate(AggregateFacts {
            manifest: &manifest,
            manifest_sha256: &manifest_sha256,
            run: run.as_str(),
            model: &model,
            developer: &developer,
            benchmark: &benchmark,
            variant: &variant,
            evaluation_id: &id,
            evaluated_at: &evaluated_at,
            group: &group,
            samples_path: &format!("{folder}/{uuid}_samples.jsonl"),
            samples_sha256: &digest.sha256,
        });
        let aggregate_path = target.join(format!("{uuid}.json"));
        let mut text = serde_json::to_string_pretty(&aggregate).expect("JSON values serialize");
        text.push('\n');
        write_new(&aggregate_path, &text)?;
        export.rows += group.rows();
        export.files.push(aggregate_path);
        export.files.push(samples_path);
    }
    Ok(export)
}

/// A record as the export counts and writes it: its group and filter, and its instance
/// row when its correctness is known.
struct Made {
    benchmark: String,
    variant: String,
    filter: String,
    row: Option<(bool, String)>,
}

/// The records of a batch as [`Made`] (on a worker thread: reading each record into a
/// tree and writing its row is most of an export), or why one cannot be read.
fn made_of(batch: &Batch, model: &str, run: &str) -> Result<Vec<Made>, String> {
    (0..batch.len())
        .map(|row| {
            let record = batch.record(row).map_err(|e| e.to_string())?;
            let row = record
                .correct
                .map(|correct| (correct, instance_row(&record, model, run, correct)));
            Ok(Made {
                benchmark: record.benchmark,
                variant: record.variant_id,
                filter: record.filter,
                row,
            })
        })
        .collect()
}

/// The run's records per (benchmark, variant): tallies per filter and an instance row per
/// record of known correctness, written to `spill` in record order; records of unknown
/// correctness are counted in `export`. `dir` names the export in a failure to spill.
fn group_records(
    archive: &Archive,
    run: &RunId,
    manifest: &RunManifest,
    model: &str,
    export: &mut EeeExport,
    spill: &mut Spill,
    dir: &Path,
) -> Result<BTreeMap<(String, String), Group>, ArchiveError> {
    let mut groups: BTreeMap<(String, String), Group> = BTreeMap::new();
    for entry in &manifest.imports {
        let path = archive
            .layout()
            .resolve(&run_relative(run, &entry.records.path));
        let mut batches = read::batches(archive, run, entry, Columns::ALL)?;
        parallel::map_ordered(
            parallel::workers(),
            || batches.next().transpose(),
            |batch| made_of(&batch, model, run.as_str()),
            |made| {
                let made = made.map_err(|reason| ArchiveError::Damaged {
                    path: path.clone(),
                    reason,
                })?;
                for made in made {
                    let group = groups.entry((made.benchmark, made.variant)).or_default();
                    let tally = group.tallies.entry(made.filter).or_default();
                    match made.row {
                        None => {
                            tally.2 += 1;
                            export.unknown += 1;
                        }
                        Some((correct, row)) => {
                            tally.0 += 1;
                            tally.1 += u64::from(correct);
                            spill.push(group, &row).map_err(io_at(SPILLING, dir))?;
                        }
                    }
                }
                Ok(())
            },
        )?;
    }
    Ok(groups)
}

/// Refuses when either file of the group `uuid` exists in `folder`.
fn refuse_existing(folder: &Path, uuid: &str) -> Result<(), ArchiveError> {
    for name in [format!("{uuid}.json"), format!("{uuid}_samples.jsonl")] {
        let path = folder.join(name);
        if path.symlink_metadata().is_ok() {
            return Err(ArchiveError::Usage {
                message: format!("{} already exists; nothing was written", path.display()),
                hint: Some("export into an empty folder, or remove the earlier export".into()),
            });
        }
    }
    Ok(())
}

/// Writes `text` to the new file `path`, atomically.
fn write_new(path: &Path, text: &str) -> Result<durable::ContentDigest, durable::PathIoError> {
    durable::write_new_atomically(path, |out| {
        out.write_all(text.as_bytes())
            .map_err(io_at("writing", path))
    })
}

/// The evaluation ID of one (benchmark, variant) of a run.
fn evaluation_id(benchmark: &str, model: &str, run: &str, variant: &str) -> String {
    format!("{benchmark}/{model}/{run}/{variant}")
}

/// EEE's model folder: `--developer` or the model's `org/` part, else `unknown`; and the
/// model's name without its organisation.
fn model_path(model: &str, developer: Option<&str>) -> (String, String) {
    let (org, name) = match model.split_once('/') {
        Some((org, name)) if !org.is_empty() && !name.is_empty() => (Some(org), name),
        _ => (None, model),
    };
    let developer = developer.or(org).unwrap_or("unknown").to_owned();
    (developer, name.replace('/', "_"))
}

/// A portable path component, as EEE's validator requires: no `<>:"\|?*` or control
/// characters, no trailing dot or space, not the reserved name `data`.
fn component(name: &str) -> String {
    let mut safe: String = name
        .chars()
        .map(|c| match c {
            '<' | '>' | ':' | '"' | '\\' | '|' | '?' | '*' | '/' => '_',
            c if c.is_control() => '_',
            c => c,
        })
        .collect();
    while safe.ends_with(['.', ' ']) {
        safe.pop();
    }
    let reserved = ["CON", "PRN", "AUX", "NUL"]
        .iter()
        .chain(&["COM1", "COM2", "COM3", "COM4", "LPT1", "LPT2", "LPT3"])
        .any(|r| safe.split('.').next().unwrap_or("").eq_ignore_ascii_case(r));
    if safe.is_empty() || safe == "data" || reserved {
        safe.insert(0, '_');
    }
    safe
}

/// A version-4-shaped UUID derived from the run's manifest and the selection, so that
/// the same archive state exports the same files.
fn uuid_for(manifest_sha256: &str, run: &str, benchmark: &str, variant: &str) -> String {
    let mut hasher = Sha256::new();
    for part in ["babel export-eee", manifest_sha256, run, benchmark, variant] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    let mut bytes: [u8; 16] = hasher.finalize()[..16].try_into().expect("16 bytes");
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let h = hex(&bytes);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// The `evaluation_result_id` of a filter.
fn result_id(filter: &str) -> String {
    if filter == crate::record::DEFAULT_FILTER {
        "accuracy".to_owned()
    } else {
        format!("accuracy:{filter}")
    }
}

/// JSON text as EEE's string fields hold it.
fn as_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => to_canonical_string(other).unwrap_or_else(|_| other.to_string()),
    }
}

/// One instance-level row.
fn instance_row(record: &Record, model: &str, run: &str, correct: bool) -> String {
    let reference: Vec<String> = match &record.target {
        Value::Null => Vec::new(),
        Value::Array(items) if items.iter().all(Value::is_string) => {
            items.iter().map(as_text).collect()
        }
        other => vec![as_text(other)],
    };
    let choices = record
        .input
        .get("choices")
        .and_then(Value::as_array)
        .filter(|c| c.iter().all(Value::is_string))
        .cloned();
    let raw = Json::of(&record.input)
        .ok()
        .and_then(|input| question_text(&input))
        .unwrap_or_else(|| as_text(&record.input));
    // EEE requires an output for a single-turn row; a producer without a prediction
    // (the harness records none) gives an empty one.
    let raw_output: Vec<String> = match &record.prediction {
        Value::Null => Vec::new(),
        prediction => vec![as_text(prediction)],
    };
    let output = json!({"raw": raw_output, "reasoning_trace": null});
    let mut metadata = Map::new();
    let scope = match record.identity_scope {
        IdentityScope::Stable => "stable",
        IdentityScope::RunLocal => "run-local",
    };
    for (key, value) in [
        ("variant_id", record.variant_id.clone()),
        ("filter", record.filter.clone()),
        ("repeat_id", record.repeat_id.to_string()),
        ("epoch", (record.repeat_id + 1).to_string()),
        ("identity_scope", scope.to_owned()),
        ("babel_source", record.source.to_string()),
    ] {
        metadata.insert(key.into(), Value::String(value));
    }
    if let Some(language) = &record.language {
        metadata.insert("language".into(), Value::String(language.clone()));
    }
    let row = json!({
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": evaluation_id(&record.benchmark, model, run, &record.variant_id),
        "model_id": model,
        "evaluation_name": record.benchmark,
        "evaluation_result_id": result_id(&record.filter),
        "sample_id": record.question_id,
        "sample_hash": null,
        "interaction_type": "single_turn",
        "input": {"raw": raw, "formatted": null, "reference": reference, "choices": choices},
        "output": output,
        "messages": null,
        "answer_attribution": [],
        "evaluation": {
            "score": if correct { 1.0 } else { 0.0 },
            "is_correct": correct,
            "num_turns": null,
            "tool_calls_count": null
        },
        "token_usage": null,
        "performance": null,
        "error": null,
        "metadata": metadata,
    });
    serde_json::to_string(&row).expect("JSON values serialize")
}

/// Everything an aggregate file says.
struct AggregateFacts<'a> {
    manifest: &'a RunManifest,
    manifest_sha256: &'a str,
    run: &'a str,
    model: &'a str,
    developer: &'a str,
    benchmark: &'a str,
    variant: &'a str,
    evaluation_id: &'a str,
    evaluated_at: &'a str,
    group: &'a Group,
    samples_path: &'a str,
    samples_sha256: &'a str,
}

fn aggregate(facts: AggregateFacts<'_>) -> Value {
    let results: Vec<Value> = facts
        .group
        .tallies
        .iter()
        .filter(|(_, (known, _, _))| *known > 0)
        .map(|(filter, (known, correct, unknown))| {
            let mut uncertainty = json!({"num_samples": known});
            if let Some(interval) = wilson_interval(*correct, *known, ConfidenceLevel::NINETY_FIVE) {
                uncertainty["confidence_interval"] = json!({
                    "lower": interval.low,
                    "upper": interval.high,
                    "confidence_level": 0.95,
                    "method": "wilson"
                });
            }
            json!({
                "evaluation_result_id": result_id(filter),
                "evaluation_name": facts.benchmark,
                "source_data": {
                    "dataset_name": facts.benchmark,
                    "source_type": "other",
                    "additional_details": {"variant": facts.variant, "filter": filter}
                },
                "evaluation_timestamp": facts.evaluated_at,
                "metric_config": {
                    "evaluation_description": "share of the records babel knows to be correct; records of unknown correctness are left out, not counted wrong",
                    "metric_id": "accuracy",
                    "metric_name": "accuracy",
                    "metric_kind": "accuracy",
                    "metric_unit": "proportion",
                    "lower_is_better": false,
                    "score_type": "continuous",
                    "min_score": 0.0,
                    "max_score": 1.0,
                    "additional_details": {"unknown_correctness": unknown.to_string()}
                },
                "score_details": {
                    "score": *correct as f64 / *known as f64,
                    "uncertainty": uncertainty
                }
            })
        })
        .collect();
    let formats: Vec<&str> = {
        let mut formats: Vec<&str> = facts
            .manifest
            .imports
            .iter()
            .map(|i| i.format.as_str())
            .collect();
        formats.sort_unstable();
        formats.dedup();
        formats
    };
    json!({
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": facts.evaluation_id,
        "evaluation_timestamp": facts.evaluated_at,
        "retrieved_timestamp": facts.evaluated_at,
        "source_metadata": {
            "source_name": "babel",
            "source_type": "evaluation_run",
            "source_organization_name": "unknown",
            "evaluator_relationship": "other",
            "additional_details": {
                "babel_run": facts.run,
                "babel_run_manifest_sha256": facts.manifest_sha256,
                "babel_import_formats": formats.join(",")
            }
        },
        "eval_library": {"name": "babel", "version": env!("CARGO_PKG_VERSION")},
        "model_info": {
            "name": facts.model,
            "id": facts.model,
            "developer": facts.developer,
            "additional_details": {
                "deployment_type": "unknown",
                "model_availability": "unknown"
            }
        },
        "evaluation_results": results,
        "detailed_evaluation_results": {
            "format": "jsonl",
            "file_path": facts.samples_path,
            "hash_algorithm": "sha256",
            "checksum": facts.samples_sha256,
            "total_rows": facts.group.rows()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_group_s_rows_come_back_in_order_however_groups_alternate() {
        let dir = tempfile::tempdir().unwrap();
        let mut spill = Spill::new(dir.path()).unwrap();
        let mut groups = [Group::default(), Group::default()];
        let mut expected = [String::new(), String::new()];
        // A row longer than one read-back, then rows whose groups alternate and repeat.
        let long = "x".repeat(COPY_BYTES as usize + 10);
        let rows = [
            (0, long.as_str()),
            (0, "a1"),
            (1, "b1"),
            (0, "a2"),
            (1, "b2"),
            (1, "b3"),
        ];
        for (group, row) in rows {
            spill.push(&mut groups[group], row).unwrap();
            expected[group] += &format!("{row}\n");
        }
        assert_eq!(groups[0].spans.len(), 2, "consecutive rows share a span");
        let spill = spill.finish().unwrap();
        for (group, expected) in groups.iter().zip(expected) {
            let mut out = Vec::new();
            copy_spans(&spill, &group.spans, &mut out, (dir.path(), dir.path())).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), expected);
        }
    }

    #[test]
    fn uuids_have_the_version_4_shape_and_depend_on_every_part() {
        let a = uuid_for("m", "r", "b", "v");
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"));
        assert_eq!(a, uuid_for("m", "r", "b", "v"));
        assert_ne!(a, uuid_for("m", "r", "b", "w"));
        assert_ne!(uuid_for("m", "rb", "", "v"), uuid_for("m", "r", "b", "v"));
    }

    #[test]
    fn path_components_are_portable() {
        assert_eq!(component("babel_mc:model=x"), "babel_mc_model=x");
        assert_eq!(component("data"), "_data");
        assert_eq!(component("con.txt"), "_con.txt");
        assert_eq!(component("a. "), "a");
        assert_eq!(
            model_path("EleutherAI/pythia-dummy", None),
            ("EleutherAI".into(), "pythia-dummy".into())
        );
        assert_eq!(
            model_path("dummy-a", None),
            ("unknown".into(), "dummy-a".into())
        );
        assert_eq!(
            model_path("a/b/c", Some("lab")),
            ("lab".into(), "b_c".into())
        );
    }
}
