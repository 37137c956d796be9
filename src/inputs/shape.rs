//! What every structured input shape offers import and validate: [`Shape`]. Import reads
//! a file's header members and then its items through it; validate asks it which
//! locators the file's items have. A new way of laying items out in a file is one
//! implementation of [`Shape`] in its own file of `inputs/`, and one arm of
//! `adapters::Layout::shape`.

use std::collections::HashSet;
use std::fs::File;
use std::io;

use super::document::Items;
use super::parquet::RowAt;
use super::zip::Packed;
use crate::record::Locator;

/// The largest item (a ZIP member, a document element) or header member a shape hands
/// out: the bound of a JSON Lines line.
pub const MAX_ITEM_BYTES: usize = crate::jsonl::MAX_LINE_BYTES;

/// One item of a structured input, located.
pub struct Item<'a> {
    pub locator: Locator,
    pub content: Content<'a>,
}

/// What an item holds, as its shape reads it.
pub enum Content<'a> {
    /// The item's JSON text (a ZIP member, an element of a document's array).
    Json(&'a [u8]),
    /// The item's JSON text, read into a buffer of its own, which is handed over (a ZIP
    /// member the zip crate inflated, an element of a document's array read where it is:
    /// [`super::document::SpannedItems`]).
    ReadJson(Vec<u8>),
    /// The JSON text of a top-level member of an object whose members are the items: the
    /// key names it when its value is not an object.
    Member { key: &'a str, value: &'a [u8] },
    /// A Parquet row, measured, for the thread that normalizes it to read
    /// ([`RowAt::read`]).
    Row(RowAt),
    /// A ZIP member's Zstandard bytes, checked against the archive's records, for the
    /// thread that parses it to inflate ([`Packed::inflate`]: a damaged member is a
    /// problem of the file).
    Packed(Packed),
}

/// A visitor's signal that it stopped; why, it keeps itself.
#[derive(Debug)]
pub struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stopped by its reader")
    }
}

/// Why a shape stopped reading a file.
#[derive(Debug)]
pub enum ShapeError {
    /// The file could not be read.
    Io(io::Error),
    /// The file is not what the shape reads; the message says why, for the user.
    Invalid(String),
    /// The visitor returned [`Stop`].
    Stopped,
}

/// The locators the items of a file have: what a record's `source` may point at.
pub enum Index {
    /// Which lines of a JSON Lines file hold something.
    Lines(Vec<bool>),
    /// The item members of a ZIP archive.
    Members(HashSet<String>),
    /// The pointers of an object's members that are its items.
    Pointers(HashSet<String>),
    /// How many items, and where they are (`/<i>` or `/<key>/<i>`).
    Items { items: Items<'static>, count: u64 },
}

impl Index {
    /// Whether `locator` names an item of the file; `None` when the file's items are
    /// never located that way (a line number into a ZIP archive).
    pub fn resolves(&self, locator: &Locator) -> Option<bool> {
        match (self, locator) {
            (Index::Lines(nonblank), Locator::Line(line)) => {
                let at = usize::try_from(*line)
                    .ok()
                    .and_then(|line| line.checked_sub(1));
                Some(at.and_then(|at| nonblank.get(at).copied()).unwrap_or(false))
            }
            (Index::Members(names), Locator::Member(name)) => Some(names.contains(name)),
            (Index::Pointers(pointers), Locator::Pointer(pointer)) => {
                Some(pointers.contains(pointer))
            }
            (Index::Items { items, count }, Locator::Pointer(pointer)) => {
                let prefix = items.pointer(0);
                let prefix = &prefix[..prefix.len() - 1];
                Some(
                    pointer
                        .strip_prefix(prefix)
                        .and_then(|index| index.parse::<u64>().ok())
                        .is_some_and(|index| index < *count && items.pointer(index) == *pointer),
                )
            }
            _ => None,
        }
    }
}

/// What reading a file through a shape came to.
pub type Reading = Result<(), ShapeError>;

/// A hand-out of one header member: its name and JSON text.
pub type HeaderVisit<'v> = dyn FnMut(&str, &[u8]) -> Result<(), Stop> + 'v;

/// A hand-out of one item.
pub type ItemVisit<'v> = dyn FnMut(Item<'_>) -> Result<(), Stop> + 'v;

/// One way of laying out the items of a structured file. Every read is bounded: no item
/// or header member larger than [`MAX_ITEM_BYTES`] is held (a Parquet row counts its
/// JSON; the copy of values its group shares holds at most twice the group's JSON and a
/// mebibyte), and a Parquet file is decoded a row group of at most
/// `parquet::MAX_ROW_GROUP_BYTES` at a time.
pub trait Shape {
    /// Hands the header members kept inside the file that `wanted` names to `visit`
    /// (a shape whose header lives in other files has none).
    fn header(&self, _file: File, _wanted: &[&str], _visit: &mut HeaderVisit) -> Reading {
        Ok(())
    }

    /// Hands every item to `visit`, in file order.
    fn items(&self, file: File, visit: &mut ItemVisit) -> Reading;

    /// The locators of the file's items, or why the file cannot be read as this shape.
    fn index(&self, file: File) -> Result<Index, String>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_index_resolves_only_its_own_kind_of_locator() {
        let member = |name: &str| Locator::Member(name.to_owned());
        let pointer = |at: &str| Locator::Pointer(at.to_owned());
        let members = Index::Members(HashSet::from(["samples/q1_epoch_1.json".to_owned()]));
        assert_eq!(
            members.resolves(&member("samples/q1_epoch_1.json")),
            Some(true)
        );
        assert_eq!(members.resolves(&member("header.json")), Some(false));
        assert_eq!(members.resolves(&pointer("/0")), None);
        let keys = Index::Pointers(HashSet::from(["/7".to_owned(), "/a~1b".to_owned()]));
        assert_eq!(keys.resolves(&pointer("/a~1b")), Some(true));
        assert_eq!(keys.resolves(&pointer("/8")), Some(false));
        assert_eq!(keys.resolves(&Locator::Line(7)), None);
        let items = Index::Items {
            items: Items::Member("samples"),
            count: 3,
        };
        assert_eq!(items.resolves(&pointer("/samples/2")), Some(true));
        for outside in [
            "/samples/3",
            "/samples/02",
            "/samples/-1",
            "/other/0",
            "/samples/",
        ] {
            assert_eq!(items.resolves(&pointer(outside)), Some(false), "{outside}");
        }
        let rows = Index::Items {
            items: Items::TopLevel,
            count: 2,
        };
        assert_eq!(rows.resolves(&pointer("/1")), Some(true));
        assert_eq!(rows.resolves(&pointer("/2")), Some(false));
        assert_eq!(rows.resolves(&member("1")), None);
    }
}
