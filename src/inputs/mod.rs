//! Reading inputs, each shape behind one trait, [`Shape`]: JSON documents streamed item
//! by item ([`document`]: an array's elements, or an object's
//! members), ZIP archives read member by member ([`zip`]) and Parquet files read row by
//! row ([`parquet`]). The archive uses them to feed structured adapters at import and to
//! resolve record locators in validate; the adapters never see files. JSON Lines is
//! imported through `jsonl`'s parallel reader (its lines are cut into batches, not
//! visited); [`lines`] indexes it for validate.

pub mod document;
pub mod lines;
pub mod parquet;
mod shape;
pub mod zip;

pub use shape::{Content, HeaderVisit, Index, Item, MAX_ITEM_BYTES, Shape, ShapeError, Stop};
