//! How the binary speaks: errors on stderr as `error: …`, a blank line, then `hint: …`;
//! exit codes; JSON on stdout for `--json`. No colour is used, so `NO_COLOR` holds trivially.

use std::io::{self, Write};
use std::process::ExitCode;

use babel::archive::ArchiveError;
use babel::archive::validate::Finding;
use babel::hub::HubError;

/// The documented exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: success.
    Ok = 0,
    /// 1: findings, rejected input, or a failed operation.
    Failure = 1,
    /// 2: the command cannot be carried out as given.
    Usage = 2,
    /// 3: another writer holds the archive lock.
    Busy = 3,
    /// 4: the network or the Hub failed (unreachable, timed out, still busy after retries).
    Network = 4,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit as u8)
    }
}

/// An error as the binary reports it.
#[derive(Debug)]
pub enum CliError {
    Archive(ArchiveError),
    Hub(HubError),
    Usage {
        message: String,
        hint: Option<String>,
    },
    Io(io::Error),
}

impl CliError {
    /// A usage error with an optional hint.
    pub fn usage(message: impl Into<String>, hint: Option<&str>) -> Self {
        Self::Usage {
            message: message.into(),
            hint: hint.map(str::to_owned),
        }
    }

    fn exit(&self) -> Exit {
        match self {
            Self::Usage { .. } => Exit::Usage,
            Self::Io(_) => Exit::Failure,
            Self::Archive(error) => archive_exit(error),
            Self::Hub(error) if error.is_network() => Exit::Network,
            Self::Hub(HubError::Usage { .. }) => Exit::Usage,
            Self::Hub(HubError::Archive(error)) => archive_exit(error),
            Self::Hub(_) => Exit::Failure,
        }
    }
}

fn archive_exit(error: &ArchiveError) -> Exit {
    match error {
        ArchiveError::Busy(_) => Exit::Busy,
        ArchiveError::NotAnArchive { .. }
        | ArchiveError::InvalidId(_)
        | ArchiveError::UnknownRun { .. }
        | ArchiveError::RunExists { .. }
        | ArchiveError::RunCaseClash { .. }
        | ArchiveError::Usage { .. } => Exit::Usage,
        _ => Exit::Failure,
    }
}

impl From<HubError> for CliError {
    fn from(error: HubError) -> Self {
        Self::Hub(error)
    }
}

/// One validation finding as `validate` prints it.
pub fn finding_line(finding: &Finding) -> String {
    match (finding.line, finding.row) {
        (Some(line), _) => format!(
            "{}:{line}: [{}] {}",
            finding.path, finding.check, finding.message
        ),
        (None, Some(row)) => format!(
            "{} row {row}: [{}] {}",
            finding.path, finding.check, finding.message
        ),
        (None, None) => format!("{}: [{}] {}", finding.path, finding.check, finding.message),
    }
}

impl From<ArchiveError> for CliError {
    fn from(error: ArchiveError) -> Self {
        Self::Archive(error)
    }
}

impl From<io::Error> for CliError {
    fn from(error: io::Error) -> Self {
        Self::Io(error)
    }
}

/// Prints an error (with its details and hint) and gives its exit code.
pub fn report(error: &CliError) -> ExitCode {
    let mut stderr = io::stderr().lock();
    let (message, hint) = match error {
        CliError::Usage { message, hint } => (message.clone(), hint.clone()),
        CliError::Io(e) if e.kind() == io::ErrorKind::BrokenPipe => return Exit::Ok.into(),
        CliError::Io(e) => (e.to_string(), None),
        CliError::Archive(e) => (e.to_string(), e.hint()),
        CliError::Hub(e) => (e.to_string(), e.hint()),
    };
    let _ = writeln!(stderr, "error: {message}");
    if let CliError::Hub(
        HubError::ArchiveFaulty(report) | HubError::RestoredFaulty { report, .. },
    ) = error
    {
        for finding in &report.findings {
            let _ = writeln!(stderr, "  {}", finding_line(finding));
        }
    }
    if let CliError::Archive(ArchiveError::Rejected(report)) = error {
        for rejection in &report.rejections {
            let _ = writeln!(stderr, "  {rejection}");
        }
        let unlisted = report.rejected_total - report.rejections.len();
        if unlisted > 0 {
            let _ = writeln!(stderr, "  … and {unlisted} more");
        }
    }
    if let Some(hint) = hint {
        let _ = writeln!(stderr, "\nhint: {hint}");
    }
    error.exit().into()
}

/// Writes a value as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<(), CliError> {
    let mut stdout = io::stdout().lock();
    serde_json::to_writer_pretty(&mut stdout, value).map_err(io::Error::from)?;
    writeln!(stdout)?;
    Ok(())
}
