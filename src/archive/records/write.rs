//! Writing a records file: records are encoded on worker threads ([`EncodedBatch`]: the
//! records of a batch with their canonical JSON text, copied), then appended in order to one
//! [`RecordsWriter`], which cuts Arrow batches and lets the Parquet encoder compress them
//! into row groups of bounded size.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::mpsc::{self, Sender};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{Scope, ScopedJoinHandle};

use arrow_array::builder::{BooleanBuilder, StringBuilder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

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

fn slot(column: Column) -> usize {
    TEXT_FIELDS
        .iter()
        .position(|c| *c == column)
        .expect("a text column")
}

/// Records ready for the columns, many in one buffer: each record's text fields (nested
/// values as canonical JSON) one after the other, and its scalars. Records are encoded on
/// worker threads a batch at a time and written on another; one buffer per batch keeps
/// that hand-over cheap.
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

/// The builders of one Arrow batch.
struct Builders {
    schema_version: UInt64Builder,
    /// One builder per [`TEXT_FIELDS`] entry.
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
            texts: std::array::from_fn(|_| {
                StringBuilder::with_capacity(BATCH_ROWS, BATCH_ROWS * 32)
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
            builder.append_option(batch.field(row, index));
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

    /// The columns built so far, in file order; the builders start over empty.
    fn finish(&mut self) -> Vec<ArrayRef> {
        self.rows = 0;
        self.text_bytes = 0;
        self.took = self.texts.each_ref().map(|text| text.values_slice().len());
        COLUMNS
            .iter()
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
    writer: ArrowWriter<W>,
    builders: Builders,
    rows: u64,
    /// The text handed to the open row group, or more (counted a batch at a time: the
    /// group is closed once this passes [`ROW_GROUP_TEXT_BYTES`]).
    group_text: usize,
}

impl<W: Write + Send> RecordsWriter<W> {
    /// A records file written to `out`.
    pub fn new(out: W) -> io::Result<Self> {
        let options = ArrowWriterOptions::new()
            .with_properties(properties())
            .with_skip_arrow_metadata(true);
        let writer =
            ArrowWriter::try_new_with_options(out, file_schema(), options).map_err(to_io)?;
        Ok(Self {
            writer,
            builders: Builders::new(),
            rows: 0,
            group_text: 0,
        })
    }

    /// Appends the records of a batch.
    pub fn write(&mut self, batch: &EncodedBatch) -> io::Result<()> {
        for row in 0..batch.len() {
            self.builders.append(batch, row);
            self.rows += 1;
            if self.builders.full() {
                self.write_batch()?;
            }
        }
        Ok(())
    }

    /// Records appended so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    fn write_batch(&mut self) -> io::Result<()> {
        let (rows, text) = (self.builders.rows, self.builders.text_bytes);
        let batch = RecordBatch::try_new(file_schema(), self.builders.finish())
            .map_err(io::Error::other)?;
        self.writer.write(&batch).map_err(to_io)?;
        // The text in the open row group, or more: the encoder may have closed the group
        // before or within this batch.
        self.group_text = match self.writer.in_progress_rows() {
            0 => 0,
            open if open <= rows => text,
            _ => self.group_text + text,
        };
        if self.group_text >= ROW_GROUP_TEXT_BYTES {
            self.writer.flush().map_err(to_io)?;
            self.group_text = 0;
        }
        Ok(())
    }

    /// Writes what is buffered and the file footer; gives back the output and the number
    /// of records.
    pub fn finish(mut self) -> io::Result<(W, u64)> {
        if self.builders.rows > 0 {
            self.write_batch()?;
        }
        let out = self.writer.into_inner().map_err(to_io)?;
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
                writer.write(&batch)?;
                drop(batch);
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
        writer.write(&batch).unwrap();
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
