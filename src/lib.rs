//! babel: a tamper-evident archive of language-model evaluation results.

pub mod compare;
