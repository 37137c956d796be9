//! ZIP archives as inputs (an Inspect `.eval` log): the member names, and one member's
//! bytes at a time, inflated from Zstandard (method 93, what Inspect writes) or deflate
//! (older logs) or stored. A member whose recorded size is larger than the limit is
//! refused before it is inflated; a Zstandard member is inflated into no more room than
//! its recorded size (its compressed bytes, at most what that size can take, held beside
//! it), a deflated one counted as it streams; so a crafted archive cannot make babel hold
//! more than bounded members, as many as the import's batches in flight hold (each
//! weighed as it will be once inflated). An archive whose headers disagree (a name twice,
//! a local header that names another member than the central directory, overlapping or
//! unlisted members) is refused whole.
//!
//! A log holds one small member per sample: Zstandard members are inflated here with one
//! context per thread kept from member to member (the zip crate makes a context per
//! member, which took longer than inflating the sample) and their CRC-32 checked as the
//! zip crate checks it; the archive is read with positioned reads through a buffer a seek
//! does not empty. Items go out [`Packed`], read and checked but not inflated, so that
//! the threads that parse them inflate them and the reading thread only reads.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;

use zip::CompressionMethod;

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
    archive: zip::ZipArchive<Positioned>,
}

/// A member as [`ZipInput::fetch`] reads it.
enum Fetched {
    /// Inflated by the zip crate (deflate, stored).
    Bytes(Vec<u8>),
    /// A Zstandard member, to be inflated.
    Packed(Packed),
}

/// A Zstandard member's compressed bytes, read and held to what the archive records for
/// it (an inflated size within the caller's limit, no more compressed bytes than that size
/// can take), not yet inflated.
pub struct Packed {
    member: String,
    compressed: Vec<u8>,
    size: u64,
    crc: u32,
}

thread_local! {
    /// Each thread's Zstandard context, made at its first member.
    static ZSTD: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

impl Packed {
    /// The bytes it holds now and will hold once inflated.
    pub(crate) fn bytes(&self) -> usize {
        self.compressed.len() + self.size as usize
    }

    /// The bytes it takes in the archive.
    pub(crate) fn compressed_bytes(&self) -> usize {
        self.compressed.len()
    }

    /// Inflates the member into no more room than its recorded size and checks its CRC-32.
    pub(crate) fn inflate(&self) -> Result<Vec<u8>, ZipError> {
        let failure = |message: String| ZipError::Member {
            member: self.member.clone(),
            message,
        };
        let size = self.size;
        let mut bytes = Vec::with_capacity(size as usize);
        ZSTD.with_borrow_mut(|zstd| {
            let zstd = match zstd {
                Some(zstd) => zstd,
                empty => empty.insert(
                    zstd::bulk::Decompressor::new()
                        .map_err(|e| failure(format!("cannot be inflated ({e})")))?,
                ),
            };
            // No more room than the size the archive records: a member inflating past it
            // is damaged, and is refused before it grows any further.
            zstd.decompress_to_buffer(self.compressed.as_slice(), &mut bytes)
                .map_err(|e| {
                    failure(format!(
                        "cannot be inflated within the {size} bytes the archive records ({e})"
                    ))
                })
        })?;
        let mut sum = flate2::Crc::new();
        sum.update(&bytes);
        if sum.sum() != self.crc {
            return Err(failure(format!(
                "cannot be inflated (its CRC-32 is {:08x}, the archive records {:08x}: the member is damaged)",
                sum.sum(),
                self.crc
            )));
        }
        Ok(bytes)
    }
}

impl ZipInput {
    /// Reads the archive in an open file (from its start, whatever the file's offset).
    pub fn new(file: File) -> Result<Self, ZipError> {
        let file = Positioned::new(file).map_err(|e| ZipError::Archive(e.to_string()))?;
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
        match self.fetch(name, limit)? {
            Fetched::Bytes(bytes) => Ok(bytes),
            Fetched::Packed(packed) => packed.inflate(),
        }
    }

    /// One member, at most `limit` bytes once inflated: a Zstandard one as read, for
    /// [`Packed::inflate`]; any other inflated here.
    fn fetch(&mut self, name: &str, limit: u64) -> Result<Fetched, ZipError> {
        let failure = |message: String| ZipError::Member {
            member: name.to_owned(),
            message,
        };
        let index = self
            .archive
            .index_for_name(name)
            .ok_or_else(|| failure("not in the archive".to_owned()))?;
        let raw = self
            .archive
            .by_index_raw(index)
            .map_err(|e| failure(e.to_string()))?;
        let size = raw.size();
        if size > limit {
            return Err(failure(format!(
                "{size} bytes once inflated, more than the {limit} a member may hold"
            )));
        }
        if raw.compression() != CompressionMethod::Zstd || raw.encrypted() {
            drop(raw);
            let bytes = self.read_by_zip(index, size, limit).map_err(failure)?;
            return Ok(Fetched::Bytes(bytes));
        }
        let (compressed_size, crc) = (raw.compressed_size(), raw.crc32());
        if compressed_size > zstd::zstd_safe::compress_bound(size as usize) as u64 {
            return Err(failure(format!(
                "{compressed_size} bytes compressed, more than the {size} bytes the archive records take"
            )));
        }
        let mut compressed = Vec::with_capacity(compressed_size as usize);
        raw.take(compressed_size)
            .read_to_end(&mut compressed)
            .map_err(|e| failure(format!("cannot be read ({e})")))?;
        Ok(Fetched::Packed(Packed {
            member: name.to_owned(),
            compressed,
            size,
            crc,
        }))
    }

    /// Member `index` as the zip crate inflates it (deflate, stored), at most `limit` bytes.
    fn read_by_zip(&mut self, index: usize, size: u64, limit: u64) -> Result<Vec<u8>, String> {
        let member = self.archive.by_index(index).map_err(|e| e.to_string())?;
        let mut bytes = Vec::with_capacity(size as usize);
        member
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot be inflated ({e})"))?;
        if bytes.len() as u64 > limit {
            return Err(format!("inflates past {limit} bytes"));
        }
        Ok(bytes)
    }
}

/// A file read with positioned reads through a buffer that a seek keeps when it lands in
/// it: the zip crate seeks before each header it reads, and a `BufReader` empties its
/// buffer and makes a system call at every seek.
struct Positioned {
    file: File,
    len: u64,
    /// Where the reader is.
    at: u64,
    buffer: Box<[u8]>,
    /// Where `buffer` starts in the file, and how much of it holds the file's bytes.
    start: u64,
    filled: usize,
}

/// Enough for a local header and the name after it, or a few entries of the central
/// directory; a sample's compressed member is a few kilobytes.
const POSITIONED_BUFFER: usize = 16 << 10;

impl Positioned {
    fn new(file: File) -> io::Result<Self> {
        let len = file.metadata()?.len();
        Ok(Self {
            file,
            len,
            at: 0,
            buffer: vec![0; POSITIONED_BUFFER].into_boxed_slice(),
            start: 0,
            filled: 0,
        })
    }
}

impl Read for Positioned {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let buffered = self.at.checked_sub(self.start).map(|skip| skip as usize);
        let available = match buffered {
            Some(skip) if skip < self.filled => skip,
            _ if out.len() >= self.buffer.len() => {
                let read = self.file.read_at(out, self.at)?;
                self.at += read as u64;
                return Ok(read);
            }
            _ => {
                self.filled = self.file.read_at(&mut self.buffer, self.at)?;
                self.start = self.at;
                0
            }
        };
        let n = out.len().min(self.filled - available);
        out[..n].copy_from_slice(&self.buffer[available..available + n]);
        self.at += n as u64;
        Ok(n)
    }
}

impl Seek for Positioned {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::End(delta) => self.len.checked_add_signed(delta),
            SeekFrom::Current(delta) => self.at.checked_add_signed(delta),
        };
        self.at = target.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a seek before the start of the file",
            )
        })?;
        Ok(self.at)
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
            let fetched = zip
                .fetch(&name, MAX_ITEM_BYTES as u64)
                .map_err(|e| ShapeError::Invalid(e.to_string()))?;
            let locator = Locator::Member(name);
            match fetched {
                Fetched::Bytes(bytes) => visit(Item {
                    locator,
                    content: Content::ReadJson(bytes),
                }),
                Fetched::Packed(packed) => visit(Item {
                    locator,
                    content: Content::Packed(packed),
                }),
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positioned_reads_give_what_a_file_gives_after_any_seek() {
        // Reads of every size (within the buffer, across its end, longer than it) after
        // seeks from the start, the end and the current place, backwards and forwards:
        // the bytes and positions are a plain file's.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let bytes: Vec<u8> = (0..3 * POSITIONED_BUFFER + 123)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        std::fs::write(&path, &bytes).unwrap();
        let mut file = File::open(&path).unwrap();
        let mut positioned = Positioned::new(File::open(&path).unwrap()).unwrap();
        let len = bytes.len() as i64;
        let seeks = [
            SeekFrom::Start(0),
            SeekFrom::Current(10),
            SeekFrom::Start(POSITIONED_BUFFER as u64 - 5),
            SeekFrom::Current(-300),
            SeekFrom::End(-40),
            SeekFrom::End(10),
            SeekFrom::Start(7),
            SeekFrom::Current(POSITIONED_BUFFER as i64),
            SeekFrom::End(-len),
        ];
        let sizes = [
            1,
            30,
            4096,
            POSITIONED_BUFFER,
            POSITIONED_BUFFER + 1,
            70_000,
        ];
        for (n, seek) in seeks.iter().cycle().take(60).enumerate() {
            assert_eq!(
                positioned.seek(*seek).unwrap(),
                file.seek(*seek).unwrap(),
                "{seek:?}"
            );
            let size = sizes[n % sizes.len()];
            let (mut expected, mut actual) = (vec![0; size], vec![0; size]);
            let read = file.read(&mut expected).unwrap();
            let mut got = 0;
            if read == 0 {
                assert_eq!(
                    positioned.read(&mut actual).unwrap(),
                    0,
                    "{seek:?}: the end"
                );
            }
            // A short read is a reader's right; what it gives must match, and more comes.
            while got < read {
                let n = positioned.read(&mut actual[got..read]).unwrap();
                assert!(n > 0, "{seek:?} {size}: ended early");
                got += n;
            }
            assert_eq!(actual[..read], expected[..read], "{seek:?} {size}");
            assert_eq!(
                positioned.stream_position().unwrap(),
                file.stream_position().unwrap()
            );
        }
        assert!(positioned.seek(SeekFrom::Current(-len - 100)).is_err());
    }
}
