//! The artifact registries: `item-banks/`, `protocols/`, `model-panels/`, `calibrations/`
//! and `releases/`. Each immutable ID holds `artifact.json` (the payload) and
//! `manifest.json` (its hash, size and pins), both RFC 8785 canonical JSON plus LF.
//!
//! Owns registration (one [`Transaction`] per `artifact add`, like every write), reading,
//! listing and pin resolution; the payload schemas live in [`payload`], the strict-run
//! contract in [`contract`], and the archive
//! side of the response matrix in [`matrix`]; validate checks artifacts in
//! `archive::validate`. It never changes a registered artifact and
//! never writes into a run.

pub mod contract;
pub mod matrix;
pub mod payload;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::io;
use std::path::Path;

use super::layout::{self, Layout, RunId, check_portable_id};
use super::manifest::{FileEntry, RunStatus};
use super::transaction::{self, Transaction, abort_after};
use super::{Archive, ArchiveError, WriteSession, read_json_object};
use crate::canonical_json::to_canonical_bytes;
use crate::clock::now_rfc3339;
use crate::durable::{self, digest_of, io_at};
use crate::jsonl::{self, FieldPath, NonFinitePolicy};
use crate::record::FieldError;
use contract::BenchmarkContract;
use payload::{ArtifactPin, Dependencies, Payload, Release, RunPin};

/// The `format` of an artifact manifest.
pub const ARTIFACT_MANIFEST_FORMAT: &str = "babel-artifact";
/// The payload file of an artifact.
pub const PAYLOAD_FILE: &str = "artifact.json";

/// The five kinds of registered artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    ItemBank,
    Protocol,
    ModelPanel,
    Calibration,
    Release,
}

impl Kind {
    /// Every kind, in registry order.
    pub const ALL: [Kind; 5] = [
        Kind::ItemBank,
        Kind::Protocol,
        Kind::ModelPanel,
        Kind::Calibration,
        Kind::Release,
    ];

    /// The name used on the command line and in pins (`item-bank`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::ItemBank => "item-bank",
            Kind::Protocol => "protocol",
            Kind::ModelPanel => "model-panel",
            Kind::Calibration => "calibration",
            Kind::Release => "release",
        }
    }

    /// The registry folder under ROOT (`item-banks`).
    pub fn registry(self) -> &'static str {
        let index = Self::ALL.iter().position(|k| *k == self).unwrap_or(0);
        layout::REGISTRIES[index]
    }

    /// The `format` value of this kind's payloads (`babel-item-bank`).
    pub fn format(self) -> &'static str {
        match self {
            Kind::ItemBank => "babel-item-bank",
            Kind::Protocol => "babel-protocol",
            Kind::ModelPanel => "babel-model-panel",
            Kind::Calibration => "babel-calibration",
            Kind::Release => "babel-release",
        }
    }

    /// Reads a kind from its name or its registry folder's name.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == text || k.registry() == text)
    }

    /// The kind names, for messages.
    pub fn names() -> String {
        Self::ALL.map(Kind::name).join(", ")
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A validated artifact ID (the portable ID rule runs use).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArtifactId(String);

impl ArtifactId {
    /// Validates `id` as an artifact ID.
    pub fn parse(id: &str) -> Result<Self, layout::RuleViolation> {
        check_portable_id(id).map(|()| Self(id.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ArtifactId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A pinned artifact as an artifact manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactPinEntry {
    pub kind: String,
    pub id: String,
    pub sha256: String,
}

/// A pinned run as an artifact manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunPinEntry {
    pub run_id: String,
    pub manifest_sha256: String,
}

/// Everything an artifact pins, as its manifest records it (derived from the payload).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestDependencies {
    pub artifacts: Vec<ArtifactPinEntry>,
    pub runs: Vec<RunPinEntry>,
}

impl From<&Dependencies> for ManifestDependencies {
    fn from(dependencies: &Dependencies) -> Self {
        Self {
            artifacts: dependencies
                .artifacts
                .iter()
                .map(|d| ArtifactPinEntry {
                    kind: d.kind.name().to_owned(),
                    id: d.pin.id.clone(),
                    sha256: d.pin.sha256.clone(),
                })
                .collect(),
            runs: dependencies
                .runs
                .iter()
                .map(|d| RunPinEntry {
                    run_id: d.pin.run_id.clone(),
                    manifest_sha256: d.pin.manifest_sha256.clone(),
                })
                .collect(),
        }
    }
}

/// `<registry>/<id>/manifest.json`: the artifact's commit point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactManifest {
    pub format: String,
    pub schema_version: u64,
    /// The kind's name (`item-bank`).
    pub kind: String,
    pub id: String,
    /// The payload file (`artifact.json`), its SHA-256 and size: the hash pins refer to.
    pub artifact: FileEntry,
    pub dependencies: ManifestDependencies,
    pub registered_at: String,
    pub babel_version: String,
}

/// Why an artifact operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// The payload file is not one strict JSON object.
    #[error("{file}: {message}")]
    Unreadable { file: String, message: String },
    /// The payload does not fit its kind's schema.
    #[error("{file}: {error}")]
    Invalid {
        file: String,
        kind: Kind,
        error: FieldError,
    },
    /// A different payload under an ID that is already registered.
    #[error(
        "{kind} {id:?} is already registered with another payload (registered SHA-256 {registered}, this payload {given})"
    )]
    Conflict {
        kind: Kind,
        id: String,
        registered: String,
        given: String,
    },
    /// An ID that differs from a registered one only in letter case.
    #[error("{kind} {id:?} differs from the registered {existing:?} only in letter case")]
    CaseClash {
        kind: Kind,
        id: String,
        existing: String,
    },
    /// Pins that do not resolve to what is registered.
    #[error("{file}: {}:{}", unresolved(.problems.len()), bulleted(.problems))]
    Unresolved {
        file: String,
        problems: Vec<FieldError>,
    },
    /// No artifact of that kind and ID.
    #[error("no {kind} {id:?} is registered")]
    Unknown { kind: Kind, id: String },
    /// A run's benchmark contract is malformed or does not resolve.
    #[error("run {run}: {}", list_inline(.problems))]
    Contract {
        run: String,
        problems: Vec<FieldError>,
    },
    /// Two strict runs measured under different contracts.
    #[error(transparent)]
    NotComparable(#[from] contract::NotComparable),
    /// A response matrix that cannot be built as asked.
    #[error("{message}")]
    Matrix {
        message: String,
        hint: Option<String>,
    },
}

fn unresolved(n: usize) -> String {
    if n == 1 {
        "1 pin does not resolve".into()
    } else {
        format!("{n} pins do not resolve")
    }
}

fn bulleted(problems: &[FieldError]) -> String {
    problems.iter().map(|p| format!("\n  {p}")).collect()
}

fn list_inline(problems: &[FieldError]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl ArtifactError {
    /// What the user can do next.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Unreadable { .. } => "a payload is one JSON object (UTF-8, no duplicate keys, no NaN or Infinity)".into(),
            Self::Invalid { kind, .. } => format!("ARTIFACTS.md describes the {kind} payload schema"),
            Self::Conflict { .. } => "registered artifacts are immutable; register the changed payload under a new ID (e.g. add a version suffix)".into(),
            Self::CaseClash { .. } => "IDs that differ only in case collide on macOS and Windows; choose another".into(),
            Self::Unresolved { .. } => "register what a payload pins first, and copy each pin's sha256 from `babel artifact show KIND ID` (a run pin is the SHA-256 of its manifest.json, and the run must be sealed)".into(),
            Self::Unknown { .. } => "`babel artifact list` shows what is registered".into(),
            Self::Contract { .. } => "a strict run pins a registered item bank and the protocol that applies to it; `babel run create RUN --model M --item-bank BANK --protocol PROTOCOL` writes the pins for you".into(),
            Self::NotComparable(error) => return Some(error.hint().into()),
            Self::Matrix { hint, .. } => return hint.clone(),
        })
    }
}

impl From<ArtifactError> for ArchiveError {
    fn from(error: ArtifactError) -> Self {
        ArchiveError::Artifact(Box::new(error))
    }
}

/// Refuses a registration that pins a run or an artifact whose manifest is not the one
/// the history recorded: the pins resolved against the files as they are, and a file
/// changed outside babel must not be pinned into the history.
fn verify_pins(layout: &Layout, dependencies: &Dependencies) -> Result<(), ArchiveError> {
    let Some(replay) = transaction::replay_for_write(layout)? else {
        return Ok(());
    };
    for run in &dependencies.runs {
        if let Ok(id) = RunId::parse(&run.pin.run_id) {
            // `resolve` found the manifest's SHA-256 to be the pin's.
            let path = layout::run_relative(&id, layout::MANIFEST);
            transaction::check_recorded(layout, &replay, &path, Some(&run.pin.manifest_sha256))?;
        }
    }
    for artifact in &dependencies.artifacts {
        let dir = artifact_dir(artifact.kind, &artifact.pin.id);
        let path = format!("{dir}/{}", layout::MANIFEST);
        let found = durable::digest_file(&layout.resolve(&path))?.sha256;
        transaction::check_recorded(layout, &replay, &path, Some(&found))?;
    }
    Ok(())
}

/// The ROOT-relative folder of an artifact.
pub fn artifact_dir(kind: Kind, id: &str) -> String {
    format!("{}/{id}", kind.registry())
}

/// A registered artifact, read and checked: its manifest, payload and the payload's
/// actual SHA-256.
#[derive(Debug, Clone)]
pub struct Registered {
    pub kind: Kind,
    pub id: String,
    pub manifest: ArtifactManifest,
    /// SHA-256 of the `artifact.json` bytes on disk (equal to the manifest's when intact).
    pub sha256: String,
    pub value: Value,
    pub payload: Payload,
}

impl Registered {
    /// The pin that refers to this artifact.
    pub fn pin(&self) -> ArtifactPin {
        ArtifactPin {
            id: self.id.clone(),
            sha256: self.sha256.clone(),
        }
    }
}

fn damaged(path: &Path, reason: impl Into<String>) -> ArchiveError {
    ArchiveError::Damaged {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// True when `kind`/`id` is registered (its manifest exists).
pub fn is_registered(archive: &Archive, kind: Kind, id: &str) -> bool {
    archive
        .layout()
        .resolve(&format!("{}/{}", artifact_dir(kind, id), layout::MANIFEST))
        .is_file()
}

/// Reads a registered artifact; its payload must still have the registered hash and fit
/// its schema (anything else is damage that `babel validate` details).
pub fn load(archive: &Archive, kind: Kind, id: &str) -> Result<Registered, ArchiveError> {
    if check_portable_id(id).is_err() || !is_registered(archive, kind, id) {
        return Err(ArtifactError::Unknown {
            kind,
            id: id.to_owned(),
        }
        .into());
    }
    let dir = artifact_dir(kind, id);
    let manifest_path = archive
        .layout()
        .resolve(&format!("{dir}/{}", layout::MANIFEST));
    let (_, value) = read_json_object(&manifest_path)?;
    let manifest: ArtifactManifest =
        serde_json::from_value(value).map_err(|e| damaged(&manifest_path, e.to_string()))?;
    if manifest.kind != kind.name() || manifest.id != id {
        return Err(damaged(
            &manifest_path,
            format!("it describes {} {:?}", manifest.kind, manifest.id),
        ));
    }
    let payload_path = archive.layout().resolve(&format!("{dir}/{PAYLOAD_FILE}"));
    let (bytes, value) = read_json_object(&payload_path)?;
    let sha256 = digest_of(&bytes).sha256;
    if sha256 != manifest.artifact.sha256 {
        return Err(damaged(
            &payload_path,
            format!(
                "SHA-256 {sha256} does not match the registered {}",
                manifest.artifact.sha256
            ),
        ));
    }
    let Value::Object(object) = value.clone() else {
        return Err(damaged(&payload_path, "not a JSON object"));
    };
    let payload =
        Payload::parse(kind, object).map_err(|e| damaged(&payload_path, e.to_string()))?;
    Ok(Registered {
        kind,
        id: id.to_owned(),
        manifest,
        sha256,
        value,
        payload,
    })
}

/// The largest payload file `artifact add` reads (into memory): the most babel reads of
/// any file it reads whole, 1 GiB.
const MAX_PAYLOAD_SIZE: u64 = crate::durable::SMALL_FILE_BYTES;

/// Reads a payload file as the user wrote it: one strict JSON object, in any layout
/// (pretty-printed or not); it is canonicalized before it is stored.
pub fn read_payload_file(file: &Path) -> Result<Map<String, Value>, ArchiveError> {
    let label = file.display().to_string();
    let unreadable = |message: String| ArtifactError::Unreadable {
        file: label.clone(),
        message,
    };
    let (input, size) = crate::archive::open_input(file, None)?;
    let too_large = || {
        unreadable(format!(
            "larger than {MAX_PAYLOAD_SIZE} bytes, the most a payload may hold"
        ))
    };
    if size > MAX_PAYLOAD_SIZE {
        return Err(too_large().into());
    }
    let mut bytes = Vec::with_capacity(size as usize);
    std::io::Read::read_to_end(
        &mut std::io::Read::take(input, MAX_PAYLOAD_SIZE + 1),
        &mut bytes,
    )
    .map_err(durable::io_at("reading", file))?;
    if bytes.len() as u64 > MAX_PAYLOAD_SIZE {
        return Err(too_large().into());
    }
    let bytes = bytes.strip_prefix(jsonl::BOM).unwrap_or(&bytes);
    let text = std::str::from_utf8(bytes)
        .map_err(|e| unreadable(format!("not UTF-8 (byte {})", e.valid_up_to() + 1)))?;
    // serde_json finds syntax errors with their line and column across a multi-line file;
    // the strict walk then refuses what serde_json accepts silently (duplicate keys).
    if let Err(error) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
        return Err(unreadable(format!("invalid JSON: {error}")).into());
    }
    let line = jsonl::parse_line(text, 1, NonFinitePolicy::Reject).map_err(|e| {
        let at = if e.path.is_root() {
            String::new()
        } else {
            format!("field {}: ", e.path)
        };
        unreadable(format!("{at}{}", e.message()))
    })?;
    Ok(line.object)
}

/// What `artifact add` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddOutcome {
    pub kind: Kind,
    pub id: String,
    /// SHA-256 of the stored `artifact.json`: what pins to this artifact carry.
    pub sha256: String,
    pub bytes: u64,
    /// False when the identical payload was already registered (nothing was written).
    pub created: bool,
}

/// Registers the payload in `file` as `kind`/`id`. Re-adding the identical payload is a
/// no-op; another payload under a registered ID is refused; every pin must resolve now.
pub fn add(
    session: &WriteSession<'_>,
    kind: Kind,
    id: &ArtifactId,
    file: &Path,
) -> Result<AddOutcome, ArchiveError> {
    let archive = session.archive();
    let object = read_payload_file(file)?;
    let label = file.display().to_string();
    let canonical = to_canonical_bytes(&Value::Object(object.clone()))?;
    let payload = Payload::parse(kind, object).map_err(|error| ArtifactError::Invalid {
        file: label.clone(),
        kind,
        error,
    })?;
    let digest = digest_of(&canonical);
    if is_registered(archive, kind, id.as_str()) {
        let existing = load(archive, kind, id.as_str())?;
        if existing.sha256 == digest.sha256 {
            return Ok(AddOutcome {
                kind,
                id: id.to_string(),
                sha256: digest.sha256,
                bytes: digest.bytes,
                created: false,
            });
        }
        return Err(ArtifactError::Conflict {
            kind,
            id: id.to_string(),
            registered: existing.sha256,
            given: digest.sha256,
        }
        .into());
    }
    if let Some(existing) = registered_ids(archive, kind)?
        .into_iter()
        .find(|other| other.eq_ignore_ascii_case(id.as_str()))
    {
        return Err(ArtifactError::CaseClash {
            kind,
            id: id.to_string(),
            existing,
        }
        .into());
    }
    let problems = resolve(archive, kind, &payload)?;
    if !problems.is_empty() {
        return Err(ArtifactError::Unresolved {
            file: label,
            problems,
        }
        .into());
    }
    verify_pins(session.layout(), &payload.dependencies())?;
    let dir = artifact_dir(kind, id.as_str());
    let payload_rel = format!("{dir}/{PAYLOAD_FILE}");
    let manifest = ArtifactManifest {
        format: ARTIFACT_MANIFEST_FORMAT.into(),
        schema_version: 1,
        kind: kind.name().into(),
        id: id.to_string(),
        artifact: FileEntry {
            path: PAYLOAD_FILE.into(),
            sha256: digest.sha256.clone(),
            bytes: digest.bytes,
        },
        dependencies: ManifestDependencies::from(&payload.dependencies()),
        registered_at: now_rfc3339(),
        babel_version: env!("CARGO_PKG_VERSION").into(),
    };
    let manifest_bytes = to_canonical_bytes(&manifest)?;
    let whole =
        serde_json::to_value(&manifest).map_err(crate::canonical_json::CanonicalError::from)?;
    let manifest_rel = format!("{dir}/{}", layout::MANIFEST);
    let transaction = Transaction::begin(
        session,
        "artifact add",
        vec![payload_rel.clone()],
        vec![kind.registry().into(), dir.clone()],
        manifest_rel.clone(),
    )?;
    if let Err(error) = durable::write_new(&transaction.path(&payload_rel), &canonical) {
        return Err(abort_after(transaction, error.into()));
    }
    let change = crate::archive::history::Change::Create {
        path: manifest_rel,
        manifest: whole,
    };
    transaction.commit(&manifest_bytes, change)?;
    Ok(AddOutcome {
        kind,
        id: id.to_string(),
        sha256: digest.sha256,
        bytes: digest.bytes,
        created: true,
    })
}

/// The IDs registered under `kind` (folders holding a manifest), sorted.
pub fn registered_ids(archive: &Archive, kind: Kind) -> Result<Vec<String>, ArchiveError> {
    let dir = archive.layout().resolve(kind.registry());
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_at("listing", &dir)(e).into()),
    };
    let mut ids = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_at("listing", &dir))?;
        if let Some(name) = entry.file_name().to_str()
            && check_portable_id(name).is_ok()
            && entry.path().join(layout::MANIFEST).is_file()
        {
            ids.push(name.to_owned());
        }
    }
    ids.sort();
    Ok(ids)
}

/// One line of `artifact list`: what the manifest says, unverified (validate verifies).
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    pub kind: &'static str,
    pub id: String,
    pub sha256: String,
    pub bytes: u64,
    pub registered_at: String,
    pub dependencies: ManifestDependencies,
}

/// The registered artifacts of one kind, or of all kinds, in registry and ID order.
pub fn list(archive: &Archive, kind: Option<Kind>) -> Result<Vec<Listed>, ArchiveError> {
    let kinds: Vec<Kind> = match kind {
        Some(kind) => vec![kind],
        None => Kind::ALL.to_vec(),
    };
    let mut out = Vec::new();
    for kind in kinds {
        for id in registered_ids(archive, kind)? {
            let path = archive.layout().resolve(&format!(
                "{}/{}",
                artifact_dir(kind, &id),
                layout::MANIFEST
            ));
            let (_, value) = read_json_object(&path)?;
            let manifest: ArtifactManifest =
                serde_json::from_value(value).map_err(|e| damaged(&path, e.to_string()))?;
            out.push(Listed {
                kind: kind.name(),
                id,
                sha256: manifest.artifact.sha256,
                bytes: manifest.artifact.bytes,
                registered_at: manifest.registered_at,
                dependencies: manifest.dependencies,
            });
        }
    }
    Ok(out)
}

/// The runs a calibration was computed from, as it pins them. Hub publishing includes
/// every one of them with the calibration.
pub fn calibration_input_runs(archive: &Archive, id: &str) -> Result<Vec<RunPin>, ArchiveError> {
    match load(archive, Kind::Calibration, id)?.payload {
        Payload::Calibration(calibration) => Ok(calibration.input_runs),
        _ => unreachable!("load parses a calibration payload for Kind::Calibration"),
    }
}

/// The input runs of every registered calibration, without repeats, sorted by run ID.
pub fn all_calibration_input_runs(archive: &Archive) -> Result<Vec<RunPin>, ArchiveError> {
    let mut runs = Vec::new();
    for id in registered_ids(archive, Kind::Calibration)? {
        runs.extend(calibration_input_runs(archive, &id)?);
    }
    runs.sort();
    runs.dedup();
    Ok(runs)
}

/// Every run a registered artifact pins (calibration inputs and release members), without
/// repeats, sorted by run ID: publishing the artifacts means publishing these runs too.
pub fn all_pinned_runs(archive: &Archive) -> Result<Vec<RunPin>, ArchiveError> {
    let mut runs = all_calibration_input_runs(archive)?;
    for id in registered_ids(archive, Kind::Release)? {
        runs.extend(release_members(archive, &id)?.runs);
    }
    runs.sort();
    runs.dedup();
    Ok(runs)
}

/// A release's members: its name, pinned artifacts and pinned runs.
pub fn release_members(archive: &Archive, id: &str) -> Result<Release, ArchiveError> {
    match load(archive, Kind::Release, id)?.payload {
        Payload::Release(release) => Ok(release),
        _ => unreachable!("load parses a release payload for Kind::Release"),
    }
}

/// Resolves pins against the archive once per artifact, remembering what it read.
struct Resolver<'a> {
    archive: &'a Archive,
    artifacts: HashMap<(Kind, String), Option<Registered>>,
}

/// A run whose pin resolved: its manifest.
struct PinnedRun {
    manifest: super::manifest::RunManifest,
}

impl<'a> Resolver<'a> {
    fn new(archive: &'a Archive) -> Self {
        Self {
            archive,
            artifacts: HashMap::new(),
        }
    }

    /// The registered artifact a pin names, or why the pin does not resolve.
    fn artifact(
        &mut self,
        kind: Kind,
        pin: &ArtifactPin,
        at: &FieldPath,
    ) -> Result<Result<&Registered, FieldError>, ArchiveError> {
        let key = (kind, pin.id.clone());
        if !self.artifacts.contains_key(&key) {
            let found = if is_registered(self.archive, kind, &pin.id) {
                match load(self.archive, kind, &pin.id) {
                    Ok(registered) => Some(registered),
                    Err(ArchiveError::Damaged { path, reason }) => {
                        return Ok(Err(FieldError::new(
                            at.clone(),
                            format!(
                                "{kind} {:?} is damaged ({}: {reason})",
                                pin.id,
                                path.display()
                            ),
                        )));
                    }
                    Err(other) => return Err(other),
                }
            } else {
                None
            };
            self.artifacts.insert(key.clone(), found);
        }
        Ok(match &self.artifacts[&key] {
            None => Err(FieldError::new(
                at.clone(),
                format!("{kind} {:?} is not registered", pin.id),
            )),
            Some(registered) if registered.sha256 != pin.sha256 => Err(FieldError::new(
                at.key("sha256"),
                format!(
                    "pins {kind} {:?} at SHA-256 {}, but its registered payload has {}",
                    pin.id, pin.sha256, registered.sha256
                ),
            )),
            Some(registered) => Ok(registered),
        })
    }

    /// The run a pin names, or why the pin does not resolve.
    fn run(
        &self,
        pin: &RunPin,
        at: &FieldPath,
    ) -> Result<Result<PinnedRun, FieldError>, ArchiveError> {
        let problem = |path: FieldPath, message: String| Ok(Err(FieldError::new(path, message)));
        let Ok(run) = RunId::parse(&pin.run_id) else {
            return problem(
                at.key("run_id"),
                format!("{:?} is not a run ID", pin.run_id),
            );
        };
        let path = self.archive.layout().run_dir(&run).join(layout::MANIFEST);
        if !path.is_file() {
            return problem(
                at.clone(),
                format!("run {:?} is not in this archive", pin.run_id),
            );
        }
        let sha256 = durable::digest_file(&path)?.sha256;
        if sha256 != pin.manifest_sha256 {
            return problem(
                at.key("manifest_sha256"),
                format!(
                    "pins run {:?} at manifest SHA-256 {}, but its manifest.json has {sha256}",
                    pin.run_id, pin.manifest_sha256
                ),
            );
        }
        let manifest = match self.archive.run_manifest(&run) {
            Ok(manifest) => manifest,
            Err(ArchiveError::Damaged { reason, .. }) => {
                return problem(
                    at.clone(),
                    format!("run {:?} is damaged: {reason}", pin.run_id),
                );
            }
            Err(other) => return Err(other),
        };
        if manifest.status != RunStatus::Sealed {
            return problem(
                at.clone(),
                format!(
                    "run {:?} is open; a pinned run must be sealed (`babel seal {}`), since every write changes its manifest",
                    pin.run_id, pin.run_id
                ),
            );
        }
        Ok(Ok(PinnedRun { manifest }))
    }
}

/// Every way the pins of `payload` fail to resolve, each at its field: pinned artifacts
/// and runs must be registered with exactly the pinned hash (runs sealed), and the kind's
/// consistency rules must hold (ARTIFACTS.md, "Pins").
pub fn resolve(
    archive: &Archive,
    kind: Kind,
    payload: &Payload,
) -> Result<Vec<FieldError>, ArchiveError> {
    let mut resolver = Resolver::new(archive);
    let mut problems = Vec::new();
    let dependencies = payload.dependencies();
    for dependency in &dependencies.artifacts {
        if let Err(problem) = resolver.artifact(dependency.kind, &dependency.pin, &dependency.at)? {
            problems.push(problem);
        }
    }
    let mut runs = Vec::new();
    for dependency in &dependencies.runs {
        match resolver.run(&dependency.pin, &dependency.at)? {
            Ok(run) => runs.push((dependency, run)),
            Err(problem) => problems.push(problem),
        }
    }
    if !problems.is_empty() {
        return Ok(problems);
    }
    match (kind, payload) {
        (Kind::Calibration, Payload::Calibration(calibration)) => {
            check_calibration(&mut resolver, calibration, &runs, &mut problems)?
        }
        (Kind::Release, Payload::Release(release)) => {
            check_release(&mut resolver, release, &runs, &mut problems)?
        }
        _ => {}
    }
    Ok(problems)
}

fn check_calibration(
    resolver: &mut Resolver<'_>,
    calibration: &payload::Calibration,
    runs: &[(&payload::RunDependency, PinnedRun)],
    problems: &mut Vec<FieldError>,
) -> Result<(), ArchiveError> {
    let root = FieldPath::root();
    let protocol = resolver
        .artifact(Kind::Protocol, &calibration.protocol, &root.key("protocol"))?
        .ok()
        .map(|r| r.payload.clone());
    if let Some(Payload::Protocol(protocol)) = protocol
        && protocol.item_bank != calibration.item_bank
    {
        problems.push(FieldError::new(
            root.key("protocol"),
            format!(
                "protocol {:?} applies to item bank {:?} at {}, not to the calibration's item_bank",
                calibration.protocol.id, protocol.item_bank.id, protocol.item_bank.sha256
            ),
        ));
    }
    let bank = resolver
        .artifact(
            Kind::ItemBank,
            &calibration.item_bank,
            &root.key("item_bank"),
        )?
        .ok()
        .map(|r| r.payload.clone());
    if let Some(Payload::ItemBank(bank)) = bank {
        for item in &calibration.parameterized_items {
            if !bank.items.iter().any(|i| &i.id == item) {
                problems.push(FieldError::new(
                    root.key("item_parameters").key(item),
                    format!(
                        "{item:?} is not an item of item bank {:?}",
                        calibration.item_bank.id
                    ),
                ));
            }
        }
    }
    let panel = match &calibration.model_panel {
        Some(pin) => match resolver
            .artifact(Kind::ModelPanel, pin, &root.key("model_panel"))?
            .ok()
            .map(|r| r.payload.clone())
        {
            Some(Payload::ModelPanel(panel)) => Some(panel),
            _ => None,
        },
        None => None,
    };
    for (dependency, run) in runs {
        let at = &dependency.at;
        match BenchmarkContract::of(&run.manifest.metadata) {
            Ok(Some(contract))
                if contract.item_bank == calibration.item_bank
                    && contract.protocol == calibration.protocol => {}
            Ok(_) => problems.push(FieldError::new(
                at.clone(),
                format!(
                    "run {:?} is not a strict run of item bank {:?} under protocol {:?} (its metadata benchmark_contract must pin both, at the calibration's hashes)",
                    dependency.pin.run_id, calibration.item_bank.id, calibration.protocol.id
                ),
            )),
            Err(error) => problems.push(FieldError::new(
                at.clone(),
                format!("run {:?}: {error}", dependency.pin.run_id),
            )),
        }
        if let Some(panel) = &panel {
            let model = run.manifest.model();
            match panel.models.iter().find(|m| m.model == model) {
                None => problems.push(FieldError::new(
                    at.clone(),
                    format!(
                        "run {:?} evaluates model {model:?}, which the model panel does not list",
                        dependency.pin.run_id
                    ),
                )),
                Some(entry) => {
                    let checkpoint = run.manifest.metadata.checkpoint.as_deref();
                    if let Some(checkpoint) = checkpoint
                        && !entry.checkpoints.is_empty()
                        && !entry.checkpoints.iter().any(|c| c == checkpoint)
                    {
                        problems.push(FieldError::new(
                            at.clone(),
                            format!(
                                "run {:?} is checkpoint {checkpoint:?} of {model:?}, which the model panel does not list",
                                dependency.pin.run_id
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

fn check_release(
    resolver: &mut Resolver<'_>,
    release: &Release,
    runs: &[(&payload::RunDependency, PinnedRun)],
    problems: &mut Vec<FieldError>,
) -> Result<(), ArchiveError> {
    let root = FieldPath::root();
    let has_artifact = |kind: Kind, pin: &ArtifactPin| {
        release
            .artifacts
            .iter()
            .any(|member| member.kind == kind && &member.pin == pin)
    };
    let has_run = |pin: &RunPin| release.runs.iter().any(|member| member == pin);
    for (i, member) in release.artifacts.iter().enumerate() {
        let at = root.key("artifacts").index(i);
        let Ok(registered) = resolver.artifact(member.kind, &member.pin, &at)? else {
            continue;
        };
        let dependencies = registered.payload.dependencies();
        for dependency in &dependencies.artifacts {
            if !has_artifact(dependency.kind, &dependency.pin) {
                problems.push(FieldError::new(
                    at.clone(),
                    format!(
                        "{} {:?} pins {} {:?} ({}), which the release does not list; a release holds everything its members pin",
                        member.kind, member.pin.id, dependency.kind, dependency.pin.id, dependency.at
                    ),
                ));
            }
        }
        for dependency in &dependencies.runs {
            if !has_run(&dependency.pin) {
                problems.push(FieldError::new(
                    at.clone(),
                    format!(
                        "{} {:?} pins run {:?} ({}), which the release does not list; a release holds everything its members pin",
                        member.kind, member.pin.id, dependency.pin.run_id, dependency.at
                    ),
                ));
            }
        }
    }
    for (dependency, run) in runs {
        if let Ok(Some(contract)) = BenchmarkContract::of(&run.manifest.metadata) {
            for (kind, pin) in [
                (Kind::ItemBank, &contract.item_bank),
                (Kind::Protocol, &contract.protocol),
            ] {
                if !has_artifact(kind, pin) {
                    problems.push(FieldError::new(
                        dependency.at.clone(),
                        format!(
                            "strict run {:?} pins {kind} {:?}, which the release does not list",
                            dependency.pin.run_id, pin.id
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}
