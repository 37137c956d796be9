//! `babel import-bundle`: a verified bundle's runs and artifacts published into the
//! archive, as one write under the writer lock.
//!
//! The bundle is verified completely first ([`super::verify`]) in a private staging
//! folder inside the archive's operational folder, under the importer's ceilings. Then
//! each component is compared with the archive: one already there with the same root is
//! skipped (re-importing a bundle is a no-op); one there with another root, an open run,
//! or an ID that differs from a present one only in letter case is a conflict, and the
//! import is refused before anything is written. The new components are published in one
//! transaction (journalled, so a crash leaves all of them or none), whose history entry
//! (`import-bundle`) records every manifest published and the bundle's SHA-256 and root.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::Path;

use super::verify::{self, BundleError, Ceilings};
use super::{BundleFile, BundleManifest, Component, is_manifest};
use crate::archive::artifacts::{self, Kind};
use crate::archive::history::{BundleRef, Change};
use crate::archive::journal::Rename;
use crate::archive::layout::{self, RunId};
use crate::archive::transaction::{self, Transaction, abort_after};
use crate::archive::{ArchiveError, WriteSession};
use crate::durable::{NewFile, io_at};

/// What an import did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Imported {
    pub sha256: String,
    pub bundle_root: String,
    /// Components published by this import.
    pub published: Vec<String>,
    /// Components the archive already held, identical.
    pub already_present: Vec<String>,
}

/// Why an import did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// The bundle is not valid.
    #[error("{0}")]
    Invalid(String),
    /// The bundle contradicts the archive.
    #[error("{0}")]
    Conflict(String),
}

impl From<BundleError> for ImportError {
    fn from(error: BundleError) -> Self {
        match error {
            BundleError::Io(error) => Self::Archive(ArchiveError::Io(error)),
            BundleError::Invalid(reason) => Self::Invalid(reason),
        }
    }
}

/// The archive's root of a component, `None` when the archive does not hold it.
fn present_root(session: &WriteSession<'_>, name: &str) -> Result<Option<String>, ImportError> {
    let archive = session.archive();
    if let Some(run) = name.strip_prefix("runs/") {
        let Ok(id) = RunId::parse(run) else {
            return Err(ImportError::Invalid(format!("{name}: not a valid run ID")));
        };
        let present = archive.run_ids()?;
        if let Some(other) = present
            .iter()
            .find(|p| p.as_str() != run && p.as_str().eq_ignore_ascii_case(run))
        {
            return Err(ImportError::Conflict(format!(
                "the bundle's run {run} differs only in letter case from this archive's run {other}"
            )));
        }
        if !present.contains(&id) {
            return Ok(None);
        }
        // What the bundle is compared with must be what the history recorded: an edited
        // run is named as such, not reported as a bundle that contradicts it.
        let (bytes, manifest) = archive.run_manifest_read(&id)?;
        transaction::verify_manifest(
            session.layout(),
            &layout::run_relative(&id, layout::MANIFEST),
            &bytes,
        )?;
        if manifest.status != crate::archive::manifest::RunStatus::Sealed {
            return Err(ImportError::Conflict(format!(
                "this archive's run {run} is open, and the bundle brings a sealed run {run}: refusing to replace it"
            )));
        }
        return Ok(Some(super::export::component_of_run(archive, run)?.root));
    }
    let (registry, id) = name
        .split_once('/')
        .ok_or_else(|| ImportError::Invalid(format!("{name}: not a run or an artifact")))?;
    let kind = Kind::ALL
        .into_iter()
        .find(|k| k.registry() == registry)
        .ok_or_else(|| ImportError::Invalid(format!("{name}: unknown registry {registry}")))?;
    if let Some(other) = artifacts::registered_ids(archive, kind)?
        .into_iter()
        .find(|p| p != id && p.eq_ignore_ascii_case(id))
    {
        return Err(ImportError::Conflict(format!(
            "the bundle's {kind} {id} differs only in letter case from this archive's {other}"
        )));
    }
    if !artifacts::is_registered(archive, kind, id) {
        return Ok(None);
    }
    Ok(Some(
        super::export::component_of_artifact(archive, kind, id)?.root,
    ))
}

/// Verifies `file` and publishes what the archive does not hold yet.
pub fn import(
    session: &WriteSession<'_>,
    file: &Path,
    expect_sha256: Option<&str>,
    ceilings: &Ceilings,
) -> Result<Imported, ImportError> {
    let layout = session.layout();
    let operational = layout.operational();
    remove_dead_staging(&operational)?;
    let staged = verify::verify(file, expect_sha256, ceilings, &operational)?;
    let manifest = &staged.verified.manifest;
    let mut imported = Imported {
        sha256: staged.verified.sha256.clone(),
        bundle_root: manifest.bundle_root.clone(),
        ..Imported::default()
    };
    let new = new_components(session, manifest, &mut imported)?;
    if new.is_empty() {
        return Ok(imported);
    }

    let needed: u64 = new.iter().flat_map(|c| &c.files).map(|f| f.bytes).sum();
    verify::require_room(layout.root(), needed)?;
    let transaction = begin(session, &new)?;
    let mut recorded = BTreeMap::new();
    let mut changes = Vec::new();
    let top = staged.top();
    // Data files first, then the manifests (under their temporary names).
    let ordered = new
        .iter()
        .flat_map(|c| &c.files)
        .filter(|entry| !is_manifest(&entry.role))
        .chain(
            new.iter()
                .flat_map(|c| &c.files)
                .filter(|entry| is_manifest(&entry.role)),
        );
    for entry in ordered {
        match copy_staged(&transaction, &top, entry) {
            Ok(Some(value)) => {
                recorded.insert(entry.path.clone(), Some(entry.sha256.clone()));
                changes.push(Change::Create {
                    path: entry.path.clone(),
                    manifest: value,
                });
            }
            Ok(None) => {}
            Err(error) => return Err(abort_after(transaction, error).into()),
        }
    }
    imported
        .published
        .extend(new.iter().map(|component| component.name.clone()));
    let marker = match std::fs::read(layout.marker()) {
        Ok(marker) => marker,
        Err(e) => {
            return Err(
                abort_after(transaction, io_at("reading", &layout.marker())(e).into()).into(),
            );
        }
    };
    transaction.commit_from(
        &marker,
        recorded,
        changes,
        Some(BundleRef {
            sha256: imported.sha256.clone(),
            root: imported.bundle_root.clone(),
        }),
    )?;
    Ok(imported)
}

/// Removes the staging folders of imports that died (the lock is ours: none is running).
fn remove_dead_staging(operational: &Path) -> Result<(), ArchiveError> {
    let Ok(entries) = std::fs::read_dir(operational) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with(verify::STAGING_PREFIX)
        {
            std::fs::remove_dir_all(entry.path()).map_err(io_at("removing", &entry.path()))?;
        }
    }
    Ok(())
}

/// The bundle's components the archive does not hold; those it holds identical are noted
/// in `imported`, and one it holds with another root is a conflict.
fn new_components<'m>(
    session: &WriteSession<'_>,
    manifest: &'m BundleManifest,
    imported: &mut Imported,
) -> Result<Vec<&'m Component>, ImportError> {
    let mut new = Vec::new();
    for component in &manifest.components {
        match present_root(session, &component.name)? {
            Some(root) if root == component.root => {
                imported.already_present.push(component.name.clone())
            }
            Some(root) => {
                return Err(ImportError::Conflict(format!(
                    "{} is in this archive with root {root}, and in the bundle with root {}: refusing to replace it",
                    component.name, component.root
                )));
            }
            None => new.push(component),
        }
    }
    Ok(new)
}

/// Begins the one write: every file of every new component, their folders, and the
/// manifests in the history entry; the marker, rewritten with its own bytes, is the commit
/// point. A component's manifest is written under a temporary name and renamed into place
/// only once the write has committed, so that no reader sees a run or an artifact before
/// all of its files, or one of a write that never committed.
fn begin<'s>(
    session: &'s WriteSession<'_>,
    new: &[&Component],
) -> Result<Transaction<'s>, ArchiveError> {
    let mut files = Vec::new();
    let mut publish = Vec::new();
    for entry in new.iter().flat_map(|c| &c.files) {
        if is_manifest(&entry.role) {
            publish.push(Rename {
                from: format!("{}{}", entry.path, layout::NEW_SUFFIX),
                to: entry.path.clone(),
            });
        } else {
            files.push(entry.path.clone());
        }
    }
    // Sorted, a folder comes before the folders in it.
    let dirs: BTreeSet<String> = new
        .iter()
        .flat_map(|c| &c.files)
        .flat_map(|entry| super::folders_of(&entry.path))
        .map(|folder| folder.trim_end_matches('/').to_owned())
        .collect();
    Transaction::begin_publishing(
        session,
        "import-bundle",
        files,
        dirs.into_iter().collect(),
        layout::MARKER.into(),
        publish,
    )
}

/// Copies one staged file into the write, checking that it still has the verified
/// digest; a manifest's parsed value comes back for the history entry.
fn copy_staged(
    transaction: &Transaction<'_>,
    top: &Path,
    entry: &BundleFile,
) -> Result<Option<serde_json::Value>, ArchiveError> {
    let from = top.join(&entry.path);
    let manifest = is_manifest(&entry.role);
    let to = if manifest {
        transaction.path(&format!("{}{}", entry.path, layout::NEW_SUFFIX))
    } else {
        transaction.path(&entry.path)
    };
    let mut source = File::open(&from).map_err(io_at("reading", &from))?;
    let mut target = NewFile::create(&to)?;
    std::io::copy(&mut source, target.writer()).map_err(io_at("writing", &to))?;
    let digest = target.finish()?;
    let value = if manifest {
        Some(crate::archive::read_json_object(&to)?.1)
    } else {
        None
    };
    if digest.sha256 != entry.sha256 {
        return Err(ArchiveError::Damaged {
            path: from,
            reason: "the staged file changed after it was verified".into(),
        });
    }
    Ok(value)
}
