//! ZIP archives as inputs (an Inspect `.eval` log): the member names, and one member's
//! bytes at a time, inflated from Zstandard (method 93, what Inspect writes) or deflate
//! (older logs) or stored. A member larger than the limit is refused before it is
//! inflated, and its inflated size is counted as it streams, so a crafted archive cannot
//! make babel hold more than one bounded member. An archive whose headers disagree (a
//! name twice, a local header that names another member than the central directory,
//! overlapping or unlisted members) is refused whole.

use std::fs::File;
use std::io::Read;

use super::shape::{
    Content, HeaderVisit, Index, Item, ItemVisit, MAX_ITEM_BYTES, Reading, Shape, ShapeError, Stop,
};
use crate::record::Locator;

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

/// The items of a ZIP archive: the members for which `item` is true, in the order of the
/// central directory, each located by its name; header members are read by name.
pub struct ZipItems {
    pub item: fn(&str) -> bool,
}

impl ZipItems {
    fn open(file: File) -> Result<(ZipInput, Vec<String>), ShapeError> {
        let invalid = |error: ZipError| ShapeError::Invalid(error.to_string());
        let zip = ZipInput::new(file).map_err(invalid)?;
        let names = zip.names().map_err(invalid)?;
        Ok((zip, names))
    }
}

impl Shape for ZipItems {
    fn header(&self, file: File, wanted: &[&str], visit: &mut HeaderVisit) -> Reading {
        let (mut zip, names) = Self::open(file)?;
        for name in wanted.iter().filter(|w| names.iter().any(|n| n == *w)) {
            let bytes = zip
                .read(name, MAX_ITEM_BYTES as u64)
                .map_err(|e| ShapeError::Invalid(e.to_string()))?;
            visit(name, &bytes).map_err(|Stop| ShapeError::Stopped)?;
        }
        Ok(())
    }

    fn items(&self, file: File, visit: &mut ItemVisit) -> Reading {
        let (mut zip, names) = Self::open(file)?;
        for name in names.into_iter().filter(|n| (self.item)(n)) {
            let bytes = zip
                .read(&name, MAX_ITEM_BYTES as u64)
                .map_err(|e| ShapeError::Invalid(e.to_string()))?;
            visit(Item {
                locator: Locator::Member(name),
                content: Content::Json(&bytes),
            })
            .map_err(|Stop| ShapeError::Stopped)?;
        }
        Ok(())
    }

    fn index(&self, file: File) -> Result<Index, String> {
        match ZipInput::new(file).and_then(|zip| zip.names()) {
            Ok(names) => Ok(Index::Members(
                names.into_iter().filter(|n| (self.item)(n)).collect(),
            )),
            Err(error) => Err(format!("cannot be read: {error}")),
        }
    }
}
