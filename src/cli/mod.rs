//! The command line: clap definitions and dispatch, one file per command group. Each
//! command turns parsed arguments into library calls and prints the result; nothing here
//! is logic a test would want to call directly.

#[macro_use]
mod output;
mod artifact;
mod attach;
mod bundle;
mod compare;
mod demo;
mod export_eee;
mod hub;
mod import;
mod init;
mod log;
mod matrix;
mod panel;
mod records;
mod run;
mod seal;
mod show;
mod validate;

use clap::{Parser, Subcommand};
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

pub use output::{CliError, Exit};

/// The closing text of `babel --help`: every exit code with its meaning, from [`Exit`],
/// wrapped here with a hanging indent (clap would wrap a long line back to the margin).
fn after_help() -> String {
    const WIDTH: usize = 92;
    let mut text = String::from("Exit codes:\n");
    for exit in Exit::ALL {
        let mut line = format!("  {}  ", exit as u8);
        let indent = line.len();
        for word in exit.meaning().split(' ') {
            if line.len() + word.len() > WIDTH && line.len() > indent {
                text.push_str(line.trim_end());
                text.push('\n');
                line = " ".repeat(indent);
            }
            line.push_str(word);
            line.push(' ');
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text.push_str("\nStart with `babel demo`, which builds a small archive from bundled examples.");
    text
}

/// babel keeps benchmark results of language-model evaluations in a local,
/// tamper-evident archive and compares them item by item.
#[derive(Debug, Parser)]
#[command(name = "babel", version, after_help = after_help(), max_term_width = 100)]
pub struct Cli {
    /// The archive root [default: $BABEL_ROOT, else the current directory].
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        env = "BABEL_ROOT",
        hide_env = true
    )]
    root: Option<PathBuf>,

    /// For writes: wait up to SECONDS for another writer to release the archive lock,
    /// instead of failing at once.
    #[arg(long, global = true, value_name = "SECONDS")]
    wait: Option<f64>,

    /// Print nothing but errors (no progress bars, no summaries).
    #[arg(long, short, global = true)]
    quiet: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Init(init::Args),
    /// Manage runs: `run create` opens one with its model, benchmark and metadata
    #[command(subcommand)]
    Run(run::RunCommand),
    Import(import::Args),
    Records(records::Args),
    Show(show::ShowArgs),
    List(show::ListArgs),
    Attach(attach::Args),
    Seal(seal::Args),
    Validate(validate::Args),
    Log(log::Args),
    ExportEee(export_eee::Args),
    Export(bundle::ExportArgs),
    VerifyBundle(bundle::VerifyArgs),
    ImportBundle(bundle::ImportArgs),
    Compare(compare::Args),
    Panel(panel::Args),
    Demo(demo::Args),
    /// Register, show and list item banks, protocols, model panels, calibrations and
    /// releases.
    #[command(subcommand, after_help = artifact::GROUP_EXAMPLES)]
    Artifact(artifact::ArtifactCommand),
    Matrix(matrix::Args),
    HubPlan(hub::PlanArgs),
    HubPush(hub::PushArgs),
    HubPull(hub::PullArgs),
}

/// What every command gets besides its own arguments.
pub struct Globals {
    pub root: PathBuf,
    pub wait: Option<Duration>,
    pub quiet: bool,
    /// The command line as typed, for the lock file.
    pub invocation: String,
}

impl Globals {
    /// Opens the archive at `--root`.
    pub fn archive(&self) -> Result<babel::archive::Archive, CliError> {
        Ok(babel::archive::Archive::open(&self.root)?)
    }

    /// Called once when a write must wait for the lock.
    pub fn announce_wait(&self) -> impl FnMut(&babel::archive::lock::LockHeld) + '_ {
        move |held| {
            if !self.quiet {
                errln!(
                    "Blocking: waiting for the archive lock {} held by {}",
                    held.path.display(),
                    held.holder.as_deref().unwrap_or("another process")
                );
            }
        }
    }

    /// The write session of this command on `archive`: the writer lock, taken as the
    /// command line names it, waiting as `--wait` says and announcing the wait.
    pub fn write_session<'a>(
        &self,
        archive: &'a babel::archive::Archive,
    ) -> Result<babel::archive::WriteSession<'a>, CliError> {
        Ok(archive.write_session(&self.invocation, self.wait, &mut self.announce_wait())?)
    }
}

impl Command {
    /// True for a command that writes: after its write commits, a lost stdout must not
    /// read as a reason to run it again.
    fn writes(&self) -> bool {
        matches!(
            self,
            Command::Init(_)
                | Command::Run(_)
                | Command::Import(_)
                | Command::Attach(_)
                | Command::Seal(_)
                | Command::Demo(_)
                | Command::Artifact(artifact::ArtifactCommand::Add(_))
                | Command::HubPush(_)
                | Command::HubPull(_)
                | Command::Export(_)
                | Command::ExportEee(_)
                | Command::ImportBundle(_)
        )
    }

    /// Runs the command.
    fn run(self, globals: &Globals) -> Result<Exit, CliError> {
        match self {
            Command::Init(args) => init::run(globals, args),
            Command::Run(command) => run::run(globals, command),
            Command::Import(args) => import::run(globals, args),
            Command::Records(args) => records::run(globals, args),
            Command::Show(args) => show::show(globals, args),
            Command::List(args) => show::list(globals, args),
            Command::Attach(args) => attach::run(globals, args),
            Command::Seal(args) => seal::run(globals, args),
            Command::Validate(args) => validate::run(globals, args),
            Command::Log(args) => log::run(globals, args),
            Command::ExportEee(args) => export_eee::run(globals, args),
            Command::Export(args) => bundle::export(globals, args),
            Command::VerifyBundle(args) => bundle::verify(globals, args),
            Command::ImportBundle(args) => bundle::import(globals, args),
            Command::Compare(args) => compare::run(globals, args),
            Command::Panel(args) => panel::run(globals, args),
            Command::Demo(args) => demo::run(globals, args),
            Command::Artifact(command) => artifact::run(globals, command),
            Command::Matrix(args) => matrix::run(globals, args),
            Command::HubPlan(args) => hub::plan(globals, args),
            Command::HubPush(args) => hub::push(globals, args),
            Command::HubPull(args) => hub::pull(globals, args),
        }
    }
}

/// An argument that is not UTF-8 (a file name in another encoding) is refused whole,
/// rather than guessed at.
fn refuse_non_utf8_arguments() -> Result<(), CliError> {
    match std::env::args_os().find(|a| a.to_str().is_none()) {
        Some(argument) => Err(CliError::usage(
            format!(
                "the argument {:?} is not valid UTF-8",
                argument.to_string_lossy()
            ),
            Some("rename the file (or link it) to a UTF-8 name"),
        )),
        None => Ok(()),
    }
}

/// The global options of `cli`, checked, with the clock the environment may pin.
fn globals(cli: &Cli) -> Result<Globals, CliError> {
    let wait = match cli.wait.map(Duration::try_from_secs_f64) {
        None => None,
        Some(Ok(wait)) => Some(wait),
        Some(Err(_)) => {
            return Err(CliError::usage(
                "--wait takes a number of seconds (0 or more)",
                None,
            ));
        }
    };
    if let Ok(pinned) = std::env::var(babel::clock::TIMESTAMP_ENV)
        && !babel::clock::is_rfc3339_utc(&pinned)
    {
        return Err(CliError::usage(
            format!(
                "{} is {pinned:?}, not a timestamp like 2026-12-02T12:00:00Z",
                babel::clock::TIMESTAMP_ENV
            ),
            Some("unset it, or give an RFC 3339 UTC time"),
        ));
    }
    Ok(Globals {
        root: cli.root.clone().unwrap_or_else(|| PathBuf::from(".")),
        wait,
        quiet: cli.quiet,
        invocation: std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" "),
    })
}

/// The exit code of a command's `result`, given whether it `writes` and whether its
/// output reached stdout.
fn exit_code(result: Result<Exit, CliError>, writes: bool) -> ExitCode {
    match (result, output::stdout_failure()) {
        (Ok(exit), None) => exit.into(),
        // The reader closed the pipe (`babel records r1 | head`): it has what it wanted.
        (Ok(exit), Some(io::ErrorKind::BrokenPipe)) if !writes => exit.into(),
        (Err(CliError::Io(_)), Some(io::ErrorKind::BrokenPipe)) if !writes => Exit::Ok.into(),
        (Ok(_) | Err(CliError::Io(_)), Some(kind)) if writes => {
            errln!(
                "note: the command completed and its write is committed, but its output could not be written to stdout ({}); do not run it again",
                io::Error::from(kind)
            );
            Exit::OutputLost.into()
        }
        (Ok(_) | Err(CliError::Io(_)), Some(kind)) => {
            errln!(
                "error: could not write the output to stdout: {}",
                io::Error::from(kind)
            );
            Exit::OutputLost.into()
        }
        (Err(error), _) => output::report(&error),
    }
}

/// Parses the command line, runs the command, and turns the outcome into an exit code.
pub fn main() -> ExitCode {
    if let Err(error) = refuse_non_utf8_arguments() {
        return output::report(&error);
    }
    let cli = Cli::parse();
    let globals = match globals(&cli) {
        Ok(globals) => globals,
        Err(error) => return output::report(&error),
    };
    let writes = cli.command.writes();
    exit_code(cli.command.run(&globals), writes)
}

/// Parses a list of run ID arguments.
pub fn run_ids(texts: &[String]) -> Result<Vec<babel::archive::layout::RunId>, CliError> {
    texts.iter().map(|text| run_id(text)).collect()
}

/// Parses a run ID argument.
pub fn run_id(text: &str) -> Result<babel::archive::layout::RunId, CliError> {
    babel::archive::layout::RunId::parse(text).map_err(|e| CliError::usage(e.to_string(), None))
}
