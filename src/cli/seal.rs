//! `babel seal`.

use super::{CliError, Exit, Globals, run_id};
use babel::archive::runs;

/// Seal a run: its status becomes sealed and every later write to it is refused.
/// Registered artifacts can pin only sealed runs (a write would change the pinned hash).
#[derive(Debug, clap::Args)]
#[command(after_help = "Example: babel seal llama-3-mmlu")]
pub struct Args {
    run: String,
}

pub fn run(globals: &Globals, args: Args) -> Result<Exit, CliError> {
    let run = run_id(&args.run)?;
    let archive = globals.archive()?;
    let session = globals.write_session(&archive)?;
    runs::seal(&session, &run)?;
    if !globals.quiet {
        outln!("sealed run {run}");
    }
    Ok(Exit::Ok)
}
