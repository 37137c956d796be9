//! `babel artifact add`, `show` and `list`.

use serde_json::Value;
use std::path::PathBuf;

use super::output::{column_width, print_json};
use super::{CliError, Exit, Globals};
use babel::archive::artifacts::payload::{ArtifactPin, Payload};
use babel::archive::artifacts::{self, ArtifactId, Kind};
use babel::outputs::{ArtifactAdded, ArtifactList, ArtifactShown};

const ADD_EXAMPLES: &str = "\
Examples:
  babel artifact add item-bank capitals-bank examples/benchmark/item-bank.json
  babel artifact add protocol capitals-0shot examples/benchmark/protocol.json

KIND is one of item-bank, protocol, model-panel, calibration, release. FILE is one JSON
object in any layout; babel stores its RFC 8785 canonical form, and pins to the artifact
carry the SHA-256 of those stored bytes (printed here, and by `babel artifact show`).
ARTIFACTS.md describes each kind's payload.";

/// Examples for `babel artifact --help`.
pub const GROUP_EXAMPLES: &str = "\
Examples:
  babel artifact add item-bank capitals-bank item-bank.json
  babel artifact show item-bank capitals-bank
  babel artifact list --json

ARTIFACTS.md describes the registries and payloads; BENCHMARK_WORKFLOW.md the workflow.";

/// Register, show and list item banks, protocols, model panels, calibrations and releases.
#[derive(Debug, clap::Subcommand)]
pub enum ArtifactCommand {
    Add(AddArgs),
    Show(ShowArgs),
    List(ListArgs),
}

/// Register an artifact: validate FILE against KIND's schema, check that every pin in it
/// resolves to what is registered, and store it canonically under ID. Registered artifacts
/// are immutable: adding the identical payload again changes nothing; a different payload
/// under a registered ID is refused.
#[derive(Debug, clap::Args)]
#[command(after_help = ADD_EXAMPLES)]
pub struct AddArgs {
    /// item-bank, protocol, model-panel, calibration or release.
    kind: String,
    /// The artifact ID: 1-128 of A-Z a-z 0-9 . _ -, starting with a letter or digit.
    id: String,
    /// The JSON payload.
    file: PathBuf,
    /// Print the outcome as JSON.
    #[arg(long)]
    json: bool,
}

/// Show a registered artifact: its payload hash (what pins carry), what it pins, and a
/// summary of its payload (with --json: the manifest and the whole payload).
#[derive(Debug, clap::Args)]
#[command(after_help = "Example: babel artifact show item-bank capitals-bank")]
pub struct ShowArgs {
    kind: String,
    id: String,
    /// Print the manifest and the payload as JSON.
    #[arg(long)]
    json: bool,
}

/// List registered artifacts, of one kind or of all.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example: babel artifact list protocol --json")]
pub struct ListArgs {
    /// Only this kind.
    kind: Option<String>,
    /// Print the list as JSON.
    #[arg(long)]
    json: bool,
}

fn kind(text: &str) -> Result<Kind, CliError> {
    Kind::parse(text).ok_or_else(|| {
        CliError::usage(
            format!("unknown artifact kind {text:?}"),
            Some(&format!("KIND is one of {}", Kind::names())),
        )
    })
}

fn artifact_id(text: &str) -> Result<ArtifactId, CliError> {
    ArtifactId::parse(text).map_err(|e| CliError::usage(e.to_string(), None))
}

pub fn run(globals: &Globals, command: ArtifactCommand) -> Result<Exit, CliError> {
    match command {
        ArtifactCommand::Add(args) => add(globals, args),
        ArtifactCommand::Show(args) => show(globals, args),
        ArtifactCommand::List(args) => list(globals, args),
    }
}

fn add(globals: &Globals, args: AddArgs) -> Result<Exit, CliError> {
    let kind = kind(&args.kind)?;
    let id = artifact_id(&args.id)?;
    let archive = globals.archive()?;
    let session = globals.write_session(&archive)?;
    let outcome = artifacts::add(&session, kind, &id, &args.file)?;
    if args.json {
        print_json(&ArtifactAdded::from(&outcome))?;
    } else if !globals.quiet {
        if outcome.created {
            outln!("registered {kind} {id} ({} bytes)", outcome.bytes);
        } else {
            outln!("{kind} {id} is already registered with this payload; nothing changed");
        }
        outln!("  sha256 {}", outcome.sha256);
        print_pin(&ArtifactPin {
            id: outcome.id,
            sha256: outcome.sha256,
        })?;
    }
    Ok(Exit::Ok)
}

/// The pin to an artifact, as a payload writes it.
fn print_pin(pin: &ArtifactPin) -> Result<(), CliError> {
    let pin = serde_json::to_string(pin).map_err(std::io::Error::from)?;
    outln!("  pin    {pin}");
    Ok(())
}

fn summary(payload: &Payload) -> Vec<String> {
    match payload {
        Payload::ItemBank(bank) => {
            let mut forms: Vec<String> = bank
                .items
                .iter()
                .flat_map(|i| &i.instances)
                .map(|i| format!("{}/{}", i.language, i.script))
                .collect();
            forms.sort();
            forms.dedup();
            let instances: usize = bank.items.iter().map(|i| i.instances.len()).sum();
            vec![format!(
                "{} items, {instances} instances; languages/scripts: {}",
                bank.items.len(),
                forms.join(" ")
            )]
        }
        Payload::Protocol(protocol) => vec![
            format!(
                "item bank {} @ {}",
                protocol.item_bank.id, protocol.item_bank.sha256
            ),
            format!("filters: {}", protocol.filters.join(", ")),
            format!(
                "correctness: metric {} on filter {}",
                protocol.correctness_metric, protocol.correctness_filter
            ),
        ],
        Payload::ModelPanel(panel) => panel
            .models
            .iter()
            .map(|m| {
                if m.checkpoints.is_empty() {
                    format!("model {}", m.model)
                } else {
                    format!(
                        "model {} (checkpoints {})",
                        m.model,
                        m.checkpoints.join(", ")
                    )
                }
            })
            .collect(),
        Payload::Calibration(calibration) => {
            let mut lines = vec![format!(
                "item bank {}, protocol {}; parameters for {} items",
                calibration.item_bank.id,
                calibration.protocol.id,
                calibration.parameterized_items.len()
            )];
            lines.extend(
                calibration
                    .input_runs
                    .iter()
                    .map(|r| format!("input run {} @ {}", r.run_id, r.manifest_sha256)),
            );
            lines
        }
        Payload::Release(release) => {
            let mut lines = vec![format!("release {:?}", release.name)];
            lines.extend(
                release
                    .artifacts
                    .iter()
                    .map(|a| format!("{} {} @ {}", a.kind, a.pin.id, a.pin.sha256)),
            );
            lines.extend(
                release
                    .runs
                    .iter()
                    .map(|r| format!("run {} @ {}", r.run_id, r.manifest_sha256)),
            );
            lines
        }
    }
}

fn show(globals: &Globals, args: ShowArgs) -> Result<Exit, CliError> {
    let kind = kind(&args.kind)?;
    let id = artifact_id(&args.id)?;
    let archive = globals.archive()?;
    let registered = artifacts::load(&archive, kind, id.as_str()).map_err(CliError::from)?;
    if args.json {
        print_json(&ArtifactShown::from(&registered))?;
        return Ok(Exit::Ok);
    }
    let manifest = &registered.manifest;
    outln!("{kind} {id}  (registered {})", manifest.registered_at);
    outln!(
        "  sha256 {}  ({} bytes)",
        registered.sha256,
        manifest.artifact.bytes
    );
    print_pin(&registered.pin())?;
    if let Some(Value::String(description)) = registered.value.get("description") {
        outln!("  {description}");
    }
    for line in summary(&registered.payload) {
        outln!("  {line}");
    }
    Ok(Exit::Ok)
}

fn list(globals: &Globals, args: ListArgs) -> Result<Exit, CliError> {
    let kind = args.kind.as_deref().map(kind).transpose()?;
    let archive = globals.archive()?;
    let listed = artifacts::list(&archive, kind)?;
    if args.json {
        print_json(&ArtifactList { artifacts: listed })?;
        return Ok(Exit::Ok);
    }
    if listed.is_empty() {
        outln!("no artifacts registered (register one with `babel artifact add KIND ID FILE`)");
        return Ok(Exit::Ok);
    }
    let wk = column_width(&listed, "kind", |a| a.kind.len());
    let wi = column_width(&listed, "id", |a| a.id.len());
    outln!("{:wk$}  {:wi$}  sha256        pins", "kind", "id");
    for artifact in &listed {
        let pins = artifact.dependencies.artifacts.len() + artifact.dependencies.runs.len();
        outln!(
            "{:wk$}  {:wi$}  {}  {pins}",
            artifact.kind,
            artifact.id,
            artifact.sha256.get(..12).unwrap_or(&artifact.sha256)
        );
    }
    Ok(Exit::Ok)
}
