//! Hostile behaviour a test can switch on: per-file faults in what is
//! served, extra (hostile) tree entries, and failures of the next requests.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::http::{Request, Response};
use super::log::Origin;

/// A misbehaviour of the server when it serves one file.
///
/// Faults change only what a GET of the file's bytes returns (on the Hub
/// origin for regular files, on the CDN for LFS files). HEAD, the tree
/// listing and repo info keep the true size and ids, which is what makes
/// each fault detectable by a careful client.
#[derive(Clone, Debug)]
pub enum FileFault {
    /// The body is the true content followed by `extra`.
    ExtraBytes {
        extra: Vec<u8>,
        length: LengthHeader,
    },
    /// The body is these bytes instead of the content (a hash mismatch).
    WrongBytes(Vec<u8>),
    /// The resolve answers 302 to the foreign origin, which serves the true
    /// bytes and logs whether it received a token.
    RedirectToForeign,
    /// The resolve answers 302 to itself (with a fresh query each hop), forever.
    RedirectLoop,
    /// The next `times` GETs send `after` body bytes, then drop the connection.
    DropAfter { after: usize, times: usize },
    /// Every GET sends `chunk` bytes, then waits `delay`, until done.
    Slow { chunk: usize, delay: Duration },
}

/// What `Content-Length` a `FileFault::ExtraBytes` body declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LengthHeader {
    /// The length actually sent (content plus extra).
    Actual,
    /// The true content length; the extra bytes follow anyway, then the
    /// connection closes.
    Original,
    /// No length: a chunked body.
    Omitted,
}

/// How a GET body is altered, once a fault has been taken for one request.
#[derive(Clone, Debug)]
pub(super) enum BodyFault {
    ExtraBytes {
        extra: Vec<u8>,
        length: LengthHeader,
    },
    WrongBytes(Vec<u8>),
    DropAfter(usize),
    Slow {
        chunk: usize,
        delay: Duration,
    },
}

/// Which requests a `Failure` applies to. Empty fields match anything.
#[derive(Clone, Debug, Default)]
pub struct RequestMatch {
    origin: Option<Origin>,
    method: Option<String>,
    path_contains: Option<String>,
}

impl RequestMatch {
    /// Matches every request.
    pub fn any() -> RequestMatch {
        RequestMatch::default()
    }

    /// Only requests that reached this origin.
    pub fn origin(mut self, origin: Origin) -> RequestMatch {
        self.origin = Some(origin);
        self
    }

    /// Only requests with this method.
    pub fn method(mut self, method: &str) -> RequestMatch {
        self.method = Some(method.to_owned());
        self
    }

    /// Only requests whose raw (percent-encoded) path contains this text.
    pub fn path_contains(mut self, text: &str) -> RequestMatch {
        self.path_contains = Some(text.to_owned());
        self
    }

    fn matches(&self, request: &Request) -> bool {
        self.origin.is_none_or(|origin| origin == request.origin)
            && self
                .method
                .as_deref()
                .is_none_or(|method| method.eq_ignore_ascii_case(&request.method))
            && self
                .path_contains
                .as_deref()
                .is_none_or(|text| request.path().contains(text))
    }
}

/// An error response to answer instead of serving a request.
#[derive(Clone, Debug)]
pub struct Failure {
    status: u16,
    headers: Vec<(String, String)>,
}

impl Failure {
    /// A failure with this status and no extra headers.
    pub fn status(status: u16) -> Failure {
        Failure {
            status,
            headers: Vec::new(),
        }
    }

    /// 429 with `Retry-After: <seconds>`.
    pub fn too_many_requests(retry_after_seconds: u64) -> Failure {
        Failure::status(429).with_header("Retry-After", &retry_after_seconds.to_string())
    }

    /// 503 with no `Retry-After`.
    pub fn service_unavailable() -> Failure {
        Failure::status(503)
    }

    /// Adds the Hub's IETF-draft rate-limit headers announcing a reset in `seconds`.
    pub fn with_rate_limit(self, seconds: u64) -> Failure {
        self.with_header("RateLimit", &format!("\"api\";r=0;t={seconds}"))
            .with_header("RateLimit-Policy", "\"fixed window\";\"api\";q=500;w=300")
    }

    /// Adds any header, e.g. an HTTP-date `Retry-After`; one the error answer has already
    /// (`X-Error-Message`) is replaced.
    pub fn with_header(mut self, name: &str, value: &str) -> Failure {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub(super) fn response(&self) -> Response {
        let message = format!("failure injected by the test server (HTTP {})", self.status);
        let mut response = Response::hub_error(self.status, None, &message);
        for (name, value) in &self.headers {
            response
                .headers
                .retain(|(held, _)| !held.eq_ignore_ascii_case(name));
            response.headers.push((name.clone(), value.clone()));
        }
        response
    }
}

struct FailureRule {
    remaining: usize,
    matching: RequestMatch,
    failure: Failure,
}

/// A file that appears in listings without being in any commit, under a
/// path the Hub itself would never accept.
#[derive(Clone, Debug)]
pub(super) struct ExtraEntry {
    pub path: String,
    pub bytes: Arc<Vec<u8>>,
}

#[derive(Default)]
pub(super) struct Faults {
    files: HashMap<(String, String), FileFault>,
    extra_entries: HashMap<String, Vec<ExtraEntry>>,
    failures: Vec<FailureRule>,
}

impl Faults {
    pub fn set_file_fault(&mut self, repo: &str, path: &str, fault: FileFault) {
        self.files.insert((repo.to_owned(), path.to_owned()), fault);
    }

    pub fn add_extra_entry(&mut self, repo: &str, entry: ExtraEntry) {
        self.extra_entries
            .entry(repo.to_owned())
            .or_default()
            .push(entry);
    }

    pub fn extra_entries(&self, repo: &str) -> &[ExtraEntry] {
        self.extra_entries.get(repo).map_or(&[], Vec::as_slice)
    }

    pub fn add_failures(&mut self, count: usize, matching: RequestMatch, failure: Failure) {
        self.failures.push(FailureRule {
            remaining: count,
            matching,
            failure,
        });
    }

    pub fn clear(&mut self) {
        *self = Faults::default();
    }

    /// The failure to answer `request` with, consuming one use of its rule.
    pub fn take_failure(&mut self, request: &Request) -> Option<Response> {
        let rule = self
            .failures
            .iter_mut()
            .find(|rule| rule.remaining > 0 && rule.matching.matches(request))?;
        rule.remaining -= 1;
        Some(rule.failure.response())
    }

    /// Whether the resolve of this file redirects (to foreign, or in a loop).
    pub fn redirect(&self, repo: &str, path: &str) -> Option<&FileFault> {
        self.files
            .get(&(repo.to_owned(), path.to_owned()))
            .filter(|fault| {
                matches!(
                    fault,
                    FileFault::RedirectToForeign | FileFault::RedirectLoop
                )
            })
    }

    /// The alteration of one GET body of this file, consuming one use of a
    /// counted fault.
    pub fn take_body_fault(&mut self, repo: &str, path: &str) -> Option<BodyFault> {
        let key = (repo.to_owned(), path.to_owned());
        let mut exhausted = false;
        let effect = match self.files.get_mut(&key)? {
            FileFault::ExtraBytes { extra, length } => Some(BodyFault::ExtraBytes {
                extra: extra.clone(),
                length: *length,
            }),
            FileFault::WrongBytes(bytes) => Some(BodyFault::WrongBytes(bytes.clone())),
            FileFault::DropAfter { after, times } => {
                let effect = (*times > 0).then_some(BodyFault::DropAfter(*after));
                *times = times.saturating_sub(1);
                exhausted = *times == 0;
                effect
            }
            FileFault::Slow { chunk, delay } => Some(BodyFault::Slow {
                chunk: *chunk,
                delay: *delay,
            }),
            FileFault::RedirectToForeign | FileFault::RedirectLoop => None,
        };
        if exhausted {
            self.files.remove(&key);
        }
        effect
    }
}
