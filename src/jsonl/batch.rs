//! Lines read in batches, so that parsing can be spread over threads while reading stays
//! sequential: a [`Batcher`] cuts a stream into [`LineBatch`]es of about a mebibyte of
//! whole lines, numbering only the first (a count of newlines); the worker that parses a
//! batch walks its lines itself. [`LineBatch::lines`] applies the line rules (a byte order
//! mark on line 1 only, blank lines skipped, the size limit) to each.

use std::io::{self, Read};

use super::{BOM, FieldPath, Line, LineError, LineErrorKind, MAX_LINE_BYTES, NonFinitePolicy};
use super::{is_blank, parse_bytes, strip_line_ending};

/// About how many bytes a batch holds (a batch always ends at a line end).
const BATCH_BYTES: usize = 1 << 20;

/// Consecutive whole lines of a stream, the first of them numbered.
#[derive(Debug, Default)]
pub struct LineBatch {
    data: Vec<u8>,
    /// The one-based number of the first line.
    first_line: u64,
    /// How many lines the batch holds.
    line_count: u64,
    /// The batch is one line longer than [`MAX_LINE_BYTES`], of which nothing is kept.
    too_long: bool,
}

impl LineBatch {
    /// The one-based number of the batch's first line.
    pub fn first_line(&self) -> u64 {
        self.first_line
    }

    /// How many lines the batch holds (blank ones too).
    pub fn line_count(&self) -> u64 {
        self.line_count
    }

    /// How many bytes its lines hold.
    pub fn bytes(&self) -> usize {
        self.data.len()
    }

    /// Each line's number and bytes (without the line ending and a line 1 byte order
    /// mark); `None` for a blank line, an error for a misplaced byte order mark or an
    /// overlong line.
    pub fn lines(&self) -> impl Iterator<Item = (u64, Result<Option<&[u8]>, LineError>)> + '_ {
        let too_long = self.too_long.then(|| {
            let error = LineError {
                line: self.first_line,
                column: None,
                index: None,
                path: FieldPath::root(),
                kind: LineErrorKind::TooLong,
            };
            (self.first_line, Err(error))
        });
        let mut rest = if self.too_long {
            &[][..]
        } else {
            &self.data[..]
        };
        let mut number = self.first_line;
        let lines = std::iter::from_fn(move || {
            if rest.is_empty() {
                return None;
            }
            let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |newline| newline + 1);
            let (raw, after) = rest.split_at(end);
            rest = after;
            let line = number;
            number += 1;
            Some((line, line_bytes(raw, line)))
        });
        too_long.into_iter().chain(lines)
    }

    /// Each line parsed into a tree (the tree reader): `Ok(None)` for a blank line.
    pub fn parse(
        &self,
        policy: NonFinitePolicy,
    ) -> impl Iterator<Item = (u64, Result<Option<Line>, LineError>)> + '_ {
        self.lines().map(move |(number, bytes)| {
            let parsed = bytes.and_then(|bytes| match bytes {
                Some(bytes) => parse_bytes(bytes, number, policy).map(Some),
                None => Ok(None),
            });
            (number, parsed)
        })
    }
}

/// Applies the line rules to one raw line (with its line ending): a byte order mark only on
/// line 1, blank lines skipped.
fn line_bytes(raw: &[u8], number: u64) -> Result<Option<&[u8]>, LineError> {
    let mut bytes = strip_line_ending(raw);
    if let Some(rest) = bytes.strip_prefix(BOM) {
        if number != 1 {
            return Err(LineError {
                line: number,
                column: Some(1),
                index: Some(1),
                path: FieldPath::root(),
                kind: LineErrorKind::MisplacedBom,
            });
        }
        bytes = rest;
    }
    Ok((!is_blank(bytes)).then_some(bytes))
}

/// Sees the bytes a [`Batcher`] reads, each run once it is read: a copy of the source, its
/// digest, progress. The batcher reads straight into its batch; a reader wrapped around
/// the source instead had every buffer zeroed before each read (`Read::read` takes
/// initialized memory), 1.6 % of an import's CPU.
pub trait Observer {
    /// `bytes` were just read; `ended`: the source is at its end.
    fn observe(&mut self, bytes: &[u8], ended: bool) -> io::Result<()>;
}

/// Nothing to see.
impl Observer for () {
    fn observe(&mut self, _: &[u8], _: bool) -> io::Result<()> {
        Ok(())
    }
}

/// Cuts a stream into line batches.
pub struct Batcher<R, O = ()> {
    inner: R,
    observer: O,
    /// The number of the last line handed out.
    line_number: u64,
    /// The start of a line not yet ended.
    carry: Vec<u8>,
    /// The carry holds whole lines (the rest of a batch after an overlong line).
    carry_has_lines: bool,
    /// Inside an overlong line, whose rest is skipped up to its end.
    skipping: bool,
    at_end: bool,
}

impl<R: Read> Batcher<R> {
    /// A batcher over `inner`, starting at line 1.
    pub fn new(inner: R) -> Self {
        Self::observed(inner, ())
    }
}

impl<R: Read, O: Observer> Batcher<R, O> {
    /// A batcher over `inner` whose reads `observer` sees, starting at line 1.
    pub fn observed(inner: R, observer: O) -> Self {
        Self {
            inner,
            observer,
            line_number: 0,
            carry: Vec::new(),
            carry_has_lines: false,
            skipping: false,
            at_end: false,
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

    /// Gives back the observer.
    pub fn into_observer(self) -> O {
        self.observer
    }

    /// Reads up to `want` more bytes onto `data` (into its spare room as it is, when the
    /// source is a file), shows them to the observer; notes the end of the stream.
    fn fill(&mut self, data: &mut Vec<u8>, want: usize) -> io::Result<()> {
        let start = data.len();
        let read = (&mut self.inner).take(want as u64).read_to_end(data)?;
        if read < want {
            self.at_end = true;
        }
        self.observer.observe(&data[start..], self.at_end)
    }

    /// The next batch, or `None` at the end of the stream. A line over the size limit is
    /// a batch of its own that keeps none of its bytes (and is refused when read); the
    /// rest of it is skipped.
    pub fn next_batch(&mut self) -> io::Result<Option<LineBatch>> {
        loop {
            let mut data = std::mem::take(&mut self.carry);
            // Where to look for line ends: the carry holds none, unless it is the rest of
            // a batch after an overlong line.
            let mut searched = if self.carry_has_lines { 0 } else { data.len() };
            if !self.carry_has_lines && data.len() > MAX_LINE_BYTES {
                // A line already over the limit is not read further into memory.
                self.line_number += 1;
                self.skipping = !self.at_end;
                return Ok(Some(too_long(self.line_number)));
            }
            self.carry_has_lines = false;
            if !self.at_end {
                // A long line in the making doubles the read, so it is read in few steps.
                let want = BATCH_BYTES.max(data.len());
                data.reserve(want);
                self.fill(&mut data, want)?;
            }
            if self.skipping {
                match memchr::memchr(b'\n', &data) {
                    Some(newline) => {
                        data.drain(..=newline);
                        self.skipping = false;
                        searched = 0;
                    }
                    None if self.at_end => return Ok(None),
                    None => continue,
                }
            }
            if data.is_empty() && self.at_end {
                return Ok(None);
            }
            let first_line = self.line_number + 1;
            let last = memchr::memrchr(b'\n', &data[searched..]).map(|at| searched + at);
            match last {
                Some(last) => return Ok(Some(self.whole_lines(data, last, first_line))),
                None if data.len() > MAX_LINE_BYTES => {
                    self.line_number += 1;
                    self.skipping = !self.at_end;
                    return Ok(Some(too_long(first_line)));
                }
                None if self.at_end => {
                    // The last line, without a line ending.
                    self.line_number += 1;
                    return Ok(Some(LineBatch {
                        data,
                        first_line,
                        line_count: 1,
                        too_long: false,
                    }));
                }
                None => self.carry = data,
            }
        }
    }

    /// The batch of the whole lines of `data` up to its last line end `last`; the rest is
    /// carried. Every line is held to the limit: after an overlong line the carry holds
    /// several whole lines, any of which may be long.
    fn whole_lines(&mut self, mut data: Vec<u8>, last: usize, first_line: u64) -> LineBatch {
        let (mut start, mut count) = (0, 0u64);
        // Where the batch ends: after the last line end, or before an overlong line that
        // follows other lines (it is the next batch).
        let mut cut = last + 1;
        while start <= last {
            let end =
                start + memchr::memchr(b'\n', &data[start..=last]).expect("a line end exists");
            if end - start > MAX_LINE_BYTES {
                self.carry_has_lines = true;
                if count == 0 {
                    self.carry = data[end + 1..].to_vec();
                    self.line_number += 1;
                    return too_long(first_line);
                }
                cut = start;
                break;
            }
            count += 1;
            start = end + 1;
        }
        self.carry = data[cut..].to_vec();
        data.truncate(cut);
        self.line_number += count;
        LineBatch {
            data,
            first_line,
            line_count: count,
            too_long: false,
        }
    }
}

fn too_long(line: u64) -> LineBatch {
    LineBatch {
        data: Vec::new(),
        first_line: line,
        line_count: 1,
        too_long: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line as a test sees it: its number, and its bytes, nothing (blank) or its error.
    type SeenLine = (u64, Result<Option<Vec<u8>>, LineErrorKind>);

    fn batches(bytes: &[u8]) -> Vec<Vec<SeenLine>> {
        let mut batcher = Batcher::new(bytes);
        let mut out = Vec::new();
        while let Some(batch) = batcher.next_batch().unwrap() {
            out.push(
                batch
                    .lines()
                    .map(|(n, line)| (n, line.map(|l| l.map(<[u8]>::to_vec)).map_err(|e| e.kind)))
                    .collect(),
            );
        }
        out
    }

    #[test]
    fn lines_are_numbered_across_batches_and_endings_stripped() {
        let mut text = Vec::new();
        for i in 0..200_000 {
            text.extend_from_slice(format!("{{\"i\": {i}}}\r\n").as_bytes());
        }
        text.extend_from_slice(b"\n{\"last\": true}");
        let all: Vec<_> = batches(&text).into_iter().flatten().collect();
        assert!(batches(&text).len() > 1, "several batches");
        assert_eq!(all.len(), 200_002);
        assert_eq!(all[7], (8, Ok(Some(b"{\"i\": 7}".to_vec()))));
        assert_eq!(all[200_000], (200_001, Ok(None)), "a blank line");
        assert_eq!(
            all[200_001],
            (200_002, Ok(Some(b"{\"last\": true}".to_vec())))
        );
    }

    /// Keeps what a batcher showed it.
    #[derive(Default)]
    struct Kept {
        bytes: Vec<u8>,
        ended: Vec<bool>,
    }

    impl Observer for Kept {
        fn observe(&mut self, bytes: &[u8], ended: bool) -> io::Result<()> {
            self.bytes.extend_from_slice(bytes);
            self.ended.push(ended);
            Ok(())
        }
    }

    #[test]
    fn the_observer_sees_every_byte_once_in_order_and_the_end_last() {
        // Several batches, then an overlong line: its bytes are skipped, not kept in a
        // batch, yet they are read and must reach the raw copy all the same.
        let mut text = Vec::new();
        for i in 0..100_000 {
            text.extend_from_slice(format!("{{\"i\": {i}}}\n").as_bytes());
        }
        text.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 1));
        text.extend_from_slice(b"\n{}\n");
        let mut batcher = Batcher::observed(&text[..], Kept::default());
        let mut batches = 0;
        while batcher.next_batch().unwrap().is_some() {
            batches += 1;
        }
        let kept = batcher.into_observer();
        assert!(batches > 3, "several batches");
        assert!(kept.bytes == text, "every byte once, in order");
        assert_eq!(kept.ended.last(), Some(&true));
        assert_eq!(kept.ended.iter().filter(|ended| **ended).count(), 1);
    }

    #[test]
    fn a_byte_order_mark_is_read_on_line_one_only() {
        let lines: Vec<_> = batches(b"\xEF\xBB\xBF{}\n\xEF\xBB\xBF{}\n")
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(lines[0], (1, Ok(Some(b"{}".to_vec()))));
        assert_eq!(lines[1], (2, Err(LineErrorKind::MisplacedBom)));
    }

    #[test]
    fn an_overlong_line_is_refused_alone_and_the_next_line_keeps_its_number() {
        for ending in ["\n{\"next\": 1}\n", ""] {
            let mut text = b"{}\n".to_vec();
            text.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 1));
            text.extend_from_slice(ending.as_bytes());
            let lines: Vec<_> = batches(&text).into_iter().flatten().collect();
            assert_eq!(lines[0], (1, Ok(Some(b"{}".to_vec()))));
            assert_eq!(lines[1], (2, Err(LineErrorKind::TooLong)));
            if ending.is_empty() {
                assert_eq!(lines.len(), 2);
            } else {
                assert_eq!(lines[2], (3, Ok(Some(b"{\"next\": 1}".to_vec()))));
            }
        }
        // After an overlong line the next batch starts from lines already read: a long
        // line among them is held to the limit too.
        let mut text = vec![b'x'; MAX_LINE_BYTES + 1];
        text.extend_from_slice(b"\n{}\n");
        text.extend(std::iter::repeat_n(b'y', MAX_LINE_BYTES + 1));
        text.extend_from_slice(b"\n{}\n");
        let lines: Vec<_> = batches(&text).into_iter().flatten().collect();
        assert_eq!(
            lines,
            vec![
                (1, Err(LineErrorKind::TooLong)),
                (2, Ok(Some(b"{}".to_vec()))),
                (3, Err(LineErrorKind::TooLong)),
                (4, Ok(Some(b"{}".to_vec()))),
            ]
        );
        let mut exact = vec![b'x'; MAX_LINE_BYTES];
        exact.push(b'\n');
        let lines: Vec<_> = batches(&exact).into_iter().flatten().collect();
        assert!(
            matches!(lines[0], (1, Ok(Some(_)))),
            "a line of the limit is kept"
        );
    }
}
