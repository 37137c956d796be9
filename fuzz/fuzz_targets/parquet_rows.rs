//! Fuzzes the Parquet row reader (lighteval details files): any bytes are refused or read,
//! never a panic, and every row it hands out reads into members whose text is JSON.
#![no_main]

use std::io::{Seek, Write};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut file = tempfile::tempfile().expect("a temporary file");
    file.write_all(data).expect("writing");
    file.rewind().expect("rewinding");
    let mut members = babel::jsonl::Members::new();
    let _ = babel::inputs::parquet::read_rows(file, |_, row| {
        // Measured on the way out, so it reads: the two walks are one.
        row.read(&mut members).expect("a measured row reads");
        for member in members.iter() {
            serde_json::from_str::<serde_json::Value>(member.value).expect("a member is JSON");
        }
        Ok::<(), ()>(())
    });
});
