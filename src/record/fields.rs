//! Typed, field-precise reading of a JSON object: each getter takes one field out of the
//! object and says exactly what was wrong with it.

use serde_json::{Map, Value};
use std::fmt;

use crate::jsonl::FieldPath;

/// The largest integer every JSON implementation reads exactly (2^53 − 1).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A field whose value does not fit the contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Where in the line.
    pub path: FieldPath,
    /// What was expected and what was found.
    pub message: String,
}

impl FieldError {
    /// An error about the field at `path`.
    pub fn new(path: FieldPath, message: impl Into<String>) -> Self {
        Self {
            path,
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_root() {
            f.write_str(&self.message)
        } else {
            write!(f, "field {}: {}", self.path, self.message)
        }
    }
}

/// Describes a JSON value's type and, when short, the value itself, for messages.
pub fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.chars().count() <= 40 => format!("the string {s:?}"),
        Value::String(_) => "a long string".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

/// An object whose fields are taken out one at a time, each checked for its type.
#[derive(Debug)]
pub struct Fields {
    map: Map<String, Value>,
    base: FieldPath,
}

impl Fields {
    /// Wraps the object found at `base`.
    pub fn new(map: Map<String, Value>, base: FieldPath) -> Self {
        Self { map, base }
    }

    /// The path of one field of this object.
    pub fn path(&self, name: &str) -> FieldPath {
        self.base.key(name)
    }

    fn wrong(&self, name: &str, expected: &str, found: &Value) -> FieldError {
        FieldError::new(
            self.path(name),
            format!("expected {expected}, found {}", describe(found)),
        )
    }

    /// Takes a field out as it is, if present.
    pub fn take(&mut self, name: &str) -> Option<Value> {
        self.map.swap_remove(name)
    }

    /// Looks at a field without taking it.
    pub fn peek(&self, name: &str) -> Option<&Value> {
        self.map.get(name)
    }

    /// A field that must be present (any JSON value, null included).
    pub fn required(&mut self, name: &str) -> Result<Value, FieldError> {
        self.take(name)
            .ok_or_else(|| FieldError::new(self.path(name), "required field is missing"))
    }

    /// A non-empty string, or `None` when the field is absent or null.
    pub fn optional_string(&mut self, name: &str) -> Result<Option<String>, FieldError> {
        match self.take(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s)),
            Some(other) => Err(self.wrong(name, "a non-empty string or null", &other)),
        }
    }

    /// A non-empty string that must be present.
    pub fn required_string(&mut self, name: &str) -> Result<String, FieldError> {
        match self.take(name) {
            Some(Value::String(s)) if !s.is_empty() => Ok(s),
            None => Err(FieldError::new(
                self.path(name),
                "required field is missing",
            )),
            Some(other) => Err(self.wrong(name, "a non-empty string", &other)),
        }
    }

    /// A field that must be present and be a string or null.
    pub fn required_nullable_string(&mut self, name: &str) -> Result<Option<String>, FieldError> {
        if !self.map.contains_key(name) {
            return Err(FieldError::new(
                self.path(name),
                "required field is missing",
            ));
        }
        self.optional_string(name)
    }

    /// A non-empty string with a default: absent gives `None` (the caller's default); an
    /// explicit null is refused, because null means unknown and a default is not unknown.
    pub fn defaulted_string(&mut self, name: &str) -> Result<Option<String>, FieldError> {
        if self.map.get(name) == Some(&Value::Null) {
            return Err(FieldError::new(
                self.path(name),
                "null is not allowed here; leave the field out to get its default",
            ));
        }
        self.optional_string(name)
    }

    /// A non-negative integer with a default: absent gives `None`; explicit null is refused
    /// (see [`Fields::defaulted_string`]).
    pub fn defaulted_index(&mut self, name: &str) -> Result<Option<u64>, FieldError> {
        if self.map.get(name) == Some(&Value::Null) {
            return Err(FieldError::new(
                self.path(name),
                "null is not allowed here; leave the field out to get its default",
            ));
        }
        self.optional_index(name)
    }

    /// A non-negative integer no larger than 2^53 − 1, if present and not null.
    pub fn optional_index(&mut self, name: &str) -> Result<Option<u64>, FieldError> {
        match self.take(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => match value.as_u64() {
                Some(n) if n <= MAX_SAFE_INTEGER => Ok(Some(n)),
                _ => Err(self.wrong(name, "a non-negative integer", &value)),
            },
        }
    }

    /// `true`, `false`, or null (unknown). Absent counts as unknown only when allowed.
    pub fn nullable_bool(
        &mut self,
        name: &str,
        required: bool,
    ) -> Result<Option<bool>, FieldError> {
        match self.take(name) {
            None if required => Err(FieldError::new(
                self.path(name),
                "required field is missing",
            )),
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(other) => Err(self.wrong(name, "true, false or null", &other)),
        }
    }

    /// An object; absent or null gives an empty object unless `required`.
    pub fn object(&mut self, name: &str, required: bool) -> Result<Map<String, Value>, FieldError> {
        match self.take(name) {
            None if required => Err(FieldError::new(
                self.path(name),
                "required field is missing",
            )),
            None | Some(Value::Null) if !required => Ok(Map::new()),
            Some(Value::Object(map)) => Ok(map),
            Some(other) => Err(self.wrong(name, "an object", &other)),
            None => unreachable!("handled above"),
        }
    }

    /// An object or null.
    pub fn object_or_null(&mut self, name: &str, required: bool) -> Result<Value, FieldError> {
        match self.take(name) {
            None if required => Err(FieldError::new(
                self.path(name),
                "required field is missing",
            )),
            None => Ok(Value::Null),
            Some(value @ (Value::Object(_) | Value::Null)) => Ok(value),
            Some(other) => Err(self.wrong(name, "an object or null", &other)),
        }
    }

    /// An array of strings; absent gives an empty list unless `required`.
    pub fn strings(&mut self, name: &str, required: bool) -> Result<Vec<String>, FieldError> {
        let value = match self.take(name) {
            None if required => {
                return Err(FieldError::new(
                    self.path(name),
                    "required field is missing",
                ));
            }
            None => return Ok(Vec::new()),
            Some(value) => value,
        };
        let Value::Array(items) = value else {
            return Err(self.wrong(name, "an array of strings", &value));
        };
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s),
                other => Err(FieldError::new(
                    self.path(name).index(i),
                    format!("expected a string, found {}", describe(&other)),
                )),
            })
            .collect()
    }

    /// Refuses any field not taken so far.
    pub fn deny_unknown(self) -> Result<(), FieldError> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(name) => Err(FieldError::new(
                self.base.key(name),
                "unknown field (schema v1 has no such field)",
            )),
        }
    }

    /// What is left after the known fields were taken (the reference the readers of
    /// canonical text, `adapters::kit::ObjectFields`, are tested against).
    #[cfg(test)]
    pub fn into_rest(self) -> Map<String, Value> {
        self.map
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(value: Value) -> Fields {
        let Value::Object(map) = value else { panic!() };
        Fields::new(map, FieldPath::root())
    }

    #[test]
    fn null_correctness_stays_unknown_and_numbers_are_not_coerced() {
        let mut f = fields(json!({"a": null, "b": 1, "c": true}));
        assert_eq!(f.nullable_bool("a", true), Ok(None));
        let error = f.nullable_bool("b", true).unwrap_err();
        assert_eq!(
            error.to_string(),
            "field b: expected true, false or null, found the number 1"
        );
        assert_eq!(f.nullable_bool("c", true), Ok(Some(true)));
        assert!(f.nullable_bool("missing", true).is_err());
    }

    #[test]
    fn strings_must_be_non_empty_and_indices_non_negative() {
        let mut f = fields(json!({"s": "", "i": -1, "j": 3, "big": 9007199254740992u64}));
        assert!(f.required_string("s").is_err());
        assert!(f.optional_index("i").is_err());
        assert_eq!(f.optional_index("j"), Ok(Some(3)));
        assert!(f.optional_index("big").is_err(), "above 2^53-1");
    }

    #[test]
    fn a_null_is_never_replaced_by_a_default() {
        // Null means unknown: a field with a default (filter "none", repeat_id 0) refuses
        // an explicit null instead of turning it into the default.
        let mut f = fields(json!({"filter": null, "repeat_id": null}));
        assert!(f.defaulted_string("filter").is_err());
        assert!(f.defaulted_index("repeat_id").is_err());
        let mut absent = fields(json!({}));
        assert_eq!(absent.defaulted_string("filter"), Ok(None));
        assert_eq!(absent.defaulted_index("repeat_id"), Ok(None));
    }

    #[test]
    fn string_lists_name_the_bad_element() {
        let mut f = fields(json!({"w": ["ok", 2]}));
        assert_eq!(f.strings("w", true).unwrap_err().path.to_string(), "w[1]");
    }

    #[test]
    fn unknown_fields_are_named() {
        let mut f = fields(json!({"known": 1, "typo": 2}));
        f.take("known");
        assert_eq!(f.deny_unknown().unwrap_err().path.to_string(), "typo");
    }
}
