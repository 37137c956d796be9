//! Fuzzes the streaming JSON document scanner that reads Inspect `.json` logs and HELM
//! files: on arbitrary bytes it must not panic or loop, it hands out items in order,
//! counting a document's items agrees with reading them, and reading through a small
//! buffer (values split across buffers) hands out the same parts and the same error at
//! the same offset as reading the bytes whole. And the header scan the import runs on the
//! bytes it copies (handed them whole or a few at a time, as the copy's chunks come)
//! accepts exactly what a reading bounded as the import bounds items accepts, refuses with
//! the reading's error otherwise, captures the same members and notes the spans of exactly
//! the items the reading hands out (the import then reads the items at those spans instead
//! of scanning again). (What an item's bytes hold is parsed afterwards by the strict JSON
//! reader, which the jsonl_line target fuzzes.)
#![no_main]

use std::convert::Infallible;
use std::io::BufRead;

use babel::inputs::document::{self, ArrayItems, Items, Part};
use babel::inputs::{MAX_ITEM_BYTES, ShapeError};

/// What a reading gave: every part it handed out (a member's key or an item's index, and
/// its bytes), how it ended (`Debug`), and its error as a user reads it, if any.
type Read = (Vec<(String, Vec<u8>)>, String, Option<String>);

/// A reading of a document, values bounded by `limit` bytes.
fn reading(reader: impl BufRead, items: Items<'_>, limit: usize) -> Read {
    let mut parts = Vec::new();
    let mut seen = 0;
    let read =
        document::read::<_, Infallible>(reader, items, &|key| key == "eval", limit, |part| {
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
    let said = read.as_ref().err().map(ToString::to_string);
    (parts, format!("{read:?}"), said)
}

/// What the header scan gave: the `eval` members it captured, and where the items are
/// (`None` past the most it notes) or its error.
type Scanned = (
    Vec<(String, Vec<u8>)>,
    Result<Option<Vec<(u64, u64)>>, String>,
);

/// The header scan the import runs on the bytes it copies, handed them `capacity` bytes
/// at a time.
fn header_scan(data: &[u8], items: Items<'static>, capacity: usize) -> Scanned {
    let mut members = Vec::new();
    let reader = std::io::BufReader::with_capacity(capacity, data);
    let scanned = ArrayItems { items }.header_from(reader, &["eval"], &mut |key, value| {
        members.push((key.to_owned(), value.to_vec()));
        Ok(())
    });
    let spans = scanned
        .map(|spans| spans.map(|spans| spans.of_items().to_vec()))
        .map_err(|error| match error {
            ShapeError::Invalid(message) => message,
            other => format!("{other:?}"),
        });
    (members, spans)
}

/// The header scan against a reading bounded as the import bounds items: it accepts what
/// the reading accepts and refuses what it refuses (naming the reading's error), captures
/// the same `eval` members, and notes one span per item holding exactly that item's bytes,
/// whether it is handed the bytes whole or a few at a time.
fn spanned(data: &[u8], items: Items<'static>, capacity: usize) {
    let (parts, _, refused) = reading(data, items, MAX_ITEM_BYTES);
    let whole = header_scan(data, items, data.len().max(1));
    assert_eq!(
        header_scan(data, items, capacity),
        whole,
        "the scan through a {capacity}-byte buffer"
    );
    let (members, spans) = whole;
    match (refused, spans) {
        (Some(refused), Err(error)) => assert!(
            error.contains(&refused),
            "the reading refused ({refused}), the scan said {error}"
        ),
        (Some(refused), Ok(_)) => panic!("the scan accepted what the reading refused: {refused}"),
        (None, Err(error)) => panic!("the scan refused what the reading accepted: {error}"),
        (None, Ok(spans)) => {
            let (handed, read_members): (Vec<_>, Vec<_>) = parts
                .into_iter()
                .partition(|(key, _)| key.starts_with("item "));
            assert_eq!(members, read_members, "the same members");
            let Some(spans) = spans else {
                assert!(handed.len() > 1 << 20, "spans noted up to a million items");
                return;
            };
            let at_spans: Vec<&[u8]> = spans
                .iter()
                .map(|&(start, end)| &data[start as usize..end as usize])
                .collect();
            let handed: Vec<&[u8]> = handed.iter().map(|(_, value)| &value[..]).collect();
            assert_eq!(
                at_spans, handed,
                "the spans hold the items the reading hands out"
            );
        }
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    for items in [Items::Member("samples"), Items::TopLevel] {
        let whole = reading(data, items, 1 << 10);
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
        let split = reading(
            std::io::BufReader::with_capacity(capacity, data),
            items,
            1 << 10,
        );
        assert_eq!(split, whole, "read through a {capacity}-byte buffer");
        spanned(data, items, capacity);
    }
});
