//! Fuzzes the records-file reader with arbitrary bytes: opening and reading every row of
//! a file that is not one babel wrote must fail cleanly, never panic (validate reads
//! records files that may have been changed by anyone).
#![no_main]

use babel::archive::records::{Columns, RecordsFile};
use std::io::{Seek, Write};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut file = tempfile::tempfile().expect("a temporary file");
    file.write_all(data).expect("writing");
    file.rewind().expect("rewinding");
    let Ok(read) = RecordsFile::open(file) else {
        return;
    };
    let Ok(batches) = read.batches(Columns::ALL) else {
        return;
    };
    for batch in batches {
        let Ok(batch) = batch else {
            return;
        };
        for row in 0..batch.len() {
            let _ = batch.record(row);
        }
    }
});
