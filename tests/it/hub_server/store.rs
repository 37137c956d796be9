//! Repository state: repos, branches, immutable commit snapshots and each
//! repo's LFS object store. HTTP handlers and the seeding API both change
//! state only through `Store::apply_commit`, so both obey the same rules.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use super::git;
use super::patterns;

/// A 40-hex git commit id.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommitId(String);

impl CommitId {
    /// The id as 40 lowercase hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CommitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<&str> for CommitId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<str> for CommitId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

/// Who may read a repository without a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visibility {
    Public,
    Private,
}

/// The LFS side of a stored file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LfsPointer {
    /// SHA-256 of the content, lowercase hex.
    pub sha256: String,
    /// Content size in bytes.
    pub size: u64,
}

impl LfsPointer {
    /// The pointer file git stores in place of the content.
    pub fn text(&self) -> String {
        git::lfs_pointer(&self.sha256, self.size)
    }
}

/// One file of a commit: its exact bytes and, if stored with LFS, the pointer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredFile {
    bytes: Arc<Vec<u8>>,
    /// Set when the file is stored with LFS.
    pub lfs: Option<LfsPointer>,
}

impl StoredFile {
    pub(super) fn regular(bytes: Arc<Vec<u8>>) -> StoredFile {
        StoredFile { bytes, lfs: None }
    }

    fn lfs(bytes: Arc<Vec<u8>>) -> StoredFile {
        let lfs = LfsPointer {
            sha256: git::sha256_hex(&bytes),
            size: bytes.len() as u64,
        };
        StoredFile {
            bytes,
            lfs: Some(lfs),
        }
    }

    /// The file content.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether the file is stored with LFS.
    pub fn is_lfs(&self) -> bool {
        self.lfs.is_some()
    }

    /// Content size in bytes.
    pub fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// The git blob id the Hub reports as `oid`/`blobId`/`ETag`: of the
    /// content for a regular file, of the pointer text for an LFS file.
    pub fn blob_id(&self) -> String {
        match &self.lfs {
            None => git::blob_id(&self.bytes),
            Some(pointer) => git::blob_id(pointer.text().as_bytes()),
        }
    }

    pub(super) fn shared_bytes(&self) -> Arc<Vec<u8>> {
        Arc::clone(&self.bytes)
    }
}

/// A file snapshot: path to file.
pub type Snapshot = BTreeMap<String, StoredFile>;

/// A commit as tests see it.
#[derive(Clone, Debug)]
pub struct CommitInfo {
    pub id: CommitId,
    pub parent: Option<CommitId>,
    pub summary: String,
    pub description: String,
    /// Unix seconds.
    pub time: u64,
}

pub(super) struct Commit {
    pub info: CommitInfo,
    pub files: Arc<Snapshot>,
}

pub(super) struct Repo {
    pub namespace: String,
    pub name: String,
    pub visibility: Visibility,
    pub created: u64,
    pub branches: BTreeMap<String, CommitId>,
    /// Every commit ever made, in creation order; none is ever removed.
    pub commits: Vec<Commit>,
    index: HashMap<CommitId, usize>,
    /// Uploaded LFS objects by SHA-256.
    pub lfs_objects: HashMap<String, Arc<Vec<u8>>>,
}

impl Repo {
    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// A branch name, or a full 40-hex id of one of this repo's commits.
    pub fn resolve(&self, revision: &str) -> Option<&Commit> {
        if let Some(id) = self.branches.get(revision) {
            return self.commit(id);
        }
        if git::is_hex(revision, 40) {
            return self.commit(&CommitId(revision.to_owned()));
        }
        None
    }

    pub fn commit(&self, id: &CommitId) -> Option<&Commit> {
        self.index.get(id).and_then(|&at| self.commits.get(at))
    }
}

/// One change of a commit.
#[derive(Clone, Debug)]
pub enum CommitOp {
    /// Add or replace a file; `lfs` stores it with LFS (and puts the content
    /// in the repo's LFS store).
    Put {
        path: String,
        bytes: Arc<Vec<u8>>,
        lfs: bool,
    },
    /// Delete one file, which must exist.
    Delete { path: String },
    /// Delete every file under a folder, which must contain at least one.
    DeleteFolder { path: String },
}

/// A commit to make on a branch.
pub struct NewCommit {
    pub branch: String,
    pub summary: String,
    pub description: String,
    /// When set, the branch head must start with this (5-40 hex).
    pub parent: Option<String>,
    pub ops: Vec<CommitOp>,
}

/// Why a commit was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommitError {
    RepoNotFound(String),
    BranchNotFound(String),
    /// The branch moved since the client's `parentCommit` (HTTP 412).
    StaleParent {
        expected: String,
        head: CommitId,
    },
    InvalidPath(String),
    FileNotFound(String),
    FolderNotFound(String),
}

impl fmt::Display for CommitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommitError::RepoNotFound(repo) => write!(f, "repository {repo} not found"),
            CommitError::BranchNotFound(branch) => write!(f, "Invalid rev id: {branch}"),
            CommitError::StaleParent { expected, head } => write!(
                f,
                "A commit has happened since. Please refresh and try again. \
                 (parentCommit {expected}, head {head})"
            ),
            CommitError::InvalidPath(path) => write!(f, "Invalid path in commit: {path:?}"),
            CommitError::FileNotFound(path) => {
                write!(f, "A file with this name doesn't exist: {path}")
            }
            CommitError::FolderNotFound(path) => {
                write!(f, "A folder with this name doesn't exist: {path}")
            }
        }
    }
}

/// Path rules the Hub applies to committed paths: relative, `/`-separated,
/// no empty, `.` or `..` segment, no `.git` segment, no control character.
pub fn check_repo_path(path: &str) -> Result<(), CommitError> {
    let bad = path.is_empty()
        || path.len() > 1000
        || path.chars().any(|c| c.is_control())
        || path
            .split('/')
            .any(|segment| matches!(segment, "" | "." | ".." | ".git"));
    if bad {
        Err(CommitError::InvalidPath(path.to_owned()))
    } else {
        Ok(())
    }
}

pub(super) struct Store {
    pub repos: BTreeMap<String, Repo>,
    /// Unix seconds of the last commit; commit times never go backwards and
    /// never repeat, so two otherwise identical commits get distinct ids.
    last_time: u64,
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

impl Store {
    pub fn new() -> Store {
        Store {
            repos: BTreeMap::new(),
            last_time: 0,
        }
    }

    fn next_time(&mut self) -> u64 {
        self.last_time = now().max(self.last_time + 1);
        self.last_time
    }

    /// Creates a repo whose `main` has the Hub's initial commit holding the
    /// default `.gitattributes`. `None` if it already exists.
    pub fn create_repo(
        &mut self,
        namespace: &str,
        name: &str,
        visibility: Visibility,
    ) -> Option<CommitId> {
        let key = format!("{namespace}/{name}");
        if self.repos.contains_key(&key) {
            return None;
        }
        let time = self.next_time();
        let mut files = Snapshot::new();
        files.insert(
            ".gitattributes".to_owned(),
            StoredFile::regular(Arc::new(
                patterns::DEFAULT_DATASET_GITATTRIBUTES.as_bytes().to_vec(),
            )),
        );
        let mut repo = Repo {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            visibility,
            created: time,
            branches: BTreeMap::new(),
            commits: Vec::new(),
            index: HashMap::new(),
            lfs_objects: HashMap::new(),
        };
        let id = push_commit(&mut repo, None, files, "initial commit", "", time);
        repo.branches.insert("main".to_owned(), id.clone());
        self.repos.insert(key, repo);
        Some(id)
    }

    /// Applies a commit atomically: every op is checked before anything changes.
    pub fn apply_commit(
        &mut self,
        repo_id: &str,
        commit: NewCommit,
    ) -> Result<CommitId, CommitError> {
        let time = self.next_time();
        let repo = self
            .repos
            .get_mut(repo_id)
            .ok_or_else(|| CommitError::RepoNotFound(repo_id.to_owned()))?;
        let head = repo
            .branches
            .get(&commit.branch)
            .cloned()
            .ok_or_else(|| CommitError::BranchNotFound(commit.branch.clone()))?;
        if let Some(expected) = &commit.parent
            && !head.as_str().starts_with(&expected.to_ascii_lowercase())
        {
            return Err(CommitError::StaleParent {
                expected: expected.clone(),
                head,
            });
        }
        let mut files: Snapshot = repo
            .commit(&head)
            .map(|parent| (*parent.files).clone())
            .unwrap_or_default();
        let mut lfs_paths = Vec::new();
        for op in &commit.ops {
            match op {
                CommitOp::Put { path, bytes, lfs } => {
                    check_repo_path(path)?;
                    let file = if *lfs {
                        lfs_paths.push(path.clone());
                        let file = StoredFile::lfs(Arc::clone(bytes));
                        if let Some(pointer) = &file.lfs {
                            repo.lfs_objects
                                .insert(pointer.sha256.clone(), Arc::clone(bytes));
                        }
                        file
                    } else {
                        StoredFile::regular(Arc::clone(bytes))
                    };
                    files.insert(path.clone(), file);
                }
                CommitOp::Delete { path } => {
                    if files.remove(path).is_none() {
                        return Err(CommitError::FileNotFound(path.clone()));
                    }
                }
                CommitOp::DeleteFolder { path } => {
                    let prefix = format!("{}/", path.trim_end_matches('/'));
                    let before = files.len();
                    files.retain(|file, _| !file.starts_with(&prefix));
                    if files.len() == before {
                        return Err(CommitError::FolderNotFound(path.clone()));
                    }
                }
            }
        }
        track_lfs_paths(&mut files, &lfs_paths);
        let id = push_commit(
            repo,
            Some(head),
            files,
            &commit.summary,
            &commit.description,
            time,
        );
        repo.branches.insert(commit.branch, id.clone());
        Ok(id)
    }
}

/// Like the Hub, make `.gitattributes` track every file committed as LFS
/// that its patterns do not already cover, by appending one line per path.
fn track_lfs_paths(files: &mut Snapshot, lfs_paths: &[String]) {
    let mut text = files
        .get(".gitattributes")
        .map(|file| String::from_utf8_lossy(file.bytes()).into_owned())
        .unwrap_or_default();
    let mut changed = false;
    for path in lfs_paths {
        if files.get(path).is_some_and(StoredFile::is_lfs) && !patterns::is_lfs_tracked(&text, path)
        {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&patterns::lfs_tracking_line(path));
            changed = true;
        }
    }
    if changed {
        files.insert(
            ".gitattributes".to_owned(),
            StoredFile::regular(Arc::new(text.into_bytes())),
        );
    }
}

fn push_commit(
    repo: &mut Repo,
    parent: Option<CommitId>,
    files: Snapshot,
    summary: &str,
    description: &str,
    time: u64,
) -> CommitId {
    let blobs: BTreeMap<String, String> = files
        .iter()
        .map(|(path, file)| (path.clone(), file.blob_id()))
        .collect();
    let trees = git::tree_ids(&blobs);
    let root = trees.get("").cloned().unwrap_or_default();
    let id = CommitId(git::commit_id(&git::CommitObject {
        tree: &root,
        parent: parent.as_ref().map(CommitId::as_str),
        author: &repo.namespace,
        time,
        summary,
        description,
    }));
    repo.index.insert(id.clone(), repo.commits.len());
    repo.commits.push(Commit {
        info: CommitInfo {
            id: id.clone(),
            parent,
            summary: summary.to_owned(),
            description: description.to_owned(),
            time,
        },
        files: Arc::new(files),
    });
    id
}
