//! What a column chunk's pages decode to, as their own headers say. The footer's sizes and
//! encodings are the writer's word about the pages, and nothing holds a file to them; the
//! reader decodes each page by its header. So a bound on memory that must hold against a
//! file made to break it (a bundle, a lighteval file from anyone) reads the headers: each
//! page's stored and uncompressed sizes (zstd and snappy, the codecs babel's reader has,
//! are held to the uncompressed size; an uncompressed page is what it stores), how many
//! values a data page declares, and the encoding of its values.
//!
//! A header is a Thrift compact-protocol struct (the Parquet format's `PageHeader`). The
//! `parquet` crate decodes headers too, but not in public, and by its schema: a field it
//! knows is read as the schema's type whatever the type the bytes give it. So every field
//! the format defines is held to its type here (else the two readers could read the same
//! bytes two ways, and the reader decode a page this module never saw), and a list of
//! booleans, which the crate skips differently from the protocol, is refused.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// How many bytes of the chunk are read at a time: a header and the small pages after it.
const WINDOW_BYTES: usize = 1 << 10;
/// The longest page header read (a page's statistics are in it; a writer may leave long
/// values untruncated there).
const MAX_HEADER_BYTES: usize = 16 << 20;
/// How deep structs, lists and maps may nest in a header (the format's nest three deep).
const MAX_NESTING: usize = 16;

/// What the pages of one column chunk say of themselves.
#[derive(Debug, Default, PartialEq)]
pub struct Chunk {
    /// Each page's header and the larger of its stored and uncompressed size, summed: for
    /// an honest file, what the footer's `total_uncompressed_size` says.
    pub bytes: u64,
    /// The values the data pages declare (levels included: nulls and empty lists too).
    pub values: u64,
    /// A dictionary page, or a data page of dictionary-encoded values.
    pub dictionary: bool,
    /// A data page of DELTA_BYTE_ARRAY values.
    pub delta: bool,
    /// How many dictionary pages there are (each replaces the one before as it is read),
    /// and whether the first page is one.
    pub dictionary_pages: u64,
    pub dictionary_first: bool,
}

/// The format's page types and the encodings that matter here.
const DATA_PAGE: i64 = 0;
const DICTIONARY_PAGE: i64 = 2;
const DATA_PAGE_V2: i64 = 3;
const PLAIN_DICTIONARY: i64 = 2;
const DELTA_BYTE_ARRAY: i64 = 7;
const RLE_DICTIONARY: i64 = 8;

/// The pages in bytes `start..end` of `file` (one column chunk, where the reader reads it).
/// `Err` says what is wrong with which page.
pub fn chunk(file: &File, start: u64, end: u64) -> Result<Chunk, String> {
    let mut window = Window {
        bytes: vec![0; WINDOW_BYTES],
        start,
        len: 0,
    };
    let mut chunk = Chunk::default();
    let mut at = start;
    while at < end {
        let header = window.header(file, at, end)?;
        let next = at
            .checked_add(header.length)
            .and_then(|data| data.checked_add(header.compressed))
            .filter(|&next| next <= end)
            .ok_or_else(|| {
                format!("the page at byte {at} runs past the end of its column chunk (byte {end})")
            })?;
        chunk.bytes = chunk
            .bytes
            .saturating_add(header.length)
            .saturating_add(header.compressed.max(header.uncompressed));
        let data = match header.kind {
            DATA_PAGE => Some(header.v1),
            DATA_PAGE_V2 => Some(header.v2),
            DICTIONARY_PAGE => {
                chunk.dictionary = true;
                chunk.dictionary_first |= at == start;
                chunk.dictionary_pages += 1;
                None
            }
            _ => None,
        };
        if let Some((values, encoding)) = data {
            chunk.values = chunk.values.saturating_add(values);
            chunk.dictionary |= matches!(encoding, PLAIN_DICTIONARY | RLE_DICTIONARY);
            chunk.delta |= encoding == DELTA_BYTE_ARRAY;
        }
        at = next;
    }
    Ok(chunk)
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
#[derive(Debug, Default, PartialEq)]
struct Header {
    /// The header's own length in bytes.
    length: u64,
    /// The page type.
    kind: i64,
    uncompressed: u64,
    compressed: u64,
    /// A version 1 data page header's value count and encoding.
    v1: (u64, i64),
    /// A version 2 data page header's.
    v2: (u64, i64),
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
    let mut header = Header::default();
    let (mut uncompressed, mut compressed) = (None, None);
    reader.read_struct(Struct::Page, 0, &mut |owner, id, value| {
        let count = || u64::try_from(value).map_err(|_| Malformed::Bad("a negative size or count"));
        match (owner, id) {
            (Struct::Page, 1) => header.kind = value,
            (Struct::Page, 2) => uncompressed = Some(count()?),
            (Struct::Page, 3) => compressed = Some(count()?),
            (Struct::DataPage, 1) => header.v1.0 = count()?,
            (Struct::DataPage, 2) => header.v1.1 = value,
            (Struct::DataPageV2, 1) => header.v2.0 = count()?,
            (Struct::DataPageV2, 4) => header.v2.1 = value,
            _ => {}
        }
        Ok(())
    })?;
    match (uncompressed, compressed) {
        (Some(uncompressed), Some(compressed)) => Ok(Header {
            length: reader.at as u64,
            uncompressed,
            compressed,
            ..header
        }),
        _ => Err(Malformed::Bad("no page sizes")),
    }
}

/// The structs of a page header.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Struct {
    Page,
    DataPage,
    IndexPage,
    DictionaryPage,
    DataPageV2,
    Statistics,
}

/// The type the format gives field `id` of `owner` (and the struct it is, for a struct),
/// `None` for a field it does not define.
fn known(owner: Struct, id: i16) -> Option<(u8, Option<Struct>)> {
    use Struct::{DataPage, DataPageV2, DictionaryPage, IndexPage, Page, Statistics};
    Some(match (owner, id) {
        (Page, 1..=4) | (DataPage, 1..=4) | (DictionaryPage, 1 | 2) | (DataPageV2, 1..=6) => {
            (I32, None)
        }
        (Page, 5) => (STRUCT, Some(DataPage)),
        (Page, 6) => (STRUCT, Some(IndexPage)),
        (Page, 7) => (STRUCT, Some(DictionaryPage)),
        (Page, 8) => (STRUCT, Some(DataPageV2)),
        (DataPage, 5) | (DataPageV2, 8) => (STRUCT, Some(Statistics)),
        (DictionaryPage, 3) | (DataPageV2, 7) | (Statistics, 7 | 8) => (BOOL_TRUE, None),
        (Statistics, 1 | 2 | 5 | 6) => (BINARY, None),
        (Statistics, 3 | 4 | 9) => (I64, None),
        _ => return None,
    })
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

    /// Skips an element of a list, set or map. A boolean there is a byte of its own by the
    /// protocol, which the `parquet` crate skips as none: refused, so both read alike.
    fn element(&mut self, kind: u8, depth: usize) -> Result<(), Malformed> {
        match kind {
            BOOL_TRUE | BOOL_FALSE => Err(Malformed::Bad("a list of booleans")),
            kind => self.skip(kind, depth),
        }
    }

    /// Reads a struct `owner`, `depth` levels inside the header: each field the format
    /// defines must be of its type; each i32 is handed to `found` with its owner and id.
    fn read_struct(
        &mut self,
        owner: Struct,
        depth: usize,
        found: &mut dyn FnMut(Struct, i16, i64) -> Result<(), Malformed>,
    ) -> Result<(), Malformed> {
        if depth > MAX_NESTING {
            return Err(Malformed::Bad("values nested too deep"));
        }
        let mut last = 0i16;
        while let Some((id, kind)) = self.field(&mut last)? {
            let Some((expected, nested)) = known(owner, id) else {
                self.skip(kind, depth + 1)?;
                continue;
            };
            let boolean = |kind| matches!(kind, BOOL_TRUE | BOOL_FALSE);
            if kind != expected && !(boolean(kind) && boolean(expected)) {
                return Err(Malformed::Bad("a field of another type than the format's"));
            }
            match nested {
                Some(inner) => self.read_struct(inner, depth + 1, found)?,
                None if kind == I32 => {
                    let value = i32::try_from(self.zigzag()?)
                        .map_err(|_| Malformed::Bad("an i32 out of range"))?;
                    found(owner, id, value.into())?;
                }
                None => self.skip(kind, depth + 1)?,
            }
        }
        Ok(())
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
    use std::io::Write;

    fn zigzag(value: i64, out: &mut Vec<u8>) {
        let mut value = ((value << 1) ^ (value >> 63)) as u64;
        loop {
            let byte = (value & 0x7F) as u8;
            value >>= 7;
            if value == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    /// A field header: the short form when the id follows `last` closely, else the long.
    fn field(out: &mut Vec<u8>, last: &mut i16, id: i16, kind: u8) {
        match id - *last {
            delta @ 1..=15 => out.push(((delta as u8) << 4) | kind),
            _ => {
                out.push(kind);
                zigzag(id.into(), out);
            }
        }
        *last = id;
    }

    fn int(out: &mut Vec<u8>, last: &mut i16, id: i16, value: i64) {
        field(out, last, id, I32);
        zigzag(value, out);
    }

    /// A page header as the format writes it: its type, sizes and the header of its kind,
    /// with `values` of `encoding` for a data page. A version 1 data page carries
    /// statistics (a 300-byte max), then a field the format does not define (a list of
    /// i32), then a boolean by the long field form: all to be skipped.
    pub(in crate::inputs::parquet) fn page(
        kind: i64,
        uncompressed: u32,
        compressed: u32,
        values: i64,
        encoding: i64,
    ) -> Vec<u8> {
        let (mut out, mut last) = (Vec::new(), 0);
        int(&mut out, &mut last, 1, kind);
        int(&mut out, &mut last, 2, uncompressed.into());
        int(&mut out, &mut last, 3, compressed.into());
        let (id, fields): (i16, &[i64]) = match kind {
            DATA_PAGE => (5, &[values, encoding, 3, 3]),
            DICTIONARY_PAGE => (7, &[values, encoding]),
            _ => (8, &[values, 0, values, encoding, 0, 0]),
        };
        field(&mut out, &mut last, id, STRUCT);
        let mut inner = 0;
        for (at, value) in fields.iter().enumerate() {
            int(&mut out, &mut inner, at as i16 + 1, *value);
        }
        if kind == DATA_PAGE {
            field(&mut out, &mut inner, 5, STRUCT);
            let mut statistics = 0;
            field(&mut out, &mut statistics, 1, BINARY);
            out.extend([0xAC, 0x02]);
            out.extend([b'x'; 300]);
            field(&mut out, &mut statistics, 10, LIST);
            out.extend([0x35, 0x02, 0x04, 0x06]);
            field(&mut out, &mut statistics, 7, BOOL_TRUE);
            out.push(0);
        }
        out.extend([0, 0]);
        out
    }

    /// A version 1 data page of `values` plain values.
    pub(in crate::inputs::parquet) fn page_header(uncompressed: u32, compressed: u32) -> Vec<u8> {
        page(DATA_PAGE, uncompressed, compressed, 4096, 0)
    }

    #[test]
    fn a_header_gives_its_sizes_values_and_its_own_length() {
        let bytes = page_header(1 << 20, 70_000);
        assert_eq!(
            header(&bytes),
            Ok(Header {
                length: bytes.len() as u64,
                kind: DATA_PAGE,
                uncompressed: 1 << 20,
                compressed: 70_000,
                v1: (4096, 0),
                v2: (0, 0),
            })
        );
        // Any byte short of its end is too short, never an error of another kind.
        for end in 0..bytes.len() {
            assert_eq!(header(&bytes[..end]), Err(Malformed::Short), "{end} bytes");
        }
        let v2 = page(DATA_PAGE_V2, 10, 10, 7, DELTA_BYTE_ARRAY);
        assert_eq!(header(&v2).unwrap().v2, (7, DELTA_BYTE_ARRAY));
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
        assert!(matches!(header(&[0x9E, 0x00]), Err(Malformed::Bad(_))));
        // A list of lists nested past the limit, in a field the format does not define.
        let mut deep = vec![0x99];
        deep.extend(vec![0x19; MAX_NESTING + 2]);
        assert!(matches!(header(&deep), Err(Malformed::Bad(_))));
    }

    #[test]
    fn bytes_the_parquet_crate_would_read_otherwise_are_refused() {
        // The crate reads a field it knows by the format's type and skips a list of
        // booleans as no bytes: both would let it read a page size this reader skipped
        // (found by the review of the eighth session of 2026-12-05).
        // Each added at the end of the page header's own fields (the last was field 5).
        let mut crc_as_binary = page_header(64, 8);
        let (mut tail, mut last) = (Vec::new(), 5);
        field(&mut tail, &mut last, 4, BINARY);
        tail.extend([0x07, 0x05, 0x04, 0x80, 0x80, 0x80, 0x80, 0x0C]);
        crc_as_binary.splice(crc_as_binary.len() - 1..crc_as_binary.len() - 1, tail);
        assert_eq!(
            header(&crc_as_binary),
            Err(Malformed::Bad("a field of another type than the format's"))
        );
        let mut booleans = page_header(64, 8);
        let (mut tail, mut last) = (Vec::new(), 5);
        field(&mut tail, &mut last, 9, LIST);
        tail.extend([0x71, 0x05, 0x04, 0x80, 0x80, 0x80, 0x80, 0x0C]);
        booleans.splice(booleans.len() - 1..booleans.len() - 1, tail);
        assert_eq!(header(&booleans), Err(Malformed::Bad("a list of booleans")));
    }

    /// A file holding `pages`, each header followed by its stored bytes.
    fn chunk_file(pages: &[Vec<u8>]) -> (File, u64) {
        let mut file = tempfile::tempfile().unwrap();
        for page in pages {
            file.write_all(page).unwrap();
            let stored = header(page).unwrap().compressed;
            file.write_all(&vec![7; stored as usize]).unwrap();
        }
        let length = file.metadata().unwrap().len();
        (file, length)
    }

    #[test]
    fn a_chunk_counts_its_pages_values_and_encodings_as_their_headers_say() {
        // Small pages, several to a window, and pages larger than one; an uncompressed
        // page counts what it stores, whatever its header says it decodes to.
        let pages = [
            page(DICTIONARY_PAGE, 10, 3, 2, 0),
            page_header(1 << 20, 5_000),
            page_header(0, 0),
            page_header(40, 2_000),
            page(DATA_PAGE, i32::MAX as u32, 9, 5, RLE_DICTIONARY),
        ];
        let (file, length) = chunk_file(&pages);
        let sizes = [
            (10, 3),
            (1 << 20, 5_000),
            (0, 0),
            (40, 2_000),
            (i32::MAX as u64, 9),
        ];
        let bytes: u64 = pages.iter().map(|p| p.len() as u64).sum::<u64>()
            + sizes.iter().map(|&(u, c)| u.max(c)).sum::<u64>();
        assert_eq!(
            chunk(&file, 0, length),
            Ok(Chunk {
                bytes,
                values: 3 * 4096 + 5,
                dictionary: true,
                delta: false,
                dictionary_pages: 1,
                dictionary_first: true,
            })
        );
        // From the second page on: no dictionary page, but dictionary-encoded values.
        let first = pages[0].len() as u64 + 3;
        let rest = chunk(&file, first, length).unwrap();
        assert_eq!(
            (rest.bytes, rest.dictionary),
            (bytes - first + 3 - 10, true)
        );
        assert_eq!((rest.dictionary_pages, rest.dictionary_first), (0, false));
        let (file, length) = chunk_file(&[page(DATA_PAGE_V2, 8, 8, 3, DELTA_BYTE_ARRAY)]);
        let delta = chunk(&file, 0, length).unwrap();
        assert_eq!(
            (delta.values, delta.delta, delta.dictionary),
            (3, true, false)
        );
    }

    #[test]
    fn a_page_past_its_chunk_or_a_header_cut_by_its_end_is_refused() {
        let (file, length) = chunk_file(&[page_header(100, 50), page_header(100, 50)]);
        let error = chunk(&file, 0, length - 1).unwrap_err();
        assert!(
            error.contains("runs past the end of its column chunk"),
            "{error}"
        );
        let error = chunk(&file, 0, 10).unwrap_err();
        assert!(
            error.contains("does not end within its column chunk"),
            "{error}"
        );
        let (file, length) = chunk_file(&[]);
        assert_eq!(chunk(&file, 0, length), Ok(Chunk::default()));
    }

    #[test]
    fn a_header_longer_than_the_window_is_read_whole() {
        // Statistics of 5,000 bytes: the window grows to hold the header.
        let mut header_bytes = page_header(64, 8);
        let at = header_bytes
            .windows(2)
            .position(|w| w == [0xAC, 0x02])
            .unwrap();
        header_bytes.splice(at..at + 2, [0x88, 0x27]);
        header_bytes.splice(at + 2..at + 302, vec![b'z'; 5_000]);
        let (file, length) = chunk_file(&[header_bytes.clone()]);
        assert!(header_bytes.len() > WINDOW_BYTES);
        assert_eq!(
            chunk(&file, 0, length).map(|c| c.bytes),
            Ok(header_bytes.len() as u64 + 64)
        );
    }
}
