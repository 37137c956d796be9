//! The canonical writer on arbitrary JSON: the output is a fixed point (canonicalizing what
//! it wrote gives the same bytes) and keeps the value. And the quick canonical test never
//! accepts what the full check refuses: on the input as it came, and on the writer's
//! output (which the full check must accept).
#![no_main]

use babel::canonical_json::{is_canonical, surely_canonical, to_canonical_bytes};
use babel::jsonl::{CanonicalScratch, check_canonical_in_full};
use libfuzzer_sys::fuzz_target;

fn quick_implies_full(text: &str) {
    if surely_canonical(text) {
        let full = check_canonical_in_full(text, &mut CanonicalScratch::default());
        assert_eq!(full, Ok(()), "the quick test accepted {text:?}");
    }
}

/// How many containers are nested in `value`, itself included.
fn depth(value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        serde_json::Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        quick_implies_full(text);
    }
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let Ok(bytes) = to_canonical_bytes(&value) else {
        return;
    };
    let reread: serde_json::Value =
        serde_json::from_slice(&bytes).expect("canonical output is JSON");
    assert!(is_canonical(&bytes, &reread));
    let text = std::str::from_utf8(&bytes[..bytes.len() - 1]).expect("canonical output is UTF-8");
    // The full check reads at most 126 nested containers; serde_json reads 127.
    if depth(&reread) <= 126 {
        assert_eq!(
            check_canonical_in_full(text, &mut CanonicalScratch::default()),
            Ok(())
        );
    }
    quick_implies_full(text);
});
