//! The streaming reader against the tree reader it replaced (issue 20): for arbitrary
//! bytes as a line, under both non-finite policies, the same members with the same
//! canonical bytes, or the same first error at the same position.
#![no_main]

use babel::jsonl::{NonFinitePolicy, differential};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for policy in [NonFinitePolicy::Reject, NonFinitePolicy::Null] {
        if let Err(disagreement) = differential(data, policy) {
            panic!("{disagreement}");
        }
    }
});
