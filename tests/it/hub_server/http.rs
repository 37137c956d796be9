//! HTTP/1.1 framing: reading one request from a connection and writing one
//! response, honestly or in one of the hostile ways a `Delivery` names.
//!
//! It knows nothing about the Hub. Every byte it reads comes from the client
//! under test, so every malformed input is an `Err`, never a panic.

use std::fmt;
use std::io::{self, BufRead, Read, Write};
use std::time::Duration;

use super::log::Origin;

/// Longest request line plus headers accepted, in bytes.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest request body accepted, in bytes (LFS uploads in tests are far smaller).
const MAX_BODY_BYTES: u64 = 512 * 1024 * 1024;

/// One parsed HTTP request, as the router and interceptors see it.
#[derive(Clone, Debug)]
pub struct Request {
    /// Which listener received it.
    pub origin: Origin,
    /// The method, exactly as sent (`GET`, `HEAD`, ...).
    pub method: String,
    /// The raw request-target: path and query, still percent-encoded.
    pub target: String,
    /// Header fields in arrival order, names as sent.
    pub headers: Vec<(String, String)>,
    /// The body after `Content-Length` or chunked framing was removed.
    pub body: Vec<u8>,
}

impl Request {
    /// The path part of the target, still percent-encoded.
    pub fn path(&self) -> &str {
        self.target
            .split_once('?')
            .map_or(&self.target, |(path, _)| path)
    }

    /// The raw query string, if the target has one.
    pub fn query(&self) -> Option<&str> {
        self.target.split_once('?').map(|(_, query)| query)
    }

    /// The first value of the named query parameter, decoded.
    pub fn query_param(&self, name: &str) -> Option<String> {
        parse_form(self.query()?)
            .ok()?
            .into_iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value)
    }

    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        header_value(&self.headers, name)
    }

    /// The token of an `Authorization: Bearer <token>` header.
    pub fn bearer_token(&self) -> Option<&str> {
        let value = self.header("authorization")?;
        let (scheme, token) = value.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
    }

    fn wants_close(&self, version: HttpVersion) -> bool {
        let connection = self.header("connection").unwrap_or("");
        let has = |word: &str| {
            connection
                .split(',')
                .any(|token| token.trim().eq_ignore_ascii_case(word))
        };
        match version {
            HttpVersion::Http10 => !has("keep-alive"),
            HttpVersion::Http11 => has("close"),
        }
    }
}

/// How a response body goes on the wire. Everything but `Normal` is a
/// deliberate misbehaviour for tests of a client's defences.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// `Content-Length` equals the body; the connection may be kept alive.
    Normal,
    /// Declare this `Content-Length` whatever the body is, write the whole
    /// body, then close the connection.
    DeclaredLength(u64),
    /// No `Content-Length`: `Transfer-Encoding: chunked`.
    Chunked,
    /// No length at all: the body ends when the connection closes.
    CloseDelimited,
    /// Declare the full length, write only this many body bytes, then close
    /// the connection (a transfer cut mid-file).
    DropAfter(usize),
    /// Write the body `chunk` bytes at a time with `delay` between chunks.
    Throttled { chunk: usize, delay: Duration },
    /// Close the connection without writing any response.
    NoResponse,
}

/// One HTTP response, built by a handler or an interceptor.
#[derive(Clone, Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header fields to send; `Content-Length`/`Transfer-Encoding` are added
    /// by the writer according to `delivery`.
    pub headers: Vec<(String, String)>,
    /// The body. For a HEAD request it is not sent, but its length is declared.
    pub body: Vec<u8>,
    /// How the body goes on the wire.
    pub delivery: Delivery,
}

impl Response {
    /// An empty response with this status.
    pub fn new(status: u16) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            delivery: Delivery::Normal,
        }
    }

    /// A JSON response.
    pub fn json(status: u16, value: &serde_json::Value) -> Response {
        Response::new(status)
            .with_header("Content-Type", "application/json; charset=utf-8")
            .with_body(value.to_string().into_bytes())
    }

    /// A Hub-style error: JSON `{"error": message}` plus the `X-Error-Code`
    /// and `X-Error-Message` headers the official client classifies errors by.
    pub fn hub_error(status: u16, code: Option<&str>, message: &str) -> Response {
        let mut response = Response::json(status, &serde_json::json!({ "error": message }))
            .with_header("X-Error-Message", &header_safe(message));
        if let Some(code) = code {
            response = response.with_header("X-Error-Code", code);
        }
        response
    }

    /// Adds a header field.
    pub fn with_header(mut self, name: &str, value: &str) -> Response {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Replaces the body.
    pub fn with_body(mut self, body: Vec<u8>) -> Response {
        self.body = body;
        self
    }

    /// Replaces the delivery.
    pub fn with_delivery(mut self, delivery: Delivery) -> Response {
        self.delivery = delivery;
        self
    }

    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        header_value(&self.headers, name)
    }
}

/// Why a request could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The connection failed or closed mid-request: nothing can be answered.
    Io(io::Error),
    /// The bytes are not a valid HTTP/1.x request: answer 400 and close.
    Malformed(String),
    /// The request is larger than this server accepts: answer 413 and close.
    TooLarge(String),
    /// A framing this server does not implement: answer 501 and close.
    Unsupported(String),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(error) => write!(f, "connection error: {error}"),
            ReadError::Malformed(why) => write!(f, "malformed request: {why}"),
            ReadError::TooLarge(why) => write!(f, "request too large: {why}"),
            ReadError::Unsupported(why) => write!(f, "unsupported request: {why}"),
        }
    }
}

impl From<io::Error> for ReadError {
    fn from(error: io::Error) -> ReadError {
        ReadError::Io(error)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HttpVersion {
    Http10,
    Http11,
}

/// A request read from a connection, with what the connection should do next.
pub struct Incoming {
    pub request: Request,
    /// The client asked for (or its HTTP version implies) closing after the response.
    pub close: bool,
}

/// Reads one request. `Ok(None)` means the client closed the connection
/// cleanly between requests. `interim` receives a `100 Continue` when the
/// client sent `Expect: 100-continue`.
pub fn read_request(
    reader: &mut impl BufRead,
    interim: &mut impl Write,
    origin: Origin,
) -> Result<Option<Incoming>, ReadError> {
    let mut head_budget = MAX_HEAD_BYTES;
    // Tolerate empty lines before a request line (RFC 9112 section 2.2).
    let request_line = loop {
        match read_line(reader, &mut head_budget)? {
            None => return Ok(None),
            Some(line) if line.is_empty() => continue,
            Some(line) => break line,
        }
    };
    let (method, target, version) = parse_request_line(&request_line)?;
    let mut headers = Vec::new();
    loop {
        let line = read_line(reader, &mut head_budget)?
            .ok_or_else(|| ReadError::Malformed("connection closed inside the headers".into()))?;
        if line.is_empty() {
            break;
        }
        headers.push(parse_header_line(&line)?);
    }
    let mut request = Request {
        origin,
        method,
        target,
        headers,
        body: Vec::new(),
    };
    let close = request.wants_close(version);
    let framing = body_framing(&request)?;
    if framing != Framing::None
        && request
            .header("expect")
            .is_some_and(|value| value.eq_ignore_ascii_case("100-continue"))
    {
        interim.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        interim.flush()?;
    }
    request.body = match framing {
        Framing::None => Vec::new(),
        Framing::Length(length) => read_exact_body(reader, length)?,
        Framing::Chunked => read_chunked_body(reader)?,
    };
    Ok(Some(Incoming { request, close }))
}

#[derive(Debug, PartialEq, Eq)]
enum Framing {
    None,
    Length(u64),
    Chunked,
}

fn body_framing(request: &Request) -> Result<Framing, ReadError> {
    let lengths: Vec<&str> = request
        .headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .map(|(_, value)| value.as_str())
        .collect();
    let encodings: Vec<&str> = request
        .headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("transfer-encoding"))
        .map(|(_, value)| value.as_str())
        .collect();
    if !encodings.is_empty() {
        // Both framings at once is the classic request-smuggling shape: refuse it.
        if !lengths.is_empty() {
            return Err(ReadError::Malformed(
                "both Content-Length and Transfer-Encoding".into(),
            ));
        }
        let codings: Vec<String> = encodings
            .iter()
            .flat_map(|value| value.split(','))
            .map(|coding| coding.trim().to_ascii_lowercase())
            .collect();
        return if codings == ["chunked"] {
            Ok(Framing::Chunked)
        } else {
            Err(ReadError::Unsupported(format!(
                "Transfer-Encoding {codings:?} (only chunked is implemented)"
            )))
        };
    }
    let Some(first) = lengths.first() else {
        return Ok(Framing::None);
    };
    if lengths.iter().any(|value| value != first) {
        return Err(ReadError::Malformed(
            "conflicting Content-Length values".into(),
        ));
    }
    let length = parse_decimal(first)
        .ok_or_else(|| ReadError::Malformed(format!("Content-Length {first:?}")))?;
    if length > MAX_BODY_BYTES {
        return Err(ReadError::TooLarge(format!("body of {length} bytes")));
    }
    Ok(Framing::Length(length))
}

fn parse_decimal(text: &str) -> Option<u64> {
    let text = text.trim();
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn read_exact_body(reader: &mut impl BufRead, length: u64) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    let read = reader.take(length).read_to_end(&mut body)?;
    if (read as u64) < length {
        return Err(ReadError::Io(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("body ended after {read} of {length} bytes"),
        )));
    }
    Ok(body)
}

fn read_chunked_body(reader: &mut impl BufRead) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    // Chunk-size lines and trailers share one budget so a stream of empty
    // extensions cannot grow without bound.
    let mut line_budget = MAX_HEAD_BYTES;
    loop {
        let line = read_line(reader, &mut line_budget)?.ok_or_else(|| {
            ReadError::Malformed("connection closed inside a chunked body".into())
        })?;
        let size_text = line.split(';').next().unwrap_or("").trim();
        if size_text.is_empty() || !size_text.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return Err(ReadError::Malformed(format!("chunk size {line:?}")));
        }
        let size = u64::from_str_radix(size_text, 16)
            .map_err(|_| ReadError::Malformed(format!("chunk size {line:?}")))?;
        if size == 0 {
            // Trailer fields, then the empty line.
            loop {
                let trailer = read_line(reader, &mut line_budget)?
                    .ok_or_else(|| ReadError::Malformed("connection closed in trailers".into()))?;
                if trailer.is_empty() {
                    return Ok(body);
                }
                parse_header_line(&trailer)?;
            }
        }
        if body.len() as u64 + size > MAX_BODY_BYTES {
            return Err(ReadError::TooLarge("chunked body".into()));
        }
        let chunk = read_exact_body(reader, size)?;
        body.extend_from_slice(&chunk);
        let end = read_line(reader, &mut line_budget)?
            .ok_or_else(|| ReadError::Malformed("connection closed after a chunk".into()))?;
        if !end.is_empty() {
            return Err(ReadError::Malformed(
                "chunk data longer than its size".into(),
            ));
        }
    }
}

/// Reads one line ending in CRLF (a bare LF is tolerated), without the ending.
/// `Ok(None)` is a clean end of stream before any byte of the line.
fn read_line(reader: &mut impl BufRead, budget: &mut usize) -> Result<Option<String>, ReadError> {
    let mut line = Vec::new();
    let limit = (*budget as u64).saturating_add(1);
    let read = reader.take(limit).read_until(b'\n', &mut line)?;
    if read == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        return if read as u64 >= limit {
            Err(ReadError::TooLarge("request head".into()))
        } else {
            Err(ReadError::Malformed("connection closed mid-line".into()))
        };
    }
    *budget = budget.saturating_sub(read);
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.contains(&b'\r') || line.contains(&0) {
        return Err(ReadError::Malformed("CR or NUL inside a line".into()));
    }
    String::from_utf8(line)
        .map(Some)
        .map_err(|_| ReadError::Malformed("request head is not UTF-8".into()))
}

fn parse_request_line(line: &str) -> Result<(String, String, HttpVersion), ReadError> {
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Malformed(format!("request line {line:?}")));
    };
    if method.is_empty() || !method.bytes().all(is_token_byte) {
        return Err(ReadError::Malformed(format!("method {method:?}")));
    }
    if !target.starts_with('/') || target.bytes().any(|byte| byte <= b' ' || byte == 0x7f) {
        return Err(ReadError::Malformed(format!("request target {target:?}")));
    }
    let version = match version {
        "HTTP/1.1" => HttpVersion::Http11,
        "HTTP/1.0" => HttpVersion::Http10,
        other => return Err(ReadError::Malformed(format!("HTTP version {other:?}"))),
    };
    Ok((method.to_owned(), target.to_owned(), version))
}

fn parse_header_line(line: &str) -> Result<(String, String), ReadError> {
    if line.starts_with([' ', '\t']) {
        return Err(ReadError::Malformed("obsolete header line folding".into()));
    }
    let (name, value) = line
        .split_once(':')
        .ok_or_else(|| ReadError::Malformed(format!("header line {line:?}")))?;
    if name.is_empty() || !name.bytes().all(is_token_byte) {
        return Err(ReadError::Malformed(format!("header name {name:?}")));
    }
    Ok((name.to_owned(), value.trim_matches([' ', '\t']).to_owned()))
}

fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

fn header_value<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
}

/// Makes text safe for a header value: no control characters, ASCII only.
pub fn header_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c
            } else {
                '?'
            }
        })
        .collect()
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        206 => "Partial Content",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        416 => "Range Not Satisfiable",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// Whether the connection must close after this response was written.
#[derive(Debug, PartialEq, Eq)]
pub enum AfterResponse {
    KeepAlive,
    Close,
}

/// Writes `response` for a request with `method`. `close` says the client
/// asked to close; hostile deliveries close regardless. `stopping` is polled
/// between throttled chunks so a slow body cannot outlive the server.
pub fn write_response(
    stream: &mut impl Write,
    method: &str,
    response: &Response,
    close: bool,
    stopping: &dyn Fn() -> bool,
) -> io::Result<AfterResponse> {
    if response.delivery == Delivery::NoResponse {
        return Ok(AfterResponse::Close);
    }
    let bodyless_status = matches!(response.status, 100..=199 | 204 | 304);
    let send_body = method != "HEAD" && !bodyless_status;
    let close = close
        || !matches!(
            response.delivery,
            Delivery::Normal | Delivery::Chunked | Delivery::Throttled { .. }
        );
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason_phrase(response.status)
    );
    for (name, value) in &response.headers {
        let framing = name.eq_ignore_ascii_case("content-length")
            || name.eq_ignore_ascii_case("transfer-encoding")
            || name.eq_ignore_ascii_case("connection");
        if !framing {
            head.push_str(&format!("{name}: {}\r\n", header_safe(value)));
        }
    }
    if !bodyless_status {
        match &response.delivery {
            Delivery::Chunked => head.push_str("Transfer-Encoding: chunked\r\n"),
            Delivery::CloseDelimited => {}
            Delivery::DeclaredLength(length) => {
                head.push_str(&format!("Content-Length: {length}\r\n"));
            }
            _ => head.push_str(&format!("Content-Length: {}\r\n", response.body.len())),
        }
    }
    head.push_str(if close {
        "Connection: close\r\n\r\n"
    } else {
        "Connection: keep-alive\r\n\r\n"
    });
    stream.write_all(head.as_bytes())?;
    if send_body {
        let body = response.body.as_slice();
        match &response.delivery {
            Delivery::Chunked => {
                for chunk in body.chunks(16 * 1024) {
                    write!(stream, "{:x}\r\n", chunk.len())?;
                    stream.write_all(chunk)?;
                    stream.write_all(b"\r\n")?;
                }
                stream.write_all(b"0\r\n\r\n")?;
            }
            Delivery::DropAfter(sent) => stream.write_all(&body[..(*sent).min(body.len())])?,
            Delivery::Throttled { chunk, delay } => {
                for piece in body.chunks((*chunk).max(1)) {
                    stream.write_all(piece)?;
                    stream.flush()?;
                    if stopping() {
                        return Ok(AfterResponse::Close);
                    }
                    std::thread::sleep(*delay);
                }
            }
            _ => stream.write_all(body)?,
        }
    }
    stream.flush()?;
    Ok(if close {
        AfterResponse::Close
    } else {
        AfterResponse::KeepAlive
    })
}

/// Decodes `%XX` escapes. The result must be UTF-8.
pub fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = bytes
                .get(index + 1..index + 3)
                .and_then(|pair| std::str::from_utf8(pair).ok())
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("bad percent escape in {text:?}"))?;
            out.push(hex);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{text:?} does not decode to UTF-8"))
}

/// Percent-encodes everything but RFC 3986 unreserved characters (so `/` too).
pub fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Percent-encodes a repository path segment by segment, keeping `/`.
pub fn encode_path(path: &str) -> String {
    path.split('/')
        .map(encode_component)
        .collect::<Vec<_>>()
        .join("/")
}

/// Parses `application/x-www-form-urlencoded` text (also used for queries).
pub fn parse_form(text: &str) -> Result<Vec<(String, String)>, String> {
    text.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            Ok((
                percent_decode(&key.replace('+', " "))?,
                percent_decode(&value.replace('+', " "))?,
            ))
        })
        .collect()
}

#[derive(Debug, PartialEq, Eq)]
pub enum ByteRange {
    /// No usable `Range` header: send everything with 200.
    Full,
    /// Send `start..end` (end exclusive) with 206.
    Part { start: usize, end: usize },
    /// The range starts past the end: 416.
    Unsatisfiable,
}

/// Interprets a `Range` header against a body of `length` bytes. Only a
/// single `bytes=` range is honoured; anything else is ignored, as RFC 9110
/// allows.
pub fn byte_range(header: Option<&str>, length: usize) -> ByteRange {
    let Some(spec) = header.and_then(|value| value.trim().strip_prefix("bytes=")) else {
        return ByteRange::Full;
    };
    if spec.contains(',') {
        return ByteRange::Full;
    }
    let Some((first, last)) = spec.split_once('-') else {
        return ByteRange::Full;
    };
    let (first, last) = (first.trim(), last.trim());
    let parse = |text: &str| parse_decimal(text).and_then(|n| usize::try_from(n).ok());
    if first.is_empty() {
        // Suffix range: the last N bytes.
        return match parse(last) {
            Some(0) => ByteRange::Unsatisfiable,
            Some(suffix) if length > 0 => ByteRange::Part {
                start: length.saturating_sub(suffix),
                end: length,
            },
            Some(_) => ByteRange::Unsatisfiable,
            None => ByteRange::Full,
        };
    }
    let Some(start) = parse(first) else {
        return ByteRange::Full;
    };
    let end = if last.is_empty() {
        length
    } else {
        match parse(last) {
            Some(last) if last >= start => last.saturating_add(1).min(length),
            _ => return ByteRange::Full,
        }
    };
    if start >= length {
        ByteRange::Unsatisfiable
    } else {
        ByteRange::Part { start, end }
    }
}
