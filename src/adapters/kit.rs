//! What every adapter is built from, so that an adapter file holds only its mapping
//! decisions:
//!
//! - [`new_record`], the record builder: the fields every record of an import shares
//!   (run, model, `--language`, `--variant`, the schema's defaults of filter `none` and
//!   repeat 0, the source), filled from the import context; the adapter sets the rest. A
//!   structured format's `begin` makes an [`ItemMembers`], whose method turns each item,
//!   read as members (a Parquet row's columns too), into its record
//!   ([`normalize_members`] is the hook that calls it); [`Found`] reads a value nested in
//!   a member. The identity checks are [`super::stable_id`]'s, the checks of a line's own
//!   context (`benchmark`, `language`, the strict run's `script`) the functions beside
//!   [`super::Adapter`].
//! - [`LineFields`], the typed, field-precise reading of a line's members (each getter
//!   takes one member and says exactly what was wrong with it), and [`JsonLine`], the line
//!   a line adapter is handed; [`ObjectFields`], the same reading of an object nested in
//!   a member.
//!
//! Members are canonical JSON text borrowed from the streaming reader's buffers: a getter
//! that reads a scalar decodes only that member; a member moved into the record
//! ([`LineFields::json`], [`LineFields::rest`]) is copied as it is. The getters say what
//! [`crate::record::Fields`] says of the same value, so messages do not depend on which
//! reader an adapter uses.

#[cfg(test)]
pub(crate) mod fixtures;
mod found;
mod object;
mod record;

pub use found::{Found, required_string, stored, whole_member, whole_number};
pub use object::ObjectFields;
pub use record::{ItemMembers, ItemRecord, ORIGINAL, add_facts, new_record, normalize_members};

use std::borrow::Cow;

use crate::canonical_json::{Json, JsonKind, ObjectWriter};
use crate::jsonl::{FieldPath, Member, Members, PathSegment};
use crate::record::FieldError;
use crate::record::fields::MAX_SAFE_INTEGER;

use super::AdapterError;

/// One nonblank JSON Lines line as an adapter reads it.
#[derive(Debug, Clone, Copy)]
pub struct JsonLine<'a> {
    /// One-based line number in the file.
    pub number: u64,
    /// The line's top-level members, each value as canonical text.
    pub members: &'a Members,
}

/// A line's members, taken one at a time, each checked for its type.
#[derive(Debug)]
pub struct LineFields<'a> {
    members: &'a Members,
    taken: Taken,
}

/// Which members were taken: a bit each for the first 64 (no allocation for a line),
/// a flag each beyond.
#[derive(Debug)]
struct Taken {
    first: u64,
    beyond: Vec<bool>,
}

impl Taken {
    fn new(members: usize) -> Self {
        Self {
            first: 0,
            beyond: vec![false; members.saturating_sub(64)],
        }
    }

    fn get(&self, index: usize) -> bool {
        match index.checked_sub(64) {
            None => self.first & (1 << index) != 0,
            Some(beyond) => self.beyond[beyond],
        }
    }

    /// Marks member `index` taken; whether it was already.
    fn take(&mut self, index: usize) -> bool {
        let was = self.get(index);
        match index.checked_sub(64) {
            None => self.first |= 1 << index,
            Some(beyond) => self.beyond[beyond] = true,
        }
        was
    }
}

impl<'a> LineFields<'a> {
    pub fn new(members: &'a Members) -> Self {
        Self {
            members,
            taken: Taken::new(members.len()),
        }
    }

    /// The path of one member.
    pub fn path(&self, name: &str) -> FieldPath {
        FieldPath::root().key(name)
    }

    fn wrong(&self, name: &str, expected: &str, found: &Member<'_>) -> FieldError {
        FieldError::new(
            self.path(name),
            format!("expected {expected}, found {}", describe(found)),
        )
    }

    fn missing(&self, name: &str) -> FieldError {
        FieldError::new(self.path(name), "required field is missing")
    }

    /// Looks at a member without taking it (`None` once it was taken, as the tree
    /// reader's [`crate::record::Fields`] says).
    pub fn peek(&self, name: &str) -> Option<Member<'a>> {
        let index = self.members.position(name)?;
        (!self.taken.get(index)).then(|| self.members.at(index))
    }

    /// Takes a member out as it is, if present (and not taken before).
    pub fn take(&mut self, name: &str) -> Option<Member<'a>> {
        let index = self.members.position(name)?;
        if self.taken.take(index) {
            return None;
        }
        Some(self.members.at(index))
    }

    /// A member's value for the record, refused if it holds an integer no double holds.
    pub fn stored(&self, name: &str, member: &Member<'a>) -> Result<Json<'a>, AdapterError> {
        member
            .json()
            .map_err(|(below, value)| unsafe_integer(self.path(name), below, value))
    }

    /// A member for the record, if present.
    pub fn json(&mut self, name: &str) -> Result<Option<Json<'a>>, AdapterError> {
        match self.take(name) {
            None => Ok(None),
            Some(member) => self.stored(name, &member).map(Some),
        }
    }

    /// A member that must be present (any JSON value, null included), for the record.
    pub fn required(&mut self, name: &str) -> Result<Json<'a>, AdapterError> {
        self.json(name)?.ok_or_else(|| self.missing(name).into())
    }

    /// A non-empty string, or `None` when the member is absent or null.
    pub fn optional_string(&mut self, name: &str) -> Result<Option<Cow<'a, str>>, FieldError> {
        self.string(name, "a non-empty string or null")
    }

    /// A non-empty string that must be present.
    pub fn required_string(&mut self, name: &str) -> Result<Cow<'a, str>, FieldError> {
        match self.peek(name) {
            None => Err(self.missing(name)),
            Some(member) => self
                .string(name, "a non-empty string")?
                .ok_or_else(|| self.wrong(name, "a non-empty string", &member)),
        }
    }

    /// A member that must be present: a non-empty string, or null (`None`).
    pub fn required_nullable_string(
        &mut self,
        name: &str,
    ) -> Result<Option<Cow<'a, str>>, FieldError> {
        if self.peek(name).is_none() {
            return Err(self.missing(name));
        }
        self.optional_string(name)
    }

    /// Takes a member that must be a non-empty string or null (`None` when absent too);
    /// `expected` is what the error says was wanted.
    fn string(&mut self, name: &str, expected: &str) -> Result<Option<Cow<'a, str>>, FieldError> {
        let Some(member) = self.take(name) else {
            return Ok(None);
        };
        match member.peek().kind() {
            JsonKind::Null => Ok(None),
            JsonKind::String => {
                let text = string_of(&member);
                if text.is_empty() {
                    Err(self.wrong(name, expected, &member))
                } else {
                    Ok(Some(text))
                }
            }
            _ => Err(self.wrong(name, expected, &member)),
        }
    }

    /// Refuses an explicit null where a default applies: null means unknown, and a default
    /// is not unknown.
    fn no_null(&self, name: &str) -> Result<(), FieldError> {
        match self.peek(name) {
            Some(member) if member.peek().is_null() => Err(FieldError::new(
                self.path(name),
                "null is not allowed here; leave the field out to get its default",
            )),
            _ => Ok(()),
        }
    }

    /// A non-empty string with a default: absent gives `None` (the caller's default); an
    /// explicit null is refused.
    pub fn defaulted_string(&mut self, name: &str) -> Result<Option<Cow<'a, str>>, FieldError> {
        self.no_null(name)?;
        self.optional_string(name)
    }

    /// A non-negative integer with a default: absent gives `None`; explicit null is
    /// refused.
    pub fn defaulted_index(&mut self, name: &str) -> Result<Option<u64>, FieldError> {
        self.no_null(name)?;
        self.optional_index(name)
    }

    /// A non-negative integer no larger than 2^53 − 1, if present and not null.
    pub fn optional_index(&mut self, name: &str) -> Result<Option<u64>, FieldError> {
        let Some(member) = self.take(name) else {
            return Ok(None);
        };
        if member.peek().is_null() {
            return Ok(None);
        }
        match member.peek().as_u64() {
            Some(n)
                if n <= MAX_SAFE_INTEGER
                    && member.unsafe_integer.is_none()
                    && !member.written_as_fraction =>
            {
                Ok(Some(n))
            }
            _ => Err(self.wrong(name, "a non-negative integer", &member)),
        }
    }

    /// `true`, `false`, or null (unknown). Absent counts as unknown only when allowed.
    pub fn nullable_bool(
        &mut self,
        name: &str,
        required: bool,
    ) -> Result<Option<bool>, FieldError> {
        let Some(member) = self.take(name) else {
            return if required {
                Err(self.missing(name))
            } else {
                Ok(None)
            };
        };
        let json = member.peek();
        match json.kind() {
            JsonKind::Null => Ok(None),
            JsonKind::Bool => Ok(json.as_bool()),
            _ => Err(self.wrong(name, "true, false or null", &member)),
        }
    }

    /// An object for the record; absent or null gives `{}` unless `required`.
    pub fn object(&mut self, name: &str, required: bool) -> Result<Json<'a>, AdapterError> {
        let Some(member) = self.take(name) else {
            return if required {
                Err(self.missing(name).into())
            } else {
                Ok(Json::EMPTY_OBJECT)
            };
        };
        match member.peek().kind() {
            JsonKind::Null if !required => Ok(Json::EMPTY_OBJECT),
            JsonKind::Object => self.stored(name, &member),
            _ => Err(self.wrong(name, "an object", &member).into()),
        }
    }

    /// An object or null, for the record; absent gives null unless `required`.
    pub fn object_or_null(&mut self, name: &str, required: bool) -> Result<Json<'a>, AdapterError> {
        let Some(member) = self.take(name) else {
            return if required {
                Err(self.missing(name).into())
            } else {
                Ok(Json::NULL)
            };
        };
        match member.peek().kind() {
            JsonKind::Null | JsonKind::Object => self.stored(name, &member),
            _ => Err(self.wrong(name, "an object or null", &member).into()),
        }
    }

    /// An array for the record, if present and not null.
    pub fn array(&mut self, name: &str) -> Result<Option<Json<'a>>, AdapterError> {
        let Some(member) = self.take(name) else {
            return Ok(None);
        };
        match member.peek().kind() {
            JsonKind::Null => Ok(None),
            JsonKind::Array => self.stored(name, &member).map(Some),
            _ => Err(AdapterError::new(
                self.path(name),
                format!("expected an array, found {}", member.peek().describe()),
            )),
        }
    }

    /// An array of strings; absent gives an empty list unless `required`.
    pub fn strings(&mut self, name: &str, required: bool) -> Result<Vec<String>, FieldError> {
        let Some(member) = self.take(name) else {
            return if required {
                Err(self.missing(name))
            } else {
                Ok(Vec::new())
            };
        };
        let json = member.peek();
        let Some(elements) = json.elements() else {
            return Err(self.wrong(name, "an array of strings", &member));
        };
        elements
            .iter()
            .enumerate()
            .map(|(i, element)| match element.as_string() {
                Some(text) => Ok(text.into_owned()),
                None => Err(FieldError::new(
                    self.path(name).index(i),
                    format!("expected a string, found {}", element.describe()),
                )),
            })
            .collect()
    }

    /// The members not taken so far, in written order.
    pub fn remaining(&self) -> impl Iterator<Item = Member<'a>> + '_ {
        let members = self.members;
        (0..members.len())
            .filter(|&index| !self.taken.get(index))
            .map(move |index| members.at(index))
    }

    /// Refuses any member not taken so far.
    pub fn deny_unknown(&self) -> Result<(), FieldError> {
        match self.remaining().next() {
            None => Ok(()),
            Some(member) => Err(FieldError::new(
                self.path(member.key),
                "unknown field (schema v1 has no such field)",
            )),
        }
    }

    /// The members not taken so far, as one object for the record, with `also` added
    /// (a key both have is refused by the caller beforehand).
    pub fn rest(&self, also: Vec<(Cow<'a, str>, Json<'a>)>) -> Result<Json<'static>, AdapterError> {
        let mut object = ObjectWriter::new();
        for member in self.remaining() {
            object.insert(member.key, self.stored(member.key, &member)?);
        }
        for (key, value) in also {
            object.insert(key, value);
        }
        Ok(object.finish())
    }
}

/// A member's value as messages describe it; a number written with a fraction reads as
/// the tree reader's double (`the number 1.0`).
pub fn describe(member: &Member<'_>) -> String {
    // The canonical text of an integer no double holds is its nearest double: name the
    // integer as written.
    if let Some((below, written)) = member.unsafe_integer
        && below.is_root()
    {
        return format!("the number {written}");
    }
    crate::record::fields::describe(&parsed(&member.peek(), member.written_as_fraction))
}

/// The value as a JSON parser reads it: a number it reads as a double (`double`: written
/// `1.0`, `1e2`, `-0` or beyond 64 bits) is one, though its canonical text is an integer
/// (`-0` comes back as `0.0`: canonical text keeps no sign of zero). Messages and warnings
/// that quote a value as the tree reader did print this.
pub fn parsed(value: &Json<'_>, double: bool) -> serde_json::Value {
    match value.as_f64() {
        Some(number) if double => serde_json::Value::from(number),
        _ => value.to_value(),
    }
}

/// The text of a member that is a string, `None` for any other value.
pub fn text<'a>(member: &Member<'a>) -> Option<Cow<'a, str>> {
    (member.peek().kind() == JsonKind::String).then(|| string_of(member))
}

/// The text of a member known to be a string.
fn string_of<'a>(member: &Member<'a>) -> Cow<'a, str> {
    let inner = &member.value[1..member.value.len() - 1];
    if inner.contains('\\') {
        Cow::Owned(
            member
                .peek()
                .as_string()
                .expect("a string member")
                .into_owned(),
        )
    } else {
        Cow::Borrowed(inner)
    }
}

/// The error for an integer no double holds, at `below` inside the member at `at`.
pub fn unsafe_integer(at: FieldPath, below: &FieldPath, value: &str) -> AdapterError {
    let mut path = at;
    for segment in below.segments() {
        match segment {
            PathSegment::Key(key) => path = path.key(key),
            PathSegment::Index(index) => path = path.index(*index),
        }
    }
    AdapterError::new(
        path,
        format!(
            "the integer {value} has no exact JSON double (RFC 8785 stores numbers as doubles)"
        ),
    )
    .with_hint("write integers beyond 2^53 as strings; as numbers every JSON reader may round them")
}

/// A value the adapter built as a tree (from a header file or an index: an OpenCompass
/// parsed letter, HELM's stats) as the record's `field`, refused where it holds an integer
/// no double holds (at its path under `field`).
pub fn stored_tree(field: &str, value: &serde_json::Value) -> Result<Json<'static>, AdapterError> {
    Json::of(value).map_err(|error| match error {
        crate::canonical_json::CanonicalError::UnsafeInteger { path, value } => {
            unsafe_integer(path.under(field), &FieldPath::root(), &value)
        }
        other => AdapterError::new(FieldPath::root().key(field), other.to_string()),
    })
}

/// The canonical array of `elements`.
pub fn array(elements: Vec<Json<'_>>) -> Json<'static> {
    let texts: Vec<&str> = elements.iter().map(Json::as_str).collect();
    Json::canonical_owned(format!("[{}]", texts.join(",")))
}

/// A whole number the record stores that the item gave or implies (an epoch, a
/// position), refused at `at` when canonical JSON cannot hold it: a number whose double
/// prints with other digits (2^53 + 1; 2^53 and 2^53 + 2 are doubles).
pub fn whole(value: u64, at: FieldPath) -> Result<Json<'static>, AdapterError> {
    Json::of(&serde_json::Value::from(value))
        .map_err(|_| unsafe_integer(at, &FieldPath::root(), &value.to_string()))
}

/// Runs a line adapter on one line of JSON text, as an import would: its records, as
/// trees (for the adapters' tests).
#[cfg(test)]
pub(crate) fn records_of_line(
    hook: super::LinesHook,
    text: &str,
    number: u64,
    policy: crate::jsonl::NonFinitePolicy,
    context: &super::ImportContext<'_>,
) -> Result<Vec<crate::record::Record>, AdapterError> {
    let mut members = Members::new();
    crate::jsonl::scan_bytes(text.as_bytes(), number, policy, &mut members)
        .expect("the test line is JSON");
    let mut out = Vec::new();
    hook(
        JsonLine {
            number,
            members: &members,
        },
        context,
        &mut out,
    )?;
    Ok(out.iter().map(|record| record.to_record()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonl::{NonFinitePolicy, scan_bytes};
    use crate::record::Fields;
    use serde_json::{Value, json};

    /// "Numbers are doubles": a whole number is stored when its double prints as its
    /// digits, as canonical JSON writes it.
    #[test]
    fn a_whole_number_is_refused_only_where_its_double_prints_other_digits() {
        let at = || FieldPath::root().key("epoch");
        assert_eq!(whole(1 << 53, at()).unwrap().as_str(), "9007199254740992");
        assert_eq!(
            whole((1 << 53) + 2, at()).unwrap().as_str(),
            "9007199254740994"
        );
        let refused = whole((1 << 53) + 1, at()).unwrap_err();
        assert_eq!(refused.path.to_string(), "epoch");
        assert!(refused.message.contains("9007199254740993"));
    }

    fn members(value: &Value) -> Members {
        let mut members = Members::new();
        scan_bytes(
            value.to_string().as_bytes(),
            1,
            NonFinitePolicy::Reject,
            &mut members,
        )
        .unwrap();
        members
    }

    fn tree(value: &Value) -> Fields {
        Fields::new(value.as_object().unwrap().clone(), FieldPath::root())
    }

    /// Every getter says what the tree reader's getter says of the same member.
    #[test]
    fn the_getters_agree_with_the_tree_getters() {
        let line = json!({
            "s": "text", "e": "", "esc": "a\"b\\n", "n": null, "i": 3, "neg": -1,
            "f": 1.5, "one": 1.0, "e2": 1e2, "big": 9007199254740992u64, "b": true, "o": {"k": [1]}, "a": ["x", 2],
            "ss": ["x", "y"]
        });
        let scanned = members(&line);
        let names = [
            "s", "e", "esc", "n", "i", "neg", "f", "one", "e2", "big", "b", "o", "a", "ss",
            "missing",
        ];
        for name in names {
            let (mut l, mut t) = (LineFields::new(&scanned), tree(&line));
            assert_eq!(
                l.optional_string(name).map(|s| s.map(Cow::into_owned)),
                t.optional_string(name),
                "{name}"
            );
            let (mut l, mut t) = (LineFields::new(&scanned), tree(&line));
            assert_eq!(
                l.required_string(name).map(Cow::into_owned),
                t.required_string(name),
                "{name}"
            );
            let (mut l, mut t) = (LineFields::new(&scanned), tree(&line));
            assert_eq!(
                l.required_nullable_string(name)
                    .map(|s| s.map(Cow::into_owned)),
                t.required_nullable_string(name),
                "{name}"
            );
            let (mut l, mut t) = (LineFields::new(&scanned), tree(&line));
            assert_eq!(l.optional_index(name), t.optional_index(name), "{name}");
            let (mut l, mut t) = (LineFields::new(&scanned), tree(&line));
            assert_eq!(l.defaulted_index(name), t.defaulted_index(name), "{name}");
            let (mut l, mut t) = (LineFields::new(&scanned), tree(&line));
            assert_eq!(
                l.defaulted_string(name).map(|s| s.map(Cow::into_owned)),
                t.defaulted_string(name),
                "{name}"
            );
            for required in [false, true] {
                let (mut l, mut t) = (LineFields::new(&scanned), tree(&line));
                assert_eq!(
                    l.nullable_bool(name, required),
                    t.nullable_bool(name, required),
                    "{name}"
                );
                let (mut l, mut t) = (LineFields::new(&scanned), tree(&line));
                assert_eq!(
                    l.strings(name, required),
                    t.strings(name, required),
                    "{name}"
                );
                let (mut l, mut t) = (LineFields::new(&scanned), tree(&line));
                assert_eq!(
                    l.object(name, required).map(|j| j.to_value()),
                    t.object(name, required)
                        .map(Value::Object)
                        .map_err(AdapterError::from),
                    "{name}"
                );
                let (mut l, mut t) = (LineFields::new(&scanned), tree(&line));
                assert_eq!(
                    l.object_or_null(name, required).map(|j| j.to_value()),
                    t.object_or_null(name, required).map_err(AdapterError::from),
                    "{name}"
                );
            }
        }
    }

    /// A member taken is gone for every getter, as a field taken out of a tree is.
    #[test]
    fn a_taken_member_is_missing_to_every_getter() {
        let line = json!({"s": "text", "n": null, "i": 3});
        let scanned = members(&line);
        for name in ["s", "n", "i"] {
            let (mut l, mut t) = (LineFields::new(&scanned), tree(&line));
            assert!(l.take(name).is_some() && t.take(name).is_some());
            assert!(l.peek(name).is_none(), "{name}");
            assert_eq!(
                l.required_string(name).map(Cow::into_owned),
                t.required_string(name),
                "{name}"
            );
            assert_eq!(
                l.required_nullable_string(name)
                    .map(|s| s.map(Cow::into_owned)),
                t.required_nullable_string(name),
                "{name}"
            );
            assert_eq!(l.defaulted_index(name), t.defaulted_index(name), "{name}");
        }
    }

    #[test]
    fn what_is_not_taken_is_the_rest() {
        let line = json!({"known": 1, "z": [2], "a": {"b": null}});
        let scanned = members(&line);
        let mut f = LineFields::new(&scanned);
        f.take("known");
        assert!(f.take("known").is_none(), "a member is taken once");
        assert_eq!(f.deny_unknown().unwrap_err().path.to_string(), "z");
        let rest = f.rest(vec![("m".into(), Json::bool(true))]).unwrap();
        assert_eq!(rest.as_str(), r#"{"a":{"b":null},"m":true,"z":[2]}"#);
    }

    #[test]
    fn members_beyond_the_sixty_fourth_are_taken_once_and_left_as_the_rest() {
        let object: serde_json::Map<String, serde_json::Value> =
            (0..70).map(|n| (format!("k{n:02}"), json!(n))).collect();
        let scanned = members(&serde_json::Value::Object(object));
        let mut f = LineFields::new(&scanned);
        for n in (0..70).filter(|n| n % 3 != 0) {
            assert!(f.take(&format!("k{n:02}")).is_some(), "k{n:02}");
            assert!(f.take(&format!("k{n:02}")).is_none(), "k{n:02} again");
        }
        let left: Vec<&str> = f.remaining().map(|member| member.key).collect();
        let expected: Vec<String> = (0..70)
            .filter(|n| n % 3 == 0)
            .map(|n| format!("k{n:02}"))
            .collect();
        assert_eq!(left, expected);
    }

    #[test]
    fn a_stored_member_with_an_integer_no_double_holds_is_refused_at_its_path() {
        let mut scanned = Members::new();
        scan_bytes(
            br#"{"doc": {"n": [1, 9007199254740993]}, "ok": 1}"#,
            1,
            NonFinitePolicy::Reject,
            &mut scanned,
        )
        .unwrap();
        let mut f = LineFields::new(&scanned);
        assert!(f.json("ok").unwrap().is_some());
        let error = f.json("doc").unwrap_err();
        assert_eq!(error.path.to_string(), "doc.n[1]");
        assert!(
            error.message.contains("9007199254740993"),
            "{}",
            error.message
        );
    }
}
