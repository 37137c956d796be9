//! Fuzzes the harness adapter: see common.rs for what is checked.
#![no_main]

// Each target uses part of the shared checks.
#[allow(dead_code)]
#[path = "common.rs"]
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    common::run(
        babel::adapters::Format::HARNESS,
        "samples_fuzz-task_2026-12-02T12-00-00.jsonl",
        data,
    );
});
