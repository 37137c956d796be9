//! `babel run create`.

use super::{CliError, Exit, Globals, run_id};
use babel::archive::artifacts::contract;
use babel::archive::runs::{self, NewRun};

#[derive(Debug, clap::Subcommand)]
pub enum RunCommand {
    Create(CreateArgs),
}

/// Open a new run with its metadata. The metadata lives in the run's manifest.
///
/// Keys babel reads: model, benchmark, dataset_revision (cross-run comparisons refuse
/// different revisions), correctness_metric (the binary metric that sets `correct`, e.g.
/// acc_norm), shared_answer_key (true lets a paired rephrase use the shared answer key),
/// producer_version, checkpoint (the response matrix and model panels read it),
/// metric_definitions, benchmark_contract (a strict run). The named string keys refuse a
/// number: quote it (--meta 'checkpoint="1000"').
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  babel run create llama-mmlu --model meta-llama/Llama-3-8B --benchmark mmlu \\
      --meta dataset_revision=3f2a1c
  babel run create llama-caps --model meta-llama/Llama-3-8B \\
      --item-bank capitals-bank --protocol capitals-0shot

A strict run (--item-bank and --protocol, or --meta benchmark_contract=...) accepts only
records that are instances of its bank and name their script; its correctness_metric is
the protocol's. BENCHMARK_WORKFLOW.md walks through it.")]
pub struct CreateArgs {
    /// The run ID: 1-128 of A-Z a-z 0-9 . _ -, starting with a letter or digit.
    run: String,
    /// The evaluated model (every record must agree).
    #[arg(long)]
    model: String,
    /// The benchmark of every record that does not name its own.
    #[arg(long)]
    benchmark: Option<String>,
    /// More metadata, KEY=VALUE. VALUE is read as JSON when it is valid JSON (true, 3,
    /// {"a":1}, "quoted"), otherwise as the text itself.
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    meta: Vec<String>,
    /// Make a strict benchmark run of this registered item bank (with --protocol): its
    /// benchmark_contract pins both at their registered hashes.
    #[arg(long, value_name = "ID", requires = "protocol")]
    item_bank: Option<String>,
    /// The registered protocol of a strict benchmark run (with --item-bank).
    #[arg(long, value_name = "ID", requires = "item_bank")]
    protocol: Option<String>,
}

pub fn run(globals: &Globals, command: RunCommand) -> Result<Exit, CliError> {
    match command {
        RunCommand::Create(args) => create(globals, args),
    }
}

fn create(globals: &Globals, args: CreateArgs) -> Result<Exit, CliError> {
    let run = run_id(&args.run)?;
    let mut meta = args
        .meta
        .iter()
        .map(|m| runs::parse_meta(m))
        .collect::<Result<Vec<_>, _>>()?;
    let archive = globals.archive()?;
    if let (Some(bank), Some(protocol)) = (&args.item_bank, &args.protocol) {
        let contract = contract::contract_for(&archive, bank, protocol).map_err(CliError::from)?;
        meta.push((contract::CONTRACT_KEY.to_owned(), contract));
    }
    let session = globals.write_session(&archive)?;
    runs::create(
        &session,
        &run,
        NewRun {
            model: args.model,
            benchmark: args.benchmark,
            meta,
        },
    )?;
    if !globals.quiet {
        outln!("created run {run}");
    }
    Ok(Exit::Ok)
}
