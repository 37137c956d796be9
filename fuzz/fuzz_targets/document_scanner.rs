//! Fuzzes the streaming JSON document scanner that reads Inspect `.json` logs and HELM
//! files: on arbitrary bytes it must not panic or loop, it hands out items in order,
//! counting a document's items agrees with reading them, and reading through a small
//! buffer (values split across buffers) hands out the same parts and the same error at
//! the same offset as reading the bytes whole; and the header scan the import runs as it
//! copies a log accepts what a reading accepts, captures the same members and notes the
//! spans of exactly the items the reading hands out (the import then reads the items at
//! those spans instead of scanning again). (What an item's bytes hold is parsed afterwards
//! by the strict JSON reader, which the jsonl_line target fuzzes.)
#![no_main]

use std::io::BufRead;

use babel::inputs::document::{self, ArrayItems, Items, Part};

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

/// The header scan of the copy against a reading: where the reading accepts the bytes,
/// the scan does too, with the same `eval` members and one span per item holding exactly
/// that item's bytes. The scan does not bound an item's length (reading at the spans
/// does), so it may accept what the reading refuses only for an item too long.
fn spanned(data: &[u8], items: Items<'static>, whole: &(Vec<(String, Vec<u8>)>, String)) {
    let mut members = Vec::new();
    let scanned = ArrayItems { items }.header_from(data, &["eval"], &mut |key, value| {
        members.push((key.to_owned(), value.to_vec()));
        Ok(())
    });
    match (&scanned, whole.1.as_str()) {
        (Ok(spans), "Ok(())") => {
            let (read_items, read_members): (Vec<_>, Vec<_>) = whole
                .0
                .iter()
                .partition(|(key, _)| key.starts_with("item "));
            assert_eq!(members.iter().collect::<Vec<_>>(), read_members);
            let spans = spans.as_ref().expect("far fewer items than the most noted");
            let at_spans: Vec<&[u8]> = spans
                .of_items()
                .iter()
                .map(|&(start, end)| &data[start as usize..end as usize])
                .collect();
            let handed: Vec<&[u8]> = read_items.iter().map(|(_, value)| &value[..]).collect();
            assert_eq!(
                at_spans, handed,
                "the spans hold the items the reading hands out"
            );
        }
        (Ok(_), refused) => assert!(
            refused.starts_with("Err(TooLong"),
            "the scan accepted what the reading refused: {refused}"
        ),
        (Err(error), "Ok(())") => panic!("the scan refused what the reading accepted: {error:?}"),
        (Err(_), _) => {}
    }
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
        spanned(data, items, &whole);
        let capacity = 1 + usize::from(data.last().copied().unwrap_or(0) % 16);
        let split = reading(std::io::BufReader::with_capacity(capacity, data), items);
        assert_eq!(split, whole, "read through a {capacity}-byte buffer");
    }
});
