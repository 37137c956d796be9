//! babel: a tamper-evident archive of language-model evaluation results, compared item by
//! item.
//!
//! The layers, lowest first; a module uses only modules of its own or a lower layer (the
//! exact table is `tests/it/dependency_rule.rs`, which fails on a module it does not list):
//!
//! - pure values, no files: `canonical_json`, `jsonl`, `record` (the schema-v1 record and
//!   its stored form), `clock`, `parallel`;
//! - reading inputs: `inputs` (JSON documents, ZIP logs, Parquet rows, each an
//!   `inputs::Shape`, and the JSON Lines index of validate: the readers of the files that
//!   hold items, besides `jsonl`'s line reader);
//! - meaning, no files: `adapters` (one file per input format, in a registry), `compare`,
//!   `panel`, `matrix` (the statistics);
//! - files: `durable` (the one commit helper), `archive` (the only code that writes under
//!   an archive root: transactions, manifests, history, records store, validate),
//!   `report` (writes through `durable` only);
//! - workflows over an archive: `pipeline` (compare and panel end to end),
//!   `eee_export` (a run as Every Eval Ever files), `bundle` (release bundles:
//!   `babel export`), `hub` (the Hugging Face Hub);
//! - what the commands print: `outputs` (the `--json` outputs that are not a type of the
//!   layers below).
//!
//! The binary (`src/cli/`) parses arguments, decides where files go, and prints.

pub mod adapters;
pub mod archive;
pub mod bundle;
pub mod canonical_json;
pub mod clock;
pub mod compare;
pub mod durable;
pub mod eee_export;
pub mod hub;
pub mod inputs;
pub mod jsonl;
pub mod matrix;
pub mod outputs;
pub mod panel;
pub mod parallel;
pub mod pipeline;
pub mod record;
pub mod report;
