//! [`ObjectFields`]: the typed, field-precise reading of an object nested in a line's
//! member (a paired line's `original`, an EEE row's `input` and `evaluation`), from its
//! canonical text, as [`crate::record::Fields`] reads the same object from a tree: the
//! same getters, the same messages, and what is not taken kept as it is.

use std::borrow::Cow;

use crate::canonical_json::{Json, JsonKind, ObjectMembers, ObjectWriter};
use crate::jsonl::{FieldPath, Member, PathSegment};
use crate::record::FieldError;
use crate::record::fields::MAX_SAFE_INTEGER;

use super::super::AdapterError;

/// The members of one object, taken out one at a time, each checked for its type.
#[derive(Debug)]
pub struct ObjectFields<'a> {
    path: FieldPath,
    /// Key, value and whether it was taken, in canonical (sorted) order.
    members: Vec<(Cow<'a, str>, Json<'a>, bool)>,
    /// The numbers below the object that the tree reader reads as doubles though their
    /// canonical text is an integer: their paths below the object.
    integral_doubles: Vec<&'a [PathSegment]>,
}

impl<'a> ObjectFields<'a> {
    /// The object a line's `member` holds, at `path`; a member that is not an object is
    /// refused, and so is an integer in it that no double holds (the tree path refused it
    /// where the record was stored, and the adapters that read objects so store every
    /// number in them), before any other problem of the object.
    pub fn of_member(member: &Member<'a>, path: FieldPath) -> Result<Self, AdapterError> {
        let Some(members) = ObjectMembers::of(member.value) else {
            return Err(FieldError::new(
                path,
                format!("expected an object, found {}", super::describe(member)),
            )
            .into());
        };
        if let Some((below, written)) = member.unsafe_integer {
            return Err(super::unsafe_integer(path, below, written));
        }
        Ok(Self {
            path,
            members: members.map(|(key, value)| (key, value, false)).collect(),
            integral_doubles: member
                .integral_doubles
                .iter()
                .map(|(_, below)| below.segments())
                .collect(),
        })
    }

    /// The path of one member.
    pub fn path(&self, name: &str) -> FieldPath {
        self.path.key(name)
    }

    /// Where member `name` is, unless absent or taken.
    fn position(&self, name: &str) -> Option<usize> {
        self.members
            .iter()
            .position(|(key, _, taken)| key == name && !taken)
    }

    /// Takes a member out as it is, if present (and not taken before).
    pub fn take(&mut self, name: &str) -> Option<Json<'a>> {
        let at = self.position(name)?;
        let (_, value, taken) = &mut self.members[at];
        *taken = true;
        Some(value.clone())
    }

    /// Looks at a member without taking it.
    pub fn peek(&self, name: &str) -> Option<Json<'a>> {
        Some(self.members[self.position(name)?].1.clone())
    }

    fn missing(&self, name: &str) -> FieldError {
        FieldError::new(self.path(name), "required field is missing")
    }

    /// A member that must be present (any JSON value, null included).
    pub fn required(&mut self, name: &str) -> Result<Json<'a>, FieldError> {
        self.take(name).ok_or_else(|| self.missing(name))
    }

    /// A non-empty string that must be present, as its canonical text.
    pub fn required_string(&mut self, name: &str) -> Result<Json<'a>, FieldError> {
        let value = self.required(name)?;
        match value.kind() {
            JsonKind::String if value.as_str().len() > 2 => Ok(value),
            _ => Err(self.wrong(name, "a non-empty string", &value)),
        }
    }

    /// Whether the number at `below` (a path inside member `name`) is a double to the tree
    /// reader though its canonical text is an integer.
    fn is_integral_double(&self, name: &str, below: &[PathSegment]) -> bool {
        self.integral_doubles.iter().any(|path| match *path {
            [PathSegment::Key(key), rest @ ..] => key == name && rest == below,
            _ => false,
        })
    }

    /// The paths, below member `name`, of its numbers the tree reader reads as doubles
    /// though their canonical text is an integer: two members with the same canonical text
    /// are the same tree when these agree.
    pub fn integral_doubles_in(&self, name: &str) -> Vec<&'a [PathSegment]> {
        self.integral_doubles
            .iter()
            .filter_map(|path| match *path {
                [PathSegment::Key(key), rest @ ..] if key == name => Some(rest),
                _ => None,
            })
            .collect()
    }

    /// A member's value as messages describe it: a number the tree reader reads as a
    /// double is named as one (`the number 1.0`).
    pub fn describe(&self, name: &str, value: &Json<'_>) -> String {
        let double = self.is_integral_double(name, &[]);
        crate::record::fields::describe(&super::parsed(value, double))
    }

    fn wrong(&self, name: &str, expected: &str, found: &Json<'_>) -> FieldError {
        FieldError::new(
            self.path(name),
            format!("expected {expected}, found {}", self.describe(name, found)),
        )
    }

    /// A non-empty string, as its canonical text, or `None` when the member is absent or
    /// null.
    pub fn optional_string(&mut self, name: &str) -> Result<Option<Json<'a>>, FieldError> {
        let Some(value) = self.take(name) else {
            return Ok(None);
        };
        match value.kind() {
            JsonKind::Null => Ok(None),
            JsonKind::String if value.as_str().len() > 2 => Ok(Some(value)),
            _ => Err(self.wrong(name, "a non-empty string or null", &value)),
        }
    }

    /// A non-negative integer no larger than 2^53 − 1, if present and not null.
    pub fn optional_index(&mut self, name: &str) -> Result<Option<u64>, FieldError> {
        let Some(value) = self.take(name) else {
            return Ok(None);
        };
        if value.is_null() {
            return Ok(None);
        }
        match value.as_u64() {
            Some(n) if n <= MAX_SAFE_INTEGER && !self.is_integral_double(name, &[]) => Ok(Some(n)),
            _ => Err(self.wrong(name, "a non-negative integer", &value)),
        }
    }

    /// An array, if present and not null.
    pub fn optional_array(&mut self, name: &str) -> Result<Option<Json<'a>>, FieldError> {
        let Some(value) = self.take(name) else {
            return Ok(None);
        };
        match value.kind() {
            JsonKind::Null => Ok(None),
            JsonKind::Array => Ok(Some(value)),
            _ => Err(self.wrong(name, "an array", &value)),
        }
    }

    /// The members not taken, in canonical order.
    pub fn into_remaining(self) -> impl Iterator<Item = (Cow<'a, str>, Json<'a>)> {
        self.members
            .into_iter()
            .filter(|(_, _, taken)| !taken)
            .map(|(key, value, _)| (key, value))
    }

    /// The members not taken, as one object.
    pub fn into_rest(self) -> Json<'static> {
        let mut rest = ObjectWriter::new();
        for (key, value) in self.into_remaining() {
            rest.insert(key, value);
        }
        rest.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonl::{Members, NonFinitePolicy, scan_bytes};
    use crate::record::Fields;
    use serde_json::{Map, Value};

    /// An object as a paired line nests it, with every kind of value a getter meets.
    const OBJECT: &str = r#"{"s": "text", "e": "", "esc": "a\"b\n", "n": null, "i": 3, "neg": -1,
        "f": 1.5, "one": 1.0, "e2": 1e2, "big": 9007199254740992, "huge": 18446744073709551616,
        "b": true, "o": {"k": [1]}, "a": ["x", 2.0], "long": "a string longer than forty characters, named short"}"#;
    const NAMES: [&str; 16] = [
        "s", "e", "esc", "n", "i", "neg", "f", "one", "e2", "big", "huge", "b", "o", "a", "long",
        "missing",
    ];

    fn scanned(object: &str) -> Members {
        let mut members = Members::new();
        let line = format!(r#"{{"v": {object}}}"#);
        scan_bytes(line.as_bytes(), 1, NonFinitePolicy::Reject, &mut members).unwrap();
        members
    }

    fn both<'m>(members: &'m Members) -> (ObjectFields<'m>, Fields) {
        let path = FieldPath::root().key("v");
        let streamed = ObjectFields::of_member(&members.get("v").unwrap(), path.clone()).unwrap();
        let tree: Map<String, Value> = serde_json::from_str(OBJECT).unwrap();
        (streamed, Fields::new(tree, path))
    }

    fn canonical(value: Value) -> String {
        Json::of(&value).unwrap().as_str().to_owned()
    }

    /// Every getter says what the tree reader's [`Fields`] says of the same member: the same
    /// value, or the same error at the same path.
    #[test]
    fn the_getters_agree_with_the_tree_getters() {
        let members = scanned(OBJECT);
        for name in NAMES {
            let (mut s, mut t) = both(&members);
            assert_eq!(
                s.optional_string(name)
                    .map(|found| found.map(|json| json.as_string().unwrap().into_owned())),
                t.optional_string(name),
                "{name}"
            );
            let (mut s, mut t) = both(&members);
            assert_eq!(
                s.required_string(name)
                    .map(|json| json.as_string().unwrap().into_owned()),
                t.required_string(name),
                "{name}"
            );
            let (mut s, mut t) = both(&members);
            assert_eq!(
                s.required(name).map(|json| json.as_str().to_owned()),
                t.required(name).map(canonical),
                "{name}"
            );
            let (mut s, mut t) = both(&members);
            assert_eq!(s.optional_index(name), t.optional_index(name), "{name}");
            let (mut s, mut t) = both(&members);
            let tree_array = match t.take(name) {
                None | Some(Value::Null) => Ok(None),
                Some(array @ Value::Array(_)) => Ok(Some(canonical(array))),
                Some(other) => Err(FieldError::new(
                    t.path(name),
                    format!(
                        "expected an array, found {}",
                        crate::record::fields::describe(&other)
                    ),
                )),
            };
            assert_eq!(
                s.optional_array(name)
                    .map(|found| found.map(|json| json.as_str().to_owned())),
                tree_array,
                "{name}"
            );
        }
    }

    #[test]
    fn what_is_not_taken_is_the_rest_and_a_member_is_taken_once() {
        let members = scanned(OBJECT);
        let (mut s, mut t) = both(&members);
        for name in ["s", "one", "o", "missing"] {
            assert_eq!(
                s.peek(name).map(|json| json.as_str().to_owned()),
                t.peek(name).cloned().map(canonical),
                "{name}"
            );
            assert_eq!(s.take(name).is_some(), t.take(name).is_some(), "{name}");
            assert!(s.peek(name).is_none(), "{name} was taken");
        }
        assert!(s.take("s").is_none(), "a member is taken once");
        assert_eq!(
            s.into_rest().as_str(),
            canonical(Value::Object(t.into_rest()))
        );
    }

    #[test]
    fn numbers_the_tree_reads_as_doubles_are_known_by_their_path() {
        let members = scanned(OBJECT);
        let (s, _) = both(&members);
        assert_eq!(s.integral_doubles_in("a"), [&[PathSegment::Index(1)][..]]);
        assert!(s.integral_doubles_in("o").is_empty());
        assert!(s.integral_doubles_in("i").is_empty());
        assert_eq!(s.integral_doubles_in("one"), [&[][..]]);
        // `-0` is a double to the tree too; its canonical text has lost the sign.
        let zero = scanned(r#"{"z": -0}"#);
        let mut z = ObjectFields::of_member(&zero.get("v").unwrap(), FieldPath::root()).unwrap();
        assert!(z.optional_index("z").is_err());
    }

    #[test]
    fn an_integer_no_double_holds_and_a_value_that_is_no_object_are_refused() {
        let unsafe_integer = scanned(r#"{"x": {"y": [9007199254740993]}}"#);
        let error = ObjectFields::of_member(
            &unsafe_integer.get("v").unwrap(),
            FieldPath::root().key("v"),
        )
        .unwrap_err();
        assert_eq!(error.path.to_string(), "v.x.y[0]");
        assert!(error.message.contains("9007199254740993"), "{error:?}");
        let number = scanned("1.0");
        let error = ObjectFields::of_member(&number.get("v").unwrap(), FieldPath::root().key("v"))
            .unwrap_err();
        assert_eq!(
            (error.path.to_string(), error.message.as_str()),
            ("v".to_owned(), "expected an object, found the number 1.0")
        );
    }
}
