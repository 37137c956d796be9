//! Fuzzes the Inspect adapter: the first line is the log's header (a `.json` log's
//! top-level members, or a `.eval` log's `header.json` / `_journal/start.json` under those
//! names), each later line a sample; see common.rs for what is checked.
#![no_main]

// Each target uses part of the shared checks.
#[allow(dead_code)]
#[path = "common.rs"]
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    common::run_log(babel::adapters::Format::INSPECT, "fuzz.json", data);
});
