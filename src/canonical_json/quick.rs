//! A quick test that stored text is canonical, in one pass over its bytes without writing
//! anything: the common case of every check of a records file's JSON columns (validate,
//! `babel records`, the HTML report), where the text was written by babel and is almost
//! always canonical.
//!
//! It only ever says "surely canonical": whatever it cannot settle cheaply (an escaped or
//! non-BMP-adjacent key, an integer of more than 15 digits, deep nesting) and everything
//! that is not canonical answers `false`, and the caller runs the full check
//! (`jsonl::check_canonical`), which decides and says why. So a `true` here must never be
//! wrong; a `false` only costs time.

use super::next_escape;

/// Containers nested deeper than this are left to the full check (which refuses the
/// 127th: its ceiling of 128 counts the wrapper object it reads the value in).
const DEPTH: usize = 100;

/// Whether `text` is surely one JSON value exactly as RFC 8785 writes it, with no integer
/// beyond what a double holds: `true` means the full check would accept it; `false` means
/// it would not, or that this test cannot tell.
pub fn surely_canonical(text: &str) -> bool {
    let mut quick = Quick {
        bytes: text.as_bytes(),
        at: 0,
    };
    quick.value(0) && quick.at == quick.bytes.len()
}

struct Quick<'t> {
    bytes: &'t [u8],
    at: usize,
}

impl Quick<'_> {
    fn value(&mut self, depth: usize) -> bool {
        match self.bytes.get(self.at) {
            Some(b'"') => self.string().is_some(),
            Some(b'{') => depth < DEPTH && self.object(depth + 1),
            Some(b'[') => depth < DEPTH && self.array(depth + 1),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => false,
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        if self.bytes[self.at..].starts_with(word) {
            self.at += word.len();
            return true;
        }
        false
    }

    /// The string at `at`, its escapes each the one `JSON.stringify` writes; returns
    /// whether it held an escape.
    fn string(&mut self) -> Option<bool> {
        let mut at = self.at + 1;
        let mut escaped = false;
        loop {
            let found = next_escape(self.bytes, at)?;
            match self.bytes[found] {
                b'"' => {
                    self.at = found + 1;
                    return Some(escaped);
                }
                b'\\' => {
                    escaped = true;
                    at = found + 2 + self.escape_length(found + 1)?;
                }
                // A raw control character is not JSON.
                _ => return None,
            }
        }
    }

    /// How many bytes follow the letter of a canonical escape whose letter is at `at`.
    fn escape_length(&self, at: usize) -> Option<usize> {
        match self.bytes.get(at)? {
            b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => Some(0),
            // A control character, in lowercase hex; those with a short form are never
            // written as \u00xx.
            b'u' => match *self.bytes.get(at + 1..at + 5)? {
                [b'0', b'0', b'0', b'8' | b'9' | b'a' | b'c' | b'd'] => None,
                [b'0', b'0', b'0' | b'1', b'0'..=b'9' | b'a'..=b'f'] => Some(4),
                _ => None,
            },
            _ => None,
        }
    }

    fn array(&mut self, depth: usize) -> bool {
        self.at += 1;
        if self.bytes.get(self.at) == Some(&b']') {
            self.at += 1;
            return true;
        }
        loop {
            if !self.value(depth) {
                return false;
            }
            match self.bytes.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return true;
                }
                _ => return false,
            }
        }
    }

    fn object(&mut self, depth: usize) -> bool {
        self.at += 1;
        if self.bytes.get(self.at) == Some(&b'}') {
            self.at += 1;
            return true;
        }
        let mut previous: Option<(usize, usize)> = None;
        loop {
            let start = self.at;
            if self.bytes.get(start) != Some(&b'"') || self.string() != Some(false) {
                return false;
            }
            let key = (start + 1, self.at - 1);
            if let Some(before) = previous
                && !self.ordered(before, key)
            {
                return false;
            }
            previous = Some(key);
            if self.bytes.get(self.at) != Some(&b':') {
                return false;
            }
            self.at += 1;
            if !self.value(depth) {
                return false;
            }
            match self.bytes.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return true;
                }
                _ => return false,
            }
        }
    }

    /// Whether the key `a` surely comes before the key `b` (neither escaped) in UTF-16
    /// code unit order. Byte order is code point order, which UTF-16 keeps except between
    /// U+E000..U+FFFF and the characters beyond U+FFFF, whose first bytes are 0xEE and up:
    /// where the keys first differ in such a byte, the full check decides.
    fn ordered(&self, a: (usize, usize), b: (usize, usize)) -> bool {
        let a = &self.bytes[a.0..a.1];
        let b = &self.bytes[b.0..b.1];
        match a.iter().zip(b).find(|(x, y)| x != y) {
            Some((&x, &y)) => x < y && x < 0xEE && y < 0xEE,
            None => a.len() < b.len(),
        }
    }

    /// A number in its ECMAScript form: an integer of up to 15 digits as written (but
    /// `-0`), any other number as `ryu-js` formats the double it reads as.
    fn number(&mut self) -> bool {
        let start = self.at;
        let bytes = self.bytes;
        let mut at = start;
        if bytes[at] == b'-' {
            at += 1;
        }
        let digits = |mut at: usize| {
            while let Some(b'0'..=b'9') = bytes.get(at) {
                at += 1;
            }
            at
        };
        let integer_end = match bytes.get(at) {
            Some(b'0') => at + 1,
            Some(b'1'..=b'9') => digits(at + 1),
            _ => return false,
        };
        let mut end = integer_end;
        if bytes.get(end) == Some(&b'.') {
            let fraction = digits(end + 1);
            if fraction == end + 1 {
                return false;
            }
            end = fraction;
        }
        if let Some(b'e' | b'E') = bytes.get(end) {
            end += 1;
            if let Some(b'+' | b'-') = bytes.get(end) {
                end += 1;
            }
            let exponent = digits(end);
            if exponent == end {
                return false;
            }
            end = exponent;
        }
        self.at = end;
        let literal = &bytes[start..end];
        if end == integer_end {
            return literal != b"-0"
                && integer_end - start - usize::from(bytes[start] == b'-') <= 15;
        }
        let literal = std::str::from_utf8(literal).expect("the number grammar is ASCII");
        if let Some((whole, fraction)) = super::short_fraction(literal) {
            // Its own shortest form, unless trailing zeros were dropped.
            return whole.len() + 1 + fraction.len() == literal.len();
        }
        let Ok(value) = literal.parse::<f64>() else {
            return false;
        };
        value.is_finite() && ryu_js::Buffer::new().format_finite(value) == literal
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonl::{CanonicalScratch, check_canonical_in_full};
    use proptest::prelude::*;

    /// What the full check says, for the implication every test here checks.
    fn full(text: &str) -> bool {
        check_canonical_in_full(text, &mut CanonicalScratch::default()).is_ok()
    }

    #[test]
    fn canonical_text_of_every_kind_is_accepted() {
        for text in [
            "null",
            "true",
            "false",
            "0",
            "-1",
            "123456789012345",
            "-1.5",
            "0.1",
            "1e+21",
            "1e-7",
            "-1.7976931348623157e+308",
            "5e-324",
            "\"\"",
            "\"é\\n\\u001f\\\"\\\\\\b\\f\\r\\t\\u0000\"",
            "\"\\u000b\\u000e\\u0019\"",
            "[]",
            "{}",
            "[[],{},[null]]",
            "{\"a\":[1,{\"b\":null}],\"b\":\"x\",\"é\":2}",
            "{\"a\":1,\"ab\":2,\"b\":3}",
        ] {
            assert!(surely_canonical(text), "{text}");
            assert!(full(text), "{text}");
        }
    }

    #[test]
    fn text_that_is_not_canonical_is_never_accepted() {
        for text in [
            "",
            " 1",
            "1 ",
            "[1, 2]",
            "{\"a\": 1}",
            "{\"b\":1,\"a\":2}",
            "{\"a\":1,\"a\":1}",
            // Byte order, not UTF-16 order.
            "{\"\u{e000}\":1,\"\u{10000}\":2}",
            "1.0",
            "1E+21",
            "1e21",
            "-0",
            "01",
            "1.",
            "1e",
            ".5",
            "+1",
            "0.10",
            "1e400",
            "\"\\u00e9\"",
            "\"\\u000a\"",
            "\"\\u0008\"",
            "\"\\u000d\"",
            "\"\\u001F\"",
            "\"\\/\"",
            "\"\\x\"",
            "\"\\u00",
            "\"\u{1}\"",
            "\"open",
            "[1,]",
            "[1",
            "{\"a\":}",
            "{\"a\"}",
            "{,}",
            "tru",
            "nul",
            "NaN",
            "Infinity",
            "1,2",
            "1}{",
        ] {
            assert!(!surely_canonical(text), "{text:?}");
            assert!(!full(text), "{text:?} is refused by the full check too");
        }
    }

    #[test]
    fn what_only_the_full_check_can_settle_is_left_to_it() {
        // Canonical, but beyond this test: escaped keys, keys that differ first in a byte
        // of 0xEE or more, integers of 16 digits and more, and deep nesting.
        for text in [
            "{\"\\n\":1}".to_owned(),
            "{\"\u{10000}\":1,\"\u{e000}\":2}".to_owned(),
            "1234567890123456".to_owned(),
            format!("{}{}", "[".repeat(101), "]".repeat(101)),
        ] {
            assert!(!surely_canonical(&text), "{text}");
            assert!(full(&text), "{text}");
        }
        // At the edges of what it settles: 15 digits and 100 levels.
        for text in [
            "-999999999999999".to_owned(),
            format!("{}{}", "[".repeat(100), "]".repeat(100)),
            format!("{}1{}", "{\"a\":".repeat(100), "}".repeat(100)),
        ] {
            assert!(surely_canonical(&text), "{text}");
            assert!(full(&text), "{text}");
        }
        // Beyond 2^53 and not the decimal a double prints: not canonical.
        assert!(!surely_canonical("9007199254740993"));
        assert!(!full("9007199254740993"));
    }

    fn value() -> impl Strategy<Value = serde_json::Value> {
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| Value::from(i64::from(n))),
            // Integers of every length, across 15 digits and 2^53.
            (any::<i64>(), 0u32..19).prop_map(|(n, digits)| Value::from(n % 10i64.pow(digits))),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "\\PC{0,12}".prop_map(Value::String),
            "[\\x00-\\x1f\"\\\\a]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
                prop::collection::btree_map("[a-zé\u{e000}\u{10000}]{0,4}", inner, 0..6)
                    .prop_map(|map| serde_json::Value::Object(map.into_iter().collect())),
            ]
        })
    }

    /// A value whose canonical text the quick test settles: keys plain (ASCII here, so no
    /// escape and no byte of 0xEE or more) and no number printed as an integer of more
    /// than 15 digits.
    fn settled(value: &serde_json::Value) -> bool {
        match value {
            serde_json::Value::Array(items) => items.iter().all(settled),
            serde_json::Value::Object(map) => map
                .iter()
                .all(|(key, value)| key.is_ascii() && settled(value)),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(integer) => integer.unsigned_abs() < 1_000_000_000_000_000,
                None => n
                    .as_f64()
                    .is_none_or(|f| f.fract() != 0.0 || f.abs() < 1e15 || f.abs() >= 1e21),
            },
            _ => true,
        }
    }

    proptest! {
        #[test]
        fn the_canonical_writer_s_text_is_accepted_and_any_change_to_it_is_judged_as_the_full_check_judges(
            value in value(),
            cut in any::<prop::sample::Index>(),
            byte in prop::sample::select(b" ,:[]{}\"\\/0-.eE+u1abfnrtAF".to_vec()),
        ) {
            // An integer beyond 2^53 that a double cannot hold has no canonical text.
            let Ok(text) = crate::canonical_json::to_canonical_string(&value) else {
                return Ok(());
            };
            prop_assert!(full(&text));
            if settled(&value) {
                prop_assert!(surely_canonical(&text), "{}", text);
            }
            // One byte inserted, replaced or removed: accepted only if the full check
            // accepts it.
            let at = cut.index(text.len() + 1);
            let mut edits = Vec::new();
            for edit in 0..3 {
                let mut bytes = text.as_bytes().to_vec();
                match edit {
                    0 => bytes.insert(at, byte),
                    1 if at < bytes.len() => bytes[at] = byte,
                    2 if at < bytes.len() => {
                        bytes.remove(at);
                    }
                    _ => continue,
                }
                edits.push(bytes);
            }
            for bytes in edits {
                if let Ok(edited) = String::from_utf8(bytes) {
                    prop_assert!(!surely_canonical(&edited) || full(&edited), "{}", edited);
                }
            }
        }
    }
}
