//! What `babel validate` checks about registered artifacts and strict runs. Each registry
//! entry: only `manifest.json` and `artifact.json`; the manifest strict, canonical and
//! describing this kind and ID; the payload a regular file with its registered size and
//! SHA-256, canonical, schema-valid, listing the dependencies the manifest records; every
//! pin resolving (artifacts at their exact hash, runs at their exact manifest hash and
//! sealed). Strict runs: the contract resolves, and every stored record is an instance of
//! the bank carrying one of the protocol's filters (the records files are streamed, four
//! fields of each line parsed; everything else about a record is `archive::validate`'s).
//!
//! Reads only; findings are returned to the validate module, which reports them.

use std::fs;
use std::path::Path;

use super::Finding;
use crate::archive::artifacts::contract::{BankIndex, resolve_contract};
use crate::archive::artifacts::payload::Payload;
use crate::archive::artifacts::{
    ARTIFACT_MANIFEST_FORMAT, ArtifactManifest, Kind, ManifestDependencies, PAYLOAD_FILE,
    artifact_dir, resolve,
};
use crate::archive::layout::{self, RunId, check_portable_id, run_relative};
use crate::archive::manifest::RunManifest;
use crate::archive::read;
use crate::archive::records::{Column, Columns};
use crate::archive::{Archive, ArchiveError, read_json_object};
use crate::canonical_json::{is_canonical, to_canonical_bytes};
use crate::durable::{digest_of, io_at};

/// Findings about the registries, and how many files were checked.
#[derive(Debug, Default)]
pub struct RegistryReport {
    pub findings: Vec<Finding>,
    /// Files read and checked (manifests and payloads).
    pub files: u64,
}

impl RegistryReport {
    fn add(&mut self, path: impl Into<String>, check: &'static str, message: impl Into<String>) {
        self.findings.push(Finding {
            row: None,
            path: path.into(),
            line: None,
            check,
            message: message.into(),
        });
    }
}

/// Checks every registry and every artifact in it.
pub fn check_registries(archive: &Archive) -> Result<RegistryReport, ArchiveError> {
    let mut report = RegistryReport::default();
    for kind in Kind::ALL {
        let dir = archive.layout().resolve(kind.registry());
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            // A registry with nothing in it cannot travel through a download; `babel init`
            // recreates the empty folder, and nothing is registered there.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_at("listing", &dir)(e).into()),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_at("listing", &dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = format!("{}/{name}", kind.registry());
            let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if !is_dir {
                report.add(relative, "untracked", "not an artifact folder");
            } else if let Err(violation) = check_portable_id(&name) {
                report.add(relative, "layout", violation.to_string());
            } else if entry
                .path()
                .join(layout::MANIFEST)
                .symlink_metadata()
                .is_err()
            {
                report.add(
                    relative,
                    "layout",
                    "an artifact folder without manifest.json: restore the manifest from a copy of the archive, or remove the folder if it holds nothing you need",
                );
            } else {
                names.push(name);
            }
        }
        names.sort();
        for (i, name) in names.iter().enumerate() {
            if let Some(other) = names[..i].iter().find(|o| o.eq_ignore_ascii_case(name)) {
                report.add(
                    artifact_dir(kind, name),
                    "layout",
                    format!("differs from {kind} {other:?} only in letter case; they collide on macOS and Windows"),
                );
            }
            check_artifact(archive, kind, name, &mut report)?;
        }
    }
    Ok(report)
}

fn check_artifact(
    archive: &Archive,
    kind: Kind,
    id: &str,
    report: &mut RegistryReport,
) -> Result<(), ArchiveError> {
    let dir = artifact_dir(kind, id);
    check_untracked(archive, &dir, report)?;
    let manifest_rel = format!("{dir}/{}", layout::MANIFEST);
    let Some(manifest) = check_manifest(archive, kind, id, &manifest_rel, report)? else {
        return Ok(());
    };
    let payload_rel = format!("{dir}/{PAYLOAD_FILE}");
    let path = archive.layout().resolve(&payload_rel);
    if !is_regular_file(&path, &payload_rel, report) {
        return Ok(());
    }
    report.files += 1;
    let (bytes, value) = match read_json_object(&path) {
        Ok(read) => read,
        Err(ArchiveError::Damaged { reason, .. }) => {
            let digest = crate::durable::digest_file(&path)?;
            compare_digest(&payload_rel, &manifest, &digest, report);
            report.add(&payload_rel, "payload", reason);
            return Ok(());
        }
        Err(other) => return Err(other),
    };
    let digest = digest_of(&bytes);
    compare_digest(&payload_rel, &manifest, &digest, report);
    if !is_canonical(&bytes, &value) {
        report.add(
            &payload_rel,
            "canonical",
            "the payload is not RFC 8785 canonical JSON followed by LF",
        );
    }
    let serde_json::Value::Object(object) = value else {
        return Ok(());
    };
    let payload = match Payload::parse(kind, object) {
        Ok(payload) => payload,
        Err(error) => {
            report.add(&payload_rel, "schema", error.to_string());
            return Ok(());
        }
    };
    if ManifestDependencies::from(&payload.dependencies()) != manifest.dependencies {
        report.add(
            &manifest_rel,
            "dependencies",
            "the dependencies listed in the manifest differ from the pins of the payload",
        );
    }
    for problem in resolve(archive, kind, &payload)? {
        report.add(&payload_rel, "dependency", problem.to_string());
    }
    Ok(())
}

/// True when `path` is a regular file itself (not a symlink to one, as for registered run
/// files); otherwise the finding is added.
fn is_regular_file(path: &Path, relative: &str, report: &mut RegistryReport) -> bool {
    match path.symlink_metadata() {
        Err(_) => {
            report.add(relative, "missing", "a registered file is missing");
            false
        }
        Ok(meta) if !meta.file_type().is_file() => {
            report.add(
                relative,
                "file-type",
                "a registered file is not a regular file (a symlink or folder)",
            );
            false
        }
        Ok(_) => true,
    }
}

fn compare_digest(
    relative: &str,
    manifest: &ArtifactManifest,
    found: &crate::durable::ContentDigest,
    report: &mut RegistryReport,
) {
    if found.bytes != manifest.artifact.bytes {
        report.add(
            relative,
            "size",
            format!(
                "{} bytes, but the manifest registers {}",
                found.bytes, manifest.artifact.bytes
            ),
        );
    }
    if found.sha256 != manifest.artifact.sha256 {
        report.add(
            relative,
            "sha256",
            format!(
                "SHA-256 {} does not match the registered {}",
                found.sha256, manifest.artifact.sha256
            ),
        );
    }
}

fn check_manifest(
    archive: &Archive,
    kind: Kind,
    id: &str,
    relative: &str,
    report: &mut RegistryReport,
) -> Result<Option<ArtifactManifest>, ArchiveError> {
    let path = archive.layout().resolve(relative);
    if !is_regular_file(&path, relative, report) {
        return Ok(None);
    }
    let (bytes, value) = match read_json_object(&path) {
        Ok(read) => read,
        Err(ArchiveError::Damaged { reason, .. }) => {
            report.add(relative, "manifest", reason);
            return Ok(None);
        }
        Err(other) => return Err(other),
    };
    report.files += 1;
    if !is_canonical(&bytes, &value) {
        report.add(
            relative,
            "canonical",
            "the manifest is not RFC 8785 canonical JSON followed by LF",
        );
    }
    let manifest: ArtifactManifest = match serde_json::from_value(value.clone()) {
        Ok(manifest) => manifest,
        Err(error) => {
            report.add(
                relative,
                "manifest",
                format!("not an artifact manifest: {error}"),
            );
            return Ok(None);
        }
    };
    if to_canonical_bytes(&manifest).ok() != to_canonical_bytes(&value).ok() {
        report.add(
            relative,
            "manifest",
            "it holds fields babel does not write (missing keys read as null?)",
        );
    }
    if !crate::clock::is_rfc3339_utc(&manifest.registered_at) {
        report.add(
            relative,
            "manifest",
            format!(
                "registered_at {:?} is not an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SSZ)",
                manifest.registered_at
            ),
        );
    }
    if !crate::archive::manifest::is_version(&manifest.babel_version) {
        report.add(
            relative,
            "manifest",
            format!(
                "babel_version {:?} is not a version",
                manifest.babel_version
            ),
        );
    }
    if manifest.format != ARTIFACT_MANIFEST_FORMAT || manifest.schema_version != 1 {
        report.add(
            relative,
            "manifest",
            format!(
                "unknown manifest format {:?} version {}",
                manifest.format, manifest.schema_version
            ),
        );
    }
    if manifest.kind != kind.name() || manifest.id != id {
        report.add(
            relative,
            "manifest",
            format!(
                "it describes {} {:?} but lives in {}",
                manifest.kind,
                manifest.id,
                artifact_dir(kind, id)
            ),
        );
    }
    if manifest.artifact.path != PAYLOAD_FILE {
        report.add(
            relative,
            "manifest",
            format!(
                "the payload path {:?} is not {PAYLOAD_FILE}",
                manifest.artifact.path
            ),
        );
        return Ok(None);
    }
    Ok(Some(manifest))
}

fn check_untracked(
    archive: &Archive,
    dir: &str,
    report: &mut RegistryReport,
) -> Result<(), ArchiveError> {
    let path = archive.layout().resolve(dir);
    let entries = fs::read_dir(&path).map_err(io_at("listing", &path))?;
    let mut names: Vec<(String, fs::FileType)> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_at("listing", &path))?;
        let file_type = entry.file_type().map_err(io_at("reading", &entry.path()))?;
        names.push((entry.file_name().to_string_lossy().into_owned(), file_type));
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, file_type) in names {
        // The two registered names are checked where they are read (check_manifest and
        // check_artifact), which also refuse a symlink or folder in their place.
        if name == layout::MANIFEST || name == PAYLOAD_FILE {
            continue;
        }
        let what = if file_type.is_dir() {
            "a folder no manifest registers"
        } else if name.ends_with(layout::NEW_SUFFIX) {
            "an uncommitted manifest (an interrupted write; `babel init` removes it)"
        } else {
            "a file no manifest registers"
        };
        report.add(format!("{dir}/{name}"), "untracked", what);
    }
    Ok(())
}

/// How many contract findings one records file may add before the rest are counted.
const MAX_CONTRACT_FINDINGS_PER_FILE: usize = 50;

/// Findings about a strict run's contract (none for a general run): the contract resolves,
/// and every stored record is an instance of the bank carrying one of the protocol's
/// filters, as import made sure. Records changed after import (and rehashed into the
/// manifest, so the hashes agree) are caught here.
pub fn check_run_contract(
    archive: &Archive,
    run: &RunId,
    manifest: &RunManifest,
) -> Result<Vec<Finding>, ArchiveError> {
    match resolve_contract(archive, &manifest.metadata)? {
        Ok(None) => Ok(Vec::new()),
        Ok(Some(resolved)) => {
            check_strict_records(archive, run, manifest, &BankIndex::of(&resolved))
        }
        Err(problems) => {
            let path = run_relative(run, layout::MANIFEST);
            Ok(problems
                .into_iter()
                .map(|problem| Finding {
                    row: None,
                    path: path.clone(),
                    line: None,
                    check: "contract",
                    message: problem.to_string(),
                })
                .collect())
        }
    }
}

fn check_strict_records(
    archive: &Archive,
    run: &RunId,
    manifest: &RunManifest,
    index: &BankIndex,
) -> Result<Vec<Finding>, ArchiveError> {
    let mut findings = Vec::new();
    let columns = Columns::of(&[
        Column::Language,
        Column::Script,
        Column::QuestionId,
        Column::Filter,
    ]);
    for entry in &manifest.imports {
        let relative = run_relative(run, &entry.records.path);
        let path = archive.layout().resolve(&relative);
        // A missing, irregular or unreadable records file is validate's own finding.
        if !path
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_file())
        {
            continue;
        }
        let Ok(batches) = read::batches(archive, run, entry, columns) else {
            continue;
        };
        let mut listed = 0usize;
        let mut unlisted = 0usize;
        let mut row_number = 0u64;
        for batch in batches {
            // A records file that does not decode is reported by the run's own checks.
            let Ok(batch) = batch else {
                break;
            };
            for row in 0..batch.len() {
                row_number += 1;
                let language = batch.text(Column::Language, row);
                // A strict record without a script is validate's schema finding; the
                // contract adds nothing to it.
                let Some(script) = batch.text(Column::Script, row) else {
                    continue;
                };
                let Err(outside) = index.check_fields(
                    language,
                    Some(script),
                    batch.text(Column::QuestionId, row).unwrap_or_default(),
                    batch.text(Column::Filter, row).unwrap_or_default(),
                ) else {
                    continue;
                };
                if listed == MAX_CONTRACT_FINDINGS_PER_FILE {
                    unlisted += 1;
                    continue;
                }
                listed += 1;
                let message = if outside.path.is_root() {
                    outside.message
                } else {
                    format!("field {}: {}", outside.path, outside.message)
                };
                findings.push(Finding {
                    path: relative.clone(),
                    line: None,
                    row: Some(row_number),
                    check: "contract",
                    message,
                });
            }
        }
        if unlisted > 0 {
            findings.push(Finding {
                path: relative.clone(),
                line: None,
                row: None,
                check: "contract",
                message: format!(
                    "{unlisted} more records outside the run's contract are not listed"
                ),
            });
        }
    }
    Ok(findings)
}
