//! A record as the HTML report's detail chunks and index hold it, written from its stored
//! canonical text instead of a tree: each JSON column is checked once with the streaming
//! reader (canonical text reads back as itself), then copied, every string value of
//! [`LONG_STRING`] bytes or more replaced by its number in the chunk's [`Strings`].
//!
//! Owns the side array the page's script reads (`SIDE_FIELDS` in `templates/report.js`)
//! and the two references a chunk holds: `{"\u0000": n}` for the chunk's string `n`, and
//! `{"\u0000": [value]}` for a data object whose only key is U+0000, so the page can
//! always tell them apart. Knows nothing of chunks, the index or compression.

use std::borrow::Cow;
use std::io;

use crate::canonical_json::{Json, JsonKind, write_string};
use crate::record::{JsonChecker, StoredField, StoredRecord};

/// A string at least this long is stored once per chunk and referenced (few-shot prompts
/// repeat in every choice's request, and across neighbouring items).
pub const LONG_STRING: usize = 128;

/// How an object whose first key is U+0000 starts in canonical text.
const NUL_KEY: &str = "{\"\\u0000\":";

/// Long strings of one chunk, each stored once.
pub type Strings = super::Names;

/// The JSON columns of a stored record, checked: canonical JSON, with `scores`, `metrics`
/// and `extra` objects and `warnings` an array of strings, as schema v1 says.
pub struct Checked<'r> {
    pub record: &'r StoredRecord,
    pub input: Json<'r>,
    pub target: Json<'r>,
    pub prediction: Json<'r>,
    pub response: Json<'r>,
    scores: Json<'r>,
    metrics: Json<'r>,
    warnings: Json<'r>,
    extra: Json<'r>,
}

/// Checks `record`'s JSON columns; an error names the record and the field.
pub fn check<'r>(record: &'r StoredRecord, checker: &mut JsonChecker) -> io::Result<Checked<'r>> {
    let failed = |message: String| {
        io::Error::other(format!(
            "the stored record {} cannot be read: {message} (the records file was changed \
             outside babel: `babel validate` names every damaged record)",
            record.identity().record_key(false)
        ))
    };
    let mut column = |field: StoredField, name: &str, kind: Option<JsonKind>| {
        let text = record.get(field).unwrap_or("null");
        let json = checker
            .check(text)
            .map_err(|e| failed(format!("field {name}: {e}")))?;
        match kind {
            Some(kind) if json.kind() != kind => Err(failed(format!(
                "field {name}: expected a JSON {}",
                if kind == JsonKind::Object {
                    "object"
                } else {
                    "array"
                }
            ))),
            _ => Ok(json),
        }
    };
    let object = Some(JsonKind::Object);
    let checked = Checked {
        record,
        input: column(StoredField::Input, "input", None)?,
        target: column(StoredField::Target, "target", None)?,
        prediction: column(StoredField::Prediction, "prediction", None)?,
        response: column(StoredField::Response, "response", None)?,
        scores: column(StoredField::Scores, "scores", object)?,
        metrics: column(StoredField::Metrics, "metrics", object)?,
        warnings: column(StoredField::Warnings, "warnings", Some(JsonKind::Array))?,
        extra: column(StoredField::Extra, "extra", object)?,
    };
    let strings = checked.warnings.elements().unwrap_or_default();
    if strings
        .iter()
        .any(|warning| warning.kind() != JsonKind::String)
    {
        return Err(failed(
            "field warnings: expected an array of strings".into(),
        ));
    }
    Ok(checked)
}

/// One side of an item in a detail chunk: an array in the order of `SIDE_FIELDS` in
/// report.js, or null when the side has no record. `source` is the number of its source
/// path in the page's table.
pub fn write_side(
    side: Option<&Checked<'_>>,
    source: Option<usize>,
    strings: &mut Strings,
    out: &mut Vec<u8>,
) {
    let (Some(side), Some(source)) = (side, source) else {
        out.extend_from_slice(b"null");
        return;
    };
    let record = side.record;
    out.push(b'[');
    out.extend_from_slice(match record.correct {
        Some(true) => b"true",
        Some(false) => b"false",
        None => b"null",
    });
    for value in [
        &side.input,
        &side.target,
        &side.prediction,
        &side.response,
        &side.scores,
        &side.metrics,
        &side.warnings,
    ] {
        out.push(b',');
        write_interned(value.as_str(), strings, out);
    }
    out.extend_from_slice(format!(",{source},").as_bytes());
    write_string(&record.locator().suffix(), out);
    out.push(b',');
    match record.get(StoredField::RephrasingModel) {
        Some(model) => write_string(model, out),
        None => out.extend_from_slice(b"null"),
    }
    out.push(b',');
    write_interned(side.extra.as_str(), strings, out);
    out.push(b']');
}

/// An open array or object while [`write_interned`] walks.
enum Open {
    Array,
    /// An object; `key_next` when the next string is a key.
    Object {
        key_next: bool,
    },
    /// An object whose first key is U+0000: its value starts at `value_at` in the output,
    /// where a `[` goes if the object ends after it.
    NulKey {
        value_at: usize,
    },
}

/// Writes the canonical JSON `text` with every string value of [`LONG_STRING`] bytes or
/// more as `{"\u0000": n}` (its number in `strings`) and an object whose only key is U+0000
/// as `{"\u0000": [value]}`; keys and everything else as they are.
pub fn write_interned(text: &str, strings: &mut Strings, out: &mut Vec<u8>) {
    let bytes = text.as_bytes();
    let mut open: Vec<Open> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                let end = string_end(bytes, at);
                let token = &text[at..end];
                match open.last_mut() {
                    Some(Open::Object { key_next }) if *key_next => {
                        *key_next = false;
                        out.extend_from_slice(token.as_bytes());
                    }
                    _ => write_string_value(token, strings, out),
                }
                at = end;
            }
            b'{' if text[at..].starts_with(NUL_KEY) => {
                out.extend_from_slice(NUL_KEY.as_bytes());
                open.push(Open::NulKey {
                    value_at: out.len(),
                });
                at += NUL_KEY.len();
            }
            b'{' | b'[' => {
                out.push(bytes[at]);
                open.push(if bytes[at] == b'{' {
                    Open::Object { key_next: true }
                } else {
                    Open::Array
                });
                at += 1;
            }
            b':' => {
                out.push(b':');
                at += 1;
            }
            b',' => {
                out.push(b',');
                match open.last_mut() {
                    Some(Open::Object { key_next }) => *key_next = true,
                    Some(top @ Open::NulKey { .. }) => *top = Open::Object { key_next: true },
                    _ => {}
                }
                at += 1;
            }
            b'}' | b']' => {
                if let Some(Open::NulKey { value_at }) = open.last() {
                    out.insert(*value_at, b'[');
                    out.push(b']');
                }
                out.push(bytes[at]);
                open.pop();
                at += 1;
            }
            _ => {
                let end = bytes[at..]
                    .iter()
                    .position(|b| matches!(b, b',' | b'}' | b']'))
                    .map_or(bytes.len(), |offset| at + offset);
                out.extend_from_slice(&bytes[at..end]);
                at = end;
            }
        }
    }
}

/// A string value: as it is, or its number in `strings` when it is long.
fn write_string_value(token: &str, strings: &mut Strings, out: &mut Vec<u8>) {
    // Escapes only shorten a string once decoded: a short token is a short string.
    if token.len() - 2 >= LONG_STRING {
        let json = Json::canonical(token);
        let decoded = json.as_string().unwrap_or(Cow::Borrowed(""));
        if decoded.len() >= LONG_STRING {
            let id = strings.id(&decoded);
            out.extend_from_slice(format!("{{\"\\u0000\":{id}}}").as_bytes());
            return;
        }
    }
    out.extend_from_slice(token.as_bytes());
}

/// The end (past the closing quote) of the canonical string starting at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while let Some(found) = crate::canonical_json::next_escape(bytes, at) {
        if bytes[found] == b'"' {
            return found + 1;
        }
        at = found + 2;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical_json::to_canonical_string;
    use serde_json::{Value, json};

    /// The chunk text of `value` with its strings, read back with the references resolved:
    /// what the page shows.
    fn resolve(text: &str, strings: &Strings) -> Value {
        fn walk(value: Value, strings: &[String]) -> Value {
            match value {
                Value::Object(map) if map.len() == 1 && map.contains_key("\u{0}") => {
                    match map.into_iter().next().map(|(_, v)| v) {
                        Some(Value::Number(n)) => {
                            Value::String(strings[n.as_u64().unwrap() as usize].clone())
                        }
                        Some(Value::Array(mut only)) => {
                            let inner = walk(only.remove(0), strings);
                            json!({"\u{0}": inner})
                        }
                        other => panic!("not a reference: {other:?}"),
                    }
                }
                Value::Object(map) => Value::Object(
                    map.into_iter()
                        .map(|(k, v)| (k, walk(v, strings)))
                        .collect(),
                ),
                Value::Array(items) => {
                    Value::Array(items.into_iter().map(|v| walk(v, strings)).collect())
                }
                other => other,
            }
        }
        walk(serde_json::from_str(text).unwrap(), &strings.values)
    }

    /// `value` stored (canonical: -0 is 0), written with references and read back with
    /// them resolved: (read back, stored, the text written).
    fn round_trip(value: &Value) -> (Value, Value, String) {
        let canonical = to_canonical_string(value).unwrap();
        let mut strings = Strings::default();
        let mut out = Vec::new();
        write_interned(&canonical, &mut strings, &mut out);
        let text = String::from_utf8(out).unwrap();
        let stored: Value = serde_json::from_str(&canonical).unwrap();
        (resolve(&text, &strings), stored, text)
    }

    #[test]
    fn long_strings_are_stored_once_per_chunk_and_a_nul_keyed_object_stays_itself() {
        // A few-shot context repeated in every choice's request is written once.
        let context = "Question: ".repeat(20);
        let value = json!({
            "arguments": [{"arg_0": context, "arg_1": " A"}, {"arg_0": context, "arg_1": " B"}],
            "tricky": {"\u{0}": 1},
        });
        let mut strings = Strings::default();
        let mut out = Vec::new();
        write_interned(
            &to_canonical_string(&value).unwrap(),
            &mut strings,
            &mut out,
        );
        assert_eq!(strings.values, vec![context.clone()]);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            r#"{"arguments":[{"arg_0":{"\u0000":0},"arg_1":" A"},{"arg_0":{"\u0000":0},"arg_1":" B"}],"tricky":{"\u0000":[1]}}"#
        );
    }

    #[test]
    fn every_value_reads_back_as_itself_once_references_are_resolved() {
        // Long keys stay keys, escapes count as the characters they decode to, a U+0000
        // key among others is an ordinary member, and nesting survives the walk.
        let long = "x".repeat(LONG_STRING);
        let escaped = "\"\n".repeat(LONG_STRING / 2 + 1);
        let short_escaped = "\u{1}".repeat(30);
        let values = [
            json!({long.clone(): long.clone(), "k": [long.clone(), 1.5e300, -0.0, null, true]}),
            json!({"\u{0}": {"\u{0}": [long.clone()]}, "a": escaped}),
            json!({"\u{0}": long.clone()}),
            json!([[[{"\u{0}": []}]], {}, [], short_escaped, "x".repeat(LONG_STRING - 1)]),
            json!(long),
            json!(12),
            json!("short"),
        ];
        for value in values {
            let (read_back, stored, text) = round_trip(&value);
            assert_eq!(read_back, stored, "{text}");
        }
    }

    /// A stored record of a sample record with some fields' text replaced.
    fn stored_with(changes: &[(StoredField, &str)]) -> StoredRecord {
        use StoredField as F;
        let sample = crate::compare::tests::record("original", "q1", "en", Some(true));
        let base = StoredRecord::of(&sample).unwrap();
        let mut out = base.clone();
        out.clear();
        for field in [
            F::RunId,
            F::Benchmark,
            F::Script,
            F::Language,
            F::QuestionId,
            F::VariantId,
            F::Filter,
            F::IdentityScope,
            F::Model,
            F::RephrasingModel,
            F::Input,
            F::Target,
            F::Prediction,
            F::Scores,
            F::Metrics,
            F::Response,
            F::SourcePath,
            F::SourceMember,
            F::SourcePointer,
            F::Warnings,
            F::Extra,
        ] {
            let changed = changes.iter().find(|(f, _)| *f == field).map(|(_, t)| *t);
            out.push(field, changed.or(base.get(field)));
        }
        out
    }

    #[test]
    fn a_stored_column_that_is_not_canonical_or_not_its_kind_is_refused() {
        // "Nothing here checks the nested text" (the store): the report does, before it
        // walks the text, and names the record and the field.
        let mut checker = JsonChecker::default();
        for (field, text, expected) in [
            (
                StoredField::Input,
                "{\"b\":1,\"a\":2}",
                "field input: not RFC 8785 canonical JSON",
            ),
            (StoredField::Target, "nul", "field target: invalid JSON"),
            (
                StoredField::Scores,
                "[]",
                "field scores: expected a JSON object",
            ),
            (
                StoredField::Warnings,
                "[1]",
                "field warnings: expected an array of strings",
            ),
        ] {
            let record = stored_with(&[(field, text)]);
            let error = check(&record, &mut checker).err().expect(expected);
            let message = error.to_string();
            assert!(message.contains("the stored record"), "{message}");
            assert!(
                message.contains("`babel validate`"),
                "says what to do: {message}"
            );
            assert!(message.contains(expected), "{message}");
        }
        assert!(check(&stored_with(&[]), &mut checker).is_ok());
    }

    /// Arbitrary values with long strings (escapes included, around the threshold), keys
    /// that are U+0000 or long, and nesting.
    fn value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let text = prop_oneof![
            "\\PC{0,8}",
            "[a\"\\\\\n\\u{0}é]{126,131}",
            Just("x".repeat(LONG_STRING)),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-1000i64..1000).prop_map(Value::from),
            text.clone().prop_map(Value::String),
        ];
        let key = prop_oneof![Just("\u{0}".to_owned()), text];
        leaf.prop_recursive(4, 32, 4, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(key.clone(), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn any_value_reads_back_as_stored_once_references_are_resolved(value in value()) {
            let (read_back, stored, text) = round_trip(&value);
            proptest::prop_assert_eq!(read_back, stored, "{}", text);
        }
    }
}
