//! Run lifecycle writes: create a run with its metadata, attach files, seal. Also the run
//! metadata rules (`--meta KEY=VALUE`, the types of known keys) and the adapters' view of
//! a run.

use serde_json::Value;
use std::fs::File;
use std::io;
use std::path::PathBuf;

use super::layout::{self, RunId, run_relative};
use super::manifest::{AttachmentEntry, RUN_MANIFEST_FORMAT, RunManifest, RunStatus};
use super::metadata::RunMetadata;
use super::transaction::{Transaction, abort_after};
use super::{ArchiveError, WriteSession};
use crate::adapters::RunContext;
use crate::clock::now_rfc3339;
use crate::durable::{NewFile, io_at};

/// What `babel run create` was given.
#[derive(Debug, Clone, Default)]
pub struct NewRun {
    pub model: String,
    pub benchmark: Option<String>,
    /// `--meta KEY=VALUE` pairs, values already parsed.
    pub meta: Vec<(String, Value)>,
}

fn usage(message: impl Into<String>, hint: Option<&str>) -> ArchiveError {
    ArchiveError::Usage {
        message: message.into(),
        hint: hint.map(str::to_owned),
    }
}

/// Parses one `--meta KEY=VALUE`: the value is JSON when it parses as JSON, else the
/// text itself (`--meta shared_answer_key=true` is a boolean, `--meta note=hello` a string;
/// quote to force a string: `--meta 'rev="123"'`).
pub fn parse_meta(argument: &str) -> Result<(String, Value), ArchiveError> {
    let Some((key, text)) = argument.split_once('=') else {
        return Err(usage(
            format!("--meta {argument:?} is not KEY=VALUE"),
            Some("write --meta KEY=VALUE, e.g. --meta dataset_revision=abc123"),
        ));
    };
    if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(usage(
            format!("metadata key {key:?} must be letters, digits, '_', '-' or '.'"),
            None,
        ));
    }
    // The text is JSON when it is exactly one JSON value (read strictly); `1, "x": 2`
    // would splice a second key into the wrapper, so only a one-key result counts.
    let wrapped = format!("{{\"v\":{text}}}");
    let value = match crate::jsonl::parse_line(&wrapped, 1, Default::default()) {
        Ok(mut line) if line.object.len() == 1 => line.object.shift_remove("v").unwrap_or_default(),
        _ => Value::String(text.to_owned()),
    };
    Ok((key.to_owned(), value))
}

/// The adapters' view of a run.
pub fn run_context(manifest: &RunManifest) -> RunContext {
    RunContext {
        run_id: manifest.run_id.clone(),
        model: manifest.model().to_owned(),
        benchmark: manifest.metadata.benchmark.clone(),
        correctness_metric: manifest.metadata.correctness_metric.clone(),
        shared_answer_key: manifest.metadata.shared_answer_key == Some(true),
        strict: manifest.is_strict(),
    }
}

/// Opens a new run.
pub fn create(
    session: &WriteSession<'_>,
    run: &RunId,
    new: NewRun,
) -> Result<RunManifest, ArchiveError> {
    let archive = session.archive();
    let folded = run.as_str().to_ascii_lowercase();
    for existing in archive.run_ids()? {
        if existing == *run {
            return Err(ArchiveError::RunExists {
                run: run.to_string(),
            });
        }
        if existing.as_str().to_ascii_lowercase() == folded {
            return Err(ArchiveError::RunCaseClash {
                run: run.to_string(),
                existing: existing.to_string(),
            });
        }
    }
    let mut metadata = RunMetadata::new(new.model);
    let benchmark = new
        .benchmark
        .map(|b| ("benchmark".to_owned(), Value::String(b)));
    for (key, value) in benchmark.into_iter().chain(new.meta) {
        let twice = key == "model" || metadata.to_map().contains_key(&key);
        metadata.set(key, value).map_err(|message| {
            usage(
                message,
                twice.then_some("--model and --benchmark set those keys; give each key once"),
            )
        })?;
    }
    super::artifacts::contract::prepare_strict_run(archive, run.as_str(), &mut metadata)?;
    let manifest = RunManifest {
        format: RUN_MANIFEST_FORMAT.into(),
        schema_version: 1,
        run_id: run.to_string(),
        status: RunStatus::Open,
        created_at: now_rfc3339(),
        sealed_at: None,
        metadata,
        imports: Vec::new(),
        attachments: Vec::new(),
    };
    let bytes = manifest.to_bytes()?;
    let transaction = Transaction::begin(
        session,
        "run create",
        Vec::new(),
        vec![layout::RUNS.into(), run_relative(run, "")],
        run_relative(run, layout::MANIFEST),
    )?;
    transaction.commit(&bytes)?;
    Ok(manifest)
}

/// Loads a run for writing: it must exist and be open.
pub fn open_for_write(
    session: &WriteSession<'_>,
    run: &RunId,
) -> Result<RunManifest, ArchiveError> {
    let manifest = session.archive().run_manifest(run)?;
    if manifest.status == RunStatus::Sealed {
        return Err(ArchiveError::RunSealed {
            run: run.to_string(),
        });
    }
    Ok(manifest)
}

/// Seals a run: status open → sealed; later writes are refused.
pub fn seal(session: &WriteSession<'_>, run: &RunId) -> Result<RunManifest, ArchiveError> {
    let mut manifest = open_for_write(session, run)?;
    manifest.status = RunStatus::Sealed;
    manifest.sealed_at = Some(now_rfc3339());
    let bytes = manifest.to_bytes()?;
    let transaction = Transaction::begin(
        session,
        "seal",
        Vec::new(),
        Vec::new(),
        run_relative(run, layout::MANIFEST),
    )?;
    transaction.commit(&bytes)?;
    Ok(manifest)
}

/// Stores files as attachments of a run (producer results, configs, logs), byte for byte.
pub fn attach(
    session: &WriteSession<'_>,
    run: &RunId,
    files: &[PathBuf],
) -> Result<RunManifest, ArchiveError> {
    let mut manifest = open_for_write(session, run)?;
    let planned = plan_attachments(run, &manifest, files)?;
    let transaction = Transaction::begin(
        session,
        "attach",
        planned.files(),
        planned.dirs(),
        run_relative(run, layout::MANIFEST),
    )?;
    if let Err(error) = planned.store(&transaction, &mut manifest) {
        return Err(abort_after(transaction, error));
    }
    let bytes = match manifest.to_bytes() {
        Ok(bytes) => bytes,
        Err(error) => return Err(abort_after(transaction, error.into())),
    };
    transaction.commit(&bytes)?;
    Ok(manifest)
}

/// Attachments checked and placed, ready to be copied inside a write's transaction (by
/// `attach`, or by an import that carries `--attach` files).
pub(crate) struct PlannedAttachments {
    /// Each source file and the run-relative path of its copy.
    copies: Vec<(PathBuf, String)>,
    run: RunId,
}

/// Checks that each file can be read and that its name is free in the run.
pub(crate) fn plan_attachments(
    run: &RunId,
    manifest: &RunManifest,
    files: &[PathBuf],
) -> Result<PlannedAttachments, ArchiveError> {
    let mut copies: Vec<(PathBuf, String)> = Vec::new();
    for file in files {
        let given = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| usage(format!("{} is not a file", file.display()), None))?;
        let path = layout::attachment_path(&layout::stored_basename(&given));
        let taken = manifest.attachments.iter().any(|a| a.path == path)
            || copies.iter().any(|(_, p)| *p == path);
        if taken {
            return Err(usage(
                format!("run {run} already has an attachment {path}"),
                Some("attachments are immutable; rename the file to keep both"),
            ));
        }
        File::open(file).map_err(io_at("opening", file))?;
        copies.push((file.clone(), path));
    }
    Ok(PlannedAttachments {
        copies,
        run: run.clone(),
    })
}

impl PlannedAttachments {
    /// The ROOT-relative files the write will create.
    pub(crate) fn files(&self) -> Vec<String> {
        self.copies
            .iter()
            .map(|(_, path)| run_relative(&self.run, path))
            .collect()
    }

    /// The folder they go in (none when nothing is attached).
    pub(crate) fn dirs(&self) -> Vec<String> {
        if self.copies.is_empty() {
            Vec::new()
        } else {
            vec![run_relative(&self.run, layout::ATTACHMENTS)]
        }
    }

    /// Copies every file (hashing it) and registers it in `manifest`.
    pub(crate) fn store(
        &self,
        transaction: &Transaction<'_>,
        manifest: &mut RunManifest,
    ) -> Result<(), ArchiveError> {
        for (source, path) in &self.copies {
            let digest = copy_into(source, &transaction.path(&run_relative(&self.run, path)))?;
            manifest.attachments.push(AttachmentEntry {
                path: path.clone(),
                sha256: digest.sha256,
                bytes: digest.bytes,
                added_at: now_rfc3339(),
            });
        }
        Ok(())
    }
}

fn copy_into(
    source: &PathBuf,
    dest: &std::path::Path,
) -> Result<crate::durable::ContentDigest, ArchiveError> {
    let mut input = File::open(source).map_err(io_at("opening", source))?;
    let mut output = NewFile::create(dest)?;
    io::copy(&mut input, output.writer()).map_err(io_at("copying", source))?;
    Ok(output.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn meta_values_are_json_when_they_parse_and_text_otherwise() {
        assert_eq!(parse_meta("shared_answer_key=true").unwrap().1, json!(true));
        assert_eq!(parse_meta("n=3").unwrap().1, json!(3));
        assert_eq!(
            parse_meta("defs={\"acc\":\"x\"}").unwrap().1,
            json!({"acc": "x"})
        );
        assert_eq!(
            parse_meta("note=hello world").unwrap().1,
            json!("hello world")
        );
        assert_eq!(parse_meta("rev=\"123\"").unwrap().1, json!("123"));
        assert_eq!(parse_meta("empty=").unwrap().1, json!(""));
        assert_eq!(
            parse_meta("note=1, \"x\": 2").unwrap().1,
            json!("1, \"x\": 2"),
            "one JSON value or text"
        );
        assert!(parse_meta("novalue").is_err());
        assert!(parse_meta("bad key=1").is_err());
        assert_eq!(
            parse_meta("dup={\"a\":1,\"a\":2}").unwrap().1,
            json!("{\"a\":1,\"a\":2}"),
            "duplicate keys are not JSON to us"
        );
    }
}
