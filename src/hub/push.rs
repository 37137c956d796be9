//! `hub-push`: publishes the plan as one commit on `main`, the way the official client
//! uploads a folder: preupload (the Hub decides, per file, git or LFS, and babel uses its
//! answer as given), the LFS batch API with the "basic" transfer for LFS files (PUT to the
//! presigned URL, then verify), then the NDJSON commit carrying regular files inline,
//! LFS files by SHA-256, and deletions.
//!
//! The commit names the head babel planned against as its parent, so a concurrent push by
//! someone else is refused by the Hub (HTTP 412) instead of being overwritten; babel then
//! reports it and never retries the commit. Unchanged files are not sent again; when the
//! head already holds the plan, no commit is made. The caller holds the archive's writer
//! lock (a [`WriteSession`]), so no write changes the archive while it is read.

use std::sync::Arc;

use serde::Serialize;

use super::api::{
    BatchAnswer, CommitOp, FileSource, PreuploadFile, SAMPLE_BYTES, TreeFile, UploadMode,
};
use super::client::HubClient;
use super::plan::{self, FileStatus, LocalPlan, PlannedFile, Remote, Selection};
use super::{CommitId, HubError, Progress, RepoId};
use crate::archive::WriteSession;
use crate::durable::io_at;

/// What `hub-push` was asked to do besides the selection.
#[derive(Debug, Clone, Default)]
pub struct PushOptions {
    /// Create the repository when it does not exist.
    pub create: bool,
    /// With `create`: make the new repository private.
    pub private: bool,
    /// The commit title (default: a summary of what is published).
    pub message: Option<String>,
}

/// How a commit's description names the history head it publishes; `hub-pull` reads it
/// back.
pub const HEAD_PREFIX: &str = "babel archive history head ";

/// What a push did.
#[derive(Debug, Clone, Serialize)]
pub struct PushReport {
    pub repo: String,
    /// The commit the branch points at now: the new one, or the unchanged head.
    pub commit: String,
    /// False when the head already held this archive (no commit was made).
    pub committed: bool,
    /// The head the push was planned against.
    pub parent: Option<String>,
    pub created_repo: bool,
    pub runs: Vec<String>,
    pub files: usize,
    /// Files sent (new or changed), of which `lfs` as LFS objects.
    pub sent: usize,
    pub lfs: usize,
    /// LFS objects the Hub already had (not uploaded again).
    pub lfs_already_stored: usize,
    pub unchanged: usize,
    pub deleted: Vec<String>,
    /// The archive's history head (`SEQ:SHA256`) the push publishes, named in the commit
    /// description.
    pub history_head: Option<String>,
}

/// Reads up to the first 512 bytes of a planned file, for preupload.
fn sample(file: &PlannedFile) -> Result<Vec<u8>, HubError> {
    match &file.source {
        FileSource::Memory(bytes) => Ok(bytes[..bytes.len().min(SAMPLE_BYTES)].to_vec()),
        FileSource::Disk(path) => {
            use std::io::Read;
            let mut sample = Vec::with_capacity(SAMPLE_BYTES);
            std::fs::File::open(path)
                .and_then(|f| f.take(SAMPLE_BYTES as u64).read_to_end(&mut sample))
                .map_err(io_at("reading", path))?;
            Ok(sample)
        }
    }
}

fn summary(local: &LocalPlan) -> String {
    format!(
        "babel hub-push: {} run(s), {} file(s)",
        local.runs.len(),
        local.files.len()
    )
}

/// Publishes the plan of `selection` to `repo` in one commit.
pub fn push(
    session: &WriteSession<'_>,
    client: &HubClient,
    repo: &RepoId,
    selection: &Selection,
    options: &PushOptions,
    progress: Arc<dyn Progress>,
) -> Result<PushReport, HubError> {
    let local = plan::plan_local(session.archive(), selection)?;
    let (created_repo, head, files) = remote_head(client, repo, options)?;
    let comparison = plan::compare(&local, &files);
    let mut report = PushReport {
        repo: repo.to_string(),
        commit: String::new(),
        committed: false,
        parent: head.as_ref().map(ToString::to_string),
        created_repo,
        runs: local.runs.iter().map(ToString::to_string).collect(),
        files: local.files.len(),
        sent: 0,
        lfs: 0,
        lfs_already_stored: 0,
        unchanged: comparison
            .statuses
            .iter()
            .filter(|s| **s == FileStatus::Unchanged)
            .count(),
        deleted: comparison.deletions.clone(),
        history_head: crate::archive::history::read_head(session.archive().layout())?
            .map(|head| head.to_string()),
    };
    if let Some(head) = &head
        && comparison.is_noop()
    {
        report.commit = head.to_string();
        return Ok(report);
    }
    let changed: Vec<&PlannedFile> = local
        .files
        .iter()
        .zip(&comparison.statuses)
        .filter(|(_, status)| **status != FileStatus::Unchanged)
        .map(|(file, _)| file)
        .collect();
    let modes = upload_modes(client, repo, &changed)?;
    let lfs_files: Vec<&PlannedFile> = changed
        .iter()
        .zip(&modes)
        .filter(|(_, mode)| **mode == UploadMode::Lfs)
        .map(|(file, _)| *file)
        .collect();
    let total: u64 = changed.iter().map(|f| f.size).sum();
    progress.begin("uploading", changed.len(), total);
    report.lfs_already_stored = upload_lfs(client, repo, &lfs_files, &progress)?;
    let ops = commit_ops(&changed, &modes, &comparison.deletions);
    let message = options.message.clone().unwrap_or_else(|| summary(&local));
    // The description names the history head the commit publishes, so that anyone can
    // cite it and check a restored copy with `babel validate --since`.
    let description = report
        .history_head
        .as_ref()
        .map(|head| format!("{HEAD_PREFIX}{head}"))
        .unwrap_or_default();
    let commit: CommitId = client.commit(
        repo,
        (&message, &description),
        head.as_ref(),
        ops,
        Arc::clone(&progress),
    )?;
    progress.finish();
    report.commit = commit.to_string();
    report.committed = true;
    report.sent = changed.len();
    report.lfs = lfs_files.len();
    Ok(report)
}

/// The repository's head and files, creating it first when it is missing and `options`
/// say so; whether it was created comes first.
fn remote_head(
    client: &HubClient,
    repo: &RepoId,
    options: &PushOptions,
) -> Result<(bool, Option<CommitId>, Vec<TreeFile>), HubError> {
    let mut created_repo = false;
    let remote = match plan::fetch_remote(client, repo)? {
        Remote::Missing if options.create => {
            created_repo = client.create_repo(repo, options.private)?;
            plan::fetch_remote(client, repo)?
        }
        other => other,
    };
    let Remote::At { head, files } = remote else {
        return Err(HubError::RepoNotFound {
            repo: repo.to_string(),
            had_token: client.has_token(),
        });
    };
    Ok((created_repo, head, files))
}

/// How the Hub says to send each changed file (preupload, with each file's sample).
fn upload_modes(
    client: &HubClient,
    repo: &RepoId,
    changed: &[&PlannedFile],
) -> Result<Vec<UploadMode>, HubError> {
    let offered = changed
        .iter()
        .map(|file| {
            Ok(PreuploadFile {
                path: file.path.clone(),
                size: file.size,
                sample: sample(file)?,
            })
        })
        .collect::<Result<Vec<_>, HubError>>()?;
    client.preupload(repo, &offered)
}

/// Uploads the LFS objects of `lfs_files` the Hub does not hold yet (each object once);
/// returns how many it already held.
fn upload_lfs(
    client: &HubClient,
    repo: &RepoId,
    lfs_files: &[&PlannedFile],
    progress: &Arc<dyn Progress>,
) -> Result<usize, HubError> {
    let mut objects: Vec<(String, u64)> = lfs_files
        .iter()
        .map(|f| (f.sha256.clone(), f.size))
        .collect();
    objects.sort();
    objects.dedup();
    let mut already_stored = 0;
    let answers = client.lfs_batch(repo, &objects)?;
    for ((sha256, size), answer) in objects.iter().zip(answers) {
        let file = lfs_files
            .iter()
            .find(|f| f.sha256 == *sha256)
            .ok_or_else(|| HubError::Refused {
                what: "uploading LFS objects".into(),
                reason: format!("no planned file has the object {sha256}"),
            })?;
        match answer {
            BatchAnswer::Stored => {
                already_stored += 1;
                progress.advance(*size);
            }
            BatchAnswer::Upload { upload, verify } => {
                progress.file(&file.path);
                client.lfs_put(
                    &upload,
                    &file.path,
                    &file.source,
                    *size,
                    Arc::clone(progress),
                )?;
                if let Some(verify) = verify {
                    client.lfs_verify(&verify, &file.path, sha256, *size)?;
                }
            }
        }
    }
    Ok(already_stored)
}

/// The commit's operations: each changed file as the Hub said to send it, then the
/// deletions.
fn commit_ops(
    changed: &[&PlannedFile],
    modes: &[UploadMode],
    deletions: &[String],
) -> Vec<CommitOp> {
    let mut ops: Vec<CommitOp> = changed
        .iter()
        .zip(modes)
        .map(|(file, mode)| match mode {
            UploadMode::Lfs => CommitOp::LfsFile {
                path: file.path.clone(),
                sha256: file.sha256.clone(),
                size: file.size,
            },
            UploadMode::Regular => CommitOp::File {
                path: file.path.clone(),
                size: file.size,
                git_sha1: file.git_sha1.clone(),
                source: file.source.clone(),
            },
        })
        .collect();
    ops.extend(
        deletions
            .iter()
            .map(|path| CommitOp::Delete { path: path.clone() }),
    );
    ops
}
