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
//! Writing ([`RecordsWriter`]) takes records already encoded on worker threads
//! ([`EncodedRecord`]); reading ([`RecordsFile`]) projects only the columns a caller asks
//! for ([`Columns`]) and decodes a full [`Record`] strictly on demand. The store knows
//! nothing of runs, manifests or transactions: the archive hands it paths and writers.

mod read;
mod write;

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};

pub use read::{Batch, RecordsFile, RowError};
pub use write::{EncodedRecord, RecordsWriter, ThreadedWriter};

/// The key-value metadata entry every records file carries: this store's schema version.
pub const SCHEMA_KEY: &str = "babel.records_schema";
/// The records schema version this build writes and reads.
pub const SCHEMA_VALUE: &str = "1";

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
pub const COLUMNS: [(Column, &str, Kind); 23] = [
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
        Kind::Integer { nullable: false },
    ),
    (Column::Warnings, "warnings", Kind::Json),
    (Column::Extra, "extra", Kind::Json),
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

    /// The identity fields, `identity_scope` and `correct`: what a join needs.
    pub const JOIN: Columns = Columns::of(&[
        Column::Benchmark,
        Column::Language,
        Column::Script,
        Column::QuestionId,
        Column::VariantId,
        Column::Filter,
        Column::RepeatId,
        Column::IdentityScope,
        Column::Correct,
    ]);

    /// The record key within a run and its source line: what an import's duplicate
    /// check needs of the records already stored.
    pub const KEY: Columns = Columns::of(&[
        Column::Benchmark,
        Column::Language,
        Column::Script,
        Column::QuestionId,
        Column::VariantId,
        Column::Filter,
        Column::RepeatId,
        Column::SourceLine,
    ]);

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
    Arc::new(Schema::new(
        COLUMNS
            .iter()
            .map(|(_, name, kind)| field(name, *kind, false))
            .collect::<Vec<_>>(),
    ))
}

/// The same schema as babel reads it: required label columns as dictionaries, so a
/// million records hold each benchmark or filter name once per page, not once per row.
/// Nullable labels (language, script, rephrasing model) are read as plain text: the
/// Parquet reader takes a slow path for a dictionary column that is all null (150 ms per
/// million rows, against 1 ms as text), and these are often all null.
fn read_schema() -> Arc<Schema> {
    Arc::new(Schema::new(
        COLUMNS
            .iter()
            .map(|(_, name, kind)| {
                field(name, *kind, matches!(kind, Kind::Label { nullable: false }))
            })
            .collect::<Vec<_>>(),
    ))
}

#[cfg(test)]
mod tests;
