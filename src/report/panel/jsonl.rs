//! The panel's items as JSON Lines: one object per item, `{"identity", "sides", "known",
//! "correct", "point_biserial", "consensus_wrong", "negative_discrimination"}`, where
//! `identity` holds the six identity fields and `sides` maps each side (`run:variant`, in
//! the panel's order) to `true`, `false` or `null` (unknown, or no record).

use serde::Serialize;
use serde_json::{Map, Value};
use std::io::{self, Write};

use super::PanelItems;

#[derive(Serialize)]
struct Identity<'a> {
    benchmark: &'a str,
    language: Option<&'a str>,
    script: Option<&'a str>,
    question_id: &'a str,
    filter: &'a str,
    repeat_id: u64,
}

#[derive(Serialize)]
struct ItemLine<'a> {
    identity: Identity<'a>,
    sides: &'a Map<String, Value>,
    known: u64,
    correct: u64,
    point_biserial: Option<f64>,
    consensus_wrong: bool,
    negative_discrimination: bool,
}

/// Writes one JSON line per item, in item order.
pub fn render(items: &PanelItems<'_>, out: &mut dyn Write) -> io::Result<()> {
    let names: Vec<String> = (0..items.grid.sides())
        .map(|s| items.side_name(s))
        .collect();
    let mut sides = Map::new();
    for (index, item) in items.items.iter().enumerate() {
        sides.clear();
        for (side, name) in names.iter().enumerate() {
            let cell = items
                .grid
                .cell(side, index)
                .known()
                .map_or(Value::Null, Value::Bool);
            sides.insert(name.clone(), cell);
        }
        let stats = items.stats(index);
        let line = ItemLine {
            identity: Identity {
                benchmark: &item.benchmark,
                language: item.language.as_deref(),
                script: item.script.as_deref(),
                question_id: &item.question_id,
                filter: &item.filter,
                repeat_id: item.repeat_id,
            },
            sides: &sides,
            known: stats.known,
            correct: stats.correct,
            point_biserial: stats.point_biserial,
            consensus_wrong: stats.consensus_wrong,
            negative_discrimination: stats.negative_discrimination,
        };
        serde_json::to_writer(&mut *out, &line)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}
