//! Publishing an archive to a Hugging Face Hub dataset repository and restoring it from
//! one pinned commit, over the Hub's HTTP API (plain Git LFS, "basic" transfer; no Xet).
//!
//! Owns: the HTTP client and its safety rules (token only to the endpoint origin, manual
//! redirects, retries with backoff), the published file set ([`plan`]), the one-commit
//! upload ([`push`]) and the verified download into a staging folder ([`pull`]). It reads
//! archives through `archive` and never writes under an existing archive root: a pull
//! writes only inside its staging folder until the restored archive has been initialized
//! and validated, and then moves it into place.

pub mod api;
pub mod card;
pub mod checksums;
pub mod client;
pub mod config;
pub mod digest;
pub mod paths;
pub mod plan;
pub mod pull;
pub mod push;
pub mod retry;

use std::fmt;
use std::time::Duration;

use crate::archive::ArchiveError;
use crate::archive::validate::ValidationReport;
use crate::durable::PathIoError;

/// The branch babel pushes to and resolves when a commit is not given.
pub const BRANCH: &str = "main";

/// Everything that can go wrong talking to the Hub or checking what it sent.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// The command cannot be carried out as given.
    #[error("{message}")]
    Usage {
        message: String,
        hint: Option<String>,
    },
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    #[error(transparent)]
    Io(#[from] PathIoError),
    /// The archive has validation findings; nothing is published from it.
    #[error("the archive has {} validation finding(s); babel publishes only an archive that validates", .0.findings.len())]
    ArchiveFaulty(Box<ValidationReport>),
    /// A file or path the plan would publish that a pull would refuse.
    #[error("{path}: {reason}")]
    Unpublishable { path: String, reason: String },
    /// The Hub could not be reached (connection, timeout, a body cut off).
    #[error("{what}: could not reach {url}: {reason}")]
    Network {
        what: String,
        url: String,
        reason: String,
    },
    /// The Hub kept answering 429 or 5xx until the retry budget ran out.
    #[error("{what}: the Hub answered HTTP {status} {attempts} time(s){}", waited_text(*.waited))]
    Unavailable {
        what: String,
        status: u16,
        attempts: u32,
        waited: Duration,
        detail: String,
    },
    /// The Hub asked for a wait longer than the remaining retry budget.
    #[error("{what}: the Hub answered HTTP {status} and asked babel to wait {} s, beyond its retry budget of {} s", .asked.as_secs(), .budget.as_secs())]
    RateLimited {
        what: String,
        status: u16,
        asked: Duration,
        budget: Duration,
    },
    /// The repository does not exist, or the token may not see it.
    #[error(
        "dataset repository {repo} was not found (or it is private and the token cannot read it)"
    )]
    RepoNotFound { repo: String, had_token: bool },
    /// The revision does not exist in the repository.
    #[error("revision {revision:?} was not found in {repo}")]
    RevisionNotFound { repo: String, revision: String },
    /// 401/403: the token is missing, invalid, or lacks the right.
    #[error("{what}: HTTP {status}: {message}")]
    Unauthorized {
        what: String,
        status: u16,
        message: String,
        had_token: bool,
    },
    /// Any other error status.
    #[error("{what}: HTTP {status}: {message}")]
    Http {
        what: String,
        status: u16,
        message: String,
    },
    /// The branch moved after babel planned: HTTP 412 on the commit.
    #[error("push refused by the Hub (HTTP 412): {repo} changed since babel planned this push against commit {planned}{}", now_text(.now))]
    StaleParent {
        repo: String,
        planned: String,
        now: Option<String>,
    },
    /// The commit request failed in a way that leaves its outcome unknown.
    #[error("commit to {repo}: {reason}")]
    CommitUncertain { repo: String, reason: String },
    /// The Hub answered something that breaks the protocol or a safety rule (an unsafe
    /// path, wrong bytes, a redirect babel will not follow, ...). Nothing is kept.
    #[error("{what}: {reason}")]
    Refused { what: String, reason: String },
    /// A file or the whole commit is larger than the pull's ceiling.
    #[error("{what}, more than the ceiling of {limit} bytes")]
    TooLarge {
        what: String,
        limit: u64,
        flag: &'static str,
    },
    /// The downloaded archive does not validate.
    #[error("the archive restored from commit {commit} has {} validation finding(s); nothing was moved into place", .report.findings.len())]
    RestoredFaulty {
        commit: String,
        staging: std::path::PathBuf,
        report: Box<ValidationReport>,
    },
    /// Several unsafe paths in a tree listing.
    #[error("the file list of {repo} at {commit} has {} unsafe path(s):\n{}", .problems.len(), .problems.iter().map(|p| format!("  {p}")).collect::<Vec<_>>().join("\n"))]
    UnsafeTree {
        repo: String,
        commit: String,
        problems: Vec<String>,
    },
}

fn waited_text(waited: Duration) -> String {
    if waited.is_zero() {
        String::new()
    } else {
        format!(" (retried for {:.1} s)", waited.as_secs_f64())
    }
}

fn now_text(now: &Option<String>) -> String {
    match now {
        Some(now) => format!("; the branch is now at {now}"),
        None => String::new(),
    }
}

impl HubError {
    /// A usage error with an optional hint.
    pub fn usage(message: impl Into<String>, hint: Option<&str>) -> Self {
        Self::Usage {
            message: message.into(),
            hint: hint.map(str::to_owned),
        }
    }

    /// True for failures of the network or of the Hub's availability (exit code 4).
    pub fn is_network(&self) -> bool {
        matches!(
            self,
            Self::Network { .. }
                | Self::Unavailable { .. }
                | Self::RateLimited { .. }
                | Self::CommitUncertain { .. }
        )
    }

    /// What the user can do next, when there is something to say.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Usage { hint, .. } => return hint.clone(),
            Self::Archive(error) => return error.hint(),
            Self::ArchiveFaulty(_) => {
                "fix the findings listed above (`babel validate` shows them too), then plan again"
                    .into()
            }
            Self::Unpublishable { .. } => {
                "rename or remove the file: a pull would refuse it, so babel does not publish it"
                    .into()
            }
            Self::Network { .. } => {
                "check the connection and HF_ENDPOINT, then run the command again".into()
            }
            Self::Unavailable { .. } | Self::RateLimited { .. } => {
                "the Hub is busy or rate-limiting this token; try again later".into()
            }
            Self::RepoNotFound { had_token, .. } => {
                if *had_token {
                    "check OWNER/NAME; for a private repository the token needs read access; `babel hub-push --create` creates it".into()
                } else {
                    "check OWNER/NAME; a private repository needs a token (set HF_TOKEN); `babel hub-push --create` creates it".into()
                }
            }
            Self::RevisionNotFound { .. } => {
                "pass the 40-hex commit ID that `babel hub-push` printed (or the one the paper cites)"
                    .into()
            }
            Self::Unauthorized { had_token, .. } => {
                if *had_token {
                    "the token is invalid or lacks this right: writing needs a write token for the repository's namespace (HF_TOKEN, or the token file at $HF_TOKEN_PATH / $HF_HOME/token)".into()
                } else {
                    "set HF_TOKEN to a Hugging Face access token (or store one at $HF_HOME/token, e.g. with `hf auth login`)".into()
                }
            }
            Self::StaleParent { repo, .. } => format!(
                "someone else pushed; nothing was changed and nothing was retried. Run `babel hub-plan --repo {repo}` to see the difference, then push again"
            ),
            Self::CommitUncertain { repo, .. } => format!(
                "the Hub may or may not have made the commit; run `babel hub-plan --repo {repo}` to see whether it holds this archive before pushing again"
            ),
            Self::TooLarge { flag, .. } => format!(
                "nothing was downloaded; if you expect files this large, raise the ceiling with {flag} SIZE (e.g. {flag} 200GiB)"
            ),
            Self::RestoredFaulty { staging, .. } => format!(
                "the commit holds a damaged archive (the findings are listed above); the downloaded files stay in {} for inspection; delete that folder when done",
                staging.display()
            ),
            Self::Refused { .. } => {
                "babel stopped because the Hub's answer broke its rules; nothing was published or restored (a pull keeps its verified files in DIR/.babel-pull-<commit> and reuses them next time)".into()
            }
            Self::UnsafeTree { .. } => {
                "nothing was downloaded; babel restores only commits whose every path is safe on every filesystem".into()
            }
            _ => return None,
        })
    }
}

/// A Hub repository ID, `OWNER/NAME`, checked against the Hub's naming rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoId {
    namespace: String,
    name: String,
}

impl RepoId {
    /// Parses `OWNER/NAME`: each part 1 to 96 characters from `A-Z a-z 0-9 - _ .`, not
    /// starting or ending with `-` or `.`, without `--` or `..`.
    pub fn parse(text: &str) -> Result<Self, HubError> {
        let fail = |why: &str| {
            HubError::usage(
                format!("invalid repository {text:?}: {why}"),
                Some("write --repo OWNER/NAME, e.g. --repo my-lab/eval-archive"),
            )
        };
        let Some((namespace, name)) = text.split_once('/') else {
            return Err(fail("it is not OWNER/NAME"));
        };
        for part in [namespace, name] {
            let valid = !part.is_empty()
                && part.len() <= 96
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
                && !part.starts_with(['-', '.'])
                && !part.ends_with(['-', '.'])
                && !part.contains("--")
                && !part.contains("..");
            if !valid {
                return Err(fail(
                    "each part has 1 to 96 letters, digits, '-', '_' or '.', and does not start or end with '-' or '.'",
                ));
            }
        }
        Ok(Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        })
    }

    /// The owner (user or organization).
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The repository name within its namespace.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for RepoId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A git commit ID: exactly 40 lowercase hexadecimal digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CommitId(String);

impl CommitId {
    /// Accepts exactly 40 lowercase hex digits.
    pub fn parse(text: &str) -> Option<Self> {
        is_lower_hex(text, 40).then(|| Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CommitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// True when `text` is exactly `len` lowercase hexadecimal digits.
pub fn is_lower_hex(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Observes long transfers (bytes sent or received), for progress bars.
pub trait Progress: Send + Sync {
    /// A transfer of `files` files and `bytes` bytes in all is starting.
    fn begin(&self, _label: &str, _files: usize, _bytes: u64) {}
    /// Work on one file starts.
    fn file(&self, _path: &str) {}
    /// `bytes` more bytes went over the wire.
    fn advance(&self, _bytes: u64) {}
    /// The transfer is over.
    fn finish(&self) {}
}

/// A [`Progress`] that shows nothing.
pub struct NoProgress;
impl Progress for NoProgress {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_ids_follow_the_hub_naming_rules() {
        let id = RepoId::parse("my-lab/eval.archive_2").unwrap();
        assert_eq!((id.namespace(), id.name()), ("my-lab", "eval.archive_2"));
        assert_eq!(id.to_string(), "my-lab/eval.archive_2");
        for bad in [
            "noslash", "a/b/c", "/x", "x/", "a/-x", "a/x.", "a/x--y", "a/x..y", "a/x y", "a/é",
            "../x",
        ] {
            assert!(RepoId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn commit_ids_are_forty_lowercase_hex_digits() {
        assert!(CommitId::parse(&"a".repeat(40)).is_some());
        for bad in [
            "a".repeat(39),
            "A".repeat(40),
            "g".repeat(40),
            "main".into(),
        ] {
            assert!(CommitId::parse(&bad).is_none(), "{bad}");
        }
    }
}
