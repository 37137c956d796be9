//! The Hub endpoints babel calls, one method each, as the official `huggingface_hub`
//! 2.4.0 client calls them for dataset repositories (see the project's HUB-API notes):
//! repo info, whoami, repo creation, the paginated recursive tree listing, preupload,
//! the Git LFS batch API with the "basic" transfer (PUT to a presigned URL, then verify),
//! and the NDJSON commit. Answers are size-limited and checked field by field; anything
//! that breaks the protocol is refused rather than guessed at.

use std::collections::{BTreeSet, VecDeque};
use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use reqwest::blocking::Body;
use reqwest::{Method, StatusCode, Url};
use serde::Deserialize;
use serde_json::{Value, json};

use super::client::{Call, Credentials, HubClient, IO_TIMEOUT, Payload};
use super::digest::GitBlobHasher;
use super::{BRANCH, CommitId, HubError, Progress, RepoId, is_lower_hex};

/// The largest JSON answer accepted from a metadata endpoint.
const MAX_JSON_BYTES: u64 = 64 * 1024 * 1024;
/// The most entries (files and folders) a tree listing may have.
pub const MAX_TREE_ENTRIES: usize = 2_000_000;
/// The most pages a tree listing may take.
pub const MAX_TREE_PAGES: usize = 100_000;
/// The longest path a listing may name: babel's own are a few hundred bytes.
pub const MAX_TREE_PATH_BYTES: usize = 1024;
/// The most bytes of paths a listing may name in all, so that the files kept while its
/// pages are read stay within memory (every page is within [`MAX_JSON_BYTES`], but the
/// pages are many).
pub const MAX_TREE_PATHS_BYTES: usize = 256 << 20;
/// Files per preupload request and objects per LFS batch request, as the official client.
const CHUNK: usize = 256;
/// The preupload sample: the first 512 bytes of a file.
pub const SAMPLE_BYTES: usize = 512;
/// Uploads get this long per mebibyte on top of the base timeout (16 KiB/s at worst).
const UPLOAD_SECONDS_PER_MIB: u64 = 64;

/// Percent-encodes one path segment: everything but RFC 3986 unreserved characters.
/// What a path segment keeps as it is: RFC 3986's unreserved characters, as Python's
/// `urllib.parse.quote` (which the official client uses) keeps them.
const ENCODED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes one path segment (a `/` in it too).
pub fn encode_segment(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, ENCODED).to_string()
}

/// Percent-encodes a repository path segment by segment, keeping its `/`.
pub fn encode_path(path: &str) -> String {
    path.split('/')
        .map(encode_segment)
        .collect::<Vec<_>>()
        .join("/")
}

/// What the repo info endpoint says about a revision.
#[derive(Debug, Clone)]
pub struct RepoInfo {
    /// The commit the revision resolves to (`None` for a repository with no commit).
    pub sha: Option<CommitId>,
}

/// How the Hub stores one file of a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteContent {
    /// A regular git blob, identified by its git blob SHA-1.
    Git { sha1: String },
    /// An LFS object, identified by the SHA-256 of its content.
    Lfs { sha256: String },
}

/// One file of a commit, from the tree listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeFile {
    /// The path exactly as the server sent it (unchecked).
    pub path: String,
    /// The content's size (for LFS files, the object's, not the pointer's).
    pub size: u64,
    pub content: RemoteContent,
}

/// A file offered to preupload.
pub struct PreuploadFile {
    pub path: String,
    pub size: u64,
    /// The first [`SAMPLE_BYTES`] bytes.
    pub sample: Vec<u8>,
}

/// Where the Hub wants a file: in git, or in LFS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UploadMode {
    Regular,
    Lfs,
}

/// What the LFS batch API says about one object.
#[derive(Debug, Clone)]
pub enum BatchAnswer {
    /// Already stored: nothing to upload.
    Stored,
    /// PUT the bytes to `upload`, then POST to `verify` (when given).
    Upload { upload: Url, verify: Option<Url> },
}

/// The source of a regular file's bytes in a commit.
#[derive(Debug, Clone)]
pub enum FileSource {
    Disk(PathBuf),
    Memory(Arc<Vec<u8>>),
}

/// One operation of a commit.
#[derive(Debug, Clone)]
pub enum CommitOp {
    /// A regular file, sent inline (base64); its git blob SHA-1 is checked as it is read.
    File {
        path: String,
        size: u64,
        git_sha1: String,
        source: FileSource,
    },
    /// A file whose LFS object was uploaded beforehand.
    LfsFile {
        path: String,
        sha256: String,
        size: u64,
    },
    /// A file to remove.
    Delete { path: String },
}

#[derive(Deserialize)]
struct RepoInfoWire {
    sha: Option<String>,
}

/// One commit as the Hub lists it (`GET .../commits/{revision}`): what babel reads.
#[derive(Deserialize)]
struct ListedCommitWire {
    id: String,
    message: String,
}

#[derive(Deserialize)]
struct WhoamiWire {
    name: String,
}

#[derive(Deserialize)]
struct TreeEntryWire {
    #[serde(rename = "type")]
    kind: String,
    path: String,
    oid: Option<String>,
    size: Option<u64>,
    lfs: Option<TreeLfsWire>,
}

#[derive(Deserialize)]
struct TreeLfsWire {
    oid: String,
    size: u64,
}

#[derive(Deserialize)]
struct PreuploadWire {
    files: Vec<PreuploadAnswerWire>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PreuploadAnswerWire {
    path: String,
    upload_mode: String,
    #[serde(default)]
    should_ignore: bool,
}

#[derive(Deserialize)]
struct BatchWire {
    transfer: Option<String>,
    objects: Vec<BatchObjectWire>,
}

#[derive(Deserialize)]
struct BatchObjectWire {
    oid: String,
    actions: Option<BatchActionsWire>,
    error: Option<BatchErrorWire>,
}

#[derive(Deserialize)]
struct BatchActionsWire {
    upload: Option<BatchActionWire>,
    verify: Option<BatchActionWire>,
}

#[derive(Deserialize)]
struct BatchActionWire {
    href: String,
    #[serde(default)]
    header: serde_json::Map<String, Value>,
}

#[derive(Deserialize)]
struct BatchErrorWire {
    code: Option<u64>,
    message: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CommitWire {
    commit_oid: String,
}

/// Names the revision in a "revision not found" error (the answer only has a message).
fn naming_revision(error: HubError, revision: &str) -> HubError {
    match error {
        HubError::RevisionNotFound { repo, .. } => HubError::RevisionNotFound {
            repo,
            revision: revision.to_owned(),
        },
        other => other,
    }
}

/// The `rel="next"` URL of a GitHub-style `Link` header.
pub fn next_link(header: &str) -> Option<&str> {
    header.split(',').find_map(|part| {
        let part = part.trim();
        let end = part.find('>')?;
        let url = part.strip_prefix('<')?.get(..end - 1)?;
        let is_next = part[end + 1..]
            .split(';')
            .any(|param| matches!(param.trim(), "rel=\"next\"" | "rel=next"));
        is_next.then_some(url)
    })
}

impl HubClient {
    fn repo_url(&self, repo: &RepoId, tail: &str) -> Result<Url, HubError> {
        self.url(&format!(
            "/api/datasets/{}/{}{tail}",
            encode_segment(repo.namespace()),
            encode_segment(repo.name())
        ))
    }

    fn git_url(&self, repo: &RepoId, tail: &str) -> Result<Url, HubError> {
        self.url(&format!(
            "/datasets/{}/{}{tail}",
            encode_segment(repo.namespace()),
            encode_segment(repo.name())
        ))
    }

    /// The URL that downloads `path` of `repo` at `revision`.
    pub fn resolve_url(&self, repo: &RepoId, revision: &str, path: &str) -> Result<Url, HubError> {
        self.git_url(
            repo,
            &format!(
                "/resolve/{}/{}",
                encode_segment(revision),
                encode_path(path)
            ),
        )
    }

    /// An href from an LFS answer, with `https://huggingface.co` rewritten to the
    /// endpoint as the official client does.
    fn href(&self, href: &str, what: &str) -> Result<Url, HubError> {
        let rewritten = match href.strip_prefix(super::config::DEFAULT_ENDPOINT) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                format!("{}{rest}", self.config().base())
            }
            _ => href.to_owned(),
        };
        Url::parse(&rewritten).map_err(|error| HubError::Refused {
            what: what.to_owned(),
            reason: format!("the Hub gave the unusable URL {href:?} ({error})"),
        })
    }

    /// Resolves `revision` (a branch, tag or commit) of `repo`.
    pub fn repo_info(&self, repo: &RepoId, revision: &str) -> Result<RepoInfo, HubError> {
        let what = format!("resolving {revision} of {repo}");
        let url = self.repo_url(repo, &format!("/revision/{}", encode_segment(revision)))?;
        let call = Call::new(Method::GET, url, &what);
        let response = self
            .expect_success(&call, Some(repo))
            .map_err(|error| naming_revision(error, revision))?;
        let info: RepoInfoWire = self.json(response, &what, MAX_JSON_BYTES)?;
        let sha = match info.sha {
            None => None,
            Some(sha) => Some(CommitId::parse(&sha).ok_or_else(|| HubError::Refused {
                what: what.clone(),
                reason: format!(
                    "the Hub answered the commit ID {sha:?}, which is not 40 hex digits"
                ),
            })?),
        };
        Ok(RepoInfo { sha })
    }

    /// The description (the message below the title) of `commit` of `repo`: the first
    /// entry the Hub lists for the history that ends at that commit, which must be that
    /// commit.
    pub fn commit_message(&self, repo: &RepoId, commit: &CommitId) -> Result<String, HubError> {
        let what = format!("reading the description of commit {commit} of {repo}");
        let url = self.repo_url(
            repo,
            &format!("/commits/{}", encode_segment(commit.as_str())),
        )?;
        let call = Call::new(Method::GET, url, &what);
        let response = self
            .expect_success(&call, Some(repo))
            .map_err(|error| naming_revision(error, commit.as_str()))?;
        let page: Vec<ListedCommitWire> = self.json(response, &what, MAX_JSON_BYTES)?;
        match page.into_iter().next() {
            Some(first) if first.id == commit.as_str() => Ok(first.message),
            Some(first) => Err(HubError::Refused {
                what,
                reason: format!("the Hub listed commit {} first, not {commit}", first.id),
            }),
            None => Err(HubError::Refused {
                what,
                reason: "the Hub listed no commit".into(),
            }),
        }
    }

    /// The user the token belongs to.
    pub fn whoami(&self) -> Result<String, HubError> {
        let what = "asking the Hub whose token this is";
        let call = Call::new(Method::GET, self.url("/api/whoami-v2")?, what);
        let response = self.expect_success(&call, None)?;
        Ok(self
            .json::<WhoamiWire>(response, what, MAX_JSON_BYTES)?
            .name)
    }

    /// Creates `repo` as a dataset repository; `false` when it already existed.
    pub fn create_repo(&self, repo: &RepoId, private: bool) -> Result<bool, HubError> {
        let what = format!("creating {repo}");
        let user = self.whoami()?;
        let organization = (user != repo.namespace()).then(|| repo.namespace().to_owned());
        let mut body =
            json!({ "name": repo.name(), "organization": organization, "type": "dataset" });
        if private {
            body["visibility"] = json!("private");
        }
        let call = Call::new(Method::POST, self.url("/api/repos/create")?, &what)
            .body(body.to_string().into_bytes(), "application/json");
        let response = self.send(&call)?;
        match response.status() {
            status if status.is_success() => Ok(true),
            StatusCode::CONFLICT => Ok(false),
            _ => Err(self.status_error(&what, Some(repo), response)),
        }
    }

    /// Every file of `repo` at `commit`, following the listing's pages (`Link` headers,
    /// which must stay on the endpoint's origin), within the size limits of this module.
    pub fn list_tree(&self, repo: &RepoId, commit: &CommitId) -> Result<Vec<TreeFile>, HubError> {
        let what = format!("listing the files of {repo} at {commit}");
        // Paths and IDs come from the server, which may echo the token it was sent.
        let refuse = |reason: String| HubError::Refused {
            what: what.clone(),
            reason: self.redact(&reason),
        };
        let mut url = self.repo_url(
            repo,
            &format!(
                "/tree/{}?recursive=true&expand=false",
                encode_segment(commit.as_str())
            ),
        )?;
        let mut seen_pages = BTreeSet::new();
        let (mut entries, mut path_bytes) = (0usize, 0usize);
        let mut files = Vec::new();
        loop {
            if !seen_pages.insert(url.to_string()) || seen_pages.len() > MAX_TREE_PAGES {
                return Err(refuse("the listing's pages loop or never end".into()));
            }
            let call = Call::new(Method::GET, url.clone(), &what);
            let response = self
                .expect_success(&call, Some(repo))
                .map_err(|error| naming_revision(error, commit.as_str()))?;
            let next = response
                .headers()
                .get("link")
                .and_then(|value| value.to_str().ok())
                .and_then(next_link)
                .map(|next| url.join(next))
                .transpose()
                .map_err(|error| refuse(format!("the next-page link is not a URL ({error})")))?;
            let page: Vec<TreeEntryWire> = self.json(response, &what, MAX_JSON_BYTES)?;
            entries += page.len();
            if entries > MAX_TREE_ENTRIES {
                return Err(refuse(format!("more than {MAX_TREE_ENTRIES} entries")));
            }
            for entry in page {
                let echoes = |text: &str| self.redact(text) != text;
                if echoes(&entry.path) || entry.oid.as_deref().is_some_and(echoes) {
                    return Err(refuse(
                        "an entry holds the token babel sent (a listing never names it)".into(),
                    ));
                }
                if entry.path.len() > MAX_TREE_PATH_BYTES {
                    return Err(refuse(format!(
                        "a path of {} bytes, more than the {MAX_TREE_PATH_BYTES} babel accepts",
                        entry.path.len()
                    )));
                }
                path_bytes += entry.path.len();
                if path_bytes > MAX_TREE_PATHS_BYTES {
                    return Err(refuse(format!(
                        "more than {MAX_TREE_PATHS_BYTES} bytes of paths"
                    )));
                }
                if entry.kind == "file" {
                    files.push(tree_file(entry).map_err(&refuse)?);
                }
            }
            match next {
                None => return Ok(files),
                Some(next) if self.is_endpoint_origin(&next) => url = next,
                Some(next) => {
                    return Err(refuse(format!(
                        "the next page is on another origin ({next}); babel sends its token only to the endpoint"
                    )));
                }
            }
        }
    }

    /// Asks where each file goes (git or LFS), in chunks of 256 files. A file the
    /// repository's `.gitignore` would drop is refused: the snapshot would be incomplete.
    pub fn preupload(
        &self,
        repo: &RepoId,
        files: &[PreuploadFile],
    ) -> Result<Vec<UploadMode>, HubError> {
        let what = format!("asking {repo} how to store the files (preupload)");
        let url = self.repo_url(repo, &format!("/preupload/{}", encode_segment(BRANCH)))?;
        let mut modes = Vec::with_capacity(files.len());
        for chunk in files.chunks(CHUNK) {
            let wire: Vec<Value> = chunk
                .iter()
                .map(|f| json!({ "path": f.path, "size": f.size, "sample": STANDARD.encode(&f.sample) }))
                .collect();
            let call = Call::new(Method::POST, url.clone(), &what).body(
                json!({ "files": wire }).to_string().into_bytes(),
                "application/json",
            );
            let response = self.expect_success(&call, Some(repo))?;
            let answer: PreuploadWire = self.json(response, &what, MAX_JSON_BYTES)?;
            for file in chunk {
                let found = answer
                    .files
                    .iter()
                    .find(|a| a.path == file.path)
                    .ok_or_else(|| HubError::Refused {
                        what: what.clone(),
                        reason: format!("the answer does not mention {}", file.path),
                    })?;
                if found.should_ignore {
                    return Err(HubError::Refused {
                        what: what.clone(),
                        reason: format!(
                            "the repository's .gitignore ignores {}; remove that rule, since the published snapshot must hold every file",
                            file.path
                        ),
                    });
                }
                // S3 cannot store a 0-byte LFS object, so empty files are always regular.
                let mode = match found.upload_mode.as_str() {
                    _ if file.size == 0 => UploadMode::Regular,
                    "regular" => UploadMode::Regular,
                    "lfs" => UploadMode::Lfs,
                    other => {
                        return Err(HubError::Refused {
                            what: what.clone(),
                            reason: format!("unknown upload mode {other:?} for {}", file.path),
                        });
                    }
                };
                modes.push(mode);
            }
        }
        Ok(modes)
    }

    /// Asks the LFS batch API where to upload each `(sha256, size)` object, offering only
    /// the "basic" transfer.
    pub fn lfs_batch(
        &self,
        repo: &RepoId,
        objects: &[(String, u64)],
    ) -> Result<Vec<BatchAnswer>, HubError> {
        let what = format!("asking {repo} where to upload LFS objects (batch)");
        let url = self.git_url(repo, ".git/info/lfs/objects/batch")?;
        let mut answers = Vec::with_capacity(objects.len());
        for chunk in objects.chunks(CHUNK) {
            let wire: Vec<Value> = chunk
                .iter()
                .map(|(oid, size)| json!({ "oid": oid, "size": size }))
                .collect();
            let body = json!({
                "operation": "upload",
                "transfers": ["basic"],
                "objects": wire,
                "hash_algo": "sha256",
                "ref": { "name": BRANCH },
            });
            let call = Call::new(Method::POST, url.clone(), &what)
                .header("accept", "application/vnd.git-lfs+json")
                .body(
                    body.to_string().into_bytes(),
                    "application/vnd.git-lfs+json",
                );
            let response = self.expect_success(&call, Some(repo))?;
            let answer: BatchWire = self.json(response, &what, MAX_JSON_BYTES)?;
            let refuse = |reason: String| HubError::Refused {
                what: what.clone(),
                reason,
            };
            if let Some(transfer) = answer.transfer.as_deref().filter(|t| *t != "basic") {
                return Err(refuse(format!(
                    "the Hub chose the {transfer:?} transfer; babel speaks only \"basic\""
                )));
            }
            for (oid, _) in chunk {
                let object = answer
                    .objects
                    .iter()
                    .find(|object| object.oid == *oid)
                    .ok_or_else(|| refuse(format!("the answer does not mention object {oid}")))?;
                if let Some(error) = &object.error {
                    return Err(refuse(format!(
                        "object {oid}: error {}: {}",
                        error.code.unwrap_or(0),
                        self.redact(error.message.as_deref().unwrap_or("no message"))
                    )));
                }
                let upload = object
                    .actions
                    .as_ref()
                    .and_then(|actions| actions.upload.as_ref());
                let answer = match upload {
                    None => BatchAnswer::Stored,
                    Some(upload) if upload.header.contains_key("chunk_size") => {
                        return Err(refuse(format!(
                            "object {oid}: the Hub asks for a multipart upload, which babel does not speak"
                        )));
                    }
                    Some(upload) => BatchAnswer::Upload {
                        upload: self.href(&upload.href, &what)?,
                        verify: object
                            .actions
                            .as_ref()
                            .and_then(|actions| actions.verify.as_ref())
                            .map(|verify| self.href(&verify.href, &what))
                            .transpose()?,
                    },
                };
                answers.push(answer);
            }
        }
        Ok(answers)
    }

    /// PUTs a file's bytes to a presigned LFS URL, without the token (like the official
    /// client: the URL is its own credential).
    pub fn lfs_put(
        &self,
        url: &Url,
        path: &str,
        source: &FileSource,
        size: u64,
        progress: Arc<dyn Progress>,
    ) -> Result<(), HubError> {
        let what = format!("uploading {path} (LFS)");
        let mut call = Call::new(Method::PUT, url.clone(), &what);
        call.credentials = Credentials::Never;
        call.timeout =
            IO_TIMEOUT + Duration::from_secs(size / (1024 * 1024) * UPLOAD_SECONDS_PER_MIB);
        call.payload = match source {
            FileSource::Disk(file) => Payload::File {
                path: file.clone(),
                len: size,
                progress,
            },
            FileSource::Memory(bytes) => {
                progress.advance(size);
                Payload::Raw(Arc::clone(bytes))
            }
        };
        self.expect_success(&call, None).map(drop)
    }

    /// Confirms an uploaded LFS object (the token goes along only to the endpoint's origin).
    pub fn lfs_verify(
        &self,
        url: &Url,
        path: &str,
        sha256: &str,
        size: u64,
    ) -> Result<(), HubError> {
        let what = format!("verifying the upload of {path} (LFS)");
        let call = Call::new(Method::POST, url.clone(), &what)
            .header("accept", "application/vnd.git-lfs+json")
            .body(
                json!({ "oid": sha256, "size": size })
                    .to_string()
                    .into_bytes(),
                "application/vnd.git-lfs+json",
            );
        self.expect_success(&call, None).map(drop)
    }

    /// Makes one commit on `main` whose parent must be `parent` (HTTP 412 otherwise, which
    /// becomes [`HubError::StaleParent`]). Sent exactly once: a commit is not idempotent.
    pub fn commit(
        &self,
        repo: &RepoId,
        (summary, description): (&str, &str),
        parent: Option<&CommitId>,
        ops: Vec<CommitOp>,
        progress: Arc<dyn Progress>,
    ) -> Result<CommitId, HubError> {
        let what = format!("committing to {repo}");
        let url = self.repo_url(repo, &format!("/commit/{}", encode_segment(BRANCH)))?;
        let mut header = json!({ "summary": summary, "description": description });
        if let Some(parent) = parent {
            header["parentCommit"] = json!(parent.as_str());
        }
        let body = NdjsonCommit::new(json!({ "key": "header", "value": header }), ops, progress);
        let len = body.len;
        let mut call = Call::new(Method::POST, url, &what);
        call.retry = false;
        call.timeout =
            IO_TIMEOUT + Duration::from_secs(len / (1024 * 1024) * UPLOAD_SECONDS_PER_MIB);
        let response = self
            .send_body_once(&call, Body::sized(body, len), "application/x-ndjson")
            .map_err(|error| match error {
                HubError::Network { reason, .. } => HubError::CommitUncertain {
                    repo: repo.to_string(),
                    reason: format!("the request failed before the Hub answered: {reason}"),
                },
                other => other,
            })?;
        match response.status() {
            status if status.is_success() => {
                let answer: CommitWire = self.json(response, &what, MAX_JSON_BYTES)?;
                CommitId::parse(&answer.commit_oid).ok_or_else(|| HubError::Refused {
                    what,
                    reason: format!(
                        "the new commit ID {:?} is not 40 hex digits",
                        answer.commit_oid
                    ),
                })
            }
            StatusCode::PRECONDITION_FAILED => Err(HubError::StaleParent {
                repo: repo.to_string(),
                planned: parent.map_or_else(|| "(none)".to_owned(), ToString::to_string),
                now: self
                    .repo_info(repo, BRANCH)
                    .ok()
                    .and_then(|info| info.sha)
                    .map(|sha| sha.to_string()),
            }),
            status if super::retry::is_retryable_status(status) => Err(HubError::Unavailable {
                what: format!("{what} (the commit was not accepted; babel never retries a commit)"),
                status: status.as_u16(),
                attempts: 1,
                waited: Duration::ZERO,
                detail: self.message_of(response),
            }),
            _ => Err(self.status_error(&what, Some(repo), response)),
        }
    }
}

fn tree_file(entry: TreeEntryWire) -> Result<TreeFile, String> {
    let path = entry.path;
    let oid = entry.oid.unwrap_or_default();
    let Some(size) = entry.size else {
        return Err(format!("the entry {path:?} has no size"));
    };
    match entry.lfs {
        Some(lfs) if is_lower_hex(&lfs.oid, 64) => Ok(TreeFile {
            path,
            size: lfs.size,
            content: RemoteContent::Lfs { sha256: lfs.oid },
        }),
        Some(lfs) => Err(format!(
            "the entry {path:?} has the LFS oid {:?}, not 64 hex digits",
            lfs.oid
        )),
        None if is_lower_hex(&oid, 40) => Ok(TreeFile {
            path,
            size,
            content: RemoteContent::Git { sha1: oid },
        }),
        None => Err(format!(
            "the entry {path:?} has the oid {oid:?}, not 40 hex digits"
        )),
    }
}

fn text_line(value: Value) -> Piece {
    let mut line = value.to_string().into_bytes();
    line.push(b'\n');
    Piece::Text(line)
}

/// One piece of the NDJSON commit body.
enum Piece {
    Text(Vec<u8>),
    /// A regular file's content, base64-encoded as it is read.
    Base64 {
        op_path: String,
        source: FileSource,
        size: u64,
        git_sha1: String,
    },
}

/// The NDJSON commit body as a reader, so that regular files are streamed from disk
/// (base64-encoded on the way) instead of being held in memory; its length is known in
/// advance. A file whose bytes no longer match its planned git ID fails the read, which
/// aborts the request before the Hub can commit anything.
struct NdjsonCommit {
    pieces: VecDeque<Piece>,
    buffer: Vec<u8>,
    at: usize,
    open: Option<OpenFile>,
    progress: Arc<dyn Progress>,
    len: u64,
}

struct OpenFile {
    reader: Box<dyn Read + Send>,
    remaining: u64,
    hasher: GitBlobHasher,
    expected: String,
    path: String,
}

/// Raw bytes base64-encoded per read: a multiple of 3, so pieces concatenate cleanly.
const BASE64_BLOCK: usize = 3 * 16 * 1024;

fn base64_len(size: u64) -> u64 {
    size.div_ceil(3) * 4
}

impl NdjsonCommit {
    fn new(header: Value, ops: Vec<CommitOp>, progress: Arc<dyn Progress>) -> Self {
        let mut pieces = VecDeque::new();
        pieces.push_back(text_line(header));
        for op in ops {
            match op {
                CommitOp::File {
                    path,
                    size,
                    git_sha1,
                    source,
                } => {
                    pieces.push_back(Piece::Text(
                        b"{\"key\":\"file\",\"value\":{\"content\":\"".to_vec(),
                    ));
                    let tail = format!("\",\"path\":{},\"encoding\":\"base64\"}}}}\n", json!(path));
                    pieces.push_back(Piece::Base64 {
                        op_path: path,
                        source,
                        size,
                        git_sha1,
                    });
                    pieces.push_back(Piece::Text(tail.into_bytes()));
                }
                CommitOp::LfsFile { path, sha256, size } => pieces.push_back(text_line(json!({
                    "key": "lfsFile",
                    "value": { "path": path, "algo": "sha256", "oid": sha256, "size": size },
                }))),
                CommitOp::Delete { path } => {
                    pieces.push_back(text_line(
                        json!({ "key": "deletedFile", "value": { "path": path } }),
                    ));
                }
            }
        }
        let len = pieces
            .iter()
            .map(|piece| match piece {
                Piece::Text(bytes) => bytes.len() as u64,
                Piece::Base64 { size, .. } => base64_len(*size),
            })
            .sum();
        Self {
            pieces,
            buffer: Vec::new(),
            at: 0,
            open: None,
            progress,
            len,
        }
    }

    /// Refills the buffer; false at the end of the body.
    fn refill(&mut self) -> io::Result<bool> {
        self.buffer.clear();
        self.at = 0;
        loop {
            if let Some(open) = &mut self.open {
                if open.remaining == 0 {
                    let finished = self
                        .open
                        .take()
                        .map(|open| (open.hasher.finish(), open.expected, open.path));
                    if let Some((found, expected, path)) = finished
                        && found.as_deref() != Some(expected.as_str())
                    {
                        return Err(io::Error::other(format!(
                            "{path} changed after babel planned the push; nothing was committed"
                        )));
                    }
                    continue;
                }
                let want = open.remaining.min(BASE64_BLOCK as u64) as usize;
                let mut raw = vec![0u8; want];
                open.reader.read_exact(&mut raw).map_err(|error| {
                    io::Error::other(format!(
                        "reading {}: {error} (did it change after planning?)",
                        open.path
                    ))
                })?;
                open.remaining -= want as u64;
                open.hasher.update(&raw);
                self.progress.advance(want as u64);
                self.buffer = STANDARD.encode(&raw).into_bytes();
                return Ok(true);
            }
            match self.pieces.pop_front() {
                None => return Ok(false),
                Some(Piece::Text(bytes)) => {
                    self.buffer = bytes;
                    return Ok(true);
                }
                Some(Piece::Base64 {
                    op_path,
                    source,
                    size,
                    git_sha1,
                }) => {
                    let reader: Box<dyn Read + Send> = match source {
                        FileSource::Disk(path) => Box::new(File::open(&path).map_err(|error| {
                            io::Error::other(format!("opening {}: {error}", path.display()))
                        })?),
                        FileSource::Memory(bytes) => Box::new(io::Cursor::new(ArcBytes(bytes))),
                    };
                    self.progress.file(&op_path);
                    self.open = Some(OpenFile {
                        reader,
                        remaining: size,
                        hasher: GitBlobHasher::new(size),
                        expected: git_sha1,
                        path: op_path,
                    });
                }
            }
        }
    }
}

/// Shared bytes readable through a `Cursor`.
struct ArcBytes(Arc<Vec<u8>>);

impl AsRef<[u8]> for ArcBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Read for NdjsonCommit {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at == self.buffer.len() && !self.refill()? {
            return Ok(0);
        }
        let n = out.len().min(self.buffer.len() - self.at);
        out[..n].copy_from_slice(&self.buffer[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::NoProgress;
    use crate::hub::digest::git_blob_sha1;

    #[test]
    fn paths_are_percent_encoded_like_python_quote() {
        // quote("données/a b+c.txt") keeps '/' and RFC 3986 unreserved characters only.
        assert_eq!(
            encode_path("données/a b+c.txt"),
            "donn%C3%A9es/a%20b%2Bc.txt"
        );
        assert_eq!(encode_segment("refs/pr/1"), "refs%2Fpr%2F1");
    }

    #[test]
    fn the_next_page_comes_from_the_link_header() {
        let header = "<https://hub/api/datasets/a/b/tree/x?recursive=true&cursor=Mw>; rel=\"next\"";
        assert_eq!(
            next_link(header),
            Some("https://hub/api/datasets/a/b/tree/x?recursive=true&cursor=Mw")
        );
        assert_eq!(
            next_link("<https://x/1>; rel=\"prev\", <https://x/2>; rel=\"next\""),
            Some("https://x/2")
        );
        assert_eq!(next_link("<https://x/1>; rel=\"prev\""), None);
    }

    fn body_text(ops: Vec<CommitOp>) -> Result<String, io::Error> {
        let mut body = NdjsonCommit::new(
            json!({"key": "header", "value": {"summary": "s"}}),
            ops,
            Arc::new(NoProgress),
        );
        let declared = body.len;
        let mut out = Vec::new();
        // Small reads exercise the piece boundaries.
        let mut chunk = [0u8; 7];
        loop {
            let n = body.read(&mut chunk)?;
            if n == 0 {
                break;
            }
            out.extend_from_slice(&chunk[..n]);
        }
        assert_eq!(
            out.len() as u64,
            declared,
            "the declared length is the real one"
        );
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn the_commit_body_is_the_recorded_ndjson_shape() {
        let content = (0..100_000u32)
            .map(|n| (n % 251) as u8)
            .collect::<Vec<u8>>();
        let text = body_text(vec![
            CommitOp::File {
                path: "a \"q\".txt".into(),
                size: content.len() as u64,
                git_sha1: git_blob_sha1(&content),
                source: FileSource::Memory(Arc::new(content.clone())),
            },
            CommitOp::LfsFile {
                path: "big.bin".into(),
                sha256: "c".repeat(64),
                size: 5,
            },
            CommitOp::Delete {
                path: "old.txt".into(),
            },
        ])
        .unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(
            lines[0],
            json!({"key": "header", "value": {"summary": "s"}})
        );
        assert_eq!(lines[1]["key"], "file");
        assert_eq!(lines[1]["value"]["path"], "a \"q\".txt");
        assert_eq!(lines[1]["value"]["encoding"], "base64");
        let decoded = STANDARD
            .decode(lines[1]["value"]["content"].as_str().unwrap())
            .unwrap();
        assert_eq!(decoded, content);
        assert_eq!(
            lines[2],
            json!({"key": "lfsFile", "value": {"path": "big.bin", "algo": "sha256", "oid": "c".repeat(64), "size": 5}})
        );
        assert_eq!(
            lines[3],
            json!({"key": "deletedFile", "value": {"path": "old.txt"}})
        );
    }

    #[test]
    fn a_file_that_changed_after_planning_fails_the_body() {
        let error = body_text(vec![CommitOp::File {
            path: "x".into(),
            size: 3,
            git_sha1: git_blob_sha1(b"abc"),
            source: FileSource::Memory(Arc::new(b"abd".to_vec())),
        }])
        .unwrap_err();
        assert!(
            error.to_string().contains("changed after babel planned"),
            "{error}"
        );
    }
}
