//! A streaming reader of one JSON document: the members of its top-level object, and the
//! elements of one array in it handed out one at a time, so a document of hundreds of MB
//! never has to be in memory whole (an Inspect `.json` log, a HELM `scenario_state.json`).
//!
//! The reader only finds where each value begins and ends (strings, escapes and nesting
//! are tracked byte by byte); the values themselves are parsed by the caller with the
//! strict JSON reader, which also handles bare `NaN` tokens as the import policy says. An
//! import scans a document of up to a million items once: where its items are ([`Spans`])
//! is noted as its header members are read from the bytes being copied, and the items are
//! then read from the copy at those places ([`SpannedItems`]); a longer one is scanned
//! again for its items.

use std::fs::File;
use std::io::{self, BufRead, Read};

use super::shape::{
    Content, HeaderVisit, Index, Item, ItemVisit, MAX_ITEM_BYTES, Reading, Shape, ShapeError, Stop,
};
use crate::canonical_json;
use crate::record::Locator;

/// Where the items of a document are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Items<'a> {
    /// The document is an array; its elements are the items (`/0`, `/1`, ...).
    TopLevel,
    /// The array under this key of the top-level object (`/samples/0`, ...).
    Member(&'a str),
    /// None: the document is an object, and its members (those `capture` selects) are
    /// what the caller reads, one at a time (an OpenCompass predictions file).
    Nothing,
}

impl Items<'_> {
    /// The JSON Pointer of item `index`.
    pub fn pointer(self, index: u64) -> String {
        match self {
            Items::TopLevel => format!("/{index}"),
            Items::Member(key) => format!("/{}/{index}", escape_pointer(key)),
            Items::Nothing => format!("/{index}"),
        }
    }
}

/// A key as a JSON Pointer reference token (RFC 6901: `~` as `~0`, `/` as `~1`).
pub fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// What the reader hands out.
pub enum Part<'a> {
    /// A top-level member the caller asked for, as its JSON text.
    Member { key: &'a str, value: &'a [u8] },
    /// One item, as its JSON text.
    Item { index: u64, value: &'a [u8] },
}

/// Why a document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError<E> {
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Not JSON of the expected shape, at this byte offset.
    #[error("byte {offset}: {message}")]
    Shape { offset: u64, message: String },
    /// A value longer than the limit.
    #[error("byte {offset}: a value longer than {limit} bytes")]
    TooLong { offset: u64, limit: usize },
    /// The caller's own failure, passed through.
    #[error("{0}")]
    Visit(E),
}

struct Lexer<R> {
    reader: R,
    offset: u64,
}

/// Where [`Lexer::value`] is inside a value: strings, escapes and nesting, tracked across
/// the reader's buffers.
#[derive(Default)]
struct ValueScan {
    depth: usize,
    in_string: bool,
    escaped: bool,
}

/// How far a [`ValueScan`] of one buffer got.
enum ScanEnd {
    /// The buffer ended inside the value.
    More,
    /// The value ended (a scalar's end is the byte after it, left unread).
    Done,
    /// A closing bracket with no opening one, as the last byte used.
    Unopened,
}

/// The bytes that open or close a string or a container.
const NESTING: [bool; 256] = {
    let mut table = [false; 256];
    let mut at = 0;
    while at < 5 {
        table[b"\"{}[]"[at] as usize] = true;
        at += 1;
    }
    table
};

impl ValueScan {
    /// Scans `buffer` (the value's first bytes are read when `started`): the number of
    /// bytes that belong to the value, and why the scan stopped.
    fn scan(&mut self, buffer: &[u8], mut started: bool) -> (usize, ScanEnd) {
        let mut at = 0;
        while at < buffer.len() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    at += 1;
                    continue;
                }
                // Control bytes are found too; inside a string they are only skipped.
                let Some(found) = canonical_json::next_escape(buffer, at) else {
                    return (buffer.len(), ScanEnd::More);
                };
                at = found + 1;
                match buffer[found] {
                    b'\\' => self.escaped = true,
                    b'"' => {
                        self.in_string = false;
                        if self.depth == 0 {
                            return (at, ScanEnd::Done);
                        }
                    }
                    _ => {}
                }
                continue;
            }
            if self.depth > 0 {
                // Inside a container only quotes and brackets matter.
                match buffer[at..].iter().position(|&b| NESTING[usize::from(b)]) {
                    Some(skip) => at += skip,
                    None => return (buffer.len(), ScanEnd::More),
                }
            }
            let byte = buffer[at];
            if self.depth == 0
                && started
                && matches!(byte, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
            {
                return (at, ScanEnd::Done);
            }
            at += 1;
            started = true;
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => match self.depth.checked_sub(1) {
                    None => return (at, ScanEnd::Unopened),
                    Some(0) => {
                        self.depth = 0;
                        return (at, ScanEnd::Done);
                    }
                    Some(depth) => self.depth = depth,
                },
                _ => {}
            }
        }
        (at, ScanEnd::More)
    }
}

impl<R: BufRead> Lexer<R> {
    fn peek(&mut self) -> io::Result<Option<u8>> {
        Ok(self.reader.fill_buf()?.first().copied())
    }

    fn bump(&mut self) -> io::Result<Option<u8>> {
        let byte = self.peek()?;
        if byte.is_some() {
            self.reader.consume(1);
            self.offset += 1;
        }
        Ok(byte)
    }

    fn skip_whitespace(&mut self) -> io::Result<()> {
        loop {
            let buffer = self.reader.fill_buf()?;
            let blank = buffer
                .iter()
                .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
                .count();
            let done = blank < buffer.len() || buffer.is_empty();
            self.reader.consume(blank);
            self.offset += blank as u64;
            if done {
                return Ok(());
            }
        }
    }

    fn shape<E>(&self, message: impl Into<String>) -> DocumentError<E> {
        DocumentError::Shape {
            offset: self.offset,
            message: message.into(),
        }
    }

    fn expect<E>(&mut self, wanted: u8, what: &str) -> Result<(), DocumentError<E>> {
        self.skip_whitespace()?;
        match self.bump()? {
            Some(byte) if byte == wanted => Ok(()),
            Some(byte) => Err(self.shape(format!("expected {what}, found {:?}", byte as char))),
            None => Err(self.shape(format!("expected {what}, found the end of the file"))),
        }
    }

    /// Reads one value; its bytes go to `out` when given (at most `limit` of them). The
    /// buffer is scanned a chunk at a time ([`ValueScan`]), strings a block at a time
    /// ([`canonical_json::next_escape`]).
    fn value<E>(
        &mut self,
        mut out: Option<&mut Vec<u8>>,
        limit: usize,
    ) -> Result<(), DocumentError<E>> {
        self.skip_whitespace()?;
        let start = self.offset;
        let mut scan = ValueScan::default();
        loop {
            let buffer = self.reader.fill_buf()?;
            if buffer.is_empty() {
                return if scan.depth == 0 && !scan.in_string && self.offset > start {
                    Ok(())
                } else {
                    Err(self.shape("the file ends inside a value"))
                };
            }
            let (used, end) = scan.scan(buffer, self.offset > start);
            if let Some(out) = out.as_deref_mut() {
                if out.len() + used > limit {
                    return Err(DocumentError::TooLong {
                        offset: start,
                        limit,
                    });
                }
                out.extend_from_slice(&buffer[..used]);
            }
            self.reader.consume(used);
            self.offset += used as u64;
            match end {
                ScanEnd::More => {}
                ScanEnd::Done => return Ok(()),
                ScanEnd::Unopened => {
                    return Err(self.shape("a closing bracket without its opening one"));
                }
            }
        }
    }

    /// Reads a string value (an object key) and decodes it.
    fn key<E>(&mut self) -> Result<String, DocumentError<E>> {
        let mut raw = Vec::new();
        self.skip_whitespace()?;
        if self.peek()? != Some(b'"') {
            return Err(self.shape("expected a key string"));
        }
        self.value(Some(&mut raw), 1 << 20)?;
        serde_json::from_slice(&raw)
            .map_err(|e| self.shape(format!("a key is not a JSON string ({e})")))
    }
}

/// Reads the JSON document from `reader`: hands each top-level member named by
/// `capture` (a document that is an object) and each item to `visit`, in document order;
/// other members are skipped without being kept. No value may exceed `limit` bytes.
pub fn read<R: BufRead, E>(
    reader: R,
    items: Items<'_>,
    capture: &dyn Fn(&str) -> bool,
    limit: usize,
    visit: impl FnMut(Part<'_>) -> Result<(), E>,
) -> Result<(), DocumentError<E>> {
    scan(reader, items, capture, limit, true, visit, None).map(drop)
}

/// Reads the document as [`read`] does, handing `visit` only the captured members: the
/// items are checked and counted but never copied. Returns the number of items.
pub fn read_members<R: BufRead, E>(
    reader: R,
    items: Items<'_>,
    capture: &dyn Fn(&str) -> bool,
    limit: usize,
    visit: impl FnMut(Part<'_>) -> Result<(), E>,
) -> Result<u64, DocumentError<E>> {
    scan(reader, items, capture, limit, false, visit, None).map(|(count, _)| count)
}

/// The number of items of a document (what a JSON Pointer to an item may index).
pub fn count_items<R: BufRead>(
    reader: R,
    items: Items<'_>,
) -> Result<u64, DocumentError<std::convert::Infallible>> {
    read_members(reader, items, &|_| false, usize::MAX, |_| Ok(()))
}

/// Where the items of a document are, in order: each one's first byte and the byte after
/// it. Noted as the header members are read from the bytes being copied, so that the items
/// are then read from the copy without scanning it again ([`SpannedItems`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spans(Vec<(u64, u64)>);

impl Spans {
    /// Each item's first byte and the byte after it, in order.
    pub fn of_items(&self) -> &[(u64, u64)] {
        &self.0
    }
}

/// The most items whose [`Spans`] are noted: 16 MiB of them. A document with more is
/// scanned again for its items.
const MOST_SPANS: usize = 1 << 20;

/// [`read`] and [`read_members`]: items are copied and visited only when `keep_items`;
/// where each item is (its [`Spans`]) is noted when `spans` gives their most, and not
/// given back past it.
fn scan<R: BufRead, E>(
    mut reader: R,
    items: Items<'_>,
    capture: &dyn Fn(&str) -> bool,
    limit: usize,
    keep_items: bool,
    mut visit: impl FnMut(Part<'_>) -> Result<(), E>,
    spans: Option<usize>,
) -> Result<(u64, Option<Spans>), DocumentError<E>> {
    // A UTF-8 byte order mark is allowed at the very start. Its three bytes are read
    // first (a reader may hand them out one at a time) and put back when they are not one.
    let mut head = [0u8; 3];
    let mut got = 0;
    while got < head.len() {
        let buffer = reader.fill_buf()?;
        let take = buffer.len().min(head.len() - got);
        if take == 0 {
            break;
        }
        head[got..got + take].copy_from_slice(&buffer[..take]);
        reader.consume(take);
        got += take;
    }
    let bom = head[..got] == *b"\xEF\xBB\xBF";
    let skipped = if bom { got } else { 0 };
    let mut lexer = Lexer {
        reader: (&head[skipped..got]).chain(reader),
        offset: skipped as u64,
    };
    let mut scan = Scan {
        capture,
        limit,
        keep_items,
        count: 0,
        buffer: Vec::new(),
        spans: spans.map(|most| (Vec::new(), most)),
    };
    match items {
        Items::TopLevel => scan.array(&mut lexer, &mut visit)?,
        Items::Member(wanted) => scan.object(&mut lexer, Some(wanted), &mut visit)?,
        Items::Nothing => scan.object(&mut lexer, None, &mut visit)?,
    }
    lexer.skip_whitespace()?;
    if lexer.peek()?.is_some() {
        return Err(lexer.shape("more after the end of the document"));
    }
    let spans = scan.spans.map(|(spans, _)| Spans(spans));
    Ok((scan.count, spans))
}

/// One reading of a document: what it keeps and hands out, and the items counted.
struct Scan<'c> {
    capture: &'c dyn Fn(&str) -> bool,
    limit: usize,
    keep_items: bool,
    count: u64,
    buffer: Vec<u8>,
    /// Where each item is, noted while there are no more than the most given.
    spans: Option<(Vec<(u64, u64)>, usize)>,
}

impl Scan<'_> {
    /// The items array, each item handed out (or only checked) in turn.
    fn array<R: BufRead, E>(
        &mut self,
        lexer: &mut Lexer<R>,
        visit: &mut dyn FnMut(Part<'_>) -> Result<(), E>,
    ) -> Result<(), DocumentError<E>> {
        lexer.expect(b'[', "[ (an array)")?;
        lexer.skip_whitespace()?;
        if lexer.peek()? == Some(b']') {
            lexer.bump()?;
            return Ok(());
        }
        loop {
            if self.keep_items {
                self.buffer.clear();
                lexer.value(Some(&mut self.buffer), self.limit)?;
                visit(Part::Item {
                    index: self.count,
                    value: &self.buffer,
                })
                .map_err(DocumentError::Visit)?;
            } else {
                lexer.skip_whitespace()?;
                let start = lexer.offset;
                lexer.value::<E>(None, self.limit)?;
                if let Some((spans, most)) = &mut self.spans {
                    match spans.len() < *most {
                        true => spans.push((start, lexer.offset)),
                        false => self.spans = None,
                    }
                }
            }
            self.count += 1;
            lexer.skip_whitespace()?;
            match lexer.bump()? {
                Some(b',') => {}
                Some(b']') => return Ok(()),
                _ => return Err(lexer.shape("expected , or ] after an item")),
            }
        }
    }

    /// The top-level object: the member `items` names is the items array, captured
    /// members are handed out, the others skipped.
    fn object<R: BufRead, E>(
        &mut self,
        lexer: &mut Lexer<R>,
        items: Option<&str>,
        visit: &mut dyn FnMut(Part<'_>) -> Result<(), E>,
    ) -> Result<(), DocumentError<E>> {
        lexer.expect(b'{', "{ (a JSON object)")?;
        lexer.skip_whitespace()?;
        if lexer.peek()? == Some(b'}') {
            lexer.bump()?;
            return Ok(());
        }
        // A repeated key is refused, as the strict reader refuses one at any depth: a
        // second `samples` would otherwise add items, or replace a header.
        let mut keys = std::collections::HashSet::new();
        loop {
            let key = lexer.key()?;
            if !keys.insert(key.clone()) {
                return Err(lexer.shape(format!("duplicate key {key:?} in the document")));
            }
            lexer.expect(b':', ":")?;
            if items == Some(key.as_str()) {
                self.array(lexer, visit)?;
            } else if (self.capture)(&key) {
                let mut value = Vec::new();
                lexer.value(Some(&mut value), self.limit)?;
                visit(Part::Member {
                    key: &key,
                    value: &value,
                })
                .map_err(DocumentError::Visit)?;
            } else {
                lexer.value::<E>(None, self.limit)?;
            }
            lexer.skip_whitespace()?;
            match lexer.bump()? {
                Some(b',') => {}
                Some(b'}') => return Ok(()),
                _ => return Err(lexer.shape("expected , or } after a member")),
            }
        }
    }
}

/// A document read through a shape: buffered, bounded.
fn scan_shape(
    file: File,
    items: Items<'_>,
    capture: &dyn Fn(&str) -> bool,
    visit: impl FnMut(Part<'_>) -> Result<(), Stop>,
) -> Result<(), ShapeError> {
    let reader = io::BufReader::with_capacity(256 * 1024, file);
    read(reader, items, capture, MAX_ITEM_BYTES, visit).map_err(shape_error)
}

/// A document's failure told apart: the visitor's stop, a failed read, a document of
/// another shape.
fn shape_error(error: DocumentError<Stop>) -> ShapeError {
    match error {
        DocumentError::Visit(Stop) => ShapeError::Stopped,
        DocumentError::Io(error) => ShapeError::Io(error),
        other => ShapeError::Invalid(format!("not the JSON document the format reads: {other}")),
    }
}

/// The items of a JSON document: the elements of one array (`items`), each located by
/// its pointer; header members are top-level members of the document, before or after
/// the items.
pub struct ArrayItems {
    pub items: Items<'static>,
}

impl ArrayItems {
    /// The header members of the document `reader` gives, which `wanted` names, handed to
    /// `visit` (what [`Shape::header`] does for a file): the import reads them from the
    /// bytes it copies, as it copies them.
    ///
    /// Gives where the items are, unless there are more than a million of them.
    pub fn header_from(
        &self,
        reader: impl BufRead,
        wanted: &[&str],
        visit: &mut HeaderVisit,
    ) -> Result<Option<Spans>, ShapeError> {
        // The items' bytes are checked and skipped, never copied.
        scan(
            reader,
            self.items,
            &|key| wanted.contains(&key),
            MAX_ITEM_BYTES,
            false,
            |part| match part {
                Part::Member { key, value } => visit(key, value),
                Part::Item { .. } => Ok(()),
            },
            Some(MOST_SPANS),
        )
        .map(|(_, spans)| spans)
        .map_err(shape_error)
    }
}

/// The items of a JSON document whose [`Spans`] were noted as it was copied: each is read
/// from where it is, the document not scanned again. Its shape was checked whole by then;
/// what this read checks is what that scan did not: that no item is longer than
/// [`MAX_ITEM_BYTES`], and that the file is still long enough to hold every item.
pub struct SpannedItems {
    pub items: Items<'static>,
    pub spans: Spans,
}

impl Shape for SpannedItems {
    fn items(&self, file: File, visit: &mut ItemVisit) -> Reading {
        let mut reader = io::BufReader::with_capacity(256 * 1024, file);
        let mut at = 0u64;
        for (index, &(start, end)) in self.spans.0.iter().enumerate() {
            if end - start > MAX_ITEM_BYTES as u64 {
                return Err(shape_error(DocumentError::TooLong {
                    offset: start,
                    limit: MAX_ITEM_BYTES,
                }));
            }
            // Spans are in order, each after the one before (a comma, maybe blanks).
            let gap = start
                .checked_sub(at)
                .and_then(|gap| i64::try_from(gap).ok())
                .expect("spans in file order");
            reader.seek_relative(gap).map_err(ShapeError::Io)?;
            let mut item = Vec::with_capacity((end - start) as usize);
            Read::by_ref(&mut reader)
                .take(end - start)
                .read_to_end(&mut item)
                .map_err(ShapeError::Io)?;
            if item.len() as u64 != end - start {
                return Err(ShapeError::Invalid(format!(
                    "the file is shorter than when it was copied: item {index} ended at byte {end}"
                )));
            }
            at = end;
            visit(Item {
                locator: Locator::Pointer(self.items.pointer(index as u64)),
                content: Content::ReadJson(item),
            })
            .map_err(|Stop| ShapeError::Stopped)?;
        }
        Ok(())
    }

    fn index(&self, file: File) -> Result<Index, String> {
        ArrayItems { items: self.items }.index(file)
    }
}

/// Its header members are read with [`ArrayItems::header_from`], from the bytes as the
/// import copies them, not from the file.
impl Shape for ArrayItems {
    fn items(&self, file: File, visit: &mut ItemVisit) -> Reading {
        scan_shape(file, self.items, &|_| false, |part| match part {
            Part::Item { index, value } => visit(Item {
                locator: Locator::Pointer(self.items.pointer(index)),
                content: Content::Json(value),
            }),
            Part::Member { .. } => Ok(()),
        })
    }

    fn index(&self, file: File) -> Result<Index, String> {
        let reader = io::BufReader::with_capacity(256 * 1024, file);
        match count_items(reader, self.items) {
            Ok(count) => Ok(Index::Items {
                items: self.items,
                count,
            }),
            Err(error) => Err(format!("cannot be read: {error}")),
        }
    }
}

/// The items of a JSON object read a member at a time (an OpenCompass predictions file):
/// each member is an item, located by `/<key>`. Memory holds one item.
pub struct MemberItems;

impl Shape for MemberItems {
    fn items(&self, file: File, visit: &mut ItemVisit) -> Reading {
        scan_shape(file, Items::Nothing, &|_| true, |part| match part {
            Part::Member { key, value } => visit(Item {
                locator: Locator::Pointer(format!("/{}", escape_pointer(key))),
                content: Content::Member { key, value },
            }),
            Part::Item { .. } => Ok(()),
        })
    }

    fn index(&self, file: File) -> Result<Index, String> {
        let mut keys = std::collections::HashSet::new();
        let reader = io::BufReader::with_capacity(256 * 1024, file);
        let read = read::<_, std::convert::Infallible>(
            reader,
            Items::Nothing,
            &|_| true,
            crate::jsonl::MAX_LINE_BYTES,
            |part| {
                if let Part::Member { key, .. } = part {
                    keys.insert(format!("/{}", escape_pointer(key)));
                }
                Ok(())
            },
        );
        match read {
            Ok(()) => Ok(Index::Pointers(keys)),
            Err(error) => Err(format!("cannot be read: {error}")),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn parts(text: &str, items: Items<'_>) -> (Vec<(String, String)>, Vec<String>) {
        let mut members = Vec::new();
        let mut found = Vec::new();
        read::<_, ()>(
            text.as_bytes(),
            items,
            &|k| k != "skipped",
            1 << 20,
            |part| {
                match part {
                    Part::Member { key, value } => {
                        members.push((key.to_owned(), String::from_utf8(value.to_vec()).unwrap()))
                    }
                    Part::Item { index, value } => {
                        assert_eq!(index as usize, found.len());
                        found.push(String::from_utf8(value.to_vec()).unwrap());
                    }
                }
                Ok(())
            },
        )
        .unwrap();
        (members, found)
    }

    #[test]
    fn members_and_items_come_out_whole_and_in_order() {
        let text = r#"{"version": 2, "eval": {"a": [1, "]}"]}, "skipped": [[[]]], "samples": [ {"id": "q\"1"} , [1,2], "s", 3.5e1, NaN ], "tail": "x"}"#;
        let (members, items) = parts(text, Items::Member("samples"));
        assert_eq!(
            members,
            [
                ("version".into(), "2".into()),
                ("eval".into(), r#"{"a": [1, "]}"]}"#.into()),
                ("tail".into(), "\"x\"".into())
            ]
        );
        assert_eq!(
            items,
            [r#"{"id": "q\"1"}"#, "[1,2]", "\"s\"", "3.5e1", "NaN"]
        );
        let mut skipped = Vec::new();
        let count = read_members::<_, ()>(
            text.as_bytes(),
            Items::Member("samples"),
            &|k| k != "skipped",
            1 << 20,
            |part| {
                if let Part::Member { key, .. } = part {
                    skipped.push(key.to_owned());
                }
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(
            (count, skipped.len()),
            (5, 3),
            "the same members, the items only counted"
        );
        let (_, items) = parts("\u{feff} [ {\"a\":1}, {} ]\n", Items::TopLevel);
        assert_eq!(items, ["{\"a\":1}", "{}"]);
        assert_eq!(Items::Member("a/b~c").pointer(3), "/a~1b~0c/3");
    }

    /// The items `shape` hands out from a file holding `text`, with their pointers, or its
    /// error.
    pub(crate) fn handed_out(
        shape: &dyn Shape,
        text: &[u8],
    ) -> Result<Vec<(String, Vec<u8>)>, String> {
        let mut file = tempfile::tempfile().unwrap();
        io::Write::write_all(&mut file, text).unwrap();
        io::Seek::rewind(&mut file).unwrap();
        let mut found = Vec::new();
        shape
            .items(file, &mut |item| {
                let value = match item.content {
                    Content::Json(value) => value.to_vec(),
                    Content::ReadJson(value) => value,
                    _ => unreachable!("a document's items are JSON"),
                };
                let Locator::Pointer(at) = item.locator else {
                    unreachable!("a document's items are at a pointer")
                };
                found.push((at, value));
                Ok(())
            })
            .map_err(|error| format!("{error:?}"))?;
        Ok(found)
    }

    /// Where the items of `text` are, as the header pass notes them (at most `most`).
    fn spans_of(text: &[u8], items: Items<'static>, most: usize) -> Option<Spans> {
        scan::<_, ()>(
            text,
            items,
            &|_| true,
            1 << 20,
            false,
            |_| Ok(()),
            Some(most),
        )
        .unwrap()
        .1
    }

    #[test]
    fn items_read_where_the_copy_found_them_are_the_items_a_scan_hands_out() {
        for (text, items) in [
            (
                r#"{"eval": {"a": "x\"y\\"}, "samples": [ {"id": "q\"1", "n": [1, {}]} , "s\\",3.5e1,  true, null], "tail": [1]}"#,
                Items::Member("samples"),
            ),
            (
                "\u{feff}[ 12 ,\"\\u0041\",[[]]\n,{\"k\":\"]\"}]",
                Items::TopLevel,
            ),
            (r#"{"samples": [], "eval": 1}"#, Items::Member("samples")),
            ("[\n\t{\"a\": \"\u{feff}\"}\r\n]", Items::TopLevel),
        ] {
            let spans = spans_of(text.as_bytes(), items, 100).expect("noted");
            // The copy hands its bytes over in chunks, which may end anywhere.
            for capacity in [1, 2, 3, 7] {
                let reader = io::BufReader::with_capacity(capacity, text.as_bytes());
                let chunked = scan::<_, ()>(
                    reader,
                    items,
                    &|_| true,
                    1 << 20,
                    false,
                    |_| Ok(()),
                    Some(100),
                );
                assert_eq!(
                    chunked.unwrap().1.as_ref(),
                    Some(&spans),
                    "{text} by {capacity}"
                );
            }
            let scanned = handed_out(&ArrayItems { items }, text.as_bytes()).unwrap();
            let spanned = handed_out(&SpannedItems { items, spans }, text.as_bytes()).unwrap();
            assert_eq!(spanned, scanned, "{text}");
        }
        // Past the most noted, none are given, and the document is scanned again.
        let text = b"[1, 2, 3]";
        assert!(spans_of(text, Items::TopLevel, 3).is_some());
        assert_eq!(spans_of(text, Items::TopLevel, 2), None);
        // What the copy's scan does not check, reading where the items are does: an item
        // longer than the limit, a file cut short since it was copied.
        let long = SpannedItems {
            items: Items::TopLevel,
            spans: Spans(vec![(1, 2), (4, 5 + MAX_ITEM_BYTES as u64)]),
        };
        let error = handed_out(&long, b"[1, 2]").unwrap_err();
        assert!(error.contains("byte 4: a value longer than"), "{error}");
        let spans = spans_of(b"[1, 22]", Items::TopLevel, 100).unwrap();
        let cut = SpannedItems {
            items: Items::TopLevel,
            spans,
        };
        let error = handed_out(&cut, b"[1, 2").unwrap_err();
        assert!(
            error.contains("shorter than when it was copied: item 1 ended at byte 6"),
            "{error}"
        );
    }

    #[test]
    fn broken_documents_are_refused_with_an_offset() {
        for (text, items) in [
            (r#"{"samples": [1, 2"#, Items::Member("samples")),
            (r#"[1, 2] 3"#, Items::TopLevel),
            (r#"{"samples": {}}"#, Items::Member("samples")),
            (r#"[1 2]"#, Items::TopLevel),
            (r#"{"a" 1}"#, Items::Member("samples")),
            // Found by the document_scanner fuzz target: a second `samples` added items
            // numbered from 0 again (tests/fuzz-regressions/document_scanner/).
            (
                r#"{"samples": [1], "samples": [2]}"#,
                Items::Member("samples"),
            ),
            (
                r#"{"eval": 1, "samples": [], "eval": 2}"#,
                Items::Member("samples"),
            ),
        ] {
            let error =
                read::<_, ()>(text.as_bytes(), items, &|_| true, 100, |_| Ok(())).unwrap_err();
            assert!(
                matches!(error, DocumentError::Shape { .. }),
                "{text}: {error:?}"
            );
        }
        let error = read::<_, ()>(
            r#"[ "long long long" ]"#.as_bytes(),
            Items::TopLevel,
            &|_| true,
            5,
            |_| Ok(()),
        )
        .unwrap_err();
        assert!(matches!(error, DocumentError::TooLong { .. }));
        assert_eq!(
            count_items("[1,[2],{\"3\":[]}]".as_bytes(), Items::TopLevel).unwrap(),
            3
        );
    }

    #[test]
    fn values_split_across_the_readers_buffers_read_as_they_do_whole() {
        let outcome = |reader: &mut dyn BufRead, items: Items<'_>| {
            let mut seen = Vec::new();
            let read = read::<_, ()>(reader, items, &|_| true, 40, |part| {
                seen.push(match part {
                    Part::Member { key, value } => (key.to_owned(), value.to_vec()),
                    Part::Item { index, value } => (index.to_string(), value.to_vec()),
                });
                Ok(())
            });
            format!("{seen:?} {read:?}")
        };
        for (text, items) in [
            (
                r#"{"eval": {"a": "x\"y\\"}, "samples": [{"id": "q\\\"1", "n": [1, {}]}, "s\\", 3.5e1, true, null]}"#,
                Items::Member("samples"),
            ),
            (r#"[ 12 ,"\u0041",[[]] ,{"k":"\\\""}]"#, Items::TopLevel),
            ("[1, 2]}", Items::TopLevel),
            ("[}]", Items::TopLevel),
            (r#"["never closed"#, Items::TopLevel),
            ("\u{feff}[1, {\"a\": \"\u{feff}\"}]", Items::TopLevel),
            ("\u{feff}", Items::TopLevel),
            ("\u{ef}[1]", Items::TopLevel),
            (
                "\u{feff}{\"eval\": 1, \"samples\": [2]}",
                Items::Member("samples"),
            ),
            (
                r#"[[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]]"#,
                Items::TopLevel,
            ),
        ] {
            let whole = outcome(&mut text.as_bytes(), items);
            for capacity in [1, 2, 3, 7] {
                let mut reader = io::BufReader::with_capacity(capacity, text.as_bytes());
                assert_eq!(
                    outcome(&mut reader, items),
                    whole,
                    "{text} in {capacity}-byte reads"
                );
            }
        }
    }
}
