//! `babel verify-bundle`: checks a bundle completely without touching any archive. The
//! transport hash first (against `--expect-sha256`), then the zstd frame and the tar
//! stream under the verifier's own ceilings, extracted into a private temporary folder
//! (refusing unsafe, duplicate, case-colliding, out-of-order and undeclared members and
//! anything but files and folders), then the manifest's canonical bytes, the member set,
//! every file's hash and size, every records file's rows and row root, every component
//! root, the bundle root, `checksums.sha256`, and every dependency the bundle's runs and
//! artifacts pin. Last, what it holds is checked as `babel validate` checks an archive
//! (each record against its run and raw file, each artifact's payload): the hashes prove
//! only that the bundle is what its maker packed. Manifests and payloads, parsed whole,
//! are at most [`MAX_MANIFEST_BYTES`] each.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::{BundleManifest, Component, TOP, tar};
use crate::archive::artifacts::contract::BenchmarkContract;
use crate::archive::artifacts::{ArtifactManifest, Kind, artifact_dir};
use crate::archive::manifest::{RunManifest, RunStatus};
use crate::archive::{ArchiveError, layout, validate};
use crate::durable::{self, PathIoError, digest_of, io_at};

/// The name prefix of the private folder a bundle is unpacked into.
pub const STAGING_PREFIX: &str = ".babel-bundle-";

/// Limits the verifier (not the bundle) sets, checked while streaming. Those left unset
/// are sized from the bundle: nothing is unpacked before `manifest.json` has been read
/// (at most [`MAX_MANIFEST_BYTES`], after at most [`preamble_ceiling`] decompressed bytes
/// and [`MAX_PREAMBLE_MEMBERS`] members) and checked; then every member must be one it
/// declares, of the size it declares, and what it declares must fit in the free space.
#[derive(Debug, Clone, Copy)]
pub struct Ceilings {
    /// The bundle file's size.
    pub compressed: u64,
    /// The tar stream's size once decompressed (default: what the manifest declares).
    pub expanded: Option<u64>,
    /// Tar members, files and folders (default: what the manifest declares).
    pub members: Option<u64>,
    /// One file's size (default: what the manifest declares for it).
    pub member: Option<u64>,
}

impl Default for Ceilings {
    fn default() -> Self {
        Self {
            compressed: 64 << 30,
            expanded: None,
            members: None,
            member: None,
        }
    }
}

/// The largest `manifest.json` a verifier reads.
pub const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// The most members before `manifest.json` (the top folder, `checksums.sha256`, and the
/// artifacts of the registries that sort before it).
pub const MAX_PREAMBLE_MEMBERS: u64 = 100_000;

/// The most decompressed bytes read before `manifest.json` is found, for a bundle of
/// `compressed` bytes: 1 GiB, or 256 times the bundle, whichever is more (or the expanded
/// ceiling, when one is set). A bomb is refused there, having written nothing.
pub fn preamble_ceiling(compressed: u64, ceilings: &Ceilings) -> u64 {
    ceilings
        .expanded
        .unwrap_or_else(|| (1u64 << 30).max(compressed.saturating_mul(256)))
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
    // First pass: find and check manifest.json, writing nothing.
    let (manifest_bytes, manifest) = read_manifest(file, size, ceilings)?;
    let declared = Declared::of(&manifest)?;
    // A run's or an artifact's manifest, and an artifact's payload, are parsed whole (by
    // validate, below): each no larger than the bundle's own manifest, so that a small,
    // well-compressed bundle cannot make the verifier hold gigabytes of parsed values.
    if let Some(file) = manifest
        .components
        .iter()
        .flat_map(|c| &c.files)
        .find(|f| parsed_whole(&f.role) && f.bytes > MAX_MANIFEST_BYTES)
    {
        return Err(invalid(format!(
            "{} is declared as {} bytes, more than the {MAX_MANIFEST_BYTES} a verifier parses of a manifest or payload",
            file.path, file.bytes
        )));
    }
    let needed = declared.tar_bytes();
    if let Some(ceiling) = ceilings.expanded
        && needed > ceiling
    {
        return Err(invalid(format!(
            "the bundle declares {needed} bytes once unpacked, more than the {ceiling} this verifier accepts"
        )));
    }
    if let Some(ceiling) = ceilings.members
        && declared.members() > ceiling
    {
        return Err(invalid(format!(
            "the bundle declares {} members, more than the {ceiling} this verifier accepts",
            declared.members()
        )));
    }
    if let Some(ceiling) = ceilings.member
        && let Some((path, bytes)) = declared.files.iter().find(|(_, bytes)| **bytes > ceiling)
    {
        return Err(invalid(format!(
            "{path} is {bytes} bytes, more than the {ceiling} this verifier accepts"
        )));
    }
    require_room(scratch, needed)?;
    let dir = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempdir_in(scratch)
        .map_err(io_at("creating a folder in", scratch))?;
    // Second pass: unpack exactly what the manifest declares.
    let extracted = extract(file, dir.path(), &declared, needed)?;
    let verified = check(
        dir.path(),
        &extracted,
        transport,
        manifest_bytes,
        manifest,
        &declared,
    )?;
    check_contents(&dir.path().join(TOP))?;
    Ok(Staged { verified, dir })
}

/// Whether a file of this role is parsed whole when the bundle is checked.
fn parsed_whole(role: &str) -> bool {
    super::is_manifest(role) || role == "artifact-payload"
}

/// How many of validate's findings a refusal lists (the count says how many there are).
const FINDINGS_LISTED: usize = 5;

/// What the bundle holds, checked as `babel validate` checks an archive: its hashes prove
/// only that it is what its maker packed, not that each record belongs to its run or points
/// at its raw file's item, and an archive must not take in what its own validate refuses.
fn check_contents(top: &Path) -> Result<(), BundleError> {
    let report = validate::validate_unpacked(top).map_err(|error| match error {
        ArchiveError::Io(error) => BundleError::Io(error),
        other => invalid(other.to_string()),
    })?;
    if report.ok {
        return Ok(());
    }
    let listed = report.findings.len().min(FINDINGS_LISTED);
    let mut message = format!(
        "what it holds does not pass babel validate ({} finding(s); the first {listed} below; \
         its maker can run `babel validate` on the archive it was exported from)",
        report.findings.len()
    );
    for finding in &report.findings[..listed] {
        message.push_str(&format!("\n  {finding}"));
    }
    Err(invalid(message))
}

/// Refuses to unpack `needed` bytes into a folder on a file system with less room, naming
/// the folder: a full disk is a full disk, not a bad bundle.
pub fn require_room(folder: &Path, needed: u64) -> Result<(), BundleError> {
    let stats = rustix::fs::statvfs(folder).map_err(|errno| {
        BundleError::Io(PathIoError {
            action: "measuring the free space of",
            path: folder.to_owned(),
            source: io::Error::from_raw_os_error(errno.raw_os_error()),
        })
    })?;
    let free = stats.f_bavail.saturating_mul(stats.f_frsize);
    // A margin for the folders and the file system's own blocks.
    let wanted = needed.saturating_add(needed / 64).saturating_add(1 << 20);
    if free < wanted {
        return Err(BundleError::Io(PathIoError {
            action: "unpacking the bundle into",
            path: folder.to_owned(),
            source: io::Error::new(
                io::ErrorKind::StorageFull,
                format!("the bundle needs {wanted} bytes there, and {free} are free"),
            ),
        }));
    }
    Ok(())
}

/// What a bundle's manifest declares: every file (path inside the top folder → bytes) and
/// every folder on their way (`/` for the top folder, `a/`, `a/b/`, ...).
struct Declared {
    files: BTreeMap<String, u64>,
    folders: BTreeSet<String>,
}

impl Declared {
    fn of(manifest: &BundleManifest) -> Result<Self, BundleError> {
        let mut files = BTreeMap::new();
        for component in &manifest.components {
            check_name(&component.name)?;
            for file in &component.files {
                if !file.path.starts_with(&format!("{}/", component.name)) {
                    return Err(invalid(format!(
                        "{} lists {}, which is outside it",
                        component.name, file.path
                    )));
                }
                safe_path(&format!("{TOP}/{}", file.path))?;
                if files.insert(file.path.clone(), file.bytes).is_some() {
                    return Err(invalid(format!("{} is declared twice", file.path)));
                }
            }
        }
        // The two files of the bundle itself; manifest.json's size is read when unpacked.
        if files.contains_key("manifest.json") || files.contains_key("checksums.sha256") {
            return Err(invalid(
                "a component declares manifest.json or checksums.sha256",
            ));
        }
        let mut folders: BTreeSet<String> = ["/".to_owned()].into();
        folders.extend(
            files
                .keys()
                .flat_map(|p| super::folders_of(p))
                .map(str::to_owned),
        );
        Ok(Self { files, folders })
    }

    /// Files and folders, with the bundle's two own files.
    fn members(&self) -> u64 {
        (self.files.len() + self.folders.len() + 2) as u64
    }

    /// The size of the tar stream the declaration allows: every header and padded
    /// payload, the bundle's own two files at their ceilings, the end blocks.
    fn tar_bytes(&self) -> u64 {
        let files: u64 = self
            .files
            .values()
            .map(|bytes| tar::member_size(*bytes))
            .sum();
        let own = 2 * tar::member_size(MAX_MANIFEST_BYTES);
        files + own + self.folders.len() as u64 * tar::BLOCK as u64 + tar::END.len() as u64
    }
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

/// Reads one tar header of a stream: the member it declares, `None` at the end (two zero
/// blocks), after checking that it is exactly the header babel writes for that path and
/// size (which also fixes how a long path is split), so one archive has one byte form.
fn next_member(
    stream: &mut impl Read,
    count: u64,
    broken: &dyn Fn(io::Error) -> BundleError,
) -> Result<Option<tar::Member>, BundleError> {
    let block = tar::read_block(stream).map_err(broken)?;
    let Some(member) = tar::parse_header(&block).map_err(|e| {
        let path = tar::path_of(&block);
        if path.is_empty() {
            invalid(format!("member {}: {e}", count + 1))
        } else {
            invalid(format!("member {path:?}: {e}"))
        }
    })?
    else {
        let second = tar::read_block(stream).map_err(broken)?;
        if second.iter().any(|b| *b != 0) {
            return Err(invalid("a single zero block inside the archive"));
        }
        return Ok(None);
    };
    if tar::header(&member.path, member.size).ok().as_ref() != Some(&block) {
        return Err(invalid(format!(
            "member {:?}: its header is not the tar-ustar-v1 header of that path and size",
            member.path
        )));
    }
    Ok(Some(member))
}

/// The rules every member's path follows in a stream: safe, inside the top folder, in
/// strictly increasing byte order, no two differing only in letter case, in a folder
/// declared before it. Returns the path inside the top folder.
struct PathRules {
    previous: Option<String>,
    folded: HashSet<String>,
    folders: BTreeSet<String>,
}

impl PathRules {
    fn new() -> Self {
        Self {
            previous: None,
            folded: HashSet::new(),
            folders: BTreeSet::new(),
        }
    }

    fn check(&mut self, member: &tar::Member) -> Result<String, BundleError> {
        let path = &member.path;
        let inside = safe_path(path)?;
        if self
            .previous
            .as_ref()
            .is_some_and(|p| p.as_str() >= path.as_str())
        {
            return Err(invalid(format!(
                "member {path:?} is out of order or repeated (members are sorted by path bytes)"
            )));
        }
        self.previous = Some(path.clone());
        if !self.folded.insert(path.to_lowercase()) {
            return Err(invalid(format!(
                "member {path:?} differs from another only in letter case"
            )));
        }
        let parent = match inside.trim_end_matches('/').rsplit_once('/') {
            Some((parent, _)) => format!("{parent}/"),
            None if inside.is_empty() => String::new(),
            None => "/".into(),
        };
        if !inside.is_empty() && !self.folders.contains(&parent) {
            return Err(invalid(format!(
                "member {path:?} is in a folder the archive does not declare first"
            )));
        }
        if member.directory {
            self.folders.insert(if inside.is_empty() {
                "/".into()
            } else {
                inside.clone()
            });
        }
        Ok(inside)
    }
}

/// The decompressed tar stream of a bundle, failing past `ceiling` bytes.
fn open_stream(
    file: &Path,
) -> Result<zstd::stream::read::Decoder<'static, io::BufReader<File>>, BundleError> {
    check_frame(file)?;
    let input = File::open(file).map_err(io_at("reading", file))?;
    Ok(zstd::stream::read::Decoder::new(input)
        .map_err(io_at("decompressing", file))?
        .single_frame())
}

/// What a read error of the decompressed stream means.
fn broken(e: io::Error) -> BundleError {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => invalid("the tar stream ends early (truncated)"),
        io::ErrorKind::FileTooLarge => invalid(e.to_string()),
        _ => invalid(format!("the bundle cannot be decompressed: {e}")),
    }
}

/// The first pass: the stream up to `manifest.json`, whose bytes are read (at most
/// [`MAX_MANIFEST_BYTES`]) and checked: its canonical form, format, transport profile
/// and component names. Nothing is written.
fn read_manifest(
    file: &Path,
    compressed: u64,
    ceilings: &Ceilings,
) -> Result<(Vec<u8>, BundleManifest), BundleError> {
    let mut decoder = open_stream(file)?;
    let mut stream = Limited {
        inner: &mut decoder,
        left: preamble_ceiling(compressed, ceilings),
    };
    let mut rules = PathRules::new();
    let mut members = 0u64;
    let manifest_path = format!("{TOP}/manifest.json");
    let bytes = loop {
        let Some(member) = next_member(&mut stream, members, &broken)? else {
            return Err(invalid("the bundle has no manifest.json"));
        };
        members += 1;
        if members > MAX_PREAMBLE_MEMBERS {
            return Err(invalid(format!(
                "more than {MAX_PREAMBLE_MEMBERS} members before manifest.json"
            )));
        }
        rules.check(&member)?;
        if member.path > manifest_path {
            return Err(invalid("the bundle has no manifest.json"));
        }
        if member.path == manifest_path {
            if member.directory || member.size > MAX_MANIFEST_BYTES {
                return Err(invalid(format!(
                    "manifest.json is {} bytes, more than the {MAX_MANIFEST_BYTES} a verifier reads",
                    member.size
                )));
            }
            let mut bytes = Vec::with_capacity(member.size as usize);
            (&mut stream)
                .take(member.size)
                .read_to_end(&mut bytes)
                .map_err(broken)?;
            if bytes.len() as u64 != member.size {
                return Err(invalid("the tar stream ends early (truncated)"));
            }
            let padding = tar::member_size(member.size) - tar::BLOCK as u64 - member.size;
            let mut pad = vec![0u8; padding as usize];
            stream.read_exact(&mut pad).map_err(broken)?;
            if pad.iter().any(|b| *b != 0) {
                return Err(invalid(format!(
                    "member {manifest_path:?}: its padding is not NUL (is it longer than its header says?)"
                )));
            }
            break bytes;
        }
        let padded = tar::member_size(member.size) - tar::BLOCK as u64;
        io::copy(&mut (&mut stream).take(padded), &mut io::sink()).map_err(broken)?;
    };
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
    Ok((bytes, manifest))
}

/// The second pass: unpacks every member into `into`, each one declared (a file of its
/// declared size, refused before anything of it is written; a folder on the way to a
/// declared file), the stream at most `ceiling` bytes. A failed write (a full disk) is an
/// I/O error at its path, not a bad bundle.
fn extract(
    file: &Path,
    into: &Path,
    declared: &Declared,
    ceiling: u64,
) -> Result<Extracted, BundleError> {
    let mut decoder = open_stream(file)?;
    let mut stream = Limited {
        inner: &mut decoder,
        left: ceiling,
    };
    let mut extracted = Extracted {
        files: BTreeMap::new(),
        folders: BTreeSet::new(),
    };
    let mut rules = PathRules::new();
    let mut members = 0u64;
    while let Some(member) = next_member(&mut stream, members, &broken)? {
        members += 1;
        let path = member.path.clone();
        let inside = rules.check(&member)?;
        let target = into.join(&path);
        if member.directory {
            let folder = if inside.is_empty() {
                "/".to_owned()
            } else {
                inside
            };
            if !declared.folders.contains(&folder) {
                return Err(invalid(format!(
                    "member {path:?} is a folder that holds no file manifest.json declares"
                )));
            }
            fs::create_dir(&target).map_err(io_at("creating", &target))?;
            extracted.folders.insert(folder);
            continue;
        }
        let expected = match inside.as_str() {
            "manifest.json" | "checksums.sha256" => {
                (member.size <= MAX_MANIFEST_BYTES).then_some(member.size)
            }
            other => declared.files.get(other).copied(),
        };
        match expected {
            None => {
                return Err(invalid(format!(
                    "{inside} is in the archive but not declared in manifest.json"
                )));
            }
            Some(bytes) if bytes != member.size => {
                return Err(invalid(format!(
                    "member {path:?}: its header says {} bytes, but manifest.json declares {bytes}",
                    member.size
                )));
            }
            Some(_) => {}
        }
        copy_member(&mut stream, member.size, &target)?;
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

/// Copies `size` bytes of the stream into the new file `target`: a read that fails is the
/// bundle's fault, a write that fails (a full disk) the file system's, named at its path.
fn copy_member(stream: &mut impl Read, size: u64, target: &Path) -> Result<(), BundleError> {
    let out = File::create_new(target).map_err(io_at("creating", target))?;
    let mut writer = io::BufWriter::new(out);
    let mut left = size;
    let mut buffer = vec![0u8; 256 * 1024];
    while left > 0 {
        let want = buffer.len().min(left as usize);
        let n = stream.read(&mut buffer[..want]).map_err(broken)?;
        if n == 0 {
            return Err(invalid(format!(
                "member {:?} ends early: {} of {size} bytes",
                target.display(),
                size - left
            )));
        }
        writer
            .write_all(&buffer[..n])
            .map_err(io_at("writing", target))?;
        left -= n as u64;
    }
    writer.flush().map_err(io_at("writing", target))?;
    Ok(())
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
    bytes: Vec<u8>,
    manifest: BundleManifest,
    declared: &Declared,
) -> Result<Verified, BundleError> {
    let top = dir.join(TOP);
    let manifest_path = top.join("manifest.json");
    if fs::read(&manifest_path).map_err(io_at("reading", &manifest_path))? != bytes {
        return Err(invalid(
            "manifest.json changed between the two passes over the bundle",
        ));
    }
    let names: Vec<String> = manifest.components.iter().map(|c| c.name.clone()).collect();
    check_member_set(&manifest, &names, extracted, declared)?;
    let rows = check_files(&top, &manifest)?;
    check_checksums(&top, &bytes, &manifest)?;
    for component in &manifest.components {
        check_registered(&top, component)?;
    }
    check_dependencies(&top, &manifest.components)?;
    Ok(Verified {
        sha256: transport.sha256,
        bytes: transport.bytes,
        bundle_root: manifest.bundle_root.clone(),
        components: names,
        files: declared.files.len() + OWN_FILES.len(),
        rows,
        manifest,
    })
}

/// The bundle's own files, beside its components'.
const OWN_FILES: [&str; 2] = ["checksums.sha256", "manifest.json"];

/// The member set: exactly the declared files (each component's sorted), the bundle's own
/// two, and the folders on their way.
fn check_member_set(
    manifest: &BundleManifest,
    names: &[String],
    extracted: &Extracted,
    declared: &Declared,
) -> Result<(), BundleError> {
    for component in &manifest.components {
        if component.files.windows(2).any(|w| w[0].path >= w[1].path) {
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
    for missing in declared.files.keys().map(String::as_str).chain(OWN_FILES) {
        if !extracted.files.contains_key(missing) {
            return Err(invalid(format!(
                "{missing} is declared in manifest.json but missing from the archive"
            )));
        }
    }
    if declared.folders != extracted.folders {
        return Err(invalid(
            "the archive's folders are not exactly those of its files",
        ));
    }
    Ok(())
}

/// Every file, every row, every root; the number of rows of the records files.
fn check_files(top: &Path, manifest: &BundleManifest) -> Result<u64, BundleError> {
    let mut rows = 0;
    for component in &manifest.components {
        for file in &component.files {
            rows += check_file(top, file)?;
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
    Ok(rows)
}

/// One file's digest and, for a records file, its row count and row root; the rows it
/// holds.
fn check_file(top: &Path, file: &super::BundleFile) -> Result<u64, BundleError> {
    let path = top.join(&file.path);
    let digest = durable::digest_file(&path)?;
    if digest.sha256 != file.sha256 || digest.bytes != file.bytes {
        return Err(invalid(format!(
            "{}: SHA-256 {} ({} bytes), but manifest.json says {} ({} bytes)",
            file.path, digest.sha256, digest.bytes, file.sha256, file.bytes
        )));
    }
    if file.role != "records" {
        if file.rows.is_some() || file.row_root.is_some() {
            return Err(invalid(format!(
                "{}: only records files have rows",
                file.path
            )));
        }
        return Ok(0);
    }
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
    Ok(count)
}

/// `checksums.sha256` lists exactly manifest.json (of `bytes`) and every file; the first
/// line that differs is named.
fn check_checksums(top: &Path, bytes: &[u8], manifest: &BundleManifest) -> Result<(), BundleError> {
    let expected = super::checksums(&digest_of(bytes).sha256, &manifest.components);
    let checksums_path = top.join("checksums.sha256");
    let found = fs::read(&checksums_path).map_err(io_at("reading", &checksums_path))?;
    if found == expected.as_bytes() {
        return Ok(());
    }
    let found = String::from_utf8_lossy(&found);
    let (line, text) = found
        .split_inclusive('\n')
        .zip(
            expected
                .split_inclusive('\n')
                .map(Some)
                .chain(std::iter::repeat(None)),
        )
        .position(|(found, expected)| Some(found) != expected)
        .map_or(
            (found.lines().count() + 1, String::from("(missing)")),
            |at| (at + 1, found.lines().nth(at).unwrap_or_default().to_owned()),
        );
    Err(invalid(format!(
        "checksums.sha256 line {line} ({text:?}) is not what manifest.json and the files give: it must list exactly manifest.json and every file with its SHA-256"
    )))
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
    let manifest_path = format!("{name}/manifest.json");
    let Some(manifest_file) = component.files.iter().find(|f| f.path == manifest_path) else {
        return Err(invalid(format!("{name} has no manifest.json")));
    };
    let expected = if let Some(run) = name.strip_prefix("runs/") {
        registered_by_run(top, run, &manifest_path, manifest_file)?
    } else {
        registered_by_artifact(top, name, &manifest_path, manifest_file)?
    };
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

/// Path (relative to the component) → (role, sha256, bytes, rows), as a manifest
/// registers them.
type Registered = BTreeMap<String, (&'static str, String, u64, Option<u64>)>;

/// The files a run's manifest registers, its own included.
fn registered_by_run(
    top: &Path,
    run: &str,
    manifest_path: &str,
    manifest_file: &super::BundleFile,
) -> Result<Registered, BundleError> {
    let manifest: RunManifest = read_json(&top.join(manifest_path), manifest_path)?;
    if manifest.run_id != run {
        return Err(invalid(format!(
            "{manifest_path} describes run {}, not {run}",
            manifest.run_id
        )));
    }
    let mut expected = Registered::new();
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
    Ok(expected)
}

/// The files an artifact's manifest registers, its own included; the artifact must live
/// in the component `name`.
fn registered_by_artifact(
    top: &Path,
    name: &str,
    manifest_path: &str,
    manifest_file: &super::BundleFile,
) -> Result<Registered, BundleError> {
    let manifest: ArtifactManifest = read_json(&top.join(manifest_path), manifest_path)?;
    if artifact_dir(
        Kind::parse(&manifest.kind)
            .ok_or_else(|| invalid(format!("{manifest_path}: unknown kind")))?,
        &manifest.id,
    ) != name
    {
        return Err(invalid(format!(
            "{manifest_path} describes {} {}, which does not live in {name}",
            manifest.kind, manifest.id
        )));
    }
    let payload = &manifest.artifact;
    let mut expected = Registered::new();
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
    Ok(expected)
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
