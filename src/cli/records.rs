//! `babel records`: the run's normalized records on stdout, as JSON Lines.

use std::io::{self, BufRead, BufReader, Write};

use super::{CliError, Exit, Globals, run_id};
use babel::archive::layout::run_relative;
use babel::record::StoredKey;

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
    let filtering = args.variant.is_some() || args.benchmark.is_some() || args.language.is_some();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    for entry in &manifest.imports {
        let path = archive
            .layout()
            .resolve(&run_relative(&run, &entry.records.path));
        let file = std::fs::File::open(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("opening {}: {e}", path.display())))?;
        let mut reader = BufReader::with_capacity(256 * 1024, file);
        let mut line = Vec::new();
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            if filtering {
                let key: StoredKey<'_> = serde_json::from_slice(&line).map_err(|e| {
                    io::Error::other(format!("{}: {e} (run `babel validate`)", path.display()))
                })?;
                let keep = args.variant.as_deref().is_none_or(|v| v == key.variant_id)
                    && args.benchmark.as_deref().is_none_or(|b| b == key.benchmark)
                    && args
                        .language
                        .as_deref()
                        .is_none_or(|l| key.language.as_deref() == Some(l));
                if !keep {
                    continue;
                }
            }
            out.write_all(&line)?;
        }
    }
    out.flush()?;
    Ok(Exit::Ok)
}
