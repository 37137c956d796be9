//! `babel log`: the archive's history, newest last.

use std::io::{self, Write};

use super::output::print_json;
use super::{CliError, Exit, Globals, run_id};
use babel::archive::ArchiveError;
use babel::archive::history::{self, Head};
use babel::archive::layout::run_relative;
use babel::outputs::LogOutput;

const AFTER_HELP: &str = "\
Every write (init, run create, import, seal, attach, artifact add) appends one entry to
history/log.jsonl: its number, time, babel version, operation, subject and the SHA-256 of
the manifest it produced, chained to the entry before by SHA-256. history/HEAD names the
last entry as SEQ:SHA256: cite it, and check later with `babel validate --since SEQ:SHA256`
that the archive grew from it with nothing before it rewritten.

Examples:
  babel log                 every entry
  babel log llama-3-mmlu    the entries of one run
  babel log --json          machine-readable, with each entry's SHA-256";

/// Show the archive's history: one line per committed write, and the head to cite.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Only the entries about this run.
    run: Option<String>,
    /// Print the entries as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(globals: &Globals, args: Args) -> Result<Exit, CliError> {
    let run = args.run.as_deref().map(run_id).transpose()?;
    let archive = globals.archive()?;
    let read = history::read(archive.layout()).map_err(ArchiveError::from)?;
    let subject = run.as_ref().map(|run| run_relative(run, ""));
    let subject = subject.as_deref().map(|s| s.trim_end_matches('/'));
    let entries: Vec<(&history::Entry, &String)> = read
        .entries
        .iter()
        .zip(&read.hashes)
        // An entry about the run: written to its folder, or recording its manifest (an
        // import-bundle that brought it).
        .filter(|(entry, _)| {
            subject.is_none_or(|s| {
                entry.subject == s || entry.manifests.contains_key(&format!("{s}/manifest.json"))
            })
        })
        .collect();
    // A run the archive never held is unknown here as everywhere; one it held once (a
    // pull that left it out) still has its entries.
    if let Some(run) = &run
        && entries.is_empty()
        && !archive.run_ids()?.contains(run)
    {
        return Err(ArchiveError::UnknownRun {
            run: run.to_string(),
        }
        .into());
    }
    let exit = if read.problems.is_empty() {
        Exit::Ok
    } else {
        Exit::Failure
    };
    if args.json {
        print_json(&LogOutput::new(&read, &entries))?;
        return Ok(exit);
    }
    match print_entries(&entries, read.head()) {
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    for (path, line, message) in &read.problems {
        let place = line.map_or_else(|| path.to_string(), |line| format!("{path}:{line}"));
        errln!("history: {place}: {message}");
    }
    Ok(exit)
}

/// One line per entry (its number, time, operation, subject, manifests and hash), then the
/// head to cite.
fn print_entries(entries: &[(&history::Entry, &String)], head: Option<Head>) -> io::Result<()> {
    let mut out = super::output::stdout();
    for (entry, sha256) in entries {
        let manifests: Vec<String> = entry
            .manifests
            .iter()
            .map(|(path, sha)| match sha {
                Some(sha) => format!("{path} {}", &sha[..12]),
                None => format!("{path} removed"),
            })
            .collect();
        let from = entry.bundle.as_ref().map_or(String::new(), |b| {
            format!("  from bundle {} (root {})", &b.sha256[..12], &b.root[..12])
        });
        writeln!(
            out,
            "{:>5}  {}  {:<12}  {:<24}  {}{from}  (entry {})",
            entry.seq,
            entry.at,
            entry.operation,
            entry.subject,
            manifests.join(", "),
            &sha256[..12]
        )?;
    }
    if let Some(head) = head {
        writeln!(out, "head {head}")?;
    }
    out.flush()
}
