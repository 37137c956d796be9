//! The JSONL report: one line per item, `{"outcome", "identity", "baseline", "variant"}`,
//! where each side is that side's full normalized record (every schema-v1 field, its
//! `extra` producer fields and its archived `source` reference) or null when the side has
//! no record of the item. The raw files stay the authority; this is a derived view.

use std::io::{self, Write};

use super::{Load, LoadedItem};
use crate::compare::Comparison;
use crate::record::StoredRecord;

/// Writes one JSON line per item, in the comparison's item order. Each side's record is
/// its stored JSON line, copied (the form `babel records` prints), not reparsed.
pub fn render(comparison: &Comparison, load: Load<'_>, out: &mut dyn Write) -> io::Result<()> {
    let mut line = Vec::with_capacity(1 << 16);
    for item in &comparison.items {
        let item = LoadedItem::load(item, &mut *load)?;
        line.clear();
        line.extend_from_slice(b"{\"outcome\":");
        serde_json::to_writer(&mut line, &item.outcome)?;
        line.extend_from_slice(b",\"identity\":");
        serde_json::to_writer(&mut line, &item.identity())?;
        line.extend_from_slice(b",\"baseline\":");
        side(item.baseline.as_ref(), &mut line);
        line.extend_from_slice(b",\"variant\":");
        side(item.variant.as_ref(), &mut line);
        line.extend_from_slice(b"}\n");
        out.write_all(&line)?;
    }
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
