//! The `--json` outputs of the commands whose data has no serializable form of its own:
//! one struct per command, built from what the archive and the Hub return. Serialized with
//! serde_json (fields in declaration order), each is the exact shape FORMAT.md documents
//! under "Command output (--json)". The other commands print a library type as it is
//! (`ValidationReport`, `CompareOutcome`, `PanelOutcome`, the bundle, export and Hub push
//! and pull reports).
//!
//! It reads nothing and writes nothing: what it describes is computed elsewhere.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::archive::artifacts::{AddOutcome, ArtifactManifest, Listed, Registered};
use crate::archive::history::{Entry, History};
use crate::archive::import::ImportReport;
use crate::archive::manifest::{AttachmentEntry, CountEntry, ImportEntry, RunManifest, RunStatus};
use crate::hub::RepoId;
use crate::hub::plan::{Comparison, FileStatus, LocalPlan, Remote};

/// `babel import --json`: what the import published.
#[derive(Debug, Clone, Serialize)]
pub struct ImportOutput {
    pub run: String,
    pub imports: Vec<ImportedFileOutput>,
    /// Run-relative paths of the files attached in the same transaction.
    pub attachments: Vec<String>,
}

/// One imported file: its import number, the path as given, the ROOT-relative raw copy.
#[derive(Debug, Clone, Serialize)]
pub struct ImportedFileOutput {
    pub seq: u64,
    pub file: String,
    pub raw_path: String,
    pub records: u64,
}

impl From<&ImportReport> for ImportOutput {
    fn from(report: &ImportReport) -> Self {
        Self {
            run: report.run.clone(),
            imports: report
                .files
                .iter()
                .map(|f| ImportedFileOutput {
                    seq: f.seq,
                    file: f.given.display().to_string(),
                    raw_path: f.raw_path.clone(),
                    records: f.records,
                })
                .collect(),
            attachments: report.attachments.clone(),
        }
    }
}

/// One run as `babel list --json` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub run_id: String,
    pub status: RunStatus,
    pub model: String,
    pub benchmark: Option<String>,
    pub strict: bool,
    /// How many imports the run holds.
    pub imports: usize,
    pub records: u64,
    /// Records per (benchmark, language, variant) over all imports.
    pub counts: Vec<CountEntry>,
}

impl From<&RunManifest> for RunSummary {
    fn from(manifest: &RunManifest) -> Self {
        Self {
            run_id: manifest.run_id.clone(),
            status: manifest.status,
            model: manifest.model().to_owned(),
            benchmark: manifest.metadata.benchmark.clone(),
            strict: manifest.is_strict(),
            imports: manifest.imports.len(),
            records: manifest.record_count(),
            counts: manifest.totals(),
        }
    }
}

/// `babel list --json`: the runs that read, and the runs that did not.
#[derive(Debug, Clone, Serialize)]
pub struct RunList {
    pub runs: Vec<RunSummary>,
    pub damaged: Vec<DamagedRun>,
}

/// A run whose manifest cannot be read, and why.
#[derive(Debug, Clone, Serialize)]
pub struct DamagedRun {
    pub run_id: String,
    pub damaged: String,
}

/// `babel show --json`: one run whole, its imports and attachments as the manifest holds
/// them.
#[derive(Debug, Clone, Serialize)]
pub struct RunDetail {
    pub run_id: String,
    pub status: RunStatus,
    pub model: String,
    pub benchmark: Option<String>,
    pub strict: bool,
    pub imports: Vec<ImportEntry>,
    pub records: u64,
    pub counts: Vec<CountEntry>,
    pub created_at: String,
    pub sealed_at: Option<String>,
    pub metadata: Map<String, Value>,
    pub attachments: Vec<AttachmentEntry>,
}

impl From<&RunManifest> for RunDetail {
    fn from(manifest: &RunManifest) -> Self {
        let summary = RunSummary::from(manifest);
        Self {
            run_id: summary.run_id,
            status: summary.status,
            model: summary.model,
            benchmark: summary.benchmark,
            strict: summary.strict,
            imports: manifest.imports.clone(),
            records: summary.records,
            counts: summary.counts,
            created_at: manifest.created_at.clone(),
            sealed_at: manifest.sealed_at.clone(),
            metadata: manifest.metadata.to_map(),
            attachments: manifest.attachments.clone(),
        }
    }
}

/// `babel log --json`: the history head, its problems, and the entries shown.
#[derive(Debug, Clone, Serialize)]
pub struct LogOutput<'a> {
    /// `SEQ:SHA256`, as `validate --since` takes it; null for an empty history.
    pub head: Option<String>,
    pub problems: Vec<HistoryProblem>,
    pub entries: Vec<LogEntry<'a>>,
}

/// A problem of the history: its file, line (null for the whole file) and what is wrong.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryProblem {
    pub path: String,
    pub line: Option<u64>,
    pub message: String,
}

/// One history entry as stored, with the SHA-256 of its line.
#[derive(Debug, Clone, Serialize)]
pub struct LogEntry<'a> {
    #[serde(flatten)]
    pub entry: &'a Entry,
    pub sha256: &'a str,
}

impl<'a> LogOutput<'a> {
    /// The output for `history`, showing the entries `shown` (entry and line hash pairs).
    pub fn new(history: &History, shown: &[(&'a Entry, &'a String)]) -> Self {
        Self {
            head: history.head().map(|h| h.to_string()),
            problems: history
                .problems
                .iter()
                .map(|(path, line, message)| HistoryProblem {
                    path: (*path).to_owned(),
                    line: *line,
                    message: message.clone(),
                })
                .collect(),
            entries: shown
                .iter()
                .map(|(entry, sha256)| LogEntry { entry, sha256 })
                .collect(),
        }
    }
}

/// `babel artifact add --json`: what was registered.
#[derive(Debug, Clone, Serialize)]
pub struct ArtifactAdded {
    pub kind: &'static str,
    pub id: String,
    /// SHA-256 of the stored `artifact.json`: what pins to it carry.
    pub sha256: String,
    pub bytes: u64,
    /// False when the identical payload was already registered.
    pub created: bool,
}

impl From<&AddOutcome> for ArtifactAdded {
    fn from(outcome: &AddOutcome) -> Self {
        Self {
            kind: outcome.kind.name(),
            id: outcome.id.clone(),
            sha256: outcome.sha256.clone(),
            bytes: outcome.bytes,
            created: outcome.created,
        }
    }
}

/// `babel artifact show --json`: the manifest and the whole payload.
#[derive(Debug, Clone, Serialize)]
pub struct ArtifactShown<'a> {
    pub manifest: &'a ArtifactManifest,
    pub payload: &'a Value,
}

impl<'a> From<&'a Registered> for ArtifactShown<'a> {
    fn from(registered: &'a Registered) -> Self {
        Self {
            manifest: &registered.manifest,
            payload: &registered.value,
        }
    }
}

/// `babel artifact list --json`.
#[derive(Debug, Clone, Serialize)]
pub struct ArtifactList {
    pub artifacts: Vec<Listed>,
}

/// `babel hub-plan --json`: the files a push would publish, compared with the repository
/// when it could be reached.
#[derive(Debug, Clone, Serialize)]
pub struct HubPlanOutput {
    pub repo: String,
    pub runs: Vec<String>,
    pub whole_archive: bool,
    pub remote: RemoteOutput,
    pub files: Vec<PlannedFileOutput>,
    pub not_published: Vec<String>,
    pub bytes: u64,
    /// The remote files a push would delete; null when the repository was not reached.
    pub deletions: Option<Vec<String>>,
}

/// What the plan knows of the repository.
#[derive(Debug, Clone, Serialize)]
pub struct RemoteOutput {
    pub state: RemoteState,
    /// The head commit of main, when there is one.
    pub head: Option<String>,
    /// Why the repository could not be reached.
    pub error: Option<String>,
}

/// Whether the repository could be compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RemoteState {
    /// It does not exist, or the token cannot see it: every file is new.
    Missing,
    Reachable,
    Unreachable,
}

/// One planned file; `status` is null when the repository was not reached.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedFileOutput {
    pub path: String,
    pub size: u64,
    pub sha256: String,
    pub status: Option<FileStatus>,
}

impl HubPlanOutput {
    /// The plan of `local` for `repo`, against `remote` (or why it could not be reached)
    /// as `comparison` compares them.
    pub fn new(
        repo: &RepoId,
        local: &LocalPlan,
        remote: Result<&Remote, String>,
        comparison: Option<&Comparison>,
    ) -> Self {
        let (state, head, error) = match remote {
            Ok(Remote::Missing) => (RemoteState::Missing, None, None),
            Ok(Remote::At { head, .. }) => (
                RemoteState::Reachable,
                head.as_ref().map(|h| h.to_string()),
                None,
            ),
            Err(error) => (RemoteState::Unreachable, None, Some(error)),
        };
        Self {
            repo: repo.to_string(),
            runs: local.runs.iter().map(ToString::to_string).collect(),
            whole_archive: local.whole,
            remote: RemoteOutput { state, head, error },
            files: local
                .files
                .iter()
                .enumerate()
                .map(|(i, f)| PlannedFileOutput {
                    path: f.path.clone(),
                    size: f.size,
                    sha256: f.sha256.clone(),
                    status: comparison.map(|c| c.statuses[i]),
                })
                .collect(),
            not_published: local.not_published.clone(),
            bytes: local.bytes(),
            deletions: comparison.map(|c| c.deletions.clone()),
        }
    }
}
