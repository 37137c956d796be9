//! The streaming reader: strict JSON text in, RFC 8785 canonical text out, in one pass
//! over the bytes and without building a tree of values.
//!
//! It keeps every rule of the tree reader ([`super::strict`]) and reports the same first
//! error at the same place, with serde_json's own words (the differential fuzz target
//! `stream_vs_tree` and `tests::agrees_with_the_tree_reader` hold it to that): duplicate
//! keys refused at any depth, with their field path; `NaN`, `Infinity` and `-Infinity`
//! named (or read as null under [`NonFinitePolicy::Null`]); numbers beyond a double's
//! range refused; at most 127 nested arrays and objects; positions as one-based byte
//! columns. What it writes is exactly what `canonical_json` writes for the tree: keys
//! sorted by UTF-16 code units, strings escaped as `JSON.stringify` does, numbers as
//! ECMAScript doubles. An integer no double holds exactly (2^53 + 1) is not an error of
//! the text: it is noted on the member, and refused where the member is stored, as the
//! tree path refuses it when it encodes the record.
//!
//! A JSON Lines line is read into its top-level members, each its key and the canonical
//! text of its value: adapters read the few fields they interpret and pass the rest
//! through as text.

use std::cmp::Ordering;

use super::path::{FieldPath, PathSegment};
use super::strict::{FailureKind, ParseFailure};
use super::{NonFinitePolicy, NonFiniteReplacement};
use crate::canonical_json::{format_u64, utf16_order, write_string};
use crate::record::fields::MAX_SAFE_INTEGER;

/// serde_json's nesting limit: the 128th nested array or object is refused.
const DEPTH_LIMIT: usize = 128;

/// The canonical text of one JSON value, and where (if anywhere) it holds an integer that
/// no double holds exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canonical {
    pub text: String,
    /// The first such integer: its path below the value, and its decimal text.
    pub unsafe_integer: Option<(FieldPath, String)>,
}

/// One line (or item) read into its top-level members.
#[derive(Debug, Clone, PartialEq)]
pub struct Members {
    /// Each top-level member in written order: its key and its value's canonical text.
    pub members: Vec<(String, Canonical)>,
    /// Non-finite tokens read as null (empty unless the policy allows them).
    pub replaced: Vec<NonFiniteReplacement>,
}

/// Reads `text` as one JSON object, strictly, into its members.
pub(crate) fn scan_object(text: &str, policy: NonFinitePolicy) -> Result<Members, ParseFailure> {
    if let Some(found) = super::strict::non_object_kind(text.as_bytes()) {
        return Err(ParseFailure {
            column: None,
            index: None,
            path: FieldPath::root(),
            kind: FailureKind::NotAnObject(found),
        });
    }
    let mut scanner = Scanner::new(text, policy);
    let members = scanner.top_level()?;
    scanner.end()?;
    Ok(Members {
        members,
        replaced: scanner.replaced,
    })
}

/// Reads `text` as one JSON value of any kind, strictly, into its canonical text.
pub(crate) fn scan_value(
    text: &str,
    policy: NonFinitePolicy,
) -> Result<(Canonical, Vec<NonFiniteReplacement>), ParseFailure> {
    let mut scanner = Scanner::new(text, policy);
    let mut out = Vec::with_capacity(text.len());
    scanner.value(&mut out)?;
    scanner.end()?;
    let canonical = Canonical {
        text: String::from_utf8(out).expect("the scanner writes UTF-8"),
        unsafe_integer: scanner.unsafe_integer.take(),
    };
    Ok((canonical, scanner.replaced))
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    remaining_depth: usize,
    path: FieldPath,
    policy: NonFinitePolicy,
    replaced: Vec<NonFiniteReplacement>,
    /// The first integer of the current value that no double holds, and its full path.
    unsafe_integer: Option<(FieldPath, String)>,
    /// Decoded key text, reused.
    key: String,
}

/// serde_json's error messages, which the tree reader reports.
mod message {
    pub const EOF_LIST: &str = "EOF while parsing a list";
    pub const EOF_OBJECT: &str = "EOF while parsing an object";
    pub const EOF_STRING: &str = "EOF while parsing a string";
    pub const EOF_VALUE: &str = "EOF while parsing a value";
    pub const EXPECTED_COLON: &str = "expected `:`";
    pub const EXPECTED_LIST_COMMA_OR_END: &str = "expected `,` or `]`";
    pub const EXPECTED_OBJECT_COMMA_OR_END: &str = "expected `,` or `}`";
    pub const EXPECTED_IDENT: &str = "expected ident";
    pub const EXPECTED_VALUE: &str = "expected value";
    pub const INVALID_ESCAPE: &str = "invalid escape";
    pub const INVALID_NUMBER: &str = "invalid number";
    pub const OUT_OF_RANGE: &str = "number out of range";
    pub const INVALID_CODE_POINT: &str = "invalid unicode code point";
    pub const CONTROL_CHARACTER: &str =
        "control character (\\u0000-\\u001F) found while parsing a string";
    pub const KEY_MUST_BE_A_STRING: &str = "key must be a string";
    pub const LONE_LEADING_SURROGATE: &str = "lone leading surrogate in hex escape";
    pub const TRAILING_COMMA: &str = "trailing comma";
    pub const TRAILING_CHARACTERS: &str = "trailing characters";
    pub const UNEXPECTED_END_OF_HEX_ESCAPE: &str = "unexpected end of hex escape";
    pub const RECURSION_LIMIT: &str = "recursion limit exceeded";
}

type Scan<T = ()> = Result<T, ParseFailure>;

impl<'a> Scanner<'a> {
    fn new(text: &'a str, policy: NonFinitePolicy) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            at: 0,
            remaining_depth: DEPTH_LIMIT,
            path: FieldPath::root(),
            policy,
            replaced: Vec::new(),
            unsafe_integer: None,
            key: String::new(),
        }
    }

    /// serde_json's column of a position: the bytes from the start of its line up to
    /// index `i` (a column 0 is no column at all).
    fn position(&self, i: usize) -> Option<usize> {
        let i = i.min(self.bytes.len());
        let column = match self.bytes[..i].iter().rposition(|&b| b == b'\n') {
            Some(newline) => i - (newline + 1),
            None => i,
        };
        (column > 0).then_some(column)
    }

    fn failure(&self, column: Option<usize>, message: &str) -> ParseFailure {
        ParseFailure {
            column,
            index: None,
            path: self.path.clone(),
            kind: FailureKind::Syntax(message.to_owned()),
        }
    }

    /// An error on the byte at `at`, which the parser peeked at (its column is that
    /// byte's, one-based).
    fn syntax_at(&self, at: usize, message: &str) -> ParseFailure {
        self.failure(self.position(at + 1), message)
    }

    /// An error raised after the parser consumed the bytes before `index`.
    fn syntax_consumed(&self, index: usize, message: &str) -> ParseFailure {
        self.failure(self.position(index), message)
    }

    /// An error on the byte the scanner is at.
    fn syntax_here(&self, message: &str) -> ParseFailure {
        self.syntax_at(self.at, message)
    }

    /// An error at the end of the text.
    fn eof(&self, message: &str) -> ParseFailure {
        self.failure(self.position(self.bytes.len()), message)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    fn end(&mut self) -> Scan {
        self.skip_whitespace();
        if self.at < self.bytes.len() {
            return Err(self.syntax_here(message::TRAILING_CHARACTERS));
        }
        Ok(())
    }

    /// The top-level object, each member's value canonical on its own.
    fn top_level(&mut self) -> Scan<Vec<(String, Canonical)>> {
        self.skip_whitespace();
        debug_assert_eq!(self.peek(), Some(b'{'));
        self.enter()?;
        self.at += 1;
        let mut members: Vec<(String, Canonical)> = Vec::new();
        let mut first = true;
        loop {
            if !self.object_next(first)? {
                break;
            }
            first = false;
            let key = std::mem::take(&mut self.key);
            self.path.push(PathSegment::Key(key));
            self.colon()?;
            let mut out = Vec::new();
            self.value(&mut out)?;
            let Some(PathSegment::Key(key)) = self.path.pop_segment() else {
                unreachable!("the key pushed above is the last segment");
            };
            if members.iter().any(|(seen, _)| *seen == key) {
                return Err(self.duplicate(key));
            }
            // The unsafe integer's path is relative to the member.
            let unsafe_integer = self.unsafe_integer.take().map(|(path, value)| {
                let mut below = FieldPath::root();
                for segment in path.segments().iter().skip(self.path.segments().len() + 1) {
                    below.push(segment.clone());
                }
                (below, value)
            });
            members.push((
                key,
                Canonical {
                    text: String::from_utf8(out).expect("the scanner writes UTF-8"),
                    unsafe_integer,
                },
            ));
        }
        self.leave();
        Ok(members)
    }

    fn duplicate(&mut self, key: String) -> ParseFailure {
        let mut path = self.path.clone();
        path.push(PathSegment::Key(key.clone()));
        ParseFailure {
            column: None,
            index: None,
            path,
            kind: FailureKind::DuplicateKey(key),
        }
    }

    fn enter(&mut self) -> Scan {
        self.remaining_depth -= 1;
        if self.remaining_depth == 0 {
            return Err(self.syntax_here(message::RECURSION_LIMIT));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.remaining_depth += 1;
    }

    /// Inside an object: reads the next member's key (decoded into `self.key`); false at
    /// the closing brace.
    fn object_next(&mut self, first: bool) -> Scan<bool> {
        self.skip_whitespace();
        match self.peek() {
            None => return Err(self.eof(message::EOF_OBJECT)),
            Some(b'}') => {
                self.at += 1;
                return Ok(false);
            }
            Some(b',') if !first => {
                self.at += 1;
                self.skip_whitespace();
                match self.peek() {
                    None => return Err(self.eof(message::EOF_VALUE)),
                    Some(b'}') => return Err(self.syntax_here(message::TRAILING_COMMA)),
                    _ => {}
                }
            }
            Some(_) if !first => {
                return Err(self.syntax_here(message::EXPECTED_OBJECT_COMMA_OR_END));
            }
            Some(_) => {}
        }
        match self.peek() {
            Some(b'"') => {
                self.at += 1;
                let mut key = std::mem::take(&mut self.key);
                key.clear();
                self.string_into(&mut key)?;
                self.key = key;
            }
            _ => return Err(self.syntax_here(message::KEY_MUST_BE_A_STRING)),
        }
        Ok(true)
    }

    /// The colon after a key (read, as the tree reader reads it, with the key already on
    /// the path).
    fn colon(&mut self) -> Scan {
        self.skip_whitespace();
        match self.peek() {
            Some(b':') => {
                self.at += 1;
                Ok(())
            }
            None => Err(self.eof(message::EOF_OBJECT)),
            Some(_) => Err(self.syntax_here(message::EXPECTED_COLON)),
        }
    }

    /// One value, written canonically to `out`.
    fn value(&mut self, out: &mut Vec<u8>) -> Scan {
        self.skip_whitespace();
        let Some(byte) = self.peek() else {
            return Err(self.eof(message::EOF_VALUE));
        };
        match byte {
            b'{' => self.object(out),
            b'[' => self.array(out),
            b'"' => {
                self.at += 1;
                let mut text = String::new();
                self.string_into(&mut text)?;
                write_string(&text, out);
                Ok(())
            }
            b't' => self.ident(b"true", out),
            b'f' => self.ident(b"false", out),
            b'n' => self.ident(b"null", out),
            b'-' | b'0'..=b'9' => self.number(out),
            _ => {
                if let Some(token) = self.non_finite_token() {
                    return self.non_finite(token, out);
                }
                Err(self.syntax_here(message::EXPECTED_VALUE))
            }
        }
    }

    /// `NaN`, `Infinity` or `-Infinity` starting here, if one does.
    fn non_finite_token(&self) -> Option<&'static str> {
        ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|token| self.bytes[self.at..].starts_with(token.as_bytes()))
    }

    fn non_finite(&mut self, token: &'static str, out: &mut Vec<u8>) -> Scan {
        match self.policy {
            NonFinitePolicy::Reject => {
                // serde_json stops on the `N` or `I`; after the `-` of `-Infinity`.
                let stop = if token.starts_with('-') {
                    self.at + 1
                } else {
                    self.at
                };
                Err(ParseFailure {
                    column: self.position(stop + 1),
                    index: None,
                    path: self.path.clone(),
                    kind: FailureKind::NonFinite {
                        token,
                        offset: self.at,
                    },
                })
            }
            NonFinitePolicy::Null => {
                self.replaced.push(NonFiniteReplacement {
                    path: self.path.clone(),
                    token,
                });
                self.at += token.len();
                out.extend_from_slice(b"null");
                Ok(())
            }
        }
    }

    fn ident(&mut self, ident: &[u8], out: &mut Vec<u8>) -> Scan {
        self.at += 1;
        for &expected in &ident[1..] {
            match self.peek() {
                None => return Err(self.eof(message::EOF_VALUE)),
                Some(found) if found == expected => self.at += 1,
                Some(_) => return Err(self.syntax_here(message::EXPECTED_IDENT)),
            }
        }
        out.extend_from_slice(ident);
        Ok(())
    }

    fn object(&mut self, out: &mut Vec<u8>) -> Scan {
        self.enter()?;
        self.at += 1;
        // Members are written to a scratch buffer, then sorted by key.
        let mut scratch: Vec<u8> = Vec::new();
        let mut entries: Vec<(String, usize, usize)> = Vec::new();
        let mut seen: Option<std::collections::HashSet<String>> = None;
        let mut first = true;
        loop {
            if !self.object_next(first)? {
                break;
            }
            first = false;
            let key = std::mem::take(&mut self.key);
            self.path.push(PathSegment::Key(key));
            self.colon()?;
            let start = scratch.len();
            self.value(&mut scratch)?;
            let Some(PathSegment::Key(key)) = self.path.pop_segment() else {
                unreachable!("the key pushed above is the last segment");
            };
            // Small objects are checked by a scan; large ones through a set.
            let repeated = match &mut seen {
                Some(seen) => !seen.insert(key.clone()),
                None => entries.iter().any(|(other, _, _)| *other == key),
            };
            if repeated {
                return Err(self.duplicate(key));
            }
            entries.push((key, start, scratch.len()));
            if seen.is_none() && entries.len() >= 32 {
                seen = Some(entries.iter().map(|(key, _, _)| key.clone()).collect());
            }
        }
        self.leave();
        if !entries.is_sorted_by(|a, b| utf16_order(&a.0, &b.0) != Ordering::Greater) {
            entries.sort_unstable_by(|a, b| utf16_order(&a.0, &b.0));
        }
        out.push(b'{');
        for (index, (key, start, end)) in entries.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            write_string(key, out);
            out.push(b':');
            out.extend_from_slice(&scratch[*start..*end]);
        }
        out.push(b'}');
        Ok(())
    }

    fn array(&mut self, out: &mut Vec<u8>) -> Scan {
        self.enter()?;
        self.at += 1;
        out.push(b'[');
        let mut index = 0;
        loop {
            // As the tree reader does, the next element's index is on the path while the
            // separator before it is read.
            self.path.push(PathSegment::Index(index));
            self.skip_whitespace();
            match self.peek() {
                None => return Err(self.eof(message::EOF_LIST)),
                Some(b']') => {
                    self.at += 1;
                    self.path.pop_segment();
                    break;
                }
                Some(b',') if index > 0 => {
                    self.at += 1;
                    self.skip_whitespace();
                    match self.peek() {
                        None => return Err(self.eof(message::EOF_VALUE)),
                        Some(b']') => return Err(self.syntax_here(message::TRAILING_COMMA)),
                        _ => {}
                    }
                    out.push(b',');
                }
                Some(_) if index > 0 => {
                    return Err(self.syntax_here(message::EXPECTED_LIST_COMMA_OR_END));
                }
                Some(_) => {}
            }
            self.value(out)?;
            self.path.pop_segment();
            index += 1;
        }
        self.leave();
        out.push(b']');
        Ok(())
    }

    /// The rest of a string (after its opening quote), decoded into `into`.
    fn string_into(&mut self, into: &mut String) -> Scan {
        loop {
            // Copy the run of plain bytes up to the next quote, backslash or control byte.
            let start = self.at;
            let run = self.bytes[start..]
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                .map_or(self.bytes.len(), |offset| start + offset);
            into.push_str(&self.text[start..run]);
            self.at = run;
            match self.peek() {
                None => return Err(self.eof(message::EOF_STRING)),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.at += 1;
                    self.escape(into)?;
                }
                Some(_) => return Err(self.syntax_here(message::CONTROL_CHARACTER)),
            }
        }
    }

    fn escape(&mut self, into: &mut String) -> Scan {
        let Some(byte) = self.peek() else {
            return Err(self.eof(message::EOF_STRING));
        };
        self.at += 1;
        let decoded = match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode_escape(into),
            _ => return Err(self.syntax_at(self.at - 1, message::INVALID_ESCAPE)),
        };
        into.push(decoded);
        Ok(())
    }

    /// Four hex digits after `\u`, read (as serde_json reads them) all four at once.
    fn hex4(&mut self) -> Scan<u16> {
        let Some(digits) = self.bytes.get(self.at..self.at + 4) else {
            self.at = self.bytes.len();
            return Err(self.eof(message::EOF_STRING));
        };
        self.at += 4;
        let mut value = 0u16;
        for &byte in digits {
            let digit = match byte {
                b'0'..=b'9' => byte - b'0',
                b'a'..=b'f' => byte - b'a' + 10,
                b'A'..=b'F' => byte - b'A' + 10,
                _ => return Err(self.syntax_consumed(self.at, message::INVALID_ESCAPE)),
            };
            value = value * 16 + u16::from(digit);
        }
        Ok(value)
    }

    fn unicode_escape(&mut self, into: &mut String) -> Scan {
        let first = self.hex4()?;
        let code = match first {
            0xDC00..=0xDFFF => {
                return Err(self.syntax_at(self.at - 1, message::LONE_LEADING_SURROGATE));
            }
            0xD800..=0xDBFF => {
                // A leading surrogate must be followed by `\u` and a trailing one; each
                // byte is consumed before it is checked.
                for expected in [b'\\', b'u'] {
                    let Some(byte) = self.peek() else {
                        return Err(self.eof(message::EOF_STRING));
                    };
                    self.at += 1;
                    if byte != expected {
                        return Err(
                            self.syntax_consumed(self.at, message::UNEXPECTED_END_OF_HEX_ESCAPE)
                        );
                    }
                }
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(self.syntax_at(self.at - 1, message::LONE_LEADING_SURROGATE));
                }
                0x10000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(second) - 0xDC00)
            }
            other => u32::from(other),
        };
        match char::from_u32(code) {
            Some(decoded) => {
                into.push(decoded);
                Ok(())
            }
            None => Err(self.syntax_at(self.at - 1, message::INVALID_CODE_POINT)),
        }
    }

    /// A number, written as `canonical_json` writes the number serde_json reads from it.
    fn number(&mut self, out: &mut Vec<u8>) -> Scan {
        let start = self.at;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.at += 1;
            if self.at >= self.bytes.len() {
                return Err(self.eof(message::EOF_VALUE));
            }
            if self.bytes[self.at..].starts_with(b"Infinity") {
                self.at = start;
                return self.non_finite("-Infinity", out);
            }
        }
        match self.peek() {
            Some(b'0') => {
                self.at += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.syntax_here(message::INVALID_NUMBER));
                }
            }
            Some(b'1'..=b'9') => {
                while let Some(b'0'..=b'9') = self.peek() {
                    self.at += 1;
                }
            }
            _ => return Err(self.syntax_here(message::INVALID_NUMBER)),
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            integer = false;
            self.at += 1;
            match self.peek() {
                Some(b'0'..=b'9') => {}
                None => return Err(self.eof(message::EOF_VALUE)),
                Some(_) => return Err(self.syntax_here(message::INVALID_NUMBER)),
            }
            while let Some(b'0'..=b'9') = self.peek() {
                self.at += 1;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            integer = false;
            let significand = &self.text[start..self.at];
            let zero_significand = !significand.bytes().any(|b| matches!(b, b'1'..=b'9'));
            self.at += 1;
            let positive_exponent = match self.peek() {
                Some(b'+') => {
                    self.at += 1;
                    true
                }
                Some(b'-') => {
                    self.at += 1;
                    false
                }
                _ => true,
            };
            match self.peek() {
                Some(b'0'..=b'9') => {}
                None => return Err(self.eof(message::EOF_VALUE)),
                Some(_) => return Err(self.syntax_here(message::INVALID_NUMBER)),
            }
            // serde_json accumulates the exponent in an i32: a positive one that overflows
            // it, of a nonzero significand, is out of range at the digit that overflows.
            let mut exponent: i32 = 0;
            let mut overflowed = false;
            while let Some(digit @ b'0'..=b'9') = self.peek() {
                self.at += 1;
                let digit = i32::from(digit - b'0');
                if !overflowed {
                    match exponent.checked_mul(10).and_then(|e| e.checked_add(digit)) {
                        Some(next) => exponent = next,
                        None if positive_exponent && !zero_significand => {
                            return Err(self.syntax_consumed(self.at, message::OUT_OF_RANGE));
                        }
                        None => overflowed = true,
                    }
                }
            }
        }
        let literal = &self.text[start..self.at];
        if integer {
            let digits = literal.trim_start_matches('-');
            if let Ok(value) = digits.parse::<u64>()
                && (!negative || value <= i64::MAX as u64 + 1)
            {
                return self.integer(negative, value, out);
            }
        }
        let value: f64 = literal
            .parse()
            .expect("the grammar above admits only numbers");
        if !value.is_finite() {
            return Err(self.syntax_at(self.at - 1, message::OUT_OF_RANGE));
        }
        let mut ryu = ryu_js::Buffer::new();
        out.extend_from_slice(ryu.format_finite(value).as_bytes());
        Ok(())
    }

    /// An integer serde_json reads as u64 or i64: written as is up to 2^53; beyond it only
    /// when its ECMAScript form is the same decimal, and otherwise noted as unsafe.
    fn integer(&mut self, negative: bool, magnitude: u64, out: &mut Vec<u8>) -> Scan {
        if magnitude <= MAX_SAFE_INTEGER {
            if negative && magnitude != 0 {
                out.push(b'-');
            }
            let mut buffer = [0u8; 20];
            out.extend_from_slice(format_u64(magnitude, &mut buffer));
            return Ok(());
        }
        let as_double = if negative {
            -(magnitude as f64)
        } else {
            magnitude as f64
        };
        let decimal = if negative {
            format!("-{magnitude}")
        } else {
            magnitude.to_string()
        };
        let mut ryu = ryu_js::Buffer::new();
        let formatted = ryu.format_finite(as_double);
        if formatted != decimal && self.unsafe_integer.is_none() {
            self.unsafe_integer = Some((self.path.clone(), decimal));
        }
        out.extend_from_slice(formatted.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{NonFinitePolicy, differential};

    /// Inputs that exercise every rule and every error of the reader.
    const CASES: &[&str] = &[
        r#"{}"#,
        r#"{"a": 1}"#,
        r#" { "b" : [1, 2.5, -3, 0, -0, 1e21, 1E-7, 0.1, 1e400] , "a" : {"z": null, "y": true, "x": false} } "#,
        r#"{"a": 1e999}"#,
        r#"{"a": -1e999}"#,
        r#"{"a": 1e-400}"#,
        r#"{"n": 9007199254740993}"#,
        r#"{"n": -9007199254740993}"#,
        r#"{"n": 9007199254740992}"#,
        r#"{"n": 18446744073709551615}"#,
        r#"{"n": 18446744073709551616}"#,
        r#"{"n": -9223372036854775808}"#,
        r#"{"n": -9223372036854775809}"#,
        r#"{"n": 8273956653281337000}"#,
        r#"{"n": [1, {"m": 9007199254740993}]}"#,
        r#"{"a": 01}"#,
        r#"{"a": -}"#,
        r#"{"a": -a}"#,
        r#"{"a": 1.}"#,
        r#"{"a": 1.e5}"#,
        r#"{"a": 1e}"#,
        r#"{"a": 1e+}"#,
        r#"{"a": .5}"#,
        r#"{"a": +1}"#,
        r#"{"a": 1"#,
        r#"{"a": 1."#,
        r#"{"a": 1e"#,
        r#"{"a": -"#,
        r#"{"a": NaN}"#,
        r#"{"a": [Infinity]}"#,
        r#"{"a": -Infinity}"#,
        r#"{"a": {"b": NaN, "c": [1, -Infinity]}}"#,
        r#"{"a": Nan}"#,
        r#"{"a": "NaN"}"#,
        r#"{"a": 1, "a": 2}"#,
        r#"{"a": {"b": 1, "c": 2, "b": 3}}"#,
        r#"{"a": [{"t": 1, "t": 1}]}"#,
        r#"{"a": 1,}"#,
        r#"{"a": [1,]}"#,
        r#"{"a": [1 2]}"#,
        r#"{"a" 1}"#,
        r#"{a: 1}"#,
        r#"{"a": 1 "b": 2}"#,
        r#"{"a": tru}"#,
        r#"{"a": trux}"#,
        r#"{"a": nul"#,
        r#"{"a": }"#,
        r#"{"a": "x" } x"#,
        r#"{"a": 1}{"b": 2}"#,
        r#"{"a": "\u00e9\n\t\"\\\/\b\f\r"}"#,
        r#"{"a": "\ud83d\ude00"}"#,
        r#"{"a": "\ud800"}"#,
        r#"{"a": "\ud800x"}"#,
        r#"{"a": "\ud800\u0041"}"#,
        r#"{"a": "\udc00"}"#,
        r#"{"a": "\u12"}"#,
        r#"{"a": "\u12g4"}"#,
        r#"{"a": "\q"}"#,
        r#"{"a": "\"#,
        r#"{"a": "abc"#,
        "{\"a\": \"tab\there\"}",
        "{\"a\": \"nul\u{0}\"}",
        "{\"a\": \"\u{7f}\u{2028}é😀\"}",
        "{\"\u{fb01}\": 1, \"\u{1f600}\": 2, \"b\": 3, \"\u{20ac}\": 4, \"\\r\": 5}",
        "{\n  \"a\": 1,\n  \"b\": {\n    \"v\": NaN\n  }\n}",
        "{\n  \"a\": 1,\n  \"b\": [\n    1,\n  ]\n}",
        "{\"a\": [",
        "{\"a\": {",
        "{\"a\": {\"b\"",
        "{\"a\"",
        "{",
        "",
        "[1]",
        "\"s\"",
        "42",
        "null",
        "nope",
    ];

    #[test]
    fn agrees_with_the_tree_reader() {
        for policy in [NonFinitePolicy::Reject, NonFinitePolicy::Null] {
            for case in CASES {
                if let Err(disagreement) = differential(case.as_bytes(), policy) {
                    panic!("{policy:?}: {disagreement}");
                }
            }
        }
    }

    #[test]
    fn deep_nesting_fails_where_the_tree_reader_fails() {
        for depth in [126, 127, 128, 129, 200] {
            let text = format!("{{\"a\": {}1{}}}", "[".repeat(depth), "]".repeat(depth));
            differential(text.as_bytes(), NonFinitePolicy::Reject).unwrap();
            let objects = format!("{}{}", "{\"a\": ".repeat(depth), "}".repeat(depth));
            differential(objects.as_bytes(), NonFinitePolicy::Reject).unwrap();
        }
    }

    #[test]
    fn many_keys_are_checked_for_duplicates() {
        let keys: Vec<String> = (0..200).map(|i| format!("\"k{i}\": {i}")).collect();
        let text = format!("{{\"a\": {{{}}}}}", keys.join(", "));
        differential(text.as_bytes(), NonFinitePolicy::Reject).unwrap();
        let repeated = format!("{{\"a\": {{{}, \"k7\": 1}}}}", keys.join(", "));
        differential(repeated.as_bytes(), NonFinitePolicy::Reject).unwrap();
    }
}
