//! Canonical JSON as text: [`Json`], the canonical text of one value, read without
//! parsing it into a tree (its kind, a string's or number's value) and assembled into
//! larger canonical values ([`ObjectWriter`]) by copying.
//!
//! The streaming reader hands adapters each member of a line as a [`Json`] borrowed from
//! its buffer; an adapter reads the few it interprets and moves the rest into the record
//! as they are. Because the text is canonical already, an object of canonical members is
//! canonical once its keys are sorted, and nothing is reparsed or rewritten.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::Value;

use super::{CanonicalError, push_string, utf16_order, write_value};

/// How many members [`Json::member_values`] has room for before it counts them.
const MEMBERS_ROOM: usize = 24;

/// The RFC 8785 canonical text of one JSON value, owned or borrowed.
///
/// Every constructor guarantees the text is canonical: [`Json::of`] writes it,
/// `Json::canonical` trusts a caller that holds canonical text (the streaming reader),
/// [`ObjectWriter`] assembles canonical members.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Json<'a>(Cow<'a, str>);

/// The kind of a JSON value, told by its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

impl Json<'static> {
    /// `null`.
    pub const NULL: Json<'static> = Json(Cow::Borrowed("null"));
    /// `{}`.
    pub const EMPTY_OBJECT: Json<'static> = Json(Cow::Borrowed("{}"));
    /// `[]`.
    pub const EMPTY_ARRAY: Json<'static> = Json(Cow::Borrowed("[]"));

    /// The canonical text of `value`; refuses an integer no double holds exactly.
    pub fn of(value: &Value) -> Result<Self, CanonicalError> {
        let mut out = Vec::new();
        write_value(value, &mut out)?;
        Ok(Json(Cow::Owned(
            String::from_utf8(out).expect("canonical JSON of a Value is UTF-8"),
        )))
    }

    /// A JSON string holding `text`.
    pub fn string(text: &str) -> Self {
        let mut out = String::new();
        push_string(text, &mut out);
        Json(Cow::Owned(out))
    }

    /// A non-negative integer no larger than 2^53 − 1 (a double holds it exactly).
    pub fn unsigned(value: u64) -> Self {
        debug_assert!(value <= crate::record::fields::MAX_SAFE_INTEGER);
        Json(Cow::Owned(value.to_string()))
    }

    /// `true` or `false`.
    pub fn bool(value: bool) -> Self {
        Json(Cow::Borrowed(if value { "true" } else { "false" }))
    }
}

impl<'a> Json<'a> {
    /// Text the caller knows to be canonical (the streaming reader's output).
    pub(crate) fn canonical(text: &'a str) -> Self {
        debug_assert!(!text.is_empty());
        Json(Cow::Borrowed(text))
    }

    /// Owned canonical text the caller knows to be canonical.
    pub(crate) fn canonical_owned(text: String) -> Json<'static> {
        Json(Cow::Owned(text))
    }

    /// The canonical text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The same text, owned.
    pub fn into_owned(self) -> Json<'static> {
        Json(Cow::Owned(self.0.into_owned()))
    }

    /// A borrowed view of this text.
    pub fn borrow(&self) -> Json<'_> {
        Json(Cow::Borrowed(&self.0))
    }

    /// The kind of the value.
    pub fn kind(&self) -> Kind {
        match self.0.as_bytes()[0] {
            b'n' => Kind::Null,
            b't' | b'f' => Kind::Bool,
            b'"' => Kind::String,
            b'[' => Kind::Array,
            b'{' => Kind::Object,
            _ => Kind::Number,
        }
    }

    pub fn is_null(&self) -> bool {
        self.kind() == Kind::Null
    }

    /// The boolean, if the value is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self.as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    }

    /// The string's text, if the value is a string: borrowed unless it had escapes.
    pub fn as_string(&self) -> Option<Cow<'_, str>> {
        let inner = self.as_str().strip_prefix('"')?.strip_suffix('"')?;
        if !inner.contains('\\') {
            return Some(Cow::Borrowed(inner));
        }
        Some(Cow::Owned(unescape(inner)))
    }

    /// The number as a double, if the value is a number.
    pub fn as_f64(&self) -> Option<f64> {
        (self.kind() == Kind::Number).then(|| {
            self.as_str()
                .parse()
                .expect("canonical numbers are valid doubles")
        })
    }

    /// The number as an unsigned integer, if it is a non-negative integer that fits.
    pub fn as_u64(&self) -> Option<u64> {
        let text = self.as_str();
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        text.parse().ok()
    }

    /// The value as a tree (for the few fields an adapter walks).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.as_str()).expect("canonical JSON is JSON")
    }

    /// The value's type and, when short, the value, as messages describe a found value.
    pub fn describe(&self) -> String {
        crate::record::fields::describe(&self.to_value())
    }

    /// The members of an object, each key decoded and each value canonical, in canonical
    /// (sorted) order; `None` if the value is not an object.
    pub fn members(&self) -> Option<Vec<(Cow<'_, str>, Json<'_>)>> {
        object_members(self.as_str())
    }

    /// The members of an object one at a time, as [`Json::members`] lists them: a caller
    /// that stops early walks no further.
    pub fn iter_members(&self) -> Option<ObjectMembers<'_>> {
        ObjectMembers::of(self.as_str())
    }

    /// The value of one key of an object; `None` if absent or if the value is not an
    /// object. Canonical keys are in order: the walk ends at the first key past `key`.
    pub fn get(&self, key: &str) -> Option<Json<'_>> {
        member_of(self.iter_members()?, key)
    }

    /// [`Json::get`], the value borrowing from the text this value borrows from (so it
    /// may outlive this value), or a copy when this value owns its text.
    pub fn member(&self, key: &str) -> Option<Json<'a>> {
        match &self.0 {
            Cow::Borrowed(text) => member_of(ObjectMembers::of(text)?, key),
            Cow::Owned(_) => self.get(key).map(Json::into_owned),
        }
    }

    /// [`Json::members`], borrowing as [`Json::member`] does.
    pub fn member_values(&self) -> Option<Vec<(Cow<'a, str>, Json<'a>)>> {
        match &self.0 {
            Cow::Borrowed(text) => {
                // Room given once: grown from four by doubling, the list of a lighteval
                // row's `doc` (18 members) was moved three times.
                let mut members = Vec::with_capacity(MEMBERS_ROOM);
                members.extend(ObjectMembers::of(text)?);
                Some(members)
            }
            Cow::Owned(_) => Some(
                self.iter_members()?
                    .map(|(key, value)| (Cow::Owned(key.into_owned()), value.into_owned()))
                    .collect(),
            ),
        }
    }

    /// [`Json::elements`], borrowing as [`Json::member`] does.
    pub fn element_values(&self) -> Option<Vec<Json<'a>>> {
        match &self.0 {
            Cow::Borrowed(text) => Some(ArrayElements::of(text)?.collect()),
            Cow::Owned(_) => Some(self.iter_elements()?.map(Json::into_owned).collect()),
        }
    }

    /// The elements of an array, each canonical; `None` if the value is not an array.
    pub fn elements(&self) -> Option<Vec<Json<'_>>> {
        self.iter_elements().map(Iterator::collect)
    }

    /// The elements of an array one at a time, as [`Json::elements`] lists them, with
    /// nothing allocated: `None` if the value is not an array.
    pub fn iter_elements(&self) -> Option<ArrayElements<'_>> {
        ArrayElements::of(self.as_str())
    }
}

/// The elements of a canonical array, each read when asked for, borrowed from the array's
/// text.
pub struct ArrayElements<'t> {
    walker: Walker<'t>,
    /// The closing bracket has been read.
    done: bool,
}

impl<'t> ArrayElements<'t> {
    /// The elements of the canonical `text`, or `None` if it is not an array.
    fn of(text: &'t str) -> Option<Self> {
        if !text.starts_with('[') {
            return None;
        }
        let mut walker = Walker::new(text);
        walker.expect(b'[');
        let done = walker.peek() == b']';
        Some(ArrayElements { walker, done })
    }
}

/// The value of `key` among an object's `members`: canonical keys are in order, so the
/// walk ends at the first key past `key`.
fn member_of<'t>(members: ObjectMembers<'t>, key: &str) -> Option<Json<'t>> {
    for (found, value) in members {
        match utf16_order(&found, key) {
            Ordering::Less => {}
            Ordering::Equal => return Some(value),
            Ordering::Greater => return None,
        }
    }
    None
}

impl<'t> Iterator for ArrayElements<'t> {
    type Item = Json<'t>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let element = Json::canonical(self.walker.value());
        self.done = self.walker.next() == b']';
        Some(element)
    }
}

/// The members of the canonical object `text`, borrowing from it; `None` if it is not an
/// object.
pub(crate) fn object_members(text: &str) -> Option<Vec<(Cow<'_, str>, Json<'_>)>> {
    ObjectMembers::of(text).map(Iterator::collect)
}

/// The members of a canonical object, each read when asked for: its key decoded, its value
/// canonical text borrowed from the object's.
pub struct ObjectMembers<'t> {
    walker: Walker<'t>,
    /// The closing brace has been read.
    done: bool,
}

impl<'t> ObjectMembers<'t> {
    /// The members of the canonical `text`, or `None` if it is not an object.
    pub(crate) fn of(text: &'t str) -> Option<Self> {
        if !text.starts_with('{') {
            return None;
        }
        let mut walker = Walker::new(text);
        walker.expect(b'{');
        let done = walker.peek() == b'}';
        Some(Self { walker, done })
    }
}

impl<'t> Iterator for ObjectMembers<'t> {
    type Item = (Cow<'t, str>, Json<'t>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let key = self.walker.string();
        self.walker.expect(b':');
        let value = self.walker.value();
        self.done = self.walker.next() == b'}';
        Some((key, Json::canonical(value)))
    }
}

impl std::fmt::Display for Json<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Decodes the inside of a canonical string, which escapes only `"`, `\\` and control
/// characters.
fn unescape(inner: &str) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let decoded = match chars.next() {
            Some('"') => '"',
            Some('\\') => '\\',
            Some('b') => '\u{8}',
            Some('t') => '\t',
            Some('n') => '\n',
            Some('f') => '\u{c}',
            Some('r') => '\r',
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = u32::from_str_radix(&hex, 16).expect("canonical \\u escapes are hex");
                char::from_u32(code).expect("canonical \\u escapes are control characters")
            }
            other => unreachable!("canonical strings have no escape {other:?}"),
        };
        out.push(decoded);
    }
    out
}

/// Steps through canonical text (no whitespace, valid by construction).
struct Walker<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Walker<'t> {
    fn new(text: &'t str) -> Self {
        Self { text, at: 0 }
    }

    fn peek(&self) -> u8 {
        self.text.as_bytes()[self.at]
    }

    fn next(&mut self) -> u8 {
        let byte = self.peek();
        self.at += 1;
        byte
    }

    fn expect(&mut self, byte: u8) {
        let found = self.next();
        debug_assert_eq!(found, byte);
    }

    /// The end of the string starting at `at` (its opening quote).
    fn string_end(&self) -> usize {
        let bytes = self.text.as_bytes();
        let mut i = self.at + 1;
        // In canonical text a quote inside a string is escaped, and every backslash
        // starts an escape (`\\` is two): a quote closes the string when an even number
        // of backslashes come before it. Looking for quotes alone passes over the
        // escapes of a prompt's every line (`\n`) without stopping.
        loop {
            let quote =
                i + memchr::memchr(b'"', &bytes[i..]).expect("a canonical string is closed");
            let backslashes = bytes[i..quote]
                .iter()
                .rev()
                .take_while(|&&b| b == b'\\')
                .count();
            if backslashes % 2 == 0 {
                return quote + 1;
            }
            i = quote + 1;
        }
    }

    fn string(&mut self) -> Cow<'t, str> {
        let end = self.string_end();
        let inner = &self.text[self.at + 1..end - 1];
        self.at = end;
        if inner.contains('\\') {
            Cow::Owned(unescape(inner))
        } else {
            Cow::Borrowed(inner)
        }
    }

    /// The text of the value starting here.
    fn value(&mut self) -> &'t str {
        let start = self.at;
        let bytes = self.text.as_bytes();
        match bytes[self.at] {
            b'"' => self.at = self.string_end(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match bytes[self.at] {
                        b'"' => {
                            self.at = self.string_end();
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                while self.at < bytes.len() && !matches!(bytes[self.at], b',' | b'}' | b']') {
                    self.at += 1;
                }
            }
        }
        &self.text[start..self.at]
    }
}

/// Assembles a canonical object from canonical members: keys are sorted by UTF-16 code
/// units when it is written, and a repeated key is refused.
#[derive(Debug, Default)]
pub struct ObjectWriter<'a> {
    members: Vec<(Cow<'a, str>, Json<'a>)>,
}

impl<'a> ObjectWriter<'a> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a member; `false` (and nothing added) if the key is there already.
    pub fn insert(&mut self, key: impl Into<Cow<'a, str>>, value: Json<'a>) -> bool {
        let key = key.into();
        if self.members.iter().any(|(seen, _)| *seen == key) {
            return false;
        }
        self.members.push((key, value));
        true
    }

    /// True when a member has this key.
    pub fn contains(&self, key: &str) -> bool {
        self.members.iter().any(|(seen, _)| seen == key)
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The object's canonical text.
    pub fn finish(mut self) -> Json<'static> {
        if !self
            .members
            .is_sorted_by(|a, b| utf16_order(&a.0, &b.0) != Ordering::Greater)
        {
            self.members
                .sort_unstable_by(|a, b| utf16_order(&a.0, &b.0));
        }
        let size: usize = self
            .members
            .iter()
            .map(|(key, value)| key.len() + value.as_str().len() + 4)
            .sum();
        let mut out = String::with_capacity(size + 2);
        out.push('{');
        for (index, (key, value)) in self.members.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            push_string(key, &mut out);
            out.push(':');
            out.push_str(value.as_str());
        }
        out.push('}');
        Json::canonical_owned(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(value: Value) -> Json<'static> {
        Json::of(&value).unwrap()
    }

    /// A value looked up in a borrowed text borrows from that text (it outlives the
    /// lookup); in an owned one it is a copy; both read the same.
    #[test]
    fn nested_values_borrow_from_the_text_they_were_read_from() {
        let text = of(json!({"a": {"b": [1, "x", {"c": null}]}, "z": 2}))
            .as_str()
            .to_owned();
        let borrowed = Json::canonical(&text);
        let owned = Json::canonical_owned(text.clone());
        for whole in [borrowed, owned] {
            let a = whole.member("a").unwrap();
            let elements = a.member("b").unwrap().element_values().unwrap();
            let texts: Vec<&str> = elements.iter().map(Json::as_str).collect();
            assert_eq!(texts, ["1", "\"x\"", "{\"c\":null}"]);
            let members = whole.member_values().unwrap();
            let keys: Vec<&str> = members.iter().map(|(key, _)| key.as_ref()).collect();
            assert_eq!(keys, ["a", "z"]);
            assert_eq!(members[1].1.as_str(), "2");
            assert!(whole.member("y").is_none() && a.member("b").unwrap().member("c").is_none());
            assert!(a.element_values().is_none() && elements[0].member_values().is_none());
        }
        let inner = {
            let whole = Json::canonical(&text);
            whole.member("a").unwrap()
        };
        assert!(
            text.contains(inner.as_str()),
            "borrowed from the text itself"
        );
    }

    #[test]
    fn get_finds_every_key_and_no_other_though_it_stops_at_the_first_past_it() {
        // Keys sorted by UTF-16 units: "\u{1f600}" (a surrogate pair, 0xD83D) sorts
        // before "\u{ff61}" though its UTF-8 bytes sort after.
        let object = of(json!({"b": {"c": 2}, "a": 1, "ab": [3], "\u{ff61}": 4, "\u{1f600}": 5}));
        for (key, value) in object.members().unwrap() {
            assert_eq!(object.get(&key), Some(value), "{key}");
        }
        for absent in ["", "aa", "ac", "c", "\u{1f601}", "\u{ffff}"] {
            assert_eq!(object.get(absent), None, "{absent}");
        }
        let mut lazily = object.iter_members().unwrap();
        assert_eq!(lazily.next().unwrap().0, "a");
        assert_eq!(lazily.count(), 4);
        assert!(of(json!({})).iter_members().unwrap().next().is_none());
        assert!(of(json!([1])).iter_members().is_none());
    }

    #[test]
    fn a_value_reads_back_from_its_canonical_text() {
        let cases = [
            json!(null),
            json!(true),
            json!(-0.5),
            json!("tab\there \"quoted\" \u{1} é"),
            json!([1, "two", [3], {"b": 1, "a": 2}]),
            json!({"z": {"y": [null, false]}, "\u{1f600}": "emoji", "a": ""}),
            // Backslashes before a quote: escaped quotes, and escaped backslashes before
            // the closing one (a string ends where an even run of them is followed by `"`).
            json!(["\\", "\\\\", "a\\\"b", "\"\\\"", "\\\\\"", "\n\\\n\"\"x"]),
            json!({"\\": "\"", "k\\\"": ["\\\\", {"\"": "\\"}]}),
        ];
        for value in cases {
            let json = of(value.clone());
            assert_eq!(json.to_value(), value);
            if let Value::String(text) = &value {
                assert_eq!(json.as_string().unwrap(), *text);
            }
            if let Value::Object(map) = &value {
                let members = json.members().unwrap();
                assert_eq!(members.len(), map.len());
                for (key, member) in members {
                    assert_eq!(member.to_value(), map[key.as_ref()]);
                    assert_eq!(json.get(&key), Some(member));
                }
                assert_eq!(json.get("absent"), None);
            }
            if let Value::Array(items) = &value {
                let elements: Vec<Value> = json
                    .elements()
                    .unwrap()
                    .iter()
                    .map(Json::to_value)
                    .collect();
                assert_eq!(&elements, items);
            }
        }
    }

    #[test]
    fn kinds_and_scalars_are_read_from_the_text() {
        assert_eq!(of(json!(12)).as_u64(), Some(12));
        assert_eq!(of(json!(-12)).as_u64(), None);
        assert_eq!(of(json!(1.5)).as_u64(), None);
        assert_eq!(of(json!(1.5)).as_f64(), Some(1.5));
        assert_eq!(of(json!("1")).as_f64(), None);
        assert_eq!(of(json!(false)).as_bool(), Some(false));
        assert_eq!(of(json!({})).kind(), Kind::Object);
        assert!(Json::NULL.is_null());
        assert_eq!(of(json!(7)).describe(), "the number 7");
    }

    #[test]
    fn an_object_written_from_members_is_the_canonical_text_of_the_object() {
        let mut writer = ObjectWriter::new();
        assert!(writer.insert("doc", of(json!({"q": "x", "a": [1, 2]}))));
        assert!(writer.insert("arguments", of(json!({"gen_args_0": {"arg_0": "p"}}))));
        assert!(writer.insert("\u{fb01}", Json::bool(true)));
        assert!(writer.insert("\u{1f600}", Json::string("e")));
        assert!(
            !writer.insert("doc", Json::NULL),
            "a repeated key is refused"
        );
        let expected = of(json!({
            "doc": {"q": "x", "a": [1, 2]},
            "arguments": {"gen_args_0": {"arg_0": "p"}},
            "\u{fb01}": true,
            "\u{1f600}": "e",
        }));
        assert_eq!(writer.finish(), expected);
        assert_eq!(ObjectWriter::new().finish(), Json::EMPTY_OBJECT);
    }
}
