//! The import context of the adapters' unit tests.

use crate::adapters::{AdapterOptions, ImportContext, RunContext, SourceFile};

/// A run of `model` with no benchmark, correctness metric or strict rule.
pub fn run(run_id: &str, model: &str) -> RunContext {
    RunContext {
        run_id: run_id.into(),
        model: model.into(),
        benchmark: None,
        correctness_metric: None,
        shared_answer_key: false,
        strict: false,
    }
}

/// The context of an import of `basename`, archived at `raw_path`.
pub fn context<'a>(
    run: &'a RunContext,
    options: &'a AdapterOptions,
    raw_path: &'a str,
    basename: &'a str,
) -> ImportContext<'a> {
    ImportContext {
        run,
        options,
        source: SourceFile {
            raw_path,
            basename,
            folder: "",
        },
    }
}
