//! The panel's items as Apache Parquet, one row per item, for DuckDB and pandas: the
//! identity columns (`benchmark`, `question_id`, `filter` strings; `language`, `script`
//! nullable strings; `repeat_id` unsigned), one nullable BOOLEAN column per side named
//! `run:variant` (null: unknown, or no record), then `known` and `correct` (unsigned),
//! `point_biserial` (nullable DOUBLE), `consensus_wrong` and `negative_discrimination`
//! (BOOLEAN). zstd-compressed; no Arrow schema is embedded, so every reader sees plain
//! columns.

use std::io::{self, Write};
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::PanelItems;

/// Items per row group.
const ROWS_PER_BATCH: usize = 65_536;

fn schema(items: &PanelItems<'_>) -> Arc<Schema> {
    let mut fields = vec![
        Field::new("benchmark", DataType::Utf8, false),
        Field::new("language", DataType::Utf8, true),
        Field::new("script", DataType::Utf8, true),
        Field::new("question_id", DataType::Utf8, false),
        Field::new("filter", DataType::Utf8, false),
        Field::new("repeat_id", DataType::UInt64, false),
    ];
    fields.extend(
        (0..items.grid.sides()).map(|s| Field::new(items.side_name(s), DataType::Boolean, true)),
    );
    fields.extend([
        Field::new("known", DataType::UInt64, false),
        Field::new("correct", DataType::UInt64, false),
        Field::new("point_biserial", DataType::Float64, true),
        Field::new("consensus_wrong", DataType::Boolean, false),
        Field::new("negative_discrimination", DataType::Boolean, false),
    ]);
    Arc::new(Schema::new(fields))
}

fn batch(
    items: &PanelItems<'_>,
    schema: &Arc<Schema>,
    range: std::ops::Range<usize>,
) -> io::Result<RecordBatch> {
    let rows = &items.items[range.clone()];
    let text = |f: &dyn Fn(&super::ItemRow) -> Option<&str>| -> ArrayRef {
        Arc::new(StringArray::from(rows.iter().map(f).collect::<Vec<_>>()))
    };
    let mut columns: Vec<ArrayRef> = vec![
        text(&|r| Some(r.benchmark.as_str())),
        text(&|r| r.language.as_deref()),
        text(&|r| r.script.as_deref()),
        text(&|r| Some(r.question_id.as_str())),
        text(&|r| Some(r.filter.as_str())),
        Arc::new(UInt64Array::from(
            rows.iter().map(|r| r.repeat_id).collect::<Vec<_>>(),
        )),
    ];
    for side in 0..items.grid.sides() {
        let cells: Vec<Option<bool>> = range
            .clone()
            .map(|item| items.grid.cell(side, item).known())
            .collect();
        columns.push(Arc::new(BooleanArray::from(cells)));
    }
    let stats = &items.summary.item_stats[range];
    columns.push(Arc::new(UInt64Array::from(
        stats.iter().map(|s| s.known).collect::<Vec<_>>(),
    )));
    columns.push(Arc::new(UInt64Array::from(
        stats.iter().map(|s| s.correct).collect::<Vec<_>>(),
    )));
    columns.push(Arc::new(Float64Array::from(
        stats.iter().map(|s| s.point_biserial).collect::<Vec<_>>(),
    )));
    columns.push(Arc::new(BooleanArray::from(
        stats
            .iter()
            .map(|s| Some(s.consensus_wrong))
            .collect::<Vec<_>>(),
    )));
    columns.push(Arc::new(BooleanArray::from(
        stats
            .iter()
            .map(|s| Some(s.negative_discrimination))
            .collect::<Vec<_>>(),
    )));
    RecordBatch::try_new(Arc::clone(schema), columns).map_err(io::Error::other)
}

/// Writes the Parquet file (built in memory: a panel's items are small beside its records).
pub fn render(items: &PanelItems<'_>, out: &mut dyn Write) -> io::Result<()> {
    let schema = schema(items);
    let properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(3).map_err(io::Error::other)?,
        ))
        .set_max_row_group_row_count(Some(ROWS_PER_BATCH))
        .build();
    let options = ArrowWriterOptions::new()
        .with_properties(properties)
        .with_skip_arrow_metadata(true);
    let mut writer = ArrowWriter::try_new_with_options(Vec::new(), Arc::clone(&schema), options)
        .map_err(io::Error::other)?;
    let mut start = 0;
    while start < items.items.len() {
        let end = (start + ROWS_PER_BATCH).min(items.items.len());
        writer
            .write(&batch(items, &schema, start..end)?)
            .map_err(io::Error::other)?;
        start = end;
    }
    let bytes = writer.into_inner().map_err(io::Error::other)?;
    out.write_all(&bytes)
}
