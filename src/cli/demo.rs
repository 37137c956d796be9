//! `babel demo`: builds a small archive from the bundled examples and walks through the
//! main commands, so a new user sees every step work (and one rejection) in seconds.

use std::path::{Path, PathBuf};

use super::{CliError, Exit, Globals};
use babel::adapters::Format;
use babel::archive::import::{self, ImportOptions, NoProgress};
use babel::archive::layout::RunId;
use babel::archive::runs::{self, NewRun};
use babel::archive::{Archive, ArchiveError, validate};

/// The bundled example inputs, compiled into the binary so the demo runs anywhere.
const EXAMPLES: [(&str, &str); 2] = [
    (
        "canonical/capitals.jsonl",
        include_str!("../../examples/canonical/capitals.jsonl"),
    ),
    (
        "canonical/broken.jsonl",
        include_str!("../../examples/canonical/broken.jsonl"),
    ),
];

/// Build a demo archive from the bundled examples: create a run, import records, watch a
/// broken file being rejected with nothing published, validate. Prints every step.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to build it (must not exist yet) [default: a new folder in the system
    /// temporary directory].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

fn step(text: &str) {
    println!("\n== {text}");
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
    println!("created a babel archive");
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
    println!("created run {run}");

    let canonical = ImportOptions::new(Format::Canonical);
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
        println!("imported {} records -> {}", file.records, file.raw_path);
    }

    let broken = inputs.join("canonical/broken.jsonl");
    step(
        "babel import capitals-demo --format canonical inputs/canonical/broken.jsonl   (a deliberately broken file)",
    );
    match import::import(&session, &run, &[broken], &canonical, &NoProgress) {
        Err(ArchiveError::Rejected(report)) => {
            println!("rejected, as it should be: {}", report.summary());
            for rejection in &report.rejections {
                println!("  {rejection}");
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
    drop(session);

    step("babel validate");
    let report = validate::validate(&archive, &[])?;
    println!(
        "validate: {} ({} run(s), {} file(s), {} record(s) checked)",
        if report.ok { "ok" } else { "FINDINGS" },
        report.runs,
        report.files,
        report.records
    );
    for finding in &report.findings {
        println!("  {}: {}", finding.path, finding.message);
    }

    println!("\nThe demo archive is at {}", root.display());
    println!("Try:");
    println!("  babel --root {} show {run}", root.display());
    println!(
        "  babel --root {} records {run} --variant rephrased",
        root.display()
    );
    Ok(if report.ok { Exit::Ok } else { Exit::Failure })
}
