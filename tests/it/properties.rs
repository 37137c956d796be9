//! Property tests for the strict reader and the canonical JSON writer.

use babel::canonical_json::{is_canonical, to_canonical_bytes};
use babel::jsonl::{LineErrorKind, NonFinitePolicy, Reader, parse_line};
use proptest::prelude::*;
use serde_json::{Map, Value};

/// Arbitrary JSON values: unicode strings (escapes included), safe integers, finite floats.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-(1i64 << 53) + 1..(1i64 << 53)).prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
        "[\"\\\\\\n\\t\\u{0}-\\u{1f}]{0,4}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("\\PC{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("\\PC{0,8}", json_value(), 0..8)
        .prop_map(|m| m.into_iter().collect())
}

proptest! {
    #[test]
    fn any_object_written_by_serde_json_reads_back_identically(object in json_object()) {
        let text = Value::Object(object.clone()).to_string();
        let line = parse_line(&text, 1, NonFinitePolicy::Reject).unwrap();
        prop_assert_eq!(line.object, object);
    }

    #[test]
    fn pretty_printed_whitespace_does_not_change_what_is_read(object in json_object()) {
        let compact = Value::Object(object.clone()).to_string();
        let spaced = serde_json::to_string_pretty(&Value::Object(object)).unwrap().replace('\n', " ");
        let a = parse_line(&compact, 1, NonFinitePolicy::Reject).unwrap();
        let b = parse_line(&spaced, 1, NonFinitePolicy::Reject).unwrap();
        prop_assert_eq!(a.object, b.object);
    }

    #[test]
    fn a_repeated_key_is_always_refused(object in json_object(), key in "\\PC{0,8}", value in json_value()) {
        let mut text = Value::Object(object).to_string();
        text.pop(); // the closing brace
        let sep = if text.len() > 1 { "," } else { "" };
        let pair = format!("{}:{}", Value::String(key.clone()), value);
        let doubled = format!("{text}{sep}{pair},{pair}}}");
        let error = parse_line(&doubled, 1, NonFinitePolicy::Reject).unwrap_err();
        prop_assert_eq!(error.kind, LineErrorKind::DuplicateKey(key));
    }

    #[test]
    fn reading_lines_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        for item in Reader::new(&bytes[..], NonFinitePolicy::Null) {
            let _ = item;
        }
    }

    #[test]
    fn canonical_bytes_are_a_fixed_point_and_ignore_key_order(object in json_object()) {
        let value = Value::Object(object.clone());
        let bytes = to_canonical_bytes(&value).unwrap();
        let text = std::str::from_utf8(&bytes).unwrap();
        prop_assert!(text.ends_with('\n'));
        let reread: Value = serde_json::from_str(text).unwrap();
        prop_assert!(is_canonical(&bytes, &reread));
        let mut reversed: Vec<(String, Value)> = object.into_iter().collect();
        reversed.reverse();
        let reversed = Value::Object(reversed.into_iter().collect());
        prop_assert_eq!(to_canonical_bytes(&reversed).unwrap(), bytes);
    }
}

proptest! {
    #[test]
    fn canonical_bytes_agree_with_an_independent_rfc_8785_implementation(object in json_object()) {
        // serde_json_canonicalizer is a separate RFC 8785 implementation (a test-only
        // dependency): both must give the same bytes for every value without unsafe integers.
        let value = Value::Object(object);
        let mut expected = serde_json_canonicalizer::to_vec(&value).unwrap();
        expected.push(b'\n');
        prop_assert_eq!(to_canonical_bytes(&value).unwrap(), expected);
    }
}

/// JSON-ish text: a valid line, then a few bytes deleted, repeated or replaced by bytes
/// that matter to a JSON reader, so that most inputs hit an error somewhere inside.
fn mutated_line() -> impl Strategy<Value = Vec<u8>> {
    let special = prop::sample::select(vec![
        b'{', b'}', b'[', b']', b'"', b'\\', b',', b':', b' ', b'\n', b'-', b'.', b'e', b'0', b'1',
        b'9', b'u', b'N', b'I', b't', b'n', 0x01, 0x7f,
    ]);
    let numbers = prop::sample::select(vec![
        "1e400",
        "-1e400",
        "1e-400",
        "9007199254740993",
        "-9007199254740993",
        "18446744073709551616",
        "-0",
        "0.1",
        "1E+21",
        "NaN",
        "-Infinity",
        "\"\\ud800\"",
        "\"\\ud83d\\ude00\"",
        "\"\\u00e9\"",
    ]);
    (
        json_object(),
        prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, special), 0..3),
        numbers,
    )
        .prop_map(|(object, edits, number)| {
            let mut text = Value::Object(object).to_string().into_bytes();
            // A number or escape serde_json never writes itself, spliced in as a member.
            if text.len() > 2 {
                text.pop();
                let sep: &[u8] = if text.len() > 1 { b"," } else { b"" };
                text.extend_from_slice(sep);
                text.extend_from_slice(format!("\"x\":{number}}}").as_bytes());
            }
            for (at, kind, byte) in edits {
                let at = at.index(text.len() + 1);
                match kind {
                    0 if at < text.len() => {
                        text.remove(at);
                    }
                    1 => text.insert(at, byte),
                    _ if at < text.len() => text[at] = byte,
                    _ => {}
                }
            }
            text
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_streaming_reader_agrees_with_the_tree_reader(line in mutated_line(), null in any::<bool>()) {
        // Issue 20: "the streaming canonicalizer and the current tree-based path agree —
        // the same canonical bytes or the same first error with the same position".
        let policy = if null { NonFinitePolicy::Null } else { NonFinitePolicy::Reject };
        if let Err(disagreement) = babel::jsonl::differential(&line, policy) {
            prop_assert!(false, "{}", disagreement);
        }
    }
}
