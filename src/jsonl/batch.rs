//! Lines read in batches, so that parsing can be spread over threads while reading stays
//! sequential: a [`Batcher`] cuts a stream into [`LineBatch`]es of about a mebibyte, each
//! holding its lines' bytes and numbers; [`parse_raw`] applies the line rules to one line.

use std::io::{self, BufRead, Read};

use super::{BOM, FieldPath, Line, LineError, LineErrorKind, MAX_LINE_BYTES, NonFinitePolicy};
use super::{is_blank, parse_bytes, strip_line_ending};

/// About how many bytes a batch holds (a batch always ends at a line end).
const BATCH_BYTES: usize = 1 << 20;

#[derive(Debug, Clone, Copy)]
struct RawLine {
    start: usize,
    end: usize,
    number: u64,
    truncated: bool,
}

/// Consecutive raw lines of a stream, with their one-based numbers.
#[derive(Debug, Default)]
pub struct LineBatch {
    data: Vec<u8>,
    lines: Vec<RawLine>,
}

impl LineBatch {
    /// How many lines (blank ones included) the batch holds.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// True for a batch without lines.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Each line's number and parse: `Ok(None)` for a blank line.
    pub fn parse(
        &self,
        policy: NonFinitePolicy,
    ) -> impl Iterator<Item = (u64, Result<Option<Line>, LineError>)> + '_ {
        self.lines.iter().map(move |line| {
            let raw = &self.data[line.start..line.end];
            (
                line.number,
                parse_raw(raw, line.number, line.truncated, policy),
            )
        })
    }
}

/// Applies the line rules to one raw line (with its line ending): a byte order mark only on
/// line 1, blank lines skipped, the size limit, then the strict parse.
pub fn parse_raw(
    raw: &[u8],
    number: u64,
    truncated: bool,
    policy: NonFinitePolicy,
) -> Result<Option<Line>, LineError> {
    let error = |column, kind| LineError {
        line: number,
        column,
        path: FieldPath::root(),
        kind,
    };
    if truncated {
        return Err(error(None, LineErrorKind::TooLong));
    }
    let mut bytes = strip_line_ending(raw);
    if let Some(rest) = bytes.strip_prefix(BOM) {
        if number != 1 {
            return Err(error(Some(1), LineErrorKind::MisplacedBom));
        }
        bytes = rest;
    }
    if is_blank(bytes) {
        return Ok(None);
    }
    parse_bytes(bytes, number, policy).map(Some)
}

/// Cuts a stream into line batches.
pub struct Batcher<R> {
    inner: R,
    line_number: u64,
}

impl<R: BufRead> Batcher<R> {
    /// A batcher over `inner`, starting at line 1.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            line_number: 0,
        }
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// Gives back the underlying reader.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// The next batch, or `None` at the end of the stream. A line over the size limit keeps
    /// only its first bytes (and is refused when parsed); the rest of it is skipped.
    pub fn next_batch(&mut self) -> io::Result<Option<LineBatch>> {
        let mut batch = LineBatch {
            data: Vec::with_capacity(BATCH_BYTES + 64 * 1024),
            lines: Vec::new(),
        };
        while batch.data.len() < BATCH_BYTES {
            let start = batch.data.len();
            let read = (&mut self.inner)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut batch.data)?;
            if read == 0 {
                break;
            }
            let truncated = read > MAX_LINE_BYTES && !batch.data.ends_with(b"\n");
            if truncated {
                self.inner.skip_until(b'\n')?;
            }
            self.line_number += 1;
            batch.lines.push(RawLine {
                start,
                end: batch.data.len(),
                number: self.line_number,
                truncated,
            });
        }
        Ok((!batch.is_empty()).then_some(batch))
    }
}
