//! RFC 8785 canonical JSON: the one writer of `manifest.json`, `artifact.json`, the archive
//! marker and every nested value of a stored record, so equal content has equal bytes (and
//! SHA-256) in every implementation.
//!
//! The rules (RFC 8785 section 3.2): no whitespace; object keys sorted by their UTF-16 code
//! units; strings escaped as ECMAScript's `JSON.stringify` does (only `"`, `\` and control
//! characters, the short forms where they exist, else `\u00xx`); numbers formatted as
//! ECMAScript doubles (`ryu-js`). An integer whose canonical form would read back as
//! another number (such as 2^53 + 1) is refused here rather than rounded.
//!
//! The writer walks a `serde_json::Value` once into a byte buffer; it is on the import's hot
//! path (every record's `input`, `target`, `scores`, ... go through it), so it allocates
//! only to sort the keys of an object.

mod quick;
mod text;

use serde::Serialize;
use serde_json::{Number, Value};
use std::cmp::Ordering;

use crate::jsonl::{FieldPath, PathSegment};
use crate::record::fields::MAX_SAFE_INTEGER;

pub use quick::surely_canonical;
pub(crate) use text::object_members;
pub use text::{ArrayElements, Json, Kind as JsonKind, ObjectMembers, ObjectWriter};

/// Why a value has no canonical form.
#[derive(Debug, thiserror::Error)]
pub enum CanonicalError {
    /// An integer that ECMAScript numbers cannot hold exactly.
    #[error(
        "field {path}: the integer {value} has no exact canonical form (RFC 8785 numbers are doubles)"
    )]
    UnsafeInteger { path: FieldPath, value: String },
    /// The value does not serialize to JSON at all.
    #[error("cannot serialize as JSON: {0}")]
    Serialize(#[from] serde_json::Error),
}

/// The canonical bytes of `value`, with the trailing LF.
pub fn to_canonical_bytes<T: Serialize>(value: &T) -> Result<Vec<u8>, CanonicalError> {
    let value = serde_json::to_value(value)?;
    let mut bytes = Vec::with_capacity(256);
    write_value(&value, &mut bytes)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Appends the canonical form of `value` (no trailing LF) to `out`. On error `out` holds
/// a partial value; callers discard it.
pub fn write_value(value: &Value, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    let mut trail = Vec::new();
    write(value, out, &mut trail).map_err(|unsafe_integer| {
        // The path was collected innermost first while the error travelled out.
        let mut path = FieldPath::root();
        for segment in trail.into_iter().rev() {
            path.push(segment);
        }
        CanonicalError::UnsafeInteger {
            path,
            value: unsafe_integer,
        }
    })
}

/// The canonical text of `value` (no trailing LF).
pub fn to_canonical_string(value: &Value) -> Result<String, CanonicalError> {
    let mut out = Vec::new();
    write_value(value, &mut out)?;
    Ok(String::from_utf8(out).expect("canonical JSON of a Value is UTF-8"))
}

/// True when `bytes` are exactly the canonical form of the JSON value they hold.
pub fn is_canonical(bytes: &[u8], value: &Value) -> bool {
    to_canonical_bytes(value).is_ok_and(|canonical| canonical == bytes)
}

/// Writes one value; on an unsafe integer returns its text, with the path to it pushed
/// onto `trail` innermost first.
fn write(value: &Value, out: &mut Vec<u8>, trail: &mut Vec<PathSegment>) -> Result<(), String> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => write_number(number, out)?,
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write(item, out, trail).inspect_err(|_| trail.push(PathSegment::Index(index)))?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            if !entries.is_sorted_by(|a, b| utf16_order(a.0, b.0) != Ordering::Greater) {
                entries.sort_unstable_by(|a, b| utf16_order(a.0, b.0));
            }
            out.push(b'{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write(item, out, trail)
                    .inspect_err(|_| trail.push(PathSegment::Key(key.clone())))?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// RFC 8785 section 3.2.3: keys compare by UTF-16 code units. Byte order of UTF-8 is code
/// point order, which agrees with UTF-16 order except between a supplementary character
/// (a surrogate pair, 0xD800..) and U+E000..U+FFFF; ASCII-only keys take the fast path.
pub(crate) fn utf16_order(a: &str, b: &str) -> Ordering {
    if a.is_ascii() || b.is_ascii() {
        return a.as_bytes().cmp(b.as_bytes());
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

fn write_number(number: &Number, out: &mut Vec<u8>) -> Result<(), String> {
    let mut buffer = [0u8; 20];
    if let Some(unsigned) = number.as_u64() {
        if unsigned <= MAX_SAFE_INTEGER {
            out.extend_from_slice(format_u64(unsigned, &mut buffer));
            return Ok(());
        }
        return write_large_integer(unsigned as f64, &number.to_string(), out);
    }
    if let Some(signed) = number.as_i64() {
        if signed.unsigned_abs() <= MAX_SAFE_INTEGER {
            out.push(b'-');
            out.extend_from_slice(format_u64(signed.unsigned_abs(), &mut buffer));
            return Ok(());
        }
        return write_large_integer(signed as f64, &number.to_string(), out);
    }
    let float = number
        .as_f64()
        .expect("a serde_json number is an integer or a finite double");
    let mut ryu = ryu_js::Buffer::new();
    out.extend_from_slice(ryu.format_finite(float).as_bytes());
    Ok(())
}

/// An integer beyond 2^53 is kept only when its ECMAScript form is the same decimal text.
fn write_large_integer(as_double: f64, decimal: &str, out: &mut Vec<u8>) -> Result<(), String> {
    let mut ryu = ryu_js::Buffer::new();
    let formatted = ryu.format_finite(as_double);
    if formatted != decimal {
        return Err(decimal.to_owned());
    }
    out.extend_from_slice(formatted.as_bytes());
    Ok(())
}

/// The canonical text of a number written as `[-]digits.digits` (no exponent) that is
/// already its shortest form, but for trailing zeros: its signed whole part and its
/// fraction without them; `None` for any other (read and written through `ryu-js`).
///
/// Up to 15 significant digits, a decimal is the only one of that many digits or fewer
/// that rounds to its double (a double keeps 15 digits), so it is the shortest
/// round-trip digits ECMAScript writes; from 10^-6 to below 10^21 ECMAScript writes
/// them plainly (`0.000001`, not `1e-6`). Integral values (`2.0`) are
/// [`integral_fraction`]'s.
pub(crate) fn short_fraction(literal: &str) -> Option<(&str, &str)> {
    let (whole, fraction) = literal.split_once('.')?;
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() || fraction.bytes().any(|b| !b.is_ascii_digit()) {
        return None;
    }
    let digits = whole.trim_start_matches('-');
    let significant = match digits {
        "0" => {
            let leading = fraction.len() - fraction.trim_start_matches('0').len();
            if leading > 5 {
                return None;
            }
            fraction.len() - leading
        }
        _ => digits.len() + fraction.len(),
    };
    (significant <= 15).then_some((whole, fraction))
}

/// The canonical text of a number written as `[-]digits.0…` (a whole number written with
/// a fraction of zeros, no exponent) of up to 15 digits: its whole part, `-0` written `0`
/// as ECMAScript writes negative zero; `None` for any other. A double holds such a whole
/// number exactly, and ECMAScript writes it plainly below 10^21, so this is the text
/// `ryu-js` would write after a parse (HELM's stats are written `1.0`, a million in a run).
pub(crate) fn integral_fraction(literal: &str) -> Option<&str> {
    let (whole, fraction) = literal.split_once('.')?;
    if fraction.is_empty() || fraction.bytes().any(|b| b != b'0') {
        return None;
    }
    let digits = whole.strip_prefix('-').unwrap_or(whole);
    if digits.is_empty() || digits.len() > 15 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(if digits == "0" { digits } else { whole })
}

pub(crate) fn format_u64(mut value: u64, buffer: &mut [u8; 20]) -> &[u8] {
    let mut start = buffer.len();
    loop {
        start -= 1;
        buffer[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            return &buffer[start..];
        }
    }
}

/// The first byte at or after `from` that a JSON string must escape (`"`, `\\`, or below
/// 0x20): the strings of real records (prompts, documents) are long and almost never need
/// one. Sixteen bytes at a time with SSE2 (every x86-64 has it), then eight in a 64-bit
/// word, then one. Panics when `from` is past the end, as slicing does.
///
/// Most calls end in their first sixteen bytes (a key, a label, the span up to a prompt's
/// next `\n`): that block is tested here, inlined in the caller, and only the rest goes
/// through the full search (whose call saves and restores registers each time).
#[inline]
pub(crate) fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if let Some(block) = bytes.get(from..from.wrapping_add(16)) {
        let found = escapes_in_block(block);
        if found != 0 {
            return Some(from + found.trailing_zeros() as usize);
        }
        return next_escape_after(bytes, from + 16);
    }
    next_escape_after(bytes, from)
}

/// [`next_escape`] past its first block.
#[cfg_attr(target_arch = "x86_64", inline(never))]
fn next_escape_after(bytes: &[u8], from: usize) -> Option<usize> {
    let rest = &bytes[from..];
    let blocks = sixteen_plain(rest);
    let words = blocks + eight_plain(&rest[blocks..]);
    rest[words..]
        .iter()
        .position(|&b| b < 0x20 || b == b'"' || b == b'\\')
        .map(|offset| from + words + offset)
}

/// How many leading bytes of `bytes` sixteen-byte blocks show to need no escape: up to
/// the first byte that does, or the last whole block.
#[cfg(target_arch = "x86_64")]
fn sixteen_plain(bytes: &[u8]) -> usize {
    let mut plain = 0;
    for block in bytes.chunks_exact(16) {
        let found = escapes_in_block(block);
        if found != 0 {
            return plain + found.trailing_zeros() as usize;
        }
        plain += 16;
    }
    plain
}

/// Bit `i` set: byte `i` of the sixteen in `block` needs an escape.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn escapes_in_block(block: &[u8]) -> u32 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    assert!(block.len() >= 16);
    // SAFETY: SSE2 is part of every x86-64 target, so its intrinsics can run; the load
    // reads the first sixteen bytes of `block` (checked above), at any alignment.
    #[allow(unsafe_code)]
    let found = unsafe {
        let block = _mm_loadu_si128(block.as_ptr().cast());
        // A byte is a control character when the smaller of it and 0x1f is itself.
        let control = _mm_cmpeq_epi8(_mm_min_epu8(block, _mm_set1_epi8(0x1f)), block);
        let special = _mm_or_si128(
            _mm_cmpeq_epi8(block, _mm_set1_epi8(b'"' as i8)),
            _mm_cmpeq_epi8(block, _mm_set1_epi8(b'\\' as i8)),
        );
        _mm_movemask_epi8(_mm_or_si128(control, special))
    };
    found as u32
}

#[cfg(not(target_arch = "x86_64"))]
fn sixteen_plain(_: &[u8]) -> usize {
    0
}

/// How many leading bytes of `bytes` are whole eight-byte words needing no escape.
fn eight_plain(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte of `word` is zero / below n (n <= 128) when its high bit ends up set here.
    let has_zero = |word: u64| word.wrapping_sub(ONES) & !word & HIGH;
    let has_below = |word: u64, n: u64| word.wrapping_sub(ONES * n) & !word & HIGH;
    let mut plain = 0;
    for word in bytes.chunks_exact(8) {
        let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        let hits = has_below(word, 0x20)
            | has_zero(word ^ (ONES * u64::from(b'"')))
            | has_zero(word ^ (ONES * u64::from(b'\\')));
        if hits != 0 {
            break;
        }
        plain += 8;
    }
    plain
}

/// Writes a JSON string as `JSON.stringify` does: `"` and `\\` escaped, the control
/// characters U+0000..U+001F as `\\b \\t \\n \\f \\r` or `\\u00xx`, everything else as is.
pub fn write_string(text: &str, out: &mut Vec<u8>) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    // Most strings need no escape: find the next byte that does, copy the span before it.
    while let Some(index) = next_escape(bytes, start) {
        out.extend_from_slice(&bytes[start..index]);
        write_escaped(bytes[index], out);
        start = index + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Writes one byte a JSON string must escape (`"`, `\\`, or below 0x20) as
/// `JSON.stringify` escapes it.
pub(crate) fn write_escaped(byte: u8, out: &mut Vec<u8>) {
    let (bytes, len) = escape(byte);
    out.extend_from_slice(&bytes[..len]);
}

/// A JSON string holding `text`, appended to `out` (what [`write_string`] writes, for a
/// caller that builds text).
pub(crate) fn push_string(text: &str, out: &mut String) {
    out.reserve(text.len() + 2);
    out.push('"');
    let mut start = 0;
    while let Some(index) = next_escape(text.as_bytes(), start) {
        // An escaped byte is ASCII, so both cuts are at character boundaries.
        out.push_str(&text[start..index]);
        let (bytes, len) = escape(text.as_bytes()[index]);
        out.extend(bytes[..len].iter().map(|&b| char::from(b)));
        start = index + 1;
    }
    out.push_str(&text[start..]);
    out.push('"');
}

/// The ASCII escape of one byte a JSON string must escape, and its length.
fn escape(byte: u8) -> ([u8; 6], usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = |c: u8| ([b'\\', c, 0, 0, 0, 0], 2);
    match byte {
        b'"' => short(b'"'),
        b'\\' => short(b'\\'),
        0x08 => short(b'b'),
        b'\t' => short(b't'),
        b'\n' => short(b'n'),
        0x0c => short(b'f'),
        b'\r' => short(b'r'),
        _ => (
            [
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(byte >> 4) as usize],
                HEX[(byte & 0xf) as usize],
            ],
            6,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canonical(value: &Value) -> String {
        to_canonical_string(value).unwrap()
    }

    #[test]
    fn the_next_byte_to_escape_is_found_wherever_it_stands() {
        // Every byte that needs an escape, and the bytes around the bounds of the control
        // range and of signedness, at each place of texts longer and shorter than a block,
        // searched from each start: the answer is the first such byte at or after it.
        let needing = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
        let plain = [b'a', 0x20, 0x7f, 0x80, 0xe9, 0xff];
        for len in 0..40 {
            for at in 0..len {
                for special in [0u8, 0x1f, b'"', b'\\', b'\n'].into_iter().chain(plain) {
                    for filler in plain {
                        let mut text = vec![filler; len];
                        text[at] = special;
                        for from in 0..=len {
                            let expected = text[from..]
                                .iter()
                                .position(|&b| needing(b))
                                .map(|offset| from + offset);
                            assert_eq!(next_escape(&text, from), expected, "{text:?} from {from}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn keys_are_sorted_by_utf16_units_and_output_ends_with_lf() {
        // RFC 8785 section 3.2.3: sorting uses UTF-16 code units, so U+1F600 (a surrogate
        // pair starting 0xD83D) sorts before U+FB01 (0xFB01).
        let value = json!({"\u{fb01}": 1, "\u{1f600}": 2, "b": [1.5, 1e21, 10.0], "a": "é\n"});
        let bytes = to_canonical_bytes(&value).unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "{\"a\":\"é\\n\",\"b\":[1.5,1e+21,10],\"\u{1f600}\":2,\"\u{fb01}\":1}\n"
        );
    }

    #[test]
    fn the_rfc_8785_sorting_example_sorts_as_the_rfc_shows() {
        // RFC 8785 section 3.2.3, the example's keys in the order the RFC lists as sorted.
        let value = json!({
            "\u{20ac}": "Euro Sign", "\r": "Carriage Return", "\u{fb33}": "Hebrew Letter Dalet With Dagesh",
            "1": "One", "\u{1f600}": "Emoji: Grinning Face", "\u{0080}": "Control", "\u{00f6}": "Latin Small Letter O With Diaeresis"
        });
        let text = canonical(&value);
        let order: Vec<&str> = [
            "\\r",
            "1",
            "\u{0080}",
            "\u{00f6}",
            "\u{20ac}",
            "\u{1f600}",
            "\u{fb33}",
        ]
        .into_iter()
        .collect();
        let positions: Vec<usize> = order
            .iter()
            .map(|key| text.find(&format!("\"{key}\":")).unwrap())
            .collect();
        assert!(positions.is_sorted(), "{text}");
    }

    #[test]
    fn numbers_follow_ecmascript_as_in_rfc_8785_appendix_b() {
        // A selection of RFC 8785 Appendix B (IEEE 754 bits -> canonical text).
        let cases: [(u64, &str); 14] = [
            (0x0000000000000000, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ];
        for (bits, expected) in cases {
            let value = Value::from(f64::from_bits(bits));
            assert_eq!(canonical(&value), expected, "{bits:#x}");
        }
        assert_eq!(
            canonical(&json!([10, -3, 0.5, -0.0, 1e-7])),
            "[10,-3,0.5,0,1e-7]"
        );
    }

    #[test]
    fn strings_escape_only_what_json_stringify_escapes() {
        let value = json!("\u{0}\u{8}\t\n\u{b}\u{c}\r\u{1f}\"\\/\u{7f}\u{2028}é");
        assert_eq!(
            canonical(&value),
            "\"\\u0000\\b\\t\\n\\u000b\\f\\r\\u001f\\\"\\\\/\u{7f}\u{2028}é\""
        );
    }

    #[test]
    fn integers_no_double_holds_are_refused() {
        let error = to_canonical_bytes(&json!({"meta": {"n": 9007199254740993u64}})).unwrap_err();
        assert_eq!(
            error.to_string(),
            "field meta.n: the integer 9007199254740993 has no exact canonical form (RFC 8785 numbers are doubles)"
        );
        let nested = to_canonical_bytes(&json!({"a": [1, {"b": -9007199254740993i64}]}));
        assert_eq!(
            nested.unwrap_err().to_string(),
            "field a[1].b: the integer -9007199254740993 has no exact canonical form (RFC 8785 numbers are doubles)"
        );
        assert!(to_canonical_bytes(&json!({"n": 9007199254740991u64})).is_ok());
        // A large integer that a double holds exactly keeps its value.
        let exact = to_canonical_bytes(&json!({"n": 8273956653281337000u64})).unwrap();
        assert_eq!(exact, b"{\"n\":8273956653281337000}\n");
    }

    #[test]
    fn canonical_bytes_are_recognised_and_others_are_not() {
        let value = json!({"b": 1, "a": 2});
        assert!(is_canonical(b"{\"a\":2,\"b\":1}\n", &value));
        assert!(!is_canonical(b"{\"b\":1,\"a\":2}\n", &value));
        assert!(
            !is_canonical(b"{\"a\":2,\"b\":1}", &value),
            "the LF is part of it"
        );
    }

    /// A xorshift generator: the random numbers of the number-writing tests, the same on
    /// every run.
    struct Xorshift(u64);

    impl Xorshift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        /// The digits of a number of 1 to 17 digits, the first not a zero.
        fn digits(&mut self) -> String {
            let length = 1 + (self.next() % 17) as usize;
            let first = char::from(b'1' + (self.next() % 9) as u8);
            let rest = (1..length).map(|_| char::from(b'0' + (self.next() % 10) as u8));
            std::iter::once(first).chain(rest).collect()
        }
    }

    #[test]
    fn a_short_fraction_is_written_as_ryu_js_writes_its_double() {
        // Numbers of 1 to 17 significant digits at every place from 10^-9 to 10^17, with
        // and without trailing zeros and a sign; the shortcut must agree with ryu-js
        // wherever it answers, and answer for every short plain one.
        let mut random = Xorshift(0x2545_F491_4F6C_DD1D);
        let mut answered = 0;
        for case in 0..200_000u64 {
            let digits = random.digits();
            let length = digits.len();
            let point = (random.next() % 27) as i64 - 9;
            let mut text = match point {
                p if p <= 0 => format!("0.{}{digits}", "0".repeat(p.unsigned_abs() as usize)),
                p if (p as usize) < length => {
                    format!("{}.{}", &digits[..p as usize], &digits[p as usize..])
                }
                p => format!("{digits}{}.5", "0".repeat(p as usize - length)),
            };
            text.push_str(&"0".repeat((case % 3) as usize));
            if case % 2 == 0 {
                text.insert(0, '-');
            }
            let expected = ryu_js::Buffer::new()
                .format_finite(text.parse::<f64>().unwrap())
                .to_owned();
            if let Some((whole, fraction)) = short_fraction(&text) {
                answered += 1;
                assert_eq!(format!("{whole}.{fraction}"), expected, "{text}");
            } else {
                // Not answered: the written digits are too many or too small, or whole.
                let written = text
                    .trim_start_matches(['-', '0', '.'])
                    .trim_end_matches('0');
                let tiny = text.trim_start_matches('-').starts_with("0.000000");
                let whole = written.ends_with('.');
                assert!(
                    written.replace('.', "").len() > 15 || tiny || whole,
                    "{text}"
                );
            }
        }
        assert!(answered > 50_000, "{answered}");
        for (text, answer) in [
            ("0.5", Some(("0", "5"))),
            ("-0.50", Some(("-0", "5"))),
            ("2.0", None),
            ("-0.0", None),
            ("0.000001", Some(("0", "000001"))),
            ("0.0000001", None),
            ("1.5e3", None),
            ("123456789012345.6", None),
            ("12345678901234.5", Some(("12345678901234", "5"))),
        ] {
            assert_eq!(short_fraction(text), answer, "{text}");
        }
    }

    #[test]
    fn an_integral_fraction_is_written_as_ryu_js_writes_its_double() {
        // Whole numbers of 1 to 17 digits, zero among them, with one to three zeros after
        // the point and with and without a sign: the shortcut must agree with ryu-js
        // wherever it answers, and answer for every one of up to 15 digits.
        let mut random = Xorshift(0x9E37_79B9_7F4A_7C15);
        let mut answered = 0;
        for case in 0..100_000u64 {
            let mut digits = random.digits();
            if digits.len() == 1 && case % 5 == 0 {
                digits = "0".into();
            }
            let sign = if case % 2 == 0 { "-" } else { "" };
            let text = format!("{sign}{digits}.{}", "0".repeat(1 + (case % 3) as usize));
            let expected = ryu_js::Buffer::new()
                .format_finite(text.parse::<f64>().unwrap())
                .to_owned();
            match integral_fraction(&text) {
                Some(written) => {
                    answered += 1;
                    assert_eq!(written, expected, "{text}");
                }
                None => assert!(digits.len() > 15, "{text}"),
            }
        }
        assert!(answered > 50_000, "{answered}");
        for (text, answer) in [
            ("1.0", Some("1")),
            ("-0.0", Some("0")),
            ("0.000", Some("0")),
            ("-12.00", Some("-12")),
            ("1.5", None),
            ("1.0e2", None),
            ("1.", None),
            ("10", None),
            ("123456789012345.0", Some("123456789012345")),
            ("1234567890123456.0", None),
        ] {
            assert_eq!(integral_fraction(text), answer, "{text}");
        }
    }
}
