//! `babel export` and `babel verify-bundle`: release bundles (`babel::bundle`; this
//! parses arguments and prints).

use std::path::PathBuf;
use std::time::Duration;

use super::output::print_json;
use super::{CliError, Exit, Globals, run_ids};
use babel::archive::ArchiveError;
use babel::bundle::export::{self, Selection};
use babel::bundle::import::ImportError;
use babel::bundle::verify::{self, BundleError, Ceilings};

const EXPORT_HELP: &str = "\
The bundle is one file: a tar archive (profile tar-ustar-v1: sorted members, fixed modes,
zero owners and times) inside one zstd frame (level 9, with its content size and checksum),
holding one folder babel-bundle/ with the selected sealed runs, every artifact they
depend on (strict runs' item banks and protocols, and whatever those pin), manifest.json
(every file's role, SHA-256 and size; for records files the row count and a root over
every record's identity and row hash; a root per run and artifact, and one bundle root)
and checksums.sha256. The same archive state always gives the same bytes.

Check an extracted bundle with standard tools:
  tar -xf study.tar.zst && (cd babel-bundle && sha256sum -c checksums.sha256)

Examples:
  babel export --run llama-3-mmlu --run llama-3.1-mmlu study.tar.zst
  babel export --release paper-2026 paper-2026.tar.zst";

/// Export sealed runs, or a release, with everything they depend on, as one deterministic
/// bundle file.
#[derive(Debug, clap::Args)]
#[command(after_help = EXPORT_HELP)]
pub struct ExportArgs {
    /// A sealed run to export (repeat for several).
    #[arg(
        long = "run",
        value_name = "RUN",
        required_unless_present = "release",
        conflicts_with = "release"
    )]
    runs: Vec<String>,
    /// A registered release: its pinned runs and artifacts.
    #[arg(long, value_name = "ID")]
    release: Option<String>,
    /// The bundle file to write (it must not exist; `.tar.zst` by convention).
    out: PathBuf,
    /// Print what was written as JSON.
    #[arg(long)]
    json: bool,
}

pub fn export(globals: &Globals, args: ExportArgs) -> Result<Exit, CliError> {
    let selection = match args.release {
        Some(release) => Selection::Release(release),
        None => Selection::Runs(run_ids(&args.runs)?),
    };
    let archive = globals.archive()?;
    // No write starts while the files are hashed and copied.
    let wait = globals.wait.or(Some(Duration::MAX));
    let _lock = archive.hold_still("babel export", wait, &mut globals.announce_wait())?;
    let exported = export::export(&archive, &selection, &args.out)?;
    if args.json {
        print_json(&exported)?;
        return Ok(Exit::Ok);
    }
    if globals.quiet {
        return Ok(Exit::Ok);
    }
    outln!(
        "wrote {} ({} bytes)",
        exported.path.display(),
        exported.bytes
    );
    outln!("  sha256       {}", exported.sha256);
    outln!("  bundle root  {}", exported.bundle_root);
    for component in &exported.components {
        outln!("  {component}");
    }
    Ok(Exit::Ok)
}

const VERIFY_HELP: &str = "\
Checks everything without touching any archive: the file's SHA-256 (--expect-sha256), the
zstd frame and every tar member under this verifier's ceilings (unsafe, duplicate,
case-colliding, out-of-order or undeclared members, links and devices are refused), then
manifest.json's canonical bytes, every file's SHA-256 and size, every record's row hash and
each records file's row root, every run's and artifact's root, the bundle root,
checksums.sha256, and that every pin a run or artifact makes is in the bundle. The members
are unpacked into a private temporary folder, removed afterwards.

Exits 1 when the bundle is not valid (the message says why); `babel --help` lists every
exit code.

Examples:
  babel verify-bundle study.tar.zst
  babel verify-bundle study.tar.zst --expect-sha256 3f2a...";

/// What every reader of a bundle file checks it against.
#[derive(Debug, clap::Args)]
struct Checks {
    /// The SHA-256 the bundle file must have (64 hex digits).
    #[arg(long, value_name = "HEX")]
    expect_sha256: Option<String>,
    /// The most bytes the decompressed tar stream may hold (e.g. 500MiB, 2TiB). Default:
    /// what the bundle's manifest declares, and at most 1 GiB (or 256 times the bundle)
    /// before the manifest is found; the free space is checked either way.
    #[arg(long, value_name = "SIZE", value_parser = babel::hub::pull::parse_size)]
    max_expanded_bytes: Option<u64>,
    /// The most bytes one file of the bundle may hold (default: its declared size).
    #[arg(long, value_name = "SIZE", value_parser = babel::hub::pull::parse_size)]
    max_file_bytes: Option<u64>,
    /// The most bytes the bundle file itself may hold.
    #[arg(long, value_name = "SIZE", default_value = "64GiB", value_parser = babel::hub::pull::parse_size)]
    max_bundle_bytes: u64,
    /// The most files and folders the bundle may hold (default: what its manifest
    /// declares, and 100,000 before the manifest).
    #[arg(long, value_name = "N")]
    max_members: Option<u64>,
}

impl Checks {
    /// The expected SHA-256, checked for shape.
    fn expected(&self) -> Result<Option<&str>, CliError> {
        match self.expect_sha256.as_deref() {
            Some(hex)
                if hex.len() != 64
                    || !hex
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) =>
            {
                Err(CliError::usage(
                    format!("--expect-sha256 {hex:?} is not 64 lowercase hex digits"),
                    None,
                ))
            }
            other => Ok(other),
        }
    }

    fn ceilings(&self) -> Ceilings {
        Ceilings {
            compressed: self.max_bundle_bytes,
            expanded: self.max_expanded_bytes,
            members: self.max_members,
            member: self.max_file_bytes,
        }
    }
}

/// Verify a bundle file completely.
#[derive(Debug, clap::Args)]
#[command(after_help = VERIFY_HELP)]
pub struct VerifyArgs {
    /// The bundle file.
    file: PathBuf,
    #[command(flatten)]
    checks: Checks,
    /// Print the outcome as JSON.
    #[arg(long)]
    json: bool,
}

pub fn verify(globals: &Globals, args: VerifyArgs) -> Result<Exit, CliError> {
    let expected = args.checks.expected()?;
    let scratch = std::env::temp_dir();
    match verify::verify(&args.file, expected, &args.checks.ceilings(), &scratch) {
        Ok(staged) => {
            let verified = &staged.verified;
            if args.json {
                print_json(verified)?;
            } else if !globals.quiet {
                outln!(
                    "valid bundle: {} component(s), {} file(s), {} record(s)",
                    verified.components.len(),
                    verified.files,
                    verified.rows
                );
                outln!("  sha256       {}", verified.sha256);
                outln!("  bundle root  {}", verified.bundle_root);
            }
            Ok(Exit::Ok)
        }
        Err(BundleError::Invalid(reason)) => {
            errln!(
                "error: {} is not a valid bundle: {reason}",
                args.file.display()
            );
            Ok(Exit::Failure)
        }
        Err(BundleError::Io(error)) => Err(CliError::Archive(ArchiveError::Io(error))),
    }
}

const IMPORT_HELP: &str = "\
Verifies the bundle completely (as verify-bundle does, under the importer's ceilings) in a
private staging folder inside the archive, then publishes every run and artifact the
archive does not hold yet, as one write under the writer lock: all of them or none. A run
or artifact the archive already holds with the same root is left as it is, so importing the
same bundle again changes nothing; one it holds with another root (or an open run, or an
ID that differs only in letter case) is a conflict, and nothing is imported. The history
records the import with the bundle's SHA-256 and root (`babel log` shows them).

Exits 0 when imported or already present, 1 for an invalid bundle or a conflict;
`babel --help` lists every exit code.

Examples:
  babel import-bundle study.tar.zst
  babel import-bundle study.tar.zst --expect-sha256 3f2a...";

/// Import a release bundle's runs and artifacts into this archive, verified first.
#[derive(Debug, clap::Args)]
#[command(after_help = IMPORT_HELP)]
pub struct ImportArgs {
    /// The bundle file.
    file: PathBuf,
    #[command(flatten)]
    checks: Checks,
    /// Print the outcome as JSON.
    #[arg(long)]
    json: bool,
}

pub fn import(globals: &Globals, args: ImportArgs) -> Result<Exit, CliError> {
    let expected = args.checks.expected()?;
    let archive = globals.archive()?;
    let session = globals.write_session(&archive)?;
    match babel::bundle::import::import(&session, &args.file, expected, &args.checks.ceilings()) {
        Ok(imported) => {
            if args.json {
                print_json(&imported)?;
            } else if !globals.quiet {
                print_imported(&imported);
            }
            Ok(Exit::Ok)
        }
        Err(ImportError::Invalid(reason)) => {
            // A reason may list findings below its first line.
            let (first, more) = reason.split_once('\n').unwrap_or((&reason, ""));
            errln!(
                "error: {} is not a valid bundle: {first}; nothing was imported",
                args.file.display()
            );
            if !more.is_empty() {
                errln!("{more}");
            }
            Ok(Exit::Failure)
        }
        Err(ImportError::Conflict(reason)) => {
            errln!("error: {reason}; nothing was imported");
            errln!();
            errln!(
                "hint: a run or artifact never changes once published; import the bundle into another archive, or ask its author which is right"
            );
            Ok(Exit::Failure)
        }
        Err(ImportError::Archive(error)) => Err(error.into()),
    }
}

/// What an import of a bundle published, and what the archive held already.
fn print_imported(imported: &babel::bundle::import::Imported) {
    if imported.published.is_empty() {
        outln!(
            "nothing to import: the archive already holds all {} run(s) and artifact(s) of this bundle, identical",
            imported.already_present.len()
        );
        return;
    }
    outln!(
        "imported bundle {} (root {})",
        imported.sha256,
        imported.bundle_root
    );
    for name in &imported.published {
        outln!("  {name}");
    }
    for name in &imported.already_present {
        outln!("  {name} (already here, identical)");
    }
}
