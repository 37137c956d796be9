//! Parquet inputs (lighteval's details files) read row by row as JSON objects: each
//! top-level column is a member, structs are objects, lists are arrays, each written as
//! canonical text into the streaming reader's [`Members`] (no tree: the tree walk is kept
//! in tests, as the reference the members are checked against). The schema may
//! differ from file to file (a column typed `null` where every value was None, a metric
//! `int64` in one file and `double` in another); every file is read by its own schema.
//! The reading thread measures each row and copies it out of its decoded batch with its
//! group ([`read_rows`]); the thread that normalizes it reads it into its members
//! ([`RowAt::read`]), with the same walk (a group whose copy would outweigh its rows is
//! read on the reading thread).
//!
//! Owns only the reading: what a row means is the adapter's. Also owns what every Parquet
//! read of babel's needs against damaged files (the records store reads through it too):
//! [`check_chunks`], [`contained`], and batches sized by what the pages say (`pages`,
//! [`batch_rows_of`]).

use std::convert::Infallible;
use std::fs::File;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, OffsetSizeTrait, RecordBatch, UInt32Array};
use arrow_schema::{DataType, Fields};
use arrow_select::take::take_record_batch;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::basic::Type as PhysicalType;
use parquet::column::page::{Page, PageReader};
use parquet::errors::ParquetError;
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData, RowGroupMetaData};
use parquet::file::serialized_reader::SerializedPageReader;
#[cfg(test)]
use serde_json::Map;
use serde_json::{Number, Value};

use super::document::Items;
use super::shape::{
    Content, Index, Item, ItemVisit, MAX_ITEM_BYTES, Reading, Shape, ShapeError, Stop,
};
use crate::jsonl::{DEPTH_LIMIT, FieldPath, Members, NonFiniteReplacement};
use crate::record::Locator;

mod pages;

thread_local! {
    /// Set while [`contained`] runs on this thread, so the panic hook stays quiet.
    static CONTAINING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `read`, turning a panic into an error. The Parquet and Arrow readers trust some
/// numbers in a file (offsets, lengths, bit widths) and panic on damaged ones; a records
/// file may have been changed by anyone, and validate must report that, not crash. The
/// panic is not printed: the first call wraps the process's panic hook in one that stays
/// silent while a contained read runs on its thread.
pub fn contained<T>(read: impl FnOnce() -> T) -> Result<T, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !CONTAINING.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
    CONTAINING.with(|c| c.set(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(read));
    CONTAINING.with(|c| c.set(false));
    result.map_err(|panic| {
        let detail = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        format!("the Parquet reader failed on damaged data ({detail})")
    })
}

/// Checks that every column chunk the footer describes lies inside the file, with sizes
/// and counts that are not negative. The Parquet reader trusts these numbers (a negative
/// start makes it panic), so a damaged footer is refused here, with what is wrong.
pub fn check_chunks(metadata: &ParquetMetaData, length: u64) -> Result<(), String> {
    let length = i64::try_from(length).unwrap_or(i64::MAX);
    for (group, row_group) in metadata.row_groups().iter().enumerate() {
        if row_group.num_rows() < 0 {
            return Err(format!("row group {group} has a negative row count"));
        }
        for column in row_group.columns() {
            let (start, size) = chunk_range(column);
            let inside = start >= 0
                && size >= 0
                && column.num_values() >= 0
                && start.checked_add(size).is_some_and(|end| end <= length);
            if !inside {
                return Err(format!(
                    "the footer places column {} of row group {group} at bytes {start}..+{size}, outside the {length}-byte file",
                    column.column_path()
                ));
            }
        }
    }
    Ok(())
}

/// Where a column chunk starts and how many bytes it takes, as the footer says and the
/// reader takes it (from the dictionary page offset whenever there is one: a chunk checked
/// from elsewhere would not be the bytes decoded).
fn chunk_range(column: &ColumnChunkMetaData) -> (i64, i64) {
    let start = column
        .dictionary_page_offset()
        .unwrap_or(column.data_page_offset());
    (start, column.compressed_size())
}

/// What the pages of column `column` of `group` say of themselves (see `pages`); the
/// chunk lies inside the file ([`check_chunks`]).
pub(crate) fn chunk_pages(
    file: &File,
    group: &RowGroupMetaData,
    column: usize,
) -> Result<pages::Chunk, String> {
    let chunk = group.column(column);
    let (start, size) = chunk_range(chunk);
    let (start, size) = (start.max(0) as u64, size.max(0) as u64);
    pages::chunk(file, start, start.saturating_add(size))
        .map_err(|e| format!("column {}: {e}", chunk.column_path()))
}

/// The most bytes of footer babel decodes. A lighteval details file's is a few kilobytes,
/// a records file's a few hundred for each row group.
const MAX_FOOTER_BYTES: u32 = 8 << 20;

/// The stack a footer is decoded on: reserved, and used only as deep as its schema goes.
const FOOTER_STACK_BYTES: usize = 1 << 30;

/// A Parquet file's footer, decoded, with a schema no deeper than [`MAX_SCHEMA_DEPTH`]
/// (`Err`: a footer too large, a schema too deep, or a panic of the reader's, as
/// [`contained`] reports it). The Parquet reader decodes a schema by recursion, one stack
/// frame and more for each level: a schema 16,000 lists deep overflowed the main thread's
/// stack, a crash no panic guard catches. So the footer is at most [`MAX_FOOTER_BYTES`] and
/// is decoded on a thread with a stack 128 times the main thread's (the schemas the Arrow
/// writer can write at all, nullable ones under 32,767 levels, fit with room to spare; a
/// hand-made schema of required groups as deep as 8 MiB allows was not measured).
pub fn load_metadata(file: &File) -> Result<Result<ArrowReaderMetadata, ParquetError>, String> {
    let length = file
        .metadata()
        .map_err(|e| format!("its size cannot be read ({e})"))?
        .len();
    // The footer's length is the four bytes before the closing `PAR1` (without it the
    // file is not Parquet, which the reader says).
    let mut tail = [0u8; 8];
    let read = length >= 8
        && std::os::unix::fs::FileExt::read_exact_at(file, &mut tail, length - 8).is_ok();
    if read && tail[4..] == *b"PAR1" {
        let footer = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
        if footer > MAX_FOOTER_BYTES {
            return Err(format!(
                "its footer is {footer} bytes, more than the {MAX_FOOTER_BYTES} babel decodes"
            ));
        }
    }
    let loaded = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(FOOTER_STACK_BYTES)
            .spawn_scoped(scope, || {
                contained(|| ArrowReaderMetadata::load(file, ArrowReaderOptions::new()))
            })
            .map_err(|e| format!("no thread could be started to read it ({e})"))?
            .join()
            .map_err(|_| "the Parquet reader panicked".to_owned())?
    })?;
    if let Ok(metadata) = &loaded {
        check_schema_depth(metadata.metadata())?;
    }
    Ok(loaded)
}

/// The deepest column a Parquet schema may hold, in schema levels: a list takes two (the
/// list and its repeated group), so this is room for more nesting than a row may have
/// ([`DEPTH_LIMIT`]), and far less than the reader's own recursion can take.
const MAX_SCHEMA_DEPTH: usize = 2 * DEPTH_LIMIT + 8;

/// Refuses a schema nested deeper than [`MAX_SCHEMA_DEPTH`] before a reader is built for it:
/// the Parquet reader builds one by recursion, and a schema a few thousand levels deep
/// overflowed its stack (a crash no panic guard can catch).
fn check_schema_depth(metadata: &ParquetMetaData) -> Result<(), String> {
    let schema = metadata.file_metadata().schema_descr();
    match schema
        .columns()
        .iter()
        .map(|column| column.path().parts().len())
        .max()
    {
        Some(depth) if depth > MAX_SCHEMA_DEPTH => Err(format!(
            "a column is nested {depth} levels deep in the schema, more than the {MAX_SCHEMA_DEPTH} babel reads"
        )),
        _ => Ok(()),
    }
}

/// Rows decoded at a time, unless [`BATCH_BYTES`] makes it fewer.
const BATCH_ROWS: usize = 256;
/// About the most bytes of a row group's columns a batch decodes, here and in the records
/// reader: 256 rows of long-context prompts (1.4 MB each) took 839 MB here, and 4,096
/// long-context records held a whole 1.5 GB run in validate.
pub const BATCH_BYTES: u64 = 32 << 20;

/// Rows per batch of `group` so that a batch of its `columns` (leaf indices) holds about
/// `bytes`, as the group's average row says: at least one, at most `max_rows`. Everything
/// counted comes from the pages' own headers (`pages`), not the footer, which only the
/// writer holds to them: a footer that understated a chunk of long values had them all
/// decoded in one batch. `Err` when a page cannot be read, or the group's pages (and the
/// values of its repeated columns, see below) hold more than [`MAX_ROW_GROUP_BYTES`].
///
/// Each column counts its pages' bytes, and for each value it declares what decoding adds
/// beyond them ([`value_width`]): a dictionary-encoded value decodes to far more than its
/// page entry (a 9.5 KB file of 300 rows sharing one 8 MiB value decoded to 2.4 GB at
/// once), so it counts its dictionary's longest value. No value is longer than its chunk:
/// only where that bound would make batches smaller is the value read from the dictionary
/// page. Reading it costs a page reader per column, whose codec alone took a fifth of an
/// import into a run of 570 small records files.
///
/// The bound is an average over the group's rows, and a repeated (list) column's values
/// may all be in one row: such a column's values are counted whole against
/// [`MAX_ROW_GROUP_BYTES`] too (their [`decoded_width`], not a dictionary's value for
/// each: an honest list column of 40,000 rows with one 32 KB value among them would be
/// refused). So a list of dictionary-encoded values all in one row is bounded only by the
/// average: reading such columns as Arrow dictionaries would bound it.
pub fn batch_rows_of(
    file: &File,
    group: &RowGroupMetaData,
    columns: &[usize],
    bytes: u64,
    max_rows: usize,
) -> Result<usize, String> {
    let chunks = columns
        .iter()
        .map(|&column| chunk_pages(file, group, column))
        .collect::<Result<Vec<_>, String>>()?;
    let paged = chunks
        .iter()
        .fold(0u64, |sum, chunk| sum.saturating_add(chunk.bytes));
    let mut whole = paged;
    for (&column, chunk) in columns.iter().zip(&chunks) {
        let descr = group.column(column).column_descr();
        if descr.max_rep_level() > 0 {
            whole = whole.saturating_add(chunk.values.saturating_mul(decoded_width(descr)));
        }
    }
    if whole > MAX_ROW_GROUP_BYTES as u64 {
        return Err(format!(
            "the pages of a row group decode to {whole} bytes or more, more than the {MAX_ROW_GROUP_BYTES} babel decodes at once"
        ));
    }
    // Every row has a value (or a null, or an empty list) in every column, and the reader
    // decodes no more values than the pages declare: the footer's row count, which
    // nothing holds to the pages, counts only when it is smaller.
    let rows = chunks
        .iter()
        .map(|chunk| chunk.values)
        .chain([group.num_rows().max(0) as u64])
        .min()
        .unwrap_or_default()
        .max(1);
    let rows_for = |read: bool| {
        let mut total = paged;
        for (&column, chunk) in columns.iter().zip(&chunks) {
            let width = value_width(file, group, column, chunk, read)?;
            total = total.saturating_add(chunk.values.saturating_mul(width));
        }
        let per_row = total.div_ceil(rows).max(1);
        Ok::<_, String>((bytes / per_row).clamp(1, max_rows as u64) as usize)
    };
    let bounded = rows_for(false)?;
    if bounded == max_rows {
        return Ok(bounded);
    }
    rows_for(true)
}

/// What one value of a column decodes to beyond its pages' bytes, whatever its encoding:
/// its two levels, an offset and a validity bit for each list around it (nine bytes, a
/// large list's), and its Arrow value, at least 16 bytes (a decimal of a few bytes on
/// the page becomes 16, a string's view is 16; a run or a delta of nothing makes any
/// number of values of a few bytes).
fn decoded_width(descr: &parquet::schema::types::ColumnDescriptor) -> u64 {
    const LEVELS: u64 = 4;
    const LIST: u64 = 9;
    const ARROW_VALUE: u64 = 16;
    let width = match descr.physical_type() {
        PhysicalType::FIXED_LEN_BYTE_ARRAY => descr.type_length().max(0) as u64,
        PhysicalType::INT96 => 12,
        _ => 0,
    };
    LEVELS + LIST * descr.max_rep_level().max(0) as u64 + width.max(ARROW_VALUE)
}

/// What one value of a column chunk decodes to beyond its pages' bytes: its
/// [`decoded_width`] and, for a byte array whose pages hold far less than its values
/// (dictionary or DELTA_BYTE_ARRAY encoded, as `chunk`'s pages say), the value itself. A
/// dictionary's value is read from its page when `read` (and the chunk's one dictionary
/// page is its first, as writers write it), else bounded by the chunk; a DELTA_BYTE_ARRAY
/// value, which repeats a prefix of the one before it, by the chunk.
fn value_width(
    file: &File,
    group: &RowGroupMetaData,
    column: usize,
    chunk: &pages::Chunk,
    read: bool,
) -> Result<u64, String> {
    let descr = group.column(column).column_descr();
    let expanded = match descr.physical_type() {
        PhysicalType::BYTE_ARRAY if chunk.delta => chunk.bytes,
        PhysicalType::BYTE_ARRAY if chunk.dictionary => {
            match read && chunk.dictionary_pages == 1 && chunk.dictionary_first {
                true => longest_dictionary_value(file, group, column)?,
                false => chunk.bytes,
            }
        }
        _ => 0,
    };
    Ok(decoded_width(descr).saturating_add(expanded))
}

/// The length of the longest value on the dictionary page of a byte-array column chunk
/// (plain-encoded: each value a four-byte length, then its bytes); 0 without one.
fn longest_dictionary_value(
    file: &File,
    group: &RowGroupMetaData,
    column: usize,
) -> Result<u64, String> {
    let source = file
        .try_clone()
        .map_err(|e| format!("it cannot be read again ({e})"))?;
    let page = contained(|| {
        let rows = group.num_rows().max(0) as usize;
        SerializedPageReader::new(Arc::new(source), group.column(column), rows, None)?
            .get_next_page()
    })?
    .map_err(|e| {
        let path = group.column(column).column_path();
        format!("the dictionary of column {path} cannot be read ({e})")
    })?;
    let Some(Page::DictionaryPage { buf, .. }) = page else {
        return Ok(0);
    };
    let (mut at, mut longest) = (0usize, 0u64);
    while let Some(length) = buf.get(at..at + 4) {
        let length = u32::from_le_bytes(length.try_into().expect("four bytes"));
        longest = longest.max(u64::from(length));
        at = at.saturating_add(4).saturating_add(length as usize);
    }
    Ok(longest)
}

/// The most uncompressed bytes of one row group babel decodes: a larger one would be
/// held in memory whole.
pub const MAX_ROW_GROUP_BYTES: i64 = 1 << 30;

/// Why a Parquet file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ParquetInputError<E> {
    /// Not a Parquet file, or a damaged one.
    #[error("not a Parquet file babel can read: {0}")]
    Format(String),
    /// A column of a type a row cannot carry as JSON.
    #[error("column {column} has Arrow type {kind}, which babel does not read")]
    Type { column: String, kind: String },
    /// A value nested as deep as the strict reader refuses ([`DEPTH_LIMIT`] levels, the
    /// row counted): its record could be stored, and then never read back.
    #[error(
        "row {row}: {column} nests arrays and objects {DEPTH_LIMIT} levels deep, more than babel reads"
    )]
    TooDeep { row: u64, column: String },
    /// A row holding more than [`MAX_ITEM_BYTES`] of values, as an item of any other input
    /// may not.
    #[error("row {row} holds more than the {MAX_ITEM_BYTES} bytes babel reads of one item")]
    RowTooLarge { row: u64 },
    /// A row group larger than [`MAX_ROW_GROUP_BYTES`].
    #[error(
        "row group {group} is {bytes} bytes uncompressed, more than the {MAX_ROW_GROUP_BYTES} babel decodes at once"
    )]
    TooLarge { group: usize, bytes: i64 },
    /// The caller's own failure, passed through.
    #[error("{0}")]
    Visit(E),
}

/// One row as a JSON object, with the non-finite floats it held (read as null): the tree
/// reader's, the reference the members of a row are checked against in tests.
#[cfg(test)]
pub struct Row {
    pub object: Map<String, Value>,
    pub replaced: Vec<NonFiniteReplacement>,
}

/// A row handed out by [`read_rows`]: measured on the reading thread (its JSON size
/// counted and every value checked, so it is a row babel holds) and, most often, read
/// into its members by the thread that normalizes it ([`RowAt::read`]). Built on the
/// reading thread and freed on a worker, the objects of 200,000 rows kept both fighting
/// over the allocator's lock, and the workers waiting.
///
/// Rows go out in groups (at most `GROUP_ROWS` rows of one decoded batch, ended by the
/// row whose JSON passes `GROUP_BYTES`), each group one batch of the workers'
/// ([`RowAt::ends_group`]) holding one copy of its own rows' values, which their weights
/// count between them and [`copy_bound`] keeps near their JSON: what is in flight is
/// counted while it is held.
pub struct RowAt {
    position: u64,
    bytes: usize,
    ends_group: bool,
    held: Held,
}

/// What a [`RowAt`] holds until it is read.
enum Held {
    /// Its row of its group's copy (one for the group), and its share of the copy's bytes.
    Copy {
        rows: Arc<RecordBatch>,
        row: usize,
        share: usize,
    },
    /// The row already read, on the reading thread, where a copy would hold far more than
    /// the rows' JSON ([`copy_bound`]) or Arrow does not copy what the Parquet reader
    /// decoded.
    Read(Box<Members>),
}

impl RowAt {
    /// About as many bytes as the row's JSON text: its strings and keys, eight for each
    /// other scalar, two for each array or object and one for each element (what the 64
    /// MiB of an item bounds, and what progress counts).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// What the row holds until it is read and normalized: its JSON's bytes, and its share
    /// of its group's copy.
    pub fn weight(&self) -> usize {
        match &self.held {
            Held::Copy { share, .. } => self.bytes.saturating_add(*share),
            Held::Read(_) => self.bytes,
        }
    }

    /// Whether the row is the last of its group.
    pub fn ends_group(&self) -> bool {
        self.ends_group
    }

    /// The row's members, as the streaming reader reads a line's: each column's value as
    /// canonical text, with what a JSON parser tells apart in it. It was measured with the
    /// same walk, so an error here is one the Arrow reader panicked with (the text of
    /// [`ParquetInputError::Format`]).
    pub fn read(self, members: &mut Members) -> Result<(), String> {
        match self.held {
            Held::Copy { rows, row, .. } => {
                members_row::<Infallible>(&rows, row, self.position, self.bytes, members)
                    .map_err(|e| e.to_string())
            }
            Held::Read(read) => {
                *members = *read;
                Ok(())
            }
        }
    }
}

#[cfg(test)]
impl RowAt {
    /// The row as the tree reader reads it, rebuilt from its members: what a JSON parser
    /// tells apart and canonical text does not (a double `1.0`, an integer no double
    /// holds) restored from what the members note. Tests compare rows as trees.
    pub fn read_tree(self) -> Result<Row, String> {
        let mut members = Members::new();
        self.read(&mut members)?;
        Ok(Row {
            object: parsed_tree(&members),
            replaced: members.replaced().to_vec(),
        })
    }
}

/// The tree a JSON parser reads from `members` (see [`RowAt::read_tree`]).
#[cfg(test)]
fn parsed_tree(members: &Members) -> Map<String, Value> {
    use crate::jsonl::PathSegment;
    fn at<'v>(mut value: &'v mut Value, path: &[PathSegment]) -> &'v mut Value {
        for step in path {
            value = match step {
                PathSegment::Key(key) => &mut value[key.as_str()],
                PathSegment::Index(index) => &mut value[*index],
            };
        }
        value
    }
    members
        .iter()
        .map(|member| {
            let mut value = member.peek().to_value();
            for (_, below) in member.integral_doubles {
                let number = at(&mut value, below.segments());
                *number = Value::from(number.as_f64().expect("a number"));
            }
            for (_, (below, digits)) in member.unsafe_integers {
                *at(&mut value, below.segments()) = serde_json::from_str(digits).unwrap();
            }
            (member.key.to_owned(), value)
        })
        .collect()
}

/// Rows are handed out in groups of at most this many rows (as many as a batch of other
/// items holds, `BATCH_ITEMS` of `archive::import::structured`)...
const GROUP_ROWS: usize = 64;
/// ... or once a group's JSON passes this (`BATCH_BYTES` there): small enough that both
/// workers have a group while the reading thread measures the next.
const GROUP_BYTES: usize = 1 << 20;

/// The most bytes a copy of rows holding `json` bytes of JSON may take. A copy mostly
/// holds what the JSON counts (a string's bytes and offset, eight bytes for a number), but
/// Arrow keeps a slot in every child column for a null struct (eight bytes of JSON), and a
/// copied list reserves room by the average of the batch it came from: such a copy can be
/// hundreds of times its JSON, and its rows are read on the reading thread. (The count is
/// Arrow's, buffer capacities without their headers, a little under what the heap gives.)
fn copy_bound(json: usize) -> usize {
    json.saturating_mul(2).saturating_add(1 << 20)
}

/// Row `row` of `batch` (at `position` in the file, `bytes` as measured) read into
/// `members` (emptied first), contained. A column named twice keeps its last value where
/// its first was, as a JSON object read by a parser does.
fn members_row<E>(
    batch: &RecordBatch,
    row: usize,
    position: u64,
    bytes: usize,
    members: &mut Members,
) -> Result<(), ParquetInputError<E>> {
    let read = contained(|| {
        let mut walk = Walk::of(position);
        walk.out.reserve(text_bound(bytes));
        let repeated = has_repeated_names(batch.schema_ref().fields());
        let mut columns: Vec<(&str, Column)> = Vec::with_capacity(batch.num_columns());
        for (field, column) in batch.schema_ref().fields().iter().zip(batch.columns()) {
            walk.count(field.name().len())?;
            walk.at.push(Step::Field(field.name()));
            let start = walk.out.len();
            json_of::<Canonical, E>(column, row, 1, &mut walk)?;
            walk.at.pop();
            let float = matches!(column.data_type(), DataType::Float32 | DataType::Float64);
            let read = Column {
                double: float && &walk.out[start..] != b"null",
                text: start..walk.out.len(),
                unsafe_integers: std::mem::take(&mut walk.unsafe_integers),
                integral_doubles: std::mem::take(&mut walk.integral_doubles),
            };
            match repeated
                .then(|| columns.iter_mut().find(|(key, _)| key == field.name()))
                .flatten()
            {
                Some((_, first)) => *first = read,
                None => columns.push((field.name(), read)),
            }
        }
        Ok((columns, walk.replaced, walk.out))
    });
    let (columns, replaced, text) = read.map_err(ParquetInputError::Format)??;
    members.clear();
    for (key, column) in columns {
        members.push_read(
            key,
            canonical_text(&text[column.text]),
            column.double,
            column.unsafe_integers,
            column.integral_doubles,
        );
    }
    for replaced in replaced {
        members.push_replaced(replaced);
    }
    Ok(())
}

/// One column of a row read as canonical text ([`members_row`]).
struct Column {
    /// Where its text is in the walk's.
    text: std::ops::Range<usize>,
    /// A JSON parser reads the value as a double (a float column's number).
    double: bool,
    unsafe_integers: Vec<(FieldPath, String)>,
    integral_doubles: Vec<FieldPath>,
}

/// Room for the canonical text of a row measured at `bytes` (keys and strings are quoted,
/// a number may be longer than the eight bytes it counts): sized once, as a buffer grown
/// by doubling for every row was a tenth of a lighteval import.
fn text_bound(bytes: usize) -> usize {
    bytes.saturating_add(bytes / 2).saturating_add(64)
}

/// Canonical text the walk wrote: strings copied whole and ASCII around them.
fn canonical_text(text: &[u8]) -> &str {
    std::str::from_utf8(text).expect("canonical text of strings and ASCII is UTF-8")
}
/// Row `row` of `batch` (at `position` in the file) read into an object, contained.
#[cfg(test)]
fn tree_row<E>(
    batch: &RecordBatch,
    row: usize,
    position: u64,
) -> Result<Row, ParquetInputError<E>> {
    let mut walk = Walk::of(position);
    let object = contained(|| walk_row::<Tree, E>(batch, row, &mut walk))
        .map_err(ParquetInputError::Format)??;
    Ok(Row {
        object,
        replaced: walk.replaced,
    })
}

/// The number of rows the file's footer declares.
pub fn count_rows(file: File) -> Result<u64, String> {
    let metadata = load_metadata(&file)?.map_err(|e| e.to_string())?;
    Ok(metadata.metadata().file_metadata().num_rows().max(0) as u64)
}

/// Hands every row of the Parquet file, with its zero-based position, to `visit`, in
/// file order. A row babel cannot hold (too large, too deep, a type JSON cannot carry)
/// stops the reading after the rows before it are handed out.
pub fn read_rows<E>(
    file: File,
    mut visit: impl FnMut(u64, RowAt) -> Result<(), E>,
) -> Result<(), ParquetInputError<E>> {
    let format = |e: parquet::errors::ParquetError| ParquetInputError::Format(e.to_string());
    let length = file
        .metadata()
        .map_err(|e| ParquetInputError::Format(e.to_string()))?
        .len();
    let metadata = load_metadata(&file)
        .map_err(ParquetInputError::Format)?
        .map_err(format)?;
    check_chunks(metadata.metadata(), length).map_err(ParquetInputError::Format)?;
    for (group, meta) in metadata.metadata().row_groups().iter().enumerate() {
        if meta.total_byte_size() > MAX_ROW_GROUP_BYTES {
            return Err(ParquetInputError::TooLarge {
                group,
                bytes: meta.total_byte_size(),
            });
        }
    }
    let mut position = 0u64;
    // A row group at a time: a batch of rows read across row groups would hold as many
    // bytes as they do together, beyond what each is allowed.
    for group in 0..metadata.metadata().num_row_groups() {
        let source = file
            .try_clone()
            .map_err(|e| ParquetInputError::Format(e.to_string()))?;
        let meta = metadata.metadata().row_group(group);
        let rows = batch_rows_of(
            &file,
            meta,
            &(0..meta.num_columns()).collect::<Vec<_>>(),
            BATCH_BYTES,
            BATCH_ROWS,
        )
        .map_err(ParquetInputError::Format)?;
        let mut reader = contained(|| {
            ParquetRecordBatchReaderBuilder::new_with_metadata(source, metadata.clone())
                .with_row_groups(vec![group])
                .with_batch_size(rows)
                .build()
        })
        .map_err(ParquetInputError::Format)?
        .map_err(format)?;
        while let Some(batch) = contained(|| reader.next()).map_err(ParquetInputError::Format)? {
            let batch = batch.map_err(|e| ParquetInputError::Format(e.to_string()))?;
            let mut group = Group::new(position);
            // One walk for the batch's rows, so that its places are not made again for each.
            let mut walk = Walk::of(position);
            for row in 0..batch.num_rows() {
                walk.start(position);
                let measured = contained(|| walk_row::<Measure, E>(&batch, row, &mut walk))
                    .map_err(ParquetInputError::Format)
                    .and_then(std::convert::identity);
                match measured {
                    Ok(()) => {}
                    // The rows before it are handed out first.
                    Err(error) => {
                        group.hand_out(&batch, &mut visit)?;
                        return Err(error);
                    }
                };
                group.sizes.push(walk.bytes);
                group.bytes += walk.bytes;
                position += 1;
                if group.sizes.len() == GROUP_ROWS || group.bytes >= GROUP_BYTES {
                    group.hand_out(&batch, &mut visit)?;
                }
            }
            group.hand_out(&batch, &mut visit)?;
        }
    }
    Ok(())
}

/// The rows of a decoded batch measured and not yet handed out.
struct Group {
    /// The first one's index in the batch, and its position in the file.
    first: usize,
    position: u64,
    /// Each one's JSON size.
    sizes: Vec<usize>,
    bytes: usize,
}

impl Group {
    fn new(position: u64) -> Self {
        Self {
            first: 0,
            position,
            sizes: Vec::with_capacity(GROUP_ROWS),
            bytes: 0,
        }
    }

    /// Copies the group's rows out of `batch` and hands each to `visit`; the group starts
    /// over after them.
    fn hand_out<E>(
        &mut self,
        batch: &RecordBatch,
        visit: &mut impl FnMut(u64, RowAt) -> Result<(), E>,
    ) -> Result<(), ParquetInputError<E>> {
        let count = self.sizes.len();
        if count == 0 {
            return Ok(());
        }
        let end = self.first + count;
        let indices = UInt32Array::from_iter_values((self.first..end).map(|i| i as u32));
        // Arrow's take checks what it builds (a list the reader decoded with nulls in a
        // non-nullable element is refused) and shares a view column's buffers whole: where
        // it fails or outweighs the rows, they are read here.
        let copy = contained(|| take_record_batch(batch, &indices))
            .ok()
            .and_then(Result::ok)
            .map(|copy| (copy.get_array_memory_size(), Arc::new(copy)))
            .filter(|(bytes, _)| *bytes <= copy_bound(self.bytes));
        for (row, bytes) in self.sizes.drain(..).enumerate() {
            let held = match &copy {
                Some((copied, rows)) => Held::Copy {
                    rows: Arc::clone(rows),
                    row,
                    share: copied.div_ceil(count),
                },
                None => {
                    let mut members = Box::new(Members::new());
                    members_row(batch, self.first + row, self.position, bytes, &mut members)?;
                    Held::Read(members)
                }
            };
            let at = RowAt {
                position: self.position,
                bytes,
                ends_group: row + 1 == count,
                held,
            };
            visit(self.position, at).map_err(ParquetInputError::Visit)?;
            self.position += 1;
        }
        self.first = end;
        self.bytes = 0;
        Ok(())
    }
}

/// What a walk over a row's values makes of them: the row's JSON object ([`Tree`]), its
/// canonical text ([`Canonical`]), or nothing but the count and the checks ([`Measure`]).
/// One walk, so that a row measured on the reading thread reads the same on a worker.
/// Each step is told before a field's or an element's value is walked, and after.
trait Make {
    type Value;
    type Array;
    type Object;
    /// A null, a boolean or a finite number.
    fn scalar(value: Value, walk: &mut Walk) -> Self::Value;
    /// A NaN or an infinity, read as null (a tree notes where).
    fn non_finite(value: f64, walk: &mut Walk) -> Self::Value;
    fn text(value: &str, walk: &mut Walk) -> Self::Value;
    fn array(len: usize, walk: &mut Walk) -> Self::Array;
    /// Element `index` is walked next.
    fn element(array: &mut Self::Array, index: usize, walk: &mut Walk);
    fn push(array: &mut Self::Array, value: Self::Value);
    fn end_array(array: Self::Array, walk: &mut Walk) -> Self::Value;
    fn object(len: usize, walk: &mut Walk) -> Self::Object;
    /// The value of field `key` is walked next.
    fn field<'a>(object: &mut Self::Object, key: &'a str, walk: &mut Walk<'a>);
    fn insert(object: &mut Self::Object, key: &str, value: Self::Value, walk: &mut Walk);
    fn end_object(object: Self::Object, walk: &mut Walk) -> Self::Value;
}

/// A row's JSON object: the tree reader's, the reference in tests.
#[cfg(test)]
enum Tree {}

#[cfg(test)]
impl Make for Tree {
    type Value = Value;
    type Array = Vec<Value>;
    type Object = Map<String, Value>;

    fn scalar(value: Value, _: &mut Walk) -> Value {
        value
    }

    fn non_finite(value: f64, walk: &mut Walk) -> Value {
        walk.replace(value);
        Value::Null
    }

    fn text(value: &str, _: &mut Walk) -> Value {
        value.into()
    }

    fn array(len: usize, _: &mut Walk) -> Vec<Value> {
        // Room for a list's elements up to a bound: a list of millions of nulls is
        // refused once their count passes what a row may hold, and room for all of them
        // first would be gigabytes.
        Vec::with_capacity(len.min(1 << 12))
    }

    fn element(_: &mut Vec<Value>, _: usize, _: &mut Walk) {}

    fn push(array: &mut Vec<Value>, value: Value) {
        array.push(value);
    }

    fn end_array(array: Vec<Value>, _: &mut Walk) -> Value {
        Value::Array(array)
    }

    fn object(len: usize, _: &mut Walk) -> Map<String, Value> {
        Map::with_capacity(len)
    }

    fn field<'a>(_: &mut Map<String, Value>, _: &'a str, _: &mut Walk<'a>) {}

    fn insert(object: &mut Map<String, Value>, key: &str, value: Value, _: &mut Walk) {
        object.insert(key.to_owned(), value);
    }

    fn end_object(object: Map<String, Value>, _: &mut Walk) -> Value {
        Value::Object(object)
    }
}

/// Each value's canonical text (RFC 8785, as `canonical_json` writes the value a tree
/// would hold), written into one buffer, the walk's `out`, as the streaming reader writes
/// a line's; noting on the walk what a JSON parser tells apart and canonical text does
/// not: an integer no double holds (its text is then its nearest double's, as the
/// streaming reader writes it) and a double whose text is an integer. A struct's fields
/// are written in schema order, each one's span noted, and put in key order when the
/// struct ends (unless they are in it already).
enum Canonical {}

/// Where an object being written by [`Canonical`] began: its `{` in the walk's text, and
/// its first field's span in the walk's spans.
struct ObjectAt {
    open: usize,
    spans: usize,
}

impl Make for Canonical {
    type Value = ();
    type Array = ();
    type Object = ObjectAt;

    fn scalar(value: Value, walk: &mut Walk) {
        let start = walk.out.len();
        if crate::canonical_json::write_value(&value, &mut walk.out).is_err() {
            // What a failed write left is not the value's.
            walk.out.truncate(start);
            walk.unsafe_integers.push((walk.path(), value.to_string()));
            let nearest = value.as_f64().expect("an integer");
            crate::canonical_json::write_value(&Value::from(nearest), &mut walk.out)
                .expect("a finite double");
        }
        if value.as_number().is_some_and(serde_json::Number::is_f64)
            && walk.out[start..]
                .iter()
                .all(|b| b.is_ascii_digit() || *b == b'-')
        {
            walk.integral_doubles.push(walk.path());
        }
    }

    fn non_finite(value: f64, walk: &mut Walk) {
        walk.replace(value);
        walk.out.extend_from_slice(b"null");
    }

    fn text(value: &str, walk: &mut Walk) {
        crate::canonical_json::write_string(value, &mut walk.out);
    }

    fn array(_: usize, walk: &mut Walk) {
        walk.out.push(b'[');
    }

    fn element(_: &mut (), index: usize, walk: &mut Walk) {
        if index > 0 {
            walk.out.push(b',');
        }
    }

    fn push(_: &mut (), _: ()) {}

    fn end_array(_: (), walk: &mut Walk) {
        walk.out.push(b']');
    }

    fn object(_: usize, walk: &mut Walk) -> ObjectAt {
        walk.out.push(b'{');
        ObjectAt {
            open: walk.out.len() - 1,
            spans: walk.spans.len(),
        }
    }

    fn field<'a>(object: &mut ObjectAt, key: &'a str, walk: &mut Walk<'a>) {
        if walk.spans.len() > object.spans {
            walk.out.push(b',');
        }
        let start = walk.out.len();
        crate::canonical_json::write_string(key, &mut walk.out);
        walk.out.push(b':');
        walk.spans.push(Span {
            key,
            start,
            end: start,
        });
    }

    fn insert(_: &mut ObjectAt, _: &str, (): (), walk: &mut Walk) {
        let end = walk.out.len();
        walk.spans.last_mut().expect("a field begun").end = end;
    }

    fn end_object(object: ObjectAt, walk: &mut Walk) {
        use crate::canonical_json::utf16_order;
        use std::cmp::Ordering;
        let spans = &mut walk.spans[object.spans..];
        if !spans.is_sorted_by(|a, b| utf16_order(a.key, b.key) == Ordering::Less) {
            // Sorted stably, a field named twice has its values side by side in field
            // order: the last is kept, as a JSON object keeps a repeated key's last value.
            spans.sort_by(|a, b| utf16_order(a.key, b.key));
            walk.scratch.clear();
            walk.scratch.reserve(walk.out.len() - object.open);
            for (index, span) in spans.iter().enumerate() {
                if spans
                    .get(index + 1)
                    .is_some_and(|next| next.key == span.key)
                {
                    continue;
                }
                if !walk.scratch.is_empty() {
                    walk.scratch.push(b',');
                }
                walk.scratch
                    .extend_from_slice(&walk.out[span.start..span.end]);
            }
            walk.out.truncate(object.open + 1);
            walk.out.extend_from_slice(&walk.scratch);
        }
        walk.spans.truncate(object.spans);
        walk.out.push(b'}');
    }
}

/// A field written by [`Canonical`]: its name, and where its `"name":value` is in the
/// walk's text.
struct Span<'a> {
    key: &'a str,
    start: usize,
    end: usize,
}

/// Nothing built: the walk's count and checks only.
enum Measure {}

impl Make for Measure {
    type Value = ();
    type Array = ();
    type Object = ();

    fn scalar(_: Value, _: &mut Walk) {}
    fn non_finite(_: f64, _: &mut Walk) {}
    fn text(_: &str, _: &mut Walk) {}
    fn array(_: usize, _: &mut Walk) {}
    fn element(_: &mut (), _: usize, _: &mut Walk) {}
    fn push(_: &mut (), _: ()) {}
    fn end_array(_: (), _: &mut Walk) {}
    fn object(_: usize, _: &mut Walk) {}
    fn field<'a>(_: &mut (), _: &'a str, _: &mut Walk<'a>) {}
    fn insert(_: &mut (), _: &str, _: (), _: &mut Walk) {}
    fn end_object(_: (), _: &mut Walk) {}
}

/// Walks row `row` of `batch` into what `M` makes of it, counting and noting on `walk`
/// (which [`Walk::start`]ed the row).
fn walk_row<'a, M: Make, E>(
    batch: &'a RecordBatch,
    row: usize,
    walk: &mut Walk<'a>,
) -> Result<M::Object, ParquetInputError<E>> {
    members::<M, E>(batch.schema_ref().fields(), batch.columns(), row, 0, walk)
}

/// The members of a row or a struct value: each field's value at `row`, inside `depth`
/// arrays and objects.
fn members<'a, M: Make, E>(
    fields: &'a Fields,
    columns: &'a [ArrayRef],
    row: usize,
    depth: usize,
    walk: &mut Walk<'a>,
) -> Result<M::Object, ParquetInputError<E>> {
    let mut object = M::object(fields.len(), walk);
    // Where each field's notes begin on the walk (a stack shared by nested structs).
    let base = walk.field_notes.len();
    for (field, column) in fields.iter().zip(columns) {
        walk.count(field.name().len())?;
        walk.at.push(Step::Field(field.name()));
        walk.field_notes
            .push((walk.unsafe_integers.len(), walk.integral_doubles.len()));
        M::field(&mut object, field.name(), walk);
        let value = json_of::<M, E>(column, row, depth + 1, walk)?;
        walk.at.pop();
        M::insert(&mut object, field.name(), value, walk);
    }
    let noted = (walk.unsafe_integers.len(), walk.integral_doubles.len());
    // Only a struct with notes and a field named twice has notes to forget (rare: of a
    // repeated name, a JSON object's last value wins).
    let first = walk.field_notes.get(base).copied();
    if first.is_some_and(|first| first != noted) && has_repeated_names(fields) {
        let starts = walk.field_notes[base..].to_vec();
        walk.forget_replaced(fields, &starts, noted);
    }
    walk.field_notes.truncate(base);
    Ok(object)
}

/// Whether some field of `fields` has the name of another.
fn has_repeated_names(fields: &Fields) -> bool {
    let mut names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    names.sort_unstable();
    names.windows(2).any(|pair| pair[0] == pair[1])
}

/// The walk of one row's values: what it counted, the non-finite numbers it read as
/// null, where it is, and what [`Canonical`] wrote.
struct Walk<'a> {
    /// The row's zero-based position in the file.
    row: u64,
    replaced: Vec<NonFiniteReplacement>,
    bytes: usize,
    /// The fields and elements down to the value being read, made a [`FieldPath`] only
    /// when one is needed: a path built for every value was a sixth of an import.
    at: Vec<Step<'a>>,
    /// Where the integers no double holds are, with their digits ([`Canonical`]).
    unsafe_integers: Vec<(FieldPath, String)>,
    /// Where the doubles whose canonical text is an integer are ([`Canonical`]).
    integral_doubles: Vec<FieldPath>,
    /// For each field of the structs being walked, innermost last, the lengths of the two
    /// lists above when its value began.
    field_notes: Vec<(usize, usize)>,
    /// The canonical text written so far ([`Canonical`]).
    out: Vec<u8>,
    /// The fields of the objects being written, innermost last ([`Canonical`]).
    spans: Vec<Span<'a>>,
    /// Where an object's fields are put in key order ([`Canonical`]).
    scratch: Vec<u8>,
}

/// How many places, field notes and spans a [`Walk`] has room for from the start (a
/// lighteval row has 34 fields, two levels deep).
const WALK_ROOM: usize = 40;

/// One step of a [`Walk`]'s place: a struct field (its name is the schema's, which the
/// walk borrows with the batch: a list's elements are read at their place in the list's
/// values, not from a slice made for the row), or a list element.
enum Step<'a> {
    Field(&'a str),
    Element(usize),
}

impl<'a> Walk<'a> {
    /// The walk of the row at `position` in the file.
    fn of(position: u64) -> Self {
        Walk {
            row: position,
            replaced: Vec::new(),
            bytes: 0,
            // Room for the places and fields of common rows, given once.
            at: Vec::with_capacity(WALK_ROOM),
            unsafe_integers: Vec::new(),
            integral_doubles: Vec::new(),
            field_notes: Vec::with_capacity(WALK_ROOM),
            out: Vec::new(),
            spans: Vec::with_capacity(WALK_ROOM),
            scratch: Vec::new(),
        }
    }

    /// Starts the walk over for the row at `position`, keeping its buffers.
    fn start(&mut self, position: u64) {
        self.row = position;
        self.replaced.clear();
        self.bytes = 0;
        self.at.clear();
        self.unsafe_integers.clear();
        self.integral_doubles.clear();
        self.field_notes.clear();
        self.out.clear();
        self.spans.clear();
    }

    /// Drops the notes of the values a later field of the same name replaced (a JSON
    /// object keeps a repeated key's last value): `starts` holds where each field's notes
    /// began, `end` where the last one's ended. A non-finite number read as null stays
    /// noted, as the tree reader notes it.
    fn forget_replaced(&mut self, fields: &Fields, starts: &[(usize, usize)], end: (usize, usize)) {
        let ends = starts.iter().skip(1).copied().chain([end]);
        let ranges: Vec<((usize, usize), (usize, usize))> =
            starts.iter().copied().zip(ends).collect();
        // From the last, so the earlier ranges stay where they are.
        for (i, ((unsafe_from, doubles_from), (unsafe_to, doubles_to))) in
            ranges.into_iter().enumerate().rev()
        {
            let name = fields[i].name();
            if fields.iter().skip(i + 1).any(|later| later.name() == name) {
                self.unsafe_integers.drain(unsafe_from..unsafe_to);
                self.integral_doubles.drain(doubles_from..doubles_to);
            }
        }
    }

    /// Notes that the non-finite `value` here was read as null.
    fn replace(&mut self, value: f64) {
        let path = self.path();
        self.replaced.push(NonFiniteReplacement {
            path,
            token: if value.is_nan() {
                "NaN"
            } else if value > 0.0 {
                "Infinity"
            } else {
                "-Infinity"
            },
        });
    }

    /// Counts `bytes` more of the row, refusing a row past [`MAX_ITEM_BYTES`] as soon as
    /// it is.
    fn count<E>(&mut self, bytes: usize) -> Result<(), ParquetInputError<E>> {
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > MAX_ITEM_BYTES {
            return Err(ParquetInputError::RowTooLarge { row: self.row });
        }
        Ok(())
    }

    /// The path of the value being read.
    fn path(&self) -> FieldPath {
        self.at
            .iter()
            .fold(FieldPath::root(), |path, step| match step {
                Step::Field(name) => path.key(name),
                Step::Element(index) => path.index(*index),
            })
    }
}

/// The JSON value of `array[row]`, inside `depth` arrays and objects (the row's own
/// object counted), at the walk's place.
fn json_of<'a, M: Make, E>(
    array: &'a ArrayRef,
    row: usize,
    depth: usize,
    walk: &mut Walk<'a>,
) -> Result<M::Value, ParquetInputError<E>> {
    if array.is_null(row) {
        walk.count(SCALAR_BYTES)?;
        return Ok(M::scalar(Value::Null, walk));
    }
    let nested = matches!(
        array.data_type(),
        DataType::List(_) | DataType::LargeList(_) | DataType::Struct(_)
    );
    if nested {
        if depth + 1 >= DEPTH_LIMIT {
            return Err(ParquetInputError::TooDeep {
                row: walk.row,
                column: walk.path().to_string(),
            });
        }
        // Its brackets: millions of empty lists cost a Parquet file almost nothing, and
        // each is a value in memory.
        walk.count(2)?;
    }
    let float = |value: f64, walk: &mut Walk| match Number::from_f64(value) {
        Some(number) => M::scalar(Value::Number(number), walk),
        None => M::non_finite(value, walk),
    };
    let value = match array.data_type() {
        DataType::Null => M::scalar(Value::Null, walk),
        DataType::Boolean => M::scalar(Value::Bool(array.as_boolean().value(row)), walk),
        DataType::Int8 => M::scalar(array.as_primitive::<Int8Type>().value(row).into(), walk),
        DataType::Int16 => M::scalar(array.as_primitive::<Int16Type>().value(row).into(), walk),
        DataType::Int32 => M::scalar(array.as_primitive::<Int32Type>().value(row).into(), walk),
        DataType::Int64 => M::scalar(array.as_primitive::<Int64Type>().value(row).into(), walk),
        DataType::UInt8 => M::scalar(array.as_primitive::<UInt8Type>().value(row).into(), walk),
        DataType::UInt16 => M::scalar(array.as_primitive::<UInt16Type>().value(row).into(), walk),
        DataType::UInt32 => M::scalar(array.as_primitive::<UInt32Type>().value(row).into(), walk),
        DataType::UInt64 => M::scalar(array.as_primitive::<UInt64Type>().value(row).into(), walk),
        DataType::Float32 => float(
            f64::from(array.as_primitive::<Float32Type>().value(row)),
            walk,
        ),
        DataType::Float64 => float(array.as_primitive::<Float64Type>().value(row), walk),
        DataType::Utf8 => text::<M, E>(array.as_string::<i32>().value(row), walk)?,
        DataType::LargeUtf8 => text::<M, E>(array.as_string::<i64>().value(row), walk)?,
        DataType::Utf8View => text::<M, E>(array.as_string_view().value(row), walk)?,
        DataType::List(_) => list::<i32, M, E>(array, row, depth, walk)?,
        DataType::LargeList(_) => list::<i64, M, E>(array, row, depth, walk)?,
        DataType::Struct(fields) => {
            let object = members::<M, E>(fields, array.as_struct().columns(), row, depth, walk)?;
            M::end_object(object, walk)
        }
        other => {
            return Err(ParquetInputError::Type {
                column: walk.path().to_string(),
                kind: other.to_string(),
            });
        }
    };
    let text = matches!(
        array.data_type(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    );
    if !nested && !text {
        walk.count(SCALAR_BYTES)?;
    }
    Ok(value)
}

/// What a number, a boolean or a null counts towards a row's bytes.
const SCALAR_BYTES: usize = 8;

/// A string value, counted (before it is copied).
fn text<M: Make, E>(value: &str, walk: &mut Walk) -> Result<M::Value, ParquetInputError<E>> {
    walk.count(value.len())?;
    Ok(M::text(value, walk))
}

/// List `row` of a list array whose offsets are `O`s. Its elements are read at their
/// place in the list's values (Arrow keeps the offsets in order, within the values), not
/// from a slice made for the row, which cost an allocation for each list of each row.
fn list<'a, O: OffsetSizeTrait, M: Make, E>(
    array: &'a ArrayRef,
    row: usize,
    depth: usize,
    walk: &mut Walk<'a>,
) -> Result<M::Value, ParquetInputError<E>> {
    let array = array.as_list::<O>();
    let offsets = array.value_offsets();
    let at = offsets[row].as_usize()..offsets[row + 1].as_usize();
    let values = array.values();
    // A separator for each element, counted before any is read.
    walk.count(at.len())?;
    let mut elements = M::array(at.len(), walk);
    for (index, value) in at.enumerate() {
        walk.at.push(Step::Element(index));
        M::element(&mut elements, index, walk);
        let element = json_of::<M, E>(values, value, depth + 1, walk)?;
        M::push(&mut elements, element);
        walk.at.pop();
    }
    Ok(M::end_array(elements, walk))
}

/// The items of a Parquet file: each row, located by the pointer `/<row>` (zero-based, in
/// file order).
pub struct ParquetRows;

impl Shape for ParquetRows {
    fn items(&self, file: File, visit: &mut ItemVisit) -> Reading {
        let read = read_rows(file, |row, content| {
            visit(Item {
                locator: Locator::Pointer(format!("/{row}")),
                content: Content::Row(content),
            })
        });
        match read {
            Ok(()) => Ok(()),
            Err(ParquetInputError::Visit(Stop)) => Err(ShapeError::Stopped),
            Err(other) => Err(ShapeError::Invalid(other.to_string())),
        }
    }

    fn index(&self, file: File) -> Result<Index, String> {
        match count_rows(file) {
            Ok(count) => Ok(Index::Items {
                items: Items::TopLevel,
                count,
            }),
            Err(error) => Err(format!("cannot be read: {error}")),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use arrow_schema::FieldRef;
    use parquet::file::metadata::ColumnChunkMetaData;
    use parquet::schema::types::SchemaDescriptor;
    use std::path::Path;

    /// What the pages of an honest chunk say (`paged`: each page's header and the larger
    /// of its stored and uncompressed size) against its footer, which counts the headers
    /// and the uncompressed sizes: no less, and more only by pages stored larger than
    /// they decode (a few bytes that zstd's frame outweighs).
    pub(crate) fn assert_honest(paged: u64, chunk: &ColumnChunkMetaData, what: &str) {
        let said = chunk.uncompressed_size() as u64;
        let stored = chunk.compressed_size() as u64;
        assert!(
            said <= paged && paged <= said + stored,
            "{what}, {}: pages {paged}, footer {said}, stored {stored}",
            chunk.column_path()
        );
    }

    /// Every row's members are the tree reader's row (kept here as the reference): each
    /// column's canonical text is what `canonical_json` writes of the tree's value, and
    /// what a parser tells apart and canonical text does not is noted (`1.0`, `-0.0`, an
    /// integer no double holds, a NaN read as null), on lighteval's own files and on
    /// columns of every kind.
    #[test]
    fn a_rows_members_are_the_tree_readers_row() {
        use arrow_array::builder::{Float64Builder, ListBuilder};
        use arrow_array::{Float32Array, Float64Array, Int64Array, StringArray, UInt64Array};
        let mut lists = ListBuilder::new(Float64Builder::new());
        for values in [
            [0.5, 1.0],
            [-0.0, f64::NAN],
            [1e300, 3.0],
            [f64::INFINITY, 2.5],
        ] {
            lists.values().append_slice(&values);
            lists.append(true);
        }
        let column = |array: ArrayRef| array;
        // A struct naming `x` twice: the last value wins, and the first's integer beyond
        // 2^53 is no longer in the row.
        let x = || Arc::new(arrow_schema::Field::new("x", DataType::Int64, false));
        let repeated = arrow_array::StructArray::from(vec![
            (
                x(),
                column(Arc::new(Int64Array::from(vec![
                    9_007_199_254_740_993,
                    1,
                    2,
                    3,
                ]))),
            ),
            (x(), column(Arc::new(Int64Array::from(vec![5, 6, 7, 8])))),
            (
                Arc::new(arrow_schema::Field::new("y", DataType::Float64, false)),
                column(Arc::new(Float64Array::from(vec![1.0, 0.5, -0.0, 2.0]))),
            ),
        ]);
        let crafted = RecordBatch::try_from_iter([
            ("d", column(Arc::new(repeated))),
            (
                "h",
                column(Arc::new(Float32Array::from(vec![
                    f32::NAN,
                    -0.0,
                    16_777_216.0,
                    0.1,
                ]))),
            ),
            (
                "i",
                column(Arc::new(Int64Array::from(vec![
                    1,
                    9_007_199_254_740_993,
                    -9_007_199_254_740_993,
                    i64::MIN,
                ]))),
            ),
            (
                "u",
                column(Arc::new(UInt64Array::from(vec![
                    u64::MAX,
                    1 << 53,
                    (1 << 53) + 1,
                    0,
                ]))),
            ),
            (
                "f",
                column(Arc::new(Float64Array::from(vec![1.0, -0.0, 0.1, f64::NAN]))),
            ),
            (
                "g",
                column(Arc::new(Float32Array::from(vec![2.0, 0.25, 1e30, -3.0]))),
            ),
            ("l", column(Arc::new(lists.finish()))),
            (
                "s",
                column(Arc::new(StringArray::from(vec![
                    "a \"q\" \\ \n",
                    "\u{2028}é🎉",
                    "",
                    "\u{1}",
                ]))),
            ),
        ])
        .unwrap();
        let mut batches = vec![crafted];
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lighteval-0.13.0");
        let mut files = vec![root];
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            } else if path.extension().is_some_and(|e| e == "parquet") {
                let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap())
                    .unwrap()
                    .build()
                    .unwrap();
                batches.extend(reader.map(Result::unwrap));
            }
        }
        let mut members = Members::new();
        let mut rows = 0;
        for batch in &batches {
            for row in 0..batch.num_rows() {
                let tree = tree_row::<()>(batch, row, 7).unwrap();
                members_row::<()>(batch, row, 7, 0, &mut members).unwrap();
                assert_eq!(parsed_tree(&members), tree.object, "row {row}");
                assert_eq!(members.replaced(), &tree.replaced[..]);
                for member in members.iter() {
                    let double = tree.object[member.key].is_f64();
                    assert_eq!(member.written_as_fraction, double, "{}", member.key);
                }
                for member in members.iter().filter(|m| m.unsafe_integers.is_empty()) {
                    let written = crate::canonical_json::Json::of(&tree.object[member.key]);
                    assert_eq!(member.value, written.unwrap().as_str());
                }
                rows += 1;
            }
        }
        assert!(rows > 20, "{rows} rows");
        let unsafe_rows = {
            members_row::<()>(&batches[0], 2, 0, 0, &mut members).unwrap();
            members
                .iter()
                .map(|m| m.unsafe_integers.len())
                .sum::<usize>()
        };
        assert_eq!(unsafe_rows, 2, "-(2^53 + 1) as i64 and 2^53 + 1 as u64");
    }

    /// A list's elements are read at their place in the list's values: lists of structs
    /// (whose fields go in key order) and of lists, in a batch sliced from its second row,
    /// written as the JSON of each row says, by hand.
    #[test]
    fn list_elements_are_read_where_their_offsets_put_them() {
        use arrow_array::{Int64Array, ListArray, StringArray, StructArray};
        use arrow_buffer::{NullBuffer, OffsetBuffer};
        let field =
            |name: &str, kind: DataType| Arc::new(arrow_schema::Field::new(name, kind, true));
        let structs = StructArray::from(vec![
            (
                field("b", DataType::Int64),
                Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef,
            ),
            (
                field("a", DataType::Utf8),
                Arc::new(StringArray::from(vec!["x", "y", "z"])) as ArrayRef,
            ),
        ]);
        let of_structs = ListArray::new(
            field("item", structs.data_type().clone()),
            OffsetBuffer::from_lengths([2, 0, 0, 1]),
            Arc::new(structs),
            Some(NullBuffer::from(vec![true, true, false, true])),
        );
        let inner = ListArray::new(
            field("item", DataType::Int64),
            OffsetBuffer::from_lengths([2, 0, 2]),
            Arc::new(Int64Array::from(vec![1, 2, 3, 4])),
            None,
        );
        let of_lists = ListArray::new(
            field("item", inner.data_type().clone()),
            OffsetBuffer::from_lengths([2, 1, 0, 0]),
            Arc::new(inner),
            None,
        );
        let batch = RecordBatch::try_from_iter([
            ("s", Arc::new(of_structs) as ArrayRef),
            ("l", Arc::new(of_lists) as ArrayRef),
        ])
        .unwrap();
        let rows = |batch: &RecordBatch| {
            let mut members = Members::new();
            (0..batch.num_rows())
                .map(|row| {
                    members_row::<()>(batch, row, 0, 0, &mut members).unwrap();
                    let text = |key| members.get(key).unwrap().value.to_owned();
                    (text("s"), text("l"))
                })
                .collect::<Vec<_>>()
        };
        let written = |s: &str, l: &str| (s.to_owned(), l.to_owned());
        let whole = [
            written(r#"[{"a":"x","b":1},{"a":"y","b":2}]"#, "[[1,2],[]]"),
            written("[]", "[[3,4]]"),
            written("null", "[]"),
            written(r#"[{"a":"z","b":3}]"#, "[]"),
        ];
        assert_eq!(rows(&batch), whole);
        assert_eq!(rows(&batch.slice(1, 3)), whole[1..]);
    }

    /// Of several integers no double holds in one column, the first in canonical order is
    /// the one named, as the tree reader's canonical writer stops there (not the first
    /// in schema order).
    #[test]
    fn a_columns_first_unsafe_integer_is_the_first_canonical_text_writes() {
        use arrow_array::{Int64Array, StructArray};
        let field = |name: &str| Arc::new(arrow_schema::Field::new(name, DataType::Int64, false));
        let column = StructArray::from(vec![
            (
                field("x"),
                Arc::new(Int64Array::from(vec![9_007_199_254_740_993])) as ArrayRef,
            ),
            (
                field("b"),
                Arc::new(Int64Array::from(vec![9_007_199_254_740_995])) as ArrayRef,
            ),
        ]);
        let batch = RecordBatch::try_from_iter([("s", Arc::new(column) as ArrayRef)]).unwrap();
        let mut members = Members::new();
        members_row::<()>(&batch, 0, 0, 0, &mut members).unwrap();
        let (path, digits) = members.get("s").unwrap().unsafe_integer.unwrap();
        assert_eq!(
            (path.to_string(), digits.as_str()),
            ("b".into(), "9007199254740995")
        );
        let tree = tree_row::<()>(&batch, 0, 0).unwrap();
        let written = crate::canonical_json::Json::of(&tree.object["s"]).unwrap_err();
        assert!(
            written.to_string().contains("9007199254740995"),
            "{written}"
        );
    }

    #[test]
    fn the_pages_of_lighteval_files_decode_from_what_their_footers_say() {
        // pyarrow wrote these (lighteval's details): their headers, counted as babel reads
        // them, agree with the footer's count of every chunk.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lighteval-0.13.0");
        let mut files = vec![root];
        let mut chunks = 0;
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            if path.extension().is_none_or(|e| e != "parquet") {
                continue;
            }
            let file = File::open(&path).unwrap();
            let metadata = load_metadata(&file).unwrap().unwrap();
            for group in metadata.metadata().row_groups() {
                for (index, chunk) in group.columns().iter().enumerate() {
                    let paged = chunk_pages(&file, group, index).unwrap().bytes;
                    assert_honest(paged, chunk, &format!("{path:?}"));
                    chunks += 1;
                }
            }
        }
        assert!(chunks > 20, "{chunks} column chunks");
    }

    /// A group of `rows` rows (as its footer says) of one column of `schema`, whose chunk
    /// starts at `data_page_offset` (with a dictionary page at `dictionary`) and takes
    /// `stored` bytes; the footer says it decodes to 100.
    fn one_column_group(
        schema: &str,
        rows: i64,
        data_page_offset: i64,
        dictionary: Option<i64>,
        stored: i64,
    ) -> RowGroupMetaData {
        let schema = parquet::schema::parser::parse_message_type(schema).unwrap();
        let schema = Arc::new(SchemaDescriptor::new(Arc::new(schema)));
        let chunk = ColumnChunkMetaData::builder(schema.column(0))
            .set_data_page_offset(data_page_offset)
            .set_dictionary_page_offset(dictionary)
            .set_total_compressed_size(stored)
            .set_total_uncompressed_size(100)
            .set_num_values(1)
            .build()
            .unwrap();
        RowGroupMetaData::builder(schema)
            .set_num_rows(rows)
            .set_total_byte_size(100)
            .set_column_metadata(vec![chunk])
            .build()
            .unwrap()
    }

    const TEXT: &str = "message m { optional binary input (STRING); }";

    fn assert_refused(file: &File, group: &RowGroupMetaData) {
        let error = batch_rows_of(file, group, &[0], BATCH_BYTES, BATCH_ROWS).unwrap_err();
        let limit = format!("more than the {MAX_ROW_GROUP_BYTES} babel decodes");
        assert!(error.contains(&limit), "{error}");
    }

    #[test]
    fn a_row_group_whose_pages_decode_to_more_than_babel_holds_is_refused() {
        // One page whose header says it decodes to 2 GiB (what the decompressor would
        // allow), in a chunk the footer says is 100 bytes uncompressed.
        use std::io::Write;
        let mut file = tempfile::tempfile().unwrap();
        let header = pages::tests::page_header(i32::MAX as u32, 16);
        file.write_all(&header).unwrap();
        file.write_all(&[0; 16]).unwrap();
        let stored = header.len() as i64 + 16;
        assert_refused(&file, &one_column_group(TEXT, 1, 0, None, stored));

        // The same page behind a decoy: a page at byte 0 that decodes to nothing and
        // stores the rest of the chunk. The reader starts at the dictionary page offset
        // whatever the data page offset (found by the eighth session's review).
        let mut file = tempfile::tempfile().unwrap();
        let decoy = pages::tests::page_header(0, stored as u32);
        file.write_all(&decoy).unwrap();
        file.write_all(&header).unwrap();
        file.write_all(&[0; 16]).unwrap();
        let dictionary = Some(decoy.len() as i64);
        assert_refused(&file, &one_column_group(TEXT, 1, 0, dictionary, stored));
    }

    #[test]
    fn a_list_whose_values_could_fill_one_row_past_what_babel_holds_is_refused() {
        // A few bytes of page declare 2^31 - 1 values of a list column: they may all be in
        // the group's one row, so the group is refused, whatever the batch size.
        use std::io::Write;
        let mut file = tempfile::tempfile().unwrap();
        let header = pages::tests::page(0, 8, 8, i32::MAX.into(), 5);
        file.write_all(&header).unwrap();
        file.write_all(&[0; 8]).unwrap();
        let list = "message m { optional group l (LIST) { repeated group list { optional int64 element; } } }";
        let stored = header.len() as i64 + 8;
        assert_refused(&file, &one_column_group(list, 1, 0, None, stored));
        // The same page in a column that is not repeated: one value a row, read a few
        // rows at a time.
        let flat = "message m { optional int64 element; }";
        let rows = batch_rows_of(
            &file,
            &one_column_group(flat, 1, 0, None, stored),
            &[0],
            BATCH_BYTES,
            BATCH_ROWS,
        );
        assert_eq!(rows, Ok(1));
    }

    #[test]
    fn a_list_counts_an_offset_and_a_validity_bit_for_each_list_around_its_values() {
        // Each list level adds an offset and a validity bit to every value it holds: a
        // list 60 deep of 5M values, 40 MB as levels and values, decoded to 1.18 GB (the
        // eighth session's second review). 30M values three lists deep: 600 MB as levels
        // and values, 1.4 GB with the lists.
        use std::io::Write;
        let mut file = tempfile::tempfile().unwrap();
        let header = pages::tests::page(0, 8, 8, 30_000_000, 5);
        file.write_all(&header).unwrap();
        file.write_all(&[0; 8]).unwrap();
        let level = |inner: &str| {
            format!("optional group l (LIST) {{ repeated group list {{ {inner} }} }}")
        };
        let deep = format!(
            "message m {{ {} }}",
            level(&level(&level("optional int32 element;")))
        );
        let stored = header.len() as i64 + 8;
        assert_refused(&file, &one_column_group(&deep, 1, 0, None, stored));
    }

    #[test]
    fn a_row_count_the_pages_cannot_hold_does_not_make_batches_larger() {
        // 300 values of 2 MiB on one page, in a group whose footer says it has 2^40 rows:
        // averaged over those, 256 rows went to a batch. The pages declare 300 values, so
        // the group has at most 300 rows (found by the eighth session's second review).
        use std::io::Write;
        let mut file = tempfile::tempfile().unwrap();
        let header = pages::tests::page(0, 300 << 21, 16, 300, 0);
        file.write_all(&header).unwrap();
        file.write_all(&[0; 16]).unwrap();
        let stored = header.len() as i64 + 16;
        let group = one_column_group(TEXT, 1 << 40, 0, None, stored);
        let rows = batch_rows_of(&file, &group, &[0], BATCH_BYTES, BATCH_ROWS).unwrap();
        assert!(rows <= 16, "{rows} rows of 2 MiB to a batch");
    }

    /// A temporary Parquet file of one batch, as arrow-rs writes it by default.
    pub(crate) fn parquet_file(batch: &RecordBatch) -> File {
        let file = tempfile::tempfile().unwrap();
        let mut writer =
            parquet::arrow::ArrowWriter::try_new(file.try_clone().unwrap(), batch.schema(), None)
                .unwrap();
        writer.write(batch).unwrap();
        writer.close().unwrap();
        file
    }

    #[test]
    fn a_non_finite_float_is_read_as_null_at_its_field_and_element() {
        // The walk's place is made a path only where one is needed: a NaN inside a list
        // inside a struct is named with both, and its neighbours are left as they are.
        use arrow_array::builder::{Float64Builder, ListBuilder};
        use arrow_array::{Int64Array, StructArray};
        use arrow_schema::Field;
        let mut lists = ListBuilder::new(Float64Builder::new());
        for values in [[0.5, 1.0], [2.0, f64::NAN]] {
            lists.values().append_slice(&values);
            lists.append(true);
        }
        let lists: ArrayRef = Arc::new(lists.finish());
        let ids: ArrayRef = Arc::new(Int64Array::from(vec![1, 2]));
        let metric = StructArray::from(vec![
            (Arc::new(Field::new("id", DataType::Int64, false)), ids),
            (
                Arc::new(Field::new("logprobs", lists.data_type().clone(), true)),
                lists,
            ),
        ]);
        let batch = RecordBatch::try_from_iter([("metric", Arc::new(metric) as ArrayRef)]).unwrap();
        let mut rows = Vec::new();
        read_rows(parquet_file(&batch), |position, row| {
            rows.push((position, row.read_tree().unwrap()));
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert!(rows[0].1.replaced.is_empty());
        let (position, row) = &rows[1];
        assert_eq!(*position, 1);
        assert_eq!(row.replaced.len(), 1);
        assert_eq!(row.replaced[0].path.to_string(), "metric.logprobs[1]");
        assert_eq!(row.replaced[0].token, "NaN");
        assert_eq!(
            Value::Object(row.object.clone()),
            serde_json::json!({"metric": {"id": 2, "logprobs": [2.0, null]}})
        );
    }

    #[test]
    fn an_honest_list_column_with_one_long_value_is_read() {
        // 40,000 rows of a list of strings, dictionary-encoded as pyarrow and arrow-rs
        // write them, one of the values 32 KB: counting that value for each value of the
        // column refused the file (the eighth session's second review).
        use arrow_array::builder::{ListBuilder, StringBuilder};
        let mut lists = ListBuilder::new(StringBuilder::new());
        for row in 0..40_000 {
            let value = if row == 7 {
                "x".repeat(32 << 10)
            } else {
                format!("a{}", row % 5)
            };
            lists.values().append_value(value);
            lists.values().append_value("b");
            lists.append(true);
        }
        let batch =
            RecordBatch::try_from_iter([("l", Arc::new(lists.finish()) as ArrayRef)]).unwrap();
        let mut rows = 0;
        read_rows(parquet_file(&batch), |_, _| {
            rows += 1;
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(rows, 40_000);
    }

    /// The rows `read_rows` hands out, in their groups.
    fn groups_of(file: File) -> Vec<Vec<RowAt>> {
        let mut groups: Vec<Vec<RowAt>> = vec![Vec::new()];
        read_rows(file, |_, row| {
            let ends = row.ends_group();
            groups.last_mut().unwrap().push(row);
            if ends {
                groups.push(Vec::new());
            }
            Ok::<(), ()>(())
        })
        .unwrap();
        assert!(
            groups.pop().unwrap().is_empty(),
            "the last row ends a group"
        );
        groups
    }

    /// The copy of its group's values a row holds.
    fn copy_of(row: &RowAt) -> &RecordBatch {
        match &row.held {
            Held::Copy { rows, .. } => rows,
            Held::Read(_) => panic!("row {} was read on the reading thread", row.position),
        }
    }

    #[test]
    fn rows_go_out_in_groups_cut_by_their_json_not_their_arrow() {
        // 200 rows, each a list of 20,000 nulls: almost nothing in Parquet or in Arrow (a
        // null element holds no value), 180,003 bytes of JSON each ("l", the brackets, a
        // separator and a null for each element). Weighed by their Arrow, a decoded batch
        // of them would go to a worker at once; measured, a group ends once its JSON
        // passes GROUP_BYTES.
        use arrow_array::builder::{ListBuilder, NullBuilder};
        let mut lists = ListBuilder::new(NullBuilder::new());
        for _ in 0..200 {
            lists.values().append_nulls(20_000);
            lists.append(true);
        }
        let batch =
            RecordBatch::try_from_iter([("l", Arc::new(lists.finish()) as ArrayRef)]).unwrap();
        let mut groups = groups_of(parquet_file(&batch));
        assert_eq!(groups.iter().map(Vec::len).sum::<usize>(), 200);
        // 5 rows are 900,015 bytes, 6 pass a mebibyte.
        assert_eq!(groups.iter().map(Vec::len).max(), Some(6));
        for group in &groups {
            assert!(group.iter().all(|row| row.bytes() == 180_003));
            let json: usize = group.iter().map(RowAt::bytes).sum();
            assert!(json - 180_003 < GROUP_BYTES, "a group ends once it passes");
        }
        let row = groups.pop().unwrap().pop().unwrap().read_tree().unwrap();
        assert!(row.replaced.is_empty());
        assert_eq!(row.object["l"], Value::Array(vec![Value::Null; 20_000]));
    }

    #[test]
    fn a_group_holds_a_compact_copy_of_its_own_rows_and_weighs_it() {
        // 200 distinct strings of 100,000 bytes, 20 MB: a row that held a slice of its
        // decoded batch would hold all the strings of the batch.
        use arrow_array::StringArray;
        let texts: Vec<String> = (0..200).map(|i| format!("{i:05}").repeat(20_000)).collect();
        let strings = StringArray::from(texts.iter().map(String::as_str).collect::<Vec<_>>());
        let batch = RecordBatch::try_from_iter([("s", Arc::new(strings) as ArrayRef)]).unwrap();
        let groups = groups_of(parquet_file(&batch));
        // 10 rows are 1,000,010 bytes of JSON, 11 pass a mebibyte.
        assert_eq!(groups.iter().map(Vec::len).max(), Some(11));
        let mut position = 0;
        for group in groups {
            let json: usize = group.iter().map(RowAt::bytes).sum();
            let copy = copy_of(&group[0]).clone();
            assert_eq!(copy.num_rows(), group.len());
            assert!(
                copy.get_array_memory_size() < 2 * json,
                "{} bytes held for {json} of JSON",
                copy.get_array_memory_size()
            );
            let weight: usize = group.iter().map(RowAt::weight).sum();
            assert!(weight >= json + copy.get_array_memory_size());
            for row in group {
                assert!(std::ptr::eq(
                    copy_of(&row).column(0).to_data().buffers()[1].as_ptr(),
                    copy.column(0).to_data().buffers()[1].as_ptr()
                ));
                let row = row.read_tree().unwrap();
                assert_eq!(row.object["s"], Value::String(texts[position].clone()));
                position += 1;
            }
        }
        assert_eq!(position, 200);
    }

    #[test]
    fn rows_a_copy_would_outweigh_or_arrow_would_not_copy_are_read_on_the_reading_thread() {
        // A list of 1,000 null structs of 200 fields: 9,003 bytes of JSON, 1.6 MB of
        // Arrow (every child keeps a slot for every struct).
        use arrow_array::{Int64Array, ListArray, StructArray};
        use arrow_buffer::{NullBuffer, OffsetBuffer};
        use arrow_schema::Field;
        let fields: Vec<FieldRef> = (0..200)
            .map(|i| Arc::new(Field::new(format!("f{i}"), DataType::Int64, true)))
            .collect();
        let children: Vec<ArrayRef> = (0..200)
            .map(|_| Arc::new(Int64Array::from(vec![None::<i64>; 1_000])) as ArrayRef)
            .collect();
        let structs = StructArray::new(fields.into(), children, Some(NullBuffer::new_null(1_000)));
        let item = Arc::new(Field::new("item", structs.data_type().clone(), true));
        let list = ListArray::new(
            item,
            OffsetBuffer::from_lengths([1_000]),
            Arc::new(structs),
            None,
        );
        let batch = RecordBatch::try_from_iter([("l", Arc::new(list) as ArrayRef)]).unwrap();
        let mut groups = groups_of(parquet_file(&batch));
        let row = groups.pop().unwrap().pop().unwrap();
        assert!(matches!(row.held, Held::Read(_)));
        assert_eq!((row.bytes(), row.weight()), (9_003, 9_003));
        assert_eq!(
            row.read_tree().unwrap().object["l"],
            Value::Array(vec![Value::Null; 1_000])
        );

        // A list whose required elements the file stores as nulls: the Parquet reader
        // decodes it, Arrow's take refuses to copy it.
        use parquet::basic::{LogicalType, Repetition, Type as Physical};
        use parquet::data_type::Int32Type as Int32;
        use parquet::file::writer::SerializedFileWriter;
        use parquet::schema::types::Type;
        let element = Type::primitive_type_builder("element", Physical::INT32)
            .with_repetition(Repetition::REQUIRED)
            .with_logical_type(Some(LogicalType::Unknown))
            .build()
            .unwrap();
        let list = Type::group_type_builder("list")
            .with_repetition(Repetition::REPEATED)
            .with_fields(vec![Arc::new(element)])
            .build()
            .unwrap();
        let column = Type::group_type_builder("l")
            .with_repetition(Repetition::REQUIRED)
            .with_logical_type(Some(LogicalType::List))
            .with_fields(vec![Arc::new(list)])
            .build()
            .unwrap();
        let schema = Type::group_type_builder("m")
            .with_fields(vec![Arc::new(column)])
            .build()
            .unwrap();
        let file = tempfile::tempfile().unwrap();
        let mut writer = SerializedFileWriter::new(
            file.try_clone().unwrap(),
            Arc::new(schema),
            Default::default(),
        )
        .unwrap();
        let mut group = writer.next_row_group().unwrap();
        let mut column = group.next_column().unwrap().unwrap();
        column
            .typed::<Int32>()
            .write_batch(&[0, 0, 0], Some(&[1, 1, 1]), Some(&[0, 1, 1]))
            .unwrap();
        column.close().unwrap();
        group.close().unwrap();
        writer.close().unwrap();
        let mut groups = groups_of(file);
        let row = groups.pop().unwrap().pop().unwrap();
        assert!(matches!(row.held, Held::Read(_)));
        assert_eq!(
            row.read_tree().unwrap().object["l"],
            Value::Array(vec![Value::Null; 3])
        );
    }

    #[test]
    fn a_group_read_on_the_reading_thread_reads_its_own_rows_in_order() {
        // 100 rows: 70 empty lists, then 30 lists of 400 null structs of 50 fields (3,615
        // bytes of JSON, 160 KB of Arrow each). The group holding the heavy rows starts
        // inside its decoded batch and is read here, row by row, from where it starts.
        use arrow_array::{Int64Array, ListArray, StructArray};
        use arrow_buffer::{NullBuffer, OffsetBuffer};
        use arrow_schema::Field;
        let lengths: Vec<usize> = (0..100).map(|i| if i < 70 { 0 } else { 400 }).collect();
        let elements: usize = lengths.iter().sum();
        let fields: Vec<FieldRef> = (0..50)
            .map(|i| Arc::new(Field::new(format!("f{i}"), DataType::Int64, true)))
            .collect();
        let children: Vec<ArrayRef> = (0..50)
            .map(|_| Arc::new(Int64Array::from(vec![None::<i64>; elements])) as ArrayRef)
            .collect();
        let structs = StructArray::new(
            fields.into(),
            children,
            Some(NullBuffer::new_null(elements)),
        );
        let item = Arc::new(Field::new("item", structs.data_type().clone(), true));
        let lists = ListArray::new(
            item,
            OffsetBuffer::from_lengths(lengths.iter().copied()),
            Arc::new(structs),
            None,
        );
        let batch = RecordBatch::try_from_iter([
            (
                "id",
                Arc::new(Int64Array::from_iter_values(0..100)) as ArrayRef,
            ),
            ("l", Arc::new(lists) as ArrayRef),
        ])
        .unwrap();
        let groups = groups_of(parquet_file(&batch));
        let mut position = 0;
        let mut read_here = 0;
        for group in groups {
            for row in group {
                read_here += usize::from(matches!(row.held, Held::Read(_)));
                let object = row.read_tree().unwrap().object;
                assert_eq!(object["id"], Value::from(position));
                assert_eq!(
                    object["l"],
                    Value::Array(vec![Value::Null; lengths[position]])
                );
                position += 1;
            }
        }
        assert_eq!(position, 100);
        assert!(read_here >= 30, "the heavy rows are read here");
    }

    #[test]
    fn a_row_babel_cannot_hold_stops_the_file_after_the_rows_before_it() {
        // A date is no JSON value; rows 0 to 4 hold none (a null is read as null), row 5
        // does.
        use arrow_array::{Date32Array, Int64Array};
        let dates = Date32Array::from(vec![None, None, None, None, None, Some(1), None]);
        let ids = Int64Array::from_iter_values(0..7);
        let batch = RecordBatch::try_from_iter([
            ("id", Arc::new(ids) as ArrayRef),
            ("d", Arc::new(dates) as ArrayRef),
        ])
        .unwrap();
        let mut handed = Vec::new();
        let error = read_rows(parquet_file(&batch), |position, row| {
            handed.push((position, row.read_tree().unwrap().object["id"].clone()));
            Ok::<(), Stop>(())
        })
        .unwrap_err();
        assert_eq!(
            handed,
            (0..5).map(|i| (i, Value::from(i))).collect::<Vec<_>>()
        );
        assert_eq!(
            error.to_string(),
            "column d has Arrow type Date32, which babel does not read"
        );
    }
}
