//! `babel export-eee`: a run as Every Eval Ever 0.3.0 files (the export is
//! `babel::eee_export`; this parses arguments and prints).

use std::path::PathBuf;

use super::output::print_json;
use super::{CliError, Exit, Globals, run_id};

const AFTER_HELP: &str = "\
Writes one aggregate <uuid>.json and one instance-level <uuid>_samples.jsonl per benchmark
and variant of RUN, under DIR/data/<benchmark>/<developer>/<model>/ as Every Eval Ever's
datastore lays them out; `every_eval_ever validate 'DIR/data/**/*'` accepts them. The
developer is --developer, else the organisation of an org/name model, else `unknown`
(EEE's validator then warns that the model names no datastore folder: pass --developer);
the EEE model ID is <developer>/<model>.

EEE has no way to say \"unknown\": a record whose correctness is unknown is left out of the
rows (it would read as wrong) and counted in its result's
metric_config.additional_details.unknown_correctness. Question IDs are written as they are,
with their identity scope (stable or run-local) in each row's metadata. The same archive
state always exports the same bytes: UUIDs and times come from the run, not the clock.
Nothing is written if any file to write exists.

Examples:
  babel export-eee llama-3-mmlu eee-out
  babel export-eee r1 eee-out --developer meta-llama --json";

/// Write a run as Every Eval Ever 0.3.0 aggregate and instance-level files.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The run to export.
    run: String,
    /// The folder to write into (created if missing; its `data/` is EEE's datastore root).
    dir: PathBuf,
    /// The model's developer, for EEE's `<developer>/<model>` folders and `model_info`.
    #[arg(long)]
    developer: Option<String>,
    /// Print what was written as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(globals: &Globals, args: Args) -> Result<Exit, CliError> {
    let run = run_id(&args.run)?;
    let archive = globals.archive()?;
    // No write starts while the run is checked and read.
    let wait = globals.wait.or(Some(std::time::Duration::MAX));
    let _lock = archive.hold_still("babel export-eee", wait, &mut globals.announce_wait())?;
    let export =
        babel::eee_export::export_eee(&archive, &run, &args.dir, args.developer.as_deref())?;
    if args.json {
        print_json(&export)?;
        return Ok(Exit::Ok);
    }
    if globals.quiet {
        return Ok(Exit::Ok);
    }
    outln!(
        "exported run {run}: {} row(s) in {} file(s)",
        export.rows,
        export.files.len()
    );
    for file in &export.files {
        outln!("  {}", file.display());
    }
    if export.unknown > 0 {
        outln!(
            "{} record(s) of unknown correctness left out (EEE cannot say unknown; each result counts them)",
            export.unknown
        );
    }
    for selection in &export.without_known {
        outln!("{selection}: no record of known correctness, no files written");
    }
    Ok(Exit::Ok)
}
