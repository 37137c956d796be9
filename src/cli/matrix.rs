//! `babel matrix`: a response matrix of strict runs, written outside the archive.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{CliError, Exit, Globals, run_id};
use babel::archive::ArchiveError;
use babel::archive::artifacts::matrix::{self, MatrixRequest, RunSelection};
use babel::durable::{self, io_at};
use babel::matrix::ResponseMatrix;

const EXAMPLES: &str = "\
Examples:
  babel matrix --bank capitals-bank --runs model-a,model-b --out responses.csv
  babel matrix --bank capitals-bank --release capitals-2026.1 --out responses.jsonl

One row per (run, language, script), one column per global item ID; a cell is 1 (correct),
0 (wrong) or blank (unknown or not observed). Languages share an item's column but never a
row: nothing is pooled. Beside FILE, FILE's stem plus .items.csv (or .items.jsonl) lists
each item's family, split and grouping identifiers. The CSV loads into R mirt and Python
girth/pandas, the JSON Lines into py-irt (BENCHMARK_WORKFLOW.md shows each). Neither file
may exist yet; both are written atomically. babel estimates no IRT parameters.";

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

/// The item sidecar beside `out`: `responses.csv` → `responses.items.csv`.
fn sidecar_path(out: &Path, extension: &str) -> PathBuf {
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "matrix".into());
    out.with_file_name(format!("{stem}.items.{extension}"))
}

/// One of the matrix renderers.
type Render = fn(&ResponseMatrix, &mut dyn Write) -> std::io::Result<()>;

fn write(dest: &Path, matrix: &ResponseMatrix, render: Render) -> Result<(), CliError> {
    durable::write_new_atomically(dest, |out| {
        render(matrix, out).map_err(|e| ArchiveError::from(io_at("writing", dest)(e)))
    })?;
    Ok(())
}

pub fn run(globals: &Globals, args: Args) -> Result<Exit, CliError> {
    let format = match args.format.as_deref() {
        Some(format) => format.to_owned(),
        None => match args.out.extension().and_then(|e| e.to_str()) {
            Some("csv") => "csv".to_owned(),
            Some("jsonl") => "jsonl".to_owned(),
            _ => {
                return Err(CliError::usage(
                    format!(
                        "cannot tell the format of {} from its suffix",
                        args.out.display()
                    ),
                    Some("name the file .csv or .jsonl, or pass --format csv|jsonl"),
                ));
            }
        },
    };
    let sidecar = sidecar_path(&args.out, &format);
    for dest in [&args.out, &sidecar] {
        if dest.symlink_metadata().is_ok() {
            return Err(CliError::usage(
                format!("{} already exists", dest.display()),
                Some(
                    "babel never overwrites a matrix; choose another --out or remove the old files",
                ),
            ));
        }
    }
    let runs = match args.release {
        Some(release) => RunSelection::Release(release),
        None => RunSelection::Runs(
            args.runs
                .iter()
                .map(|r| run_id(r))
                .collect::<Result<_, _>>()?,
        ),
    };
    let archive = globals.archive()?;
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
    let (body, items): (Render, Render) = if format == "csv" {
        (ResponseMatrix::write_csv, ResponseMatrix::write_items_csv)
    } else {
        (
            ResponseMatrix::write_jsonl,
            ResponseMatrix::write_items_jsonl,
        )
    };
    write(&sidecar, &built.matrix, items)?;
    write(&args.out, &built.matrix, body)?;
    if !globals.quiet {
        let counts = built.matrix.counts();
        println!(
            "wrote {}: {} rows x {} items from {} run(s), filter {}; {} cells observed, {} known (1 or 0)",
            args.out.display(),
            counts.rows,
            counts.items,
            built.runs.len(),
            built.filter,
            counts.observed,
            counts.known
        );
        println!(
            "wrote {}: family, split and groups of each item",
            sidecar.display()
        );
        if counts.observed == 0 {
            eprintln!(
                "warning: no record matched variant, filter and repeat; check --variant, --filter and --repeat"
            );
        }
        if built.outside_bank > 0 {
            eprintln!(
                "warning: {} selected records are not instances of the bank (`babel validate` may explain)",
                built.outside_bank
            );
        }
    }
    Ok(Exit::Ok)
}
