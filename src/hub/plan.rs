//! The published set: exactly the files a push would publish, and how they compare with
//! a repository's head.
//!
//! The published set is exactly the files the archive manages: the marker, the history,
//! every file each published run's manifest registers (and the manifest), every
//! artifact's manifest and payload, the dataset card `README.md` (the user's, completed
//! with the records configuration, or babel's own: see `card`) and a generated
//! `checksums.sha256` over all of it. Anything else at ROOT (notes, a `.env` holding a
//! token, an export) is never published: the plan lists it as not published. With a run
//! selection, only the selected runs are published, together with every run a registered
//! artifact pins (calibration inputs, release members) even when not selected; every
//! artifact is published either way. An archive that `validate` finds faulty (a symlink,
//! an untracked file in a run folder) is not planned at all.
//!
//! A file is compared with the repository by the Hub's own IDs: the git blob SHA-1 for a
//! regular file, the SHA-256 (`lfs.oid`) for an LFS file. A push makes the head hold
//! exactly the plan: remote files outside it are deleted, except the Hub-managed
//! `.gitattributes`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::sync::Arc;

use serde::Serialize;

use super::api::{FileSource, RemoteContent, TreeFile};
use super::card::{self, CARD_FILE};
use super::checksums::{self, CHECKSUMS_FILE};
use super::client::HubClient;
use super::digest::{self, FileDigests};
use super::paths::{check_path_set, check_repo_path};
use super::{BRANCH, CommitId, HubError, RepoId};
use crate::archive::layout::{self, RunId};
use crate::archive::{Archive, ArchiveError, artifacts, validate};
use crate::durable::io_at;

/// The Hub-managed file a push never deletes and a pull does not restore.
pub use crate::archive::layout::GITATTRIBUTES;

/// Which runs to publish.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// `None`: every run of the archive. `Some`: these runs, plus every run a registered
    /// artifact pins (artifacts are always published, so what they pin must be).
    pub runs: Option<Vec<RunId>>,
}

/// One file of the plan.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedFile {
    /// The ROOT-relative (and repository) path.
    pub path: String,
    pub size: u64,
    pub sha256: String,
    /// The git blob SHA-1, the ID a regular file has on the Hub.
    pub git_sha1: String,
    #[serde(skip)]
    pub source: FileSource,
}

/// Everything a push would publish, sorted by path, `checksums.sha256` included.
#[derive(Debug, Clone)]
pub struct LocalPlan {
    pub files: Vec<PlannedFile>,
    /// The runs it holds, sorted.
    pub runs: Vec<RunId>,
    /// True when every run of the archive is included.
    pub whole: bool,
    /// The entries at ROOT that are not part of the archive and are never published
    /// (notes, a `.env`, an export folder), sorted.
    pub not_published: Vec<String>,
}

impl LocalPlan {
    /// Total bytes.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// How a planned file compares with the repository's head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    New,
    Changed,
    Unchanged,
}

/// What the repository's head holds.
#[derive(Debug, Clone)]
pub enum Remote {
    /// The repository does not exist (or cannot be seen with this token).
    Missing,
    /// The head commit (`None` for a repository without commits) and its files.
    At {
        head: Option<CommitId>,
        files: Vec<TreeFile>,
    },
}

/// The local plan against a remote head.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The status of each planned file, in plan order.
    pub statuses: Vec<FileStatus>,
    /// Remote files the push deletes (everything outside the plan but `.gitattributes`).
    pub deletions: Vec<String>,
}

impl Comparison {
    /// True when the head already holds exactly the plan.
    pub fn is_noop(&self) -> bool {
        self.deletions.is_empty() && self.statuses.iter().all(|s| *s == FileStatus::Unchanged)
    }
}

/// Plans the published set of `archive` for `selection`.
pub fn plan_local(archive: &Archive, selection: &Selection) -> Result<LocalPlan, HubError> {
    let all = archive.run_ids()?;
    let chosen = selection.runs.as_ref().unwrap_or(&all);
    let known = |run: &RunId| -> Result<(), HubError> {
        if all.contains(run) {
            Ok(())
        } else {
            Err(ArchiveError::UnknownRun {
                run: run.to_string(),
            }
            .into())
        }
    };
    chosen.iter().try_for_each(known)?;
    // Validate before reading any artifact's pins, so that damage is listed as findings.
    let faulty = |report: validate::ValidationReport| {
        if report.ok {
            Ok(())
        } else {
            Err(HubError::ArchiveFaulty(Box::new(report)))
        }
    };
    let mut runs = chosen.clone();
    if selection.runs.is_some() {
        faulty(validate::validate_runs_and_registries(archive, chosen)?)?;
        // The registries validated, so every pinned run is present.
        let mut extra = Vec::new();
        for pin in artifacts::all_pinned_runs(archive)? {
            let run = RunId::parse(&pin.run_id).map_err(ArchiveError::from)?;
            if !runs.contains(&run) {
                runs.push(run.clone());
                extra.push(run);
            }
        }
        if !extra.is_empty() {
            faulty(validate::validate(archive, &extra)?)?;
        }
    } else {
        faulty(validate::validate(archive, &[])?)?;
    }
    runs.sort();
    runs.dedup();
    let whole = runs == all;
    let layout = archive.layout();
    let paths = managed_files(archive, &runs)?;
    let not_published = unmanaged_entries(archive)?;
    let mut files = Vec::with_capacity(paths.len() + 1);
    for path in paths {
        check_repo_path(&path).map_err(|violation| HubError::Unpublishable {
            path: path.clone(),
            reason: violation.to_string(),
        })?;
        let disk = layout.resolve(&path);
        let digests = digest::digest_file(&disk)?;
        files.push(planned(path, digests, FileSource::Disk(disk)));
    }
    // The dataset card: the user's README.md completed with the records configuration,
    // or babel's own.
    let card_on_disk = layout.resolve(CARD_FILE);
    let card = match card_on_disk.symlink_metadata() {
        Ok(meta) if meta.is_file() => {
            card::completed(&fs::read(&card_on_disk).map_err(io_at("reading", &card_on_disk))?)
        }
        Ok(_) => {
            return Err(HubError::Unpublishable {
                path: CARD_FILE.into(),
                reason: "a symlink or special file cannot be published".into(),
            });
        }
        Err(_) => card::generated(),
    };
    files.push(planned(
        CARD_FILE.to_owned(),
        digest::digests_of(&card),
        FileSource::Memory(Arc::new(card)),
    ));
    let listing = checksums::render(files.iter().map(|f| (f.path.as_str(), f.sha256.as_str())));
    let digests = digest::digests_of(&listing);
    files.push(planned(
        CHECKSUMS_FILE.to_owned(),
        digests,
        FileSource::Memory(Arc::new(listing)),
    ));
    files.sort_by(|a, b| a.path.cmp(&b.path));
    if let Some(problem) = check_path_set(files.iter().map(|f| f.path.as_str()))
        .into_iter()
        .next()
    {
        return Err(HubError::Unpublishable {
            path: "the published set".into(),
            reason: problem,
        });
    }
    Ok(LocalPlan {
        files,
        runs,
        whole,
        not_published,
    })
}

/// The files the archive manages, ROOT-relative and sorted: the marker, the history,
/// each of `runs`' manifest and every file it registers, each artifact's manifest and
/// payload. Nothing else under ROOT is ever published.
fn managed_files(archive: &Archive, runs: &[RunId]) -> Result<Vec<String>, HubError> {
    let mut paths = vec![
        layout::MARKER.to_owned(),
        crate::archive::history::LOG.to_owned(),
        crate::archive::history::HEAD.to_owned(),
    ];
    for run in runs {
        let manifest = archive.run_manifest(run)?;
        paths.push(layout::run_relative(run, layout::MANIFEST));
        paths.extend(
            manifest
                .registered_files()
                .map(|(path, ..)| layout::run_relative(run, path)),
        );
    }
    for kind in artifacts::Kind::ALL {
        for id in artifacts::registered_ids(archive, kind)? {
            let dir = artifacts::artifact_dir(kind, &id);
            paths.push(format!("{dir}/{}", artifacts::PAYLOAD_FILE));
            paths.push(format!("{dir}/{}", layout::MANIFEST));
        }
    }
    paths.sort();
    Ok(paths)
}

/// The entries at ROOT that are not part of the archive (notes, a `.env`, an export),
/// sorted: listed by the plan as not published.
fn unmanaged_entries(archive: &Archive) -> Result<Vec<String>, HubError> {
    let root = archive.layout().root();
    let mut names = Vec::new();
    for entry in fs::read_dir(root).map_err(io_at("listing", root))? {
        let entry = entry.map_err(io_at("listing", root))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !layout::is_managed_at_root(&name) {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

fn planned(path: String, digests: FileDigests, source: FileSource) -> PlannedFile {
    PlannedFile {
        path,
        size: digests.size,
        sha256: digests.sha256,
        git_sha1: digests.git_sha1,
        source,
    }
}

/// Reads the head of `repo`'s `main` and lists its files; `Remote::Missing` when the
/// repository does not exist (or is invisible to the token).
pub fn fetch_remote(client: &HubClient, repo: &RepoId) -> Result<Remote, HubError> {
    let info = match client.repo_info(repo, BRANCH) {
        Ok(info) => info,
        Err(HubError::RepoNotFound { .. }) => return Ok(Remote::Missing),
        Err(other) => return Err(other),
    };
    let files = match &info.sha {
        Some(head) => client.list_tree(repo, head)?,
        None => Vec::new(),
    };
    Ok(Remote::At {
        head: info.sha,
        files,
    })
}

/// Compares the plan with the remote files.
pub fn compare(local: &LocalPlan, remote: &[TreeFile]) -> Comparison {
    let by_path: BTreeMap<&str, &TreeFile> = remote.iter().map(|f| (f.path.as_str(), f)).collect();
    let statuses = local
        .files
        .iter()
        .map(|file| match by_path.get(file.path.as_str()) {
            None => FileStatus::New,
            Some(remote) => {
                let same = match &remote.content {
                    RemoteContent::Git { sha1 } => *sha1 == file.git_sha1,
                    RemoteContent::Lfs { sha256 } => *sha256 == file.sha256,
                };
                if same && remote.size == file.size {
                    FileStatus::Unchanged
                } else {
                    FileStatus::Changed
                }
            }
        })
        .collect();
    let planned: BTreeSet<&str> = local.files.iter().map(|f| f.path.as_str()).collect();
    let deletions = remote
        .iter()
        .map(|f| f.path.as_str())
        .filter(|path| *path != GITATTRIBUTES && !planned.contains(path))
        .map(str::to_owned)
        .collect();
    Comparison {
        statuses,
        deletions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::runs::{self, NewRun};
    use crate::hub::digest::digests_of;

    /// An archive with runs r1, r2, r3 (no imports) and one item-bank file.
    fn three_runs() -> (tempfile::TempDir, Archive) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("archive");
        Archive::init(&root, None, &mut |_| {}).unwrap();
        let archive = Archive::open(&root).unwrap();
        let session = archive.write_session("test", None, &mut |_| {}).unwrap();
        for run in ["r1", "r2", "r3"] {
            let new = NewRun {
                model: "m".into(),
                ..NewRun::default()
            };
            runs::create(&session, &RunId::parse(run).unwrap(), new).unwrap();
        }
        let bank = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/benchmark/item-bank.json");
        let id = artifacts::ArtifactId::parse("b1").unwrap();
        artifacts::add(&session, artifacts::Kind::ItemBank, &id, &bank).unwrap();
        drop(session);
        (dir, archive)
    }

    fn run_ids(names: &[&str]) -> Vec<RunId> {
        names.iter().map(|n| RunId::parse(n).unwrap()).collect()
    }

    #[test]
    fn a_narrower_selection_still_publishes_every_registered_artifact() {
        // "hub-plan includes all registered artifacts" (calibration input runs: see
        // tests/it/hub_push.rs, which registers a real calibration).
        let (_dir, archive) = three_runs();
        let selection = Selection {
            runs: Some(run_ids(&["r1", "r3"])),
        };
        let plan = plan_local(&archive, &selection).unwrap();
        assert_eq!(plan.runs, run_ids(&["r1", "r3"]));
        assert!(!plan.whole);
        let paths: Vec<&str> = plan.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "README.md",
                "babel-archive.json",
                "checksums.sha256",
                "history/HEAD",
                "history/log.jsonl",
                "item-banks/b1/artifact.json",
                "item-banks/b1/manifest.json",
                "runs/r1/manifest.json",
                "runs/r3/manifest.json",
            ]
        );
        let whole = plan_local(&archive, &Selection::default()).unwrap();
        assert!(whole.whole && whole.runs == run_ids(&["r1", "r2", "r3"]));
        let unknown = Selection {
            runs: Some(run_ids(&["r9"])),
        };
        assert!(matches!(
            plan_local(&archive, &unknown),
            Err(HubError::Archive(ArchiveError::UnknownRun { .. }))
        ));
    }

    #[test]
    fn a_symlink_in_a_registry_is_not_published() {
        let (_dir, archive) = three_runs();
        let link = archive.layout().root().join("item-banks/b1/link.json");
        std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
        let error = plan_local(&archive, &Selection::default()).unwrap_err();
        // validate finds it first; the publisher's own path check stands behind that.
        let HubError::ArchiveFaulty(report) = &error else {
            panic!("expected a refusal of a faulty archive, got {error}");
        };
        assert!(
            report
                .findings
                .iter()
                .any(|f| f.path == "item-banks/b1/link.json"),
            "{report:?}"
        );
    }

    fn plan_of(files: &[(&str, &[u8])]) -> LocalPlan {
        LocalPlan {
            files: files
                .iter()
                .map(|(path, bytes)| {
                    planned(
                        (*path).to_owned(),
                        digests_of(bytes),
                        FileSource::Memory(Arc::new(bytes.to_vec())),
                    )
                })
                .collect(),
            runs: Vec::new(),
            whole: true,
            not_published: Vec::new(),
        }
    }

    #[test]
    fn remote_files_compare_by_git_blob_id_or_lfs_sha256() {
        let local = plan_of(&[
            ("a.txt", b"same\n"),
            ("b.bin", b"lfs bytes"),
            ("c.txt", b"new"),
            ("d.txt", b"edited"),
        ]);
        let remote = vec![
            TreeFile {
                path: "a.txt".into(),
                size: 5,
                content: RemoteContent::Git {
                    sha1: digests_of(b"same\n").git_sha1,
                },
            },
            TreeFile {
                path: "b.bin".into(),
                size: 9,
                content: RemoteContent::Lfs {
                    sha256: digests_of(b"lfs bytes").sha256,
                },
            },
            TreeFile {
                path: "d.txt".into(),
                size: 4,
                content: RemoteContent::Git {
                    sha1: digests_of(b"orig").git_sha1,
                },
            },
            TreeFile {
                path: ".gitattributes".into(),
                size: 1,
                content: RemoteContent::Git {
                    sha1: "0".repeat(40),
                },
            },
            TreeFile {
                path: "gone.txt".into(),
                size: 1,
                content: RemoteContent::Git {
                    sha1: "1".repeat(40),
                },
            },
        ];
        let comparison = compare(&local, &remote);
        assert_eq!(
            comparison.statuses,
            vec![
                FileStatus::Unchanged,
                FileStatus::Unchanged,
                FileStatus::New,
                FileStatus::Changed
            ]
        );
        assert_eq!(comparison.deletions, vec!["gone.txt".to_owned()]);
        assert!(!comparison.is_noop());
    }

    #[test]
    fn a_head_holding_exactly_the_plan_is_a_noop() {
        let local = plan_of(&[("a.txt", b"x")]);
        let remote = vec![
            TreeFile {
                path: "a.txt".into(),
                size: 1,
                content: RemoteContent::Git {
                    sha1: digests_of(b"x").git_sha1,
                },
            },
            TreeFile {
                path: ".gitattributes".into(),
                size: 1,
                content: RemoteContent::Git {
                    sha1: "0".repeat(40),
                },
            },
        ];
        assert!(compare(&local, &remote).is_noop());
    }
}
