//! A record as the records store holds it, field by field, its nested values left as
//! the canonical JSON text they are stored as: what a report copies instead of parsing a
//! record back into a tree. It owns the record's JSON line (the one form `babel records`
//! and the JSONL report print, field for field what serializing a [`Record`] writes) and
//! the frame a report's spill keeps records in.
//!
//! Nothing here checks the nested text: it is what the records file holds, and
//! `validate` is what proves that canonical.
//!
//! [`Record`]: super::Record

use serde_json::Value;

use super::{Identity, IdentityScope, Locator, Record, Source};
use crate::canonical_json::{CanonicalError, Json, write_string};
use crate::jsonl::{CanonicalScratch, check_canonical};

/// The text fields of a stored record, in the order it keeps them: plain text for the
/// text columns, canonical JSON for the nested values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredField {
    RunId,
    Benchmark,
    Script,
    Language,
    QuestionId,
    VariantId,
    Filter,
    IdentityScope,
    Model,
    RephrasingModel,
    Input,
    Target,
    Prediction,
    Scores,
    Metrics,
    Response,
    SourcePath,
    SourceMember,
    SourcePointer,
    Warnings,
    Extra,
}

/// How many [`StoredField`]s a record has.
pub const STORED_FIELDS: usize = 21;

/// One record's fields as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredRecord {
    text: String,
    /// Where each field ends in `text`.
    ends: [u32; STORED_FIELDS],
    /// Bit `i` set: field `i` is null.
    nulls: u32,
    /// How many fields are set so far.
    set: usize,
    pub schema_version: u64,
    pub repeat_id: u64,
    pub correct: Option<bool>,
    /// The one-based line of a record located by line.
    pub source_line: Option<u64>,
}

/// Checks a stored JSON column before it is read as canonical text ([`Json`], whose readers
/// trust that it is): the records store keeps what it was given, and only `validate`
/// proves it canonical. Keeps its buffers from column to column.
#[derive(Debug, Default)]
pub struct JsonChecker(CanonicalScratch);

impl JsonChecker {
    /// `text` as canonical JSON, or what is wrong with it (as the strict reader says it).
    pub fn check<'t>(&mut self, text: &'t str) -> Result<Json<'t>, String> {
        check_canonical(text, &mut self.0)?;
        Ok(Json::canonical(text))
    }
}

/// The bytes of a frame's header: its scalars, the null bits and the field ends.
const HEADER_BYTES: usize = 8 * 4 + 4 + 4 * STORED_FIELDS;

impl StoredRecord {
    /// Empties the record, keeping its buffer; fields are then set in order.
    pub fn clear(&mut self) {
        self.text.clear();
        self.nulls = 0;
        self.set = 0;
    }

    /// Sets the next field, in the order of [`StoredField`].
    pub fn push(&mut self, field: StoredField, value: Option<&str>) {
        debug_assert_eq!(field as usize, self.set, "stored fields are set in order");
        match value {
            Some(text) => self.text.push_str(text),
            None => self.nulls |= 1 << self.set,
        }
        self.ends[self.set] = self.text.len() as u32;
        self.set += 1;
    }

    /// A field's text, `None` for null.
    pub fn get(&self, field: StoredField) -> Option<&str> {
        let index = field as usize;
        if self.nulls & (1 << index) != 0 {
            return None;
        }
        let start = if index == 0 { 0 } else { self.ends[index - 1] };
        Some(&self.text[start as usize..self.ends[index] as usize])
    }

    /// The bytes of text the record holds, its fields together.
    pub fn text_len(&self) -> usize {
        self.text.len()
    }

    /// A required text field (" when a damaged file holds null: validate reports it).
    fn required(&self, field: StoredField) -> &str {
        self.get(field).unwrap_or_default()
    }

    /// The record's identity fields.
    pub fn identity(&self) -> Identity<'_> {
        Identity {
            benchmark: self.required(StoredField::Benchmark),
            language: self.get(StoredField::Language),
            script: self.get(StoredField::Script),
            question_id: self.required(StoredField::QuestionId),
            variant_id: self.required(StoredField::VariantId),
            filter: self.required(StoredField::Filter),
            repeat_id: self.repeat_id,
        }
    }

    /// Where the record came from in its raw file.
    pub fn locator(&self) -> Locator {
        match (
            self.get(StoredField::SourceMember),
            self.get(StoredField::SourcePointer),
        ) {
            (Some(member), _) => Locator::Member(member.to_owned()),
            (None, Some(pointer)) => Locator::Pointer(pointer.to_owned()),
            (None, None) => Locator::Line(self.source_line.unwrap_or_default()),
        }
    }

    /// Appends the record's JSON line (with its line feed): the fields of schema v1 in the
    /// order serializing a [`super::Record`] writes them.
    pub fn write_json_line(&self, out: &mut Vec<u8>) {
        let text = |out: &mut Vec<u8>, field: StoredField| match self.get(field) {
            Some(value) => write_string(value, out),
            None => out.extend_from_slice(b"null"),
        };
        let raw = |out: &mut Vec<u8>, field: StoredField| {
            out.extend_from_slice(self.get(field).unwrap_or("null").as_bytes())
        };
        let member = |out: &mut Vec<u8>, name: &str| {
            out.extend_from_slice(b",\"");
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
        };
        out.extend_from_slice(b"{\"schema_version\":");
        push_integer(self.schema_version, out);
        for (name, field) in [
            ("run_id", StoredField::RunId),
            ("benchmark", StoredField::Benchmark),
            ("script", StoredField::Script),
            ("language", StoredField::Language),
            ("question_id", StoredField::QuestionId),
            ("variant_id", StoredField::VariantId),
            ("filter", StoredField::Filter),
        ] {
            member(out, name);
            text(out, field);
        }
        member(out, "repeat_id");
        push_integer(self.repeat_id, out);
        for (name, field) in [
            ("identity_scope", StoredField::IdentityScope),
            ("model", StoredField::Model),
            ("rephrasing_model", StoredField::RephrasingModel),
        ] {
            member(out, name);
            text(out, field);
        }
        for (name, field) in [
            ("input", StoredField::Input),
            ("target", StoredField::Target),
            ("prediction", StoredField::Prediction),
        ] {
            member(out, name);
            raw(out, field);
        }
        out.extend_from_slice(match self.correct {
            Some(true) => b",\"correct\":true",
            Some(false) => b",\"correct\":false",
            None => b",\"correct\":null",
        });
        for (name, field) in [
            ("scores", StoredField::Scores),
            ("metrics", StoredField::Metrics),
            ("response", StoredField::Response),
        ] {
            member(out, name);
            raw(out, field);
        }
        out.extend_from_slice(b",\"source\":{\"path\":");
        text(out, StoredField::SourcePath);
        match (
            self.get(StoredField::SourceMember),
            self.get(StoredField::SourcePointer),
        ) {
            (Some(member), _) => {
                out.extend_from_slice(b",\"member\":");
                write_string(member, out);
            }
            (None, Some(pointer)) => {
                out.extend_from_slice(b",\"pointer\":");
                write_string(pointer, out);
            }
            (None, None) => {
                out.extend_from_slice(b",\"line\":");
                push_integer(self.source_line.unwrap_or_default(), out);
            }
        }
        out.extend_from_slice(b"},\"warnings\":");
        raw(out, StoredField::Warnings);
        out.extend_from_slice(b",\"extra\":");
        raw(out, StoredField::Extra);
        out.extend_from_slice(b"}\n");
    }

    /// The stored form of a record built in memory (what a records file would hold).
    pub fn of(record: &Record) -> Result<Self, CanonicalError> {
        use StoredField as F;
        let mut out = StoredRecord {
            schema_version: record.schema_version,
            repeat_id: record.repeat_id,
            correct: record.correct,
            source_line: record.source.line_number(),
            ..Default::default()
        };
        let json = |value: &Value| Json::of(value);
        let map = |map: &serde_json::Map<String, Value>| Json::of(&Value::Object(map.clone()));
        let warnings = Json::of(&Value::from(record.warnings.clone()))?;
        let texts = [
            (F::RunId, Some(record.run_id.as_str())),
            (F::Benchmark, Some(&record.benchmark)),
            (F::Script, record.script.as_deref()),
            (F::Language, record.language.as_deref()),
            (F::QuestionId, Some(&record.question_id)),
            (F::VariantId, Some(&record.variant_id)),
            (F::Filter, Some(&record.filter)),
            (F::IdentityScope, Some(record.identity_scope.as_str())),
            (F::Model, Some(&record.model)),
            (F::RephrasingModel, record.rephrasing_model.as_deref()),
        ];
        for (field, text) in texts {
            out.push(field, text);
        }
        out.push(F::Input, Some(json(&record.input)?.as_str()));
        out.push(F::Target, Some(json(&record.target)?.as_str()));
        out.push(F::Prediction, Some(json(&record.prediction)?.as_str()));
        out.push(F::Scores, Some(map(&record.scores)?.as_str()));
        out.push(F::Metrics, Some(map(&record.metrics)?.as_str()));
        out.push(F::Response, Some(json(&record.response)?.as_str()));
        out.push(F::SourcePath, Some(&record.source.path));
        let (member, pointer) = match &record.source.locator {
            Locator::Member(member) => (Some(member.as_str()), None),
            Locator::Pointer(pointer) => (None, Some(pointer.as_str())),
            Locator::Line(_) => (None, None),
        };
        out.push(F::SourceMember, member);
        out.push(F::SourcePointer, pointer);
        out.push(F::Warnings, Some(warnings.as_str()));
        out.push(F::Extra, Some(map(&record.extra)?.as_str()));
        Ok(out)
    }

    /// The record with its nested values parsed (for a renderer that reads inside them); an
    /// error names the field that does not hold what schema v1 says.
    pub fn to_record(&self) -> Result<Record, String> {
        use StoredField as F;
        let text = |field: StoredField| self.get(field).map(str::to_owned);
        let required = |field: StoredField, name: &str| match self.get(field) {
            Some(text) if !text.is_empty() => Ok(text.to_owned()),
            _ => Err(format!("field {name}: expected a non-empty string")),
        };
        let value = |field: StoredField, name: &str| -> Result<Value, String> {
            serde_json::from_str(self.get(field).unwrap_or("null"))
                .map_err(|e| format!("field {name}: {e}"))
        };
        let object = |field: StoredField, name: &str| match value(field, name)? {
            Value::Object(map) => Ok(map),
            _ => Err(format!("field {name}: expected a JSON object")),
        };
        let scope = self.get(F::IdentityScope).unwrap_or_default();
        let warnings: Vec<String> = serde_json::from_value(value(F::Warnings, "warnings")?)
            .map_err(|e| format!("field warnings: {e}"))?;
        Ok(Record {
            schema_version: self.schema_version,
            run_id: required(F::RunId, "run_id")?,
            benchmark: required(F::Benchmark, "benchmark")?,
            script: text(F::Script),
            language: text(F::Language),
            question_id: required(F::QuestionId, "question_id")?,
            variant_id: required(F::VariantId, "variant_id")?,
            filter: required(F::Filter, "filter")?,
            repeat_id: self.repeat_id,
            identity_scope: IdentityScope::parse(scope)
                .ok_or_else(|| format!("field identity_scope: {scope:?}"))?,
            model: required(F::Model, "model")?,
            rephrasing_model: text(F::RephrasingModel),
            input: value(F::Input, "input")?,
            target: value(F::Target, "target")?,
            prediction: value(F::Prediction, "prediction")?,
            correct: self.correct,
            scores: object(F::Scores, "scores")?,
            metrics: object(F::Metrics, "metrics")?,
            response: value(F::Response, "response")?,
            source: Source {
                path: required(F::SourcePath, "source.path")?,
                locator: self.locator(),
            },
            warnings,
            extra: object(F::Extra, "extra")?,
        })
    }

    /// Appends the record's frame: its header, then its text.
    pub fn encode(&self, out: &mut Vec<u8>) {
        debug_assert_eq!(self.set, STORED_FIELDS, "every field is set");
        let option = |value: Option<u64>| value.map_or(u64::MAX, |v| v);
        let correct = match self.correct {
            None => 0,
            Some(false) => 1,
            Some(true) => 2,
        };
        for scalar in [
            self.schema_version,
            self.repeat_id,
            correct,
            option(self.source_line),
        ] {
            out.extend_from_slice(&scalar.to_le_bytes());
        }
        out.extend_from_slice(&self.nulls.to_le_bytes());
        for end in self.ends {
            out.extend_from_slice(&end.to_le_bytes());
        }
        out.extend_from_slice(self.text.as_bytes());
    }

    /// Reads a frame [`StoredRecord::encode`] wrote into `self`; an error says what is
    /// wrong with one that it did not.
    pub fn decode(&mut self, frame: &[u8]) -> Result<(), String> {
        if frame.len() < HEADER_BYTES {
            return Err(format!("a frame of {} bytes is too short", frame.len()));
        }
        let (header, text) = frame.split_at(HEADER_BYTES);
        let word = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().expect("8"));
        let half = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().expect("4"));
        self.schema_version = word(0);
        self.repeat_id = word(8);
        self.correct = match word(16) {
            0 => None,
            1 => Some(false),
            2 => Some(true),
            other => return Err(format!("correct is coded {other}")),
        };
        self.source_line = match word(24) {
            u64::MAX => None,
            line => Some(line),
        };
        self.nulls = half(32);
        let mut start = 0;
        for (index, end) in self.ends.iter_mut().enumerate() {
            *end = half(36 + 4 * index);
            if *end < start || *end as usize > text.len() {
                return Err(format!("field {index} ends out of order"));
            }
            start = *end;
        }
        let text = simdutf8::basic::from_utf8(text).map_err(|_| "the text is not UTF-8")?;
        if start as usize != text.len()
            || self
                .ends
                .iter()
                .any(|&end| !text.is_char_boundary(end as usize))
        {
            return Err("the fields do not cover the text".into());
        }
        self.text.clear();
        self.text.push_str(text);
        self.set = STORED_FIELDS;
        Ok(())
    }
}

/// Appends an integer's decimal digits (without the allocation of `to_string`: this runs
/// several times per record of `babel records`, and once more for a bundle's row root).
pub(crate) fn push_integer(mut value: u64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record() -> Record {
        let line = json!({
            "schema_version": 1, "run_id": "r1", "benchmark": "b", "script": null,
            "language": "en", "question_id": "q\"1", "variant_id": "original", "filter": "none",
            "repeat_id": 2, "identity_scope": "stable", "model": "m", "rephrasing_model": null,
            "input": {"question": "Q?", "n": 1.5}, "target": "A", "prediction": null,
            "correct": false, "scores": {}, "metrics": {"acc": 0}, "response": ["x"],
            "source": {"path": "runs/r1/raw/0001-a.jsonl", "member": "samples/q1.json"},
            "warnings": ["w"], "extra": {"z": 1, "a": [true]}
        });
        Record::from_json(line.as_object().unwrap().clone()).unwrap()
    }

    #[test]
    fn the_json_line_is_what_serializing_the_record_writes() {
        // Nested values are stored canonical (keys sorted): the record read back from
        // them serializes as the line must read.
        let stored = StoredRecord::of(&record()).unwrap();
        let mut line = Vec::new();
        stored.write_json_line(&mut line);
        let mut expected = serde_json::to_vec(&stored.to_record().unwrap()).unwrap();
        expected.push(b'\n');
        assert_eq!(
            String::from_utf8(line).unwrap(),
            String::from_utf8(expected).unwrap()
        );
    }

    #[test]
    fn integers_are_written_in_decimal() {
        for value in [0, 7, 10, 1234567890, u64::MAX] {
            let mut out = Vec::new();
            push_integer(value, &mut out);
            assert_eq!(out, value.to_string().into_bytes());
        }
    }

    #[test]
    fn a_frame_reads_back_as_the_same_record_and_a_damaged_one_is_refused() {
        let stored = StoredRecord::of(&record()).unwrap();
        let mut frame = Vec::new();
        stored.encode(&mut frame);
        let mut back = StoredRecord::default();
        back.decode(&frame).unwrap();
        assert_eq!(back, stored);
        assert_eq!(back.to_record().unwrap(), record());
        assert_eq!(back.identity(), record().identity());
        assert!(
            back.decode(&frame[..HEADER_BYTES - 1]).is_err(),
            "too short"
        );
        let mut bad_end = frame.clone();
        bad_end[36..40].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(back.decode(&bad_end).is_err(), "a field beyond the text");
        let mut bad_correct = frame.clone();
        bad_correct[16] = 7;
        assert!(back.decode(&bad_correct).is_err(), "correct coded 7");
    }
}
