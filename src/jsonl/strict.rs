//! The strict parse of one JSON text: duplicate keys refused at any depth, the field path of
//! every failure tracked, non-finite tokens recognised so they can be named (or replaced).
//!
//! serde_json's own `Value` keeps the last duplicate key silently, so the walk is ours: a
//! `DeserializeSeed` that builds the value while it checks each object's keys. It is the
//! reference the streaming reader (`stream`) is held to, and reads stored JSON columns,
//! header files and Parquet rows' JSON back; no input item is read with it.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

use super::path::{FieldPath, PathSegment};

/// What went wrong in one JSON text, before the line number is attached.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ParseFailure {
    /// One-based byte column where the parser stopped, when known.
    pub column: Option<usize>,
    /// serde_json's index in the text behind that column (the column is this index less
    /// the start of its line), so that a caller who edited the text can map it back.
    pub index: Option<usize>,
    /// The field being parsed when it failed.
    pub path: FieldPath,
    pub kind: FailureKind,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FailureKind {
    DuplicateKey(String),
    /// `NaN`, `Infinity` or `-Infinity`, starting at the given byte offset.
    NonFinite {
        token: &'static str,
        offset: usize,
    },
    NotAnObject(&'static str),
    Syntax(String),
    /// The streaming reader's limit on the places it notes (see
    /// `stream::NOTED_KEY_BYTES_PER_BYTE`); the tree reader has none.
    TooManyNoted,
}

struct State {
    path: FieldPath,
    duplicate: Option<String>,
}

/// Parses `text`, already checked to be UTF-8, as one JSON object, strictly.
pub(crate) fn parse_object(text: &str) -> Result<Map<String, Value>, ParseFailure> {
    if let Some(found) = non_object_kind(text.as_bytes()) {
        return Err(ParseFailure {
            column: None,
            index: None,
            path: FieldPath::root(),
            kind: FailureKind::NotAnObject(found),
        });
    }
    match parse_value(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => unreachable!("non_object_kind admits only text starting with '{{'"),
        Err(failure) => Err(failure),
    }
}

/// Parses `text` as one JSON value of any kind, strictly (duplicate keys refused at any
/// depth, no non-finite numbers): how a stored JSON column is read back.
pub(crate) fn parse_value(text: &str) -> Result<Value, ParseFailure> {
    let mut state = State {
        path: FieldPath::root(),
        duplicate: None,
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    ValueSeed { state: &mut state }
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value))
        .map_err(|error| classify(text, error, state))
}

fn classify(text: &str, error: serde_json::Error, state: State) -> ParseFailure {
    let mut column = (error.column() > 0).then_some(error.column());
    let index = column.map(|c| line_start(text, error.line()) + c);
    let kind = if let Some(key) = state.duplicate {
        // The parser notices only after the repeated key's value; the path says where.
        column = None;
        FailureKind::DuplicateKey(key)
    } else if let Some((token, offset)) = column
        // Only where a value was expected: `"x"-Infinity` lacks its colon.
        .filter(|_| {
            let message = error.to_string();
            message.starts_with("expected value") || message.starts_with("invalid number")
        })
        .and_then(|c| non_finite_at(text.as_bytes(), line_start(text, error.line()) + c - 1))
    {
        FailureKind::NonFinite { token, offset }
    } else {
        FailureKind::Syntax(strip_position(&error.to_string()))
    };
    ParseFailure {
        index: column.and(index),
        column,
        path: state.path,
        kind,
    }
}

/// The byte offset where one-based `line` of `text` starts (a value read from a JSON
/// document, pretty-printed, spans lines; serde_json counts columns within a line).
fn line_start(text: &str, line: usize) -> usize {
    text.bytes()
        .enumerate()
        .filter(|(_, b)| *b == b'\n')
        .nth(line.saturating_sub(2))
        .map_or(0, |(at, _)| if line > 1 { at + 1 } else { 0 })
}

/// serde_json appends " at line 1 column N"; we print our own position.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(cut) => message[..cut].to_owned(),
        None => message.to_owned(),
    }
}

/// The non-finite token the parser stopped at, if any. serde_json stops on the `N` of `NaN`
/// and the `I` of `Infinity`, or just after the `-` of `-Infinity`.
fn non_finite_at(bytes: &[u8], stop: usize) -> Option<(&'static str, usize)> {
    // A token begins where a value does: not inside a number (`-NaN`, `1ENaN` and
    // `1e-Infinity` are numbers that went wrong, as the streaming reader says; found by
    // the `stream_vs_tree` fuzz target).
    let token_at = |at: usize, token: &str| {
        bytes.get(at..at + token.len()) == Some(token.as_bytes())
            && (at == 0
                || !matches!(
                    bytes[at - 1],
                    b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-'
                ))
    };
    if stop > 0 && token_at(stop - 1, "-Infinity") {
        return Some(("-Infinity", stop - 1));
    }
    // A `-Infinity` begins where a value does, and serde_json reads past its `-`: one
    // starting at the stop follows another `-` (`--Infinity`), an invalid number.
    ["Infinity", "NaN"]
        .into_iter()
        .find(|token| token_at(stop, token))
        .map(|token| (token, stop))
}

pub(crate) fn non_object_kind(text: &[u8]) -> Option<&'static str> {
    let first = text
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
    match first {
        Some(b'{') => None,
        Some(b'[') => Some("an array"),
        Some(b'"') => Some("a string"),
        Some(b't' | b'f') => Some("a boolean"),
        Some(b'n') => Some("null"),
        Some(b'-' | b'0'..=b'9') => Some("a number"),
        _ => Some("text that is not JSON"),
    }
}

/// Builds a value.
struct ValueSeed<'s> {
    state: &'s mut State,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(ValueVisitor { state: self.state })
    }
}

struct ValueVisitor<'s> {
    state: &'s mut State,
}

impl<'de> Visitor<'de> for ValueVisitor<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(value)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number out of range"))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            // Pushed before parsing, so a failure inside the element names it.
            self.state.path.push(PathSegment::Index(items.len()));
            let next = seq.next_element_seed(ValueSeed {
                state: &mut *self.state,
            })?;
            self.state.path.pop_segment();
            match next {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            self.state.path.push(PathSegment::Key(key));
            let value = access.next_value_seed(ValueSeed {
                state: &mut *self.state,
            })?;
            let Some(PathSegment::Key(key)) = self.state.path.pop_segment() else {
                unreachable!("the key pushed above is the last segment");
            };
            match map.entry(key) {
                serde_json::map::Entry::Vacant(slot) => {
                    slot.insert(value);
                }
                serde_json::map::Entry::Occupied(slot) => {
                    let key = slot.key().clone();
                    self.state.path.push(PathSegment::Key(key.clone()));
                    self.state.duplicate = Some(key);
                    return Err(de::Error::custom("duplicate key"));
                }
            }
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(text: &str) -> ParseFailure {
        parse_object(text).expect_err("must be rejected")
    }

    #[test]
    fn duplicate_keys_are_rejected_at_any_depth_with_their_path() {
        let top = failure(r#"{"a": 1, "a": 2}"#);
        assert_eq!(top.kind, FailureKind::DuplicateKey("a".into()));
        assert_eq!(top.path.to_string(), "a");

        let deep = failure(r#"{"doc": {"choices": [{"t": 1, "t": 1}]}}"#);
        assert_eq!(deep.kind, FailureKind::DuplicateKey("t".into()));
        assert_eq!(deep.path.to_string(), "doc.choices[0].t");
    }

    #[test]
    fn non_finite_tokens_are_named_with_their_field() {
        let nan = failure(r#"{"metrics": {"em": NaN}}"#);
        assert_eq!(
            nan.kind,
            FailureKind::NonFinite {
                token: "NaN",
                offset: 19
            }
        );
        assert_eq!(nan.path.to_string(), "metrics.em");
        let inf = failure(r#"{"x": [1, Infinity]}"#);
        assert!(matches!(
            inf.kind,
            FailureKind::NonFinite {
                token: "Infinity",
                ..
            }
        ));
        assert_eq!(inf.path.to_string(), "x[1]");
        let neg = failure(r#"{"x": -Infinity}"#);
        assert_eq!(
            neg.kind,
            FailureKind::NonFinite {
                token: "-Infinity",
                offset: 6
            }
        );
        // Found by the stream-vs-tree property: both readers call this an invalid number.
        let twice = failure(r#"{"x": --Infinity}"#);
        assert_eq!(twice.kind, FailureKind::Syntax("invalid number".into()));
        assert_eq!(twice.column, Some(8));
    }

    #[test]
    fn a_nan_inside_a_string_is_only_text() {
        let map = parse_object(r#"{"answer": "NaN", "n": "Infinity"}"#).unwrap();
        let pretty = failure("{\n  \"a\": 1,\n  \"b\": {\n    \"v\": NaN\n  }\n}");
        assert!(
            matches!(
                pretty.kind,
                FailureKind::NonFinite {
                    token: "NaN",
                    offset: 30
                }
            ),
            "a token on a later line of a pretty-printed value is found: {pretty:?}"
        );
        assert_eq!(map["answer"], "NaN");
    }

    #[test]
    fn overflowing_numbers_are_out_of_range() {
        let big = failure(r#"{"x": 1e999}"#);
        assert!(matches!(big.kind, FailureKind::Syntax(ref m) if m.contains("out of range")));
        assert_eq!(big.path.to_string(), "x");
    }

    #[test]
    fn non_objects_truncation_and_trailing_text_are_rejected() {
        assert_eq!(failure("[1]").kind, FailureKind::NotAnObject("an array"));
        assert_eq!(failure("42").kind, FailureKind::NotAnObject("a number"));
        assert!(matches!(failure(r#"{"a": "#).kind, FailureKind::Syntax(_)));
        assert!(
            matches!(failure(r#"{"a": 1} {"b": 2}"#).kind, FailureKind::Syntax(ref m) if m.contains("trailing"))
        );
    }

    #[test]
    fn lone_surrogates_are_rejected() {
        assert!(matches!(
            failure(r#"{"a": "\ud800"}"#).kind,
            FailureKind::Syntax(_)
        ));
    }

    #[test]
    fn key_order_and_values_are_kept() {
        let map = parse_object(r#"{"z": 1, "a": [true, null, 1.5, -3, "é"]}"#).unwrap();
        let keys: Vec<_> = map.keys().cloned().collect();
        assert_eq!(keys, ["z", "a"]);
        assert_eq!(
            Value::Object(map).to_string(),
            r#"{"z":1,"a":[true,null,1.5,-3,"é"]}"#
        );
    }
}
