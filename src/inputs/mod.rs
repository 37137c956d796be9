//! Reading inputs that are not JSON Lines: JSON documents streamed item by item
//! ([`document`]), ZIP archives read member by member ([`zip`]) and Parquet files read row
//! by row ([`parquet`]). The archive uses them
//! to feed structured adapters at import and to resolve record locators in validate; the
//! adapters never see files. (JSON Lines has its own reader, `jsonl`.)

pub mod document;
pub mod parquet;
pub mod zip;
