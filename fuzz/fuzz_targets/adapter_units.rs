//! Fuzzes the lighteval and OpenCompass adapters (the first byte picks one): the first
//! line is the results file, each later line an item; see common.rs for what is checked.
#![no_main]

// Each target uses part of the shared checks.
#[allow(dead_code)]
#[path = "common.rs"]
mod common;

use babel::adapters::Format;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((first, rest)) = data.split_first() else {
        return;
    };
    if first & 1 == 0 {
        common::run_items(
            Format::LIGHTEVAL,
            "details_fuzz|0_2026-12-04T10-00-00.000000.parquet",
            rest,
        );
    } else {
        common::run_items(Format::OPENCOMPASS, "fuzz.json", rest);
    }
});
