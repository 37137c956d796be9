//! `babel init`.

use super::{CliError, Exit, Globals};
use babel::archive::Archive;

/// Create an archive at --root, or recreate the empty operational folders of an existing
/// one (an archive downloaded from the Hub lacks them) and finish or undo an interrupted
/// write. Registered data is never created, changed or repaired.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  babel --root ~/evals init        a new archive\n  babel --root restored/ init      after a download: recreate .babel/ and empty folders"
)]
pub struct Args {}

pub fn run(globals: &Globals, _args: Args) -> Result<Exit, CliError> {
    let report = Archive::init(&globals.root, globals.wait, &mut globals.announce_wait())?;
    if !globals.quiet {
        let root = globals.root.display();
        if let Some(operation) = &report.recovery.operation {
            let outcome = if report.recovery.committed {
                "it had committed; kept"
            } else {
                "it had not committed; undone"
            };
            outln!(
                "recovered an interrupted `{operation}` ({outcome}, {} paths removed)",
                report.recovery.removed.len()
            );
        }
        if let Some(manifests) = report.adopted {
            outln!(
                "started the archive's history: {manifests} manifest(s) recorded as they are (`babel log` shows it)"
            );
        }
        if report.created {
            outln!("created a babel archive at {root}");
        } else if report.created_dirs.is_empty() {
            outln!("{root} is a babel archive; nothing to do");
        } else {
            outln!("{root}: recreated {}", report.created_dirs.join(", "));
        }
    }
    Ok(Exit::Ok)
}
