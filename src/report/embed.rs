//! How a page carries its data: JSON that cannot end its `<script>` element, and JSON
//! arrays compressed with raw deflate and base64-encoded, which the browser inflates with
//! its own `DecompressionStream`. Shared by the comparison report and the panel
//! dashboard.

use std::io::{self, Write};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use flate2::write::DeflateEncoder;
use flate2::{Compress, Compression, FlushCompress, Status};
use serde::Serialize;

/// Writes JSON text for a `<script>` element: `<`, `>` and `&` (which JSON only ever
/// holds inside strings) become `\u003c`, `\u003e` and `\u0026`, the same string to
/// `JSON.parse`.
pub struct ScriptSafe<W>(pub W);

impl<W: Write> Write for ScriptSafe<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut start = 0;
        for (i, byte) in buf.iter().enumerate() {
            let escaped: &[u8] = match byte {
                b'<' => b"\\u003c",
                b'>' => b"\\u003e",
                b'&' => b"\\u0026",
                _ => continue,
            };
            self.0.write_all(&buf[start..i])?;
            self.0.write_all(escaped)?;
            start = i + 1;
        }
        self.0.write_all(&buf[start..])?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// The deflate level of what a page inflates as it opens in one piece (a dashboard's
/// data): smaller is faster to load.
pub const LEVEL: u32 = 6;

/// The deflate level of what a page inflates only on demand (a report's detail chunks,
/// one when an item opens): the fastest measured on a report of a million items, where
/// level 6 took most of the time (level 1's static codes made larger chunks and were
/// slower still).
pub const ON_DEMAND_LEVEL: u32 = 2;

/// The deflate level of a [`PartedColumn`]'s parts (a report's index columns, on the
/// workers): on a report of a million items level 5 took half the time of level 6 for an
/// index a tenth larger, and the first render of a 200,000-item page did not move beyond
/// the run-to-run noise (BENCHMARKS.md).
const PART_LEVEL: u32 = 5;

/// A JSON array compressed in parts that were compressed apart (on different threads) and
/// joined: each part is raw deflate blocks ended by a sync flush, which leaves the stream
/// at a byte boundary with no final block, so the parts concatenate into one valid stream
/// (as `pigz` does); [`PartedColumn::finish`] ends it. A part starts with an empty window,
/// which costs a few hundred bytes per part.
#[derive(Default)]
pub struct PartedColumn {
    compressed: Vec<u8>,
    parts: usize,
}

/// The elements of one part of a [`PartedColumn`], as JSON text.
pub struct Part {
    text: Vec<u8>,
    empty: bool,
}

impl Part {
    /// The part with the given number (0 opens the array).
    pub fn new(number: usize) -> Self {
        Self {
            text: if number == 0 {
                b"[".to_vec()
            } else {
                Vec::new()
            },
            empty: number == 0,
        }
    }

    pub fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> io::Result<()> {
        if !self.empty {
            self.text.push(b',');
        }
        self.empty = false;
        serde_json::to_writer(&mut self.text, value)?;
        Ok(())
    }

    /// The part compressed, to be appended in order with [`PartedColumn::append`].
    pub fn compress(self) -> io::Result<Vec<u8>> {
        deflate_raw(&self.text, FlushCompress::Sync)
    }
}

impl PartedColumn {
    /// Appends the next part, numbered from 0 in the order the parts were made. Every
    /// part holds at least one element (part 0 opens the array, the others start with
    /// the comma before their first element).
    pub fn append(&mut self, part: &[u8]) {
        self.compressed.extend_from_slice(part);
        self.parts += 1;
    }

    /// The whole array, compressed, base64.
    pub fn finish(mut self) -> io::Result<String> {
        let end: &[u8] = if self.parts == 0 { b"[]" } else { b"]" };
        let last = deflate_raw(end, FlushCompress::Finish)?;
        self.compressed.extend_from_slice(&last);
        Ok(STANDARD.encode(&self.compressed))
    }
}

/// `bytes` as raw deflate at [`PART_LEVEL`] from an empty window, ended by `flush` (`Sync`: a
/// part to continue; `Finish`: the final block).
fn deflate_raw(bytes: &[u8], flush: FlushCompress) -> io::Result<Vec<u8>> {
    let mut compress = Compress::new(Compression::new(PART_LEVEL), false);
    let mut out = Vec::with_capacity(bytes.len() / 4 + 64);
    loop {
        let read = compress.total_in() as usize;
        let status = compress
            .compress_vec(&bytes[read..], &mut out, flush)
            .map_err(io::Error::other)?;
        let done = compress.total_in() as usize == bytes.len()
            && match flush {
                FlushCompress::Finish => status == Status::StreamEnd,
                // A flush is complete once it stopped with output room to spare.
                _ => out.len() < out.capacity(),
            };
        if done {
            return Ok(out);
        }
        out.reserve(out.capacity().max(4096));
    }
}

/// `bytes` compressed with raw deflate, base64.
pub fn deflated_base64(bytes: &[u8]) -> io::Result<String> {
    let mut encoder =
        DeflateEncoder::new(Vec::with_capacity(bytes.len() / 4), Compression::new(LEVEL));
    encoder.write_all(bytes)?;
    Ok(STANDARD.encode(encoder.finish()?))
}

/// What [`deflated_base64`] was given, as text (for tests).
#[cfg(test)]
pub(crate) fn inflate(base64: &str) -> String {
    use flate2::read::DeflateDecoder;
    use std::io::Read;
    let bytes = STANDARD.decode(base64).unwrap();
    let mut text = String::new();
    DeflateDecoder::new(&bytes[..])
        .read_to_string(&mut text)
        .unwrap();
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_compressed_apart_join_into_one_stream_of_the_whole_array() {
        let mut column = PartedColumn::default();
        let mut expected = Vec::new();
        for number in 0..3 {
            let mut part = Part::new(number);
            for element in 0..1000 {
                let value = format!("item {number}/{element} {}", "text ".repeat(element % 7));
                part.push(&value).unwrap();
                expected.push(value);
            }
            column.append(&part.compress().unwrap());
        }
        let text = inflate(&column.finish().unwrap());
        let back: Vec<String> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, expected);
        assert_eq!(inflate(&PartedColumn::default().finish().unwrap()), "[]");
    }
}
