//! `hub-pull`: restores an archive from exactly one commit of a repository, and proves it
//! is whole before it appears.
//!
//! 1. The revision is a 40-hex commit (used as given), or a name the user typed on
//!    purpose (`main`), resolved once to the commit that is then used throughout.
//! 2. The commit's file list is checked before anything is downloaded: every path obeys
//!    [`super::paths`], no two paths clash, the marker is there, and no file (nor the
//!    total) exceeds the size ceilings.
//! 3. Every file is downloaded into `DIR/.babel-pull-<commit>/` (the staging folder):
//!    in progress under `parts/`, and once verified under `snapshot/<path>`. Verified
//!    means: `X-Repo-Commit` on the Hub's answers equals the commit; never more bytes than
//!    the list declares (counted while streaming); and the git blob SHA-1 (regular files)
//!    or SHA-256 (LFS files) equals the list's ID. A cut connection resumes with `Range`.
//!    A second pull of the same commit reuses the verified files it finds there.
//! 4. `checksums.sha256`, when the commit has one, must list exactly the other files
//!    (the Hub-managed `.gitattributes` aside) with their SHA-256.
//! 5. The snapshot is initialized (`babel init`: the operational folders a download
//!    cannot carry) and validated. Only then are its entries moved into `DIR`, the archive
//!    marker last, so `DIR` is never an archive before everything is in place; the
//!    staging folder is removed. `.gitattributes` and `checksums.sha256` are publication
//!    files, verified but not restored.
//!
//! Any failure leaves `DIR` without an archive: at most the staging folder, whose verified
//! files the next pull reuses.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use reqwest::blocking::Response;
use reqwest::{Method, StatusCode, Url};
use serde::Serialize;

use super::api::{RemoteContent, TreeFile};
use super::checksums::{self, CHECKSUMS_FILE};
use super::client::{Call, HubClient};
use super::digest::{self, GitBlobHasher};
use super::paths::{STAGING_PREFIX, check_path_set, check_repo_path};
use super::plan::GITATTRIBUTES;
use super::{CommitId, HubError, Progress, RepoId};
use crate::archive::Archive;
use crate::archive::layout::{MARKER, OPERATIONAL};
use crate::archive::validate::{self, ValidationReport};
use crate::durable::{self, NewFile, io_at};

/// The default ceiling for one file: 10 GiB.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 10 << 30;
/// The default ceiling for the whole commit: 100 GiB.
pub const DEFAULT_MAX_TOTAL_SIZE: u64 = 100 << 30;
/// How often one download resumes after a cut connection.
const MAX_RESUMES: u32 = 3;

/// Parses a size such as `500`, `20GiB`, `1.5TB` or `750M`: binary units (`KiB`, `MiB`,
/// `GiB`, `TiB`, and `K`, `M`, `G`, `T`) are powers of 1024, decimal ones (`KB`, `MB`,
/// `GB`, `TB`) powers of 1000; a bare number (or `B`) is bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let factor: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        "T" | "TiB" => 1 << 40,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        other => {
            return Err(format!(
                "unknown size unit {other:?} (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)"
            ));
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a size such as 500MiB or 20GiB"))?;
    let bytes = value * factor as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(format!("{text:?} is out of range"));
    }
    Ok(bytes as u64)
}

/// Which commit to pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revision {
    /// A commit ID: used as given, never resolved.
    Commit(CommitId),
    /// A branch or tag the user named explicitly; resolved once, and reported.
    Named(String),
}

impl Revision {
    /// Parses `--revision`: 40 lowercase hex digits are a commit; anything else is a name.
    pub fn parse(text: &str) -> Result<Self, HubError> {
        if let Some(commit) = CommitId::parse(text) {
            return Ok(Self::Commit(commit));
        }
        if text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(HubError::usage(
                format!("--revision {text}: write commit IDs in lowercase"),
                None,
            ));
        }
        if text.is_empty() || text.chars().any(char::is_control) {
            return Err(HubError::usage(
                "--revision needs a 40-hex commit ID (or a branch name such as main)",
                None,
            ));
        }
        Ok(Self::Named(text.to_owned()))
    }
}

/// Limits of one pull.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PullOptions {
    pub max_file_size: u64,
    pub max_total_size: u64,
}

impl Default for PullOptions {
    fn default() -> Self {
        Self {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            max_total_size: DEFAULT_MAX_TOTAL_SIZE,
        }
    }
}

/// What a pull restored.
#[derive(Debug, Serialize)]
pub struct PullReport {
    pub repo: String,
    pub commit: String,
    /// The name the commit was resolved from (`main`), when one was given.
    pub resolved_from: Option<String>,
    pub dest: PathBuf,
    /// Files in the commit, and their total size.
    pub files: usize,
    pub bytes: u64,
    pub downloaded: usize,
    /// Files reused from an earlier, interrupted pull of the same commit.
    pub reused: usize,
    /// Whether the commit had a `checksums.sha256` (it was then verified).
    pub checksums_verified: bool,
    /// The history head as published (`SEQ:SHA256`): what the push's commit description
    /// names, and what `babel validate --since` checks later.
    pub history_head: Option<String>,
    /// Runs the archive's history records but the publication left out (`--runs`): the
    /// restored history records them as left out, in a `hub-pull` entry.
    pub left_out: Vec<String>,
    pub validation: ValidationReport,
}

/// The content IDs of a verified file.
struct Verified {
    sha256: String,
}

fn refused(what: impl Into<String>, reason: impl Into<String>) -> HubError {
    HubError::Refused {
        what: what.into(),
        reason: reason.into(),
    }
}

/// Pulls `revision` of `repo` into `dest` (see the module documentation).
pub fn pull(
    client: &HubClient,
    repo: &RepoId,
    revision: &Revision,
    dest: &Path,
    options: &PullOptions,
    progress: &dyn Progress,
) -> Result<PullReport, HubError> {
    if dest.join(MARKER).symlink_metadata().is_ok() {
        return Err(HubError::usage(
            format!("{} already holds a babel archive", dest.display()),
            Some("pull into a new or empty folder; an archive is never overwritten"),
        ));
    }
    let (commit, resolved_from) = resolve(client, repo, revision)?;
    let staging_name = format!("{STAGING_PREFIX}{commit}");
    check_destination(dest, &staging_name)?;
    let tree = client.list_tree(repo, &commit)?;
    check_tree(repo, &commit, &tree, options)?;

    let staging = dest.join(&staging_name);
    let snapshot = staging.join("snapshot");
    let parts = staging.join("parts");
    for dir in [dest, &staging, &snapshot, &parts] {
        fs::create_dir_all(dir).map_err(io_at("creating", dir))?;
    }
    clear_dir(&parts)?;
    let expected: BTreeSet<String> = tree.iter().map(|f| f.path.clone()).collect();
    prune(&snapshot, "", &expected)?;

    let fetched = fetch(client, repo, &commit, &tree, &snapshot, &parts, progress)?;

    let checksums_verified = verify_checksums(&snapshot, &fetched.verified)?;
    let history_head = check_published_head(client, repo, &commit, &snapshot)?;
    // Runs the publication left out are recorded first, so that adopting an older
    // history (init) snapshots only the manifests this copy holds.
    let archive = Archive::open(&snapshot)?;
    let left_out = {
        let session = archive.write_session("babel hub-pull", None, &mut |_| {})?;
        crate::archive::record_runs_left_out(&session)?
    };
    Archive::init(&snapshot, None, &mut |_| {})?;
    let validation = validate::validate(&archive, &[])?;
    if !validation.ok {
        return Err(HubError::RestoredFaulty {
            commit: commit.to_string(),
            staging,
            report: Box::new(validation),
        });
    }
    move_into_place(&snapshot, dest)?;
    fs::remove_dir_all(&staging).map_err(io_at("removing", &staging))?;
    Ok(PullReport {
        repo: repo.to_string(),
        commit: commit.to_string(),
        resolved_from,
        dest: dest.to_owned(),
        files: tree.len(),
        bytes: tree.iter().map(|f| f.size).sum(),
        downloaded: fetched.downloaded,
        reused: fetched.reused,
        checksums_verified,
        history_head,
        left_out,
        validation,
    })
}

/// The commit `revision` names, and the name it was resolved from.
fn resolve(
    client: &HubClient,
    repo: &RepoId,
    revision: &Revision,
) -> Result<(CommitId, Option<String>), HubError> {
    match revision {
        Revision::Commit(commit) => Ok((commit.clone(), None)),
        Revision::Named(name) => {
            let info = client.repo_info(repo, name)?;
            let commit = info.sha.ok_or_else(|| HubError::RevisionNotFound {
                repo: repo.to_string(),
                revision: name.clone(),
            })?;
            Ok((commit, Some(name.clone())))
        }
    }
}

/// The files of a commit, verified under the snapshot.
struct Fetched {
    verified: BTreeMap<String, Verified>,
    downloaded: usize,
    reused: usize,
}

/// Brings every file of `tree` into `snapshot`: one a previous pull left there verified is
/// reused, the others are downloaded under `parts` and moved into place once verified.
fn fetch(
    client: &HubClient,
    repo: &RepoId,
    commit: &CommitId,
    tree: &[TreeFile],
    snapshot: &Path,
    parts: &Path,
    progress: &dyn Progress,
) -> Result<Fetched, HubError> {
    // The snapshot is the archive being restored: its paths resolve as an archive's do.
    let restored = crate::archive::layout::Layout::new(snapshot.to_owned());
    let mut verified: BTreeMap<String, Verified> = BTreeMap::new();
    let mut pending = Vec::new();
    for file in tree {
        let target = restored.resolve(&file.path);
        match reuse(&target, file)? {
            Some(ok) => {
                verified.insert(file.path.clone(), ok);
            }
            None => pending.push(file),
        }
    }
    let reused = verified.len();
    let pending_bytes = pending.iter().map(|f| f.size).sum();
    progress.begin("downloading", pending.len(), pending_bytes);
    for (index, file) in pending.iter().enumerate() {
        progress.file(&file.path);
        let part = parts.join(format!("{index}.part"));
        let ok = download(client, repo, commit, file, &part, progress)?;
        let target = restored.resolve(&file.path);
        let parent = durable::parent_of(&target);
        fs::create_dir_all(parent).map_err(io_at("creating", parent))?;
        durable::rename_replacing(&part, &target)?;
        verified.insert(file.path.clone(), ok);
    }
    progress.finish();
    Ok(Fetched {
        verified,
        downloaded: pending.len(),
        reused,
    })
}

/// The history head the downloaded files end at, which must be the one the commit's
/// description names (`babel archive history head N:SHA256`, as `hub-push` writes it): the
/// commit a paper cites then vouches for that head. A commit whose description names no
/// head (uploaded by another tool) is restored on the history it holds.
fn check_published_head(
    client: &HubClient,
    repo: &RepoId,
    commit: &CommitId,
    snapshot: &Path,
) -> Result<Option<String>, HubError> {
    let layout = crate::archive::layout::Layout::new(snapshot);
    let downloaded = crate::archive::history::read_head(&layout)?.map(|head| head.to_string());
    let message = client.commit_message(repo, commit)?;
    let named = message
        .lines()
        .find_map(|line| line.trim().strip_prefix(super::push::HEAD_PREFIX))
        .map(|head| head.trim().to_owned());
    match (&named, &downloaded) {
        (Some(named), Some(downloaded)) if named == downloaded => Ok(Some(downloaded.clone())),
        (Some(named), found) => Err(refused(
            format!("restoring {repo} at {commit}"),
            format!(
                "the commit's description names history head {named}, but the history it holds ends at {}: the files are not those the push published",
                found.as_deref().unwrap_or("nothing (no history/HEAD)")
            ),
        )),
        (None, _) => Ok(downloaded),
    }
}

/// `dest` must be absent, or an empty folder (an unfinished pull of this same commit
/// aside).
fn check_destination(dest: &Path, staging_name: &str) -> Result<(), HubError> {
    let entries = match fs::read_dir(dest) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) if dest.exists() && !dest.is_dir() => {
            return Err(HubError::usage(
                format!("{} is not a folder ({error})", dest.display()),
                Some("pass --dest a new or empty folder"),
            ));
        }
        Err(error) => return Err(io_at("listing", dest)(error).into()),
    };
    for entry in entries {
        let entry = entry.map_err(io_at("listing", dest))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == staging_name {
            continue;
        }
        let hint = if name.starts_with(STAGING_PREFIX) {
            "it holds an unfinished pull of another commit; remove that folder, or pull that commit"
        } else {
            "pull into a new or empty folder; babel never mixes a restored archive with other files"
        };
        return Err(HubError::usage(
            format!("{} is not empty (it has {name:?})", dest.display()),
            Some(hint),
        ));
    }
    Ok(())
}

/// The file list's rules, checked before any download.
fn check_tree(
    repo: &RepoId,
    commit: &CommitId,
    tree: &[TreeFile],
    options: &PullOptions,
) -> Result<(), HubError> {
    let mut problems: Vec<String> = tree
        .iter()
        .filter_map(|file| {
            check_repo_path(&file.path)
                .err()
                .map(|violation| violation.to_string())
        })
        .collect();
    problems.extend(check_path_set(tree.iter().map(|f| f.path.as_str())));
    if !problems.is_empty() {
        return Err(HubError::UnsafeTree {
            repo: repo.to_string(),
            commit: commit.to_string(),
            problems,
        });
    }
    let what = format!("pulling {repo} at {commit}");
    if !tree.iter().any(|f| f.path == MARKER) {
        return Err(refused(
            what,
            format!("the commit has no {MARKER}; it does not hold a babel archive"),
        ));
    }
    if let Some(big) = tree.iter().find(|f| f.size > options.max_file_size) {
        return Err(HubError::TooLarge {
            what: format!("{} is {} bytes", big.path, big.size),
            limit: options.max_file_size,
            flag: "--max-file-size",
        });
    }
    let total: u64 = tree.iter().map(|f| f.size).sum();
    if total > options.max_total_size {
        return Err(HubError::TooLarge {
            what: format!("the commit's {} files hold {total} bytes", tree.len()),
            limit: options.max_total_size,
            flag: "--max-total-size",
        });
    }
    Ok(())
}

fn clear_dir(dir: &Path) -> Result<(), HubError> {
    for entry in fs::read_dir(dir).map_err(io_at("listing", dir))? {
        let path = entry.map_err(io_at("listing", dir))?.path();
        let removed = if path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        removed.map_err(io_at("removing", &path))?;
    }
    Ok(())
}

/// Removes from an earlier pull's snapshot everything that is not a file of the list
/// (the operational folder `babel init` made aside), and every symlink.
fn prune(dir: &Path, relative: &str, expected: &BTreeSet<String>) -> Result<(), HubError> {
    for entry in fs::read_dir(dir).map_err(io_at("listing", dir))? {
        let entry = entry.map_err(io_at("listing", dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = if relative.is_empty() {
            name.clone()
        } else {
            format!("{relative}/{name}")
        };
        let kind = entry.file_type().map_err(io_at("reading", &entry.path()))?;
        if kind.is_dir() {
            if path != OPERATIONAL {
                prune(&entry.path(), &path, expected)?;
            }
        } else if !kind.is_file() || !expected.contains(&path) {
            fs::remove_file(entry.path()).map_err(io_at("removing", &entry.path()))?;
        }
    }
    Ok(())
}

/// Checks a file kept from an earlier pull: reused when its bytes still match the list.
fn reuse(target: &Path, file: &TreeFile) -> Result<Option<Verified>, HubError> {
    match target.symlink_metadata() {
        Ok(meta) if meta.is_file() && meta.len() == file.size => {}
        Ok(meta) if meta.is_dir() => {
            fs::remove_dir_all(target).map_err(io_at("removing", target))?;
            return Ok(None);
        }
        Ok(_) => {
            fs::remove_file(target).map_err(io_at("removing", target))?;
            return Ok(None);
        }
        Err(_) => return Ok(None),
    }
    let digests = digest::digest_file(target)?;
    let matches = match &file.content {
        RemoteContent::Git { sha1 } => *sha1 == digests.git_sha1,
        RemoteContent::Lfs { sha256 } => *sha256 == digests.sha256,
    };
    if matches {
        Ok(Some(Verified {
            sha256: digests.sha256,
        }))
    } else {
        fs::remove_file(target).map_err(io_at("removing", target))?;
        Ok(None)
    }
}

/// A `"..."` or `W/"..."` header value without its decoration.
fn etag(response: &Response, name: &str) -> Option<String> {
    let value = response.headers().get(name)?.to_str().ok()?;
    Some(
        value
            .trim()
            .trim_start_matches("W/")
            .trim_matches('"')
            .to_owned(),
    )
}

/// The checks on every answer of a download's redirect chain (see the module docs).
fn inspect(
    client: &HubClient,
    commit: &CommitId,
    file: &TreeFile,
    what: &str,
    url: &Url,
    response: &Response,
) -> Result<(), HubError> {
    let status = response.status();
    if !client.is_endpoint_origin(url) || !(status.is_success() || status.is_redirection()) {
        return Ok(());
    }
    match response
        .headers()
        .get("x-repo-commit")
        .and_then(|v| v.to_str().ok())
    {
        Some(served) if served == commit.as_str() => {}
        Some(served) => {
            return Err(refused(
                what,
                format!("the Hub served it from commit {served}, not the requested {commit}"),
            ));
        }
        None => {
            return Err(refused(
                what,
                "the answer has no X-Repo-Commit; it does not come from a Hugging Face Hub endpoint",
            ));
        }
    }
    if let Some(size) = response
        .headers()
        .get("x-linked-size")
        .and_then(|v| v.to_str().ok())
        && size.trim().parse::<u64>().ok() != Some(file.size)
    {
        return Err(refused(
            what,
            format!(
                "the Hub announces {size} bytes, but the file list says {}",
                file.size
            ),
        ));
    }
    match &file.content {
        RemoteContent::Lfs { sha256 } => {
            if let Some(linked) = etag(response, "x-linked-etag")
                && linked != *sha256
            {
                return Err(refused(
                    what,
                    format!(
                        "the Hub announces the SHA-256 {linked}, but the file list says {sha256}"
                    ),
                ));
            }
        }
        RemoteContent::Git { sha1 } => {
            if status.is_success()
                && let Some(tag) = etag(response, "etag")
                && tag != *sha1
            {
                return Err(refused(
                    what,
                    format!("the Hub announces the git blob {tag}, but the file list says {sha1}"),
                ));
            }
        }
    }
    Ok(())
}

/// A download in progress: the part file, hashed (SHA-256 by `durable`, the git blob
/// SHA-1 here) and counted as it is written.
struct PartWriter {
    file: NewFile,
    git: GitBlobHasher,
    count: u64,
}

impl PartWriter {
    fn create(path: &Path, size: u64) -> Result<Self, HubError> {
        Ok(Self {
            file: NewFile::create(path)?,
            git: GitBlobHasher::new(size),
            count: 0,
        })
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), HubError> {
        let path = self.file.path().to_owned();
        self.file
            .writer()
            .write_all(bytes)
            .map_err(io_at("writing", &path))?;
        self.git.update(bytes);
        self.count += bytes.len() as u64;
        Ok(())
    }
}

/// Checks a `206` answer's `Content-Range` against the resumed offset and the size.
fn check_content_range(response: &Response, have: u64, size: u64) -> Result<(), String> {
    let wanted = format!("bytes {have}-{}/{size}", size.saturating_sub(1));
    match response
        .headers()
        .get("content-range")
        .and_then(|v| v.to_str().ok())
    {
        Some(range) if range.trim() == wanted => Ok(()),
        other => Err(format!(
            "a resumed download answered Content-Range {other:?}, not {wanted:?}"
        )),
    }
}

/// Downloads one file into `part` and verifies it against the list.
fn download(
    client: &HubClient,
    repo: &RepoId,
    commit: &CommitId,
    file: &TreeFile,
    part: &Path,
    progress: &dyn Progress,
) -> Result<Verified, HubError> {
    let what = format!("downloading {}", file.path);
    let mut writer = PartWriter::create(part, file.size)?;
    let mut resumes = 0u32;
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let have = writer.count;
        let mut call = Call::new(
            Method::GET,
            client.resolve_url(repo, commit.as_str(), &file.path)?,
            &what,
        )
        .header("accept-encoding", "identity");
        if have > 0 {
            call = call.header("range", &format!("bytes={have}-"));
        }
        // `follow` already retried lost connections and busy answers; resuming below is
        // for bodies cut off mid-transfer.
        let response = client.follow(call, &mut |url, response| {
            inspect(client, commit, file, &what, url, response)
        })?;
        let expired = response.status() == StatusCode::FORBIDDEN
            && !client.is_endpoint_origin(response.url());
        if expired && resumes < MAX_RESUMES {
            // An expired presigned storage URL: resolve the file again.
            resumes += 1;
            continue;
        }
        let (mut response, start_over) = accept_answer(client, repo, &what, file, have, response)?;
        if start_over {
            drop(writer);
            fs::remove_file(part).map_err(io_at("removing", part))?;
            writer = PartWriter::create(part, file.size)?;
        }
        let cut = receive(
            &mut response,
            &mut writer,
            &mut buffer,
            file,
            &what,
            progress,
        )?;
        if writer.count == file.size {
            break;
        }
        if resumes >= MAX_RESUMES {
            let why = if cut {
                "the connection was cut"
            } else {
                "the answer ended early"
            };
            return Err(HubError::Network {
                what,
                url: client
                    .resolve_url(repo, commit.as_str(), &file.path)?
                    .to_string(),
                reason: format!(
                    "{why} after {} of {} bytes, {MAX_RESUMES} times",
                    writer.count, file.size
                ),
            });
        }
        resumes += 1;
    }
    check_download(writer, file, what)
}

/// The answer to a request for `file` from byte `have` on, if its status can be read;
/// true when the server ignored the range and the part must start over.
fn accept_answer(
    client: &HubClient,
    repo: &RepoId,
    what: &str,
    file: &TreeFile,
    have: u64,
    response: Response,
) -> Result<(Response, bool), HubError> {
    let start_over = match response.status() {
        StatusCode::OK => have > 0,
        StatusCode::PARTIAL_CONTENT if have > 0 => {
            check_content_range(&response, have, file.size)
                .map_err(|reason| refused(what, reason))?;
            false
        }
        status if status.is_success() => {
            return Err(refused(
                what,
                format!("unexpected HTTP {}", status.as_u16()),
            ));
        }
        _ => return Err(client.status_error(what, Some(repo), response)),
    };
    if let Some(length) = response.content_length() {
        let declared = if start_over { 0 } else { have } + length;
        if declared > file.size {
            return Err(refused(
                what,
                format!(
                    "the answer declares {declared} bytes, more than the {} the file list says",
                    file.size
                ),
            ));
        }
    }
    Ok((response, start_over))
}

/// Streams the answer's body into the part, never past the size the list declares; true
/// when the connection was cut rather than the body ended.
fn receive(
    response: &mut Response,
    writer: &mut PartWriter,
    buffer: &mut [u8],
    file: &TreeFile,
    what: &str,
    progress: &dyn Progress,
) -> Result<bool, HubError> {
    loop {
        match response.read(buffer) {
            Ok(0) => return Ok(false),
            Ok(read) => {
                if writer.count + read as u64 > file.size {
                    return Err(refused(
                        what,
                        format!(
                            "the Hub sent more than the {} bytes the file list says",
                            file.size
                        ),
                    ));
                }
                writer.write(&buffer[..read])?;
                progress.advance(read as u64);
            }
            Err(_) => return Ok(true),
        }
    }
}

/// Finishes a complete part and checks its ID against the list.
fn check_download(writer: PartWriter, file: &TreeFile, what: String) -> Result<Verified, HubError> {
    let digest = writer.file.finish()?;
    let git_sha1 = writer.git.finish().unwrap_or_default();
    match &file.content {
        RemoteContent::Git { sha1 } if *sha1 != git_sha1 => Err(refused(
            what,
            format!(
                "its bytes have the git blob ID {git_sha1}, not the {sha1} the file list says (corrupted or tampered with)"
            ),
        )),
        RemoteContent::Lfs { sha256 } if *sha256 != digest.sha256 => Err(refused(
            what,
            format!(
                "its bytes have the SHA-256 {}, not the {sha256} the file list says (corrupted or tampered with)",
                digest.sha256
            ),
        )),
        _ => Ok(Verified {
            sha256: digest.sha256,
        }),
    }
}

/// Checks `checksums.sha256` against the verified files: it must list every file but
/// itself and `.gitattributes`, each with its SHA-256. False when the commit has none.
fn verify_checksums(
    snapshot: &Path,
    verified: &BTreeMap<String, Verified>,
) -> Result<bool, HubError> {
    if !verified.contains_key(CHECKSUMS_FILE) {
        return Ok(false);
    }
    let what = format!("checking {CHECKSUMS_FILE}");
    let bytes = durable::read_small(&snapshot.join(CHECKSUMS_FILE))?;
    let listed = checksums::parse(&bytes)
        .map_err(|(line, why)| refused(&what, format!("line {line}: {why}")))?;
    for (path, file) in verified {
        if path == CHECKSUMS_FILE || path == GITATTRIBUTES {
            continue;
        }
        match listed.get(path) {
            Some((sha256, _)) if *sha256 == file.sha256 => {}
            Some((sha256, line)) => {
                return Err(refused(
                    &what,
                    format!(
                        "line {line}: {path} has the SHA-256 {}, but the list says {sha256}",
                        file.sha256
                    ),
                ));
            }
            None => {
                return Err(refused(
                    &what,
                    format!("{path} is in the commit but not in the list"),
                ));
            }
        }
    }
    if let Some((extra, (_, line))) = listed
        .iter()
        .find(|(path, _)| !verified.contains_key(*path))
    {
        return Err(refused(
            &what,
            format!("line {line}: it lists {extra}, which the commit does not have"),
        ));
    }
    Ok(true)
}

/// Moves the snapshot's entries into `dest`, the marker last; on a failure, moves back
/// what was moved.
fn move_into_place(snapshot: &Path, dest: &Path) -> Result<(), HubError> {
    let mut names: Vec<String> = Vec::new();
    for entry in fs::read_dir(snapshot).map_err(io_at("listing", snapshot))? {
        let name = entry
            .map_err(io_at("listing", snapshot))?
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name != MARKER && name != GITATTRIBUTES && name != CHECKSUMS_FILE {
            names.push(name);
        }
    }
    names.sort();
    names.push(MARKER.to_owned());
    let mut moved: Vec<&str> = Vec::new();
    for name in &names {
        let (from, to) = (snapshot.join(name), dest.join(name));
        let outcome = if to.symlink_metadata().is_ok() {
            Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "it appeared during the pull",
            ))
        } else {
            fs::rename(&from, &to)
        };
        if let Err(error) = outcome {
            for done in moved.iter().rev() {
                let _ = fs::rename(dest.join(done), snapshot.join(done));
            }
            return Err(io_at("moving into place", &to)(error).into());
        }
        moved.push(name);
    }
    durable::sync_dir(dest)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_and_decimal_units() {
        assert_eq!(parse_size("500"), Ok(500));
        assert_eq!(parse_size("20GiB"), Ok(20 << 30));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("1.5KiB"), Ok(1536));
        assert_eq!(parse_size("3MB"), Ok(3_000_000));
        for bad in ["", "GiB", "12 parsecs", "-1", "1e3"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn revisions_are_commits_unless_named_on_purpose() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            Revision::parse(sha).unwrap(),
            Revision::Commit(CommitId::parse(sha).unwrap())
        );
        assert_eq!(
            Revision::parse("main").unwrap(),
            Revision::Named("main".into())
        );
        assert!(Revision::parse(&sha.to_uppercase()).is_err());
        assert!(Revision::parse("").is_err());
    }
}
