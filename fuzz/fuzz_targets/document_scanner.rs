//! Fuzzes the streaming JSON document scanner that reads Inspect `.json` logs and HELM
//! files: on arbitrary bytes it must not panic or loop, it hands out items in order, and
//! counting a document's items agrees with reading them. (What an item's bytes hold is
//! parsed afterwards by the strict JSON reader, which the jsonl_line target fuzzes.)
#![no_main]

use babel::inputs::document::{self, Items, Part};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    for items in [Items::Member("samples"), Items::TopLevel] {
        let mut seen = 0u64;
        let read = document::read::<_, ()>(data, items, &|key| key == "eval", 1 << 20, |part| {
            if let Part::Item { index, .. } = part {
                assert_eq!(index, seen, "items are handed out in order");
                seen += 1;
            }
            Ok(())
        });
        if read.is_ok() {
            let counted = document::count_items(data, items).expect("a document read once counts");
            assert_eq!(counted, seen);
        }
    }
});
