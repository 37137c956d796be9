//! The strict JSON Lines reader: one JSON object per nonblank line, read as a stream.
//!
//! Owns the line rules of the data contract: UTF-8 only; a byte order mark on the first line
//! only; LF or CRLF endings; blank lines skipped; duplicate keys, non-finite numbers,
//! non-object lines and truncated JSON rejected with the one-based line, the byte column and
//! the field path. It never holds more than one line, never touches the filesystem (callers
//! hand it any `BufRead`) and knows nothing of records.

mod batch;
mod path;
mod stream;
mod strict;

use serde_json::{Map, Value};
use std::fmt;
use std::io::{self, BufRead};

pub use batch::{Batcher, LineBatch, Observer};
pub use path::{FieldPath, PathSegment};
pub(crate) use stream::DEPTH_LIMIT;
pub(crate) use stream::key_tag;
pub use stream::{Member, Members, UnsafeInteger};
use strict::{FailureKind, ParseFailure};

/// The UTF-8 byte order mark, accepted at the start of the first line only.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A line longer than this is refused rather than buffered.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// What to do with the bare `NaN`, `Infinity` and `-Infinity` tokens some producers write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NonFinitePolicy {
    /// Refuse the line (the default: strict JSON has no such numbers).
    #[default]
    Reject,
    /// Read the token as `null` and report where it was, so a warning can say so.
    Null,
}

/// A non-finite token that was read as `null` under [`NonFinitePolicy::Null`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonFiniteReplacement {
    /// Where the token stood.
    pub path: FieldPath,
    /// The token as written (`NaN`, `Infinity` or `-Infinity`).
    pub token: &'static str,
}

/// One parsed nonblank line.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// One-based line number in the file.
    pub number: u64,
    /// The object on the line, keys in their written order.
    pub object: Map<String, Value>,
    /// Non-finite tokens read as null (empty unless the policy allows them).
    pub replaced: Vec<NonFiniteReplacement>,
}

/// Why one line was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum LineErrorKind {
    /// The bytes are not UTF-8.
    InvalidUtf8,
    /// A byte order mark after the first line.
    MisplacedBom,
    /// The line holds JSON that is not an object.
    NotAnObject(&'static str),
    /// An object repeats a key.
    DuplicateKey(String),
    /// `NaN`, `Infinity` or `-Infinity`.
    NonFinite(&'static str),
    /// Malformed or truncated JSON (serde_json's description).
    Syntax(String),
    /// The line is longer than [`MAX_LINE_BYTES`].
    TooLong,
    /// The line holds more numbers that a JSON parser reads differently from their
    /// canonical text (`1.0`, `-0`, an integer beyond 2^53), below longer keys, than the
    /// streaming reader notes the places of: memory bounded by the line's length.
    TooManyNoted,
}

/// A refused line: where, which field, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct LineError {
    /// One-based line number.
    pub line: u64,
    /// One-based byte column, when known.
    pub column: Option<usize>,
    /// Where in the line's text the reader stopped, when known: the byte index the column
    /// counts up to (the column is this index less the start of its line). Text that
    /// spans lines (a structured item) is located by it: [`LineError::position_in`].
    pub index: Option<usize>,
    /// The field being read; the root path when the problem is the line itself.
    pub path: FieldPath,
    pub kind: LineErrorKind,
}

impl LineError {
    /// The one-based line and byte column, within `text` (the bytes that were read, which
    /// may span lines: a ZIP member's JSON), where the reader stopped; `None` when that is
    /// not known.
    pub fn position_in(&self, text: &[u8]) -> Option<(usize, usize)> {
        position_at(text, self.index.filter(|&i| i <= text.len())?)
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<&'static str> {
        match self.kind {
            LineErrorKind::NonFinite(_) => Some(
                "strict JSON has no NaN or Infinity; fix the producer, or for harness output pass \
                 `--non-finite null` to read them as null (each affected record gets a warning)",
            ),
            LineErrorKind::DuplicateKey(_) => Some(
                "a repeated key makes the line ambiguous (JSON parsers disagree on which value \
                 wins); remove one of them",
            ),
            LineErrorKind::InvalidUtf8 => Some("re-encode the file as UTF-8"),
            LineErrorKind::MisplacedBom => {
                Some("files concatenated with a byte order mark each; strip the inner marks")
            }
            LineErrorKind::NotAnObject(_) => {
                Some("JSON Lines input holds one JSON object per nonblank line")
            }
            LineErrorKind::TooManyNoted => Some(
                "write such numbers as integers (`1`, `0`) or strings, or shorten the keys above them",
            ),
            _ => None,
        }
    }
}

impl LineError {
    /// What is wrong, without the position.
    pub fn message(&self) -> String {
        match &self.kind {
            LineErrorKind::InvalidUtf8 => "invalid UTF-8".into(),
            LineErrorKind::MisplacedBom => {
                "a UTF-8 byte order mark is allowed only at the start of the file".into()
            }
            LineErrorKind::NotAnObject(found) => format!("expected a JSON object, found {found}"),
            LineErrorKind::DuplicateKey(key) => format!("duplicate key {key:?}"),
            LineErrorKind::NonFinite(token) => format!("non-finite number {token}"),
            LineErrorKind::Syntax(message) => format!("invalid JSON: {message}"),
            LineErrorKind::TooLong => format!("line longer than {MAX_LINE_BYTES} bytes"),
            LineErrorKind::TooManyNoted => "too many numbers written as doubles (`1.0`, `-0`) or \
                beyond 2^53 below long keys: their places would take more memory than the line \
                holds many times over"
                .into(),
        }
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}", self.line)?;
        if let Some(column) = self.column {
            write!(f, ", column {column}")?;
        }
        if !self.path.is_root() {
            write!(f, ", field {}", self.path)?;
        }
        write!(f, ": {}", self.message())
    }
}

/// Either a refused line or a failure to read at all.
#[derive(Debug)]
pub enum ReadError {
    /// The line is refused; reading may go on with the next line.
    Line(LineError),
    /// The underlying reader failed; reading stops.
    Io(io::Error),
}

/// True when a line (without its line ending) holds only JSON whitespace.
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().copied().all(is_blank_byte)
}

/// The bytes a blank line may hold: the JSON whitespace of one line.
pub fn is_blank_byte(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r')
}

/// Strips `\n` or `\r\n` from the end of a line as read with `read_until(b'\n')`.
pub fn strip_line_ending(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Reads a JSON Lines stream strictly, one line at a time.
///
/// Iterating yields each nonblank line's object or the reason it was refused; a refused
/// line does not stop the iteration (so a caller can report several), an I/O error does.
pub struct Reader<R> {
    batcher: Batcher<R>,
    parsed: std::vec::IntoIter<(u64, Result<Option<Line>, LineError>)>,
    policy: NonFinitePolicy,
    finished: bool,
}

impl<R: BufRead> Reader<R> {
    /// A reader over `inner` with the given non-finite policy.
    pub fn new(inner: R, policy: NonFinitePolicy) -> Self {
        Self {
            batcher: Batcher::new(inner),
            parsed: Vec::new().into_iter(),
            policy,
            finished: false,
        }
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        self.batcher.get_ref()
    }

    /// Gives back the underlying reader.
    pub fn into_inner(self) -> R {
        self.batcher.into_inner()
    }
}

/// Parses one JSON value of any kind (not only an object), strictly: duplicate keys and
/// non-finite numbers refused. The error says where, as `field a.b: duplicate key "c"`.
pub fn parse_value(text: &str) -> Result<Value, String> {
    strict::parse_value(text).map_err(|failure| {
        let what = match failure.kind {
            FailureKind::DuplicateKey(key) => format!("duplicate key {key:?}"),
            FailureKind::NonFinite { token, .. } => format!("non-finite number {token}"),
            FailureKind::NotAnObject(found) => format!("unexpected {found}"),
            FailureKind::Syntax(message) => format!("invalid JSON: {message}"),
            FailureKind::TooManyNoted => unreachable!("only the streaming reader notes places"),
        };
        if failure.path.is_root() {
            what
        } else {
            format!("field {}: {what}", failure.path)
        }
    })
}

/// Scratch buffers for [`check_canonical`], reused from value to value.
#[derive(Debug, Default)]
pub struct CanonicalScratch {
    wrapped: String,
    members: Members,
}

/// Checks that `text` is one JSON value exactly as RFC 8785 writes it (strict JSON, no
/// whitespace, keys sorted, numbers and escapes in their one form, no integer a double
/// cannot hold): canonical text reads back as itself. The error says what is wrong, as
/// [`parse_value`] and the canonical writer say it.
///
/// Stored text is almost always canonical: [`surely_canonical`] settles most of it in a
/// quick pass, and the rest goes through [`check_canonical_in_full`].
///
/// [`surely_canonical`]: crate::canonical_json::surely_canonical
pub fn check_canonical(text: &str, scratch: &mut CanonicalScratch) -> Result<(), String> {
    if crate::canonical_json::surely_canonical(text) {
        return Ok(());
    }
    check_canonical_in_full(text, scratch)
}

/// [`check_canonical`] without its quick pass: the streaming reader canonicalizes `text`
/// in one pass and compares. The reference the quick pass is tested against.
pub fn check_canonical_in_full(text: &str, scratch: &mut CanonicalScratch) -> Result<(), String> {
    if canonical_text(text, scratch)? != text {
        return Err("not RFC 8785 canonical JSON".into());
    }
    Ok(())
}

/// `text`, one strict JSON value, as RFC 8785 writes it (by the streaming reader, in one
/// pass, no tree), or what is wrong with it as [`parse_value`] and the canonical writer say
/// it: what the tree path writes, for text that is not canonical yet.
pub fn canonical_text<'s>(
    text: &str,
    scratch: &'s mut CanonicalScratch,
) -> Result<&'s str, String> {
    scratch.wrapped.clear();
    scratch.wrapped.push_str("{\"v\":");
    scratch.wrapped.push_str(text);
    scratch.wrapped.push('}');
    if stream::scan_object(
        &scratch.wrapped,
        NonFinitePolicy::Reject,
        &mut scratch.members,
    )
    .is_err()
        || scratch.members.len() != 1
    {
        // The tree reader says why, in the words every other reader uses.
        parse_value(text)?;
        return Err("not RFC 8785 canonical JSON".into());
    }
    let member = scratch.members.at(0);
    if let Some((path, value)) = member.unsafe_integer {
        let error = crate::canonical_json::CanonicalError::UnsafeInteger {
            path: path.clone(),
            value: value.clone(),
        };
        return Err(error.to_string());
    }
    Ok(member.value)
}

/// Parses one line's text (no line ending) under a policy.
pub fn parse_line(text: &str, number: u64, policy: NonFinitePolicy) -> Result<Line, LineError> {
    parse_bytes(text.as_bytes(), number, policy)
}

/// The text of a line's bytes, or the invalid-UTF-8 error at its first bad byte.
fn utf8_text(bytes: &[u8], number: u64) -> Result<&str, LineError> {
    // simdutf8 validates in one fast pass; the parsers then read the text without
    // checking each string again.
    simdutf8::basic::from_utf8(bytes).map_err(|_| {
        let valid_up_to = std::str::from_utf8(bytes).map_or_else(|e| e.valid_up_to(), |_| 0);
        LineError {
            line: number,
            column: Some(valid_up_to + 1),
            index: Some(valid_up_to + 1),
            path: FieldPath::root(),
            kind: LineErrorKind::InvalidUtf8,
        }
    })
}

fn line_error(number: u64, failure: ParseFailure) -> LineError {
    let kind = match failure.kind {
        FailureKind::DuplicateKey(key) => LineErrorKind::DuplicateKey(key),
        FailureKind::NonFinite { token, .. } => LineErrorKind::NonFinite(token),
        FailureKind::NotAnObject(found) => LineErrorKind::NotAnObject(found),
        FailureKind::Syntax(message) => LineErrorKind::Syntax(message),
        FailureKind::TooManyNoted => LineErrorKind::TooManyNoted,
    };
    LineError {
        line: number,
        column: failure.column,
        index: failure.index,
        path: failure.path,
        kind,
    }
}

/// Reads one line's bytes (no line ending, no byte order mark) into its top-level members,
/// each value as canonical text, in one pass (the streaming reader). `members` is emptied
/// first and reused.
pub fn scan_bytes(
    bytes: &[u8],
    number: u64,
    policy: NonFinitePolicy,
    members: &mut Members,
) -> Result<(), LineError> {
    members.clear();
    let text = utf8_text(bytes, number)?;
    stream::scan_line(text, policy, members).map_err(|failure| line_error(number, failure))
}

/// Parses one line's bytes (no line ending, no byte order mark) under a policy.
///
/// The tree parser stops at a non-finite token. Under [`NonFinitePolicy::Null`] the
/// streaming reader, which reads on past each (and agrees with the tree parser on every
/// first failure, `differential`), finds them all in one pass; they are replaced by `null`
/// together and the text parsed once more. Patching and parsing again at each token took
/// time in the square of their number (a results file of 10,000 NaN scores, minutes).
pub fn parse_bytes(bytes: &[u8], number: u64, policy: NonFinitePolicy) -> Result<Line, LineError> {
    let text = utf8_text(bytes, number)?;
    let to_line_error = |failure: ParseFailure| line_error(number, failure);
    match strict::parse_object(text) {
        Ok(object) => {
            return Ok(Line {
                number,
                object,
                replaced: Vec::new(),
            });
        }
        Err(ParseFailure {
            kind: FailureKind::NonFinite { .. },
            ..
        }) if policy == NonFinitePolicy::Null => {}
        Err(failure) => return Err(to_line_error(failure)),
    }
    // Every token up to the streaming reader's first failure, if any: the tree parser
    // fails at the same place once they are patched.
    let mut members = Members::new();
    if let Err(
        failure @ ParseFailure {
            kind: FailureKind::TooManyNoted,
            ..
        },
    ) = stream::scan_line(text, policy, &mut members)
    {
        return Err(to_line_error(failure));
    }
    let mut patched = String::with_capacity(text.len());
    // Each replacement: where it stood, and how long the token was.
    let mut patches: Vec<(usize, usize)> = Vec::new();
    let mut copied = 0;
    for (replaced, &offset) in members.replaced().iter().zip(members.replaced_at()) {
        patched.push_str(&text[copied..offset]);
        patched.push_str("null");
        copied = offset + replaced.token.len();
        patches.push((offset, replaced.token.len()));
    }
    patched.push_str(&text[copied..]);
    match strict::parse_object(&patched) {
        Ok(object) => Ok(Line {
            number,
            object,
            replaced: members.replaced().to_vec(),
        }),
        Err(mut failure) => {
            // A position in the patched text is mapped back to the original's.
            if let (Some(at), false) = (failure.index, patches.is_empty()) {
                let at = original_index(at, &patches);
                failure.column = column_at(text, at);
                failure.index = failure.column.map(|_| at);
            }
            Err(to_line_error(failure))
        }
    }
}

/// The one-based line and byte column of byte index `index` of `text`, the column as the
/// tree parser counts it (up to the index; `None` at a line's start).
pub fn position_at(text: &[u8], index: usize) -> Option<(usize, usize)> {
    let index = index.min(text.len());
    let start = text[..index]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |newline| newline + 1);
    let line = text[..start].iter().filter(|&&b| b == b'\n').count() + 1;
    Some((line, index - start)).filter(|&(_, column)| column > 0)
}

/// The column of byte `index` of `text` in its line, as the tree parser counts (`None` at
/// a line's start).
fn column_at(text: &str, index: usize) -> Option<usize> {
    position_at(text.as_bytes(), index).map(|(_, column)| column)
}

/// The index in the original text of `at`, an index in the text where each of `patches`
/// (an offset in the original, in order, and the length of what stood there) was replaced
/// by `null`. An index inside a `null` maps into the token it replaced.
fn original_index(at: usize, patches: &[(usize, usize)]) -> usize {
    // How much longer the patched text is than the original up to here (a `null` is longer
    // than `NaN`, shorter than `Infinity`).
    let mut longer: isize = 0;
    for &(offset, length) in patches {
        let start = offset.saturating_add_signed(longer);
        if at < start {
            break;
        }
        if at < start + 4 {
            return offset + (at - start).min(length);
        }
        longer += 4 - length as isize;
    }
    at.saturating_add_signed(-longer)
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Line, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            for (_, parsed) in self.parsed.by_ref() {
                match parsed {
                    Ok(Some(line)) => return Some(Ok(line)),
                    Ok(None) => continue,
                    Err(error) => return Some(Err(ReadError::Line(error))),
                }
            }
            if self.finished {
                return None;
            }
            match self.batcher.next_batch() {
                Ok(Some(batch)) => {
                    self.parsed = batch.parse(self.policy).collect::<Vec<_>>().into_iter();
                }
                Ok(None) => self.finished = true,
                Err(error) => {
                    self.finished = true;
                    return Some(Err(ReadError::Io(error)));
                }
            }
        }
    }
}

/// [`parse_bytes`] the slow way, the reference it is checked against (`differential`, the
/// `stream_vs_tree` fuzz target, never an import): under [`NonFinitePolicy::Null`], each
/// non-finite token the tree parser stops at is patched and the whole text parsed again,
/// with no help from the streaming reader, in time square in the number of tokens.
pub fn parse_bytes_patching_each(
    bytes: &[u8],
    number: u64,
    policy: NonFinitePolicy,
) -> Result<Line, LineError> {
    let text = utf8_text(bytes, number)?;
    let (mut current, mut replaced) = (text.to_owned(), Vec::new());
    // Each patch: where it stood in the text as patched before it, and the token's length.
    let mut patches: Vec<(usize, usize)> = Vec::new();
    loop {
        match strict::parse_object(&current) {
            Ok(object) => {
                return Ok(Line {
                    number,
                    object,
                    replaced,
                });
            }
            Err(ParseFailure {
                kind: FailureKind::NonFinite { token, offset },
                path,
                ..
            }) if policy == NonFinitePolicy::Null => {
                current.replace_range(offset..offset + token.len(), "null");
                replaced.push(NonFiniteReplacement { path, token });
                patches.push((offset, token.len()));
            }
            Err(mut failure) => {
                if let Some(mut index) = failure.index.filter(|_| !patches.is_empty()) {
                    for &(offset, length) in patches.iter().rev() {
                        if index >= offset + 4 {
                            index = index + length - 4;
                        } else if index > offset {
                            index = offset + (index - offset).min(length);
                        }
                    }
                    failure.column = column_at(text, index);
                    failure.index = failure.column.map(|_| index);
                }
                return Err(line_error(number, failure));
            }
        }
    }
}

/// The streaming reader checked against the tree reader it replaces (kept as the
/// reference in tests and in the `stream_vs_tree` fuzz target): for `bytes` as a line,
/// both give the same members with the same canonical text (the tree's by
/// `canonical_json`) and the same replacements, or the same first error at the same
/// place. `Err` describes the first disagreement. The tree side is
/// [`parse_bytes_patching_each`], which takes no help from the streaming reader
/// ([`parse_bytes`] finds non-finite tokens with it).
pub fn differential(bytes: &[u8], policy: NonFinitePolicy) -> Result<(), String> {
    type Listed = (String, Result<String, (String, String)>);
    let tree: Result<(Vec<Listed>, Vec<NonFiniteReplacement>), LineError> =
        parse_bytes_patching_each(bytes, 1, policy).map(|line| {
            let members = line
                .object
                .into_iter()
                .map(|(key, value)| {
                    let mut out = Vec::new();
                    let text = crate::canonical_json::write_value(&value, &mut out)
                        .map(|()| String::from_utf8(out).expect("UTF-8"))
                        .map_err(|error| match error {
                            crate::canonical_json::CanonicalError::UnsafeInteger {
                                path,
                                value,
                            } => (path.to_string(), value),
                            other => (String::new(), other.to_string()),
                        });
                    (key, text)
                })
                .collect();
            (members, line.replaced)
        });
    let mut members = Members::new();
    let stream: Result<(Vec<Listed>, Vec<NonFiniteReplacement>), LineError> =
        scan_bytes(bytes, 1, policy, &mut members).map(|()| {
            let listed = members
                .iter()
                .map(|member| {
                    let text = match member.json() {
                        Ok(json) => Ok(json.as_str().to_owned()),
                        Err((path, value)) => Err((path.to_string(), value.clone())),
                    };
                    (member.key.to_owned(), text)
                })
                .collect();
            (listed, members.replaced().to_vec())
        });
    // Only the tree reader notes the index it stopped at (to locate an error in text
    // that spans lines); the streaming reader reads lines, located by their column.
    let without_index = |mut error: LineError| {
        error.index = None;
        error
    };
    let (tree, stream) = (tree.map_err(without_index), stream.map_err(without_index));
    // The streaming reader bounds what it notes by the line's length; the tree reader's
    // tree is bounded by the line's length already.
    if let Err(LineError {
        kind: LineErrorKind::TooManyNoted,
        ..
    }) = &stream
    {
        return Ok(());
    }
    if tree != stream {
        return Err(format!(
            "input {:?}\n  tree:   {tree:?}\n  stream: {stream:?}",
            String::from_utf8_lossy(bytes)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// "canonical text reads back as itself": the check agrees with the canonical writer
    /// (an independent RFC 8785 implementation checks that writer in tests/it).
    #[test]
    fn check_canonical_accepts_exactly_what_the_canonical_writer_writes() {
        let mut scratch = CanonicalScratch::default();
        let values = [
            "null",
            "true",
            "0",
            "-1.5",
            "1e+21",
            "1e-7",
            "\"é\\n\\u001f\"",
            "[]",
            "{}",
            "{\"a\":[1,{\"b\":null}],\"é\":\"x\"}",
            "[\"\",0.1,-0]",
        ];
        for text in values {
            let value: Value = serde_json::from_str(text).unwrap();
            let canonical = crate::canonical_json::to_canonical_string(&value).unwrap();
            // Through the quick pass and without it.
            assert_eq!(
                check_canonical(&canonical, &mut scratch),
                Ok(()),
                "{canonical}"
            );
            assert_eq!(
                check_canonical_in_full(&canonical, &mut scratch),
                Ok(()),
                "{canonical}"
            );
            let spaced = serde_json::to_string_pretty(&value).unwrap();
            assert_eq!(
                check_canonical(&spaced, &mut scratch).is_ok(),
                spaced == canonical,
                "{spaced}"
            );
        }
        for (text, message) in [
            ("{\"b\":1,\"a\":2}", "not RFC 8785 canonical JSON"),
            ("1.0", "not RFC 8785 canonical JSON"),
            ("\"\\u00e9\"", "not RFC 8785 canonical JSON"),
            (
                "[9007199254740993]",
                "field [0]: the integer 9007199254740993 has no exact canonical form (RFC 8785 numbers are doubles)",
            ),
        ] {
            assert_eq!(
                check_canonical(text, &mut scratch),
                Err(message.to_owned()),
                "{text}"
            );
        }
        // Text that is not JSON at all is refused in the tree reader's words.
        for text in ["1,2", "", "NaN", "{\"a\":1,\"a\":1}", "[1,]", "1}{"] {
            assert_eq!(
                check_canonical(text, &mut scratch),
                Err(parse_value(text).unwrap_err()),
                "{text}"
            );
        }
    }

    fn read_all(bytes: &[u8], policy: NonFinitePolicy) -> Vec<Result<Line, LineError>> {
        Reader::new(bytes, policy)
            .map(|item| match item {
                Ok(line) => Ok(line),
                Err(ReadError::Line(e)) => Err(e),
                Err(ReadError::Io(e)) => panic!("io error {e}"),
            })
            .collect()
    }

    #[test]
    fn bom_on_the_first_line_and_crlf_endings_are_accepted() {
        let lines = read_all(
            b"\xEF\xBB\xBF{\"a\": 1}\r\n\r\n{\"b\": 2}\r\n",
            NonFinitePolicy::Reject,
        );
        assert_eq!(lines.len(), 2);
        let first = lines[0].as_ref().unwrap();
        assert_eq!(first.number, 1);
        assert_eq!(first.object["a"], 1);
        assert_eq!(
            lines[1].as_ref().unwrap().number,
            3,
            "blank line 2 is skipped"
        );
    }

    #[test]
    fn a_bom_after_the_first_line_is_refused() {
        let lines = read_all(b"{}\n\xEF\xBB\xBF{}\n", NonFinitePolicy::Reject);
        let error = lines[1].as_ref().unwrap_err();
        assert_eq!(error.kind, LineErrorKind::MisplacedBom);
        assert_eq!(error.line, 2);
    }

    #[test]
    fn invalid_utf8_is_refused_with_its_column() {
        let lines = read_all(
            b"{\"a\": \"ok\"}\n{\"a\": \"\xff\"}\n",
            NonFinitePolicy::Reject,
        );
        let error = lines[1].as_ref().unwrap_err();
        assert_eq!(error.kind, LineErrorKind::InvalidUtf8);
        assert_eq!((error.line, error.column), (2, Some(8)));
        assert_eq!(error.to_string(), "line 2, column 8: invalid UTF-8");
    }

    #[test]
    fn a_refused_line_does_not_stop_the_reading() {
        let lines = read_all(b"{}\n[1]\n{\"ok\": true}", NonFinitePolicy::Reject);
        assert_eq!(lines.len(), 3);
        assert!(lines[1].is_err());
        assert!(lines[2].is_ok(), "a last line without LF is read");
    }

    #[test]
    fn non_finite_numbers_are_refused_by_default_and_named() {
        let lines = read_all(b"{\"doc\": {\"x\": NaN}}\n", NonFinitePolicy::Reject);
        let error = lines[0].as_ref().unwrap_err();
        assert_eq!(error.kind, LineErrorKind::NonFinite("NaN"));
        assert_eq!(
            error.to_string(),
            "line 1, column 15, field doc.x: non-finite number NaN"
        );
    }

    /// The places the streaming reader notes (of numbers a parser reads as doubles, and
    /// of integers beyond 2^53) are bounded by the line: many such numbers below a long
    /// key refuse the line (they once took 217 MB for a line of 370 KB), while a long
    /// array of them below a short key reads as ever.
    #[test]
    fn the_places_of_numbers_noted_are_bounded_by_the_line() {
        let numbers = |key: &str, number: &str, count: usize| {
            let list = vec![number; count].join(",");
            format!(r#"{{"{key}": {{"{key}": [{list}]}}}}"#)
        };
        let mut members = Members::new();
        let long = "k".repeat(10_000);
        for number in ["1.0", "-0", "9007199254740993"] {
            let line = numbers(&long, number, 20_000);
            let error =
                scan_bytes(line.as_bytes(), 4, NonFinitePolicy::Null, &mut members).unwrap_err();
            assert_eq!(error.kind, LineErrorKind::TooManyNoted, "{number}");
            assert_eq!(
                (error.line, error.path.is_root()),
                (4, true),
                "the line is named"
            );
            assert!(error.hint().is_some());
            assert_eq!(differential(line.as_bytes(), NonFinitePolicy::Null), Ok(()));
            // A structured item's tree parse looks for its non-finite tokens the same way.
            let with_nan = line.replacen('[', "[NaN,", 1);
            let error = parse_bytes(with_nan.as_bytes(), 1, NonFinitePolicy::Null).unwrap_err();
            assert_eq!(error.kind, LineErrorKind::TooManyNoted, "{number}");
        }
        let short = numbers("logits", "0.0", 100_000);
        scan_bytes(short.as_bytes(), 1, NonFinitePolicy::Reject, &mut members).unwrap();
        let noted = members.at(0).integral_doubles.len();
        assert_eq!(noted, 100_000, "each one noted");
        assert_eq!(
            parse_bytes(short.as_bytes(), 1, NonFinitePolicy::Reject)
                .unwrap()
                .object
                .len(),
            1
        );
    }

    #[test]
    fn every_token_patched_at_once_reads_as_patching_each_in_turn() {
        let tokens = ["NaN", "Infinity", "-Infinity", "1"];
        let ends = [
            "}",
            ",}",
            "} x",
            ", \"a\": 1}",
            ", \"z\": [1,]}",
            ", \"z\": nul}",
            "",
        ];
        let mut checked = 0;
        for (i, first) in tokens.iter().enumerate() {
            for second in &tokens[i..] {
                for end in ends {
                    for gap in [" ", "\n  "] {
                        let text = format!(
                            "{{\"a\": {first},{gap}\"b\": [{second}, \"NaN\", {first}],{gap}\
                             \"c\": {{\"d\": {second}}}{end}"
                        );
                        let expected =
                            parse_bytes_patching_each(text.as_bytes(), 1, NonFinitePolicy::Null);
                        let found = parse_bytes(text.as_bytes(), 1, NonFinitePolicy::Null);
                        assert_eq!(found, expected, "{text}");
                        checked += usize::from(expected.is_err());
                    }
                }
            }
        }
        assert!(checked > 40, "errors after patched tokens are compared too");
    }

    #[test]
    fn the_null_policy_reads_each_non_finite_token_as_null_and_says_where() {
        let text = b"{\"a\": NaN, \"b\": [Infinity, -Infinity], \"c\": \"NaN\"}\n";
        let lines = read_all(text, NonFinitePolicy::Null);
        let line = lines[0].as_ref().unwrap();
        assert_eq!(line.object["a"], Value::Null);
        assert_eq!(line.object["b"], serde_json::json!([null, null]));
        assert_eq!(line.object["c"], "NaN");
        let places: Vec<String> = line
            .replaced
            .iter()
            .map(|r| format!("{}={}", r.path, r.token))
            .collect();
        assert_eq!(places, ["a=NaN", "b[0]=Infinity", "b[1]=-Infinity"]);
    }

    #[test]
    fn truncated_json_is_refused() {
        let lines = read_all(b"{\"a\": [1, 2\n", NonFinitePolicy::Reject);
        assert!(matches!(
            lines[0].as_ref().unwrap_err().kind,
            LineErrorKind::Syntax(_)
        ));
    }
}
