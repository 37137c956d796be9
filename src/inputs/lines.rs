//! JSON Lines as validate indexes a raw file: which lines hold something, read without
//! holding a line (a tampered raw file's line may be of any length). Import reads lines
//! through `jsonl`'s parallel batches instead: they are cut into batches, not visited.

use std::io::{self, BufRead};

use super::shape::Index;
use crate::jsonl::{BOM, is_blank_byte};

/// The nonblank lines of a JSON Lines stream (a line of only JSON whitespace is blank; a
/// byte order mark may open the first), read to its end.
pub fn index(mut reader: impl BufRead) -> io::Result<Index> {
    if reader.fill_buf()?.starts_with(BOM) {
        reader.consume(BOM.len());
    }
    let mut nonblank = Vec::new();
    loop {
        // A line's leading whitespace, then its end (a blank line) or its first content.
        let content = loop {
            let buffer = reader.fill_buf()?;
            if buffer.is_empty() {
                return Ok(Index::Lines(nonblank));
            }
            match buffer.iter().position(|&b| !is_blank_byte(b)) {
                Some(at) => {
                    let blank = buffer[at] == b'\n';
                    reader.consume(at + usize::from(blank));
                    break !blank;
                }
                None => {
                    let all = buffer.len();
                    reader.consume(all);
                }
            }
        };
        nonblank.push(content);
        if content {
            reader.skip_until(b'\n')?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Locator;

    fn lines(text: &[u8]) -> Vec<Option<bool>> {
        let index = index(text).unwrap();
        (1..=5).map(|n| index.resolves(&Locator::Line(n))).collect()
    }

    #[test]
    fn only_lines_that_hold_something_resolve() {
        let text = b"\xEF\xBB\xBF{\"a\": 1}\r\n \t\r\n\n{\"b\": 2}";
        let yes = Some(true);
        let no = Some(false);
        assert_eq!(lines(text), [yes, no, no, yes, no]);
        assert_eq!(lines(b"\xEF\xBB\xBF\n{}\n"), [no, yes, no, no, no]);
        assert_eq!(lines(b""), [no, no, no, no, no]);
    }
}
