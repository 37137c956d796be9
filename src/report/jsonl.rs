//! The JSONL report: one line per item, `{"outcome", "identity", "baseline", "variant"}`,
//! where each side is that side's full normalized record (every schema-v1 field, its
//! `extra` producer fields and its archived `source` reference) or null when the side has
//! no record of the item. The raw files stay the authority; this is a derived view.

use serde::Serialize;
use std::io::{self, Write};

use super::Load;
use crate::compare::{Comparable, Comparison, Outcome};
use crate::record::{ItemIdentity, Record};

#[derive(Serialize)]
struct ItemLine<'a> {
    outcome: Outcome,
    identity: ItemIdentity,
    baseline: Option<&'a Record>,
    variant: Option<&'a Record>,
}

/// Writes one JSON line per item, in the comparison's item order.
pub fn render<R: Comparable>(
    comparison: &Comparison<R>,
    load: Load<'_, R>,
    out: &mut dyn Write,
) -> io::Result<()> {
    for item in &comparison.items {
        let item = item.load(&mut *load)?;
        let line = ItemLine {
            outcome: item.outcome(),
            identity: item.identity(),
            baseline: item.baseline(),
            variant: item.variant(),
        };
        serde_json::to_writer(&mut *out, &line)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}
