//! `babel matrix`: a response matrix of strict runs, written outside the archive.

use std::path::PathBuf;

use super::{CliError, Exit, Globals, run_ids};
use babel::archive::artifacts::matrix::{
    self, MatrixDestination, MatrixFormat, MatrixRequest, RunSelection,
};

const EXAMPLES: &str = "\
Examples:
  babel matrix --bank capitals-bank --runs model-a,model-b --out responses.csv
  babel matrix --bank capitals-bank --release capitals-2026.1 --out responses.jsonl

One row per (run, language, script), one column per global item ID; a cell is 1 (correct),
0 (wrong) or blank (unknown or not observed). Languages share an item's column but never a
row: nothing is pooled. Beside FILE, FILE's stem plus .items.csv (or .items.jsonl) lists
each item's family, split and grouping identifiers. The CSV loads into R mirt and Python
girth/pandas, the JSON Lines into py-irt (BENCHMARK_WORKFLOW.md shows each). Both files go
outside the archive root and neither may exist yet; each is written atomically, and when
one cannot be written neither is left. Name each run once. babel estimates no IRT
parameters.";

/// Build the response matrix of strict runs against one item bank.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
#[command(group(clap::ArgGroup::new("selection").required(true).args(["runs", "release"])))]
pub struct Args {
    /// The item bank whose items are the columns.
    #[arg(long, value_name = "ID")]
    bank: String,
    /// These strict runs, in this order (comma-separated).
    #[arg(long, value_name = "R1,R2,...", value_delimiter = ',')]
    runs: Vec<String>,
    /// The strict runs of this release that pin the bank.
    #[arg(long, value_name = "ID")]
    release: Option<String>,
    /// The destination: .csv or .jsonl (the suffix selects the format).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// The format, overriding the suffix of --out.
    #[arg(long, value_parser = ["csv", "jsonl"])]
    format: Option<String>,
    /// The variant whose records fill the cells.
    #[arg(long, default_value = "original")]
    variant: String,
    /// The filter whose records fill the cells [default: the protocol's correctness filter].
    #[arg(long)]
    filter: Option<String>,
    /// The repeat whose records fill the cells.
    #[arg(long, default_value_t = 0)]
    repeat: u64,
}

pub fn run(globals: &Globals, args: Args) -> Result<Exit, CliError> {
    let archive = globals.archive()?;
    // Both destinations are checked before the matrix is built: outside the archive, in
    // an existing folder, neither there yet.
    let destination = MatrixDestination::check(
        &archive,
        &args.out,
        args.format.as_deref().and_then(MatrixFormat::parse),
    )?;
    let runs = match args.release {
        Some(release) => RunSelection::Release(release),
        None => RunSelection::Runs(run_ids(&args.runs)?),
    };
    let built = matrix::build(
        &archive,
        &MatrixRequest {
            bank: args.bank,
            runs,
            variant: args.variant,
            filter: args.filter,
            repeat: args.repeat,
        },
    )?;
    destination.write(&built.matrix)?;
    if !globals.quiet {
        let counts = built.matrix.counts();
        outln!(
            "wrote {}: {} rows x {} items from {} run(s), filter {}; {} cells observed, {} known (1 or 0)",
            args.out.display(),
            counts.rows,
            counts.items,
            built.runs.len(),
            built.filter,
            counts.observed,
            counts.known
        );
        let items = args
            .out
            .with_file_name(destination.items.file_name().unwrap_or_default());
        outln!(
            "wrote {}: family, split and groups of each item",
            items.display()
        );
        if counts.observed == 0 {
            errln!(
                "warning: no record matched variant, filter and repeat; check --variant, --filter and --repeat"
            );
        }
        if built.outside_bank > 0 {
            errln!(
                "warning: {} selected records are not instances of the bank (`babel validate` may explain)",
                built.outside_bank
            );
        }
    }
    Ok(Exit::Ok)
}
