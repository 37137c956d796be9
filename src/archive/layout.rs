//! Where everything lives under ROOT, the portable ID rule, and the package-path rule every
//! stored path obeys. Pure path arithmetic: nothing here touches the disk.

use std::fmt;
use std::path::{Path, PathBuf};

/// The archive marker file at ROOT.
pub const MARKER: &str = "babel-archive.json";
/// The marker's `format` value.
pub const MARKER_FORMAT: &str = "babel-archive";
/// The archive schema version this build reads and writes.
pub const ARCHIVE_SCHEMA_VERSION: u64 = 1;
/// The folder of runs.
pub const RUNS: &str = "runs";
/// The five artifact registries.
pub const REGISTRIES: [&str; 5] = [
    "item-banks",
    "protocols",
    "model-panels",
    "calibrations",
    "releases",
];
/// The operational folder: lock, journal, staging. Never published, never validated as data.
pub const OPERATIONAL: &str = ".babel";
/// A run's (and an artifact's) manifest file name.
pub const MANIFEST: &str = "manifest.json";
/// Suffix of the manifest written beside the old one before the rename that commits it.
pub const NEW_SUFFIX: &str = ".new";
/// Run sub-folders.
pub const RAW: &str = "raw";
pub const RECORDS: &str = "records";
pub const ATTACHMENTS: &str = "attachments";
/// Longest ID accepted.
pub const MAX_ID_LEN: usize = 128;

/// The dataset card at ROOT, published as the Hub repository's README.
pub const DATASET_CARD: &str = "README.md";
/// The checksum list a publication carries at its root (`sha256sum -c` format).
pub const CHECKSUMS: &str = "checksums.sha256";
/// The Hub-managed attributes file a download leaves at ROOT.
pub const GITATTRIBUTES: &str = ".gitattributes";

/// Whether an entry at ROOT (a file or folder name) is part of the archive: the marker,
/// `runs/`, the artifact registries, `history/`, the operational `.babel/`, and the files
/// a publication carries at its root (the dataset card `README.md`, `checksums.sha256`
/// and the Hub's `.gitattributes`). Anything else (notes, a `.env`, exported files) is
/// the user's: never published, bundled or validated.
pub fn is_managed_at_root(name: &str) -> bool {
    [
        MARKER,
        RUNS,
        OPERATIONAL,
        super::history::HISTORY,
        DATASET_CARD,
        CHECKSUMS,
        GITATTRIBUTES,
    ]
    .contains(&name)
        || REGISTRIES.contains(&name)
}

/// Paths of one archive, all derived from its root.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// The layout of the archive at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The archive root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where derived output may be written: a report, a matrix, a bundle, an export folder,
    /// a panel's items. Never inside the archive root (derived files are not archive data:
    /// validate never sees them, a publication never carries them), so every command that
    /// writes one asks this one rule. `dest` is a file (or, with `folder`, a folder) to be
    /// created; its parent folder must exist. Returns `dest` with its parent resolved
    /// (symlinks and `..` followed), which is where it is then written.
    pub fn derived_destination(
        &self,
        dest: &Path,
        folder: bool,
    ) -> Result<PathBuf, super::ArchiveError> {
        let root = self.root();
        let usage = |message: String, hint: &str| super::ArchiveError::Usage {
            message,
            hint: Some(hint.into()),
        };
        let name = dest.file_name().ok_or_else(|| {
            usage(
                format!(
                    "{} does not name a {}",
                    dest.display(),
                    if folder { "folder" } else { "file" }
                ),
                if folder {
                    "give a folder name such as out/"
                } else {
                    "give a file name such as report.html"
                },
            )
        })?;
        let parent = crate::durable::parent_of(dest);
        let resolved_parent = parent.canonicalize().map_err(|error| {
            usage(
                format!("cannot write into {}: {error}", parent.display()),
                "create the folder first, or choose an existing one",
            )
        })?;
        let resolved_root = root
            .canonicalize()
            .map_err(crate::durable::io_at("resolving", root))?;
        let resolved = resolved_parent.join(name);
        // A folder that exists already is resolved whole (it may be a link into the archive).
        let checked = match (folder, resolved.canonicalize()) {
            (true, Ok(existing)) => existing,
            _ => resolved.clone(),
        };
        if checked.starts_with(&resolved_root) {
            return Err(usage(
                format!(
                    "{} is inside the archive {}; derived output (reports, matrices, bundles, exports) is written outside it",
                    dest.display(),
                    root.display()
                ),
                "write it to a folder outside the archive root",
            ));
        }
        if !folder && resolved.symlink_metadata().is_ok() {
            return Err(usage(
                format!(
                    "{} already exists; babel never overwrites its output",
                    dest.display()
                ),
                "choose a new file name, or remove the old file first",
            ));
        }
        Ok(resolved)
    }

    /// A ROOT-relative `/` path turned into a filesystem path.
    pub fn resolve(&self, relative: &str) -> PathBuf {
        relative
            .split('/')
            .fold(self.root.clone(), |path, part| path.join(part))
    }

    pub fn marker(&self) -> PathBuf {
        self.root.join(MARKER)
    }

    pub fn runs(&self) -> PathBuf {
        self.root.join(RUNS)
    }

    pub fn operational(&self) -> PathBuf {
        self.root.join(OPERATIONAL)
    }

    pub fn lock(&self) -> PathBuf {
        self.operational().join("lock")
    }

    pub fn journal(&self) -> PathBuf {
        self.operational().join("journal.json")
    }

    pub fn staging(&self) -> PathBuf {
        self.operational().join("staging")
    }

    pub fn run_dir(&self, run: &RunId) -> PathBuf {
        self.resolve(&run_relative(run, ""))
    }
}

/// The ROOT-relative path of something inside a run (`""` for the run folder itself).
pub fn run_relative(run: &RunId, inside: &str) -> String {
    if inside.is_empty() {
        format!("{RUNS}/{run}")
    } else {
        format!("{RUNS}/{run}/{inside}")
    }
}

/// Run-relative path of import `seq`'s raw copy.
pub fn raw_path(seq: u64, stored_basename: &str) -> String {
    format!("{RAW}/{seq:04}-{stored_basename}")
}

/// Run-relative path of import `seq`'s normalized records.
pub fn records_path(seq: u64) -> String {
    format!("{RECORDS}/{seq:04}.parquet")
}

/// Run-relative path of an attachment.
pub fn attachment_path(name: &str) -> String {
    format!("{ATTACHMENTS}/{name}")
}

/// Why an ID or a path is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RuleViolation(pub String);

const WINDOWS_DEVICES: [&str; 22] = [
    "con", "prn", "aux", "nul", "com1", "com2", "com3", "com4", "com5", "com6", "com7", "com8",
    "com9", "lpt1", "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9",
];

/// Checks the portable ID rule shared by runs and artifacts: 1 to 128 characters from
/// `A-Z a-z 0-9 . _ -`, starting with a letter or digit, not ending with `.`, and not a
/// Windows device name. Such an ID is a safe single path component on every system.
pub fn check_portable_id(id: &str) -> Result<(), RuleViolation> {
    let fail = |why: &str| Err(RuleViolation(format!("invalid ID {id:?}: {why}")));
    if id.is_empty() || id.len() > MAX_ID_LEN {
        return fail("an ID has 1 to 128 characters");
    }
    if let Some(bad) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return fail(&format!(
            "{bad:?} is not allowed (use letters, digits, '.', '_' and '-')"
        ));
    }
    if !id.as_bytes()[0].is_ascii_alphanumeric() {
        return fail("an ID starts with a letter or digit");
    }
    if id.ends_with('.') {
        return fail("an ID does not end with '.'");
    }
    let stem = id.split('.').next().unwrap_or(id).to_ascii_lowercase();
    if WINDOWS_DEVICES.contains(&stem.as_str()) {
        return fail("that name is reserved on Windows");
    }
    Ok(())
}

/// A validated run ID (see [`check_portable_id`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(String);

impl RunId {
    /// Validates `id` as a run ID.
    pub fn parse(id: &str) -> Result<Self, RuleViolation> {
        check_portable_id(id).map(|()| Self(id.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks a stored, ROOT- or package-relative path: `/`-separated, no empty, `.` or `..`
/// components, not absolute, no backslash, NUL or other control character, no URI scheme.
pub fn check_package_path(path: &str) -> Result<(), RuleViolation> {
    let fail = |why: &str| Err(RuleViolation(format!("unsafe path {path:?}: {why}")));
    if path.is_empty() {
        return fail("it is empty");
    }
    if path.starts_with('/') {
        return fail("it is absolute");
    }
    if path.contains('\\') {
        return fail("it contains a backslash");
    }
    if path.chars().any(char::is_control) {
        return fail("it contains a control character");
    }
    if let Some((scheme, _)) = path.split_once(':')
        && !scheme.is_empty()
        && !scheme.contains('/')
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return fail("it starts with a URI scheme or drive letter");
    }
    for component in path.split('/') {
        match component {
            "" => return fail("it has an empty component"),
            "." | ".." => return fail("it has a '.' or '..' component"),
            _ => {}
        }
    }
    Ok(())
}

/// Turns a user's file name into the part of a raw file name after `<seq>-`: characters
/// that are unsafe in a package path or on Windows become `_`; the result is at most 160
/// bytes and never empty. The name as given is kept separately in the manifest.
pub fn stored_basename(given: &str) -> String {
    let mut safe: String = given
        .chars()
        .map(|c| {
            if c.is_control() || matches!(c, '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|') {
                '_'
            } else {
                c
            }
        })
        .collect();
    while safe.len() > 160 {
        safe.pop();
    }
    let trimmed = safe.trim_end_matches(['.', ' ']);
    if trimmed.is_empty() {
        "input".to_owned()
    } else {
        trimmed.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn portable_ids() {
        for good in ["r1", "run-2026.01_a", "A", "x".repeat(128).as_str()] {
            assert!(check_portable_id(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            ".hidden",
            "-x",
            "a/b",
            "a b",
            "é",
            "x.",
            "CON",
            "nul.txt",
            "..",
            "x".repeat(129).as_str(),
        ] {
            assert!(check_portable_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn package_paths_follow_the_mvr_rules() {
        // "Empty components, ., .., absolute paths, backslashes, NUL bytes, URI schemes ...
        // are forbidden."
        assert!(check_package_path("runs/r1/raw/0001-a.jsonl").is_ok());
        assert!(check_package_path("runs/r1/attachments/results:x.json").is_ok());
        for bad in [
            "",
            "/abs",
            "a//b",
            "a/./b",
            "a/../b",
            "..",
            "a\\b",
            "a\0b",
            "a\nb",
            "https://x/y",
            "C:/x",
            "file:a",
        ] {
            assert!(check_package_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn stored_basenames_are_safe_paths() {
        assert_eq!(stored_basename("samples_x.jsonl"), "samples_x.jsonl");
        assert_eq!(stored_basename("a\\b:c\n"), "a_b_c_");
        assert_eq!(stored_basename("..."), "input");
        for given in ["a\\b", "x\u{7}", "ünï cödé.jsonl", "..", "a:b"] {
            let stored = format!("raw/0001-{}", stored_basename(given));
            assert!(check_package_path(&stored).is_ok(), "{stored}");
        }
    }

    #[test]
    fn raw_and_records_paths() {
        assert_eq!(raw_path(3, "a.jsonl"), "raw/0003-a.jsonl");
        assert_eq!(records_path(12), "records/0012.parquet");
        let run = RunId::parse("r1").unwrap();
        assert_eq!(run_relative(&run, "raw/x"), "runs/r1/raw/x");
    }
}
