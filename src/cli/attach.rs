//! `babel attach`.

use std::path::PathBuf;

use super::{CliError, Exit, Globals, run_id};
use babel::archive::runs;

/// Keep files beside a run's data, byte for byte: the producer's aggregate results,
/// configs, metric definitions, logs. Each is hashed in the manifest and checked by
/// validate; attachments are immutable.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example: babel attach r1 results_2026-12-02T12-52-40.515719.json configs/task.yaml"
)]
pub struct Args {
    run: String,
    /// Regular files only (not a FIFO or device); each is copied, hashed and registered.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Refuse a file larger than this (e.g. 500MiB, 20GiB).
    #[arg(long, value_name = "SIZE", default_value = "1GiB", value_parser = babel::hub::pull::parse_size)]
    max_attachment_size: u64,
}

pub fn run(globals: &Globals, args: Args) -> Result<Exit, CliError> {
    let run = run_id(&args.run)?;
    let archive = globals.archive()?;
    let session = globals.write_session(&archive)?;
    let manifest = runs::attach(&session, &run, &args.files, args.max_attachment_size)?;
    if !globals.quiet {
        let added = &manifest.attachments[manifest.attachments.len() - args.files.len()..];
        for attachment in added {
            outln!(
                "attached {} ({} bytes) to run {run}",
                attachment.path,
                attachment.bytes
            );
        }
    }
    Ok(Exit::Ok)
}
