//! Fuzzes the streaming JSON document scanner that reads Inspect `.json` logs and HELM
//! files: on arbitrary bytes it must not panic or loop, it hands out items in order,
//! counting a document's items agrees with reading them, and reading through a small
//! buffer (values split across buffers) hands out the same parts and the same error at
//! the same offset as reading the bytes whole. (What an item's bytes hold is parsed
//! afterwards by the strict JSON reader, which the jsonl_line target fuzzes.)
#![no_main]

use std::io::BufRead;

use babel::inputs::document::{self, Items, Part};

/// Every part a reading hands out (a member's key or an item's index, and its bytes),
/// and how the reading ended.
fn reading(reader: impl BufRead, items: Items<'_>) -> (Vec<(String, Vec<u8>)>, String) {
    let mut parts = Vec::new();
    let mut seen = 0;
    let read = document::read::<_, ()>(reader, items, &|key| key == "eval", 1 << 10, |part| {
        match part {
            Part::Item { index, value } => {
                assert_eq!(index, seen, "items are handed out in order");
                seen += 1;
                parts.push((format!("item {index}"), value.to_vec()));
            }
            // Only `eval` is captured: a member's key never reads as an item's.
            Part::Member { key, value } => parts.push((key.to_owned(), value.to_vec())),
        }
        Ok(())
    });
    (parts, format!("{read:?}"))
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    for items in [Items::Member("samples"), Items::TopLevel] {
        let whole = reading(data, items);
        if whole.1 == "Ok(())" {
            let counted = document::count_items(data, items).expect("a document read once counts");
            let seen = whole
                .0
                .iter()
                .filter(|(key, _)| key.starts_with("item "))
                .count();
            assert_eq!(counted as usize, seen);
        }
        let capacity = 1 + usize::from(data.last().copied().unwrap_or(0) % 16);
        let split = reading(std::io::BufReader::with_capacity(capacity, data), items);
        assert_eq!(split, whole, "read through a {capacity}-byte buffer");
    }
});
