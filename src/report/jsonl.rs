//! The JSONL report: one line per item, `{"outcome", "identity", "baseline", "variant"}`,
//! where each side is that side's full normalized record (every schema-v1 field, its
//! `extra` producer fields and its archived `source` reference) or null when the side has
//! no record of the item. The raw files stay the authority; this is a derived view.

use serde::Serialize;
use std::io::{self, Write};

use super::{Load, LoadedItem};
use crate::compare::{Comparison, Outcome};
use crate::record::{Identity, Record};

#[derive(Serialize)]
struct ItemLine<'a> {
    outcome: Outcome,
    identity: Identity<'a>,
    baseline: Option<&'a Record>,
    variant: Option<&'a Record>,
}

/// Writes one JSON line per item, in the comparison's item order.
pub fn render(comparison: &Comparison, load: Load<'_>, out: &mut dyn Write) -> io::Result<()> {
    for item in &comparison.items {
        let item = LoadedItem::load(item, &mut *load)?;
        let line = ItemLine {
            outcome: item.outcome,
            identity: item.identity(),
            baseline: item.baseline.as_ref(),
            variant: item.variant.as_ref(),
        };
        serde_json::to_writer(&mut *out, &line)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}
