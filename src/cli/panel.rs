//! `babel panel`: the paired analysis of many sides at once on stdout and, with `--items`,
//! the item file. Reads only; takes no lock.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::output::print_json;
use super::{CliError, Exit, Globals};
use babel::archive::comparison::panel::{NamedSide, PanelSelection};
use babel::compare::stats::ConfidenceLevel;
use babel::pipeline::panel::{self as pipeline, ItemsRequest, PanelRequest};
use babel::report::panel::PanelFormat;

const AFTER_HELP: &str = "\
Sides: name them (RUN for a run's only variant, RUN:VARIANT otherwise), or take every run
that holds a variant (--all --variant V), or the runs of a registered model panel
(--model-panel ID --variant V: runs whose model, and checkpoint where the panel lists
checkpoints, it lists). At least two sides; none named twice. Runs that declare different
dataset_revision values, or strict runs of different item banks or protocols, are refused
(exit 2), as in compare.

Items are joined by (benchmark, language, script, question_id, filter, repeat_id), as in
compare; run-local identities never join and are counted per side. Unknown correctness is
never wrong: every figure uses only known cells. The summary: each side's accuracy with a
95% Wilson interval; Cochran's Q over the items known on every side; every pair's 2x2 counts,
delta (b - a, Newcombe interval), exact McNemar p, Holm-adjusted over all pairs, and Cohen's
kappa; per benchmark and language, each side's accuracy and Kendall's tau-b against the
overall ranking; variant robustness for runs with several variants; and the flags
consensus_wrong (known on >= 3 sides, wrong on all) and negative_discrimination (known on >= 5
sides, point-biserial < 0). PANEL.md defines every figure.

--items writes one row per item (each side's correctness, the counts, the flags) to a new
file outside the archive: .html (an offline dashboard), .csv, .jsonl or .parquet, by its
suffix unless --format is given.

Examples:
  babel panel llama-3:original llama-3:rephrased qwen-2:original qwen-2:rephrased
  babel panel --all --variant original --items panel.html
  babel panel --model-panel study-2026 --variant original --json
  babel panel r1 r2 r3 --items items.parquet";

/// Analyse many sides at once: a leaderboard with intervals, Cochran's Q, every pairwise
/// test with Holm's adjustment and Cohen's kappa, ranking agreement per benchmark and
/// language, variant robustness and item flags; --items also writes the item file (HTML
/// dashboard, CSV, JSONL or Parquet).
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The sides: RUN (its only variant) or RUN:VARIANT.
    #[arg(value_name = "SIDE")]
    sides: Vec<String>,
    /// Every run of the archive that holds records of --variant.
    #[arg(long, requires = "variant", conflicts_with_all = ["sides", "model_panel"])]
    all: bool,
    /// The runs of this registered model panel that hold records of --variant.
    #[arg(
        long,
        value_name = "ID",
        requires = "variant",
        conflicts_with = "sides"
    )]
    model_panel: Option<String>,
    /// The variant of every side, with --all or --model-panel.
    #[arg(long, value_name = "V")]
    variant: Option<String>,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Also write one row per item to this new file, outside the archive.
    #[arg(long, value_name = "FILE")]
    items: Option<PathBuf>,
    /// The item file's format, overriding the suffix of --items.
    #[arg(long, value_name = "FORMAT", value_parser = ["html", "csv", "jsonl", "parquet"], requires = "items")]
    format: Option<String>,
}

fn items_format(items: &Path, format: Option<&str>) -> Result<PanelFormat, CliError> {
    if let Some(name) = format {
        return PanelFormat::parse(name)
            .ok_or_else(|| CliError::usage(format!("unknown item file format {name}"), None));
    }
    PanelFormat::from_path(items).ok_or_else(|| {
        CliError::usage(
            format!(
                "cannot tell the format of {}: its suffix is not .html, .csv, .jsonl or .parquet",
                items.display()
            ),
            Some("name the file panel.html, panel.csv, panel.jsonl or panel.parquet, or pass --format"),
        )
    })
}

fn selection(args: &Args) -> Result<PanelSelection, CliError> {
    match (&args.model_panel, args.all, &args.variant) {
        (Some(id), _, Some(variant)) => Ok(PanelSelection::ModelPanel {
            id: id.clone(),
            variant: variant.clone(),
        }),
        (None, true, Some(variant)) => Ok(PanelSelection::All {
            variant: variant.clone(),
        }),
        (None, false, Some(_)) => Err(CliError::usage(
            "--variant selects the variant of --all or --model-panel sides",
            Some("name sides as RUN:VARIANT, or add --all"),
        )),
        _ => Ok(PanelSelection::Named(
            args.sides
                .iter()
                .map(|side| NamedSide::parse(side))
                .collect::<Result<_, _>>()?,
        )),
    }
}

pub fn run(globals: &Globals, args: Args) -> Result<Exit, CliError> {
    let selection = selection(&args)?;
    let format = args
        .items
        .as_deref()
        .map(|items| items_format(items, args.format.as_deref()))
        .transpose()?;
    let archive = globals.archive()?;
    let items = args
        .items
        .clone()
        .zip(format)
        .map(|(path, format)| ItemsRequest { path, format });
    let outcome = pipeline::panel(
        &archive,
        &PanelRequest {
            selection,
            confidence: ConfidenceLevel::NINETY_FIVE,
            items,
        },
    )?;
    if args.json {
        print_json(&outcome)?;
    } else if !globals.quiet {
        let mut stdout = super::output::stdout();
        babel::report::panel::text::render(&outcome.summary, &mut stdout)?;
        if let Some(written) = &outcome.items {
            writeln!(
                stdout,
                "\nitems: {} items -> {} ({})",
                written.items,
                written.path.display(),
                written.format
            )?;
        }
    }
    Ok(Exit::Ok)
}
