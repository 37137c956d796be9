//! The one place that makes file writes durable and atomic: hash while writing, fsync the
//! file, rename (replacing, or refusing to replace), fsync the directory. Every I/O error
//! leaving this module names its path, but for the read of a source beside a [`Tee`],
//! which comes as the source gave it: the caller names the source ([`PathIoError::of_tee`]).
//!
//! Owns no paths of its own: the archive decides where files go, this module only how they
//! get there safely.

use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

mod direct;

/// An I/O failure on a named path.
#[derive(Debug, thiserror::Error)]
#[error("{action} {}: {source}", path.display())]
pub struct PathIoError {
    /// What was being done ("reading", "creating", ...).
    pub action: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

/// Builds a closure that wraps an `io::Error` with its action and path.
pub fn io_at<'p>(
    action: &'static str,
    path: &'p Path,
) -> impl FnOnce(io::Error) -> PathIoError + 'p {
    move |source| PathIoError {
        action,
        path: path.to_owned(),
        source,
    }
}

/// The SHA-256 and length of some bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentDigest {
    /// Lowercase hex SHA-256.
    pub sha256: String,
    /// Byte count.
    pub bytes: u64,
}

/// Whether `text` is a SHA-256 as babel writes one: 64 lowercase hex digits.
pub fn is_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Lowercase hex of a byte string.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// The digest of bytes in memory.
pub fn digest_of(bytes: &[u8]) -> ContentDigest {
    ContentDigest {
        sha256: hex(&Sha256::digest(bytes)),
        bytes: bytes.len() as u64,
    }
}

/// A writer that hashes and counts everything that passes through it.
pub struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    bytes: u64,
}

impl<W: Write> HashingWriter<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The writer hashed into.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The digest of everything written, and the inner writer.
    pub fn finish(self) -> (W, ContentDigest) {
        let digest = ContentDigest {
            sha256: hex(&self.hasher.finalize()),
            bytes: self.bytes,
        };
        (self.inner, digest)
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(buf)?;
        self.hasher.update(&buf[..written]);
        self.bytes += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A reader that hashes and counts everything read through it.
pub struct HashingReader<R> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
}

impl<R: Read> HashingReader<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    /// The digest of everything read so far.
    pub fn finish(self) -> ContentDigest {
        ContentDigest {
            sha256: hex(&self.hasher.finalize()),
            bytes: self.bytes,
        }
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Hashes a file by streaming it.
pub fn digest_file(path: &Path) -> Result<ContentDigest, PathIoError> {
    let mut file = File::open(path).map_err(io_at("opening", path))?;
    let mut hasher = HashingWriter::new(io::sink());
    io::copy(&mut file, &mut hasher).map_err(io_at("reading", path))?;
    Ok(hasher.finish().1)
}

/// A new file that must not exist yet, buffered and hashed as it is written (the hash sees
/// the buffered chunks, not every small write). Dropped before [`NewFile::finish`]
/// succeeds (a full disk, a failed read), it removes what it wrote: no partial file is
/// left behind.
pub struct NewFile {
    path: PathBuf,
    /// `None` once finished.
    writer: Option<BufWriter<HashingWriter<File>>>,
}

impl Drop for NewFile {
    fn drop(&mut self) {
        if let Some(writer) = self.writer.take() {
            // Unflushed bytes are dropped with it; the file goes.
            let _ = writer.into_parts();
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Creates `path` for writing; it must not exist.
fn create_new(path: &Path) -> Result<File, PathIoError> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io_at("creating", path))
}

impl NewFile {
    /// Creates `path` exclusively (it must not exist).
    pub fn create(path: &Path) -> Result<Self, PathIoError> {
        Ok(Self {
            path: path.to_owned(),
            writer: Some(BufWriter::with_capacity(
                256 * 1024,
                HashingWriter::new(create_new(path)?),
            )),
        })
    }

    /// The path being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A second handle of the file, to sync it while it is written ([`WriteBack::also`]).
    pub fn handle(&self) -> Result<File, PathIoError> {
        self.writer
            .as_ref()
            .expect("a NewFile is written only before finish")
            .get_ref()
            .get_ref()
            .try_clone()
            .map_err(io_at("opening", &self.path))
    }

    /// The writer for the content.
    pub fn writer(&mut self) -> &mut BufWriter<HashingWriter<File>> {
        self.writer
            .as_mut()
            .expect("a NewFile is written only before finish")
    }

    /// Flushes and fsyncs the file, returning the digest of what was written.
    pub fn finish(mut self) -> Result<ContentDigest, PathIoError> {
        let writer = self.writer.as_mut().expect("finish is called once");
        writer.flush().map_err(io_at("writing", &self.path))?;
        writer
            .get_ref()
            .get_ref()
            .sync_all()
            .map_err(io_at("syncing", &self.path))?;
        let hashing = self
            .writer
            .take()
            .expect("finish is called once")
            .into_inner()
            .map_err(|e| io_at("writing", &self.path)(e.into_error()))?;
        Ok(hashing.finish().1)
    }
}

/// A new file holding a copy of another, made one of two ways, each hashing the very bytes
/// it writes, so a digest is of what the archive holds even if the source changed
/// meanwhile. [`CopiedFile::copy_hashed`] copies a whole source at once, through the page
/// cache (the caller reads the copy next). [`CopiedFile::tee`] writes into the copy every
/// buffer the reader of the source hands it as soon as it is read, around the page cache
/// where it can ([`direct`]): reading starts at once instead of after the whole copy.
/// Dropped before [`CopiedFile::finish`], it removes itself.
pub struct CopiedFile {
    path: PathBuf,
    /// `None` once finished.
    file: Option<File>,
    /// Whether a tee writes the copy around the page cache where it can ([`direct`]).
    direct: bool,
}

impl Drop for CopiedFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl CopiedFile {
    /// Creates `path` exclusively and copies the rest of `source` (at `source_path`) into
    /// it a mebibyte at a time, telling `read` of each, while a second thread hashes each
    /// buffer once written and a third writes the copy back to disk as it grows; `scan`
    /// reads the copied bytes meanwhile on a fourth ([`Copied`]; an import reads a
    /// document's header there). Reading, writing and hashing one after the other on one
    /// thread, and reading the header after them, took a 306 MB Inspect log about 0.5 s
    /// before its items were read (BENCHMARKS.md, "Copying a structured input"). Gives the
    /// digest of what was written and what `scan` returned.
    pub fn copy_hashed<T: Send>(
        path: &Path,
        source: &mut File,
        source_path: &Path,
        mut read: impl FnMut(u64),
        scan: impl FnOnce(Copied) -> T + Send,
    ) -> Result<(Self, ContentDigest, T), PathIoError> {
        let mut copy = Self::create_empty(path)?;
        copy.direct = false;
        let (mut tee, write_back) = copy.tee();
        let (copied, digest, scanned, written_back) = std::thread::scope(|scope| {
            let writing_back = scope.spawn(|| write_back.run());
            let (to_hash, written) = mpsc::sync_channel::<Vec<u8>>(2);
            let (to_scan, hashed) = mpsc::sync_channel::<Vec<u8>>(2);
            let (give_back, spent) = mpsc::sync_channel::<Vec<u8>>(4);
            let scanning = {
                let give_back = give_back.clone();
                scope.spawn(move || {
                    scan(Copied {
                        chunks: hashed,
                        chunk: Vec::new(),
                        at: 0,
                        give_back,
                    })
                })
            };
            let hashing = scope.spawn(move || {
                let mut hashing = HashingWriter::new(io::sink());
                for buffer in written {
                    hashing.write_all(&buffer).expect("a sink takes every byte");
                    // A scan that stopped reading leaves each buffer to come back here.
                    if let Err(mpsc::SendError(buffer)) = to_scan.send(buffer) {
                        let _ = give_back.try_send(buffer);
                    }
                }
                hashing.finish().1
            });
            // A failed read of the source, or the tee's failed write: io errors that
            // `PathIoError::of_copying` tells apart.
            let copied = (|| loop {
                let mut buffer = spent
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(CHUNK_BYTES));
                buffer.clear();
                let got = Read::by_ref(source)
                    .take(CHUNK_BYTES as u64)
                    .read_to_end(&mut buffer)?;
                let ended = got < CHUNK_BYTES;
                tee.write(&buffer, ended)?;
                read(got as u64);
                // The hashing thread reads until this one stops: a send cannot fail.
                let _ = to_hash.send(buffer);
                if ended {
                    return Ok(());
                }
            })();
            drop((tee, to_hash));
            let digest = hashing.join().unwrap_or_else(resume);
            let scanned = scanning.join().unwrap_or_else(resume);
            let written_back = writing_back.join().unwrap_or_else(resume);
            (copied, digest, scanned, written_back)
        });
        PathIoError::of_copying(copied.err(), written_back, source_path)?;
        Ok((copy, digest, scanned))
    }

    /// Creates `path` exclusively, empty, to be filled through [`CopiedFile::tee`]
    /// around the page cache where the filesystem allows it ([`direct`]).
    pub fn create_empty(path: &Path) -> Result<Self, PathIoError> {
        Ok(Self {
            path: path.to_owned(),
            file: Some(create_new(path)?),
            direct: true,
        })
    }

    /// A [`Tee`] that writes into the copy what is read from the source, and the
    /// [`WriteBack`] that sends the copy's data to disk as it grows (run it on another
    /// thread; it returns once the tee is dropped).
    pub fn tee(&self) -> (Tee<'_>, WriteBack<'_>) {
        // Without memory for a stage, the copy goes through the cache.
        let direct = self
            .direct
            .then(|| direct::open(&self.path, self.file()))
            .flatten()
            .and_then(|file| direct::channel(file, &self.path).ok());
        let (way, waiting) = match direct {
            Some((staging, writing)) => (TeeWay::Direct(staging), WriteBackWay::Direct(writing)),
            None => {
                let (kick, kicks) = mpsc::sync_channel(1);
                (
                    TeeWay::Cached { unsynced: 0, kick },
                    WriteBackWay::Cached(kicks),
                )
            }
        };
        let tee = Tee {
            copy: self,
            write_back_every: WRITE_BACK_BYTES,
            way,
        };
        (
            tee,
            WriteBack {
                copy: self,
                write_back_every: WRITE_BACK_BYTES,
                way: waiting,
                also: Vec::new(),
            },
        )
    }

    fn file(&self) -> &File {
        self.file
            .as_ref()
            .expect("a copy is written before it is finished")
    }

    /// Writes the copy's data back to disk and waits for it, as [`CopiedFile::finish`]
    /// would ([`WriteBack`] does it on its own thread as the copy grows).
    fn write_back(&self) -> Result<(), PathIoError> {
        self.file()
            .sync_data()
            .map_err(io_at("syncing", &self.path))
    }

    /// Fsyncs the copy.
    pub fn finish(mut self) -> Result<(), PathIoError> {
        let file = self.file.as_ref().expect("finish is called once");
        file.sync_all().map_err(io_at("syncing", &self.path))?;
        self.file = None;
        Ok(())
    }
}

/// Goes on with the panic of a joined thread.
fn resume<T>(panic: Box<dyn std::any::Any + Send>) -> T {
    std::panic::resume_unwind(panic)
}

/// The bytes [`CopiedFile::copy_hashed`] copies, in order, as each buffer is hashed: a
/// reader for a thread beside the copy. It ends where the copy ends (or stopped).
pub struct Copied {
    chunks: mpsc::Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    at: usize,
    /// Where a read buffer goes back, to be filled again.
    give_back: mpsc::SyncSender<Vec<u8>>,
}

impl Read for Copied {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = io::BufRead::fill_buf(self)?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        io::BufRead::consume(self, n);
        Ok(n)
    }
}

impl io::BufRead for Copied {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.at == self.chunk.len() {
            let Ok(next) = self.chunks.recv() else {
                break;
            };
            // The empty vector a reader starts with is no buffer to fill again.
            let read = std::mem::replace(&mut self.chunk, next);
            if read.capacity() > 0 {
                let _ = self.give_back.try_send(read);
            }
            self.at = 0;
        }
        Ok(&self.chunk[self.at..])
    }

    fn consume(&mut self, amount: usize) {
        self.at += amount;
    }
}

/// How much a [`Tee`] writes between two write-backs of its copy. What is written after
/// the last one is synced while the import waits: with 64 MiB steps that was up to 64 MiB
/// (the last fsync of a 200 MB import took 36 ms of its 0.53 s here; BENCHMARKS.md,
/// "Write-back").
const WRITE_BACK_BYTES: u64 = 16 << 20;

/// How much of a buffer [`write_in_pieces`] writes at a time.
const WRITE_PIECE_BYTES: usize = 64 << 10;

/// Writes `bytes` to `file` a [`WRITE_PIECE_BYTES`] piece at a time. With the page cache
/// full (as after any long run of writes), one write of a mebibyte spent a third of an
/// import in the kernel's copy into the cache: 1M records took 4.5-5.2 s instead of
/// 1.7-1.9, and a CSV report of 730 MB 4.8-8.6 s instead of 3.4 (BENCHMARKS.md, "Writing
/// the raw copy", "Writing reports in pieces").
fn write_in_pieces(mut file: impl Write, bytes: &[u8]) -> io::Result<()> {
    bytes
        .chunks(WRITE_PIECE_BYTES)
        .try_for_each(|piece| file.write_all(piece))
}

/// Writes what is read from a source into a [`CopiedFile`] ([`CopiedFile::tee`]), buffer by
/// buffer as it is read.
pub struct Tee<'c> {
    copy: &'c CopiedFile,
    /// [`WRITE_BACK_BYTES`], but in tests.
    write_back_every: u64,
    way: TeeWay,
}

/// How a [`Tee`] writes.
enum TeeWay {
    /// Into the page cache, asking the [`WriteBack`] to write it back every
    /// [`WRITE_BACK_BYTES`].
    Cached {
        /// Bytes written since the write-back was last asked for.
        unsynced: u64,
        kick: mpsc::SyncSender<()>,
    },
    /// Into staging buffers the [`WriteBack`] writes around the cache ([`direct`]).
    Direct(direct::Staging),
}

impl Tee<'_> {
    /// Writes `bytes`, just read from the source, into the copy; `ended`: the source is at
    /// its end. A failed write is an error that [`PathIoError::of_tee`] tells from a failed
    /// read of the source.
    pub fn write(&mut self, bytes: &[u8], ended: bool) -> io::Result<()> {
        let (unsynced, kick) = match &mut self.way {
            TeeWay::Direct(staging) => return staging.write(bytes, ended),
            TeeWay::Cached { unsynced, kick } => (unsynced, kick),
        };
        write_in_pieces(self.copy.file(), bytes)
            .map_err(|error| io::Error::other(io_at("writing", &self.copy.path)(error)))?;
        *unsynced += bytes.len() as u64;
        // At the source's end the rest goes to disk while the last lines are parsed, not
        // after them.
        if *unsynced >= self.write_back_every || (ended && *unsynced > 0) {
            // A write-back still running takes this data too: no need to queue another.
            // One that stopped failed: its error is the one to report, now.
            if let Err(mpsc::TrySendError::Disconnected(())) = kick.try_send(()) {
                return Err(direct::stopped(&self.copy.path));
            }
            *unsynced = 0;
        }
        Ok(())
    }
}

/// Writes a [`Tee`]'s copy back to disk each time the tee has written another
/// [`WRITE_BACK_BYTES`], and once more at the source's end, so the disk works while the
/// source is read and [`CopiedFile::finish`] finds little left to write. Files written
/// beside the copy ([`WriteBack::also`]) are written back with it.
pub struct WriteBack<'c> {
    copy: &'c CopiedFile,
    /// [`WRITE_BACK_BYTES`], but in tests (a direct copy's; a cached one's is the tee's).
    write_back_every: u64,
    way: WriteBackWay,
    also: Vec<(File, &'c Path)>,
}

/// How a [`WriteBack`] learns of the copy's growth.
enum WriteBackWay {
    /// Told that the tee has written another [`WRITE_BACK_BYTES`] into the cache.
    Cached(mpsc::Receiver<()>),
    /// Sent the staged bytes themselves, to write ([`direct`]).
    Direct(direct::Writing),
}

impl<'c> WriteBack<'c> {
    /// Also writes back `file` (a second handle of a file written meanwhile, such as
    /// [`NewFile::handle`]) each time, so that its last fsync too finds little left.
    pub fn also(mut self, file: File, path: &'c Path) -> Self {
        self.also.push((file, path));
        self
    }

    /// Runs until the tee is dropped; gives the number of write-backs.
    pub fn run(self) -> Result<u64, PathIoError> {
        let write_back = |copy_cached: bool| {
            if copy_cached {
                self.copy.write_back()?;
            }
            for (file, path) in &self.also {
                file.sync_data().map_err(io_at("syncing", path))?;
            }
            Ok(())
        };
        match self.way {
            WriteBackWay::Direct(writing) => writing.run(
                self.copy.file(),
                &self.copy.path,
                self.write_back_every,
                write_back,
            ),
            WriteBackWay::Cached(ref kicks) => {
                let mut done = 0;
                while kicks.recv().is_ok() {
                    write_back(true)?;
                    done += 1;
                }
                Ok(done)
            }
        }
    }
}

impl PathIoError {
    /// What went wrong, if anything, in reading `source` through a [`Tee`] (`read`: the
    /// read's error) while its [`WriteBack`] ran (`written_back`): a failed read or copy
    /// first, as the records writer's own failure would be a consequence. A copy written
    /// around the cache fails on the write-back thread, and the tee then only says that
    /// thread stopped: its error comes first then.
    pub fn of_copying(
        read: Option<io::Error>,
        written_back: Result<u64, PathIoError>,
        source: &Path,
    ) -> Result<(), PathIoError> {
        match read {
            Some(error) if direct::is_stopped(&error) => {
                written_back?;
                Err(Self::of_tee(error, source))
            }
            Some(error) => Err(Self::of_tee(error, source)),
            None => written_back.map(|_| ()),
        }
    }

    /// The error of a read of `source` beside a [`Tee`]: the copy's failed write as it
    /// is, else a failed read of the source, named by `source`.
    pub fn of_tee(error: io::Error, source: &Path) -> Self {
        if error
            .get_ref()
            .is_some_and(|inner| inner.is::<PathIoError>())
        {
            let inner = error.into_inner().expect("checked above");
            return *inner.downcast::<PathIoError>().expect("checked above");
        }
        io_at("reading", source)(error)
    }
}

/// Writes `bytes` to a new file and fsyncs it.
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<ContentDigest, PathIoError> {
    let mut file = NewFile::create(path)?;
    file.writer()
        .write_all(bytes)
        .map_err(io_at("writing", path))?;
    file.finish()
}

/// Fsyncs a directory so that renames and new entries in it survive a crash.
pub fn sync_dir(dir: &Path) -> Result<(), PathIoError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_at("syncing directory", dir))
}

/// The directory holding `path` (`.` for a bare file name).
pub fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Renames `from` over `to` (the commit point of a replacement) and fsyncs the directory.
pub fn rename_replacing(from: &Path, to: &Path) -> Result<(), PathIoError> {
    fs::rename(from, to).map_err(io_at("renaming into place", to))?;
    sync_dir(parent_of(to))
}

/// Writes a file that must not exist yet, atomically: a temporary file in the same
/// directory is filled by `fill`, fsynced, and linked into place without replacing
/// anything; the directory is then fsynced. On any failure nothing is left at `dest`.
/// Written around the page cache where the filesystem allows it ([`direct`]: a thread
/// and up to eight mebibytes of staging more, one for a short file).
pub fn write_new_atomically<F, E>(dest: &Path, fill: F) -> Result<ContentDigest, E>
where
    F: FnOnce(&mut dyn Write) -> Result<(), E>,
    E: From<PathIoError>,
{
    write_new_atomically_via(dest, fill, true)
}

/// [`write_new_atomically`], around the page cache only if `direct` and the filesystem
/// allows it (the tests write both ways on one filesystem).
fn write_new_atomically_via<F, E>(dest: &Path, fill: F, direct: bool) -> Result<ContentDigest, E>
where
    F: FnOnce(&mut dyn Write) -> Result<(), E>,
    E: From<PathIoError>,
{
    let dir = parent_of(dest);
    if dest.symlink_metadata().is_ok() {
        return Err(PathIoError {
            action: "writing",
            path: dest.to_owned(),
            source: io::Error::new(io::ErrorKind::AlreadyExists, "the file already exists"),
        }
        .into());
    }
    // tempfile creates files readable by their owner only; a report or an archive file is
    // as readable as any file the user creates.
    let temp = tempfile::Builder::new()
        .prefix(".babel-tmp-")
        .permissions(fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)
        .map_err(io_at("creating a temporary file in", dir))?;
    // The caller fills while one thread writes and another hashes each chunk once it is
    // written or staged (a failed write discards the digest): the kernel's copy of a long
    // report into the page cache alone keeps a core busy. Where the filesystem allows it,
    // the file is written around the page cache as an import's raw copy is ([`direct`]):
    // the writing thread stages each chunk, a fourth writes the stages to disk.
    let direct = direct
        .then(|| direct::open(temp.path(), temp.as_file()))
        .flatten()
        .and_then(|file| direct::channel(file, temp.path()).ok());
    let (file, path) = (temp.as_file(), temp.path());
    let (filled, written) = std::thread::scope(|scope| {
        let (sender, receiver) = mpsc::sync_channel::<Vec<u8>>(2);
        let (to_hash, written_chunks) = mpsc::sync_channel::<Vec<u8>>(2);
        let (give_back, spent) = mpsc::sync_channel::<Vec<u8>>(4);
        let hashing = scope.spawn(move || {
            let mut hasher = Sha256::new();
            let mut bytes = 0u64;
            for chunk in written_chunks {
                hasher.update(&chunk);
                bytes += chunk.len() as u64;
                // Kept for the filler when it has room (a longer chunk of one long
                // write is let go); dropped when it has enough.
                if chunk.capacity() <= CHUNK_BYTES {
                    let _ = give_back.try_send(chunk);
                }
            }
            ContentDigest {
                sha256: hex(&hasher.finalize()),
                bytes,
            }
        });
        let (mut staging, writing_back) = match direct {
            Some((staging, writing)) => (
                Some(staging),
                Some(scope.spawn(move || writing.run(file, path, u64::MAX, |_| Ok(())))),
            ),
            None => (None, None),
        };
        let writing = scope.spawn(move || -> io::Result<()> {
            let (mut written, mut started) = (0u64, 0u64);
            for chunk in receiver {
                match &mut staging {
                    Some(staging) => staging.write(&chunk, false)?,
                    None => {
                        write_in_pieces(file, &chunk)?;
                        written += chunk.len() as u64;
                        if written - started >= WRITE_BACK_START_BYTES {
                            start_write_back(file, started, written - started);
                            started = written;
                        }
                    }
                }
                // The hashing thread reads until this one stops: a send cannot fail.
                let _ = to_hash.send(chunk);
            }
            match &mut staging {
                Some(staging) => staging.write(&[], true),
                None => Ok(()),
            }
        });
        let mut chunks = ChunkSender {
            sender: Some(sender),
            spent,
            buffer: Vec::with_capacity(CHUNK_BYTES),
        };
        let filled = fill(&mut chunks);
        let sent = chunks.finish();
        let written = writing
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the writing thread panicked")));
        // The staging writer only says that the thread writing its stages stopped: that
        // thread's own error comes first.
        let written = match writing_back.map(|thread| thread.join()) {
            Some(Ok(Err(error))) => Err(error.source),
            Some(Err(_)) => Err(io::Error::other("the write-back thread panicked")),
            Some(Ok(Ok(_))) | None => written,
        };
        let digest = hashing
            .join()
            .map_err(|_| io::Error::other("the hashing thread panicked"));
        // The writing thread's own error comes first: a failed send only means it stopped.
        let done = written.and(digest);
        (filled, done.and_then(|done| sent.map(|()| done)))
    });
    // A failed write stops the filling too: its own error is the one to report.
    let digest = match (filled, written) {
        (_, Err(error)) => return Err(io_at("writing", dest)(error).into()),
        (Err(error), Ok(_)) => return Err(error),
        (Ok(()), Ok(digest)) => digest,
    };
    temp.as_file().sync_all().map_err(io_at("syncing", dest))?;
    temp.persist_noclobber(dest)
        .map_err(|e| io_at("writing", dest)(e.error))?;
    sync_dir(dir)?;
    Ok(digest)
}

/// How many bytes [`write_new_atomically`] hands its writing thread at a time.
const CHUNK_BYTES: usize = 1 << 20;

/// How much [`write_new_atomically`] writes through the page cache before it asks the
/// kernel to start writing it back. Left to the kernel, nothing of a report went to disk
/// before the closing fsync (it starts at a tenth of the machine's memory), which then
/// waited for all of it: 0.6 s of a 1.46 GB JSONL report (BENCHMARKS.md, "Report
/// write-back").
const WRITE_BACK_START_BYTES: u64 = 32 << 20;

/// Starts writing `len` bytes of `file` from `offset` back to disk, without waiting for
/// them (Linux's `sync_file_range`; elsewhere nothing). A failure is not reported here:
/// the fsync that makes the file durable reports it.
fn start_write_back(file: &File, offset: u64, len: u64) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::fd::AsRawFd;
        let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
            return;
        };
        // SAFETY: the descriptor is `file`'s, open for the whole call, and the call only
        // queues the range's dirty pages for writing.
        #[allow(unsafe_code)]
        let _ = unsafe {
            libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
        };
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = (file, offset, len);
}

/// Buffers what is written and sends it on in chunks of at most [`CHUNK_BYTES`] (a
/// longer write is a chunk of its own), so a buffer grows by copying only for such a
/// write; the chunk-sized buffers the hashing thread is done with come back through
/// `spent` and are filled again.
struct ChunkSender {
    /// `None` once the receiving thread stopped.
    sender: Option<mpsc::SyncSender<Vec<u8>>>,
    spent: mpsc::Receiver<Vec<u8>>,
    buffer: Vec<u8>,
}

impl ChunkSender {
    fn send(&mut self) -> io::Result<()> {
        let next = match self.spent.try_recv() {
            Ok(mut spent) => {
                spent.clear();
                spent
            }
            Err(_) => Vec::with_capacity(CHUNK_BYTES),
        };
        let chunk = std::mem::replace(&mut self.buffer, next);
        match self.sender.as_ref().map(|sender| sender.send(chunk)) {
            Some(Ok(())) => Ok(()),
            _ => {
                self.sender = None;
                Err(io::Error::other("the writing thread stopped"))
            }
        }
    }

    /// Sends what is buffered and closes the channel.
    fn finish(mut self) -> io::Result<()> {
        let sent = if self.buffer.is_empty() {
            Ok(())
        } else {
            self.send()
        };
        self.sender = None;
        sent
    }
}

impl Write for ChunkSender {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if !self.buffer.is_empty() && self.buffer.len() + bytes.len() > CHUNK_BYTES {
            self.send()?;
        }
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= CHUNK_BYTES {
            self.send()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Reads a whole small file (manifests, markers, journals).
pub fn read_small(path: &Path) -> Result<Vec<u8>, PathIoError> {
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|f| f.take(SMALL_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(io_at("reading", path))?;
    if bytes.len() as u64 > SMALL_FILE_BYTES {
        return Err(io_at("reading", path)(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "the file holds more than the {SMALL_FILE_BYTES} bytes babel reads of a file of its kind"
            ),
        )));
    }
    Ok(bytes)
}

/// The most [`read_small`] reads into memory, and so the largest artifact payload
/// `artifact add` takes: a manifest or the marker is far smaller; a larger file is damage
/// or an attack, and is refused rather than read.
pub const SMALL_FILE_BYTES: u64 = 1 << 30;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashing_while_writing_equals_hashing_afterwards() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let written = write_new(&path, b"hello\n").unwrap();
        assert_eq!(written, digest_file(&path).unwrap());
        // sha256("hello\n"), as printed by `printf 'hello\n' | sha256sum`.
        assert_eq!(
            written.sha256,
            "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        );
        assert_eq!(written.bytes, 6);
    }

    #[test]
    fn a_file_of_many_chunks_is_hashed_as_it_was_written() {
        // Chunks are written on one thread and hashed on another, in order: through the
        // page cache, its write-back started as they go, and around it, staged in aligned
        // buffers (the last padded, then cut back). Empty, one byte, and many chunks.
        let dir = tempfile::tempdir().unwrap();
        let probe = dir.path().join("probe");
        if direct::open(&probe, &File::create(&probe).unwrap()).is_none() {
            // The direct way then writes through the cache too.
            direct::tests::skip(dir.path(), "refuses O_DIRECT: only the cached way runs");
        }
        fs::remove_file(&probe).unwrap();
        let line: Vec<u8> = (0..=255u8).cycle().take(4099).collect();
        for direct in [true, false] {
            for lines in [0, 1, 20_000] {
                let dest = dir.path().join(format!("{direct}-{lines}"));
                let written: ContentDigest = write_new_atomically_via::<_, PathIoError>(
                    &dest,
                    |w| {
                        for _ in 0..lines {
                            w.write_all(&line).map_err(io_at("w", &dest))?;
                        }
                        Ok(())
                    },
                    direct,
                )
                .unwrap();
                assert_eq!(written.bytes, lines * 4099);
                assert_eq!(written, digest_file(&dest).unwrap(), "{direct} {lines}");
                assert_eq!(fs::read(&dest).unwrap(), line.repeat(lines as usize));
            }
        }
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            6,
            "no temporary left"
        );
    }

    #[test]
    fn new_files_never_replace_existing_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        write_new(&path, b"first").unwrap();
        assert!(write_new(&path, b"second").is_err());
        let again: Result<_, PathIoError> =
            write_new_atomically(&path, |w| w.write_all(b"x").map_err(io_at("w", &path)));
        assert!(again.is_err());
        assert_eq!(fs::read(&path).unwrap(), b"first");
    }

    #[test]
    fn atomically_written_files_are_readable_by_others_like_any_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("report.html");
        let _: ContentDigest = write_new_atomically::<_, PathIoError>(&dest, |w| {
            w.write_all(b"x").map_err(io_at("w", &dest))
        })
        .unwrap();
        let mode = fs::metadata(&dest).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
    }

    #[test]
    fn atomic_writes_leave_nothing_behind_on_failure() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("report.html");
        let failed: Result<_, PathIoError> = write_new_atomically(&dest, |w| {
            w.write_all(b"partial").unwrap();
            Err(io_at("rendering", &dest)(io::Error::other("boom")))
        });
        assert!(failed.is_err());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    /// Reads `source` through `tee` as an import does, 8 KiB at a time, hashing each
    /// buffer the tee wrote.
    fn read_through(source: &[u8], mut tee: Tee<'_>) -> io::Result<ContentDigest> {
        let mut hashing = HashingWriter::new(io::sink());
        let mut buffers = source.chunks(8 << 10).peekable();
        if source.is_empty() {
            tee.write(source, true)?;
        }
        while let Some(buffer) = buffers.next() {
            tee.write(buffer, buffers.peek().is_none())?;
            hashing.write_all(buffer)?;
        }
        Ok(hashing.finish().1)
    }

    #[test]
    fn a_tee_copies_what_it_reads_and_the_reader_hashes_those_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let source: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let path = dir.path().join("copy");
        // Around the page cache (wherever the filesystem allows it) and through it.
        for direct in [true, false] {
            let _ = fs::remove_file(&path);
            let mut copy = CopiedFile::create_empty(&path).unwrap();
            copy.direct = direct;
            let (mut tee, mut write_back) = copy.tee();
            let way_direct = direct && direct::open(&path, copy.file()).is_some();
            assert_eq!(matches!(tee.way, TeeWay::Direct(_)), way_direct);
            // A write-back every 64 KiB: the write-back thread syncs the copy while it
            // grows.
            tee.write_back_every = 64 << 10;
            write_back.write_back_every = 64 << 10;
            let (digest, write_backs) = std::thread::scope(|scope| {
                let writing_back = scope.spawn(|| write_back.run());
                let digest = read_through(&source, tee).unwrap();
                (digest, writing_back.join().unwrap().unwrap())
            });
            // The write-back ends once the tee is gone. Through the cache it ran at least
            // once (the first kick always finds room in the channel, a kick finding one
            // waiting is dropped); around it, after each stage (more than 64 KiB), the
            // last one at the end.
            match way_direct {
                true => assert_eq!(
                    write_backs,
                    source.len().div_ceil(direct::STAGE_BYTES) as u64
                ),
                false => assert!(write_backs >= 1),
            }
            copy.finish().unwrap();
            assert_eq!(fs::read(&path).unwrap(), source);
            assert_eq!(digest, digest_file(&path).unwrap());
        }
    }

    #[test]
    fn a_whole_copy_holds_the_source_and_its_digest_is_of_those_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let source_path = dir.path().join("source");
        for len in [
            0,
            1,
            CHUNK_BYTES - 1,
            CHUNK_BYTES,
            CHUNK_BYTES + 1,
            5 * CHUNK_BYTES + 7,
        ] {
            let source: Vec<u8> = (0..len).map(|i| (i % 241) as u8).collect();
            fs::write(&source_path, &source).unwrap();
            let path = dir.path().join(format!("copy-{len}"));
            let mut reads = Vec::new();
            // A scan beside the copy reads the very bytes copied.
            let (copy, digest, scanned) = CopiedFile::copy_hashed(
                &path,
                &mut File::open(&source_path).unwrap(),
                &source_path,
                |bytes| reads.push(bytes),
                |mut copied| {
                    let mut bytes = Vec::new();
                    copied.read_to_end(&mut bytes).unwrap();
                    bytes
                },
            )
            .unwrap();
            copy.finish().unwrap();
            assert_eq!(fs::read(&path).unwrap(), source, "{len} bytes");
            assert_eq!(scanned, source, "{len} bytes");
            assert_eq!(digest, digest_file(&path).unwrap(), "{len} bytes");
            // Told of every mebibyte as it is read, and of the end.
            assert_eq!(reads.iter().sum::<u64>(), len as u64);
            assert_eq!(reads.len(), len / CHUNK_BYTES + 1, "{len} bytes");
        }
        // A scan that stops reading early (a document refused at its first byte) leaves the
        // copy to go on.
        let path = dir.path().join("copy-scan-stopped");
        let (copy, digest, first) = CopiedFile::copy_hashed(
            &path,
            &mut File::open(&source_path).unwrap(),
            &source_path,
            |_| {},
            |mut copied| {
                let mut first = [0u8; 10];
                copied.read_exact(&mut first).unwrap();
                first
            },
        )
        .unwrap();
        copy.finish().unwrap();
        let source = fs::read(&source_path).unwrap();
        assert_eq!(
            (fs::read(&path).unwrap(), &first[..]),
            (source.clone(), &source[..10])
        );
        assert_eq!(digest, digest_of(&source));
        // A source that cannot be read is named; the copy is gone.
        let unreadable = File::options().append(true).open(&source_path).unwrap();
        let path = dir.path().join("copy-failed");
        let failed =
            CopiedFile::copy_hashed(&path, &mut { unreadable }, &source_path, |_| {}, drop)
                .err()
                .unwrap();
        assert_eq!(
            (failed.action, failed.path.as_path()),
            ("reading", source_path.as_path())
        );
        assert!(!path.exists());
    }

    #[test]
    fn a_tee_writes_back_at_the_sources_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("copy");
        let copy = CopiedFile::create_empty(&path).unwrap();
        let (tee, write_back) = copy.tee();
        let write_backs = std::thread::scope(|scope| {
            let writing_back = scope.spawn(|| write_back.run());
            read_through(b"less than a write-back's worth", tee).unwrap();
            writing_back.join().unwrap().unwrap()
        });
        // Short of WRITE_BACK_BYTES, the only write-back is the one at the end.
        assert_eq!(write_backs, 1);
        copy.finish().unwrap();
    }

    #[test]
    fn each_write_back_syncs_the_files_beside_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let copy = CopiedFile::create_empty(&dir.path().join("copy")).unwrap();
        // A file that cannot be synced (fdatasync of /dev/null is EINVAL): the write-back
        // fails on it, naming it, so it was synced with the copy.
        let beside = Path::new("/dev/null");
        let (tee, write_back) = copy.tee();
        let write_back = write_back.also(File::options().write(true).open(beside).unwrap(), beside);
        let failed = std::thread::scope(|scope| {
            let writing_back = scope.spawn(|| write_back.run());
            read_through(b"some bytes", tee).unwrap();
            writing_back.join().unwrap().unwrap_err()
        });
        assert_eq!((failed.action, failed.path.as_path()), ("syncing", beside));
    }

    #[test]
    fn a_tee_stops_once_its_write_back_failed() {
        let dir = tempfile::tempdir().unwrap();
        let mut copy = CopiedFile::create_empty(&dir.path().join("copy")).unwrap();
        copy.direct = false;
        // A file beside the copy that cannot be synced: the first write-back fails.
        let beside = Path::new("/dev/null");
        let (mut tee, write_back) = copy.tee();
        let write_back = write_back.also(File::options().write(true).open(beside).unwrap(), beside);
        tee.write_back_every = 64 << 10;
        let piece = vec![b'x'; 64 << 10];
        std::thread::scope(|scope| {
            let writing_back = scope.spawn(|| write_back.run());
            tee.write(&piece, false).unwrap();
            let failed = writing_back.join().unwrap();
            // The next write-back it asks for finds the thread gone: the tee stops there,
            // not at the end of the source, and the thread's error is the one told.
            let stopped = tee.write(&piece, false).unwrap_err();
            let told = PathIoError::of_copying(Some(stopped), failed, Path::new("/in.json"));
            let told = told.unwrap_err();
            assert_eq!((told.action, told.path.as_path()), ("syncing", beside));
        });
    }

    #[test]
    fn a_failed_write_of_a_tee_is_told_from_a_failed_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("copy");
        fs::write(&path, b"").unwrap();
        // A copy open for reading only: every write into it fails.
        let copy = CopiedFile {
            path: path.clone(),
            file: Some(File::open(&path).unwrap()),
            direct: false,
        };
        let (tee, _write_back) = copy.tee();
        let failed = read_through(b"some bytes", tee).unwrap_err();
        let source = Path::new("/inputs/a.jsonl");
        let told = PathIoError::of_tee(failed, source);
        assert_eq!(
            (told.action, told.path.as_path()),
            ("writing", path.as_path())
        );
        let read = io::Error::other("input/output error");
        assert_eq!(
            PathIoError::of_tee(read, source).to_string(),
            "reading /inputs/a.jsonl: input/output error"
        );
    }

    #[test]
    fn a_copy_s_failure_comes_before_what_follows_from_it() {
        let source = Path::new("/inputs/a.jsonl");
        let copy = Path::new("/archive/runs/r/raw/0001-a.jsonl");
        let full = || io_at("writing", copy)(io::Error::other("No space left on device"));
        let records = || {
            io_at("syncing", Path::new("/archive/runs/r/records/0001.parquet"))(io::Error::other(
                "No space left on device",
            ))
        };
        let told = |read, written_back| {
            PathIoError::of_copying(read, written_back, source)
                .unwrap_err()
                .to_string()
        };
        // Around the cache the copy fails on the write-back thread; the tee only knows
        // that the thread stopped.
        assert_eq!(
            told(Some(direct::stopped(copy)), Err(full())),
            full().to_string()
        );
        // Through the cache the tee's own write fails first; a sync of the records file
        // failing beside it is a consequence.
        assert_eq!(
            told(Some(io::Error::other(full())), Err(records())),
            full().to_string()
        );
        assert_eq!(
            told(Some(io::Error::other("input/output error")), Ok(3)),
            "reading /inputs/a.jsonl: input/output error"
        );
        assert_eq!(told(None, Err(records())), records().to_string());
        // A stopped tee whose thread reports nothing still names the copy.
        assert_eq!(
            told(Some(direct::stopped(copy)), Ok(1)),
            "writing /archive/runs/r/raw/0001-a.jsonl: the thread writing it to disk stopped"
        );
        assert!(PathIoError::of_copying(None, Ok(2), source).is_ok());
    }
}
