//! Run lifecycle writes: create a run with its metadata, attach files, seal. Also the run
//! metadata rules (`--meta KEY=VALUE`, the types of known keys) and the adapters' view of
//! a run.

use serde_json::Value;
use std::io::{self, Read};
use std::path::PathBuf;

use super::history::Change;
use super::layout::{self, RunId, run_relative};
use super::manifest::{AttachmentEntry, RUN_MANIFEST_FORMAT, RunManifest, RunStatus};
use super::metadata::RunMetadata;
use super::transaction::{self, Transaction, abort_after};
use super::{ArchiveError, WriteSession};
use crate::adapters::RunContext;
use crate::canonical_json::CanonicalError;
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
    if let Some(problem) = number_problem(text) {
        return Err(usage(
            format!("--meta {key}={text}: {problem}"),
            Some(&format!(
                "quote it to keep it as text: --meta '{key}=\"{text}\"'"
            )),
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

/// Why a JSON number cannot be stored exactly, if it cannot: an integer beyond ±2^53 (RFC
/// 8785 numbers are doubles, so it would be rounded) or a number beyond the doubles'
/// range. `None` for text that is not a JSON number, and for a number that is fine.
fn number_problem(text: &str) -> Option<String> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (int, fraction) = match mantissa.split_once('.') {
        Some((int, fraction)) => (int, Some(fraction)),
        None => (mantissa, None),
    };
    let is_number = digits(int)
        && (int == "0" || !int.starts_with('0'))
        && fraction.is_none_or(digits)
        && exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
    if !is_number {
        return None;
    }
    if fraction.is_none() && exponent.is_none() {
        let exact = text
            .parse::<i128>()
            .ok()
            .filter(|n| n.unsigned_abs() <= 1 << 53);
        return exact.is_none().then(|| {
            "integers beyond ±2^53 (9007199254740992) cannot be stored exactly (RFC 8785 numbers are doubles)".to_owned()
        });
    }
    let value: f64 = text.parse().ok()?;
    (!value.is_finite()).then(|| "the number is beyond the range of a double".to_owned())
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
    let path = run_relative(run, layout::MANIFEST);
    let transaction = Transaction::begin(
        session,
        "run create",
        Vec::new(),
        vec![layout::RUNS.into(), run_relative(run, "")],
        path.clone(),
    )?;
    let whole = serde_json::to_value(&manifest).map_err(CanonicalError::from)?;
    transaction.commit(
        &bytes,
        Change::Create {
            path,
            manifest: whole,
        },
    )?;
    Ok(manifest)
}

/// Which registered files of a run a write checks against the run's manifest before it
/// builds on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilesToVerify {
    /// Every file (`seal`, export): size and SHA-256.
    All,
    /// The records files, which an import reads for the identities already in the run,
    /// by SHA-256; the others by size.
    Records,
}

/// Checks that the run's registered files are what its manifest says, before a write
/// builds on them: a file edited outside babel is refused with its path (and `babel
/// validate` named as the way to see every problem), never sealed or extended as it is.
pub fn verify_files(
    session: &WriteSession<'_>,
    run: &RunId,
    manifest: &RunManifest,
    which: FilesToVerify,
) -> Result<(), ArchiveError> {
    let layout = session.layout();
    for (relative, sha256, bytes, records) in manifest.registered_files() {
        let hash = records || which == FilesToVerify::All;
        let path = layout.resolve(&run_relative(run, relative));
        let damaged = |reason: String| ArchiveError::Damaged {
            path: path.clone(),
            reason: format!("{reason}; nothing was written"),
        };
        let meta = match path.symlink_metadata() {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(damaged(
                    "the run's manifest registers it, but it is gone".into(),
                ));
            }
            Err(e) => return Err(io_at("reading", &path)(e).into()),
        };
        if !meta.is_file() || meta.len() != bytes {
            return Err(damaged(format!(
                "it is not the {bytes}-byte file the run's manifest registers: it was changed outside babel"
            )));
        }
        if hash && crate::durable::digest_file(&path)?.sha256 != sha256 {
            return Err(damaged(
                "its SHA-256 is not the one the run's manifest registers: it was changed outside babel".into(),
            ));
        }
    }
    Ok(())
}

/// Loads a run for a write: it must exist, be open, and its manifest must be the one the
/// history recorded, checked before anything is planned or sized from it.
pub fn open_for_write(
    session: &WriteSession<'_>,
    run: &RunId,
) -> Result<RunManifest, ArchiveError> {
    let (bytes, manifest) = session.archive().run_manifest_read(run)?;
    transaction::verify_manifest(
        session.layout(),
        &run_relative(run, layout::MANIFEST),
        &bytes,
    )?;
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
    verify_files(session, run, &manifest, FilesToVerify::All)?;
    let sealed_at = now_rfc3339();
    manifest.status = RunStatus::Sealed;
    manifest.sealed_at = Some(sealed_at.clone());
    let bytes = manifest.to_bytes()?;
    let path = run_relative(run, layout::MANIFEST);
    let transaction = Transaction::begin(session, "seal", Vec::new(), Vec::new(), path.clone())?;
    transaction.commit(&bytes, Change::Seal { path, sealed_at })?;
    Ok(manifest)
}

/// Stores files as attachments of a run (producer results, configs, logs), byte for byte.
pub fn attach(
    session: &WriteSession<'_>,
    run: &RunId,
    files: &[PathBuf],
    max_size: u64,
) -> Result<RunManifest, ArchiveError> {
    let mut manifest = open_for_write(session, run)?;
    let planned = plan_attachments(run, &manifest, files, max_size)?;
    let transaction = Transaction::begin(
        session,
        "attach",
        planned.files(),
        planned.dirs(),
        run_relative(run, layout::MANIFEST),
    )?;
    let before = manifest.attachments.len();
    if let Err(error) = planned.store(&transaction, &mut manifest) {
        return Err(abort_after(transaction, error));
    }
    let bytes = match manifest.to_bytes() {
        Ok(bytes) => bytes,
        Err(error) => return Err(abort_after(transaction, error.into())),
    };
    let change = Change::Extend {
        path: run_relative(run, layout::MANIFEST),
        imports: Vec::new(),
        attachments: manifest.attachments[before..].to_vec(),
    };
    transaction.commit(&bytes, change)?;
    Ok(manifest)
}

/// Attachments checked and placed, ready to be copied inside a write's transaction (by
/// `attach`, or by an import that carries `--attach` files).
pub(crate) struct PlannedAttachments {
    /// Each source file and the run-relative path of its copy.
    copies: Vec<(PathBuf, String)>,
    run: RunId,
    /// The ceiling each copy is held to while it is made (a file may grow meanwhile).
    max_size: u64,
}

/// The option that raises the attachment ceiling.
const MAX_SIZE_OPTION: &str = "--max-attachment-size";

/// Checks that each file is a regular file within `max_size` bytes and that its name is
/// free in the run.
pub(crate) fn plan_attachments(
    run: &RunId,
    manifest: &RunManifest,
    files: &[PathBuf],
    max_size: u64,
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
        super::open_input(file, Some((max_size, MAX_SIZE_OPTION)))?;
        copies.push((file.clone(), path));
    }
    Ok(PlannedAttachments {
        copies,
        run: run.clone(),
        max_size,
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
            let dest = transaction.path(&run_relative(&self.run, path));
            let digest = copy_into(source, &dest, self.max_size)?;
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
    source: &std::path::Path,
    dest: &std::path::Path,
    max_size: u64,
) -> Result<crate::durable::ContentDigest, ArchiveError> {
    let (input, _) = super::open_input(source, Some((max_size, MAX_SIZE_OPTION)))?;
    let mut output = NewFile::create(dest)?;
    let copied = io::copy(&mut input.take(max_size + 1), output.writer())
        .map_err(io_at("copying", source))?;
    if copied > max_size {
        return Err(super::too_large(source, copied, max_size, MAX_SIZE_OPTION));
    }
    Ok(output.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn meta_numbers_that_cannot_be_stored_exactly_are_refused() {
        // FORMAT.md: integers beyond 2^53 are refused, not rounded.
        for refused in [
            "18446744073709551617",
            "9007199254740993",
            "-9007199254740993",
            "1e400",
            "-2e308",
        ] {
            assert!(parse_meta(&format!("n={refused}")).is_err(), "{refused}");
        }
        for kept in [
            "9007199254740992",
            "-9007199254740992",
            "1e20",
            "1.5",
            "0",
            "-0.5e-3",
        ] {
            assert!(
                parse_meta(&format!("n={kept}")).unwrap().1.is_number(),
                "{kept}"
            );
        }
        assert_eq!(
            parse_meta("n=\"18446744073709551617\"").unwrap().1,
            json!("18446744073709551617")
        );
        assert_eq!(parse_meta("v=1.2.3").unwrap().1, json!("1.2.3"));
    }

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
