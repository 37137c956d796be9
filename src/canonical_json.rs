//! RFC 8785 canonical JSON followed by LF: the one writer of `manifest.json`,
//! `artifact.json` and the archive marker, so equal content has equal bytes (and SHA-256)
//! in every implementation.
//!
//! RFC 8785 formats numbers as ECMAScript doubles; an integer whose canonical form would
//! read back as another number (such as 2^53 + 1) is refused here rather than rounded.

use serde::Serialize;
use serde_json::Value;

use crate::jsonl::FieldPath;
use crate::record::fields::MAX_SAFE_INTEGER;

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
    check_integers(&value, &mut FieldPath::root())?;
    let mut bytes = serde_json_canonicalizer::to_vec(&value)?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn check_integers(value: &Value, path: &mut FieldPath) -> Result<(), CanonicalError> {
    match value {
        Value::Number(n) => {
            // Integers up to 2^53 are always exact. A larger one is kept only when its
            // canonical (ECMAScript) form reads back as the same decimal text.
            let large = match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => u > MAX_SAFE_INTEGER,
                (None, Some(i)) => i.unsigned_abs() > MAX_SAFE_INTEGER,
                (None, None) => false,
            };
            let unsafe_integer = large
                && serde_json_canonicalizer::to_string(value).ok().as_deref()
                    != Some(n.to_string().as_str());
            if unsafe_integer {
                return Err(CanonicalError::UnsafeInteger {
                    path: path.clone(),
                    value: n.to_string(),
                });
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let mut inner = path.index(i);
                check_integers(item, &mut inner)?;
            }
            Ok(())
        }
        Value::Object(map) => {
            for (key, item) in map {
                let mut inner = path.key(key);
                check_integers(item, &mut inner)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// True when `bytes` are exactly the canonical form of the JSON value they hold.
pub fn is_canonical(bytes: &[u8], value: &Value) -> bool {
    to_canonical_bytes(value).is_ok_and(|canonical| canonical == bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn integers_no_double_holds_are_refused() {
        let error = to_canonical_bytes(&json!({"meta": {"n": 9007199254740993u64}})).unwrap_err();
        assert_eq!(
            error.to_string(),
            "field meta.n: the integer 9007199254740993 has no exact canonical form (RFC 8785 numbers are doubles)"
        );
        assert!(to_canonical_bytes(&json!({"n": 9007199254740991u64})).is_ok());
        assert!(to_canonical_bytes(&json!({"n": -9007199254740993i64})).is_err());
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
}
