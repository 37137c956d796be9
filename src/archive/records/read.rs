//! Reading a records file: its schema checked against [`COLUMNS`] when it is opened, then
//! batches of only the projected columns, each row readable as typed fields, as an
//! [`Identity`], or as a full [`Record`] decoded strictly.

use std::fs::File;
use std::io;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, UInt64Type};
use arrow_array::{Array, BooleanArray, RecordBatch, StringArray, UInt64Array};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};

use super::write::to_io;
use super::{COLUMNS, Column, Columns, Kind, READABLE, SCHEMA_KEY, schema_of};
use crate::canonical_json::{Json, JsonKind};
use crate::inputs::parquet::{BATCH_BYTES, batch_rows_of, check_chunks, contained, load_metadata};
use crate::jsonl::{self, CanonicalScratch};
use crate::record::fields::MAX_SAFE_INTEGER;
use crate::record::{
    Identity, IdentityScope, Locator, Record, SCHEMA_VERSION, Source, StoredField, StoredRecord,
};

/// Rows per batch read, unless [`BATCH_BYTES`] makes it fewer.
pub(super) const BATCH_ROWS: usize = 4096;

/// One row that breaks the record schema: which column (and where inside its JSON) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowError {
    /// The column, or a path into a JSON column (`input.doc`).
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for RowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "field {}: {}", self.field, self.message)
    }
}

fn row_error(column: Column, message: impl Into<String>) -> RowError {
    RowError {
        field: column.name().to_owned(),
        message: message.into(),
    }
}

/// An open records file whose schema is the one this build writes.
pub struct RecordsFile {
    file: File,
    metadata: ArrowReaderMetadata,
    /// The columns the file has (a version 1 file lacks the last two).
    present: Columns,
}

impl RecordsFile {
    /// Opens a records file: its footer must parse and its schema must be exactly that of
    /// the version its [`SCHEMA_KEY`] metadata names, one of [`READABLE`] (names, order,
    /// types, nullability); the error says what differs.
    pub fn open(file: File) -> Result<Self, String> {
        let found =
            load_metadata(&file)?.map_err(|e| format!("not a readable Parquet file ({e})"))?;
        let version = check_schema(&found)?;
        let length = file
            .metadata()
            .map_err(|e| format!("its size cannot be read ({e})"))?
            .len();
        check_chunks(found.metadata(), length)?;
        let read_schema = schema_of(version, true);
        let present = Columns::first(read_schema.fields().len());
        let options = ArrowReaderOptions::new().with_schema(read_schema);
        let metadata =
            contained(|| ArrowReaderMetadata::try_new(Arc::clone(found.metadata()), options))?
                .map_err(|e| format!("its columns cannot be read ({e})"))?;
        Ok(Self {
            file,
            metadata,
            present,
        })
    }

    /// Rows in the file, as its footer says.
    pub fn rows(&self) -> u64 {
        self.metadata.metadata().file_metadata().num_rows().max(0) as u64
    }

    /// Reads the file in batches of the `columns` only (a column the file's version lacks
    /// reads as null), a row group at a time.
    pub fn batches(self, columns: Columns) -> io::Result<Batches> {
        let columns = columns.and(self.present);
        let mask = ProjectionMask::roots(
            self.metadata.parquet_schema(),
            columns.iter().map(Column::index),
        );
        Ok(Batches {
            file: self.file,
            metadata: self.metadata,
            mask,
            reader: None,
            next_group: 0,
            columns,
            failed: false,
        })
    }
}

/// Checks the file's schema against the one its version names; returns the version.
fn check_schema(found: &ArrowReaderMetadata) -> Result<&'static str, String> {
    let named = found
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .and_then(|pairs| pairs.iter().find(|kv| kv.key == SCHEMA_KEY))
        .and_then(|kv| kv.value.clone());
    let Some((version, _)) = READABLE.iter().find(|(v, _)| Some(*v) == named.as_deref()) else {
        let readable: Vec<String> = READABLE.iter().map(|(v, _)| format!("{v:?}")).collect();
        return Err(format!(
            "its metadata {SCHEMA_KEY} is {}, not one this babel reads ({})",
            named.map_or("missing".to_owned(), |v| format!("{v:?}")),
            readable.join(" or ")
        ));
    };
    let expected = schema_of(version, false);
    let schema = found.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let wanted: Vec<&str> = expected
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    if names != wanted {
        return Err(format!(
            "its columns are [{}], not the records schema's [{}]",
            names.join(", "),
            wanted.join(", ")
        ));
    }
    for (field, want) in schema.fields().iter().zip(expected.fields()) {
        if field.data_type() != want.data_type() || field.is_nullable() != want.is_nullable() {
            let nullable = |n: bool| if n { "nullable" } else { "required" };
            return Err(format!(
                "column {} is {} {}, not {} {}",
                field.name(),
                nullable(field.is_nullable()),
                field.data_type(),
                nullable(want.is_nullable()),
                want.data_type()
            ));
        }
    }
    Ok(version)
}

/// The batches of one records file, in row order. Each row group is read on its own, in
/// batches of [`BATCH_ROWS`] rows or of about [`BATCH_BYTES`] as its average row says (a
/// dictionary's longest value counted for each value, see [`batch_rows_of`]): read
/// across groups with one size for all, a run of long records among short ones came back
/// in one batch, and one group of long records made every other group's batches tiny.
pub struct Batches {
    file: File,
    metadata: ArrowReaderMetadata,
    mask: ProjectionMask,
    /// The reader of the row group being read.
    reader: Option<ParquetRecordBatchReader>,
    next_group: usize,
    columns: Columns,
    /// The reader panicked: its state is not to be trusted, so reading stops.
    failed: bool,
}

impl Batches {
    /// A reader of row group `group` alone.
    fn open(&self, group: usize) -> io::Result<ParquetRecordBatchReader> {
        let meta = self.metadata.metadata().row_group(group);
        let leaves: Vec<usize> = self.columns.iter().map(Column::index).collect();
        let rows = batch_rows_of(&self.file, meta, &leaves, BATCH_BYTES, BATCH_ROWS)
            .map_err(io::Error::other)?;
        let file = self.file.try_clone()?;
        contained(|| {
            ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.metadata.clone())
                .with_projection(self.mask.clone())
                .with_row_groups(vec![group])
                .with_batch_size(rows)
                .build()
        })
        .map_err(io::Error::other)?
        .map_err(to_io)
    }
}

impl Iterator for Batches {
    type Item = io::Result<Batch>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.failed {
            let reader = match &mut self.reader {
                Some(reader) => reader,
                None if self.next_group == self.metadata.metadata().num_row_groups() => {
                    return None;
                }
                None => {
                    let opened = self.open(self.next_group);
                    self.next_group += 1;
                    match opened {
                        Ok(reader) => self.reader.insert(reader),
                        Err(error) => {
                            self.failed = true;
                            return Some(Err(error));
                        }
                    }
                }
            };
            match contained(|| reader.next()) {
                Ok(Some(batch)) => {
                    return Some(
                        batch
                            .map_err(io::Error::other)
                            .and_then(|batch| Batch::new(&batch, self.columns)),
                    );
                }
                Ok(None) => self.reader = None,
                Err(message) => {
                    self.failed = true;
                    return Some(Err(io::Error::other(message)));
                }
            }
        }
        None
    }
}

thread_local! {
    /// This thread's buffers for the canonical checks of [`Batch::check_row`], kept from
    /// row to row.
    static SCRATCH: std::cell::RefCell<CanonicalScratch> = Default::default();
}

/// UTF-8 text of a column: an offsets buffer into the bytes, and nulls.
#[derive(Debug, Clone)]
struct TextBuffers {
    offsets: OffsetBuffer<i32>,
    bytes: Buffer,
    nulls: Option<NullBuffer>,
}

impl TextBuffers {
    fn of(array: &StringArray) -> Self {
        Self {
            offsets: array.offsets().clone(),
            bytes: array.values().clone(),
            nulls: array.nulls().cloned(),
        }
    }

    /// The text at `index`, ignoring nulls.
    fn at(&self, index: usize) -> &str {
        let (start, end) = (
            self.offsets[index] as usize,
            self.offsets[index + 1] as usize,
        );
        // SAFETY: a StringArray's bytes are valid UTF-8 between consecutive offsets (the
        // Parquet reader validates them as it decodes).
        #[allow(unsafe_code)]
        unsafe {
            std::str::from_utf8_unchecked(&self.bytes[start..end])
        }
    }

    fn is_null(&self, index: usize) -> bool {
        self.nulls
            .as_ref()
            .is_some_and(|nulls| nulls.is_null(index))
    }
}

/// A column of a batch, typed once so that rows are read without downcasts or the
/// array API's per-call checks (these accessors run millions of times in a join).
#[derive(Debug, Clone)]
enum View {
    Absent,
    /// Dictionary-encoded text: a key per row into the values.
    Label {
        keys: ScalarBuffer<i32>,
        nulls: Option<NullBuffer>,
        values: TextBuffers,
    },
    Text(TextBuffers),
    Integer(UInt64Array),
    Boolean(BooleanArray),
}

/// Some rows of a records file, with the projected columns.
#[derive(Debug, Clone)]
pub struct Batch {
    views: Vec<View>,
    len: usize,
    /// `identity_scope` of each dictionary value, read once per batch (when projected).
    scopes: Vec<Option<IdentityScope>>,
}

impl Batch {
    fn new(batch: &RecordBatch, columns: Columns) -> io::Result<Self> {
        let mut views = vec![View::Absent; COLUMNS.len()];
        for (position, column) in columns.iter().enumerate() {
            let array = batch.column(position);
            views[column.index()] = match column.kind() {
                Kind::Label { .. } => match array.as_dictionary_opt::<Int32Type>() {
                    Some(dictionary) => View::Label {
                        keys: dictionary.keys().values().clone(),
                        nulls: dictionary.keys().nulls().cloned(),
                        values: TextBuffers::of(dictionary.values().as_string::<i32>()),
                    },
                    None => View::Text(TextBuffers::of(array.as_string::<i32>())),
                },
                Kind::Text | Kind::Json => View::Text(TextBuffers::of(array.as_string::<i32>())),
                Kind::Integer { .. } => View::Integer(array.as_primitive::<UInt64Type>().clone()),
                Kind::Boolean => View::Boolean(array.as_boolean().clone()),
            };
        }
        let scopes = match &views[Column::IdentityScope.index()] {
            View::Label { values, .. } => (0..values.offsets.len() - 1)
                .map(|key| IdentityScope::parse(values.at(key)))
                .collect(),
            _ => Vec::new(),
        };
        Ok(Self {
            views,
            len: batch.num_rows(),
            scopes,
        })
    }

    /// The rows whose label `column` holds `value`, compared once per dictionary value.
    pub fn rows_with(&self, column: Column, value: &str) -> Vec<usize> {
        let matching = self.per_label(column, |label| label == Some(value));
        (0..self.len).filter(|&row| matching[row]).collect()
    }

    /// A value per row of the label `column`, computed by `of` once per distinct label
    /// (once per dictionary value), not once per row.
    pub fn per_label<T: Copy + Default>(
        &self,
        column: Column,
        mut of: impl FnMut(Option<&str>) -> T,
    ) -> Vec<T> {
        match &self.views[column.index()] {
            View::Label {
                keys,
                nulls,
                values,
            } => {
                let mapped: Vec<T> = (0..values.offsets.len() - 1)
                    .map(|key| of(Some(values.at(key))))
                    .collect();
                let null = of(None);
                (0..self.len)
                    .map(|row| {
                        if nulls.as_ref().is_some_and(|n| n.is_null(row)) {
                            null
                        } else {
                            mapped[keys[row] as usize]
                        }
                    })
                    .collect()
            }
            _ => {
                // Plain text: remember what each distinct value gave (labels are few).
                let mut seen: Vec<(Option<&str>, T)> = Vec::new();
                (0..self.len)
                    .map(|row| {
                        let label = self.text(column, row);
                        match seen.iter().find(|(known, _)| *known == label) {
                            Some((_, value)) => *value,
                            None => {
                                let value = of(label);
                                if seen.len() < 64 {
                                    seen.push((label, value));
                                }
                                value
                            }
                        }
                    })
                    .collect()
            }
        }
    }

    /// Rows in the batch.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a batch without rows.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A text column's value (label, text or JSON); `None` for null. Panics if the column
    /// was not projected or holds no text: a programming error, not bad data.
    #[inline]
    pub fn text(&self, column: Column, row: usize) -> Option<&str> {
        match &self.views[column as usize] {
            View::Label {
                keys,
                nulls,
                values,
            } => {
                if nulls.as_ref().is_some_and(|n| n.is_null(row)) {
                    None
                } else {
                    Some(values.at(keys[row] as usize))
                }
            }
            View::Text(text) => (!text.is_null(row)).then(|| text.at(row)),
            _ => panic!("column {} is not projected text", column.name()),
        }
    }

    /// The source of a row: its path and locator (the [`Columns::SOURCE`] columns).
    pub fn source(&self, row: usize) -> Result<Source, RowError> {
        Ok(Source {
            path: self
                .text(Column::SourcePath, row)
                .unwrap_or_default()
                .to_owned(),
            locator: self.locator(row)?,
        })
    }

    /// The source locator of a row: exactly one of `source_line` (one-based),
    /// `source_member` and `source_pointer` is set. (The last two read as null in a
    /// version 1 file, which has no such columns.)
    pub fn locator(&self, row: usize) -> Result<Locator, RowError> {
        let optional_text = |column: Column| match self.views[column.index()] {
            View::Absent => None,
            _ => self.text(column, row),
        };
        let line = self.integer(Column::SourceLine, row);
        let member = optional_text(Column::SourceMember);
        let pointer = optional_text(Column::SourcePointer);
        match (line, member, pointer) {
            (Some(0), None, None) => {
                Err(row_error(Column::SourceLine, "line numbers are one-based"))
            }
            (Some(line), None, None) => Ok(Locator::Line(line)),
            (None, Some(member), None) if !member.is_empty() => {
                Ok(Locator::Member(member.to_owned()))
            }
            (None, None, Some(pointer)) if pointer.starts_with('/') => {
                Ok(Locator::Pointer(pointer.to_owned()))
            }
            (None, None, Some(_)) => Err(row_error(
                Column::SourcePointer,
                "a JSON Pointer starts with /",
            )),
            _ => Err(row_error(
                Column::SourceLine,
                "exactly one of source_line, source_member (non-empty) and source_pointer must be set",
            )),
        }
    }

    /// An integer column's value.
    pub fn integer(&self, column: Column, row: usize) -> Option<u64> {
        match &self.views[column.index()] {
            View::Integer(array) => (!array.is_null(row)).then(|| array.value(row)),
            _ => panic!("column {} is not a projected integer", column.name()),
        }
    }

    /// `correct`: true, false or null (unknown).
    pub fn correct(&self, row: usize) -> Option<bool> {
        match &self.views[Column::Correct.index()] {
            View::Boolean(array) => (!array.is_null(row)).then(|| array.value(row)),
            _ => panic!("column correct is not projected"),
        }
    }

    /// The identity fields of a row (required text columns read as "" if a damaged file
    /// holds a null there; `validate` reports it).
    pub fn identity(&self, row: usize) -> Identity<'_> {
        Identity {
            benchmark: self.text(Column::Benchmark, row).unwrap_or_default(),
            language: self.text(Column::Language, row),
            script: self.text(Column::Script, row),
            question_id: self.text(Column::QuestionId, row).unwrap_or_default(),
            variant_id: self.text(Column::VariantId, row).unwrap_or_default(),
            filter: self.text(Column::Filter, row).unwrap_or_default(),
            repeat_id: self.integer(Column::RepeatId, row).unwrap_or_default(),
        }
    }

    /// `identity_scope`, refusing any other value.
    pub fn identity_scope(&self, row: usize) -> Result<IdentityScope, RowError> {
        if let View::Label { keys, nulls, .. } = &self.views[Column::IdentityScope.index()]
            && !nulls.as_ref().is_some_and(|n| n.is_null(row))
            && let Some(Some(scope)) = self.scopes.get(keys[row] as usize)
        {
            return Ok(*scope);
        }
        let text = self.text(Column::IdentityScope, row).unwrap_or_default();
        IdentityScope::parse(text).ok_or_else(|| {
            row_error(
                Column::IdentityScope,
                format!("expected \"stable\" or \"run-local\", found {text:?}"),
            )
        })
    }

    /// The row-local checks of a stored record, on its stored text (every column must be
    /// projected): the schema version, required text non-empty, integers in range, every
    /// JSON column exactly its RFC 8785 form and of its type, and the locator. What
    /// `validate` checks of each row; nothing is parsed into a tree.
    pub fn check_row(&self, row: usize) -> Result<(), RowError> {
        use Column as C;
        let version = self.integer(C::SchemaVersion, row).unwrap_or_default();
        if version != SCHEMA_VERSION {
            return Err(row_error(
                C::SchemaVersion,
                format!("expected {SCHEMA_VERSION}, found {version}"),
            ));
        }
        let repeat_id = self.integer(C::RepeatId, row).unwrap_or_default();
        if repeat_id > MAX_SAFE_INTEGER {
            return Err(row_error(
                C::RepeatId,
                format!("{repeat_id} is beyond 2^53 - 1"),
            ));
        }
        let json = |column: Column| -> Result<Json<'_>, RowError> {
            let text = self.text(column, row).unwrap_or_default();
            SCRATCH
                .with_borrow_mut(|scratch| jsonl::check_canonical(text, scratch))
                .map_err(|message| row_error(column, message))?;
            Ok(Json::canonical(text))
        };
        let wrong = |column: Column, expected: &str, found: &Json<'_>| {
            row_error(
                column,
                format!("expected {expected}, found {}", found.describe()),
            )
        };
        let input = json(C::Input)?;
        if !matches!(input.kind(), JsonKind::Object | JsonKind::Null) {
            return Err(wrong(C::Input, "a JSON object or null", &input));
        }
        let warnings = json(C::Warnings)?;
        let Some(items) = warnings.elements() else {
            return Err(wrong(C::Warnings, "an array of strings", &warnings));
        };
        if let Some(item) = items.iter().find(|item| item.kind() != JsonKind::String) {
            return Err(wrong(C::Warnings, "an array of strings", item));
        }
        self.locator(row)?;
        self.required_text(C::RunId, row)?;
        self.required_text(C::Benchmark, row)?;
        self.optional_text(C::Script, row)?;
        self.optional_text(C::Language, row)?;
        self.required_text(C::QuestionId, row)?;
        self.required_text(C::VariantId, row)?;
        self.required_text(C::Filter, row)?;
        self.identity_scope(row)?;
        self.required_text(C::Model, row)?;
        self.optional_text(C::RephrasingModel, row)?;
        json(C::Target)?;
        json(C::Prediction)?;
        for column in [C::Scores, C::Metrics] {
            let value = json(column)?;
            if value.kind() != JsonKind::Object {
                return Err(wrong(column, "a JSON object", &value));
            }
        }
        json(C::Response)?;
        self.required_text(C::SourcePath, row)?;
        let extra = json(C::Extra)?;
        if extra.kind() != JsonKind::Object {
            return Err(wrong(C::Extra, "a JSON object", &extra));
        }
        Ok(())
    }

    fn required_text(&self, column: Column, row: usize) -> Result<&str, RowError> {
        match self.text(column, row) {
            Some(text) if !text.is_empty() => Ok(text),
            _ => Err(row_error(column, "expected a non-empty string")),
        }
    }

    fn optional_text(&self, column: Column, row: usize) -> Result<Option<&str>, RowError> {
        match self.text(column, row) {
            Some("") => Err(row_error(column, "expected a non-empty string or null")),
            text => Ok(text),
        }
    }

    /// The full record of a row (every column must be projected), checked as
    /// [`Batch::check_row`] checks it.
    pub fn record(&self, row: usize) -> Result<Record, RowError> {
        self.check_row(row)?;
        let mut stored = StoredRecord::default();
        self.stored_record(row, &mut stored);
        stored.to_record().map_err(|message| RowError {
            field: "record".into(),
            message,
        })
    }
}

impl Batch {
    /// The record of a row as stored, into `out` (every column must be projected; a
    /// malformed locator reads as line 0, which `validate` reports): nothing is parsed,
    /// the JSON columns are copied as stored.
    pub fn stored_record(&self, row: usize, out: &mut StoredRecord) {
        use StoredField as F;
        out.clear();
        out.schema_version = self.integer(Column::SchemaVersion, row).unwrap_or_default();
        out.repeat_id = self.integer(Column::RepeatId, row).unwrap_or_default();
        out.correct = self.correct(row);
        let locator = self.locator(row).unwrap_or(Locator::Line(0));
        out.source_line = match locator {
            Locator::Line(line) => Some(line),
            _ => None,
        };
        for (field, column) in [
            (F::RunId, Column::RunId),
            (F::Benchmark, Column::Benchmark),
            (F::Script, Column::Script),
            (F::Language, Column::Language),
            (F::QuestionId, Column::QuestionId),
            (F::VariantId, Column::VariantId),
            (F::Filter, Column::Filter),
            (F::IdentityScope, Column::IdentityScope),
            (F::Model, Column::Model),
            (F::RephrasingModel, Column::RephrasingModel),
            (F::Input, Column::Input),
            (F::Target, Column::Target),
            (F::Prediction, Column::Prediction),
            (F::Scores, Column::Scores),
            (F::Metrics, Column::Metrics),
            (F::Response, Column::Response),
            (F::SourcePath, Column::SourcePath),
        ] {
            out.push(field, self.text(column, row));
        }
        let (member, pointer) = match &locator {
            Locator::Member(member) => (Some(member.as_str()), None),
            Locator::Pointer(pointer) => (None, Some(pointer.as_str())),
            Locator::Line(_) => (None, None),
        };
        out.push(F::SourceMember, member);
        out.push(F::SourcePointer, pointer);
        out.push(F::Warnings, self.text(Column::Warnings, row));
        out.push(F::Extra, self.text(Column::Extra, row));
    }
}
