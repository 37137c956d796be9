//! `babel verify-bundle`: checks a bundle completely without touching any archive. The
//! transport hash first (against `--expect-sha256`), then the zstd frame and the tar
//! stream under the verifier's own ceilings, extracted into a private temporary folder
//! (refusing unsafe, duplicate, case-colliding, out-of-order and undeclared members and
//! anything but files and folders), then the manifest's canonical bytes, the member set,
//! every file's hash and size, every records file's rows and row root, every component
//! root, the bundle root, `checksums.sha256`, and every dependency the bundle's runs and
//! artifacts pin.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::{BundleManifest, Component, TOP, tar};
use crate::archive::artifacts::contract::BenchmarkContract;
use crate::archive::artifacts::{ArtifactManifest, Kind, artifact_dir};
use crate::archive::layout;
use crate::archive::manifest::{RunManifest, RunStatus};
use crate::durable::{self, PathIoError, digest_of, io_at};

/// The name prefix of the private folder a bundle is unpacked into.
pub const STAGING_PREFIX: &str = ".babel-bundle-";

/// Limits the verifier (not the bundle) sets, checked while streaming.
#[derive(Debug, Clone, Copy)]
pub struct Ceilings {
    /// The bundle file's size.
    pub compressed: u64,
    /// The tar stream's size once decompressed.
    pub expanded: u64,
    /// Tar members (files and folders).
    pub members: u64,
    /// One file's size.
    pub member: u64,
}

impl Default for Ceilings {
    fn default() -> Self {
        Self {
            compressed: 64 << 30,
            expanded: 256 << 30,
            members: 1_000_000,
            member: 64 << 30,
        }
    }
}

/// Why a bundle is not valid, or could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error(transparent)]
    Io(#[from] PathIoError),
    #[error("{0}")]
    Invalid(String),
}

fn invalid(message: impl Into<String>) -> BundleError {
    BundleError::Invalid(message.into())
}

/// What a valid bundle holds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Verified {
    pub sha256: String,
    pub bytes: u64,
    pub bundle_root: String,
    pub components: Vec<String>,
    pub files: usize,
    pub rows: u64,
    /// The parsed manifest (for an importer).
    #[serde(skip)]
    pub manifest: BundleManifest,
}

/// A bundle extracted into a private folder and fully verified; the folder is removed
/// when this is dropped.
pub struct Staged {
    pub verified: Verified,
    pub dir: tempfile::TempDir,
}

impl Staged {
    /// Where the bundle's top folder is.
    pub fn top(&self) -> PathBuf {
        self.dir.path().join(TOP)
    }
}

/// Verifies `file`, extracting it into a private folder under `scratch`.
pub fn verify(
    file: &Path,
    expect_sha256: Option<&str>,
    ceilings: &Ceilings,
    scratch: &Path,
) -> Result<Staged, BundleError> {
    let size = fs::metadata(file).map_err(io_at("reading", file))?.len();
    if size > ceilings.compressed {
        return Err(invalid(format!(
            "the bundle is {size} bytes, more than the {} this verifier accepts",
            ceilings.compressed
        )));
    }
    let transport = durable::digest_file(file)?;
    if let Some(expected) = expect_sha256
        && expected != transport.sha256
    {
        return Err(invalid(format!(
            "the bundle's SHA-256 is {}, not the expected {expected}",
            transport.sha256
        )));
    }
    let dir = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempdir_in(scratch)
        .map_err(io_at("creating a folder in", scratch))?;
    let extracted = extract(file, dir.path(), ceilings)?;
    let verified = check(dir.path(), &extracted, transport)?;
    Ok(Staged { verified, dir })
}

/// Checks the zstd frame header: one frame with its content size and checksum.
fn check_frame(file: &Path) -> Result<(), BundleError> {
    let mut head = [0u8; 5];
    File::open(file)
        .and_then(|mut f| f.read_exact(&mut head))
        .map_err(|_| invalid("not a zstd stream (too short)"))?;
    if head[..4] != [0x28, 0xB5, 0x2F, 0xFD] {
        return Err(invalid(
            "not a zstd frame (the bundle transport is tar inside one zstd frame)",
        ));
    }
    let descriptor = head[4];
    let has_size = descriptor >> 6 != 0 || descriptor & 0x20 != 0;
    if !has_size || descriptor & 0x04 == 0 {
        return Err(invalid(
            "the zstd frame lacks its content size or checksum (profile zstd-frame-v1)",
        ));
    }
    Ok(())
}

/// What extraction found: file path (relative to the top folder) → bytes, and folders.
struct Extracted {
    files: BTreeMap<String, u64>,
    folders: BTreeSet<String>,
}

fn extract(file: &Path, into: &Path, ceilings: &Ceilings) -> Result<Extracted, BundleError> {
    check_frame(file)?;
    let input = File::open(file).map_err(io_at("reading", file))?;
    let mut decoder = zstd::stream::read::Decoder::new(input)
        .map_err(io_at("decompressing", file))?
        .single_frame();
    let mut stream = Limited {
        inner: &mut decoder,
        left: ceilings.expanded,
    };
    let broken = |e: io::Error| match e.kind() {
        io::ErrorKind::UnexpectedEof => invalid("the tar stream ends early (truncated)"),
        io::ErrorKind::FileTooLarge => invalid(e.to_string()),
        _ => invalid(format!("the bundle cannot be decompressed: {e}")),
    };
    let mut extracted = Extracted {
        files: BTreeMap::new(),
        folders: BTreeSet::new(),
    };
    let mut previous: Option<String> = None;
    let mut folded: HashSet<String> = HashSet::new();
    let mut members = 0u64;
    loop {
        let block = tar::read_block(&mut stream).map_err(broken)?;
        let Some(member) = tar::parse_header(&block)
            .map_err(|e| invalid(format!("member {}: {e}", members + 1)))?
        else {
            let second = tar::read_block(&mut stream).map_err(broken)?;
            if second.iter().any(|b| *b != 0) {
                return Err(invalid("a single zero block inside the archive"));
            }
            break;
        };
        // Exactly the header babel writes for this path and size (which also fixes how a
        // long path is split), so one archive has one byte form.
        if tar::header(&member.path, member.size).ok().as_ref() != Some(&block) {
            return Err(invalid(format!(
                "member {:?}: its header is not the tar-ustar-v1 header of that path and size",
                member.path
            )));
        }
        members += 1;
        if members > ceilings.members {
            return Err(invalid(format!("more than {} members", ceilings.members)));
        }
        let path = member.path.clone();
        let inside = safe_path(&path)?;
        if previous
            .as_ref()
            .is_some_and(|p| p.as_str() >= path.as_str())
        {
            return Err(invalid(format!(
                "member {path:?} is out of order or repeated (members are sorted by path bytes)"
            )));
        }
        previous = Some(path.clone());
        if !folded.insert(path.to_lowercase()) {
            return Err(invalid(format!(
                "member {path:?} differs from another only in letter case"
            )));
        }
        let parent = match inside.trim_end_matches('/').rsplit_once('/') {
            Some((parent, _)) => format!("{parent}/"),
            None if inside.is_empty() => String::new(),
            None => "/".into(),
        };
        if !inside.is_empty() && !extracted.folders.contains(&parent) {
            return Err(invalid(format!(
                "member {path:?} is in a folder the archive does not declare first"
            )));
        }
        let target = into.join(&path);
        if member.directory {
            fs::create_dir(&target).map_err(io_at("creating", &target))?;
            extracted.folders.insert(if inside.is_empty() {
                "/".into()
            } else {
                inside
            });
            continue;
        }
        if member.size > ceilings.member {
            return Err(invalid(format!(
                "member {path:?} is {} bytes, more than the {} this verifier accepts",
                member.size, ceilings.member
            )));
        }
        let out = File::create_new(&target).map_err(io_at("creating", &target))?;
        let mut writer = io::BufWriter::new(out);
        let copied = io::copy(&mut (&mut stream).take(member.size), &mut writer).map_err(broken)?;
        if copied != member.size {
            return Err(invalid(format!(
                "member {path:?} ends early: {copied} of {} bytes",
                member.size
            )));
        }
        writer.flush().map_err(io_at("writing", &target))?;
        let padding = (tar::BLOCK as u64 - member.size % tar::BLOCK as u64) % tar::BLOCK as u64;
        let mut pad = vec![0u8; padding as usize];
        stream.read_exact(&mut pad).map_err(broken)?;
        if pad.iter().any(|b| *b != 0) {
            return Err(invalid(format!(
                "member {path:?}: its padding is not NUL (is it longer than its header says?)"
            )));
        }
        extracted.files.insert(inside, member.size);
    }
    let mut rest = [0u8; 1];
    if stream.read(&mut rest).map_err(broken)? != 0 {
        return Err(invalid("bytes after the end of the tar archive"));
    }
    // One frame and nothing after it.
    let mut after = decoder.finish();
    if after.read(&mut rest).map_err(io_at("reading", file))? != 0 {
        return Err(invalid(
            "bytes after the zstd frame (a bundle is exactly one frame)",
        ));
    }
    Ok(extracted)
}

/// A reader that fails once more than `left` bytes are read (the expanded ceiling).
struct Limited<'a, R> {
    inner: &'a mut R,
    left: u64,
}

impl<R: Read> Read for Limited<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.left = self.left.checked_sub(n as u64).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::FileTooLarge,
                "the decompressed bundle exceeds this verifier's ceiling",
            )
        })?;
        Ok(n)
    }
}

/// The member's path inside the top folder ("" for the top folder itself), or why it is
/// unsafe.
fn safe_path(path: &str) -> Result<String, BundleError> {
    let refuse = |why: &str| Err(invalid(format!("member {path:?}: {why}")));
    if path.starts_with('/') {
        return refuse("an absolute path");
    }
    if path.contains('\\') {
        return refuse("a backslash in the path");
    }
    if path.chars().any(char::is_control) {
        return refuse("a control character in the path");
    }
    let Some(inside) = path.strip_prefix(&format!("{TOP}/")) else {
        return refuse(&format!("outside the bundle's one top folder {TOP}/"));
    };
    let trimmed = inside.strip_suffix('/').unwrap_or(inside);
    if !inside.is_empty()
        && trimmed
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return refuse("an empty, . or .. path component");
    }
    Ok(inside.to_owned())
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Result<T, BundleError> {
    let bytes = fs::read(path).map_err(io_at("reading", path))?;
    serde_json::from_slice(&bytes).map_err(|e| invalid(format!("{what}: {e}")))
}

fn check(
    dir: &Path,
    extracted: &Extracted,
    transport: durable::ContentDigest,
) -> Result<Verified, BundleError> {
    let top = dir.join(TOP);
    let manifest_path = top.join("manifest.json");
    let bytes = fs::read(&manifest_path).map_err(|_| invalid("the bundle has no manifest.json"))?;
    let manifest: BundleManifest =
        serde_json::from_slice(&bytes).map_err(|e| invalid(format!("manifest.json: {e}")))?;
    if super::manifest_bytes(&manifest) != bytes {
        return Err(invalid(
            "manifest.json is not RFC 8785 canonical JSON followed by one LF",
        ));
    }
    if manifest.format != super::FORMAT || manifest.format_version != super::FORMAT_VERSION {
        return Err(invalid(format!(
            "manifest.json is {} version {}, not a babel bundle version {} this babel reads",
            manifest.format,
            manifest.format_version,
            super::FORMAT_VERSION
        )));
    }
    if manifest.transport.profile != super::TRANSPORT {
        return Err(invalid(format!(
            "unknown transport profile {:?}",
            manifest.transport.profile
        )));
    }

    // The member set: exactly the declared files, and the folders on their way.
    let mut declared: BTreeSet<String> =
        ["manifest.json".to_owned(), "checksums.sha256".to_owned()].into();
    let mut names = Vec::new();
    for component in &manifest.components {
        check_name(&component.name)?;
        names.push(component.name.clone());
        let mut paths = Vec::new();
        for file in &component.files {
            if !file.path.starts_with(&format!("{}/", component.name)) {
                return Err(invalid(format!(
                    "{} lists {}, which is outside it",
                    component.name, file.path
                )));
            }
            if !declared.insert(file.path.clone()) {
                return Err(invalid(format!("{} is declared twice", file.path)));
            }
            paths.push(file.path.clone());
        }
        if paths.windows(2).any(|w| w[0] >= w[1]) {
            return Err(invalid(format!(
                "{}'s files are not sorted by path",
                component.name
            )));
        }
    }
    if names.windows(2).any(|w| w[0] >= w[1]) {
        return Err(invalid(
            "the components are not sorted by name, or one is repeated",
        ));
    }
    let found: BTreeSet<String> = extracted.files.keys().cloned().collect();
    if let Some(extra) = found.difference(&declared).next() {
        return Err(invalid(format!(
            "{extra} is in the archive but not declared in manifest.json"
        )));
    }
    if let Some(missing) = declared.difference(&found).next() {
        return Err(invalid(format!(
            "{missing} is declared in manifest.json but missing from the archive"
        )));
    }
    let mut folders: BTreeSet<String> = ["/".to_owned()].into();
    folders.extend(
        declared
            .iter()
            .flat_map(|p| super::folders_of(p))
            .map(str::to_owned),
    );
    if folders != extracted.folders {
        return Err(invalid(
            "the archive's folders are not exactly those of its files",
        ));
    }

    // Every file, every row, every root.
    let mut rows = 0;
    for component in &manifest.components {
        for file in &component.files {
            let path = top.join(&file.path);
            let digest = durable::digest_file(&path)?;
            if digest.sha256 != file.sha256 || digest.bytes != file.bytes {
                return Err(invalid(format!(
                    "{}: SHA-256 {} ({} bytes), but manifest.json says {} ({} bytes)",
                    file.path, digest.sha256, digest.bytes, file.sha256, file.bytes
                )));
            }
            if file.role == "records" {
                let opened = File::open(&path).map_err(io_at("reading", &path))?;
                let (count, root) =
                    super::row_root(opened).map_err(|e| invalid(format!("{}: {e}", file.path)))?;
                if Some(count) != file.rows || Some(&root) != file.row_root.as_ref() {
                    return Err(invalid(format!(
                        "{}: {count} rows with row root {root}, but manifest.json says {} rows with row root {}",
                        file.path,
                        file.rows.map_or("no".into(), |r| r.to_string()),
                        file.row_root.as_deref().unwrap_or("none")
                    )));
                }
                rows += count;
            } else if file.rows.is_some() || file.row_root.is_some() {
                return Err(invalid(format!(
                    "{}: only records files have rows",
                    file.path
                )));
            }
        }
        if super::component_root(&component.name, &component.files) != component.root {
            return Err(invalid(format!(
                "{}: its root does not match its files",
                component.name
            )));
        }
    }
    if super::bundle_root(&manifest.components) != manifest.bundle_root {
        return Err(invalid("the bundle root does not match its components"));
    }
    let expected = super::checksums(&digest_of(&bytes).sha256, &manifest.components);
    let checksums_path = top.join("checksums.sha256");
    if fs::read(&checksums_path).map_err(io_at("reading", &checksums_path))? != expected.as_bytes()
    {
        return Err(invalid(
            "checksums.sha256 does not list exactly manifest.json and every file with its SHA-256",
        ));
    }
    for component in &manifest.components {
        check_registered(&top, component)?;
    }
    check_dependencies(&top, &manifest.components)?;
    Ok(Verified {
        sha256: transport.sha256,
        bytes: transport.bytes,
        bundle_root: manifest.bundle_root.clone(),
        components: names,
        files: declared.len(),
        rows,
        manifest,
    })
}

/// A component name is `runs/<run ID>` or `<registry>/<artifact ID>`, by the archive's ID
/// rules (so no name can reach outside the folder it is published in).
fn check_name(name: &str) -> Result<(), BundleError> {
    let bad = |why: String| Err(invalid(format!("component {name:?}: {why}")));
    let Some((registry, id)) = name.split_once('/') else {
        return bad("not runs/<ID> or <registry>/<ID>".into());
    };
    let known = registry == "runs" || Kind::ALL.iter().any(|k| k.registry() == registry);
    if !known {
        return bad(format!("unknown folder {registry}"));
    }
    if let Err(rule) = crate::archive::layout::check_portable_id(id) {
        return bad(rule.to_string());
    }
    Ok(())
}

/// A component's files are exactly those its manifest registers, with the hashes, sizes
/// and row counts it records: a sealed run's manifest and an artifact's manifest are what
/// the archive will check after an import, so the bundle must agree with them.
fn check_registered(top: &Path, component: &Component) -> Result<(), BundleError> {
    let name = &component.name;
    let declared: BTreeMap<&str, &super::BundleFile> = component
        .files
        .iter()
        .map(|f| (f.path.as_str(), f))
        .collect();
    // Path (relative to the component) → (role, sha256, bytes, rows).
    let mut expected: BTreeMap<String, (&str, String, u64, Option<u64>)> = BTreeMap::new();
    let manifest_path = format!("{name}/manifest.json");
    let Some(manifest_file) = declared.get(manifest_path.as_str()) else {
        return Err(invalid(format!("{name} has no manifest.json")));
    };
    if let Some(run) = name.strip_prefix("runs/") {
        let manifest: RunManifest = read_json(&top.join(&manifest_path), &manifest_path)?;
        if manifest.run_id != run {
            return Err(invalid(format!(
                "{manifest_path} describes run {}, not {run}",
                manifest.run_id
            )));
        }
        for entry in &manifest.imports {
            for file in entry.raw_files() {
                let role = if file.path == entry.raw.path {
                    "raw"
                } else {
                    "raw-companion"
                };
                expected.insert(
                    file.path.clone(),
                    (role, file.sha256.clone(), file.bytes, None),
                );
            }
            let records = &entry.records;
            expected.insert(
                records.path.clone(),
                (
                    "records",
                    records.sha256.clone(),
                    records.bytes,
                    Some(records.count),
                ),
            );
        }
        for attachment in &manifest.attachments {
            expected.insert(
                attachment.path.clone(),
                (
                    "attachment",
                    attachment.sha256.clone(),
                    attachment.bytes,
                    None,
                ),
            );
        }
        expected.insert(
            layout::MANIFEST.into(),
            (
                "run-manifest",
                manifest_file.sha256.clone(),
                manifest_file.bytes,
                None,
            ),
        );
    } else {
        let manifest: ArtifactManifest = read_json(&top.join(&manifest_path), &manifest_path)?;
        if artifact_dir(
            Kind::parse(&manifest.kind)
                .ok_or_else(|| invalid(format!("{manifest_path}: unknown kind")))?,
            &manifest.id,
        ) != *name
        {
            return Err(invalid(format!(
                "{manifest_path} describes {} {}, which does not live in {name}",
                manifest.kind, manifest.id
            )));
        }
        let payload = &manifest.artifact;
        expected.insert(
            payload.path.clone(),
            (
                "artifact-payload",
                payload.sha256.clone(),
                payload.bytes,
                None,
            ),
        );
        expected.insert(
            layout::MANIFEST.into(),
            (
                "artifact-manifest",
                manifest_file.sha256.clone(),
                manifest_file.bytes,
                None,
            ),
        );
    }
    let found: BTreeMap<String, &super::BundleFile> = component
        .files
        .iter()
        .map(|f| (f.path[name.len() + 1..].to_owned(), f))
        .collect();
    if found.keys().ne(expected.keys()) {
        return Err(invalid(format!(
            "{name}: its files are not exactly those its manifest.json registers"
        )));
    }
    for (path, (role, sha256, bytes, rows)) in &expected {
        let file = found[path];
        if file.role != *role
            || file.sha256 != *sha256
            || file.bytes != *bytes
            || (rows.is_some() && file.rows != *rows)
        {
            return Err(invalid(format!(
                "{name}/{path}: the bundle's role, SHA-256, size or rows differ from what {manifest_path} registers"
            )));
        }
    }
    Ok(())
}

/// Every run is sealed, and every pin a run or an artifact makes names a component of the
/// bundle with exactly the pinned hash.
fn check_dependencies(top: &Path, components: &[Component]) -> Result<(), BundleError> {
    let payload_sha = |kind: Kind, id: &str| -> Option<String> {
        let dir = artifact_dir(kind, id);
        components
            .iter()
            .find(|c| c.name == dir)?
            .files
            .iter()
            .find(|f| f.path == format!("{dir}/artifact.json"))
            .map(|f| f.sha256.clone())
    };
    let run_sha = |run: &str| -> Option<String> {
        let name = format!("runs/{run}");
        components
            .iter()
            .find(|c| c.name == name)?
            .files
            .iter()
            .find(|f| f.path == format!("{name}/manifest.json"))
            .map(|f| f.sha256.clone())
    };
    let missing = |what: String| {
        invalid(format!(
            "{what}: the bundle does not hold it (a missing dependency)"
        ))
    };
    for component in components {
        if let Some(run) = component.name.strip_prefix("runs/") {
            let manifest: RunManifest = read_json(
                &top.join(&component.name).join("manifest.json"),
                &component.name,
            )?;
            if manifest.status != RunStatus::Sealed {
                return Err(invalid(format!("run {run} is not sealed")));
            }
            let contract = BenchmarkContract::of(&manifest.metadata)
                .map_err(|e| invalid(format!("{}: {e}", component.name)))?;
            if let Some(contract) = contract {
                for (kind, pin) in [
                    (Kind::ItemBank, &contract.item_bank),
                    (Kind::Protocol, &contract.protocol),
                ] {
                    if payload_sha(kind, &pin.id).as_deref() != Some(pin.sha256.as_str()) {
                        return Err(missing(format!(
                            "run {run} pins {kind} {} at {}",
                            pin.id, pin.sha256
                        )));
                    }
                }
            }
        } else {
            let manifest: ArtifactManifest = read_json(
                &top.join(&component.name).join("manifest.json"),
                &component.name,
            )?;
            for pin in &manifest.dependencies.artifacts {
                let kind = Kind::parse(&pin.kind).ok_or_else(|| {
                    invalid(format!("{}: unknown kind {}", component.name, pin.kind))
                })?;
                if payload_sha(kind, &pin.id).as_deref() != Some(pin.sha256.as_str()) {
                    return Err(missing(format!(
                        "{} pins {} {} at {}",
                        component.name, pin.kind, pin.id, pin.sha256
                    )));
                }
            }
            for pin in &manifest.dependencies.runs {
                if run_sha(&pin.run_id).as_deref() != Some(pin.manifest_sha256.as_str()) {
                    return Err(missing(format!(
                        "{} pins run {} at {}",
                        component.name, pin.run_id, pin.manifest_sha256
                    )));
                }
            }
        }
    }
    Ok(())
}
