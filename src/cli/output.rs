//! How the binary speaks: errors on stderr as `error: …`, a blank line, then `hint: …`;
//! exit codes; JSON on stdout for `--json`. No colour is used, so `NO_COLOR` holds trivially.
//!
//! Everything the commands print goes through [`stdout`] and [`stderr`] (the `outln!` and
//! `errln!` macros): they escape terminal control characters, so a name read from input
//! (`ESC[31m` in a benchmark or model) shows as `\u001b[31m` and cannot drive the
//! terminal; and they never panic. A failed write to stdout is remembered, and `main`
//! turns it into its own exit code (5), never the code of findings; after a write command
//! it says that the write committed regardless, rather than inviting a retry that would
//! import twice.

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Mutex;

/// Prints a line on stdout through [`stdout`]; a failure is remembered, never a panic.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!($crate::cli::output::stdout(), $($arg)*);
    }};
}

/// Prints a line on stderr through [`stderr`]; never panics.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!($crate::cli::output::stderr(), $($arg)*);
    }};
}

/// The first failure to write stdout, if any.
static STDOUT_FAILURE: Mutex<Option<io::ErrorKind>> = Mutex::new(None);

/// The first failure to write stdout during this run (a closed pipe, a full disk).
pub fn stdout_failure() -> Option<io::ErrorKind> {
    *STDOUT_FAILURE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A writer that escapes terminal control characters on their way to `inner`, and (for
/// stdout) remembers a failure.
pub struct Terminal<W: Write> {
    inner: W,
    remember_failure: bool,
}

/// Stdout, escaped and failure-remembering.
pub fn stdout() -> Terminal<io::StdoutLock<'static>> {
    Terminal {
        inner: io::stdout().lock(),
        remember_failure: true,
    }
}

/// Stderr, escaped.
pub fn stderr() -> Terminal<io::StderrLock<'static>> {
    Terminal {
        inner: io::stderr().lock(),
        remember_failure: false,
    }
}

/// True for a byte that starts a control character to escape: C0 but LF and TAB, DEL,
/// and the lead byte of a UTF-8-encoded C1 control (U+0080–U+009F is `C2 80`–`C2 9F`).
fn is_control_start(bytes: &[u8], at: usize) -> Option<(char, usize)> {
    match bytes[at] {
        b'\n' | b'\t' => None,
        b @ (0x00..=0x1f | 0x7f) => Some((char::from(b), 1)),
        0xc2 => match bytes.get(at + 1) {
            Some(&next @ 0x80..=0x9f) => Some((char::from_u32(u32::from(next)).unwrap_or('?'), 2)),
            _ => None,
        },
        _ => None,
    }
}

/// `bytes` with every control character written as `\uXXXX` (valid inside JSON strings,
/// where C1 controls and DEL are the only ones serde_json leaves raw).
pub fn escape_controls(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if !(0..bytes.len()).any(|at| is_control_start(bytes, at).is_some()) {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let mut at = 0;
    while at < bytes.len() {
        match is_control_start(bytes, at) {
            Some((control, len)) => {
                out.extend_from_slice(format!("\\u{:04x}", u32::from(control)).as_bytes());
                at += len;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

impl<W: Write> Terminal<W> {
    fn remember<T>(&self, result: io::Result<T>) -> io::Result<T> {
        if let Err(error) = &result
            && self.remember_failure
        {
            let mut failure = STDOUT_FAILURE.lock().unwrap_or_else(|e| e.into_inner());
            failure.get_or_insert(error.kind());
        }
        result
    }
}

impl<W: Write> Write for Terminal<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let escaped = escape_controls(buf);
        let result = self.inner.write_all(&escaped).map(|()| buf.len());
        self.remember(result)
    }

    fn flush(&mut self) -> io::Result<()> {
        let result = self.inner.flush();
        self.remember(result)
    }
}

use babel::archive::ArchiveError;
use babel::hub::HubError;
use babel::hub::config::HubConfig;

/// The exit codes: the one list of them. `babel --help` prints each code's [`Exit::meaning`]
/// and README.md's "Exit codes" table repeats it word for word (a test compares them);
/// [`CliError::exit`] is the one place that gives an error its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Success; for validate, no finding.
    Ok = 0,
    /// Findings (validate, a damaged run in list, a faulty history in log), rejected input
    /// (an import, a payload, a bundle), an I/O error, or another failed operation.
    Failure = 1,
    /// The command cannot be carried out as given: bad arguments, an unknown run or
    /// artifact, not an archive, a run whose state forbids the command (a write to a
    /// sealed run, an export of an open one), a selection that may not be compared, an
    /// output that exists or lies inside the archive.
    Usage = 2,
    /// Another writer holds the archive lock.
    Busy = 3,
    /// The network or the Hub failed (unreachable, timed out, still busy after retries).
    Network = 4,
    /// The output could not be written to stdout (a closed pipe, a full disk); after a
    /// write command, its write committed regardless: do not run it again.
    OutputLost = 5,
}

impl Exit {
    /// Every code, in order.
    pub const ALL: [Exit; 6] = [
        Exit::Ok,
        Exit::Failure,
        Exit::Usage,
        Exit::Busy,
        Exit::Network,
        Exit::OutputLost,
    ];

    /// What the code means, as `babel --help` and README.md say it.
    pub fn meaning(self) -> &'static str {
        match self {
            Exit::Ok => "success",
            Exit::Failure => "findings (validate), rejected input, or a failed operation",
            Exit::Usage => {
                "usage: bad arguments, an unknown run or artifact, not an archive, a run whose state forbids the command (sealed, or open), a refused selection or output path"
            }
            Exit::Busy => {
                "busy: another writer holds the archive lock (its PID and command are printed)"
            }
            Exit::Network => "network failure",
            Exit::OutputLost => {
                "the output could not be written to stdout (a full disk, a closed pipe a write command was printing to); after a write command, its write committed: do not run it again"
            }
        }
    }
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

    /// The exit code of this error, whichever command raised it.
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
        | ArchiveError::RunSealed { .. }
        | ArchiveError::Usage { .. } => Exit::Usage,
        // An unknown artifact is a usage error, like an unknown run, whichever command
        // names it.
        ArchiveError::Artifact(inner)
            if matches!(
                **inner,
                babel::archive::artifacts::ArtifactError::Unknown { .. }
            ) =>
        {
            Exit::Usage
        }
        _ => Exit::Failure,
    }
}

impl From<HubError> for CliError {
    fn from(error: HubError) -> Self {
        Self::Hub(error)
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

/// `text` with the configured Hub token (if any) replaced by `hf_***`: for every message
/// that may quote a Hub server's answer.
pub fn redacted(text: &str) -> String {
    match HubConfig::from_env().ok().and_then(|config| config.token) {
        Some(token) => token.redact(text),
        None => text.to_owned(),
    }
}

/// Prints an error (with its details and hint) and gives its exit code. The Hub token is
/// redacted from all of it: a Hub error may quote what a server answered, and a server can
/// echo the token it was sent.
pub fn report(error: &CliError) -> ExitCode {
    use std::fmt::Write as _;
    let (message, hint) = match error {
        CliError::Usage { message, hint } => (message.clone(), hint.clone()),
        CliError::Io(e) if e.kind() == io::ErrorKind::BrokenPipe => return Exit::Ok.into(),
        CliError::Io(e) => (e.to_string(), None),
        CliError::Archive(e) => (e.to_string(), e.hint()),
        CliError::Hub(e) => (e.to_string(), e.hint()),
    };
    let mut text = format!("error: {message}\n");
    if let CliError::Hub(
        HubError::ArchiveFaulty(report) | HubError::RestoredFaulty { report, .. },
    )
    | CliError::Archive(ArchiveError::Faulty { report, .. }) = error
    {
        for finding in &report.findings {
            let _ = writeln!(text, "  {finding}");
        }
    }
    if let CliError::Archive(ArchiveError::Rejected(report)) = error {
        for rejection in &report.rejections {
            let _ = writeln!(text, "  {rejection}");
        }
        let unlisted = report.rejected_total - report.rejections.len();
        if unlisted > 0 {
            let _ = writeln!(text, "  … and {unlisted} more");
        }
    }
    if let Some(hint) = hint {
        let _ = writeln!(text, "\nhint: {hint}");
    }
    let _ = stderr().write_all(redacted(&text).as_bytes());
    error.exit().into()
}

/// A byte progress bar on stderr, styled alike for every command; hidden when `hidden`
/// (--quiet, --json), and by indicatif itself when stderr is not a terminal.
pub fn progress_bar(hidden: bool) -> indicatif::ProgressBar {
    let target = if hidden {
        indicatif::ProgressDrawTarget::hidden()
    } else {
        indicatif::ProgressDrawTarget::stderr()
    };
    let bar = indicatif::ProgressBar::with_draw_target(None, target);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} {wide_bar} {bytes}/{total_bytes} ({eta})")
    {
        bar.set_style(style);
    }
    bar
}

/// The width of a text column: its widest cell, and at least its title.
pub fn column_width<T>(rows: &[T], title: &str, cell: impl Fn(&T) -> usize) -> usize {
    rows.iter().map(cell).max().unwrap_or(0).max(title.len())
}

/// Writes a value as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<(), CliError> {
    let mut stdout = stdout();
    serde_json::to_writer_pretty(&mut stdout, value).map_err(io::Error::from)?;
    writeln!(stdout)?;
    Ok(())
}
