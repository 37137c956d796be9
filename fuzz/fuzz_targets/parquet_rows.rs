//! Fuzzes the Parquet row reader (lighteval details files): any bytes are refused or read,
//! never a panic, and every row it hands out reads as a JSON object that serializes.
#![no_main]

use std::io::{Seek, Write};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut file = tempfile::tempfile().expect("a temporary file");
    file.write_all(data).expect("writing");
    file.rewind().expect("rewinding");
    let _ = babel::inputs::parquet::read_rows(file, |_, row| {
        // Measured on the way out, so it reads: the two walks are one.
        let row = row.read().expect("a measured row reads");
        serde_json::to_vec(&row.object).expect("a row is JSON");
        Ok::<(), ()>(())
    });
});
