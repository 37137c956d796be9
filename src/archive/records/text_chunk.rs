//! The column chunks of a records file's plain text columns (`question_id` and the JSON
//! columns: [`super::Kind::Text`] and [`super::Kind::Json`]), written by babel from the
//! encoded batches' text, each value copied once, into its page.
//!
//! These columns are most of a file's bytes, and the Parquet crate's way to them (Arrow
//! string builders, its byte-array encoder, a page buffer grown from empty for every page)
//! cost as much CPU as compressing them (BENCHMARKS.md, "what such a writer would reach").
//! A chunk written here is the chunk the crate writes for the same values, byte for byte,
//! so files do not change: required `BYTE_ARRAY` values, `PLAIN`, in version 1 data pages
//! compressed with zstd, no dictionary and no statistics, the pages cut where the crate
//! cuts them ([`TextChunk::push`]), an offset index and no column index. The crate still
//! writes every other column, the row groups and the footer, and it is the reference: the
//! records-file tests compare the two writers' files byte for byte. What is written here
//! is what parquet 60.1.0 writes (the crate is pinned in Cargo.toml), for exactly the
//! settings [`PageLimits::of`] checks.
//!
//! This module must not hold anything but these columns: a column with a dictionary,
//! statistics or nulls stays the crate's.

use std::io;

use bytes::Bytes;
use parquet::basic::{Compression, Encoding, EncodingMask, PageType, Type};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::{ColumnChunkMetaData, OffsetIndexBuilder, PageEncodingStats};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::schema::types::ColumnDescPtr;

/// The limits the crate cuts a column's pages by and its compression, read from the
/// file's writer properties.
#[derive(Debug, Clone, Copy)]
pub(super) struct PageLimits {
    /// Values handed to the page at once (`write_batch_size`), unless they are large.
    batch: usize,
    /// A page is closed once it holds this many rows ...
    rows: usize,
    /// ... or this many bytes of encoded values.
    bytes: usize,
    compression: Compression,
    /// The zstd level of `compression`.
    level: i32,
}

impl PageLimits {
    /// The limits of `column`, once its settings are those this module writes chunks
    /// for: a required, unnested `BYTE_ARRAY` column in version 1 pages, `PLAIN`, zstd,
    /// with no dictionary, statistics, bloom filter or content-defined chunking, and an
    /// offset index. Anything else is an error: the chunk would not be the crate's.
    pub(super) fn of(properties: &WriterProperties, column: &ColumnDescPtr) -> io::Result<Self> {
        let path = column.path();
        let compression = properties.compression(path);
        let level = match compression {
            Compression::ZSTD(level) => Some(level.compression_level()),
            _ => None,
        };
        let written_here = column.physical_type() == Type::BYTE_ARRAY
            && column.max_def_level() == 0
            && column.max_rep_level() == 0
            && properties.writer_version() == WriterVersion::PARQUET_1_0
            && matches!(properties.encoding(path), None | Some(Encoding::PLAIN))
            && !properties.dictionary_enabled(path)
            && properties.statistics_enabled(path) == EnabledStatistics::None
            && properties.bloom_filter_properties(path).is_none()
            && !properties.offset_index_disabled()
            && properties.content_defined_chunking().is_none()
            && !properties.write_row_group_number_distinct_values();
        match level {
            Some(level) if written_here => Ok(PageLimits {
                batch: properties.write_batch_size(),
                rows: properties.column_data_page_row_count_limit(path),
                bytes: properties.column_data_page_size_limit(path),
                compression,
                level,
            }),
            _ => Err(io::Error::other(format!(
                "this build of babel sets the records file's column {path} up otherwise than \
                 it writes its pages, and writes no records (a bug in babel: please report it)"
            ))),
        }
    }
}

/// One column chunk of a plain text column being written: its closed pages (header and
/// compressed values each) and the open page's values.
pub(super) struct TextChunk {
    column: ColumnDescPtr,
    limits: PageLimits,
    /// The chunk's closed pages, as they go into the file.
    pages: Vec<u8>,
    /// The open page: each value behind its length (`PLAIN`).
    page: Vec<u8>,
    page_rows: usize,
    /// The open page's values' bytes, without their lengths.
    page_value_bytes: i64,
    offsets: OffsetIndexBuilder,
    page_count: i32,
    rows: u64,
    uncompressed: u64,
    /// Where the write under way is.
    write: Write,
}

/// A write of values under way (see [`TextChunk::begin`]).
#[derive(Debug, Default)]
struct Write {
    /// The values of the write, and how many are taken.
    count: usize,
    taken: usize,
    chunk: Chunk,
}

/// The chunk of a write under way.
#[derive(Debug, Default)]
struct Chunk {
    /// The chunk's bytes so far, each value with its length, until they pass the limit.
    bytes: usize,
    /// How many values make a window, once known.
    window: Option<usize>,
    /// The chunk's values counted into the page so far.
    checked: usize,
}

impl TextChunk {
    pub(super) fn new(column: ColumnDescPtr, limits: PageLimits) -> Self {
        TextChunk {
            column,
            limits,
            pages: Vec::new(),
            page: Vec::new(),
            page_rows: 0,
            page_value_bytes: 0,
            offsets: OffsetIndexBuilder::new(),
            page_count: 0,
            rows: 0,
            uncompressed: 0,
            write: Write::default(),
        }
    }

    /// What the crate estimates the chunk's encoded size to be (the row group is cut by
    /// it): the closed pages as written and the open page's values.
    pub(super) fn estimated_bytes(&self) -> usize {
        self.pages.len() + self.page.len()
    }

    /// Starts a write of `count` values, one call of the crate's column writer
    /// (`write_batch_internal`), whose values [`Self::push`] then takes in order. The
    /// values are taken in chunks of `batch`; a chunk is written whole when its values fit
    /// the page byte limit (each with its length), otherwise in windows of as many values
    /// as fit it from the chunk's start (the one that passes it included), and the page is
    /// closed after a chunk or window that fills it. A window's width is known once its
    /// values are taken, so each value is read once, and the columns of a row are taken
    /// together, in the order their text lies in the encoded batch.
    pub(super) fn begin(&mut self, count: usize) {
        self.write = Write {
            count,
            ..Write::default()
        };
    }

    /// Takes the next value of the write [`Self::begin`] started.
    pub(super) fn push(&mut self, value: &[u8], zstd: &mut Compressor) -> io::Result<()> {
        let write = &mut self.write;
        debug_assert!(
            write.taken < write.count,
            "more values than the write began with"
        );
        let in_chunk = write.taken % self.limits.batch;
        if in_chunk == 0 {
            write.chunk = Chunk::default();
        }
        let chunk = self
            .limits
            .batch
            .min(write.count - (write.taken - in_chunk));
        write.taken += 1;
        self.page
            .extend_from_slice(&(value.len() as u32).to_le_bytes());
        self.page.extend_from_slice(value);
        self.page_value_bytes += value.len() as i64;
        let state = &mut write.chunk;
        if state.window.is_none() {
            state.bytes += value.len() + 4;
            if state.bytes > self.limits.bytes {
                state.window = Some(in_chunk + 1);
            }
        }
        let ends_window = state
            .window
            .is_some_and(|width| (in_chunk + 1).is_multiple_of(width));
        if ends_window || in_chunk + 1 == chunk {
            self.page_rows += in_chunk + 1 - state.checked;
            state.checked = in_chunk + 1;
            if self.page_rows >= self.limits.rows || self.page.len() >= self.limits.bytes {
                self.close_page(zstd)?;
            }
        }
        Ok(())
    }

    fn close_page(&mut self, zstd: &mut Compressor) -> io::Result<()> {
        let data = zstd.compress(&self.page, self.limits.level)?;
        let header = page_header(self.page.len(), data.len(), self.page_rows)?;
        let size = header.len() + data.len();
        self.offsets
            .append_offset_and_size(self.pages.len() as i64, thrift_i32(size)?);
        self.offsets.append_row_count(self.page_rows as i64);
        self.offsets
            .append_unencoded_byte_array_data_bytes(Some(self.page_value_bytes));
        self.pages.extend_from_slice(&header);
        self.pages.extend_from_slice(data);
        self.uncompressed += (header.len() + self.page.len()) as u64;
        self.rows += self.page_rows as u64;
        self.page_count += 1;
        self.page.clear();
        // A page made large by a long value does not keep its room for the rest of the
        // row group.
        if self.page.capacity() > 4 * self.limits.bytes {
            self.page = Vec::new();
        }
        self.page_rows = 0;
        self.page_value_bytes = 0;
        Ok(())
    }

    /// Closes the open page; the chunk's bytes and what the row group writer needs to
    /// splice them in, as the crate's column writer gives them.
    pub(super) fn close(mut self, zstd: &mut Compressor) -> io::Result<(Bytes, ColumnCloseResult)> {
        if self.page_rows > 0 {
            self.close_page(zstd)?;
        }
        // The crate would write an empty chunk otherwise (no encodings but RLE); a row
        // group is never closed empty.
        debug_assert!(self.page_count > 0, "a chunk of no pages");
        let compressed = self.pages.len() as u64;
        let metadata = ColumnChunkMetaData::builder(self.column)
            .set_compression(self.limits.compression)
            .set_encodings_mask(EncodingMask::new_from_encodings(
                [Encoding::PLAIN, Encoding::RLE].iter(),
            ))
            .set_page_encoding_stats(vec![PageEncodingStats {
                page_type: PageType::DATA_PAGE,
                encoding: Encoding::PLAIN,
                count: self.page_count,
            }])
            .set_total_compressed_size(compressed as i64)
            .set_total_uncompressed_size(self.uncompressed as i64)
            .set_num_values(self.rows as i64)
            .set_data_page_offset(0)
            .set_dictionary_page_offset(None)
            .build()
            .map_err(io::Error::other)?;
        let close = ColumnCloseResult {
            bytes_written: compressed,
            rows_written: self.rows,
            metadata,
            bloom_filter: None,
            column_index: None,
            offset_index: Some(self.offsets.build()),
        };
        Ok((Bytes::from(self.pages), close))
    }
}

/// A zstd context and its output buffer, shared by the chunks of a file.
pub(super) struct Compressor {
    context: zstd::bulk::Compressor<'static>,
    level: i32,
    out: Vec<u8>,
}

impl Compressor {
    pub(super) fn new() -> io::Result<Self> {
        let level = zstd::DEFAULT_COMPRESSION_LEVEL;
        Ok(Compressor {
            context: zstd::bulk::Compressor::new(level)?,
            level,
            out: Vec::new(),
        })
    }

    /// `bytes` as one zstd frame at `level`, as the crate's codec writes it (its size in
    /// the frame; the context's earlier frames change nothing).
    fn compress(&mut self, bytes: &[u8], level: i32) -> io::Result<&[u8]> {
        if level != self.level {
            self.context.set_compression_level(level)?;
            self.level = level;
        }
        let bound = zstd::zstd_safe::compress_bound(bytes.len());
        // The room a long value's page took is not kept for the pages after it.
        if self.out.capacity() > 4 * bound.max(1 << 20) {
            self.out = Vec::new();
        }
        self.out.clear();
        self.out.reserve(bound);
        let written = self.context.compress_to_buffer(bytes, &mut self.out)?;
        Ok(&self.out[..written])
    }
}

/// `value` as a Thrift `i32`; the crate refuses anything larger.
fn thrift_i32(value: usize) -> io::Result<i32> {
    i32::try_from(value).map_err(|_| io::Error::other("a records file page of 2 GiB or more"))
}

/// The Thrift compact encoding of a version 1 data page's header: `PLAIN` values, `RLE`
/// levels (there are none), no statistics, no checksum.
fn page_header(uncompressed: usize, compressed: usize, values: usize) -> io::Result<Vec<u8>> {
    // The values of parquet.thrift's enums `PageType` and `Encoding`.
    const DATA_PAGE: i32 = 0;
    const PLAIN: i32 = 0;
    const RLE: i32 = 3;
    // Field headers of the compact protocol: the field id's delta from the field before
    // (high nibble) and the type, `i32` (5) or `struct` (12); 0 ends a struct.
    const I32_NEXT: u8 = 0x15;
    const STRUCT_TWO_ON: u8 = 0x2C;
    const STOP: u8 = 0;
    fn i32_field(header: &mut Vec<u8>, value: i32) {
        header.push(I32_NEXT);
        let mut zigzag = ((value << 1) ^ (value >> 31)) as u32;
        while zigzag >= 0x80 {
            header.push((zigzag as u8 & 0x7F) | 0x80);
            zigzag >>= 7;
        }
        header.push(zigzag as u8);
    }
    let mut header = Vec::with_capacity(32);
    // PageHeader: 1 type, 2 uncompressed_page_size, 3 compressed_page_size,
    // 5 data_page_header.
    i32_field(&mut header, DATA_PAGE);
    i32_field(&mut header, thrift_i32(uncompressed)?);
    i32_field(&mut header, thrift_i32(compressed)?);
    header.push(STRUCT_TWO_ON);
    // DataPageHeader: 1 num_values, 2 encoding, 3 and 4 the levels' encodings.
    i32_field(&mut header, thrift_i32(values)?);
    i32_field(&mut header, PLAIN);
    i32_field(&mut header, RLE);
    i32_field(&mut header, RLE);
    header.push(STOP);
    header.push(STOP);
    Ok(header)
}
