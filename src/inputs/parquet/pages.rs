//! What a column chunk's pages decode to, as their own headers say. The footer's sizes are
//! the writer's word about the pages, and nothing holds a file to them; a page header's
//! `uncompressed_page_size` is what the decompressor holds that page to (zstd, gzip and
//! the others refuse to write past it). So a bound on memory that must hold against a
//! file made to break it (a bundle, a lighteval file from anyone) sums the headers.
//!
//! A header is a Thrift compact-protocol struct (the Parquet format's `PageHeader`): only
//! fields 2 (`uncompressed_page_size`) and 3 (`compressed_page_size`) are read, the rest
//! skipped by type. The `parquet` crate decodes headers too, but not in public.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// How many bytes of the chunk are read at a time: a header and the small pages after it.
const WINDOW_BYTES: usize = 1 << 10;
/// The longest page header read (a page's statistics are in it; a writer may leave long
/// values untruncated there).
const MAX_HEADER_BYTES: usize = 16 << 20;
/// How deep structs, lists and maps may nest in a header (the format's nest three deep).
const MAX_NESTING: usize = 16;

/// The sum, over the pages in bytes `start..end` of `file` (one column chunk, as the footer
/// places it), of each page's header and uncompressed size: what the footer's
/// `total_uncompressed_size` states for the same chunk. `Err` says what is wrong with
/// which page.
pub fn chunk_bytes(file: &File, start: u64, end: u64) -> Result<u64, String> {
    let mut window = Window {
        bytes: vec![0; WINDOW_BYTES],
        start,
        len: 0,
    };
    let (mut at, mut total) = (start, 0u64);
    while at < end {
        let header = window.header(file, at, end)?;
        let next = at
            .checked_add(header.length)
            .and_then(|data| data.checked_add(header.compressed))
            .filter(|&next| next <= end)
            .ok_or_else(|| {
                format!("the page at byte {at} runs past the end of its column chunk (byte {end})")
            })?;
        total = total
            .saturating_add(header.length)
            .saturating_add(header.uncompressed);
        at = next;
    }
    Ok(total)
}

/// Bytes of a chunk read from `start` on, `len` of them valid.
struct Window {
    bytes: Vec<u8>,
    start: u64,
    len: usize,
}

impl Window {
    /// The header of the page at `at`, reading more of the chunk (which ends at `end`)
    /// when the window does not hold all of it.
    fn header(&mut self, file: &File, at: u64, end: u64) -> Result<Header, String> {
        loop {
            let offset = at
                .checked_sub(self.start)
                .map(|offset| offset as usize)
                .filter(|&offset| offset < self.len);
            if let Some(offset) = offset {
                match header(&self.bytes[offset..self.len]) {
                    Ok(header) => return Ok(header),
                    Err(Malformed::Short) => {}
                    Err(Malformed::Bad(what)) => {
                        return Err(format!("the page header at byte {at} is damaged: {what}"));
                    }
                }
                let whole_rest = self.start + self.len as u64 == end;
                if whole_rest || self.len - offset >= MAX_HEADER_BYTES {
                    return Err(format!(
                        "the page header at byte {at} does not end within its column chunk or the {MAX_HEADER_BYTES} bytes babel reads of one"
                    ));
                }
                if offset == 0 {
                    // The window held the header's start only: read a larger one.
                    let larger = (self.bytes.len() * 4).min(MAX_HEADER_BYTES);
                    self.bytes.resize(larger, 0);
                }
            }
            let want = self.bytes.len().min((end - at) as usize);
            file.read_exact_at(&mut self.bytes[..want], at)
                .map_err(|e| format!("the page at byte {at} cannot be read ({e})"))?;
            self.start = at;
            self.len = want;
        }
    }
}

/// What babel reads of a page header.
#[derive(Debug, PartialEq)]
struct Header {
    /// The header's own length in bytes.
    length: u64,
    uncompressed: u64,
    compressed: u64,
}

/// Why a header could not be read.
#[derive(Debug, PartialEq)]
enum Malformed {
    /// The bytes end before the header does.
    Short,
    /// Not a page header.
    Bad(&'static str),
}

/// The page header at the start of `bytes`.
fn header(bytes: &[u8]) -> Result<Header, Malformed> {
    let mut reader = Compact { bytes, at: 0 };
    let (mut uncompressed, mut compressed) = (None, None);
    let mut last = 0i16;
    while let Some((id, kind)) = reader.field(&mut last)? {
        match (id, kind) {
            (2, I32) => uncompressed = Some(reader.size()?),
            (3, I32) => compressed = Some(reader.size()?),
            (2 | 3, _) => return Err(Malformed::Bad("a page size that is not an i32")),
            _ => reader.skip(kind, 0)?,
        }
    }
    match (uncompressed, compressed) {
        (Some(uncompressed), Some(compressed)) => Ok(Header {
            length: reader.at as u64,
            uncompressed,
            compressed,
        }),
        _ => Err(Malformed::Bad("no page sizes")),
    }
}

// The Thrift compact protocol's type ids.
const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;
const I8: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;

/// A Thrift compact-protocol reader over bytes that may end early.
struct Compact<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl Compact<'_> {
    fn byte(&mut self) -> Result<u8, Malformed> {
        let byte = *self.bytes.get(self.at).ok_or(Malformed::Short)?;
        self.at += 1;
        Ok(byte)
    }

    fn varint(&mut self) -> Result<u64, Malformed> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7F) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Malformed::Bad("a varint longer than ten bytes"))
    }

    fn zigzag(&mut self) -> Result<i64, Malformed> {
        let value = self.varint()?;
        Ok((value >> 1) as i64 ^ -((value & 1) as i64))
    }

    /// A page size: an i32, not negative.
    fn size(&mut self) -> Result<u64, Malformed> {
        i32::try_from(self.zigzag()?)
            .ok()
            .and_then(|size| u64::try_from(size).ok())
            .ok_or(Malformed::Bad("a page size that is negative or not an i32"))
    }

    /// The next field's id and type, `None` at the struct's end; `last` is the id before.
    fn field(&mut self, last: &mut i16) -> Result<Option<(i16, u8)>, Malformed> {
        let byte = self.byte()?;
        if byte == 0 {
            return Ok(None);
        }
        let id = match byte >> 4 {
            0 => i16::try_from(self.zigzag()?).map_err(|_| Malformed::Bad("a field id"))?,
            delta => last
                .checked_add(i16::from(delta))
                .ok_or(Malformed::Bad("a field id"))?,
        };
        *last = id;
        Ok(Some((id, byte & 0x0F)))
    }

    /// Skips a value of type `kind`, `depth` levels inside the header.
    fn skip(&mut self, kind: u8, depth: usize) -> Result<(), Malformed> {
        if depth > MAX_NESTING {
            return Err(Malformed::Bad("values nested too deep"));
        }
        match kind {
            BOOL_TRUE | BOOL_FALSE => {}
            I8 => {
                self.byte()?;
            }
            I16 | I32 | I64 => {
                self.varint()?;
            }
            DOUBLE => self.advance(8)?,
            BINARY => {
                let length = self.varint()?;
                self.advance(length)?;
            }
            LIST | SET => {
                let head = self.byte()?;
                let count = match head >> 4 {
                    15 => self.varint()?,
                    count => u64::from(count),
                };
                // Each element takes a byte at least, so the count is bounded by the bytes.
                for _ in 0..count {
                    self.element(head & 0x0F, depth + 1)?;
                }
            }
            MAP => {
                let count = self.varint()?;
                if count > 0 {
                    let kinds = self.byte()?;
                    for _ in 0..count {
                        self.element(kinds >> 4, depth + 1)?;
                        self.element(kinds & 0x0F, depth + 1)?;
                    }
                }
            }
            STRUCT => {
                let mut last = 0i16;
                while let Some((_, kind)) = self.field(&mut last)? {
                    self.skip(kind, depth + 1)?;
                }
            }
            _ => return Err(Malformed::Bad("an unknown Thrift type")),
        }
        Ok(())
    }

    /// Skips an element of a list, set or map: a boolean there is a byte of its own.
    fn element(&mut self, kind: u8, depth: usize) -> Result<(), Malformed> {
        match kind {
            BOOL_TRUE | BOOL_FALSE => self.byte().map(drop),
            kind => self.skip(kind, depth),
        }
    }

    fn advance(&mut self, bytes: u64) -> Result<(), Malformed> {
        let end = usize::try_from(bytes)
            .ok()
            .and_then(|bytes| self.at.checked_add(bytes))
            .ok_or(Malformed::Short)?;
        if end > self.bytes.len() {
            return Err(Malformed::Short);
        }
        self.at = end;
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A header as the format writes it: type, both sizes, then a struct field (a data
    /// page header with a statistics struct holding a binary, and a list), all to skip.
    pub(in crate::inputs::parquet) fn page_header(uncompressed: u32, compressed: u32) -> Vec<u8> {
        let zigzag = |value: i64| {
            let mut value = ((value << 1) ^ (value >> 63)) as u64;
            let mut out = Vec::new();
            loop {
                let byte = (value & 0x7F) as u8;
                value >>= 7;
                if value == 0 {
                    out.push(byte);
                    return out;
                }
                out.push(byte | 0x80);
            }
        };
        let mut bytes = vec![0x15];
        bytes.extend(zigzag(0));
        bytes.push(0x15);
        bytes.extend(zigzag(uncompressed.into()));
        bytes.push(0x15);
        bytes.extend(zigzag(compressed.into()));
        // Field 5, a struct: num_values, then field 5 of it (statistics) with a binary
        // max (field 1) of 300 bytes, a list of three i32, and a true boolean.
        bytes.extend([0x2C, 0x15]);
        bytes.extend(zigzag(4096));
        bytes.extend([0x4C, 0x18]);
        bytes.extend([0xAC, 0x02]);
        bytes.extend(vec![b'x'; 300]);
        bytes.extend([0x19, 0x35, 0x02, 0x04, 0x06, 0x11, 0x00, 0x00, 0x00]);
        bytes
    }

    #[test]
    fn a_header_gives_its_sizes_and_its_own_length() {
        let bytes = page_header(1 << 20, 70_000);
        assert_eq!(
            header(&bytes),
            Ok(Header {
                length: bytes.len() as u64,
                uncompressed: 1 << 20,
                compressed: 70_000,
            })
        );
        // Any byte short of its end is too short, never an error of another kind.
        for end in 0..bytes.len() {
            assert_eq!(header(&bytes[..end]), Err(Malformed::Short), "{end} bytes");
        }
    }

    /// A file holding `pages`: each a header of its sizes, then `compressed` bytes.
    fn chunk(pages: &[(u32, u32)]) -> (File, u64) {
        use std::io::Write;
        let mut file = tempfile::tempfile().unwrap();
        for &(uncompressed, compressed) in pages {
            file.write_all(&page_header(uncompressed, compressed))
                .unwrap();
            file.write_all(&vec![7; compressed as usize]).unwrap();
        }
        let length = file.metadata().unwrap().len();
        (file, length)
    }

    #[test]
    fn a_chunk_counts_each_pages_header_and_uncompressed_size() {
        // Small pages, several to a window, and pages larger than one.
        let pages = [
            (10, 3),
            (1 << 20, 5_000),
            (0, 0),
            (40, 2_000),
            (i32::MAX as u32, 9),
        ];
        let (file, length) = chunk(&pages);
        let headers: u64 = pages
            .iter()
            .map(|&(u, c)| page_header(u, c).len() as u64)
            .sum();
        let uncompressed: u64 = pages.iter().map(|&(u, _)| u64::from(u)).sum();
        assert_eq!(chunk_bytes(&file, 0, length), Ok(headers + uncompressed));
        // The same pages, counted from the second page on.
        let first = page_header(10, 3).len() as u64 + 3;
        assert_eq!(
            chunk_bytes(&file, first, length),
            Ok(headers + uncompressed - first + 3 - 10)
        );
    }

    #[test]
    fn a_page_past_its_chunk_or_a_header_cut_by_its_end_is_refused() {
        let (file, length) = chunk(&[(100, 50), (100, 50)]);
        let error = chunk_bytes(&file, 0, length - 1).unwrap_err();
        assert!(
            error.contains("runs past the end of its column chunk"),
            "{error}"
        );
        let error = chunk_bytes(&file, 0, 10).unwrap_err();
        assert!(
            error.contains("does not end within its column chunk"),
            "{error}"
        );
        let (file, length) = chunk(&[]);
        assert_eq!(chunk_bytes(&file, 0, length), Ok(0));
    }

    #[test]
    fn a_header_longer_than_the_window_is_read_whole() {
        // Statistics of 5,000 bytes: the window grows to hold the header.
        use std::io::Write;
        let mut header = page_header(64, 8);
        let long = header.len() - 300 - 9;
        header.splice(long - 2..long, [0x88, 0x27]);
        header.splice(long..long + 300, vec![b'z'; 5_000]);
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&header).unwrap();
        file.write_all(&[0; 8]).unwrap();
        let length = header.len() as u64 + 8;
        assert_eq!(chunk_bytes(&file, 0, length), Ok(header.len() as u64 + 64));
    }

    #[test]
    fn a_header_without_sizes_or_with_a_negative_one_is_refused() {
        assert!(matches!(header(&[0x00]), Err(Malformed::Bad(_))));
        // Field 2 as -1.
        assert!(matches!(
            header(&[0x25, 0x01, 0x15, 0x02, 0x00]),
            Err(Malformed::Bad(_))
        ));
        // An unknown type.
        assert!(matches!(header(&[0x1E, 0x00]), Err(Malformed::Bad(_))));
        // A list of lists nested past the limit.
        let mut deep = vec![0x19];
        deep.extend(vec![0x19; MAX_NESTING + 2]);
        assert!(matches!(header(&deep), Err(Malformed::Bad(_))));
    }
}
