//! `babel demo`: builds a small archive from the bundled examples and walks through the
//! main commands, so a new user sees every step work (and one rejection) in seconds.

use std::path::{Path, PathBuf};

use super::{CliError, Exit, Globals};
use babel::adapters::Format;
use babel::archive::artifacts::{self, ArtifactId, Kind, contract};
use babel::archive::comparison::SideRequest;
use babel::archive::import::{self, ImportOptions, ImportReport, NoProgress};
use babel::archive::layout::RunId;
use babel::archive::runs::{self, NewRun};
use babel::archive::{Archive, ArchiveError, WriteSession, validate};
use babel::compare::stats::ConfidenceLevel;
use babel::pipeline::{self, CompareRequest, ReportRequest, ReportWritten};
use babel::report::{self, ReportFormat};

/// The bundled example inputs, compiled into the binary so the demo runs anywhere.
const EXAMPLES: [(&str, &str); 9] = [
    (
        "canonical/capitals.jsonl",
        include_str!("../../examples/canonical/capitals.jsonl"),
    ),
    (
        "canonical/broken.jsonl",
        include_str!("../../examples/canonical/broken.jsonl"),
    ),
    (
        "paired/capitals-paired.jsonl",
        include_str!("../../examples/paired/capitals-paired.jsonl"),
    ),
    (
        HARNESS_SAMPLES,
        include_str!("../../examples/harness/samples_babel_gen_2026-12-02T12-52-40.515719.jsonl"),
    ),
    (
        HARNESS_RESULTS,
        include_str!("../../examples/harness/results_2026-12-02T12-52-40.515719.json"),
    ),
    (
        BANK,
        include_str!("../../examples/benchmark/item-bank.json"),
    ),
    (
        PROTOCOL,
        include_str!("../../examples/benchmark/protocol.json"),
    ),
    (
        STEP_1000,
        include_str!("../../examples/benchmark/results/demo-7b-step1000.jsonl"),
    ),
    (
        STEP_2000,
        include_str!("../../examples/benchmark/results/demo-7b-step2000.jsonl"),
    ),
];

const BANK: &str = "benchmark/item-bank.json";
const PROTOCOL: &str = "benchmark/protocol.json";
const STEP_1000: &str = "benchmark/results/demo-7b-step1000.jsonl";
const STEP_2000: &str = "benchmark/results/demo-7b-step2000.jsonl";
const HARNESS_SAMPLES: &str = "harness/samples_babel_gen_2026-12-02T12-52-40.515719.jsonl";
const HARNESS_RESULTS: &str = "harness/results_2026-12-02T12-52-40.515719.json";

/// Build a demo archive from the bundled examples: runs imported from canonical, paired
/// and real lm-evaluation-harness files, a broken file rejected with nothing published,
/// validation. Prints every step.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to build it (must not exist yet) [default: a new folder in the system
    /// temporary directory].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

fn step(text: &str) {
    outln!("\n== {text}");
}

/// How the user can run this binary: `babel` when that name on the PATH is this very
/// program, else its full path (as after `cargo run`, before `cargo install`).
fn invocation() -> String {
    let Ok(this) = std::env::current_exe().and_then(std::fs::canonicalize) else {
        return "babel".into();
    };
    let on_path = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path)
            .any(|dir| std::fs::canonicalize(dir.join("babel")).is_ok_and(|found| found == this))
    });
    if on_path {
        "babel".into()
    } else {
        this.display().to_string()
    }
}

fn write_examples(inputs: &Path) -> Result<(), CliError> {
    for (name, text) in EXAMPLES {
        let path = inputs.join(name);
        std::fs::create_dir_all(path.parent().unwrap_or(inputs))?;
        std::fs::write(&path, text)?;
    }
    Ok(())
}

/// The folder the demo builds in: `--dir` (which must not exist yet), or a new one in the
/// system temporary directory, kept for the user to explore.
fn workspace(dir: Option<PathBuf>) -> Result<PathBuf, CliError> {
    match dir {
        Some(dir) => {
            if dir.exists() {
                return Err(CliError::usage(
                    format!("{} already exists", dir.display()),
                    Some("give --dir a path that does not exist yet, or leave it out"),
                ));
            }
            std::fs::create_dir_all(&dir)?;
            Ok(dir)
        }
        None => Ok(tempfile::Builder::new()
            .prefix("babel-demo-")
            .tempdir()?
            .keep()),
    }
}

/// Creates run `name` (one of the demo's valid IDs) as `babel run create` would.
fn create_run(session: &WriteSession<'_>, name: &str, new: NewRun) -> Result<RunId, CliError> {
    let run = RunId::parse(name).expect("a valid ID");
    runs::create(session, &run, new)?;
    Ok(run)
}

/// Imports one file into `run` as `babel import` would, without a progress bar.
fn import_file(
    session: &WriteSession<'_>,
    run: &RunId,
    file: PathBuf,
    options: &ImportOptions,
) -> Result<ImportReport, CliError> {
    Ok(import::import(session, run, &[file], options, &NoProgress)?)
}

/// The demo's own `babel init`: a new archive at `root`.
fn create_the_archive(globals: &Globals, root: &Path) -> Result<Archive, CliError> {
    step(&format!("babel --root {} init", root.display()));
    Archive::init(root, globals.wait, &mut globals.announce_wait())?;
    outln!("created a babel archive");
    Ok(Archive::open(root)?)
}

/// Run capitals-demo, with the canonical capitals example: original and rephrased
/// questions in six languages.
fn import_the_capitals(session: &WriteSession<'_>, inputs: &Path) -> Result<RunId, CliError> {
    step("babel run create capitals-demo --model demo-model --benchmark world-capitals");
    let run = create_run(
        session,
        "capitals-demo",
        NewRun {
            model: "demo-model".into(),
            benchmark: Some("world-capitals".into()),
            meta: vec![("dataset_revision".into(), "demo-1".into())],
        },
    )?;
    outln!("created run {run}");
    step("babel import capitals-demo --format canonical inputs/canonical/capitals.jsonl");
    let capitals = inputs.join("canonical/capitals.jsonl");
    let report = import_file(
        session,
        &run,
        capitals,
        &ImportOptions::new(Format::CANONICAL),
    )?;
    for file in &report.files {
        outln!("imported {} records -> {}", file.records, file.raw_path);
    }
    Ok(run)
}

/// The broken example, refused whole with every problem listed.
fn reject_the_broken_file(
    session: &WriteSession<'_>,
    run: &RunId,
    inputs: &Path,
) -> Result<(), CliError> {
    step(
        "babel import capitals-demo --format canonical inputs/canonical/broken.jsonl   (a deliberately broken file)",
    );
    let broken = inputs.join("canonical/broken.jsonl");
    match import::import(
        session,
        run,
        &[broken],
        &ImportOptions::new(Format::CANONICAL),
        &NoProgress,
    ) {
        Err(ArchiveError::Rejected(report)) => {
            outln!("rejected, as it should be: {}", report.summary());
            for rejection in &report.rejections {
                outln!("  {rejection}");
            }
            Ok(())
        }
        Ok(_) => Err(CliError::Io(std::io::Error::other(
            "the broken example was accepted; this is a bug",
        ))),
        Err(other) => Err(other.into()),
    }
}

/// Run paired-demo, from the paired example: one line, two records.
fn import_the_paired_file(session: &WriteSession<'_>, inputs: &Path) -> Result<RunId, CliError> {
    step("babel run create paired-demo --model demo-model --benchmark world-capitals");
    let run = create_run(
        session,
        "paired-demo",
        NewRun {
            model: "demo-model".into(),
            benchmark: Some("world-capitals".into()),
            meta: Vec::new(),
        },
    )?;
    step(
        "babel import paired-demo --format paired inputs/paired/capitals-paired.jsonl   (one line, two records)",
    );
    let pairs = inputs.join("paired/capitals-paired.jsonl");
    let report = import_file(session, &run, pairs, &ImportOptions::new(Format::PAIRED))?;
    for file in &report.files {
        outln!("imported {} records -> {}", file.records, file.raw_path);
    }
    Ok(run)
}

/// Run harness-demo, from real lm-evaluation-harness output, its results file attached.
fn import_the_harness_output(session: &WriteSession<'_>, inputs: &Path) -> Result<(), CliError> {
    step("babel run create harness-demo --model dummy-p");
    let run = create_run(
        session,
        "harness-demo",
        NewRun {
            model: "dummy-p".into(),
            benchmark: None,
            meta: Vec::new(),
        },
    )?;
    outln!("created run {run}");
    step(&format!(
        "babel import harness-demo --format harness inputs/{HARNESS_SAMPLES} --attach inputs/{HARNESS_RESULTS}   (real lm-evaluation-harness 0.4.13 output)"
    ));
    let mut options = ImportOptions::new(Format::HARNESS);
    options.attachments = vec![inputs.join(HARNESS_RESULTS)];
    let report = import_file(session, &run, inputs.join(HARNESS_SAMPLES), &options)?;
    for file in &report.files {
        outln!(
            "imported {} records (one per document and filter) -> {}",
            file.records,
            file.raw_path
        );
    }
    for attachment in &report.attachments {
        outln!("attached {attachment}");
    }
    Ok(())
}

/// The example item bank and protocol, registered.
fn register_the_bank_and_protocol(
    session: &WriteSession<'_>,
    inputs: &Path,
) -> Result<(), CliError> {
    step(
        "babel artifact add item-bank capitals-bank inputs/benchmark/item-bank.json   (and the protocol)",
    );
    for (kind, id, file) in [
        (Kind::ItemBank, "capitals-bank", BANK),
        (Kind::Protocol, "capitals-0shot", PROTOCOL),
    ] {
        let id = ArtifactId::parse(id).expect("a valid ID");
        let added = artifacts::add(session, kind, &id, &inputs.join(file))?;
        outln!(
            "registered {} {} (sha256 {})",
            kind.name(),
            added.id,
            added.sha256
        );
    }
    Ok(())
}

/// Two strict runs, checkpoints of one model under the bank and protocol, each record
/// checked against the bank.
fn import_two_strict_checkpoints(
    session: &WriteSession<'_>,
    inputs: &Path,
) -> Result<Vec<RunId>, CliError> {
    let checkpoints = [
        ("demo-7b-step1000", STEP_1000),
        ("demo-7b-step2000", STEP_2000),
    ];
    let contract = contract::contract_for(session.archive(), "capitals-bank", "capitals-0shot")?;
    let mut strict = Vec::new();
    for (name, file) in checkpoints {
        step(&format!(
            "babel run create {name} --model demo-org/demo-7b --item-bank capitals-bank --protocol capitals-0shot"
        ));
        let run = create_run(
            session,
            name,
            NewRun {
                model: "demo-org/demo-7b".into(),
                benchmark: Some("world-capitals".into()),
                meta: vec![(contract::CONTRACT_KEY.to_owned(), contract.clone())],
            },
        )?;
        let options = ImportOptions::new(Format::CANONICAL);
        let report = import_file(session, &run, inputs.join(file), &options)?;
        for file in &report.files {
            outln!(
                "a strict run: imported {} records, each checked against the item bank",
                file.records
            );
        }
        strict.push(run);
    }
    Ok(strict)
}

/// Variant `variant` of `run`, as one side of a comparison.
fn side(run: &RunId, variant: &str) -> SideRequest {
    SideRequest {
        run: run.clone(),
        variant_id: variant.into(),
    }
}

/// Original against rephrased in capitals-demo, with the HTML report written beside the
/// archive.
fn compare_original_and_rephrased(
    archive: &Archive,
    run: &RunId,
    workspace: &Path,
) -> Result<Option<ReportWritten>, CliError> {
    step("babel compare capitals-demo --items capitals-report.html");
    let outcome = pipeline::compare(
        archive,
        &CompareRequest {
            baseline: side(run, "original"),
            variant: side(run, "rephrased"),
            confidence: ConfidenceLevel::NINETY_FIVE,
            report: Some(ReportRequest {
                path: workspace.join("capitals-report.html"),
                format: ReportFormat::Html,
            }),
        },
    )?;
    report::text::render(&outcome.summary, &mut super::output::stdout())?;
    Ok(outcome.report)
}

/// The first two strict checkpoints, compared as two runs.
fn compare_the_checkpoints(archive: &Archive, checkpoints: &[RunId]) -> Result<(), CliError> {
    step(
        "babel compare demo-7b-step1000 --other-run demo-7b-step2000   (two checkpoints, same bank and protocol)",
    );
    let outcome = pipeline::compare(
        archive,
        &CompareRequest {
            baseline: side(&checkpoints[0], "original"),
            variant: side(&checkpoints[1], "original"),
            confidence: ConfidenceLevel::NINETY_FIVE,
            report: None,
        },
    )?;
    report::text::render(&outcome.summary, &mut super::output::stdout())?;
    Ok(())
}

/// `babel validate` over the whole demo archive; true when it is whole.
fn validate_the_archive(archive: &Archive) -> Result<bool, CliError> {
    step("babel validate");
    let report = validate::validate(archive, &[])?;
    outln!(
        "validate: {} ({} run(s), {} file(s), {} record(s) checked)",
        if report.ok { "ok" } else { "FINDINGS" },
        report.runs,
        report.files,
        report.records
    );
    for finding in &report.findings {
        outln!("  {}: {}", finding.path, finding.message);
    }
    Ok(report.ok)
}

/// Where the archive and the report are, and commands to try next, as the user can run
/// them.
fn suggest_what_to_try(
    root: &Path,
    written: Option<ReportWritten>,
    capitals: &RunId,
    paired: &RunId,
) {
    outln!("\nThe demo archive is at {}", root.display());
    if let Some(written) = written {
        outln!(
            "The item-level report (open it in a browser, no server needed): {}",
            written.path.display()
        );
    }
    let babel = invocation();
    let root = root.display();
    outln!("Try:");
    outln!("  {babel} --root {root} show {capitals}");
    outln!("  {babel} --root {root} records {paired} --variant rephrased");
    outln!("  {babel} --root {root} list");
    outln!(
        "  {babel} --root {root} matrix --bank capitals-bank --runs demo-7b-step1000,demo-7b-step2000 --out responses.csv"
    );
    if babel != "babel" {
        outln!("(`cargo install --locked --path .` puts babel on your PATH)");
    }
}

pub fn run(globals: &Globals, args: Args) -> Result<Exit, CliError> {
    let workspace = workspace(args.dir)?;
    let root = workspace.join("archive");
    let inputs = workspace.join("inputs");
    write_examples(&inputs)?;
    let archive = create_the_archive(globals, &root)?;
    let session =
        archive.write_session("babel demo", globals.wait, &mut globals.announce_wait())?;
    let capitals = import_the_capitals(&session, &inputs)?;
    reject_the_broken_file(&session, &capitals, &inputs)?;
    let paired = import_the_paired_file(&session, &inputs)?;
    import_the_harness_output(&session, &inputs)?;
    register_the_bank_and_protocol(&session, &inputs)?;
    let checkpoints = import_two_strict_checkpoints(&session, &inputs)?;
    drop(session);
    let written = compare_original_and_rephrased(&archive, &capitals, &workspace)?;
    compare_the_checkpoints(&archive, &checkpoints)?;
    let whole = validate_the_archive(&archive)?;
    suggest_what_to_try(&root, written, &capitals, &paired);
    Ok(if whole { Exit::Ok } else { Exit::Failure })
}
