//! The canonical writer on arbitrary JSON: the output is a fixed point (canonicalizing what
//! it wrote gives the same bytes) and keeps the value.
#![no_main]

use babel::canonical_json::{is_canonical, to_canonical_bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let Ok(bytes) = to_canonical_bytes(&value) else { return };
    let reread: serde_json::Value = serde_json::from_slice(&bytes).expect("canonical output is JSON");
    assert!(is_canonical(&bytes, &reread));
});
