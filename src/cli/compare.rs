//! `babel compare`: the summary of two sides on stdout and, with `--items`, the item-level
//! report in a new file. Reads only; takes no lock.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::output::print_json;
use super::{CliError, Exit, Globals, run_id};
use babel::archive::comparison::{DEFAULT_BASELINE_VARIANT, DEFAULT_VARIANT_VARIANT, SideRequest};
use babel::compare::stats::ConfidenceLevel;
use babel::pipeline::{self, CompareRequest, ReportRequest};
use babel::report::{self, ReportFormat};

const AFTER_HELP: &str = "\
Sides: without --other-run, the baseline is variant --baseline (default original) of RUN and
the variant side is variant --variant (default rephrased) of RUN. With --other-run RUN2, the
baseline is variant --baseline (default original) of RUN and the variant side is variant
--variant of RUN2 (default: the same variant as the baseline). Runs that declare different
dataset_revision metadata are refused (exit 2), and so are strict runs that pin different
item banks or protocols, or a strict run and a general one (checkpoints may differ).

Items are joined by (benchmark, language, script, question_id, filter, repeat_id); run-local
identities never pair. Accuracy, delta (95% Newcombe method 10 interval), exact McNemar test
and consistency use only matched items with known correctness on both sides; they are shown
overall and per benchmark, language and filter. Each side alone (its accuracy over all of its
records with known correctness, unmatched and run-local ones too) is printed when it differs
from the pairs; it describes a side, it does not compare them. When one question is several
items (several filters or repeat_ids), a caveat says the pooled pairs are not independent:
read the per-filter table.

--items writes the report to a new file outside the archive (never overwriting one); its
suffix .html, .csv or .jsonl selects the format unless --format is given.

Examples:
  babel compare r1                                 original vs rephrased in run r1
  babel compare r1 --items r1.html                 ... plus an offline HTML report
  babel compare r1 --baseline original --variant para-2 --json
  babel compare llama-3 --other-run llama-3.1 --items diff.csv
  babel compare r1 --items items.out --format jsonl";

/// Compare two sides item by item: two variants of one run (by default original vs
/// rephrased), or one variant selection in two runs (--other-run). Prints outcome counts,
/// accuracy with Wilson intervals, the paired delta with its interval, the exact McNemar
/// test and consistency, overall and per benchmark, language and filter; --items also writes the
/// item-level report (HTML, CSV or JSONL).
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The run: the baseline side, and the variant side too unless --other-run is given.
    run: String,
    /// The variant of the baseline side [default: original].
    #[arg(long, value_name = "V")]
    baseline: Option<String>,
    /// The variant of the variant side [default: rephrased; with --other-run, the
    /// baseline's variant].
    #[arg(long, value_name = "V")]
    variant: Option<String>,
    /// Take the variant side from this run instead of RUN.
    #[arg(long, value_name = "RUN2")]
    other_run: Option<String>,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Also write the item-level report to this new file, outside the archive.
    #[arg(long, value_name = "REPORT")]
    items: Option<PathBuf>,
    /// The report format, overriding the suffix of --items.
    #[arg(long, value_name = "FORMAT", value_parser = ["html", "csv", "jsonl"], requires = "items")]
    format: Option<String>,
}

fn report_format(items: &Path, format: Option<&str>) -> Result<ReportFormat, CliError> {
    if let Some(name) = format {
        return ReportFormat::parse(name)
            .ok_or_else(|| CliError::usage(format!("unknown report format {name}"), None));
    }
    ReportFormat::from_path(items).ok_or_else(|| {
        CliError::usage(
            format!(
                "cannot tell the report format of {}: its suffix is not .html, .csv or .jsonl",
                items.display()
            ),
            Some("name the file report.html, report.csv or report.jsonl, or pass --format"),
        )
    })
}

pub fn run(globals: &Globals, args: Args) -> Result<Exit, CliError> {
    let run = run_id(&args.run)?;
    let other = args.other_run.as_deref().map(run_id).transpose()?;
    let baseline_variant = args
        .baseline
        .unwrap_or_else(|| DEFAULT_BASELINE_VARIANT.to_owned());
    let variant_variant = args.variant.unwrap_or_else(|| match other {
        Some(_) => baseline_variant.clone(),
        None => DEFAULT_VARIANT_VARIANT.to_owned(),
    });
    let format = args
        .items
        .as_deref()
        .map(|items| report_format(items, args.format.as_deref()))
        .transpose()?;
    let archive = globals.archive()?;
    let baseline = SideRequest {
        run: run.clone(),
        variant_id: baseline_variant,
    };
    let variant = SideRequest {
        run: other.unwrap_or(run),
        variant_id: variant_variant,
    };
    let report = args
        .items
        .zip(format)
        .map(|(path, format)| ReportRequest { path, format });
    let outcome = pipeline::compare(
        &archive,
        &CompareRequest {
            baseline,
            variant,
            confidence: ConfidenceLevel::NINETY_FIVE,
            report,
        },
    )?;
    if args.json {
        print_json(&outcome)?;
    } else if !globals.quiet {
        let mut stdout = super::output::stdout();
        report::text::render(&outcome.summary, &mut stdout)?;
        if let Some(written) = &outcome.report {
            writeln!(
                stdout,
                "\nreport: {} items -> {} ({})",
                written.items,
                written.path.display(),
                written.format
            )?;
        }
    }
    Ok(Exit::Ok)
}
