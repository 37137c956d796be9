//! Writing a records file: records are encoded a batch at a time, wherever they are parsed
//! ([`EncodedBatch`]: the records of a batch with their canonical JSON text, copied), then
//! appended in order to one [`RecordsWriter`] (on the thread whose turn it is, or on a
//! thread of its own: [`ThreadedWriter`]), which cuts Arrow batches and writes them into
//! row groups of bounded size. The Parquet crate encodes the label, integer and boolean columns and writes the
//! file; the plain text columns (the question and the JSON columns, most of the bytes) go
//! from the batches' text straight into pages ([`super::text_chunk`]), as the crate would
//! have written them. The rows of an Arrow batch are handed to both at once, and the row
//! groups are cut as the crate's `ArrowWriter` cuts them, so the file is the one the crate
//! alone writes (`tests::the_file_is_the_one_the_parquet_crate_writes_alone`).

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::mpsc::{self, Sender};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{Scope, ScopedJoinHandle};

use arrow_array::ArrayRef;
use arrow_array::builder::{BooleanBuilder, StringBuilder, UInt64Builder};
use arrow_schema::FieldRef;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{
    ArrowColumnWriter, ArrowRowGroupWriterFactory, ArrowWriterOptions, compute_leaves,
};
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnDescPtr, ColumnPath};

use super::text_chunk::{Compressor, PageLimits, TextChunk};
use super::{COLUMNS, Column, Kind, SCHEMA_KEY, SCHEMA_VALUE, file_schema};
use crate::canonical_json;
use crate::record::{Identity, IdentityScope, Locator, NewRecord};

/// Rows per Arrow batch handed to the encoder, unless [`BATCH_TEXT_BYTES`] comes first.
const BATCH_ROWS: usize = 1024;
/// An Arrow batch is also handed over once its rows hold this much text: cut by rows only,
/// a batch of long-context records (a prompt of half a mebibyte, its document again)
/// held 1,024 of them, 1.6 GB, before the encoder took any.
const BATCH_TEXT_BYTES: usize = 8 << 20;
/// A row group is closed once its encoded size passes this (so memory stays bounded
/// however long the import), or at this many rows.
const ROW_GROUP_BYTES: usize = 8 << 20;
const ROW_GROUP_ROWS: usize = 1 << 20;
/// A row group is also closed once the text handed to it passes this: the encoder counts
/// compressed bytes, and repetitive text (a few-shot or needle-in-a-haystack prompt)
/// compresses so well that one group held 430 MB of it, which a reader then holds at once
/// when long records sit among short ones (a batch is sized by its group's average row).
/// The records reader's batch bound, so that no batch holds much more than it.
const ROW_GROUP_TEXT_BYTES: usize = crate::inputs::parquet::BATCH_BYTES as usize;
/// Every column closes a page at least this often, so each column's compressor exists
/// from the first few thousand rows on and memory is flat from there (a page of a label
/// column is otherwise 20,000 rows, and its compressor appears only then).
const PAGE_ROWS: usize = 4096;
/// Batches waiting for the writer thread. It takes records in bursts (every [`BATCH_ROWS`]
/// records it encodes and compresses them), and a batch of few-shot prompts holds about 200
/// records: with two places the reading thread waited on every burst and both cores were
/// busy 1.57 of the time; with eight, 1.82 (BENCHMARKS.md, "Writer queue").
const QUEUED_BATCHES: usize = 8;
/// The most text the batches waiting for the writer thread hold, beyond the first batch
/// (which always may wait): a batch of one line may alone be 64 MiB.
const QUEUED_BYTES: usize = 16 << 20;
/// The zstd level of every page: fast to write, small enough (see BENCHMARKS.md).
const ZSTD_LEVEL: i32 = 1;

/// The text fields of a record in an [`EncodedBatch`], in the order it keeps them: the text columns,
/// the JSON columns, then the source member and pointer.
const TEXT_FIELDS: [Column; 20] = [
    Column::RunId,
    Column::Benchmark,
    Column::Script,
    Column::Language,
    Column::QuestionId,
    Column::VariantId,
    Column::Filter,
    Column::Model,
    Column::RephrasingModel,
    Column::SourcePath,
    Column::Input,
    Column::Target,
    Column::Prediction,
    Column::Scores,
    Column::Metrics,
    Column::Response,
    Column::Warnings,
    Column::Extra,
    Column::SourceMember,
    Column::SourcePointer,
];

/// Whether babel writes the column's chunks itself ([`super::text_chunk`]): the plain text
/// columns, required, with neither dictionary nor statistics.
fn own_chunks(kind: Kind) -> bool {
    matches!(kind, Kind::Text | Kind::Json)
}

fn slot(column: Column) -> usize {
    TEXT_FIELDS
        .iter()
        .position(|c| *c == column)
        .expect("a text column")
}

/// Records ready for the columns, many in one buffer: each record's text fields (nested
/// values as canonical JSON) one after the other, and its scalars. Records are encoded a
/// batch at a time on the thread that parsed them and often written on another; one
/// buffer per batch keeps that hand-over cheap.
#[derive(Debug, Clone, Default)]
pub struct EncodedBatch {
    text: Vec<u8>,
    rows: Vec<EncodedRow>,
}

/// One record of an [`EncodedBatch`].
#[derive(Debug, Clone)]
struct EncodedRow {
    /// Where each of [`TEXT_FIELDS`] ends in the batch's text.
    ends: [usize; 20],
    /// Bit `i` set: text field `i` is null.
    nulls: u32,
    repeat_id: u64,
    identity_scope: IdentityScope,
    correct: Option<bool>,
    source_line: Option<u64>,
}

impl EncodedBatch {
    pub fn new() -> Self {
        Self::default()
    }

    /// A batch with room for `rows` records holding about `text` bytes (sized once, as
    /// buffers that grow by doubling around a mebibyte fragment the heap).
    pub fn with_capacity(text: usize, rows: usize) -> Self {
        Self {
            text: Vec::with_capacity(text),
            rows: Vec::with_capacity(rows),
        }
    }

    /// How many records the batch holds.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Keeps the first `rows` records (a line whose records are refused is taken back).
    pub fn truncate(&mut self, rows: usize) {
        if rows < self.rows.len() {
            let end = if rows == 0 {
                0
            } else {
                self.rows[rows - 1].ends[TEXT_FIELDS.len() - 1]
            };
            self.rows.truncate(rows);
            self.text.truncate(end);
        }
    }

    /// Appends a record: its nested values are canonical already, so this copies.
    pub fn push(&mut self, record: &NewRecord<'_>) {
        let mut row = EncodedRow {
            ends: [0; 20],
            nulls: 0,
            repeat_id: record.repeat_id,
            identity_scope: record.identity_scope,
            correct: record.correct,
            source_line: match record.locator {
                Locator::Line(line) => Some(line),
                _ => None,
            },
        };
        let (member, pointer) = match &record.locator {
            Locator::Line(_) => (None, None),
            Locator::Member(member) => (Some(member.as_str()), None),
            Locator::Pointer(pointer) => (None, Some(pointer.as_str())),
        };
        let texts: [Option<&str>; 20] = [
            Some(&record.run_id),
            Some(&record.benchmark),
            record.script.as_deref(),
            record.language.as_deref(),
            Some(&record.question_id),
            Some(&record.variant_id),
            Some(&record.filter),
            Some(&record.model),
            record.rephrasing_model.as_deref(),
            Some(&record.source_path),
            Some(record.input.as_str()),
            Some(record.target.as_str()),
            Some(record.prediction.as_str()),
            Some(record.scores.as_str()),
            Some(record.metrics.as_str()),
            Some(record.response.as_str()),
            None,
            Some(record.extra.as_str()),
            member,
            pointer,
        ];
        for (index, text) in texts.into_iter().enumerate() {
            if index == slot(Column::Warnings) {
                self.text.push(b'[');
                for (index, warning) in record.warnings.iter().enumerate() {
                    if index > 0 {
                        self.text.push(b',');
                    }
                    canonical_json::write_string(warning, &mut self.text);
                }
                self.text.push(b']');
            } else {
                match text {
                    Some(text) => self.text.extend_from_slice(text.as_bytes()),
                    None => row.nulls |= 1 << index,
                }
            }
            row.ends[index] = self.text.len();
        }
        self.rows.push(row);
    }

    /// Text field `index` of record `row` (null for a null one).
    fn field(&self, row: usize, index: usize) -> Option<&str> {
        let record = &self.rows[row];
        if record.nulls & (1 << index) != 0 {
            return None;
        }
        let start = match (index, row) {
            (0, 0) => 0,
            (0, _) => self.rows[row - 1].ends[TEXT_FIELDS.len() - 1],
            _ => record.ends[index - 1],
        };
        // SAFETY: the buffer holds the bytes of Rust strings and canonical JSON copied from
        // them (ASCII punctuation added), split only at the ends of whole fields.
        #[allow(unsafe_code)]
        Some(unsafe { std::str::from_utf8_unchecked(&self.text[start..record.ends[index]]) })
    }

    /// Text field `index` of record `row`, one that is never null.
    fn required(&self, row: usize, index: usize) -> &[u8] {
        self.field(row, index)
            .expect("the question and the JSON fields are never null")
            .as_bytes()
    }

    /// How many bytes of text record `row` holds.
    fn row_bytes(&self, row: usize) -> usize {
        let start = match row {
            0 => 0,
            _ => self.rows[row - 1].ends[TEXT_FIELDS.len() - 1],
        };
        self.rows[row].ends[TEXT_FIELDS.len() - 1] - start
    }

    fn text(&self, row: usize, column: Column) -> Option<&str> {
        self.field(row, slot(column))
    }

    /// The identity fields of record `row`.
    pub fn identity(&self, row: usize) -> Identity<'_> {
        Identity {
            benchmark: self.text(row, Column::Benchmark).unwrap_or_default(),
            language: self.text(row, Column::Language),
            script: self.text(row, Column::Script),
            question_id: self.text(row, Column::QuestionId).unwrap_or_default(),
            variant_id: self.text(row, Column::VariantId).unwrap_or_default(),
            filter: self.text(row, Column::Filter).unwrap_or_default(),
            repeat_id: self.rows[row].repeat_id,
        }
    }
}

/// The builders of one Arrow batch's columns the Parquet crate encodes (not the text
/// columns: their rows are taken from the encoded batches).
struct Builders {
    schema_version: UInt64Builder,
    /// One builder per [`TEXT_FIELDS`] entry (those of the text columns stay empty).
    texts: [StringBuilder; 20],
    repeat_id: UInt64Builder,
    identity_scope: StringBuilder,
    correct: BooleanBuilder,
    source_line: UInt64Builder,
    rows: usize,
    /// How many bytes of text the rows took so far.
    text_bytes: usize,
    /// How many bytes each text builder took in the batch before (0 before the first).
    took: [usize; 20],
}

impl Builders {
    fn new() -> Self {
        Self {
            schema_version: UInt64Builder::with_capacity(BATCH_ROWS),
            texts: std::array::from_fn(|index| match own_chunks(TEXT_FIELDS[index].kind()) {
                true => StringBuilder::new(),
                false => StringBuilder::with_capacity(BATCH_ROWS, BATCH_ROWS * 32),
            }),
            repeat_id: UInt64Builder::with_capacity(BATCH_ROWS),
            identity_scope: StringBuilder::with_capacity(BATCH_ROWS, BATCH_ROWS * 8),
            correct: BooleanBuilder::with_capacity(BATCH_ROWS),
            source_line: UInt64Builder::with_capacity(BATCH_ROWS),
            rows: 0,
            text_bytes: 0,
            took: [0; 20],
        }
    }

    fn append(&mut self, batch: &EncodedBatch, row: usize) {
        if self.rows == 0 {
            // A text builder left without room grows a mebibyte column by doubling,
            // copying it again each time: each starts with room for as many bytes as it
            // took in the batch before and an eighth (here, once that batch's columns are
            // written and gone, not beside them).
            for (text, took) in self.texts.iter_mut().zip(self.took) {
                if took > 0 {
                    *text = StringBuilder::with_capacity(BATCH_ROWS, took + took / 8);
                }
            }
        }
        self.schema_version
            .append_value(crate::record::SCHEMA_VERSION);
        for (index, builder) in self.texts.iter_mut().enumerate() {
            if !own_chunks(TEXT_FIELDS[index].kind()) {
                builder.append_option(batch.field(row, index));
            }
        }
        let record = &batch.rows[row];
        self.repeat_id.append_value(record.repeat_id);
        self.identity_scope
            .append_value(record.identity_scope.as_str());
        self.correct.append_option(record.correct);
        self.source_line.append_option(record.source_line);
        self.rows += 1;
        self.text_bytes += batch.row_bytes(row);
    }

    /// Whether the batch is full: [`BATCH_ROWS`] rows or [`BATCH_TEXT_BYTES`] of text.
    fn full(&self) -> bool {
        self.rows == BATCH_ROWS || self.text_bytes >= BATCH_TEXT_BYTES
    }

    /// The crate's columns built so far, in file order; the builders start over empty.
    fn finish(&mut self) -> Vec<ArrayRef> {
        self.rows = 0;
        self.text_bytes = 0;
        self.took = self.texts.each_ref().map(|text| text.values_slice().len());
        COLUMNS
            .iter()
            .filter(|(_, _, kind)| !own_chunks(*kind))
            .map(|(column, _, _)| -> ArrayRef {
                match column {
                    Column::SchemaVersion => Arc::new(self.schema_version.finish()),
                    Column::RepeatId => Arc::new(self.repeat_id.finish()),
                    Column::IdentityScope => Arc::new(self.identity_scope.finish()),
                    Column::Correct => Arc::new(self.correct.finish()),
                    Column::SourceLine => Arc::new(self.source_line.finish()),
                    text => Arc::new(self.texts[slot(*text)].finish()),
                }
            })
            .collect()
    }
}

/// The encoder settings of every records file. Label columns are dictionary-encoded with
/// statistics (readers can skip row groups by benchmark or language); the JSON and
/// question text columns are plain, with no statistics (min/max of prompts help no one).
fn properties() -> WriterProperties {
    let level = ZstdLevel::try_new(ZSTD_LEVEL).expect("a valid zstd level");
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::ZSTD(level))
        .set_max_row_group_bytes(Some(ROW_GROUP_BYTES))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_data_page_row_count_limit(PAGE_ROWS)
        .set_statistics_truncate_length(Some(64))
        .set_column_index_truncate_length(Some(64))
        .set_key_value_metadata(Some(vec![KeyValue::new(
            SCHEMA_KEY.to_owned(),
            SCHEMA_VALUE.to_owned(),
        )]));
    for (_, name, kind) in COLUMNS {
        if matches!(kind, Kind::Json | Kind::Text) {
            let path = ColumnPath::from(name);
            builder = builder
                .set_column_dictionary_enabled(path.clone(), false)
                .set_column_statistics_enabled(path, EnabledStatistics::None);
        }
    }
    builder.build()
}

/// Turns a Parquet failure into the I/O error it wraps, or an I/O error that says it.
pub(super) fn to_io(error: ParquetError) -> io::Error {
    match error {
        ParquetError::External(inner) => match inner.downcast::<io::Error>() {
            Ok(io) => *io,
            Err(other) => io::Error::other(other),
        },
        other => io::Error::other(other),
    }
}

/// Appends encoded records to one records file.
pub struct RecordsWriter<W: Write + Send> {
    file: SerializedFileWriter<W>,
    factory: ArrowRowGroupWriterFactory,
    /// The columns the crate encodes, in file order: their fields.
    fields: Vec<FieldRef>,
    /// The text columns, in file order: their slot in an encoded batch, their descriptor,
    /// and how their pages are cut.
    text_columns: Vec<(usize, ColumnDescPtr, PageLimits)>,
    max_group_rows: Option<usize>,
    max_group_bytes: Option<usize>,
    zstd: Compressor,
    /// The open row group.
    group: Option<Group>,
    builders: Builders,
    /// The encoded batches holding the text of the open Arrow batch's rows, and those rows
    /// (batch, row). They are held here beside what the caller bounds (the writer thread's
    /// queue, [`QUEUED_BYTES`], or an import's batches in flight): at most
    /// [`BATCH_TEXT_BYTES`] of rows and the rest of the batches they are in, about what the
    /// Arrow builders held when they took a copy of the text.
    held: Vec<EncodedBatch>,
    pending: Vec<(usize, usize)>,
    rows: u64,
    /// The text handed to the open row group, or more (counted a batch at a time: the
    /// group is closed once this passes [`ROW_GROUP_TEXT_BYTES`]).
    group_text: usize,
}

/// An open row group: the crate's column writers and the text columns' chunks.
struct Group {
    writers: Vec<ArrowColumnWriter>,
    texts: Vec<TextChunk>,
    rows: usize,
}

impl Group {
    /// The encoded size the crate would estimate for the row group (it cuts groups by it).
    fn estimated_bytes(&self) -> usize {
        let crates: usize = self
            .writers
            .iter()
            .map(ArrowColumnWriter::get_estimated_total_bytes)
            .sum();
        crates
            + self
                .texts
                .iter()
                .map(TextChunk::estimated_bytes)
                .sum::<usize>()
    }
}

impl<W: Write + Send> RecordsWriter<W> {
    /// A records file written to `out`.
    pub fn new(out: W) -> io::Result<Self> {
        let options = ArrowWriterOptions::new()
            .with_properties(properties())
            .with_skip_arrow_metadata(true);
        // The crate's own writer sets the file up (schema, properties, the column writers'
        // factory); the row groups are driven here.
        let schema = file_schema();
        let (file, factory) = ArrowWriter::try_new_with_options(out, Arc::clone(&schema), options)
            .and_then(ArrowWriter::into_serialized_writer)
            .map_err(to_io)?;
        let properties = Arc::clone(file.properties());
        let mut fields = Vec::new();
        let mut text_columns = Vec::new();
        for (index, (column, _, kind)) in COLUMNS.iter().enumerate() {
            if own_chunks(*kind) {
                let descriptor = file.schema_descr().column(index);
                let limits = PageLimits::of(&properties, &descriptor)?;
                text_columns.push((slot(*column), descriptor, limits));
            } else {
                fields.push(Arc::clone(&schema.fields()[index]));
            }
        }
        Ok(Self {
            max_group_rows: properties.max_row_group_row_count(),
            max_group_bytes: properties.max_row_group_bytes(),
            file,
            factory,
            fields,
            text_columns,
            zstd: Compressor::new()?,
            group: None,
            builders: Builders::new(),
            held: Vec::new(),
            pending: Vec::with_capacity(BATCH_ROWS),
            rows: 0,
            group_text: 0,
        })
    }

    /// Appends the records of a batch.
    pub fn write(&mut self, batch: EncodedBatch) -> io::Result<()> {
        self.held.push(batch);
        let mut index = self.held.len() - 1;
        for row in 0..self.held[index].len() {
            self.builders.append(&self.held[index], row);
            self.pending.push((index, row));
            self.rows += 1;
            if self.builders.full() {
                self.write_batch()?;
                // Only the batch being taken may still hold rows to write.
                self.held.drain(..index);
                index = 0;
            }
        }
        if self.pending.is_empty() {
            self.held.clear();
        }
        Ok(())
    }

    /// Records appended so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Writes the open Arrow batch into row groups, cut where the crate's `ArrowWriter`
    /// cuts them: at the row limit, and where the rows would carry the group past its byte
    /// limit at the group's average row size so far.
    fn write_batch(&mut self) -> io::Result<()> {
        let (rows, text) = (self.builders.rows, self.builders.text_bytes);
        let columns = self.builders.finish();
        let mut start = 0;
        loop {
            if self.group.is_none() {
                self.group = Some(Group {
                    writers: self.open_writers()?,
                    texts: self
                        .text_columns
                        .iter()
                        .map(|(_, column, limits)| TextChunk::new(Arc::clone(column), *limits))
                        .collect(),
                    rows: 0,
                });
            }
            let group = self.group.as_ref().expect("an open row group");
            let (buffered, remaining) = (group.rows, rows - start);
            let mut split = self
                .max_group_rows
                .filter(|max| buffered + remaining > *max)
                .map(|max| max - buffered);
            if let Some(max) = self.max_group_bytes
                && buffered > 0
            {
                let current = group.estimated_bytes();
                if current >= max {
                    self.flush()?;
                    continue;
                }
                if let Some(fit) = (max - current).checked_div(current / buffered)
                    && split.unwrap_or(remaining) > fit
                {
                    if fit == 0 {
                        self.flush()?;
                        continue;
                    }
                    split = Some(fit);
                }
            }
            let length = split.unwrap_or(remaining);
            self.write_rows(&columns, start, length)?;
            let group = self.group.as_ref().expect("a group just written to");
            if self.max_group_rows.is_some_and(|max| group.rows >= max)
                || self
                    .max_group_bytes
                    .is_some_and(|max| group.estimated_bytes() >= max)
            {
                self.flush()?;
            }
            start += length;
            if split.is_none() {
                break;
            }
        }
        self.pending.clear();
        // The text in the open row group, or more: the group may have been closed before
        // or within this batch.
        self.group_text = match self.group.as_ref().map_or(0, |group| group.rows) {
            0 => 0,
            open if open <= rows => text,
            _ => self.group_text + text,
        };
        if self.group_text >= ROW_GROUP_TEXT_BYTES {
            self.flush()?;
            self.group_text = 0;
        }
        Ok(())
    }

    /// The crate's column writers of a new row group, for its columns.
    fn open_writers(&self) -> io::Result<Vec<ArrowColumnWriter>> {
        let writers = self
            .factory
            .create_column_writers(self.file.flushed_row_groups().len())
            .map_err(to_io)?;
        Ok(writers
            .into_iter()
            .zip(COLUMNS)
            .filter(|(_, (_, _, kind))| !own_chunks(*kind))
            .map(|(writer, _)| writer)
            .collect())
    }

    /// Writes `length` rows of the open Arrow batch from `start` into the open row group.
    fn write_rows(&mut self, columns: &[ArrayRef], start: usize, length: usize) -> io::Result<()> {
        let group = self.group.as_mut().expect("an open row group");
        group.rows += length;
        for ((field, writer), column) in self.fields.iter().zip(&mut group.writers).zip(columns) {
            let column = match (start, length) {
                (0, all) if all == column.len() => Arc::clone(column),
                _ => column.slice(start, length),
            };
            for leaf in compute_leaves(field, &column).map_err(to_io)? {
                writer.write(&leaf).map_err(to_io)?;
            }
        }
        for chunk in &mut group.texts {
            chunk.begin(length);
        }
        for &(batch, row) in &self.pending[start..start + length] {
            let batch = &self.held[batch];
            for ((slot, _, _), chunk) in self.text_columns.iter().zip(&mut group.texts) {
                chunk.push(batch.required(row, *slot), &mut self.zstd)?;
            }
        }
        Ok(())
    }

    /// Closes the open row group, its columns in file order.
    fn flush(&mut self) -> io::Result<()> {
        let Some(group) = self.group.take() else {
            return Ok(());
        };
        let mut chunks = Vec::with_capacity(group.writers.len());
        for writer in group.writers {
            chunks.push(writer.close().map_err(to_io)?);
        }
        let mut texts = Vec::with_capacity(group.texts.len());
        for text in group.texts {
            texts.push(text.close(&mut self.zstd)?);
        }
        let (mut chunks, mut texts) = (chunks.into_iter(), texts.into_iter());
        let mut row_group = self.file.next_row_group().map_err(to_io)?;
        for (_, _, kind) in COLUMNS {
            if own_chunks(kind) {
                let (bytes, close) = texts.next().expect("a chunk per text column");
                row_group.append_column(&bytes, close).map_err(to_io)?;
            } else {
                let chunk = chunks.next().expect("a chunk per column");
                chunk.append_to_row_group(&mut row_group).map_err(to_io)?;
            }
        }
        row_group.close().map_err(to_io)?;
        Ok(())
    }

    /// Writes what is buffered and the file footer; gives back the output and the number
    /// of records.
    pub fn finish(mut self) -> io::Result<(W, u64)> {
        if self.builders.rows > 0 {
            self.write_batch()?;
        }
        self.flush()?;
        let out = self.file.into_inner().map_err(to_io)?;
        Ok((out, self.rows))
    }
}

/// A [`RecordsWriter`] on a thread of its own (spawned in the caller's scope), so that
/// encoding and compressing overlap reading and parsing: batches are handed over through
/// a queue of at most [`QUEUED_BATCHES`] batches and [`QUEUED_BYTES`] of text.
pub struct ThreadedWriter<'scope> {
    sender: Option<Sender<EncodedBatch>>,
    backlog: Arc<Backlog>,
    handle: ScopedJoinHandle<'scope, io::Result<u64>>,
}

impl<'scope> ThreadedWriter<'scope> {
    /// Starts writing a records file to `out` on a thread of `scope`.
    pub fn spawn<'env, W: Write + Send + 'scope>(
        scope: &'scope Scope<'scope, 'env>,
        out: W,
    ) -> Self {
        // Unbounded: the backlog is what bounds it.
        let (sender, receiver) = mpsc::channel::<EncodedBatch>();
        let backlog = Arc::new(Backlog::default());
        let taken = Arc::clone(&backlog);
        let handle = scope.spawn(move || {
            // However the thread ends, nothing waits for room any longer.
            let _closed = CloseOnDrop(&taken);
            let mut writer = RecordsWriter::new(out)?;
            for batch in receiver {
                let bytes = batch.text.len();
                writer.write(batch)?;
                taken.release(bytes);
            }
            writer.finish().map(|(_, rows)| rows)
        });
        Self {
            sender: Some(sender),
            backlog,
            handle,
        }
    }

    /// Appends the records of a batch, once there is room for it.
    pub fn write(&mut self, batch: EncodedBatch) -> io::Result<()> {
        let sent = match &self.sender {
            Some(sender) if self.backlog.admit(batch.text.len()) => sender.send(batch).is_ok(),
            _ => false,
        };
        if sent {
            return Ok(());
        }
        // The writer thread stopped: its own error is what `finish` returns.
        self.sender = None;
        Err(io::Error::other("the records writer stopped"))
    }

    /// Writes the footer; the number of records written.
    pub fn finish(mut self) -> io::Result<u64> {
        drop(self.sender.take());
        self.handle
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the records writer panicked")))
    }
}

/// The batches handed to the writer thread and not yet written (how many, and their
/// text), and whether that thread has stopped: the one bound of its queue.
#[derive(Default)]
struct Backlog {
    state: Mutex<BacklogState>,
    changed: Condvar,
}

#[derive(Default)]
struct BacklogState {
    batches: usize,
    bytes: usize,
    closed: bool,
}

impl Backlog {
    fn state(&self) -> MutexGuard<'_, BacklogState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until a batch of `bytes` may join the queue (at once when the queue is empty,
    /// so a batch larger than the bound still goes), then counts it; false once the writer
    /// thread has stopped.
    fn admit(&self, bytes: usize) -> bool {
        let mut state = self.state();
        let full = |state: &BacklogState| {
            state.batches > 0
                && (state.batches == QUEUED_BATCHES || state.bytes + bytes > QUEUED_BYTES)
        };
        while !state.closed && full(&state) {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if state.closed {
            return false;
        }
        state.batches += 1;
        state.bytes += bytes;
        true
    }

    /// A batch of `bytes` was written.
    fn release(&self, bytes: usize) {
        let mut state = self.state();
        state.batches -= 1;
        state.bytes -= bytes;
        self.changed.notify_all();
    }
}

/// Marks the backlog closed when the writer thread ends, by return or by panic.
struct CloseOnDrop<'b>(&'b Backlog);

impl Drop for CloseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.state().closed = true;
        self.0.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use arrow_array::{BooleanArray, RecordBatch, StringArray, UInt64Array};
    use serde_json::json;

    use crate::record::Source;

    /// The records file the Parquet crate writes alone for `batches`: every column built
    /// as an Arrow array and handed to its `ArrowWriter`, in Arrow batches cut as
    /// [`RecordsWriter`] cuts them, row groups also closed at [`ROW_GROUP_TEXT_BYTES`].
    fn written_by_the_crate(batches: &[EncodedBatch]) -> Vec<u8> {
        let options = ArrowWriterOptions::new()
            .with_properties(properties())
            .with_skip_arrow_metadata(true);
        let mut writer =
            ArrowWriter::try_new_with_options(Vec::new(), file_schema(), options).unwrap();
        let rows: Vec<(&EncodedBatch, usize)> = batches
            .iter()
            .flat_map(|batch| (0..batch.len()).map(move |row| (batch, row)))
            .collect();
        let (mut start, mut group_text) = (0, 0);
        while start < rows.len() {
            let (mut end, mut text) = (start, 0);
            while end < rows.len() && end - start < BATCH_ROWS && text < BATCH_TEXT_BYTES {
                text += rows[end].0.row_bytes(rows[end].1);
                end += 1;
            }
            let taken = &rows[start..end];
            fn scalar<'b>(row: &(&'b EncodedBatch, usize)) -> &'b EncodedRow {
                &row.0.rows[row.1]
            }
            let columns = COLUMNS
                .iter()
                .map(|(column, _, _)| -> ArrayRef {
                    match column {
                        Column::SchemaVersion => Arc::new(UInt64Array::from(vec![
                            crate::record::SCHEMA_VERSION;
                            taken.len()
                        ])),
                        Column::RepeatId => Arc::new(UInt64Array::from_iter_values(
                            taken.iter().map(|row| scalar(row).repeat_id),
                        )),
                        Column::IdentityScope => Arc::new(StringArray::from_iter_values(
                            taken.iter().map(|row| scalar(row).identity_scope.as_str()),
                        )),
                        Column::Correct => Arc::new(BooleanArray::from_iter(
                            taken.iter().map(|row| scalar(row).correct),
                        )),
                        Column::SourceLine => Arc::new(UInt64Array::from_iter(
                            taken.iter().map(|row| scalar(row).source_line),
                        )),
                        text => Arc::new(StringArray::from_iter(
                            taken
                                .iter()
                                .map(|(batch, row)| batch.field(*row, slot(*text))),
                        )),
                    }
                })
                .collect();
            let batch = RecordBatch::try_new(file_schema(), columns).unwrap();
            writer.write(&batch).unwrap();
            group_text = match writer.in_progress_rows() {
                0 => 0,
                open if open <= taken.len() => text,
                _ => group_text + text,
            };
            if group_text >= ROW_GROUP_TEXT_BYTES {
                writer.flush().unwrap();
                group_text = 0;
            }
            start = end;
        }
        writer.into_inner().unwrap()
    }

    /// The same batches through [`RecordsWriter`].
    fn written(batches: &[EncodedBatch]) -> Vec<u8> {
        let mut writer = RecordsWriter::new(Vec::new()).unwrap();
        for batch in batches {
            writer.write(batch.clone()).unwrap();
        }
        writer.finish().unwrap().0
    }

    /// `length` letters that zstd cannot shorten much, different for each `seed`.
    fn noise(seed: u64, length: usize) -> String {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..length)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from(b'a' + (state % 26) as u8)
            })
            .collect()
    }

    /// `count` records of every shape: labels present and absent, every locator, each
    /// kind of `correct`, inputs of up to `longest` bytes, half of them noise (so that
    /// pages compress and row groups fill at different rates), in encoded batches of 1 to
    /// 300 records.
    fn varied(count: usize, longest: usize) -> Vec<EncodedBatch> {
        let (mut batches, mut batch, mut size) = (Vec::new(), EncodedBatch::new(), 1);
        for index in 0..count {
            let spread = (index as u64).wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32;
            let length = spread as usize % (longest + 1);
            let mut record = crate::record::tests::sample();
            record.question_id = format!("q{index:06}");
            record.language = (index % 3 != 0).then(|| ["en", "tr"][index % 2].into());
            record.script = (index % 7 == 0).then(|| "Latn".into());
            record.rephrasing_model = (index % 5 == 0).then(|| "para".into());
            record.repeat_id = (index % 4) as u64;
            record.correct = [None, Some(true), Some(false)][index % 3];
            record.input = json!({
                "question": noise(spread, length / 2),
                "context": "the same words again ".repeat(length / 42),
            });
            record.extra = json!({"doc_id": index}).as_object().unwrap().clone();
            record.source = match index % 3 {
                0 => Source::line("runs/r1/raw/0001-a.jsonl", index as u64 + 1),
                1 => Source {
                    path: "runs/r1/raw/0002-log.eval".into(),
                    locator: Locator::Member(format!("samples/{index}.json")),
                },
                _ => Source {
                    path: "runs/r1/raw/0003-run/scenario_state.json".into(),
                    locator: Locator::Pointer(format!("/request_states/{index}")),
                },
            };
            batch.push(&NewRecord::from_record(record).unwrap());
            if batch.len() == size {
                batches.push(std::mem::take(&mut batch));
                size = 1 + spread as usize % 300;
            }
        }
        if !batch.is_empty() {
            batches.push(batch);
        }
        batches
    }

    fn row_groups(bytes: &[u8]) -> usize {
        parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&bytes::Bytes::copy_from_slice(bytes))
            .unwrap()
            .num_row_groups()
    }

    #[test]
    fn the_file_is_the_one_the_parquet_crate_writes_alone() {
        // Many short and middling records: pages cut at 4,096 rows and at 1 MiB, row groups
        // cut at their estimated 8 MiB in the middle of an Arrow batch.
        let batches = varied(40_000, 4_000);
        let bytes = written(&batches);
        assert!(
            row_groups(&bytes) > 2,
            "the records fill several row groups"
        );
        assert!(bytes == written_by_the_crate(&batches), "the files differ");
    }

    #[test]
    fn long_values_are_paged_as_the_parquet_crate_pages_them() {
        // Values of up to 2.5 MiB: an Arrow batch cut by its text, a page of one value over
        // the page limit, chunks written a few values at a time.
        let batches = varied(60, 5 << 20);
        let bytes = written(&batches);
        assert!(row_groups(&bytes) > 1);
        assert!(bytes == written_by_the_crate(&batches), "the files differ");
        // Text that compresses to almost nothing: the row group closed by its text.
        let mut batch = EncodedBatch::new();
        for index in 0..48 {
            let mut record = crate::record::tests::sample();
            record.question_id = format!("q{index}");
            record.input = json!({"context": "x".repeat(1 << 20)});
            batch.push(&NewRecord::from_record(record).unwrap());
        }
        let batches = [batch];
        let bytes = written(&batches);
        assert!(row_groups(&bytes) > 1, "closed by its text");
        assert!(bytes == written_by_the_crate(&batches), "the files differ");
    }

    #[test]
    fn a_page_filled_to_its_limit_is_closed_where_the_parquet_crate_closes_it() {
        // 1,024 inputs of 1,020 bytes of text, each behind its 4-byte length: a chunk of
        // exactly 1 MiB, the page limit; then one value a byte or a page longer, first,
        // in the middle or last, so that the window of values is cut by the first value
        // that passes the limit, the chunk's first values or all but its last.
        for (longer, by) in [(None, 0), (Some(1023), 1), (Some(1022), 1), (Some(0), 1)]
            .into_iter()
            .chain([(Some(0), 1 << 10), (Some(0), 1 << 20), (Some(5), 3 << 10)])
        {
            let mut batch = EncodedBatch::new();
            for index in 0..3_000 {
                let mut record = crate::record::tests::sample();
                record.question_id = String::new();
                let extra = if longer == Some(index % 1024) { by } else { 0 };
                // A JSON string: its text is the letters and two quotes.
                record.input = json!("y".repeat(1018 + extra));
                record.repeat_id = index as u64;
                batch.push(&NewRecord::from_record(record).unwrap());
            }
            let batches = [batch];
            assert!(
                written(&batches) == written_by_the_crate(&batches),
                "the files differ with the value at {longer:?} longer by {by}"
            );
        }
    }

    #[test]
    fn a_text_column_set_up_otherwise_is_not_written_here() {
        use parquet::schema::types::{SchemaDescriptor, Type as SchemaType};
        let text = SchemaType::primitive_type_builder("input", parquet::basic::Type::BYTE_ARRAY)
            .with_repetition(parquet::basic::Repetition::REQUIRED)
            .build()
            .unwrap();
        let root = SchemaType::group_type_builder("schema")
            .with_fields(vec![Arc::new(text)])
            .build()
            .unwrap();
        let column = SchemaDescriptor::new(Arc::new(root)).column(0);
        assert!(PageLimits::of(&properties(), &column).is_ok());
        let path = ColumnPath::from("input");
        let otherwise = [
            properties()
                .into_builder()
                .set_column_dictionary_enabled(path.clone(), true)
                .build(),
            properties()
                .into_builder()
                .set_column_compression(path.clone(), Compression::SNAPPY)
                .build(),
            properties()
                .into_builder()
                .set_column_statistics_enabled(path.clone(), EnabledStatistics::Chunk)
                .build(),
            properties()
                .into_builder()
                .set_offset_index_disabled(true)
                .build(),
        ];
        for properties in otherwise {
            let error = PageLimits::of(&properties, &column).unwrap_err();
            assert!(error.to_string().contains("input"), "{error}");
        }
    }

    #[test]
    fn a_file_of_no_records_is_the_one_the_parquet_crate_writes() {
        assert_eq!(written(&[]), written_by_the_crate(&[]));
        assert_eq!(written(&[EncodedBatch::new()]), written_by_the_crate(&[]));
    }

    #[test]
    fn records_go_to_the_encoder_once_their_text_fills_a_batch() {
        let mut record = crate::record::tests::sample();
        record.input = serde_json::json!({"context": "x".repeat(1 << 20)});
        let record = NewRecord::from_record(record).unwrap();
        let mut batch = EncodedBatch::new();
        for _ in 0..12 {
            batch.push(&record);
        }
        let row_bytes = batch.row_bytes(0);
        let mut writer = RecordsWriter::new(Vec::new()).unwrap();
        writer.write(batch).unwrap();
        // Twelve records of a mebibyte each, far fewer than BATCH_ROWS: the builders hold
        // no more than the text bound and the record that passed it.
        assert!(writer.builders.rows < 12);
        assert!(writer.builders.text_bytes < BATCH_TEXT_BYTES + row_bytes);
        let (_, rows) = writer.finish().unwrap();
        assert_eq!(rows, 12);
    }

    #[test]
    fn a_batch_waits_while_the_queue_holds_too_much_text() {
        let backlog = Backlog::default();
        // An empty queue takes any batch, however large.
        assert!(backlog.admit(QUEUED_BYTES * 4));
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| backlog.admit(1));
            std::thread::sleep(Duration::from_millis(100));
            assert!(!waiting.is_finished(), "admitted beside a full queue");
            backlog.release(QUEUED_BYTES * 4);
            assert!(waiting.join().unwrap());
        });
        // Small batches share the room.
        assert!(backlog.admit(QUEUED_BYTES - 1));
    }

    #[test]
    fn no_more_than_the_queued_batches_wait_however_small() {
        let backlog = Backlog::default();
        for _ in 0..QUEUED_BATCHES {
            assert!(backlog.admit(1));
        }
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| backlog.admit(1));
            std::thread::sleep(Duration::from_millis(100));
            assert!(!waiting.is_finished(), "admitted beside a full queue");
            backlog.release(1);
            assert!(waiting.join().unwrap());
        });
    }

    #[test]
    fn nothing_waits_for_a_writer_that_stopped() {
        let backlog = Backlog::default();
        assert!(backlog.admit(QUEUED_BYTES));
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| backlog.admit(QUEUED_BYTES));
            std::thread::sleep(Duration::from_millis(100));
            drop(CloseOnDrop(&backlog));
            assert!(!waiting.join().unwrap());
        });
        assert!(!backlog.admit(0));
    }
}
