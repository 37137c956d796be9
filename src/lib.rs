//! babel: a tamper-evident archive of language-model evaluation results, compared item by
//! item.
//!
//! Layers, and the direction of their dependencies (see ARCHITECTURE in the docs):
//! `cli → archive → adapters → jsonl, record`. `record` and `jsonl` are pure; adapters turn
//! input lines into records without touching the filesystem; `archive` is the only code
//! that writes under the archive root; `durable` is the one commit helper for files.

pub mod adapters;
pub mod archive;
pub mod bundle;
pub mod canonical_json;
pub mod clock;
pub mod compare;
pub mod durable;
pub mod export;
pub mod hub;
pub mod inputs;
pub mod jsonl;
pub mod matrix;
pub mod panel;
pub mod parallel;
pub mod pipeline;
pub mod record;
pub mod report;
