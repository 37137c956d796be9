//! The strict reader on arbitrary bytes: it must never panic, and whatever it accepts must
//! be an object that serde_json (which keeps the last duplicate) reads the same way.
#![no_main]

use babel::jsonl::{NonFinitePolicy, Reader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for policy in [NonFinitePolicy::Reject, NonFinitePolicy::Null] {
        for line in Reader::new(data, policy).flatten() {
            if line.replaced.is_empty() {
                let text = serde_json::Value::Object(line.object.clone()).to_string();
                let again: serde_json::Value = serde_json::from_str(&text).expect("re-readable");
                assert_eq!(again, serde_json::Value::Object(line.object));
            }
        }
    }
});
