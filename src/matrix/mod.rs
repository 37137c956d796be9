//! The response matrix of strict runs against one item bank: one row per (run, language,
//! script), one column per global item ID, each cell 1 (correct), 0 (wrong) or blank
//! (unknown or not observed). Shared global IDs keep one column across languages while
//! every language keeps its own row: observations are never pooled.
//!
//! Pure: the archive feeds observations in; rendering writes CSV (R `mirt`, Python
//! `girth`/pandas) or JSON Lines (`py-irt`) into any `impl Write`, plus an item sidecar
//! with each item's family, split and grouping identifiers. No filesystem access here.

use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{self, Write};

/// The record identity of an item instance: `(language, script, question_id)`.
pub type InstanceKey = (String, String, String);

/// One column: a global item and its identifiers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemColumn {
    pub id: String,
    pub family: Option<String>,
    pub split: Option<String>,
    pub groups: BTreeMap<String, String>,
}

/// Who answered a row: a run (model and checkpoint) in one language and script.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Subject {
    run_id: String,
    model: String,
    checkpoint: Option<String>,
    language: String,
    script: String,
}

impl Subject {
    /// The row's identifier in the JSON Lines layout (`run:language:script`).
    fn subject_id(&self) -> String {
        format!("{}:{}:{}", self.run_id, self.language, self.script)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cell {
    NotObserved,
    Unknown,
    Wrong,
    Correct,
}

impl Cell {
    fn of(correct: Option<bool>) -> Self {
        match correct {
            None => Cell::Unknown,
            Some(false) => Cell::Wrong,
            Some(true) => Cell::Correct,
        }
    }

    fn value(self) -> Option<u8> {
        match self {
            Cell::Correct => Some(1),
            Cell::Wrong => Some(0),
            Cell::NotObserved | Cell::Unknown => None,
        }
    }

    /// The CSV cell: `1`, `0` or empty.
    fn text(self) -> &'static str {
        match self {
            Cell::Correct => "1",
            Cell::Wrong => "0",
            Cell::NotObserved | Cell::Unknown => "",
        }
    }
}

/// The run a batch of observations belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRow {
    pub run_id: String,
    pub model: String,
    pub checkpoint: Option<String>,
}

/// An observation the matrix cannot hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatrixError {
    /// Two observations for one cell.
    #[error(
        "run {run:?} has two selected records for item {item:?} in language {language:?}, script {script:?} (the second at {source_ref})"
    )]
    Duplicate {
        run: String,
        item: String,
        language: String,
        script: String,
        source_ref: String,
    },
}

/// Collects observations into a matrix.
#[derive(Debug)]
pub struct MatrixBuilder {
    items: Vec<ItemColumn>,
    /// (language, script, question_id) → column.
    columns: HashMap<InstanceKey, usize>,
    runs: Vec<RunRow>,
    rows: HashMap<(usize, String, String), Vec<Cell>>,
    observed: u64,
}

/// What an observation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observed {
    /// It filled a cell.
    Cell,
    /// The identity is not an instance of the bank (nothing was recorded).
    NotInBank,
}

impl MatrixBuilder {
    /// A matrix over `items`; `instances` maps (language, script, question_id) to the
    /// index of its item in `items`.
    pub fn new(
        items: Vec<ItemColumn>,
        instances: impl IntoIterator<Item = (InstanceKey, usize)>,
    ) -> Self {
        Self {
            items,
            columns: instances.into_iter().collect(),
            runs: Vec::new(),
            rows: HashMap::new(),
            observed: 0,
        }
    }

    /// Starts the rows of one run; later observations belong to it.
    pub fn begin_run(&mut self, run: RunRow) {
        self.runs.push(run);
    }

    /// Records one selected record's correctness. `source_ref` locates the record for a
    /// duplicate message.
    pub fn observe(
        &mut self,
        language: &str,
        script: &str,
        question_id: &str,
        correct: Option<bool>,
        source_ref: &str,
    ) -> Result<Observed, MatrixError> {
        let key = (
            language.to_owned(),
            script.to_owned(),
            question_id.to_owned(),
        );
        let Some(&column) = self.columns.get(&key) else {
            return Ok(Observed::NotInBank);
        };
        let run = self.runs.len().saturating_sub(1);
        let width = self.items.len();
        let row = self
            .rows
            .entry((run, key.0, key.1))
            .or_insert_with(|| vec![Cell::NotObserved; width]);
        if row[column] != Cell::NotObserved {
            return Err(MatrixError::Duplicate {
                run: self
                    .runs
                    .get(run)
                    .map(|r| r.run_id.clone())
                    .unwrap_or_default(),
                item: self.items[column].id.clone(),
                language: language.to_owned(),
                script: script.to_owned(),
                source_ref: source_ref.to_owned(),
            });
        }
        row[column] = Cell::of(correct);
        self.observed += 1;
        Ok(Observed::Cell)
    }

    /// The finished matrix: rows in run order, then by language and script.
    pub fn finish(self) -> ResponseMatrix {
        let mut keyed: Vec<_> = self.rows.into_iter().collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        let rows = keyed
            .into_iter()
            .map(|((run, language, script), cells)| {
                let run = &self.runs[run];
                let subject = Subject {
                    run_id: run.run_id.clone(),
                    model: run.model.clone(),
                    checkpoint: run.checkpoint.clone(),
                    language,
                    script,
                };
                (subject, cells)
            })
            .collect();
        ResponseMatrix {
            items: self.items,
            rows,
            observed: self.observed,
        }
    }
}

/// A finished response matrix.
#[derive(Debug, Clone)]
pub struct ResponseMatrix {
    items: Vec<ItemColumn>,
    rows: Vec<(Subject, Vec<Cell>)>,
    observed: u64,
}

/// The columns before the item columns in the CSV layout.
pub const SUBJECT_COLUMNS: [&str; 5] = ["run_id", "model", "checkpoint", "language", "script"];

/// Counts for a summary line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatrixCounts {
    pub rows: usize,
    pub items: usize,
    /// Cells with a record (known or unknown correctness).
    pub observed: u64,
    /// Cells holding 1 or 0.
    pub known: u64,
}

impl ResponseMatrix {
    /// The row, item and cell counts.
    pub fn counts(&self) -> MatrixCounts {
        let known = self
            .rows
            .iter()
            .flat_map(|(_, cells)| cells)
            .filter(|c| c.value().is_some())
            .count() as u64;
        MatrixCounts {
            rows: self.rows.len(),
            items: self.items.len(),
            observed: self.observed,
            known,
        }
    }

    /// The group keys used by any item, sorted.
    fn group_keys(&self) -> Vec<&str> {
        let keys: BTreeSet<&str> = self
            .items
            .iter()
            .flat_map(|i| i.groups.keys().map(String::as_str))
            .collect();
        keys.into_iter().collect()
    }

    /// CSV: `run_id,model,checkpoint,language,script,<item IDs...>`, one row per subject,
    /// cells `1`, `0` or empty. Loads with R `read.csv(check.names = FALSE)` or pandas.
    pub fn write_csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut writer = csv::Writer::from_writer(out);
        writer.write_record(
            SUBJECT_COLUMNS
                .into_iter()
                .chain(self.items.iter().map(|i| i.id.as_str())),
        )?;
        for (subject, cells) in &self.rows {
            let fields = [
                subject.run_id.as_str(),
                &subject.model,
                subject.checkpoint.as_deref().unwrap_or(""),
                &subject.language,
                &subject.script,
            ]
            .into_iter()
            .chain(cells.iter().map(|c| c.text()));
            writer.write_record(fields)?;
        }
        writer.flush()
    }

    /// The item sidecar as CSV: `item_id,family,split,<group keys...>`, one row per item
    /// in column order; a missing identifier is empty.
    pub fn write_items_csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let keys = self.group_keys();
        let mut writer = csv::Writer::from_writer(out);
        writer.write_record(
            ["item_id", "family", "split"]
                .into_iter()
                .chain(keys.iter().copied()),
        )?;
        for item in &self.items {
            let fields = [
                item.id.as_str(),
                item.family.as_deref().unwrap_or(""),
                item.split.as_deref().unwrap_or(""),
            ]
            .into_iter()
            .chain(
                keys.iter()
                    .map(|k| item.groups.get(*k).map_or("", String::as_str)),
            );
            writer.write_record(fields)?;
        }
        writer.flush()
    }

    /// JSON Lines in py-irt's layout: per row `{"subject_id", "responses": {item: 1|0}}`
    /// (unknown cells left out), plus the subject's run, model, checkpoint, language and
    /// script.
    pub fn write_jsonl(&self, out: &mut dyn Write) -> io::Result<()> {
        for (subject, cells) in &self.rows {
            let mut responses = Map::new();
            for (item, cell) in self.items.iter().zip(cells) {
                if let Some(value) = cell.value() {
                    responses.insert(item.id.clone(), json!(value));
                }
            }
            let line = json!({
                "subject_id": subject.subject_id(),
                "run_id": subject.run_id,
                "model": subject.model,
                "checkpoint": subject.checkpoint,
                "language": subject.language,
                "script": subject.script,
                "responses": Value::Object(responses),
            });
            serde_json::to_writer(&mut *out, &line)?;
            out.write_all(b"\n")?;
        }
        out.flush()
    }

    /// The item sidecar as JSON Lines: `{"item_id", "family", "split", "groups"}` per item.
    pub fn write_items_jsonl(&self, out: &mut dyn Write) -> io::Result<()> {
        for item in &self.items {
            let line = json!({
                "item_id": item.id,
                "family": item.family,
                "split": item.split,
                "groups": item.groups,
            });
            serde_json::to_writer(&mut *out, &line)?;
            out.write_all(b"\n")?;
        }
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, split: &str, group: Option<(&str, &str)>) -> ItemColumn {
        ItemColumn {
            id: id.into(),
            family: Some("capitals".into()),
            split: Some(split.into()),
            groups: group
                .map(|(k, v)| BTreeMap::from([(k.to_owned(), v.to_owned())]))
                .unwrap_or_default(),
        }
    }

    fn instance(l: &str, s: &str, q: &str, column: usize) -> (InstanceKey, usize) {
        ((l.into(), s.into(), q.into()), column)
    }

    fn builder() -> MatrixBuilder {
        MatrixBuilder::new(
            vec![
                item("i1", "test", Some(("region", "europe"))),
                item("i2", "dev", None),
            ],
            [
                instance("en", "Latn", "q1", 0),
                instance("tr", "Latn", "q1-tr", 0),
                instance("en", "Latn", "q2", 1),
            ],
        )
    }

    fn run(id: &str) -> RunRow {
        RunRow {
            run_id: id.into(),
            model: "org/model, v2".into(),
            checkpoint: Some("step-1".into()),
        }
    }

    fn render(
        matrix: &ResponseMatrix,
        f: fn(&ResponseMatrix, &mut dyn Write) -> io::Result<()>,
    ) -> String {
        let mut out = Vec::new();
        f(matrix, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn languages_share_a_global_column_but_keep_separate_rows() {
        // "A response matrix preserves shared global IDs across languages while keeping
        // their separate observations ... It does not pool correctness across languages."
        let mut b = builder();
        b.begin_run(run("r1"));
        assert_eq!(
            b.observe("tr", "Latn", "q1-tr", Some(false), "a:1"),
            Ok(Observed::Cell)
        );
        assert_eq!(
            b.observe("en", "Latn", "q1", Some(true), "a:2"),
            Ok(Observed::Cell)
        );
        b.observe("en", "Latn", "q2", None, "a:3").unwrap();
        let matrix = b.finish();
        // The en row's i2 record has unknown correctness: blank, not 0.
        assert_eq!(
            render(&matrix, ResponseMatrix::write_csv),
            "run_id,model,checkpoint,language,script,i1,i2\n\
             r1,\"org/model, v2\",step-1,en,Latn,1,\n\
             r1,\"org/model, v2\",step-1,tr,Latn,0,\n"
        );
        assert_eq!(
            matrix.counts(),
            MatrixCounts {
                rows: 2,
                items: 2,
                observed: 3,
                known: 2
            }
        );
    }

    #[test]
    fn csv_fields_are_quoted_per_rfc_4180_when_needed() {
        // RFC 4180, 2.6 and 2.7: a field holding a comma, a double quote or a line break is
        // enclosed in double quotes, and a double quote inside it is doubled.
        let mut b = MatrixBuilder::new(
            vec![item("i,1", "test", None)],
            [instance("en", "Latn", "q1", 0)],
        );
        b.begin_run(RunRow {
            run_id: "r1".into(),
            model: "say \"hi\"\nbye".into(),
            checkpoint: None,
        });
        b.observe("en", "Latn", "q1", Some(true), "a:1").unwrap();
        assert_eq!(
            render(&b.finish(), ResponseMatrix::write_csv),
            "run_id,model,checkpoint,language,script,\"i,1\"\n\
             r1,\"say \"\"hi\"\"\nbye\",,en,Latn,1\n"
        );
    }

    #[test]
    fn the_jsonl_layout_is_py_irt_subjects_with_known_responses_only() {
        let mut b = builder();
        b.begin_run(run("r1"));
        b.observe("en", "Latn", "q1", Some(true), "a:1").unwrap();
        b.observe("en", "Latn", "q2", None, "a:2").unwrap();
        let lines = render(&b.finish(), ResponseMatrix::write_jsonl);
        let line: Value = serde_json::from_str(lines.trim_end()).unwrap();
        assert_eq!(line["subject_id"], "r1:en:Latn");
        assert_eq!(line["responses"], json!({"i1": 1}));
        assert_eq!(line["language"], "en");
    }

    #[test]
    fn the_item_sidecar_carries_family_split_and_groups() {
        let matrix = builder().finish();
        assert_eq!(
            render(&matrix, ResponseMatrix::write_items_csv),
            "item_id,family,split,region\ni1,capitals,test,europe\ni2,capitals,dev,\n"
        );
        let lines = render(&matrix, ResponseMatrix::write_items_jsonl);
        let first: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
        assert_eq!(
            first,
            json!({"item_id": "i1", "family": "capitals", "split": "test", "groups": {"region": "europe"}})
        );
    }

    #[test]
    fn two_records_for_one_cell_are_an_error_and_runs_keep_their_order() {
        let mut b = builder();
        b.begin_run(run("zeta"));
        b.observe("en", "Latn", "q1", Some(true), "a:1").unwrap();
        assert!(matches!(
            b.observe("en", "Latn", "q1", Some(false), "a:9"),
            Err(MatrixError::Duplicate { .. })
        ));
        b.begin_run(run("alpha"));
        b.observe("en", "Latn", "q1", Some(false), "b:1").unwrap();
        assert_eq!(
            b.observe("fr", "Latn", "q1", Some(true), "b:2"),
            Ok(Observed::NotInBank)
        );
        let csv = render(&b.finish(), ResponseMatrix::write_csv);
        let order: Vec<&str> = csv
            .lines()
            .skip(1)
            .map(|row| row.split(',').next().unwrap_or_default())
            .collect();
        assert_eq!(
            order,
            ["zeta", "alpha"],
            "rows follow the order the runs were given"
        );
    }
}
