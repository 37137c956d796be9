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
//! A JSON Lines line is read into its top-level [`Members`], each its key and the
//! canonical text of its value, all in two buffers a worker reuses from line to line:
//! adapters read the few fields they interpret and pass the rest through as text.
//!
//! Speed comes from not doing work: plain runs of a string are copied as they are (only
//! escapes are decoded and re-escaped), objects are written in place and reordered only
//! when their keys were not in order, and the field path an error needs is built only
//! when there is an error.

use std::cmp::Ordering;
use std::collections::HashSet;

use super::path::{FieldPath, PathSegment};
use super::strict::{FailureKind, ParseFailure};
use super::{NonFinitePolicy, NonFiniteReplacement};
use crate::canonical_json::{
    Json, format_u64, integral_fraction, next_escape, short_fraction, utf16_order, write_escaped,
    write_string,
};
use crate::record::fields::MAX_SAFE_INTEGER;

/// serde_json's nesting limit: the 128th nested array or object is refused.
pub(crate) const DEPTH_LIMIT: usize = 128;

/// The places of numbers a JSON parser reads differently from their canonical text are
/// noted with their field paths; the keys of those paths may take at most this many times
/// the line's bytes (and a mebibyte) before the line is refused: a line of many such
/// numbers below a long key would otherwise hold the key once per number.
pub(crate) const NOTED_KEY_BYTES_PER_BYTE: usize = 16;

/// Objects with more members than this check for repeated keys through a set.
const LINEAR_KEY_CHECK: usize = 32;

/// An integer no double holds exactly: where it is below its member, and its decimal text.
pub type UnsafeInteger = (FieldPath, String);

/// One line (or item) read into its top-level members, in written order. Reused from line
/// to line: [`Members::clear`] keeps the buffers.
#[derive(Debug, Default, Clone)]
pub struct Members {
    /// The canonical text of every member's value, one after the other (UTF-8: the
    /// scanner copies and writes only whole characters).
    text: Vec<u8>,
    /// Every member's decoded key, one after the other.
    keys: String,
    /// Where each member's key and value end in `keys` and `text`.
    ends: Vec<(usize, usize)>,
    /// Each member's [`key_tag`]: adapters look members up by name a score of times a
    /// line, mostly names the line does not have, and a tag tells most keys apart without
    /// comparing them.
    tags: Vec<u64>,
    /// Members whose value is a number written with a fraction or an exponent (`1.0`,
    /// `1e2`): canonical text writes an integral one as an integer, and a field that must
    /// be an integer still refuses it, as the tree reader's `1.0` is no integer.
    written_as_fraction: Vec<usize>,
    /// The integers no double holds: (member, the integer), by member, each member's in
    /// the order canonical text writes them ([`canonical_order`]).
    unsafe_integers: Vec<(usize, UnsafeInteger)>,
    /// Numbers whose canonical text is an integer but that the tree reader reads as a
    /// double (`12.0`, `1e2`, `-0`, an integer beyond 64 bits): (member, path below it),
    /// in member order. An ID must not read them as integers.
    integral_doubles: Vec<(usize, FieldPath)>,
    /// Non-finite tokens read as null (empty unless the policy allows them).
    replaced: Vec<NonFiniteReplacement>,
    /// Where each of `replaced` began in the text.
    replaced_at: Vec<usize>,
    /// The scanner's working buffers, kept here from line to line.
    buffers: ScanBuffers,
}

/// What a [`Scanner`] writes as it goes, emptied for each line but not freed.
#[derive(Debug, Default, Clone)]
struct ScanBuffers {
    frames: Vec<Frame>,
    keys: String,
    written: Vec<Written>,
    scratch: Vec<u8>,
}

/// The length of a key and some of its bytes in one word (its first eight; of a shorter
/// key its first and last four, or its first, middle and last byte): two keys with
/// different tags differ. Read in whole words, not copied into one: a copy of a few bytes
/// then read as a word stalls the load, and that was most of a member lookup's time.
pub(crate) fn key_tag(key: &str) -> u64 {
    let bytes = key.as_bytes();
    let n = bytes.len();
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let head = match n {
        8.. => u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")),
        4..8 => u64::from(word(0)) | u64::from(word(n - 4)) << 32,
        1..4 => u64::from(bytes[0]) | u64::from(bytes[n / 2]) << 8 | u64::from(bytes[n - 1]) << 16,
        0 => 0,
    };
    head ^ (n as u64).rotate_right(8)
}

/// One top-level member: its key, its value's canonical text, and the first integer in it
/// that no double holds, in the order canonical text writes them (refused where the
/// member is stored; the tree reader's canonical writer stops at the same one).
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    pub key: &'a str,
    pub value: &'a str,
    pub unsafe_integer: Option<&'a UnsafeInteger>,
    /// Every integer in it that no double holds, in the order canonical text writes them
    /// (the first is `unsafe_integer`); each one's canonical text is its nearest double.
    pub unsafe_integers: &'a [(usize, UnsafeInteger)],
    /// The value is a number written with a fraction or an exponent.
    pub written_as_fraction: bool,
    /// The paths below the member of the numbers the tree reader reads as doubles though
    /// their canonical text is an integer.
    pub integral_doubles: &'a [(usize, FieldPath)],
}

impl<'a> Member<'a> {
    /// The value as canonical JSON, refused when it holds an integer no double holds
    /// (its path below the member, and its decimal text).
    pub fn json(&self) -> Result<Json<'a>, &'a UnsafeInteger> {
        match self.unsafe_integer {
            Some(found) => Err(found),
            None => Ok(Json::canonical(self.value)),
        }
    }

    /// Whether the number at `below` (a path inside the member) is a double to the tree
    /// reader though its canonical text is an integer.
    pub fn is_integral_double(&self, below: &[PathSegment]) -> bool {
        self.integral_doubles
            .iter()
            .any(|(_, path)| path.segments() == below)
    }

    /// The value as canonical JSON for reading only (an unsafe integer reads as its
    /// nearest double).
    pub fn peek(&self) -> Json<'a> {
        Json::canonical(self.value)
    }
}

impl Members {
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties the members, keeping the buffers.
    pub fn clear(&mut self) {
        self.text.clear();
        self.keys.clear();
        self.ends.clear();
        self.tags.clear();
        self.unsafe_integers.clear();
        self.integral_doubles.clear();
        self.written_as_fraction.clear();
        self.replaced.clear();
        self.replaced_at.clear();
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The member at `index` (in written order).
    pub fn at(&self, index: usize) -> Member<'_> {
        let (key_start, value_start) = match index {
            0 => (0, 0),
            _ => self.ends[index - 1],
        };
        let (key_end, value_end) = self.ends[index];
        // SAFETY: the scanner writes UTF-8 only (runs of the UTF-8 input cut at ASCII
        // bytes, and encoded characters), and a member's value starts and ends at value
        // boundaries.
        #[allow(unsafe_code)]
        let value = unsafe { std::str::from_utf8_unchecked(&self.text[value_start..value_end]) };
        // Pushed in member order, so sorted.
        let unsafe_integers = {
            let from = self.unsafe_integers.partition_point(|(m, _)| *m < index);
            let to = self.unsafe_integers.partition_point(|(m, _)| *m <= index);
            &self.unsafe_integers[from..to]
        };
        Member {
            key: &self.keys[key_start..key_end],
            value,
            unsafe_integer: unsafe_integers.first().map(|(_, found)| found),
            unsafe_integers,
            // Pushed in member order, so sorted.
            written_as_fraction: self.written_as_fraction.binary_search(&index).is_ok(),
            integral_doubles: {
                let from = self.integral_doubles.partition_point(|(m, _)| *m < index);
                let to = self.integral_doubles.partition_point(|(m, _)| *m <= index);
                &self.integral_doubles[from..to]
            },
        }
    }

    /// The members in written order.
    pub fn iter(&self) -> impl Iterator<Item = Member<'_>> {
        (0..self.len()).map(|index| self.at(index))
    }

    /// The index of the member with this key.
    pub fn position(&self, key: &str) -> Option<usize> {
        let tag = key_tag(key);
        (0..self.tags.len()).find(|&index| self.tags[index] == tag && self.key(index) == key)
    }

    /// The key of member `index`.
    fn key(&self, index: usize) -> &str {
        let start = match index {
            0 => 0,
            _ => self.ends[index - 1].0,
        };
        &self.keys[start..self.ends[index].0]
    }

    /// Appends a member whose key and value were just written to `keys` and `text`.
    fn push(&mut self, key: &str) {
        self.keys.push_str(key);
        self.ends.push((self.keys.len(), self.text.len()));
        self.tags.push(key_tag(key));
    }

    /// Appends a member read by another reader than the scanner (a Parquet row's column):
    /// its value's canonical text, whether a JSON parser reads the value as a double, and
    /// the places in it, as full paths (the member's key first), of the integers no double
    /// holds and of the doubles whose canonical text is an integer, as the scanner notes
    /// them. A key already there is the caller's to avoid.
    pub(crate) fn push_read(
        &mut self,
        key: &str,
        text: &str,
        double: bool,
        unsafe_integers: Vec<UnsafeInteger>,
        integral_doubles: Vec<FieldPath>,
    ) {
        let index = self.len();
        self.text.extend_from_slice(text.as_bytes());
        if double {
            self.written_as_fraction.push(index);
        }
        let first = self.unsafe_integers.len();
        for (path, value) in unsafe_integers {
            self.unsafe_integers
                .push((index, (below_member(&path), value)));
        }
        self.unsafe_integers[first..].sort_by(|a, b| canonical_order(&a.1.0, &b.1.0));
        for path in integral_doubles {
            self.integral_doubles.push((index, below_member(&path)));
        }
        self.push(key);
    }

    /// Notes a non-finite number another reader read as null (see [`Members::push_read`]).
    pub(crate) fn push_replaced(&mut self, replaced: NonFiniteReplacement) {
        self.replaced.push(replaced);
    }

    /// The member with this key.
    pub fn get(&self, key: &str) -> Option<Member<'_>> {
        self.position(key).map(|index| self.at(index))
    }

    /// Non-finite tokens read as null, with where they stood.
    pub fn replaced(&self) -> &[NonFiniteReplacement] {
        &self.replaced
    }

    /// The byte offset in the text of each of [`Members::replaced`]: also of those read
    /// before a failure (a line that failed keeps the tokens read up to it). None for
    /// members read by another reader ([`Members::push_read`]), which has no text.
    pub(crate) fn replaced_at(&self) -> &[usize] {
        &self.replaced_at
    }
}

/// Reads `text` as one JSON object, strictly, into `members` (emptied first).
pub(crate) fn scan_object(
    text: &str,
    policy: NonFinitePolicy,
    members: &mut Members,
) -> Result<(), ParseFailure> {
    scan(text, policy, members, usize::MAX)
}

/// [`scan_object`] for an input's line (or item) on its way into records: the paths it
/// notes are bounded by the line's length ([`NOTED_KEY_BYTES_PER_BYTE`]), so a line of
/// many numbers below a long key cannot take memory far beyond its own. Stored text,
/// babel's own and checked against its manifest's digests, is read by the unbounded scan.
pub(crate) fn scan_line(
    text: &str,
    policy: NonFinitePolicy,
    members: &mut Members,
) -> Result<(), ParseFailure> {
    let budget = text.len().saturating_mul(NOTED_KEY_BYTES_PER_BYTE) + (1 << 20);
    scan(text, policy, members, budget)
}

fn scan(
    text: &str,
    policy: NonFinitePolicy,
    members: &mut Members,
    note_budget: usize,
) -> Result<(), ParseFailure> {
    members.clear();
    if let Some(found) = super::strict::non_object_kind(text.as_bytes()) {
        return Err(ParseFailure {
            column: None,
            index: None,
            path: FieldPath::root(),
            kind: FailureKind::NotAnObject(found),
        });
    }
    let mut scanner = Scanner::new(text, policy, std::mem::take(&mut members.buffers));
    scanner.note_budget = note_budget;
    let scanned = scanner.top_level(members).and_then(|()| scanner.end());
    members.replaced = std::mem::take(&mut scanner.replaced);
    members.replaced_at = std::mem::take(&mut scanner.replaced_at);
    members.buffers = ScanBuffers {
        frames: scanner.frames,
        keys: scanner.keys,
        written: scanner.written,
        scratch: scanner.scratch,
    };
    scanned
}

/// One step of the path to where the scanner is.
#[derive(Debug, Clone, Copy)]
enum Frame {
    /// A key, decoded in `Scanner::keys` at this range.
    Key(usize, usize),
    Index(usize),
}

/// One member of an object being read: its decoded key (in `Scanner::keys`) and where the
/// member (`"key":value`) was written.
#[derive(Debug, Clone, Copy)]
struct Written {
    key: (usize, usize),
    member: (usize, usize),
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    remaining_depth: usize,
    /// The path to the current value, as frames (built into a [`FieldPath`] on demand).
    frames: Vec<Frame>,
    /// The decoded keys of every open object, innermost last.
    keys: String,
    /// The members of every open object, innermost last.
    written: Vec<Written>,
    /// Where members are copied while an object is put in order.
    scratch: Vec<u8>,
    policy: NonFinitePolicy,
    replaced: Vec<NonFiniteReplacement>,
    replaced_at: Vec<usize>,
    /// The integers of the current member's value that no double holds, with their paths
    /// below the member, in written order.
    unsafe_integers: Vec<UnsafeInteger>,
    /// The key bytes of the paths noted so far on this line (integral doubles and unsafe
    /// integers), and how many it may note ([`scan_line`]: [`NOTED_KEY_BYTES_PER_BYTE`]).
    noted_key_bytes: usize,
    note_budget: usize,
    /// The paths below the member of the current member's integral doubles.
    integral_doubles: Vec<FieldPath>,
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
    fn new(text: &'a str, policy: NonFinitePolicy, mut buffers: ScanBuffers) -> Self {
        buffers.frames.clear();
        buffers.keys.clear();
        buffers.written.clear();
        Self {
            text,
            bytes: text.as_bytes(),
            at: 0,
            remaining_depth: DEPTH_LIMIT,
            frames: buffers.frames,
            keys: buffers.keys,
            written: buffers.written,
            scratch: buffers.scratch,
            policy,
            replaced: Vec::new(),
            replaced_at: Vec::new(),
            unsafe_integers: Vec::new(),
            noted_key_bytes: 0,
            note_budget: usize::MAX,
            integral_doubles: Vec::new(),
        }
    }

    /// The path of the current number below the top-level member it is in, to be noted;
    /// refused once the keys of the paths noted on this line (the member's key counted)
    /// would take more than its `note_budget`.
    fn noted_path(&mut self) -> Result<FieldPath, ParseFailure> {
        let key_bytes: usize = self
            .frames
            .iter()
            .map(|frame| match *frame {
                Frame::Key(start, end) => end - start,
                Frame::Index(_) => 0,
            })
            .sum();
        self.noted_key_bytes += key_bytes;
        if self.noted_key_bytes > self.note_budget {
            // The keys are what is too long: the line is named, not their path.
            return Err(ParseFailure {
                column: None,
                index: None,
                path: FieldPath::root(),
                kind: FailureKind::TooManyNoted,
            });
        }
        // Made below the member at once, not as the whole path and then a copy without its
        // first step: a HELM stats file notes a million numbers written `1.0`, each path
        // then costing five allocations instead of two.
        let mut path = FieldPath::root();
        for frame in self.frames.iter().skip(1) {
            path.push(self.segment(*frame));
        }
        Ok(path)
    }

    fn segment(&self, frame: Frame) -> PathSegment {
        match frame {
            Frame::Key(start, end) => PathSegment::Key(self.keys[start..end].to_owned()),
            Frame::Index(index) => PathSegment::Index(index),
        }
    }

    /// The field path to where the scanner is.
    fn path(&self) -> FieldPath {
        let mut path = FieldPath::root();
        for frame in &self.frames {
            path.push(self.segment(*frame));
        }
        path
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
            path: self.path(),
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

    /// The top-level object: each member's key into `members.keys`, its value, canonical
    /// on its own, into `members.text`.
    fn top_level(&mut self, members: &mut Members) -> Scan {
        self.skip_whitespace();
        debug_assert_eq!(self.peek(), Some(b'{'));
        self.enter()?;
        self.at += 1;
        let mut seen: Option<HashSet<String>> = None;
        let mut first = true;
        while let Some((start, end)) = self.member_key(&mut first)? {
            self.skip_whitespace();
            let literal_start = self.at;
            self.value(&mut members.text)?;
            self.frames.pop();
            let literal = &self.bytes[literal_start..self.at];
            if matches!(literal[0], b'-' | b'0'..=b'9')
                && (literal.iter().any(|b| matches!(b, b'.' | b'e' | b'E')) || literal == b"-0")
            {
                members.written_as_fraction.push(members.len());
            }
            let key = &self.keys[start..end];
            let repeated = match &mut seen {
                Some(seen) => !seen.insert(key.to_owned()),
                None => members.position(key).is_some(),
            };
            if repeated {
                return Err(self.duplicate(start, end));
            }
            // The noted paths are relative to the member.
            let first = members.unsafe_integers.len();
            for (path, value) in self.unsafe_integers.drain(..) {
                members.unsafe_integers.push((members.len(), (path, value)));
            }
            members.unsafe_integers[first..].sort_by(|a, b| canonical_order(&a.1.0, &b.1.0));
            for path in self.integral_doubles.drain(..) {
                members.integral_doubles.push((members.len(), path));
            }
            members.push(key);
            if seen.is_none() && members.len() >= LINEAR_KEY_CHECK {
                seen = Some(members.iter().map(|member| member.key.to_owned()).collect());
            }
            self.keys.clear();
        }
        self.leave();
        Ok(())
    }

    /// The error for the repeated key at `start..end` of `self.keys`.
    fn duplicate(&self, start: usize, end: usize) -> ParseFailure {
        let key = self.keys[start..end].to_owned();
        let mut path = self.path();
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

    /// Inside an object: reads the next member's key and its colon, entering the member's
    /// frame; the key's range in `self.keys`, or `None` at the closing brace.
    fn member_key(&mut self, first: &mut bool) -> Scan<Option<(usize, usize)>> {
        let Some((start, end)) = self.object_next(*first)? else {
            return Ok(None);
        };
        *first = false;
        self.frames.push(Frame::Key(start, end));
        self.colon()?;
        Ok(Some((start, end)))
    }

    /// Inside an object: reads the next member's key, decoded onto the end of `self.keys`,
    /// and gives its range there; `None` at the closing brace.
    fn object_next(&mut self, first: bool) -> Scan<Option<(usize, usize)>> {
        self.skip_whitespace();
        match self.peek() {
            None => return Err(self.eof(message::EOF_OBJECT)),
            Some(b'}') => {
                self.at += 1;
                return Ok(None);
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
                let start = self.keys.len();
                self.key_string()?;
                Ok(Some((start, self.keys.len())))
            }
            _ => Err(self.syntax_here(message::KEY_MUST_BE_A_STRING)),
        }
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
                self.string_value(out)
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
                    path: self.path(),
                    kind: FailureKind::NonFinite {
                        token,
                        offset: self.at,
                    },
                })
            }
            NonFinitePolicy::Null => {
                self.replaced.push(NonFiniteReplacement {
                    path: self.path(),
                    token,
                });
                self.replaced_at.push(self.at);
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

    /// An object, written in place as its members are read, then put in key order if its
    /// keys were not in order.
    fn object(&mut self, out: &mut Vec<u8>) -> Scan {
        self.enter()?;
        self.at += 1;
        let keys_base = self.keys.len();
        let written_base = self.written.len();
        let open = out.len();
        out.push(b'{');
        let mut seen: Option<HashSet<String>> = None;
        let mut first = true;
        while let Some((start, end)) = self.member_key(&mut first)? {
            if self.written.len() > written_base {
                out.push(b',');
            }
            let member_start = out.len();
            write_string(&self.keys[start..end], out);
            out.push(b':');
            self.value(out)?;
            self.frames.pop();
            let key = &self.keys[start..end];
            let repeated = match &mut seen {
                Some(seen) => !seen.insert(key.to_owned()),
                None => self.written[written_base..]
                    .iter()
                    .any(|other| &self.keys[other.key.0..other.key.1] == key),
            };
            if repeated {
                return Err(self.duplicate(start, end));
            }
            self.written.push(Written {
                key: (start, end),
                member: (member_start, out.len()),
            });
            if seen.is_none() && self.written.len() - written_base >= LINEAR_KEY_CHECK {
                seen = Some(
                    self.written[written_base..]
                        .iter()
                        .map(|other| self.keys[other.key.0..other.key.1].to_owned())
                        .collect(),
                );
            }
        }
        self.leave();
        out.push(b'}');
        self.put_in_order(out, open, written_base);
        self.written.truncate(written_base);
        self.keys.truncate(keys_base);
        Ok(())
    }

    /// Rewrites the object that starts at `open` in `out` with its members (from
    /// `written_base` on) sorted by key, if they are not already.
    fn put_in_order(&mut self, out: &mut [u8], open: usize, written_base: usize) {
        let keys = &self.keys;
        let key = |member: &Written| &keys[member.key.0..member.key.1];
        let members = &mut self.written[written_base..];
        if members.is_sorted_by(|a, b| utf16_order(key(a), key(b)) != Ordering::Greater) {
            return;
        }
        members.sort_unstable_by(|a, b| utf16_order(key(a), key(b)));
        let inside = open + 1..out.len() - 1;
        self.scratch.clear();
        self.scratch.extend_from_slice(&out[inside.clone()]);
        let mut at = inside.start;
        for (index, member) in members.iter().enumerate() {
            if index > 0 {
                out[at] = b',';
                at += 1;
            }
            let from = member.member.0 - inside.start..member.member.1 - inside.start;
            out[at..at + from.len()].copy_from_slice(&self.scratch[from.clone()]);
            at += from.len();
        }
        debug_assert_eq!(at, inside.end);
    }

    fn array(&mut self, out: &mut Vec<u8>) -> Scan {
        self.enter()?;
        self.at += 1;
        out.push(b'[');
        let mut index = 0;
        loop {
            // As the tree reader does, the next element's index is on the path while the
            // separator before it is read.
            self.frames.push(Frame::Index(index));
            self.skip_whitespace();
            match self.peek() {
                None => return Err(self.eof(message::EOF_LIST)),
                Some(b']') => {
                    self.at += 1;
                    self.frames.pop();
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
            self.frames.pop();
            index += 1;
        }
        self.leave();
        out.push(b']');
        Ok(())
    }

    /// The end of the run of plain bytes from `start`: the next quote, backslash or
    /// control byte, or the end of the text.
    fn plain_run(&self, start: usize) -> usize {
        next_escape(self.bytes, start).unwrap_or(self.bytes.len())
    }

    /// The rest of a key (after its opening quote), decoded onto the end of `self.keys`.
    fn key_string(&mut self) -> Scan {
        let text = self.text;
        loop {
            let start = self.at;
            let run = self.plain_run(start);
            self.keys.push_str(&text[start..run]);
            self.at = run;
            match self.peek() {
                None => return Err(self.eof(message::EOF_STRING)),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.at += 1;
                    let decoded = self.escape()?;
                    self.keys.push(decoded);
                }
                Some(_) => return Err(self.syntax_here(message::CONTROL_CHARACTER)),
            }
        }
    }

    /// The rest of a string value (after its opening quote), written canonically: plain
    /// runs as they are, each escape decoded and written as `JSON.stringify` writes it.
    fn string_value(&mut self, out: &mut Vec<u8>) -> Scan {
        out.push(b'"');
        loop {
            let start = self.at;
            let run = self.plain_run(start);
            out.extend_from_slice(&self.bytes[start..run]);
            self.at = run;
            match self.peek() {
                None => return Err(self.eof(message::EOF_STRING)),
                Some(b'"') => {
                    self.at += 1;
                    out.push(b'"');
                    return Ok(());
                }
                Some(b'\\') => {
                    self.at += 1;
                    let decoded = self.escape()?;
                    if decoded < ' ' || decoded == '"' || decoded == '\\' {
                        write_escaped(decoded as u8, out);
                    } else {
                        let mut utf8 = [0u8; 4];
                        out.extend_from_slice(decoded.encode_utf8(&mut utf8).as_bytes());
                    }
                }
                Some(_) => return Err(self.syntax_here(message::CONTROL_CHARACTER)),
            }
        }
    }

    /// One escape (after its backslash), decoded.
    fn escape(&mut self) -> Scan<char> {
        let Some(byte) = self.peek() else {
            return Err(self.eof(message::EOF_STRING));
        };
        self.at += 1;
        Ok(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode_escape(),
            _ => return Err(self.syntax_at(self.at - 1, message::INVALID_ESCAPE)),
        })
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

    fn unicode_escape(&mut self) -> Scan<char> {
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
        char::from_u32(code).ok_or_else(|| self.syntax_at(self.at - 1, message::INVALID_CODE_POINT))
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
            self.digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            integer = false;
            self.exponent(start)?;
        }
        let literal = &self.text[start..self.at];
        if integer {
            let digits = literal.trim_start_matches('-');
            // Up to 15 digits an integer is below 2^53, and its canonical text is the
            // literal itself (the grammar allows no leading zeros), but for `-0`.
            if digits.len() <= 15 {
                if literal == "-0" {
                    // serde_json reads `-0` as the double -0.0.
                    let path = self.noted_path()?;
                    self.integral_doubles.push(path);
                    out.push(b'0');
                } else {
                    out.extend_from_slice(literal.as_bytes());
                }
                return Ok(());
            }
            if let Ok(value) = digits.parse::<u64>()
                && (!negative || value <= i64::MAX as u64 + 1)
            {
                return self.integer(negative, value, out);
            }
        }
        if !integer && let Some((whole, fraction)) = short_fraction(literal) {
            out.extend_from_slice(whole.as_bytes());
            out.push(b'.');
            out.extend_from_slice(fraction.as_bytes());
            return Ok(());
        }
        if !integer && let Some(whole) = integral_fraction(literal) {
            // A double to the tree reader, though its canonical text is an integer.
            let path = self.noted_path()?;
            self.integral_doubles.push(path);
            out.extend_from_slice(whole.as_bytes());
            return Ok(());
        }
        let value: f64 = literal
            .parse()
            .expect("the grammar above admits only numbers");
        if !value.is_finite() {
            return Err(self.syntax_at(self.at - 1, message::OUT_OF_RANGE));
        }
        let mut ryu = ryu_js::Buffer::new();
        let formatted = ryu.format_finite(value);
        if formatted.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
            let path = self.noted_path()?;
            self.integral_doubles.push(path);
        }
        out.extend_from_slice(formatted.as_bytes());
        Ok(())
    }

    /// One or more digits (of a fraction or an exponent).
    fn digits(&mut self) -> Scan {
        match self.peek() {
            Some(b'0'..=b'9') => {}
            None => return Err(self.eof(message::EOF_VALUE)),
            Some(_) => return Err(self.syntax_here(message::INVALID_NUMBER)),
        }
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        Ok(())
    }

    /// The exponent of the number that began at `start`, from its `e` or `E`.
    fn exponent(&mut self, start: usize) -> Scan {
        let significand = &self.text[start..self.at];
        let zero_significand = !significand.bytes().any(|b| matches!(b, b'1'..=b'9'));
        self.at += 1;
        let positive = match self.peek() {
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
        let digits = self.at;
        self.digits()?;
        // serde_json accumulates the exponent in an i32: a positive one that overflows it,
        // of a nonzero significand, is out of range at the digit that overflows.
        let mut exponent: i32 = 0;
        for (offset, digit) in self.text.as_bytes()[digits..self.at].iter().enumerate() {
            let digit = i32::from(digit - b'0');
            match exponent.checked_mul(10).and_then(|e| e.checked_add(digit)) {
                Some(next) => exponent = next,
                None if positive && !zero_significand => {
                    return Err(self.syntax_consumed(digits + offset + 1, message::OUT_OF_RANGE));
                }
                None => break,
            }
        }
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
        if formatted != decimal {
            let path = self.noted_path()?;
            self.unsafe_integers.push((path, decimal));
        }
        out.extend_from_slice(formatted.as_bytes());
        Ok(())
    }
}

/// The order in which canonical text writes the values at two paths inside one value:
/// keys by UTF-16 code units (RFC 8785), elements by index. Noted in written order, the
/// integers of a member whose keys were not in order were named otherwise than by the tree
/// reader, whose canonical writer stops at the first it writes (`{"x":2^53+1,"b":2^53+3}`
/// named `x` against `b`; found by `stream_vs_tree`).
fn canonical_order(a: &FieldPath, b: &FieldPath) -> Ordering {
    for (x, y) in a.segments().iter().zip(b.segments()) {
        let order = match (x, y) {
            (PathSegment::Key(x), PathSegment::Key(y)) => utf16_order(x, y),
            (PathSegment::Index(x), PathSegment::Index(y)) => x.cmp(y),
            // Two values of one container are both keys or both indices.
            (PathSegment::Key(_), PathSegment::Index(_)) => Ordering::Less,
            (PathSegment::Index(_), PathSegment::Key(_)) => Ordering::Greater,
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    a.segments().len().cmp(&b.segments().len())
}

/// A path from the line's top level as a path inside the top-level member it is in.
fn below_member(path: &FieldPath) -> FieldPath {
    let mut below = FieldPath::root();
    for segment in path.segments().iter().skip(1) {
        below.push(segment.clone());
    }
    below
}

#[cfg(test)]
mod tests {
    use super::super::{NonFinitePolicy, differential};
    use super::{Members, scan_object};

    #[test]
    fn members_are_found_by_name_among_keys_that_share_bytes_and_lengths() {
        let keys: Vec<String> = (0..=12)
            .flat_map(|n| ["a", "b", "ab"].map(|fill| fill.repeat(n).chars().take(n).collect()))
            .chain(
                [
                    "",
                    "ä",
                    "aäa",
                    "abcdefgh",
                    "abcdefghi",
                    "abcxefgh",
                    "xbcdefgh",
                ]
                .map(String::from),
            )
            .collect::<std::collections::BTreeSet<String>>()
            .into_iter()
            .collect();
        let object: serde_json::Map<String, serde_json::Value> = keys
            .iter()
            .map(|key| (key.clone(), serde_json::Value::Null))
            .collect();
        let mut members = Members::new();
        let text = serde_json::Value::Object(object).to_string();
        scan_object(&text, NonFinitePolicy::Reject, &mut members).unwrap();
        for (index, member) in members.iter().enumerate() {
            assert_eq!(
                members.position(member.key),
                Some(index),
                "{:?}",
                member.key
            );
        }
        for absent in [
            "c",
            "ac",
            "abca",
            "abcdefgi",
            "abcdefghj",
            "aaaaaaaaaaaaa",
            "ö",
            "aöa",
        ] {
            assert_eq!(members.position(absent), None, "{absent:?}");
        }
    }

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
        r#"{"ab": 1, "a": {"x": [1, {"y": 2, "y": 3}]}, "cd": [2]}"#,
        r#"{"a": {"\u0078": 1, "x": 2}}"#,
        r#"{"a": 1, "bc": 2, "a": 3}"#,
        r#"{"ab": 1, "c": 2, "ab": 3}"#,
        r#"{"ab": [1, {"c": NaN}], "a": [Infinity, {"b": -Infinity}], "cd": NaN}"#,
        r#"{"a": {"b": [1, 2,]}, "cd": 1}"#,
        r#"{"a": {"b": 1e999}}"#,
        // Several integers no double holds in one member: the first in canonical order
        // is named, where the tree reader's canonical writer stops.
        r#"{"a": {"x": 9007199254740993, "b": 9007199254740995}}"#,
        r#"{"a": [{"z": 9007199254740993, "y": [1, 9007199254740995]}, 9007199254740997]}"#,
        "{\"a\": {\"\u{e000}\": 9007199254740993, \"\u{1f600}\": 9007199254740995}}",
        r#"{"a": {"ab": {"c": 9007199254740993}, "a": [9007199254740995]}}"#,
        "{\r\"\": -NaNInf\u{15}inity +-Infinity",
        r#"{"a": -NaN}"#,
        r#"{"ab": [1, -NaN]}"#,
        "{\r\"\"\r:\t  5555555555556ENaN\r\"\nss:\"\"",
        r#"{"a": 1e-Infinity}"#,
        r#"{"a": 1.NaN}"#,
        r#"{"a": 2E+Infinity}"#,
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
    fn members_are_found_by_their_whole_key_where_tags_agree() {
        // The same length and first eight bytes: one tag, three keys.
        let text = r#"{"question_1": 1, "question_2": 2, "question_3": 3, "q": 4, "": 5}"#;
        let mut members = Members::new();
        scan_object(text, NonFinitePolicy::Reject, &mut members).unwrap();
        for (key, index) in [
            ("question_1", 0),
            ("question_2", 1),
            ("question_3", 2),
            ("q", 3),
            ("", 4),
        ] {
            assert_eq!(members.position(key), Some(index), "{key}");
        }
        for absent in ["question_4", "question_", "questio", "Q", "q\0"] {
            assert_eq!(members.position(absent), None, "{absent:?}");
        }
        let repeated = r#"{"question_1": 1, "question_2": 2, "question_2": 3}"#;
        assert!(scan_object(repeated, NonFinitePolicy::Reject, &mut members).is_err());
    }

    #[test]
    fn many_keys_are_checked_for_duplicates() {
        let keys: Vec<String> = (0..200).map(|i| format!("\"k{i}\": {i}")).collect();
        let text = format!("{{\"a\": {{{}}}}}", keys.join(", "));
        differential(text.as_bytes(), NonFinitePolicy::Reject).unwrap();
        let repeated = format!("{{\"a\": {{{}, \"k7\": 1}}}}", keys.join(", "));
        differential(repeated.as_bytes(), NonFinitePolicy::Reject).unwrap();
        // At the top level, where `differential`'s partial parse leaves out the keys of odd
        // length (k10..k99) and builds the others: a repeat of either kind is found.
        let top = format!("{{{}}}", keys.join(", "));
        differential(top.as_bytes(), NonFinitePolicy::Reject).unwrap();
        for repeat in ["k57", "k150", "k3"] {
            let repeated = format!("{{{}, \"{repeat}\": 1}}", keys.join(", "));
            differential(repeated.as_bytes(), NonFinitePolicy::Reject).unwrap();
        }
    }
}
