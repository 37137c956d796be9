//! How a page carries its data: JSON that cannot end its `<script>` element, and JSON
//! arrays compressed with raw deflate and base64-encoded, which the browser inflates with
//! its own `DecompressionStream`. Shared by the comparison report and the panel
//! dashboard.

use std::io::{self, Write};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use flate2::Compression;
use flate2::write::DeflateEncoder;
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

/// The deflate level of what a page inflates as it opens (the index columns, a
/// dashboard's data): smaller is faster to load. Measured on a 200,000-item report, level
/// 2 here made the first render about a fifth slower (BENCHMARKS.md).
pub const LEVEL: u32 = 6;

/// The deflate level of what a page inflates only on demand (a report's detail chunks,
/// one when an item opens): the fastest measured on a report of a million items, where
/// level 6 took most of the time (level 1's static codes made larger chunks and were
/// slower still).
pub const ON_DEMAND_LEVEL: u32 = 2;

/// How many bytes of a [`Column`] are staged before they are compressed.
const STAGED_BYTES: usize = 64 * 1024;

/// A JSON array written into a raw-deflate stream, one element at a time: one column of
/// the page's index.
pub struct Column {
    encoder: DeflateEncoder<Vec<u8>>,
    /// Elements not yet handed to the encoder (which is slow to call per element).
    staged: Vec<u8>,
    empty: bool,
}

impl Column {
    pub fn new() -> Self {
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::new(LEVEL));
        encoder.write_all(b"[").expect("writing to memory");
        Self {
            encoder,
            staged: Vec::new(),
            empty: true,
        }
    }

    pub fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> io::Result<()> {
        if !self.empty {
            self.staged.push(b',');
        }
        self.empty = false;
        serde_json::to_writer(&mut self.staged, value)?;
        if self.staged.len() >= STAGED_BYTES {
            self.encoder.write_all(&self.staged)?;
            self.staged.clear();
        }
        Ok(())
    }

    /// The compressed array, base64.
    pub fn finish(mut self) -> io::Result<String> {
        self.staged.push(b']');
        self.encoder.write_all(&self.staged)?;
        Ok(STANDARD.encode(self.encoder.finish()?))
    }
}

impl Default for Column {
    fn default() -> Self {
        Self::new()
    }
}

/// `bytes` compressed with raw deflate, base64.
pub fn deflated_base64(bytes: &[u8]) -> io::Result<String> {
    let mut encoder =
        DeflateEncoder::new(Vec::with_capacity(bytes.len() / 4), Compression::new(LEVEL));
    encoder.write_all(bytes)?;
    Ok(STANDARD.encode(encoder.finish()?))
}
