//! `babel records`: the run's normalized records on stdout, as JSON Lines.

use std::io;

use super::{CliError, Exit, Globals, run_id};
use babel::archive::ArchiveError;
use babel::archive::read::{self, RecordFilter};

/// Stream a run's normalized records as JSON Lines on stdout, in import order (for jq,
/// DuckDB, pandas). The lines are the stored bytes, unchanged.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example: babel records r1 --variant rephrased | jq -c 'select(.correct == false)'"
)]
pub struct Args {
    run: String,
    /// Only records of this variant.
    #[arg(long)]
    variant: Option<String>,
    /// Only records of this benchmark.
    #[arg(long)]
    benchmark: Option<String>,
    /// Only records of this language.
    #[arg(long)]
    language: Option<String>,
}

pub fn run(globals: &Globals, args: Args) -> Result<Exit, CliError> {
    let run = run_id(&args.run)?;
    let archive = globals.archive()?;
    let manifest = archive.run_manifest(&run)?;
    let filter = RecordFilter {
        variant: args.variant,
        benchmark: args.benchmark,
        language: args.language,
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    match read::copy_records(&archive, &run, &manifest, &filter, &mut out) {
        Ok(_) => Ok(Exit::Ok),
        // `babel records r1 | head` closes the pipe early; that is not a failure.
        Err(ArchiveError::Io(error)) if error.source.kind() == io::ErrorKind::BrokenPipe => {
            Ok(Exit::Ok)
        }
        Err(error) => Err(error.into()),
    }
}
