//! `babel export`: the selected sealed runs and every artifact they depend on, as one
//! `tar-ustar-v1` archive in one zstd frame. The caller holds the writer lock (nothing
//! changes while the files are hashed and copied); the output is written atomically and
//! never over an existing file.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde_json::json;

use super::{BundleFile, BundleManifest, Component, TOP, Transport, tar};
use crate::archive::artifacts::contract::BenchmarkContract;
use crate::archive::artifacts::{self, Kind};
use crate::archive::layout::{self, RunId, run_relative};
use crate::archive::manifest::RunStatus;
use crate::archive::{Archive, ArchiveError};
use crate::durable::{self, digest_of, io_at};

/// What to export.
#[derive(Debug, Clone)]
pub enum Selection {
    Runs(Vec<RunId>),
    /// A registered release: its pinned runs and artifacts.
    Release(String),
}

/// What an export wrote.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Exported {
    pub path: PathBuf,
    pub sha256: String,
    pub bytes: u64,
    pub bundle_root: String,
    pub components: Vec<String>,
}

fn usage(message: String, hint: &str) -> ArchiveError {
    ArchiveError::Usage {
        message,
        hint: Some(hint.into()),
    }
}

/// Run IDs and (kind, ID) of artifacts.
type Closure = (BTreeSet<String>, BTreeSet<(Kind, String)>);

/// The runs and artifacts a selection needs: the selected runs, the artifacts their
/// contracts pin, and everything those artifacts pin in turn (runs included).
fn closure(archive: &Archive, selection: &Selection) -> Result<Closure, ArchiveError> {
    let mut runs = BTreeSet::new();
    let mut artifacts = BTreeSet::new();
    let mut pending_artifacts = VecDeque::new();
    let mut pending_runs: VecDeque<String> = VecDeque::new();
    match selection {
        Selection::Runs(selected) => pending_runs.extend(selected.iter().map(|r| r.to_string())),
        Selection::Release(id) => pending_artifacts.push_back((Kind::Release, id.clone())),
    }
    loop {
        if let Some(run) = pending_runs.pop_front() {
            if !runs.insert(run.clone()) {
                continue;
            }
            let id =
                RunId::parse(&run).map_err(|e| usage(e.to_string(), "name a run by its ID"))?;
            let manifest = archive.run_manifest(&id)?;
            let contract =
                BenchmarkContract::of(&manifest.metadata).map_err(|e| ArchiveError::Damaged {
                    path: archive
                        .layout()
                        .resolve(&run_relative(&id, layout::MANIFEST)),
                    reason: e.to_string(),
                })?;
            if let Some(contract) = contract {
                pending_artifacts.push_back((Kind::ItemBank, contract.item_bank.id));
                pending_artifacts.push_back((Kind::Protocol, contract.protocol.id));
            }
        } else if let Some((kind, id)) = pending_artifacts.pop_front() {
            if !artifacts.insert((kind, id.clone())) {
                continue;
            }
            let registered = artifacts::load(archive, kind, &id)?;
            for pin in &registered.manifest.dependencies.artifacts {
                let kind = Kind::parse(&pin.kind).ok_or_else(|| ArchiveError::Damaged {
                    path: archive.layout().resolve(&format!(
                        "{}/{}",
                        artifacts::artifact_dir(kind, &id),
                        layout::MANIFEST
                    )),
                    reason: format!(
                        "it pins an unknown kind {:?} (run `babel validate`)",
                        pin.kind
                    ),
                })?;
                pending_artifacts.push_back((kind, pin.id.clone()));
            }
            pending_runs.extend(
                registered
                    .manifest
                    .dependencies
                    .runs
                    .iter()
                    .map(|r| r.run_id.clone()),
            );
        } else {
            return Ok((runs, artifacts));
        }
    }
}

/// A component's files: (path, role). A file's path in the bundle is its ROOT-relative
/// path in the archive.
type Sources = Vec<(String, &'static str)>;

fn run_files(archive: &Archive, run: &str) -> Result<Sources, ArchiveError> {
    let id = RunId::parse(run).map_err(|e| usage(e.to_string(), "name a run by its ID"))?;
    let manifest = archive.run_manifest(&id)?;
    if manifest.status != RunStatus::Sealed {
        return Err(usage(
            format!(
                "run {run} is open: a bundle holds sealed runs only (their manifests cannot change)"
            ),
            &format!("seal it first with `babel seal {run}`"),
        ));
    }
    let mut files: Sources = Vec::new();
    let mut add = |inside: &str, role: &'static str| {
        files.push((run_relative(&id, inside), role));
    };
    add(layout::MANIFEST, "run-manifest");
    for entry in &manifest.imports {
        add(&entry.raw.path, "raw");
        for companion in &entry.companions {
            add(&companion.path, "raw-companion");
        }
        add(&entry.records.path, "records");
    }
    for attachment in &manifest.attachments {
        add(&attachment.path, "attachment");
    }
    Ok(files)
}

fn artifact_files(kind: Kind, id: &str) -> Sources {
    let dir = artifacts::artifact_dir(kind, id);
    vec![
        (format!("{dir}/artifact.json"), "artifact-payload"),
        (format!("{dir}/{}", layout::MANIFEST), "artifact-manifest"),
    ]
}

/// Hashes a component's files (row roots for records files) into its manifest entry.
fn component(
    archive: &Archive,
    name: String,
    mut sources: Sources,
) -> Result<Component, ArchiveError> {
    sources.sort();
    let mut files = Vec::new();
    for (path, role) in &sources {
        let on_disk = archive.layout().resolve(path);
        let digest = durable::digest_file(&on_disk)?;
        let (rows, row_root) = if *role == "records" {
            let file = File::open(&on_disk).map_err(io_at("opening", &on_disk))?;
            let (rows, root) = super::row_root(file).map_err(|reason| ArchiveError::Damaged {
                path: on_disk.clone(),
                reason,
            })?;
            (Some(rows), Some(root))
        } else {
            (None, None)
        };
        files.push(BundleFile {
            path: path.clone(),
            role: (*role).to_owned(),
            sha256: digest.sha256,
            bytes: digest.bytes,
            rows,
            row_root,
        });
    }
    let root = super::component_root(&name, &files);
    Ok(Component { name, files, root })
}

/// A sealed run of the archive as a bundle component (what an importer compares with).
pub(crate) fn component_of_run(archive: &Archive, run: &str) -> Result<Component, ArchiveError> {
    component(archive, format!("runs/{run}"), run_files(archive, run)?)
}

/// A registered artifact as a bundle component.
pub(crate) fn component_of_artifact(
    archive: &Archive,
    kind: Kind,
    id: &str,
) -> Result<Component, ArchiveError> {
    component(
        archive,
        artifacts::artifact_dir(kind, id),
        artifact_files(kind, id),
    )
}

/// Writes the bundle of `selection` to `out`, which must not exist.
pub fn export(
    archive: &Archive,
    selection: &Selection,
    out: &Path,
) -> Result<Exported, ArchiveError> {
    let out = &archive.layout().derived_destination(out, false)?;
    let manifest = bundle_manifest(archive, selection)?;
    let manifest_bytes = super::manifest_bytes(&manifest);
    let checksums = super::checksums(&digest_of(&manifest_bytes).sha256, &manifest.components);
    let members = members(&manifest, &manifest_bytes, &checksums);
    let digest = write_bundle(archive, out, &members)?;
    Ok(Exported {
        path: out.to_owned(),
        sha256: digest.sha256,
        bytes: digest.bytes,
        bundle_root: manifest.bundle_root.clone(),
        components: manifest.components.iter().map(|c| c.name.clone()).collect(),
    })
}

/// The manifest of the bundle of `selection`: every component of its closure, hashed.
fn bundle_manifest(
    archive: &Archive,
    selection: &Selection,
) -> Result<BundleManifest, ArchiveError> {
    let (runs, artifact_ids) = closure(archive, selection)?;
    // Every file the bundle copies is checked first, history included, so that an edit
    // made outside babel is refused here rather than carried into another archive.
    let run_ids: Vec<RunId> = runs
        .iter()
        .map(|run| RunId::parse(run).map_err(ArchiveError::from))
        .collect::<Result<_, _>>()?;
    crate::archive::require_whole(
        "export",
        crate::archive::validate::validate_runs_and_registries(archive, &run_ids)?,
    )?;
    let mut components = Vec::new();
    for run in &runs {
        components.push(component_of_run(archive, run)?);
    }
    for (kind, id) in &artifact_ids {
        components.push(component_of_artifact(archive, *kind, id)?);
    }
    components.sort_by(|a, b| a.name.cmp(&b.name));
    let selection_value = match selection {
        Selection::Runs(selected) => {
            let mut names: Vec<String> = selected.iter().map(|r| r.to_string()).collect();
            names.sort();
            names.dedup();
            json!({"runs": names})
        }
        Selection::Release(id) => json!({"release": id}),
    };
    Ok(BundleManifest {
        format: super::FORMAT.into(),
        format_version: super::FORMAT_VERSION,
        selection: selection_value,
        transport: Transport {
            profile: super::TRANSPORT.into(),
            zstd_level: super::ZSTD_LEVEL,
            encoder: super::encoder(),
        },
        bundle_root: super::bundle_root(&components),
        components,
    })
}

/// What a member of the bundle's tar holds.
enum Body<'a> {
    Folder,
    Bytes(&'a [u8]),
    /// An archive file (ROOT-relative) and the size it was hashed at.
    File(&'a str, u64),
}

impl Body<'_> {
    fn size(&self) -> u64 {
        match self {
            Body::Folder => 0,
            Body::Bytes(bytes) => bytes.len() as u64,
            Body::File(_, bytes) => *bytes,
        }
    }
}

/// Members: every folder on the way to a file, and the files, in path byte order.
fn members<'a>(
    manifest: &'a BundleManifest,
    manifest_bytes: &'a [u8],
    checksums: &'a str,
) -> BTreeMap<String, Body<'a>> {
    let mut members: BTreeMap<String, Body<'_>> = BTreeMap::new();
    members.insert(format!("{TOP}/"), Body::Folder);
    members.insert(format!("{TOP}/manifest.json"), Body::Bytes(manifest_bytes));
    members.insert(
        format!("{TOP}/checksums.sha256"),
        Body::Bytes(checksums.as_bytes()),
    );
    for component in &manifest.components {
        for file in &component.files {
            for folder in super::folders_of(&file.path) {
                members
                    .entry(format!("{TOP}/{folder}"))
                    .or_insert(Body::Folder);
            }
            members.insert(
                format!("{TOP}/{}", file.path),
                Body::File(&file.path, file.bytes),
            );
        }
    }
    members
}

/// Writes `members` to `out` as one tar in one zstd frame, atomically; every header is
/// built before anything is written, so a path tar cannot hold leaves no file.
fn write_bundle(
    archive: &Archive,
    out: &Path,
    members: &BTreeMap<String, Body<'_>>,
) -> Result<durable::ContentDigest, ArchiveError> {
    let mut headers = Vec::new();
    let mut tar_bytes = tar::END.len() as u64;
    for (path, body) in members {
        headers.push(tar::header(path, body.size()).map_err(|reason| {
            usage(
                format!("cannot export: {reason}"),
                "shorten the file or run name; bundles do not fall back to PAX",
            )
        })?);
        tar_bytes += tar::member_size(body.size());
    }
    durable::write_new_atomically(out, |writer: &mut dyn Write| -> Result<(), ArchiveError> {
        let mut encoder = zstd::stream::write::Encoder::new(writer, super::ZSTD_LEVEL)
            .map_err(io_at("compressing", out))?;
        encoder
            .include_checksum(true)
            .map_err(io_at("compressing", out))?;
        encoder
            .include_contentsize(true)
            .map_err(io_at("compressing", out))?;
        encoder
            .set_pledged_src_size(Some(tar_bytes))
            .map_err(io_at("compressing", out))?;
        for ((_, body), header) in members.iter().zip(&headers) {
            encoder.write_all(header).map_err(io_at("writing", out))?;
            write_body(archive, body, &mut encoder, out)?;
            tar::pad(&mut encoder, body.size()).map_err(io_at("writing", out))?;
        }
        encoder
            .write_all(&tar::END)
            .map_err(io_at("writing", out))?;
        encoder.finish().map_err(io_at("compressing", out))?;
        Ok(())
    })
}

/// Writes a member's content; an archive file that no longer has the size it was hashed
/// at is refused.
fn write_body(
    archive: &Archive,
    body: &Body<'_>,
    encoder: &mut dyn Write,
    out: &Path,
) -> Result<(), ArchiveError> {
    match body {
        Body::Folder => {}
        Body::Bytes(bytes) => encoder.write_all(bytes).map_err(io_at("writing", out))?,
        Body::File(source, bytes) => {
            let path = archive.layout().resolve(source);
            let file = File::open(&path).map_err(io_at("reading", &path))?;
            let copied =
                io::copy(&mut file.take(*bytes + 1), encoder).map_err(io_at("reading", &path))?;
            if copied != *bytes {
                return Err(ArchiveError::Damaged {
                    path,
                    reason: format!(
                        "it changed while it was exported ({copied} bytes, {bytes} hashed)"
                    ),
                });
            }
        }
    }
    Ok(())
}
