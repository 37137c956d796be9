//! ZIP archives as inputs (an Inspect `.eval` log): the member names, and one member's
//! bytes at a time, inflated from Zstandard (method 93, what Inspect writes) or deflate
//! (older logs) or stored. A member larger than the limit is refused before it is
//! inflated, and its inflated size is counted as it streams, so a crafted archive cannot
//! make babel hold more than one bounded member. An archive whose headers disagree (a
//! name twice, a local header that names another member than the central directory,
//! overlapping or unlisted members) is refused whole.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Why a ZIP input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ZipError {
    #[error("not a ZIP archive, or a damaged one ({0})")]
    Archive(String),
    #[error("member {member}: {message}")]
    Member { member: String, message: String },
}

/// An open ZIP archive.
pub struct ZipInput {
    archive: zip::ZipArchive<File>,
}

impl ZipInput {
    /// Opens the archive at `path` (its central directory is read now).
    pub fn open(path: &Path) -> Result<Self, ZipError> {
        Self::new(File::open(path).map_err(|e| ZipError::Archive(e.to_string()))?)
    }

    /// Reads the archive in an open file (from its start, whatever the file's offset).
    pub fn new(file: File) -> Result<Self, ZipError> {
        let mut archive =
            zip::ZipArchive::new(file).map_err(|e| ZipError::Archive(e.to_string()))?;
        // As with a repeated JSON key, readers disagree on which of two members of one
        // name (or on which of a local header's and the central directory's names) is
        // the member: such an archive is refused, not read one way.
        archive.validate_header_consistency().map_err(|e| {
            ZipError::Archive(format!(
                "{e}; every member must be named once, the same in its local header and in the central directory"
            ))
        })?;
        Ok(Self { archive })
    }

    /// Every member name, in the order of the central directory.
    pub fn names(&self) -> Result<Vec<String>, ZipError> {
        self.archive
            .file_names()
            .map(|name| name.map(|n| n.into_owned()))
            .collect::<Result<_, _>>()
            .map_err(|e| ZipError::Archive(e.to_string()))
    }

    /// The bytes of one member, at most `limit` once inflated.
    pub fn read(&mut self, name: &str, limit: u64) -> Result<Vec<u8>, ZipError> {
        let failure = |message: String| ZipError::Member {
            member: name.to_owned(),
            message,
        };
        let member = self
            .archive
            .by_name(name)
            .map_err(|e| failure(e.to_string()))?;
        if member.size() > limit {
            return Err(failure(format!(
                "{} bytes once inflated, more than the {limit} a member may hold",
                member.size()
            )));
        }
        let mut bytes = Vec::with_capacity(member.size() as usize);
        member
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| failure(format!("cannot be inflated ({e})")))?;
        if bytes.len() as u64 > limit {
            return Err(failure(format!("inflates past {limit} bytes")));
        }
        Ok(bytes)
    }
}
