//! The records store: the one reader and writer of `runs/<run>/records/<seq>.parquet`, the
//! normalized schema-v1 records of one import as an Apache Parquet file that babel,
//! DuckDB, pandas, Spark and the Hub's viewer all read.
//!
//! Identity fields, `correct`, `source` and the other scalars are typed columns; every
//! nested value (`input`, `target`, `prediction`, `scores`, `metrics`, `response`,
//! `warnings`, `extra`) is a column of RFC 8785 canonical JSON text, so nothing is lost or
//! reinterpreted by the columnar encoding. [`COLUMNS`] is the exact schema; FORMAT.md
//! documents it. Files are zstd-compressed and deterministic: the same records give the same
//! bytes (no clock, host or random value reaches the file; row groups are cut by size).
//!
//! Writing ([`RecordsWriter`], or [`ThreadedWriter`] on a thread of its own) takes records
//! already encoded, a batch at a time ([`EncodedBatch`]); reading ([`RecordsFile`]) projects
//! only the columns a caller asks for ([`Columns`]) and decodes a full
//! [`crate::record::Record`] strictly on demand. The store knows nothing of runs, manifests
//! or transactions: the archive hands it paths and writers.

mod read;
mod text_chunk;
mod write;

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};

pub use read::{Batch, RecordsFile, RowError};
pub use write::{EncodedBatch, RecordsWriter, ThreadedWriter};

/// The key-value metadata entry every records file carries: this store's schema version.
pub const SCHEMA_KEY: &str = "babel.records_schema";
/// The records schema version this build writes. It also reads version 1, which lacks
/// the last two columns (`source_member`, `source_pointer`) and has `source_line`
/// required: every source was a line then.
pub const SCHEMA_VALUE: &str = "2";
/// The schema versions this build reads, with their number of columns.
pub const READABLE: [(&str, usize); 2] = [("1", COLUMNS.len() - 2), ("2", COLUMNS.len())];

/// One column of a records file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    SchemaVersion,
    RunId,
    Benchmark,
    Script,
    Language,
    QuestionId,
    VariantId,
    Filter,
    RepeatId,
    IdentityScope,
    Model,
    RephrasingModel,
    Input,
    Target,
    Prediction,
    Correct,
    Scores,
    Metrics,
    Response,
    SourcePath,
    SourceLine,
    Warnings,
    Extra,
    SourceMember,
    SourcePointer,
}

/// How a column is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// UTF-8 text, few distinct values (read back dictionary-encoded).
    Label { nullable: bool },
    /// UTF-8 text, mostly distinct values.
    Text,
    /// RFC 8785 canonical JSON text of a nested value.
    Json,
    /// Unsigned 64-bit integer.
    Integer { nullable: bool },
    /// Boolean or null.
    Boolean,
}

/// The columns of a records file, in file order, with their kinds.
pub const COLUMNS: [(Column, &str, Kind); 25] = [
    (
        Column::SchemaVersion,
        "schema_version",
        Kind::Integer { nullable: false },
    ),
    (Column::RunId, "run_id", Kind::Label { nullable: false }),
    (
        Column::Benchmark,
        "benchmark",
        Kind::Label { nullable: false },
    ),
    (Column::Script, "script", Kind::Label { nullable: true }),
    (Column::Language, "language", Kind::Label { nullable: true }),
    (Column::QuestionId, "question_id", Kind::Text),
    (
        Column::VariantId,
        "variant_id",
        Kind::Label { nullable: false },
    ),
    (Column::Filter, "filter", Kind::Label { nullable: false }),
    (
        Column::RepeatId,
        "repeat_id",
        Kind::Integer { nullable: false },
    ),
    (
        Column::IdentityScope,
        "identity_scope",
        Kind::Label { nullable: false },
    ),
    (Column::Model, "model", Kind::Label { nullable: false }),
    (
        Column::RephrasingModel,
        "rephrasing_model",
        Kind::Label { nullable: true },
    ),
    (Column::Input, "input", Kind::Json),
    (Column::Target, "target", Kind::Json),
    (Column::Prediction, "prediction", Kind::Json),
    (Column::Correct, "correct", Kind::Boolean),
    (Column::Scores, "scores", Kind::Json),
    (Column::Metrics, "metrics", Kind::Json),
    (Column::Response, "response", Kind::Json),
    (
        Column::SourcePath,
        "source_path",
        Kind::Label { nullable: false },
    ),
    (
        Column::SourceLine,
        "source_line",
        Kind::Integer { nullable: true },
    ),
    (Column::Warnings, "warnings", Kind::Json),
    (Column::Extra, "extra", Kind::Json),
    (
        Column::SourceMember,
        "source_member",
        Kind::Label { nullable: true },
    ),
    (
        Column::SourcePointer,
        "source_pointer",
        Kind::Label { nullable: true },
    ),
];

impl Column {
    /// The column's position in the file (the variants are declared in file order).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The column's name in the file.
    pub fn name(self) -> &'static str {
        COLUMNS[self.index()].1
    }

    /// How the column is stored.
    pub fn kind(self) -> Kind {
        COLUMNS[self.index()].2
    }
}

/// A set of columns to read: a projection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Columns(u32);

impl Columns {
    /// Every column: a full record.
    pub const ALL: Columns = Columns((1 << COLUMNS.len()) - 1);

    /// The identity fields: the record key within a run.
    pub const IDENTITY: Columns = Columns::of(&[
        Column::Benchmark,
        Column::Language,
        Column::Script,
        Column::QuestionId,
        Column::VariantId,
        Column::Filter,
        Column::RepeatId,
    ]);

    /// The identity fields, `identity_scope` and `correct`: what a join needs.
    pub const JOIN: Columns =
        Columns::IDENTITY.with(Columns::of(&[Column::IdentityScope, Column::Correct]));

    /// Where a record came from: its source path and locator.
    pub const SOURCE: Columns = Columns::of(&[
        Column::SourcePath,
        Column::SourceLine,
        Column::SourceMember,
        Column::SourcePointer,
    ]);

    /// The record key within a run and its source: what an import's duplicate check
    /// needs of the records already stored.
    pub const KEY: Columns = Columns::IDENTITY.with(Columns::SOURCE);

    /// A set of the given columns.
    pub const fn of(columns: &[Column]) -> Columns {
        let mut bits = 0u32;
        let mut i = 0;
        while i < columns.len() {
            bits |= 1 << columns[i] as u32;
            i += 1;
        }
        Columns(bits)
    }

    /// This set and `other`.
    pub const fn with(self, other: Columns) -> Columns {
        Columns(self.0 | other.0)
    }

    /// The columns in both sets.
    pub const fn and(self, other: Columns) -> Columns {
        Columns(self.0 & other.0)
    }

    /// The first `count` columns in file order.
    pub const fn first(count: usize) -> Columns {
        Columns((1u32 << count) - 1)
    }

    /// True when `column` is in the set.
    pub fn contains(self, column: Column) -> bool {
        self.0 & (1 << column as u32) != 0
    }

    /// The columns of the set, in file order.
    pub fn iter(self) -> impl Iterator<Item = Column> {
        COLUMNS
            .iter()
            .map(|(column, _, _)| *column)
            .filter(move |column| self.contains(*column))
    }
}

fn field(name: &str, kind: Kind, dictionary: bool) -> Field {
    match kind {
        Kind::Label { nullable } if dictionary => Field::new(
            name,
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            nullable,
        ),
        Kind::Label { nullable } => Field::new(name, DataType::Utf8, nullable),
        Kind::Text | Kind::Json => Field::new(name, DataType::Utf8, false),
        Kind::Integer { nullable } => Field::new(name, DataType::UInt64, nullable),
        Kind::Boolean => Field::new(name, DataType::Boolean, true),
    }
}

/// The Arrow schema of a records file as written: plain UTF-8 text (the Parquet encoder
/// dictionary-encodes the label columns itself), so every reader sees strings.
pub fn file_schema() -> Arc<Schema> {
    schema_of(SCHEMA_VALUE, false)
}

/// The Arrow schema of a records file of schema `version` (one of [`READABLE`]), as
/// written (`dictionary` false) or as babel reads it (`dictionary` true: required label
/// columns as dictionaries, so a million records hold each benchmark or filter name once
/// per page, not once per row). Nullable labels (language, script, rephrasing model, the
/// source member and pointer) are read as plain text: the Parquet reader takes a slow path
/// for a dictionary column that is all null (150 ms per million rows, against 1 ms as
/// text), and these are often all null.
fn schema_of(version: &str, dictionary: bool) -> Arc<Schema> {
    let count = READABLE
        .iter()
        .find(|(v, _)| *v == version)
        .map_or(COLUMNS.len(), |(_, count)| *count);
    Arc::new(Schema::new(
        COLUMNS[..count]
            .iter()
            .map(|(column, name, kind)| {
                // Version 1 had only line locators: source_line was required.
                let kind = match (version, column) {
                    ("1", Column::SourceLine) => Kind::Integer { nullable: false },
                    _ => *kind,
                };
                field(
                    name,
                    kind,
                    dictionary && matches!(kind, Kind::Label { nullable: false }),
                )
            })
            .collect::<Vec<_>>(),
    ))
}

#[cfg(test)]
mod tests;
