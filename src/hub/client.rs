//! The HTTP client every Hub request goes through, and the rules it enforces:
//!
//! - the token travels only to the endpoint's origin (scheme, host and port). It lives in
//!   one client, used for nothing else; every other origin (the LFS storage behind
//!   presigned URLs, a redirect target) is reached through a second client that has no
//!   token at all;
//! - neither client follows redirects by itself (`redirect::Policy::none()`):
//!   [`HubClient::follow`] follows at most [`MAX_REDIRECTS`] hops, only to https (or to
//!   http when already on plain http, which only a loopback endpoint allows), never from
//!   https down to http, choosing the client again for every hop's origin;
//! - 429, 408 and 5xx answers and lost connections are retried as [`super::retry`] says,
//!   for requests that are safe to repeat; the commit is sent exactly once;
//! - a server's error message has the token redacted before it is shortened (a token cut
//!   in two is no longer found); the command line redacts every error it prints, since
//!   other messages quote a server's answer as it came.

use std::fs::File;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::blocking::{Body, Client, RequestBuilder, Response};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue, LOCATION};
use reqwest::{Method, Url, redirect};
use serde::de::DeserializeOwned;

use super::config::{HubConfig, check_scheme};
use super::retry::is_retryable_status;
use super::{HubError, Progress, RepoId};

/// The most redirects one download follows.
pub const MAX_REDIRECTS: usize = 5;
/// Timeout for connecting, and for waiting on each response and each body read.
pub const IO_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest error text quoted from a server.
const MAX_MESSAGE_CHARS: usize = 300;

/// To whom a request may carry the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials {
    /// The token is sent when the URL is on the endpoint's origin.
    EndpointOnly,
    /// Never (presigned storage URLs).
    Never,
}

/// What a request sends.
pub enum Payload {
    Empty,
    Bytes {
        bytes: Vec<u8>,
        content_type: &'static str,
    },
    /// Raw bytes sent without a content type (an LFS object held in memory).
    Raw(Arc<Vec<u8>>),
    /// A file streamed from disk (reopened for every attempt), reporting its progress.
    File {
        path: PathBuf,
        len: u64,
        progress: Arc<dyn Progress>,
    },
}

/// One request, described so that it can be sent again.
pub struct Call<'a> {
    pub method: Method,
    pub url: Url,
    /// What the request is for, as messages say it ("listing the files of x/y").
    pub what: &'a str,
    pub headers: HeaderMap,
    pub payload: Payload,
    pub credentials: Credentials,
    /// Whether a 429/5xx answer or a lost connection may be retried.
    pub retry: bool,
    /// Waiting time for the whole request to be sent and answered.
    pub timeout: Duration,
}

impl<'a> Call<'a> {
    /// A retried request with no body to the endpoint's origin.
    pub fn new(method: Method, url: Url, what: &'a str) -> Self {
        Self {
            method,
            url,
            what,
            headers: HeaderMap::new(),
            payload: Payload::Empty,
            credentials: Credentials::EndpointOnly,
            retry: true,
            timeout: IO_TIMEOUT,
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        if let Ok(value) = HeaderValue::from_str(value) {
            self.headers.insert(name, value);
        }
        self
    }

    /// Sets a JSON (or other) body held in memory.
    pub fn body(mut self, bytes: Vec<u8>, content_type: &'static str) -> Self {
        self.payload = Payload::Bytes {
            bytes,
            content_type,
        };
        self
    }
}

/// The Hub client: the endpoint, the token and two HTTP clients (see the module docs).
pub struct HubClient {
    config: HubConfig,
    authed: Option<Client>,
    anonymous: Client,
}

fn build_client(headers: HeaderMap) -> Result<Client, HubError> {
    Client::builder()
        .redirect(redirect::Policy::none())
        .user_agent(concat!("babel/", env!("CARGO_PKG_VERSION")))
        .default_headers(headers)
        .connect_timeout(IO_TIMEOUT)
        .timeout(IO_TIMEOUT)
        .build()
        .map_err(|error| HubError::Network {
            what: "starting the HTTP client".into(),
            url: String::new(),
            reason: error.to_string(),
        })
}

/// The innermost cause of a transport error, which is the one a user can act on.
fn transport_reason(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return format!("no answer within {} s (timed out)", IO_TIMEOUT.as_secs());
    }
    let mut reason = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        reason = cause.to_string();
        source = cause.source();
    }
    reason
}

struct ProgressReader {
    file: File,
    progress: Arc<dyn Progress>,
}

impl Read for ProgressReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.file.read(buf)?;
        self.progress.advance(read as u64);
        Ok(read)
    }
}

impl HubClient {
    /// A client for `config`.
    pub fn new(config: HubConfig) -> Result<Self, HubError> {
        let authed = match &config.token {
            Some(token) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {}", token.secret()))
                    .map_err(|_| {
                        HubError::usage(
                            "the Hub token contains characters that cannot go in an HTTP header",
                            Some("check HF_TOKEN or the token file"),
                        )
                    })?;
                value.set_sensitive(true);
                let mut headers = HeaderMap::new();
                headers.insert(AUTHORIZATION, value);
                Some(build_client(headers)?)
            }
            None => None,
        };
        Ok(Self {
            anonymous: build_client(HeaderMap::new())?,
            authed,
            config,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &HubConfig {
        &self.config
    }

    /// Whether a token is configured.
    pub fn has_token(&self) -> bool {
        self.authed.is_some()
    }

    /// A URL on the endpoint: `path` starts with `/` and is already percent-encoded.
    pub fn url(&self, path: &str) -> Result<Url, HubError> {
        let text = format!("{}{path}", self.config.base());
        Url::parse(&text).map_err(|error| HubError::Refused {
            what: "building a request".into(),
            reason: format!("{text} is not a valid URL ({error})"),
        })
    }

    /// Whether `url` is on the endpoint's origin (the only one that gets the token).
    pub fn is_endpoint_origin(&self, url: &Url) -> bool {
        url.origin() == self.config.endpoint.origin()
    }

    /// `text` with the token removed.
    pub fn redact(&self, text: &str) -> String {
        match &self.config.token {
            Some(token) => token.redact(text),
            None => text.to_owned(),
        }
    }

    fn client_for(&self, url: &Url, credentials: Credentials) -> &Client {
        match (&self.authed, credentials) {
            (Some(authed), Credentials::EndpointOnly) if self.is_endpoint_origin(url) => authed,
            _ => &self.anonymous,
        }
    }

    fn network(&self, what: &str, url: &Url, error: &reqwest::Error) -> HubError {
        HubError::Network {
            what: what.to_owned(),
            url: url.to_string(),
            reason: self.redact(&transport_reason(error)),
        }
    }

    fn request(&self, call: &Call<'_>) -> Result<RequestBuilder, HubError> {
        check_scheme(&call.url).map_err(|reason| HubError::Refused {
            what: call.what.to_owned(),
            reason,
        })?;
        Ok(self
            .client_for(&call.url, call.credentials)
            .request(call.method.clone(), call.url.clone())
            .headers(call.headers.clone())
            .timeout(call.timeout))
    }

    /// Sends `call` once.
    pub fn send_once(&self, call: &Call<'_>) -> Result<Response, HubError> {
        let request = self.request(call)?;
        let request = match &call.payload {
            Payload::Empty => request,
            Payload::Bytes {
                bytes,
                content_type,
            } => request
                .header("content-type", *content_type)
                .body(bytes.clone()),
            Payload::Raw(bytes) => request.body(bytes.as_ref().clone()),
            Payload::File {
                path,
                len,
                progress,
            } => {
                let file = File::open(path).map_err(crate::durable::io_at("opening", path))?;
                let reader = ProgressReader {
                    file,
                    progress: Arc::clone(progress),
                };
                request.body(Body::sized(reader, *len))
            }
        };
        request
            .send()
            .map_err(|error| self.network(call.what, &call.url, &error))
    }

    /// Sends `call` once with a streamed `body` instead of its payload (the commit).
    pub fn send_body_once(
        &self,
        call: &Call<'_>,
        body: Body,
        content_type: &'static str,
    ) -> Result<Response, HubError> {
        self.request(call)?
            .header("content-type", content_type)
            .body(body)
            .send()
            .map_err(|error| self.network(call.what, &call.url, &error))
    }

    /// Sends `call`, retrying 408/429/5xx answers and lost connections (when `call.retry`)
    /// with backoff, within the retry budget. Any other answer is returned as it is.
    pub fn send(&self, call: &Call<'_>) -> Result<Response, HubError> {
        let policy = &self.config.retry;
        let budget = policy.budget();
        let mut waited = Duration::ZERO;
        let mut retry = 0u32;
        loop {
            let outcome = self.send_once(call);
            let headers = match &outcome {
                Ok(response) if call.retry && is_retryable_status(response.status()) => {
                    Some(response.headers().clone())
                }
                Err(HubError::Network { .. }) if call.retry => None,
                _ => return outcome,
            };
            let wait =
                policy.scaled(policy.wait_before(retry, headers.as_ref(), SystemTime::now()));
            let exhausted = retry >= policy.max_retries;
            if exhausted || waited + wait > budget {
                return Err(match outcome {
                    Err(error) => error,
                    Ok(response) => {
                        let status = response.status().as_u16();
                        let asked = headers
                            .as_ref()
                            .and_then(|h| super::retry::server_wait(h, SystemTime::now()))
                            .map(|asked| policy.scaled(asked));
                        match asked {
                            Some(asked) if !exhausted && asked > budget.saturating_sub(waited) => {
                                HubError::RateLimited {
                                    what: call.what.to_owned(),
                                    status,
                                    asked: asked.div_f64(policy.scale),
                                    budget: budget.div_f64(policy.scale),
                                }
                            }
                            _ => HubError::Unavailable {
                                what: call.what.to_owned(),
                                status,
                                attempts: retry + 1,
                                waited: waited.div_f64(policy.scale),
                                detail: self.message_of(response),
                            },
                        }
                    }
                });
            }
            std::thread::sleep(wait);
            waited += wait;
            retry += 1;
        }
    }

    /// Sends a GET or HEAD and follows redirects by hand (see the module docs), calling
    /// `inspect` on every answer, the redirects included, before acting on it.
    pub fn follow(
        &self,
        mut call: Call<'_>,
        inspect: &mut dyn FnMut(&Url, &Response) -> Result<(), HubError>,
    ) -> Result<Response, HubError> {
        for _ in 0..=MAX_REDIRECTS {
            let response = self.send(&call)?;
            inspect(&call.url, &response)?;
            if !response.status().is_redirection() {
                return Ok(response);
            }
            let refuse = |reason: String| HubError::Refused {
                what: call.what.to_owned(),
                reason,
            };
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|value| value.to_str().ok())
                .ok_or_else(|| {
                    refuse(format!(
                        "HTTP {} redirect without a usable Location",
                        response.status().as_u16()
                    ))
                })?;
            let next = call.url.join(location).map_err(|error| {
                refuse(format!(
                    "the redirect to {location:?} is not a URL ({error})"
                ))
            })?;
            if call.url.scheme() == "https" && next.scheme() != "https" {
                return Err(refuse(format!(
                    "the Hub redirected from https to {next}; babel never downgrades a download"
                )));
            }
            check_scheme(&next).map_err(refuse)?;
            call.url = next;
        }
        Err(HubError::Refused {
            what: call.what.to_owned(),
            reason: format!("more than {MAX_REDIRECTS} redirects (a redirect loop?)"),
        })
    }

    /// The human part of an error answer: `X-Error-Message`, else the body's `error`
    /// field, else the start of the body; redacted and shortened.
    pub fn message_of(&self, response: Response) -> String {
        let header = response
            .headers()
            .get("x-error-message")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let status = response.status();
        let message = header.unwrap_or_else(|| {
            let mut body = Vec::new();
            let _ = response.take(16 * 1024).read_to_end(&mut body);
            let text = String::from_utf8_lossy(&body).into_owned();
            serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|json| {
                    json.get("error")
                        .and_then(|e| e.as_str())
                        .map(str::to_owned)
                })
                .unwrap_or(text)
        });
        // Redacted before it is shortened: a token cut in two is no longer found.
        let flat: String = self
            .redact(&message)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(MAX_MESSAGE_CHARS)
            .collect();
        if flat.is_empty() {
            status.canonical_reason().unwrap_or("no message").to_owned()
        } else {
            flat
        }
    }

    /// The error for an answer that is not a success, classified as the official client
    /// does: by `X-Error-Code`, and a 401 on a repository as "not found or private" unless
    /// the token itself was refused.
    pub fn status_error(&self, what: &str, repo: Option<&RepoId>, response: Response) -> HubError {
        let status = response.status();
        let code = response
            .headers()
            .get("x-error-code")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let message = self.message_of(response);
        let had_token = self.has_token();
        match (status.as_u16(), code.as_deref(), repo) {
            (401 | 404, Some("RepoNotFound"), Some(repo)) => HubError::RepoNotFound {
                repo: repo.to_string(),
                had_token,
            },
            (404, Some("RevisionNotFound"), Some(repo)) => HubError::RevisionNotFound {
                repo: repo.to_string(),
                revision: message,
            },
            (401 | 403, ..) => HubError::Unauthorized {
                what: what.to_owned(),
                status: status.as_u16(),
                message,
                had_token,
            },
            _ => HubError::Http {
                what: what.to_owned(),
                status: status.as_u16(),
                message,
            },
        }
    }

    /// Reads a JSON answer of at most `limit` bytes.
    pub fn json<T: DeserializeOwned>(
        &self,
        response: Response,
        what: &str,
        limit: u64,
    ) -> Result<T, HubError> {
        let url = response.url().clone();
        let mut body = Vec::new();
        response
            .take(limit + 1)
            .read_to_end(&mut body)
            .map_err(|error| HubError::Network {
                what: what.to_owned(),
                url: url.to_string(),
                reason: error.to_string(),
            })?;
        if body.len() as u64 > limit {
            return Err(HubError::Refused {
                what: what.to_owned(),
                reason: format!("the answer is larger than {limit} bytes"),
            });
        }
        serde_json::from_slice(&body).map_err(|error| HubError::Refused {
            what: what.to_owned(),
            reason: format!("unexpected answer from the Hub ({error})"),
        })
    }

    /// Sends `call` (with retries) and returns the answer when it is a success (2xx).
    pub fn expect_success(
        &self,
        call: &Call<'_>,
        repo: Option<&RepoId>,
    ) -> Result<Response, HubError> {
        let response = self.send(call)?;
        if response.status().is_success() {
            Ok(response)
        } else {
            Err(self.status_error(call.what, repo, response))
        }
    }
}
