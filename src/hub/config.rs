//! Where the Hub is and who babel is to it, read the way the official client reads it:
//! `HF_ENDPOINT` (default `https://huggingface.co`), and the token from `HF_TOKEN`, else
//! the file `$HF_TOKEN_PATH`, else `$HF_HOME/token` (`HF_HOME` defaults to
//! `~/.cache/huggingface`). Also the retry policy (see [`RetryPolicy::from_lookup`]).
//!
//! The token never appears in `Debug` output, URLs or messages: [`Token::redact`] removes
//! it from any text that came back from a server.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io;
use std::path::PathBuf;

use reqwest::Url;

use super::HubError;
use super::retry::RetryPolicy;

/// The Hub used when `HF_ENDPOINT` is not set.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// A Hugging Face access token. Its `Debug` form hides it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Wraps a token string (surrounding whitespace removed); `None` when empty.
    pub fn new(text: &str) -> Option<Self> {
        let trimmed = text.trim();
        (!trimmed.is_empty()).then(|| Self(trimmed.to_owned()))
    }

    /// The secret itself, for the `Authorization` header only.
    pub(crate) fn secret(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the token replaced by `hf_***`.
    pub fn redact(&self, text: &str) -> String {
        text.replace(&self.0, "hf_***")
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// How babel reaches the Hub.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// The endpoint base URL, without a trailing `/`.
    pub endpoint: Url,
    pub token: Option<Token>,
    pub retry: RetryPolicy,
}

/// True when `url`'s host is the loopback interface (plain http is allowed only there).
pub fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => bare.eq_ignore_ascii_case("localhost"),
    }
}

/// Checks that `url` may be contacted at all: https, or http to the loopback interface.
pub fn check_scheme(url: &Url) -> Result<(), String> {
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(url) => Ok(()),
        "http" => Err(format!(
            "{url} uses plain http, which babel allows only for the loopback interface"
        )),
        other => Err(format!("{url} uses the unsupported scheme {other:?}")),
    }
}

impl HubConfig {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Self, HubError> {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// Reads the configuration from `lookup` (an environment), so tests need not touch
    /// the process environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Result<Self, HubError> {
        let text = |name: &str| {
            lookup(name)
                .map(|value| value.to_string_lossy().into_owned())
                .filter(|value| !value.trim().is_empty())
        };
        let endpoint_text = text("HF_ENDPOINT").unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned());
        let trimmed = endpoint_text.trim().trim_end_matches('/');
        let endpoint = Url::parse(trimmed)
            .ok()
            .filter(|url| url.has_host() && url.query().is_none() && url.fragment().is_none())
            .ok_or_else(|| {
                HubError::usage(
                    format!("HF_ENDPOINT {trimmed:?} is not an http(s) URL"),
                    Some("set HF_ENDPOINT to the Hub's base URL, e.g. https://huggingface.co, or unset it"),
                )
            })?;
        check_scheme(&endpoint).map_err(|why| {
            HubError::usage(format!("HF_ENDPOINT: {why}"), Some("use an https endpoint"))
        })?;
        let token = match text("HF_TOKEN") {
            Some(token) => Token::new(&token),
            None => read_token_file(token_path(&lookup))?,
        };
        Ok(Self {
            endpoint,
            token,
            retry: RetryPolicy::from_lookup(&lookup)?,
        })
    }

    /// The endpoint as text without a trailing `/`, for building URLs.
    pub fn base(&self) -> &str {
        self.endpoint.as_str().trim_end_matches('/')
    }
}

/// `$HF_TOKEN_PATH`, else `$HF_HOME/token`, else `~/.cache/huggingface/token`.
fn token_path(lookup: &impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let set = |name: &str| lookup(name).filter(|value| !value.is_empty());
    if let Some(path) = set("HF_TOKEN_PATH") {
        return Some(PathBuf::from(path));
    }
    if let Some(home) = set("HF_HOME") {
        return Some(PathBuf::from(home).join("token"));
    }
    set("HOME").map(|home| PathBuf::from(home).join(".cache/huggingface/token"))
}

fn read_token_file(path: Option<PathBuf>) -> Result<Option<Token>, HubError> {
    let Some(path) = path else {
        return Ok(None);
    };
    match fs::read_to_string(&path) {
        Ok(text) => Ok(Token::new(&text)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(HubError::Io(crate::durable::PathIoError {
            action: "reading the Hub token file",
            path,
            source,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<HubConfig, HubError> {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
            .collect();
        HubConfig::from_lookup(|name| vars.get(name).cloned())
    }

    #[test]
    fn the_endpoint_defaults_to_the_hub_and_loses_its_trailing_slash() {
        let default = config(&[]).unwrap();
        assert_eq!(default.base(), "https://huggingface.co");
        let local = config(&[("HF_ENDPOINT", "http://127.0.0.1:8080/")]).unwrap();
        assert_eq!(local.base(), "http://127.0.0.1:8080");
        for bad in [
            "http://example.com",
            "ftp://127.0.0.1",
            "not a url",
            "https://x/?q=1",
        ] {
            assert!(config(&[("HF_ENDPOINT", bad)]).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_token_comes_from_hf_token_then_the_token_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "hf_from_file\n").unwrap();
        let home = dir.path().to_str().unwrap();
        let from_env = config(&[("HF_TOKEN", "hf_env"), ("HF_HOME", home)]).unwrap();
        assert_eq!(from_env.token, Token::new("hf_env"));
        let from_home = config(&[("HF_HOME", home)]).unwrap();
        assert_eq!(from_home.token, Token::new("hf_from_file"));
        let explicit = dir.path().join("elsewhere");
        std::fs::write(&explicit, "hf_explicit").unwrap();
        let from_path = config(&[
            ("HF_HOME", home),
            ("HF_TOKEN_PATH", explicit.to_str().unwrap()),
        ])
        .unwrap();
        assert_eq!(from_path.token, Token::new("hf_explicit"));
        let missing = config(&[("HF_HOME", "/nonexistent/babel-test")]).unwrap();
        assert_eq!(missing.token, None);
    }

    #[test]
    fn tokens_never_show_in_debug_output_or_redacted_text() {
        let token = Token::new("hf_secret123").unwrap();
        assert!(!format!("{token:?}").contains("secret"));
        assert_eq!(token.redact("bad token hf_secret123!"), "bad token hf_***!");
    }
}
