//! The JSONL report: one line per item, `{"outcome", "identity", "baseline", "variant"}`,
//! where each side is that side's full normalized record (every schema-v1 field, its
//! `extra` producer fields and its archived `source` reference) or null when the side has
//! no record of the item. The raw files stay the authority; this is a derived view.

use std::io::{self, Write};

use super::{Load, LoadedItem};
use crate::compare::Comparison;
use crate::record::StoredRecord;

/// Writes one JSON line per item, in the comparison's item order (items are loaded and
/// written on the workers, [`super::write_rows`]). Each side's record is its stored JSON
/// line, copied (the form `babel records` prints), not reparsed.
pub fn render(comparison: &Comparison, load: Load<'_>, out: &mut dyn Write) -> io::Result<()> {
    super::write_rows(&comparison.items, load, out, |items| {
        let mut lines = Vec::with_capacity(items.len() * 1024);
        for item in items {
            line(&LoadedItem::load(item, load)?, &mut lines)?;
        }
        Ok(lines)
    })
}

/// Appends an item's line to `out`.
fn line(item: &LoadedItem, out: &mut Vec<u8>) -> io::Result<()> {
    out.extend_from_slice(b"{\"outcome\":");
    serde_json::to_writer(&mut *out, &item.outcome)?;
    out.extend_from_slice(b",\"identity\":");
    serde_json::to_writer(&mut *out, &item.identity())?;
    out.extend_from_slice(b",\"baseline\":");
    side(item.baseline.as_ref(), out);
    out.extend_from_slice(b",\"variant\":");
    side(item.variant.as_ref(), out);
    out.extend_from_slice(b"}\n");
    Ok(())
}

/// A side's record as its JSON object, or null.
fn side(record: Option<&StoredRecord>, out: &mut Vec<u8>) {
    match record {
        Some(record) => {
            record.write_json_line(out);
            out.pop();
        }
        None => out.extend_from_slice(b"null"),
    }
}
