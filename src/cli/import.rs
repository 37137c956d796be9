//! `babel import`, with a progress bar on stderr for long inputs.

use indicatif::ProgressBar;
use std::path::PathBuf;

use super::output::print_json;
use super::{CliError, Exit, Globals, run_id};
use babel::adapters::{AdapterOptions, Format};
use babel::archive::import::{self, ImportOptions, Progress};
use babel::jsonl::{FieldPath, NonFinitePolicy};
use babel::outputs::ImportOutput;

/// Import files (JSON Lines, Inspect logs, HELM run folders, ...) into a run. The batch is
/// one transaction: every input is published, or (if any item is rejected) none is, and
/// every problem is listed.
///
/// Raw bytes are kept exactly in the run's raw/ folder; normalized schema-v1 records go to
/// records/; both are hashed in the run manifest. FORMAT.md describes each format.
#[derive(Debug, clap::Args)]
#[command(after_help = IMPORT_EXAMPLES)]
pub struct Args {
    /// The destination run (it must be open).
    run: String,
    /// The input files (for --format helm, run folders).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The input format (FORMAT.md maps each one's fields).
    #[arg(long, value_parser = format_names())]
    format: String,
    /// The variant of every record of this import (e.g. original, rephrased). For paired
    /// input: the variant ID of the rephrased records (the others stay `original`).
    #[arg(long)]
    variant: Option<String>,
    /// A dotted path to the stable question ID (e.g. doc.id), instead of the automatic
    /// lookup. Selecting doc_id makes identities run-local (never paired).
    #[arg(long, value_name = "DOTTED.PATH")]
    id_field: Option<String>,
    /// The benchmark of records that do not name one (harness: instead of the task name
    /// in the file name).
    #[arg(long)]
    benchmark: Option<String>,
    /// The language of records that do not name one.
    #[arg(long)]
    language: Option<String>,
    /// What to do with bare NaN/Infinity tokens: reject the line (default), or read them
    /// as null, with a warning on each affected record.
    #[arg(long, value_name = "POLICY", default_value = "reject", value_parser = ["reject", "null"])]
    non_finite: String,
    /// Import a log whose own model (Inspect eval.model, HELM adapter_spec.model, Every
    /// Eval Ever model_id) is not the run's model, with a warning on every record, instead
    /// of refusing it.
    #[arg(long)]
    allow_other_model: bool,
    /// Keep FILE as an attachment of the run, in the same transaction (e.g. the harness's
    /// results_*.json); it is stored byte for byte and never read by the import.
    #[arg(long, value_name = "FILE")]
    attach: Vec<PathBuf>,
    /// Refuse an --attach file larger than this (e.g. 500MiB, 20GiB).
    #[arg(long, value_name = "SIZE", default_value = "1GiB", value_parser = babel::hub::pull::parse_size)]
    max_attachment_size: u64,
    /// OpenCompass: the dataset file (JSON Lines) whose line i is item i of dataset NAME
    /// (its abbreviation, the predictions file's name without .json), so items get that
    /// line's id (--id-field picks the column; default id) and pair across runs. The file
    /// is archived with the import. Repeatable.
    #[arg(long, value_name = "NAME=FILE", value_parser = parse_ids)]
    ids: Vec<(String, PathBuf)>,
    /// Print the outcome as JSON.
    #[arg(long)]
    json: bool,
}

fn parse_ids(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((name, file)) if !name.is_empty() && !file.is_empty() => {
            Ok((name.to_owned(), PathBuf::from(file)))
        }
        _ => Err(format!(
            "expected NAME=FILE (e.g. babel_mc_gen=data/babel_mc.jsonl), found {text:?}"
        )),
    }
}

const IMPORT_EXAMPLES: &str = "\
Examples:
  babel import r1 --format canonical results.jsonl
  babel import r1 --format paired --variant rephrased-gpt4 pairs.jsonl
  babel import r1 --format harness out/model/samples_mmlu_2026-12-02T12-39-41.211128.jsonl \\
      --attach out/model/results_2026-12-02T12-39-41.211128.json
  babel import r1 --format harness --benchmark mc --variant rephrased samples_mc_rephrased_*.jsonl
  babel import r1 --format harness --non-finite null samples_with_nan_*.jsonl
  babel import r1 --format inspect --benchmark mc logs/2026-12-03T14-54-39-00-00_mc_*.eval
  babel import r1 --format helm 'benchmark_output/runs/suite/mmlu:subject=anatomy,model=m'
  babel import r1 --format lighteval --id-field doc.specific.id out/custom-seed1
  babel import r1 --format opencompass outputs/20261203_234822 \
      --ids babel_mc_gen=data/babel_mc.jsonl --ids babel_mc_circular=data/babel_mc.jsonl

The harness adapter reads the question ID from doc.id (or another place of the automatic
lookup; --id-field overrides it), the benchmark from the file name, and correctness from a
binary acc or exact_match (run metadata correctness_metric picks another, e.g. acc_norm).
The inspect adapter reads samples[].id (integer ids may be positions: run-local unless
--id-field id), epochs as repeat_id, and correctness from the scorer the run's
correctness_metric names (or the log's only scorer): C right, I and N wrong, P and NaN unknown.
The helm adapter imports a run folder whole: variants are its perturbations, repeats its train
trials, correctness the 0/1 stat exact_match (or correctness_metric); ids id0, id1, ... are
HELM's positions and stay run-local.
The lighteval adapter reads an output folder (or one details Parquet file with the results
JSON beside it): doc.id is a row position, run-local unless --id-field names a kept id
(doc.specific.id); correctness is metric.acc or metric.em. The opencompass adapter reads an
outputs/<timestamp> folder (or one predictions file): items are positions, run-local unless
--ids gives each dataset its file; circular rotations are variants circular-0..3.";

fn format_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        Format::all()
            .map(|f| clap::builder::PossibleValue::new(f.name()).help(f.adapter().summary)),
    )
}

struct Bar(ProgressBar);

impl Progress for Bar {
    fn begin_file(&self, name: &str, bytes: u64) {
        self.0.reset();
        self.0.set_length(bytes);
        self.0.set_message(name.to_owned());
    }

    fn advance(&self, bytes: u64) {
        self.0.inc(bytes);
    }

    fn end_file(&self) {
        self.0.finish_and_clear();
    }
}

/// A run folder's files are held open while they are imported (up to 10,000), and the
/// soft limit of open files is often 1,024: it is raised to the hard limit, as far as that
/// goes (a folder beyond it is refused with the hint to raise `ulimit -n`).
fn allow_open_files() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        // Kept as it was if the kernel says no: the folder's own error then tells.
        let _ = setrlimit(Resource::Nofile, raised);
    }
}

pub fn run(globals: &Globals, args: Args) -> Result<Exit, CliError> {
    keep_freed_memory();
    allow_open_files();
    let run = run_id(&args.run)?;
    let format = Format::parse(&args.format)
        .ok_or_else(|| CliError::usage(format!("unknown format {}", args.format), None))?;
    let id_field = args
        .id_field
        .as_deref()
        .map(FieldPath::parse_dotted)
        .transpose()
        .map_err(|e| {
            CliError::usage(
                format!("--id-field: {e}"),
                Some("write a dotted path such as doc.id"),
            )
        })?;
    let options = ImportOptions {
        format,
        adapter: AdapterOptions {
            variant: args.variant,
            id_field,
            benchmark: args.benchmark,
            language: args.language,
            allow_other_model: args.allow_other_model,
        },
        non_finite: if args.non_finite == "null" {
            NonFinitePolicy::Null
        } else {
            NonFinitePolicy::Reject
        },
        attachments: args.attach,
        max_attachment_size: args.max_attachment_size,
        ids: args.ids,
    };
    let archive = globals.archive()?;
    let session = globals.write_session(&archive)?;
    let bar = Bar(super::output::progress_bar(globals.quiet || args.json));
    let report = import::import(&session, &run, &args.files, &options, &bar)?;
    if args.json {
        print_json(&ImportOutput::from(&report))?;
    } else if !globals.quiet {
        let total: u64 = report.files.iter().map(|f| f.records).sum();
        outln!(
            "imported {total} records from {} file(s) into run {run}",
            report.files.len()
        );
        for file in &report.files {
            outln!(
                "  #{} {} -> {} ({} records)",
                file.seq,
                file.given.display(),
                file.raw_path,
                file.records
            );
        }
        for attachment in &report.attachments {
            outln!("  attached {attachment}");
        }
    }
    Ok(Exit::Ok)
}

/// glibc gives a freed block of more than 128 KiB back to the kernel at once (the bound
/// grows to 32 MiB as it sees such blocks) and trims the top of the heap beyond 128 KiB
/// free. An import frees a batch, a Parquet page buffer or a compressor output of about a
/// mebibyte at every step and allocates the next one alike, which then faults in fresh
/// zeroed pages, and unmapping each interrupts the other core to flush its TLB: a sixth
/// of the CPU of an import of small records was the kernel's. For an import, blocks under
/// 16 MiB come from the heap and the heap keeps up to 64 MiB free (BENCHMARKS.md,
/// "Heap"). Only for an import: the reading commands grow large buffers by `realloc`,
/// which moves a block of its own with `mremap`, without copying (`babel records` is 15 %
/// slower from the heap).
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const MMAP_THRESHOLD: libc::c_int = 16 << 20;
        const TRIM_THRESHOLD: libc::c_int = 64 << 20;
        // SAFETY: no other thread exists yet (the import starts its own later), and
        // mallopt only sets two parameters of glibc's allocator.
        #[allow(unsafe_code)]
        let set = unsafe {
            [
                libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD),
                libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD),
            ]
        };
        debug_assert_eq!(set, [1, 1], "glibc takes both thresholds");
    }
}
