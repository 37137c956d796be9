//! A local Hugging Face Hub for tests: a real HTTP/1.1 server on
//! `127.0.0.1:0` speaking the subset of the Hub API that dataset repos use
//! (see `shared/hub/HUB-API.md`), checked against the official
//! `huggingface_hub` client by `tests/it/hub_server_fidelity.rs`.
//!
//! It owns three listeners, each on its own ephemeral port so tests run in
//! parallel: the Hub origin (`endpoint()`), a CDN origin that LFS uploads
//! and downloads go to through presigned URLs (`cdn_url()`), and a foreign
//! origin that hostile redirects point at (`foreign_url()`). State lives in
//! memory: repos, immutable commit snapshots with real git ids, a per-repo
//! LFS store, tokens. Tests seed and inspect it directly, read the request
//! log, and switch on hostile behaviour ([`FileFault`], [`HubServer::fail_next`],
//! [`HubServer::add_tree_entry`], [`HubServer::set_interceptor`]).
//! Dropping the server stops every thread and closes every connection.
//!
//! The HTTP layer is hand-rolled on `std::net::TcpListener` (`http.rs`)
//! rather than taken from a crate such as `tiny_http`: hostile tests need to
//! lie in `Content-Length`, cut a body mid-file, stream slowly or close
//! without answering, which a well-behaved server library exists to prevent.
//! It reads `Content-Length` and chunked bodies, honours keep-alive and
//! `Connection: close`, answers `Expect: 100-continue`, and turns any
//! malformed request into a 400 instead of a panic.
//!
//! It must not be linked into the babel binary: it is test code only, and
//! includes nothing from `src/`.

// Each test crate that includes this module uses a different part of the API.
#![allow(dead_code)]

mod faults;
mod git;
mod http;
mod hub_api;
mod log;
mod patterns;
mod server;
mod storage;
mod store;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

// The public vocabulary of the server; which names a test crate uses varies.
#[allow(unused_imports)]
pub use self::{
    faults::{Failure, FileFault, LengthHeader, RequestMatch},
    http::{Delivery, Request, Response},
    log::{LoggedRequest, Origin},
    patterns::DEFAULT_DATASET_GITATTRIBUTES,
    server::Access,
    store::{CommitError, CommitId, CommitInfo, LfsPointer, Snapshot, StoredFile, Visibility},
};

use server::{Config, State, TokenGrant, lock};
use store::{CommitOp, NewCommit, Store};

/// The user the default token belongs to.
pub const DEFAULT_USER: &str = "tester";

/// A running local Hub. See the module documentation.
pub struct HubServer {
    running: server::Running,
    token: String,
}

impl HubServer {
    /// Starts the three listeners with one user, `tester`, holding a write token.
    pub fn start() -> HubServer {
        let token = "hf_test_tester_write_0".to_owned();
        let mut tokens = HashMap::new();
        tokens.insert(
            token.clone(),
            TokenGrant {
                user: DEFAULT_USER.to_owned(),
                access: Access::Write,
            },
        );
        let state = State {
            store: Store::new(),
            tokens,
            orgs: HashMap::new(),
            config: Config {
                tree_page_size: 1000,
                lfs_threshold: None,
                cdn_rejects_authorization: true,
            },
            faults: faults::Faults::default(),
            url_secret: 1,
        };
        let running = server::start(state).unwrap_or_else(|error| {
            panic!("the local Hub test server could not bind 127.0.0.1: {error}")
        });
        HubServer { running, token }
    }

    fn shared(&self) -> &server::Shared {
        &self.running.shared
    }

    /// The Hub origin, e.g. `http://127.0.0.1:41234` (what `HF_ENDPOINT` is set to).
    pub fn endpoint(&self) -> &str {
        &self.shared().urls.hub
    }

    /// The CDN origin that LFS transfers go to.
    pub fn cdn_url(&self) -> &str {
        &self.shared().urls.cdn
    }

    /// The third, unrelated origin that `FileFault::RedirectToForeign` uses.
    pub fn foreign_url(&self) -> &str {
        &self.shared().urls.foreign
    }

    /// The write token of `tester`.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Issues a new token for `user` (who need not exist beforehand).
    pub fn add_token(&self, user: &str, access: Access) -> String {
        let mut state = lock(&self.shared().state);
        let token = format!("hf_test_{user}_{}", state.tokens.len());
        state.tokens.insert(
            token.clone(),
            TokenGrant {
                user: user.to_owned(),
                access,
            },
        );
        token
    }

    /// Makes `user` a member of organization `org` (write access follows the token).
    pub fn add_org_member(&self, org: &str, user: &str) {
        lock(&self.shared().state)
            .orgs
            .entry(org.to_owned())
            .or_default()
            .insert(user.to_owned());
    }

    /// Creates a dataset repo `namespace/name` with the Hub's initial commit
    /// (`.gitattributes` only) on `main`, and returns that commit.
    ///
    /// Panics if the id is malformed or the repo exists: seeding mistakes are test bugs.
    pub fn create_repo(&self, repo_id: &str, visibility: Visibility) -> CommitId {
        let (namespace, name) = repo_id
            .split_once('/')
            .unwrap_or_else(|| panic!("repo id {repo_id:?} is not namespace/name"));
        lock(&self.shared().state)
            .store
            .create_repo(namespace, name, visibility)
            .unwrap_or_else(|| panic!("repo {repo_id} already exists"))
    }

    /// Starts building a commit to `repo_id` (on `main` unless told otherwise),
    /// applied without HTTP but by the same rules as the commit endpoint.
    pub fn commit(&self, repo_id: &str) -> CommitBuilder<'_> {
        CommitBuilder {
            server: self,
            repo_id: repo_id.to_owned(),
            commit: NewCommit {
                branch: "main".to_owned(),
                summary: "seed commit".to_owned(),
                description: String::new(),
                parent: None,
                ops: Vec::new(),
            },
        }
    }

    /// The commit `branch` points at.
    pub fn head(&self, repo_id: &str, branch: &str) -> Option<CommitId> {
        lock(&self.shared().state)
            .store
            .repos
            .get(repo_id)?
            .branches
            .get(branch)
            .cloned()
    }

    /// Every commit of the repo, oldest first (old commits are never removed).
    pub fn commits(&self, repo_id: &str) -> Vec<CommitInfo> {
        lock(&self.shared().state)
            .store
            .repos
            .get(repo_id)
            .map(|repo| {
                repo.commits
                    .iter()
                    .map(|commit| commit.info.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The exact files at a revision (branch or 40-hex commit id).
    pub fn files(&self, repo_id: &str, revision: &str) -> Option<Snapshot> {
        let state = lock(&self.shared().state);
        let commit = state.store.repos.get(repo_id)?.resolve(revision)?;
        Some((*commit.files).clone())
    }

    /// One file at a revision.
    pub fn file(&self, repo_id: &str, revision: &str, path: &str) -> Option<StoredFile> {
        self.files(repo_id, revision)?.remove(path)
    }

    /// The SHA-256 ids of every LFS object uploaded to or seeded in the repo.
    pub fn lfs_objects(&self, repo_id: &str) -> BTreeSet<String> {
        lock(&self.shared().state)
            .store
            .repos
            .get(repo_id)
            .map(|repo| repo.lfs_objects.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Every request received so far, on every origin, in arrival order.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        lock(&self.shared().log).clone()
    }

    /// Requests that matched no route (answered 404): endpoints a client
    /// needed that this server does not implement.
    pub fn unrouted_requests(&self) -> Vec<LoggedRequest> {
        self.requests()
            .into_iter()
            .filter(|entry| !entry.routed)
            .collect()
    }

    /// Forgets the request log (sequence numbers keep counting from 0 again).
    pub fn clear_requests(&self) {
        lock(&self.shared().log).clear();
    }

    /// Panics caught while answering requests. Empty in a healthy run; the
    /// server also panics on drop if this is not empty, so no test can pass
    /// over a server bug.
    pub fn internal_errors(&self) -> Vec<String> {
        lock(&self.shared().internal_errors).clone()
    }

    /// Entries per tree page before a `Link: <...>; rel="next"` (default 1000, as on the Hub).
    pub fn set_tree_page_size(&self, entries: usize) {
        lock(&self.shared().state).config.tree_page_size = entries.max(1);
    }

    /// Makes preupload answer `lfs` for every non-empty file of at least
    /// `bytes` (None: only the Hub's own rules).
    pub fn set_lfs_threshold(&self, bytes: Option<u64>) {
        lock(&self.shared().state).config.lfs_threshold = bytes;
    }

    /// Whether the CDN answers 400 to a request carrying `Authorization`, as
    /// S3 does for presigned URLs (default true).
    pub fn set_cdn_rejects_authorization(&self, reject: bool) {
        lock(&self.shared().state).config.cdn_rejects_authorization = reject;
    }

    /// Invalidates every storage URL handed out so far: they now answer 403,
    /// like an expired presigned URL.
    pub fn expire_storage_urls(&self) {
        lock(&self.shared().state).url_secret += 1;
    }

    /// Answers any request for which `intercept` returns `Some` with that
    /// response instead (after the request is logged, after injected failures).
    pub fn set_interceptor(
        &self,
        intercept: impl Fn(&Request) -> Option<Response> + Send + Sync + 'static,
    ) {
        *lock(&self.shared().interceptor) = Some(Arc::new(intercept));
    }

    /// Removes the interceptor.
    pub fn clear_interceptor(&self) {
        *lock(&self.shared().interceptor) = None;
    }

    /// Adds a file entry under `path` (verbatim, e.g. `../x`, `/abs`, `a\\b`,
    /// `a//b`) to every root tree listing and `siblings` of the repo, and
    /// makes the resolve route serve `bytes` for it. No commit contains it.
    pub fn add_tree_entry(&self, repo_id: &str, path: &str, bytes: &[u8]) {
        lock(&self.shared().state).faults.add_extra_entry(
            repo_id,
            faults::ExtraEntry {
                path: path.to_owned(),
                bytes: Arc::new(bytes.to_vec()),
            },
        );
    }

    /// Makes the server misbehave when serving `path` of `repo_id`, at any revision.
    pub fn set_file_fault(&self, repo_id: &str, path: &str, fault: FileFault) {
        lock(&self.shared().state)
            .faults
            .set_file_fault(repo_id, path, fault);
    }

    /// Answers the next `count` requests matching `matching` with `failure`.
    pub fn fail_next(&self, count: usize, matching: RequestMatch, failure: Failure) {
        lock(&self.shared().state)
            .faults
            .add_failures(count, matching, failure);
    }

    /// Removes every fault, extra tree entry and pending failure.
    pub fn clear_faults(&self) {
        lock(&self.shared().state).faults.clear();
    }
}

impl Drop for HubServer {
    fn drop(&mut self) {
        let errors = self.internal_errors();
        if !errors.is_empty() && !std::thread::panicking() {
            panic!("the local Hub test server hit internal errors: {errors:#?}");
        }
    }
}

/// A commit being assembled by [`HubServer::commit`].
pub struct CommitBuilder<'a> {
    server: &'a HubServer,
    repo_id: String,
    commit: NewCommit,
}

impl CommitBuilder<'_> {
    /// Commits to this branch instead of `main` (it must exist).
    pub fn branch(mut self, branch: &str) -> Self {
        self.commit.branch = branch.to_owned();
        self
    }

    /// The commit title.
    pub fn summary(mut self, summary: &str) -> Self {
        self.commit.summary = summary.to_owned();
        self
    }

    /// The commit description.
    pub fn description(mut self, description: &str) -> Self {
        self.commit.description = description.to_owned();
        self
    }

    /// Refuses the commit unless the branch head starts with this id.
    pub fn parent(mut self, parent: &str) -> Self {
        self.commit.parent = Some(parent.to_owned());
        self
    }

    /// Adds or replaces a regular file.
    pub fn file(mut self, path: &str, bytes: &[u8]) -> Self {
        self.commit.ops.push(CommitOp::Put {
            path: path.to_owned(),
            bytes: Arc::new(bytes.to_vec()),
            lfs: false,
        });
        self
    }

    /// Adds or replaces an LFS file (and stores its object), tracking it in
    /// `.gitattributes` as the Hub does.
    pub fn lfs_file(mut self, path: &str, bytes: &[u8]) -> Self {
        self.commit.ops.push(CommitOp::Put {
            path: path.to_owned(),
            bytes: Arc::new(bytes.to_vec()),
            lfs: true,
        });
        self
    }

    /// Deletes a file.
    pub fn delete(mut self, path: &str) -> Self {
        self.commit.ops.push(CommitOp::Delete {
            path: path.to_owned(),
        });
        self
    }

    /// Deletes every file under a folder.
    pub fn delete_folder(mut self, path: &str) -> Self {
        self.commit.ops.push(CommitOp::DeleteFolder {
            path: path.to_owned(),
        });
        self
    }

    /// Applies the commit and returns its id.
    pub fn apply(self) -> Result<CommitId, CommitError> {
        lock(&self.server.shared().state)
            .store
            .apply_commit(&self.repo_id, self.commit)
    }
}

/// Files of a snapshot as path to bytes, for comparing with what a client wrote.
pub fn snapshot_bytes(snapshot: &Snapshot) -> BTreeMap<String, Vec<u8>> {
    snapshot
        .iter()
        .map(|(path, file)| (path.clone(), file.bytes().to_vec()))
        .collect()
}
