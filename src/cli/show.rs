//! `babel show` and `babel list`.

use std::io::{self, Write};

use super::output::{column_width, print_json};
use super::{CliError, Exit, Globals, run_id};
use babel::archive::ArchiveError;
use babel::archive::manifest::{CountEntry, RunManifest, RunStatus};
use babel::outputs::{DamagedRun, RunDetail, RunList, RunSummary};

/// Show one run: status, metadata, imports, attachments, and record counts per
/// benchmark, language and variant.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  babel show r1\n  babel show r1 --json | jq '.imports[].raw'")]
pub struct ShowArgs {
    run: String,
    /// Print the run as JSON.
    #[arg(long)]
    json: bool,
}

/// List the runs of the archive with their status and record counts.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  babel list\n  babel list --json | jq -r '.runs[] | select(.status == \"open\") | .run_id'"
)]
pub struct ListArgs {
    /// Print the list as JSON.
    #[arg(long)]
    json: bool,
}

fn status(manifest: &RunManifest) -> &'static str {
    match manifest.status {
        RunStatus::Open => "open",
        RunStatus::Sealed => "sealed",
    }
}

fn print_counts(out: &mut dyn Write, counts: &[CountEntry]) -> io::Result<()> {
    if counts.is_empty() {
        return writeln!(out, "  (no records)");
    }
    let wb = column_width(counts, "benchmark", |c| c.benchmark.len());
    let wl = column_width(counts, "language", |c| {
        c.language.as_deref().unwrap_or("-").len()
    });
    let wv = column_width(counts, "variant", |c| c.variant_id.len());
    writeln!(
        out,
        "  {:wb$}  {:wl$}  {:wv$}  records",
        "benchmark", "language", "variant"
    )?;
    for c in counts {
        writeln!(
            out,
            "  {:wb$}  {:wl$}  {:wv$}  {}",
            c.benchmark,
            c.language.as_deref().unwrap_or("-"),
            c.variant_id,
            c.records
        )?;
    }
    Ok(())
}

/// One line per benchmark: records per variant and the languages present.
fn print_compact_counts(
    out: &mut dyn Write,
    counts: &[CountEntry],
    indent: usize,
) -> io::Result<()> {
    let mut benchmarks: Vec<&str> = counts.iter().map(|c| c.benchmark.as_str()).collect();
    benchmarks.dedup();
    for benchmark in benchmarks {
        let rows: Vec<&CountEntry> = counts.iter().filter(|c| c.benchmark == benchmark).collect();
        let mut variants: Vec<(&str, u64)> = Vec::new();
        for row in &rows {
            match variants.iter_mut().find(|(v, _)| *v == row.variant_id) {
                Some((_, n)) => *n += row.records,
                None => variants.push((&row.variant_id, row.records)),
            }
        }
        let mut languages: Vec<&str> = rows
            .iter()
            .map(|r| r.language.as_deref().unwrap_or("-"))
            .collect();
        languages.sort();
        languages.dedup();
        let variants: Vec<String> = variants.iter().map(|(v, n)| format!("{v} {n}")).collect();
        writeln!(
            out,
            "{:indent$}  {benchmark}: {} (languages: {})",
            "",
            variants.join(", "),
            languages.join(" ")
        )?;
    }
    Ok(())
}

pub fn show(globals: &Globals, args: ShowArgs) -> Result<Exit, CliError> {
    let run = run_id(&args.run)?;
    let archive = globals.archive()?;
    let manifest = archive.run_manifest(&run)?;
    if args.json {
        print_json(&RunDetail::from(&manifest))?;
        return Ok(Exit::Ok);
    }
    let mut out = super::output::stdout();
    writeln!(
        out,
        "run {}  ({}, created {})",
        manifest.run_id,
        status(&manifest),
        manifest.created_at
    )?;
    if let Some(sealed) = &manifest.sealed_at {
        writeln!(out, "sealed {sealed}")?;
    }
    writeln!(out, "metadata:")?;
    for (key, value) in &manifest.metadata.to_map() {
        writeln!(out, "  {key}: {value}")?;
    }
    writeln!(out, "imports: {}", manifest.imports.len())?;
    for import in &manifest.imports {
        writeln!(
            out,
            "  #{} {} {} -> {} ({} records, sha256 {})",
            import.seq,
            import.format,
            import.source_basename,
            import.raw.path,
            import.records.count,
            import.raw.sha256.get(..12).unwrap_or(&import.raw.sha256)
        )?;
    }
    if !manifest.attachments.is_empty() {
        writeln!(out, "attachments:")?;
        for attachment in &manifest.attachments {
            writeln!(out, "  {} ({} bytes)", attachment.path, attachment.bytes)?;
        }
    }
    writeln!(out, "records: {}", manifest.record_count())?;
    print_counts(&mut out, &manifest.totals())?;
    out.flush()?;
    Ok(Exit::Ok)
}

pub fn list(globals: &Globals, args: ListArgs) -> Result<Exit, CliError> {
    let archive = globals.archive()?;
    let mut manifests = Vec::new();
    let mut damaged = Vec::new();
    for run in archive.run_ids()? {
        match archive.run_manifest(&run) {
            Ok(manifest) => manifests.push(manifest),
            // One damaged run does not hide the others; it is named and the exit code says so.
            Err(error @ ArchiveError::Damaged { .. }) => damaged.push((run, error.to_string())),
            Err(error) => return Err(error.into()),
        }
    }
    let exit = if damaged.is_empty() {
        Exit::Ok
    } else {
        Exit::Failure
    };
    if args.json {
        print_json(&RunList {
            runs: manifests.iter().map(RunSummary::from).collect(),
            damaged: damaged
                .iter()
                .map(|(run, reason)| DamagedRun {
                    run_id: run.to_string(),
                    damaged: reason.clone(),
                })
                .collect(),
        })?;
        return Ok(exit);
    }
    for (run, reason) in &damaged {
        errln!(
            "error: run {run} cannot be read: {reason}\n\nhint: `babel validate {run}` lists its problems"
        );
    }
    let mut out = super::output::stdout();
    if manifests.is_empty() {
        if damaged.is_empty() {
            writeln!(
                out,
                "no runs yet (create one with `babel run create RUN --model M`)"
            )?;
        }
        return Ok(exit);
    }
    let wr = column_width(&manifests, "run", |m| m.run_id.len());
    let wm = column_width(&manifests, "model", |m| m.model().len());
    writeln!(
        out,
        "{:wr$}  status  {:wm$}  imports  records",
        "run", "model"
    )?;
    for manifest in &manifests {
        writeln!(
            out,
            "{:wr$}  {:6}  {:wm$}  {:7}  {}",
            manifest.run_id,
            status(manifest),
            manifest.model(),
            manifest.imports.len(),
            manifest.record_count()
        )?;
        print_compact_counts(&mut out, &manifest.totals(), wr)?;
    }
    out.flush()?;
    Ok(exit)
}
