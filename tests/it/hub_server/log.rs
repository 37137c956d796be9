//! The request log: every request any listener received, with the status it
//! was answered, so tests can assert what a client sent and to whom.

use std::fmt;

use super::http::Request;

/// Which of the server's listeners a request reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// The Hub API and file routes (`HF_ENDPOINT`).
    Hub,
    /// The storage origin that LFS uploads go to and LFS downloads redirect to.
    Cdn,
    /// An unrelated third origin that hostile redirects point at.
    Foreign,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Hub => "hub",
            Origin::Cdn => "cdn",
            Origin::Foreign => "foreign",
        })
    }
}

/// Bodies above this size are kept only as a prefix; `body_len` has the full size.
const KEPT_BODY_BYTES: usize = 1024 * 1024;

/// One request as it arrived, and how it was answered.
#[derive(Clone, Debug)]
pub struct LoggedRequest {
    /// Arrival order across all origins, from 0.
    pub seq: usize,
    /// The listener that received it.
    pub origin: Origin,
    /// That listener's port.
    pub port: u16,
    /// The method as sent.
    pub method: String,
    /// Path and query, still percent-encoded.
    pub target: String,
    /// All header fields as sent, `Authorization` included verbatim (tokens
    /// here are test fixtures, and tests assert exactly which one arrived).
    pub headers: Vec<(String, String)>,
    /// The body, or its first MiB.
    pub body: Vec<u8>,
    /// The full body length.
    pub body_len: usize,
    /// The status answered (0 if the connection was closed with no response).
    pub status: u16,
    /// False when no route of this server knew the request (answered 404).
    pub routed: bool,
}

impl LoggedRequest {
    pub(super) fn new(seq: usize, port: u16, request: &Request) -> LoggedRequest {
        LoggedRequest {
            seq,
            origin: request.origin,
            port,
            method: request.method.clone(),
            target: request.target.clone(),
            headers: request.headers.clone(),
            body: request.body[..request.body.len().min(KEPT_BODY_BYTES)].to_vec(),
            body_len: request.body.len(),
            status: 0,
            routed: true,
        }
    }

    /// The path part of the target, still percent-encoded.
    pub fn path(&self) -> &str {
        self.target
            .split_once('?')
            .map_or(&self.target, |(path, _)| path)
    }

    /// The query string, if any.
    pub fn query(&self) -> Option<&str> {
        self.target.split_once('?').map(|(_, query)| query)
    }

    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// Whether the request carried an `Authorization` header at all.
    pub fn has_authorization(&self) -> bool {
        self.header("authorization").is_some()
    }

    /// The body as text (lossy), for NDJSON and JSON assertions.
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl fmt::Display for LoggedRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "#{} {} {} {} -> {}{}",
            self.seq,
            self.origin,
            self.method,
            self.target,
            self.status,
            if self.has_authorization() {
                " (auth)"
            } else {
                ""
            }
        )
    }
}
