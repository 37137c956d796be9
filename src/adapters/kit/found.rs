//! [`Found`]: a value read out of an item's top-level member by the adapters that walk
//! nested objects (HELM's request states, Inspect's samples), with what a JSON parser
//! would have made of it.

use std::borrow::Cow;

use crate::canonical_json::{Json, JsonKind};
use crate::jsonl::{FieldPath, Member, Members, PathSegment};
use crate::record::fields::describe;

use super::super::AdapterError;

/// A value inside one of an item's top-level members, and where it is: what a JSON
/// parser tells apart and canonical text does not (a number written `1.0`, an integer no
/// double holds) is read from the member's scan.
#[derive(Clone)]
pub struct Found<'a> {
    /// The top-level member the value is in.
    pub member: Member<'a>,
    /// Where the value is inside it.
    pub below: Vec<PathSegment>,
    /// The value's canonical text.
    pub value: Json<'a>,
}

impl<'a> Found<'a> {
    /// The top-level member `key`.
    pub fn top(members: &'a Members, key: &str) -> Option<Self> {
        let member = members.get(key)?;
        Some(Self {
            value: member.peek(),
            member,
            below: Vec::new(),
        })
    }

    /// The member `key` of this object (`None`: absent, or this is no object).
    pub fn key(&self, key: &str) -> Option<Self> {
        let value = self.value.member(key)?;
        Some(self.child(key, value))
    }

    /// The member `key` of this object, whose `value` the caller read out of it.
    pub fn child(&self, key: &str, value: Json<'a>) -> Self {
        self.below(PathSegment::Key(key.to_owned()), value)
    }

    /// The members of this object, in canonical order (none when it is no object).
    pub fn members(&self) -> Vec<(String, Self)> {
        let members = self.value.member_values().unwrap_or_default();
        members
            .into_iter()
            .map(|(key, value)| {
                let found = self.below(PathSegment::Key(key.to_string()), value);
                (key.into_owned(), found)
            })
            .collect()
    }

    /// The elements of this array (none when it is no array).
    pub fn elements(&self) -> Vec<Self> {
        let elements = self.value.element_values().unwrap_or_default();
        let elements = elements.into_iter().enumerate();
        elements
            .map(|(i, value)| self.below(PathSegment::Index(i), value))
            .collect()
    }

    fn below(&self, step: PathSegment, value: Json<'a>) -> Self {
        let mut below = self.below.clone();
        below.push(step);
        Self {
            member: self.member,
            below,
            value,
        }
    }

    pub fn is_object(&self) -> bool {
        self.value.kind() == JsonKind::Object
    }

    /// The text of a string.
    pub fn string(&self) -> Option<String> {
        self.value.as_string().map(Cow::into_owned)
    }

    /// Whether this is the string `text`.
    pub fn is_string(&self, text: &str) -> bool {
        self.value.as_string().is_some_and(|found| found == text)
    }

    /// Where this is in the item.
    pub fn path(&self) -> FieldPath {
        self.path_to(&self.below)
    }

    /// Where the value at `below` (a path inside the member) is in the item.
    fn path_to(&self, below: &[PathSegment]) -> FieldPath {
        let path = FieldPath::root().key(self.member.key);
        below.iter().fold(path, |path, step| match step {
            PathSegment::Key(key) => path.key(key),
            PathSegment::Index(index) => path.index(*index),
        })
    }

    /// The value as a JSON parser reads it: a double where it reads one (`1.0`), an
    /// integer no double holds with its digits.
    pub fn parsed(&self) -> serde_json::Value {
        if let Some((_, written)) = self
            .unsafe_integers()
            .find(|(below, _)| below.len() == self.below.len())
        {
            return serde_json::from_str(written).expect("an integer's digits");
        }
        let double = self.member.is_integral_double(&self.below);
        super::parsed(&self.value, double)
    }

    /// The whole number a JSON parser reads (none for `1.0`, `-0`, a negative number or
    /// one beyond 64 bits).
    pub fn whole(&self) -> Option<u64> {
        let written = self
            .unsafe_integers()
            .find(|(below, _)| below.len() == self.below.len())
            .map(|(_, digits)| digits);
        let double = self.member.is_integral_double(&self.below);
        whole_number(Some(&self.value), written, double)
    }

    /// The value as messages describe it, as a JSON parser reads it.
    pub fn describe(&self) -> String {
        describe(&self.parsed())
    }

    /// The integers no double holds inside this value: the path below the member, the
    /// digits.
    fn unsafe_integers(&self) -> impl Iterator<Item = (&'a [PathSegment], &'a str)> + '_ {
        self.member
            .unsafe_integers
            .iter()
            .map(|(_, (below, written))| (below.segments(), written.as_str()))
            .filter(|(below, _)| below.starts_with(&self.below))
    }

    /// The value for the record, refused if it holds an integer no double holds.
    pub fn stored(&self) -> Result<Json<'a>, AdapterError> {
        match self.unsafe_integers().next() {
            None => Ok(self.value.clone()),
            Some((below, written)) => Err(super::unsafe_integer(
                self.path_to(below),
                &FieldPath::root(),
                written,
            )),
        }
    }
}

/// A value for the record (`null` when absent), refused if it holds an integer no double
/// holds.
pub fn stored(found: Option<Found<'_>>) -> Result<Json<'_>, AdapterError> {
    found.map_or(Ok(Json::NULL), |found| found.stored())
}

/// A non-empty string the producer must give at `at` (`what` names it in the error).
pub fn required_string(
    found: Option<Found<'_>>,
    at: FieldPath,
    what: &str,
) -> Result<String, AdapterError> {
    match found {
        None => Err(AdapterError::new(
            at,
            format!("expected {what}, found nothing"),
        )),
        Some(found) => found
            .string()
            .filter(|text| !text.is_empty())
            .ok_or_else(|| {
                AdapterError::new(
                    found.path(),
                    format!("expected {what}, found {}", found.describe()),
                )
            }),
    }
}

/// The whole number a JSON parser reads from `value`: its digits as `written` when no
/// double holds it, none when the parser reads a double (`double`: `1.0`, `1e2`, `-0`).
pub fn whole_number(value: Option<&Json<'_>>, written: Option<&str>, double: bool) -> Option<u64> {
    match written {
        Some(digits) => digits.parse().ok(),
        None => value.and_then(Json::as_u64).filter(|_| !double),
    }
}

/// The whole number a JSON parser reads from a top-level member (none for `1.0`, `-0`, a
/// negative number or one beyond 64 bits).
pub fn whole_member(member: &Member<'_>) -> Option<u64> {
    let written = member
        .unsafe_integer
        .filter(|(below, _)| below.is_root())
        .map(|(_, digits)| digits.as_str());
    whole_number(Some(&member.peek()), written, member.written_as_fraction)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonl::{NonFinitePolicy, scan_bytes};

    /// What a JSON parser makes of a nested value is read from the scan: an integer no
    /// double holds is named as written and refused where it is, and only inside the value
    /// stored; a `1.0` is a double.
    #[test]
    fn a_nested_value_is_described_and_stored_as_a_parser_reads_it() {
        let mut members = Members::new();
        let line = br#"{"a": {"b": 9007199254740993, "c": 1.0, "bb": [2]}}"#;
        scan_bytes(line, 1, NonFinitePolicy::Reject, &mut members).unwrap();
        let a = Found::top(&members, "a").unwrap();
        let b = a.key("b").unwrap();
        assert_eq!(b.describe(), "the number 9007199254740993");
        assert_eq!(a.key("c").unwrap().describe(), "the number 1.0");
        assert_eq!(a.describe(), "an object");
        let refused = b.stored().unwrap_err();
        assert_eq!(refused.path.to_string(), "a.b");
        assert!(
            refused.message.contains("9007199254740993"),
            "{}",
            refused.message
        );
        assert_eq!(a.stored().unwrap_err().path.to_string(), "a.b");
        // A sibling whose key begins the same is not inside `b`.
        let bb = a.key("bb").unwrap();
        assert_eq!(bb.stored().unwrap().as_str(), "[2]");
        assert_eq!(bb.elements()[0].path().to_string(), "a.bb[0]");
        assert_eq!(a.key("c").unwrap().stored().unwrap().as_str(), "1");
    }

    #[test]
    fn whole_numbers_are_what_a_parser_reads_as_unsigned_integers() {
        let mut members = Members::new();
        let line = br#"{"a": 3, "b": 3.0, "c": -0, "d": -1, "e": 9007199254740993, "f": 18446744073709551616}"#;
        scan_bytes(line, 1, NonFinitePolicy::Reject, &mut members).unwrap();
        let whole: Vec<Option<u64>> = members.iter().map(|m| whole_member(&m)).collect();
        assert_eq!(
            whole,
            [Some(3), None, None, None, Some(9007199254740993), None]
        );
    }
}
