//! `babel demo`: builds a small archive from the bundled examples and walks through the
//! main commands, so a new user sees every step work (and one rejection) in seconds.

use std::path::{Path, PathBuf};

use super::{CliError, Exit, Globals};
use babel::adapters::Format;
use babel::archive::artifacts::{self, ArtifactId, Kind, contract};
use babel::archive::comparison::SideRequest;
use babel::archive::import::{self, ImportOptions, NoProgress};
use babel::archive::layout::RunId;
use babel::archive::runs::{self, NewRun};
use babel::archive::{Archive, ArchiveError, validate};
use babel::report::{self, ReportFormat};

use babel::compare::stats::ConfidenceLevel;
use babel::pipeline::{self, CompareRequest, ReportRequest};

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

pub fn run(globals: &Globals, args: Args) -> Result<Exit, CliError> {
    let workspace = match args.dir {
        Some(dir) => {
            if dir.exists() {
                return Err(CliError::usage(
                    format!("{} already exists", dir.display()),
                    Some("give --dir a path that does not exist yet, or leave it out"),
                ));
            }
            std::fs::create_dir_all(&dir)?;
            dir
        }
        None => tempfile::Builder::new()
            .prefix("babel-demo-")
            .tempdir()?
            .keep(),
    };
    let root = workspace.join("archive");
    let inputs = workspace.join("inputs");
    write_examples(&inputs)?;

    step(&format!("babel --root {} init", root.display()));
    Archive::init(&root, globals.wait, &mut globals.announce_wait())?;
    outln!("created a babel archive");
    let archive = Archive::open(&root)?;
    let session =
        archive.write_session("babel demo", globals.wait, &mut globals.announce_wait())?;

    let run = RunId::parse("capitals-demo").expect("a valid ID");
    step("babel run create capitals-demo --model demo-model --benchmark world-capitals");
    runs::create(
        &session,
        &run,
        NewRun {
            model: "demo-model".into(),
            benchmark: Some("world-capitals".into()),
            meta: vec![("dataset_revision".into(), "demo-1".into())],
        },
    )?;
    outln!("created run {run}");

    let canonical = ImportOptions::new(Format::CANONICAL);
    let capitals = inputs.join("canonical/capitals.jsonl");
    step("babel import capitals-demo --format canonical inputs/canonical/capitals.jsonl");
    let report = import::import(
        &session,
        &run,
        std::slice::from_ref(&capitals),
        &canonical,
        &NoProgress,
    )?;
    for file in &report.files {
        outln!("imported {} records -> {}", file.records, file.raw_path);
    }

    let broken = inputs.join("canonical/broken.jsonl");
    step(
        "babel import capitals-demo --format canonical inputs/canonical/broken.jsonl   (a deliberately broken file)",
    );
    match import::import(&session, &run, &[broken], &canonical, &NoProgress) {
        Err(ArchiveError::Rejected(report)) => {
            outln!("rejected, as it should be: {}", report.summary());
            for rejection in &report.rejections {
                outln!("  {rejection}");
            }
        }
        Ok(_) => {
            return Err(CliError::usage(
                "the broken example was accepted; this is a bug",
                None,
            ));
        }
        Err(other) => return Err(other.into()),
    }
    let paired = RunId::parse("paired-demo").expect("a valid ID");
    step("babel run create paired-demo --model demo-model --benchmark world-capitals");
    runs::create(
        &session,
        &paired,
        NewRun {
            model: "demo-model".into(),
            benchmark: Some("world-capitals".into()),
            meta: Vec::new(),
        },
    )?;
    step(
        "babel import paired-demo --format paired inputs/paired/capitals-paired.jsonl   (one line, two records)",
    );
    let report = import::import(
        &session,
        &paired,
        &[inputs.join("paired/capitals-paired.jsonl")],
        &ImportOptions::new(Format::PAIRED),
        &NoProgress,
    )?;
    for file in &report.files {
        outln!("imported {} records -> {}", file.records, file.raw_path);
    }

    let harness = RunId::parse("harness-demo").expect("a valid ID");
    step("babel run create harness-demo --model dummy-p");
    runs::create(
        &session,
        &harness,
        NewRun {
            model: "dummy-p".into(),
            benchmark: None,
            meta: Vec::new(),
        },
    )?;
    outln!("created run {harness}");
    step(&format!(
        "babel import harness-demo --format harness inputs/{HARNESS_SAMPLES} --attach inputs/{HARNESS_RESULTS}   (real lm-evaluation-harness 0.4.13 output)"
    ));
    let mut harness_options = ImportOptions::new(Format::HARNESS);
    harness_options.attachments = vec![inputs.join(HARNESS_RESULTS)];
    let report = import::import(
        &session,
        &harness,
        &[inputs.join(HARNESS_SAMPLES)],
        &harness_options,
        &NoProgress,
    )?;
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
    step(
        "babel artifact add item-bank capitals-bank inputs/benchmark/item-bank.json   (and the protocol)",
    );
    for (kind, id, file) in [
        (Kind::ItemBank, "capitals-bank", BANK),
        (Kind::Protocol, "capitals-0shot", PROTOCOL),
    ] {
        let id = ArtifactId::parse(id).expect("a valid ID");
        let added = artifacts::add(&session, kind, &id, &inputs.join(file))?;
        outln!(
            "registered {} {} (sha256 {})",
            kind.name(),
            added.id,
            added.sha256
        );
    }
    let mut strict_runs = Vec::new();
    for (name, file) in [
        ("demo-7b-step1000", STEP_1000),
        ("demo-7b-step2000", STEP_2000),
    ] {
        step(&format!(
            "babel run create {name} --model demo-org/demo-7b --item-bank capitals-bank --protocol capitals-0shot"
        ));
        let strict = RunId::parse(name).expect("a valid ID");
        let contract = contract::contract_for(&archive, "capitals-bank", "capitals-0shot")?;
        runs::create(
            &session,
            &strict,
            NewRun {
                model: "demo-org/demo-7b".into(),
                benchmark: Some("world-capitals".into()),
                meta: vec![(contract::CONTRACT_KEY.to_owned(), contract)],
            },
        )?;
        let report = import::import(
            &session,
            &strict,
            &[inputs.join(file)],
            &canonical,
            &NoProgress,
        )?;
        for file in &report.files {
            outln!(
                "a strict run: imported {} records, each checked against the item bank",
                file.records
            );
        }
        strict_runs.push(strict);
    }
    drop(session);

    step("babel compare capitals-demo --items capitals-report.html");
    let side = |run: &RunId, variant: &str| SideRequest {
        run: run.clone(),
        variant_id: variant.into(),
    };
    let report_path = workspace.join("capitals-report.html");
    let outcome = pipeline::compare(
        &archive,
        &CompareRequest {
            baseline: side(&run, "original"),
            variant: side(&run, "rephrased"),
            confidence: ConfidenceLevel::NINETY_FIVE,
            report: Some(ReportRequest {
                path: report_path.clone(),
                format: ReportFormat::Html,
            }),
        },
    )?;
    let written = outcome.report;
    report::text::render(&outcome.summary, &mut super::output::stdout())?;

    step(
        "babel compare demo-7b-step1000 --other-run demo-7b-step2000   (two checkpoints, same bank and protocol)",
    );
    let outcome = pipeline::compare(
        &archive,
        &CompareRequest {
            baseline: side(&strict_runs[0], "original"),
            variant: side(&strict_runs[1], "original"),
            confidence: ConfidenceLevel::NINETY_FIVE,
            report: None,
        },
    )?;
    report::text::render(&outcome.summary, &mut super::output::stdout())?;

    step("babel validate");
    let report = validate::validate(&archive, &[])?;
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

    outln!("\nThe demo archive is at {}", root.display());
    if let Some(written) = written {
        outln!(
            "The item-level report (open it in a browser, no server needed): {}",
            written.path.display()
        );
    }
    let babel = invocation();
    outln!("Try:");
    outln!("  {babel} --root {} show {run}", root.display());
    outln!(
        "  {babel} --root {} records {paired} --variant rephrased",
        root.display()
    );
    outln!("  {babel} --root {} list", root.display());
    outln!(
        "  {babel} --root {} matrix --bank capitals-bank --runs demo-7b-step1000,demo-7b-step2000 --out responses.csv",
        root.display()
    );
    if babel != "babel" {
        outln!("(`cargo install --locked --path .` puts babel on your PATH)");
    }
    Ok(if report.ok { Exit::Ok } else { Exit::Failure })
}
