//! Fuzzes the HELM adapter: the first line holds the run's `run_spec.json` and
//! `scenario.json` under those names, a later line with an `instance_id` is an element of
//! `per_instance_stats.json`, any other a request state; see common.rs for what is checked.
#![no_main]

// Each target uses part of the shared checks.
#[allow(dead_code)]
#[path = "common.rs"]
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    common::run_log(babel::adapters::Format::HELM, "run", data);
});
