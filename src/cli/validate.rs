//! `babel validate`.

use super::output::print_json;
use super::{CliError, Exit, Globals, run_ids};
use babel::archive::history::Head;
use babel::archive::validate;
use std::io::{self, Write};
use std::time::Duration;

/// Prove the archive is whole: every registered file present with its registered size and
/// SHA-256, every record valid schema v1 pointing at a real item of its raw file (a
/// nonblank line, a ZIP member, a JSON Pointer), no duplicate identities, counts that match, no untracked files in run folders, no pending journal.
/// Lists every finding with its path; exits 0 only when there is none, else 1. Takes the
/// writer lock: waits for a write under way to finish (up to --wait, if given), and
/// writers wait for (or are refused during) validation.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  babel validate                  the whole archive\n  babel validate r1 r2 --json     two runs, findings as JSON (path, line, check, message)"
)]
pub struct Args {
    /// Only these runs (default: the whole archive).
    runs: Vec<String>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Also check that the history still holds this entry (SEQ:SHA256, as `babel log`
    /// prints the head): the archive grew from it, nothing before it was rewritten.
    #[arg(long, value_name = "SEQ:SHA256")]
    since: Option<String>,
}

pub fn run(globals: &Globals, args: Args) -> Result<Exit, CliError> {
    let runs = run_ids(&args.runs)?;
    let since = args
        .since
        .as_deref()
        .map(|text| {
            Head::parse(text).ok_or_else(|| {
                CliError::usage(
                    format!("--since {text:?} is not SEQ:SHA256"),
                    Some("give the head as `babel log` prints it, e.g. 12:3f2a…(64 hex digits)"),
                )
            })
        })
        .transpose()?;
    let archive = babel::archive::Archive::open_for_validation(&globals.root)?;
    // A write under way is waited for (without --wait, as long as it takes), and none
    // starts until validation ends, so a finding is never a write half done.
    let wait = globals.wait.or(Some(Duration::MAX));
    let lock = archive.hold_still("babel validate", wait, &mut globals.announce_wait())?;
    if lock.is_none() && !globals.quiet {
        errln!("note: the archive is read-only; validating without the writer lock");
    }
    let report = match &since {
        Some(since) => validate::validate_since(&archive, &runs, since)?,
        None => validate::validate(&archive, &runs)?,
    };
    let exit = if report.ok { Exit::Ok } else { Exit::Failure };
    let printed = if args.json {
        print_json(&report)
    } else {
        print_text(&report, globals.quiet).map_err(CliError::from)
    };
    match printed {
        // `babel validate | head`: the reader has seen enough, but the verdict stands, so
        // a pipeline under `set -o pipefail` still fails on a faulty archive.
        Err(CliError::Io(error)) if error.kind() == io::ErrorKind::BrokenPipe => Ok(exit),
        other => other.map(|()| exit),
    }
}

fn print_text(report: &validate::ValidationReport, quiet: bool) -> io::Result<()> {
    let mut out = super::output::stdout();
    for finding in &report.findings {
        writeln!(out, "{finding}")?;
    }
    if !quiet {
        for note in &report.notes {
            writeln!(out, "{}: note: {}", note.path, note.message)?;
        }
    }
    if !quiet || !report.ok {
        let verdict = if report.ok {
            "ok".to_owned()
        } else {
            format!("{} finding(s)", report.findings.len())
        };
        writeln!(
            out,
            "validate: {verdict} ({} run(s), {} file(s), {} record(s) checked)",
            report.runs, report.files, report.records
        )?;
    }
    out.flush()
}
