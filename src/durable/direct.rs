//! A [`super::Tee`]'s copy, or a file [`super::write_new_atomically`] writes (a report, an
//! export, a bundle), written around the page cache (Linux's `O_DIRECT`): the writer
//! copies what it is handed into aligned staging buffers, and a write-back thread writes
//! each full buffer straight from it to the disk.
//!
//! Written through the page cache, a 200 MB import spent about 0.05 CPU-s copying into
//! the cache and writing it back, and with the cache full (after any long run of
//! writes) the kernel first had to evict pages for it (BENCHMARKS.md, "The raw copy
//! around the page cache"). Where the filesystem refuses `O_DIRECT` (at open, or with
//! `EINVAL` at a write: a block larger than [`ALIGN`]) the copy is written through the
//! cache as before. Owns no paths: the direct handle is the file's path opened again,
//! taken only if it is still the file its writer created (a [`super::CopiedFile`]'s, or
//! the temporary file of an atomic write: no link, no other file put in its place), so
//! no write can land anywhere else.
//!
//! A staging buffer is a huge page where the system has them (Linux's transparent huge
//! pages, asked for with `madvise`): pinned for each direct write, a buffer of 4 KiB pages
//! cost the kernel a reference per page, and a 200 MB import 27 ms of CPU more
//! (BENCHMARKS.md, "Stages in huge pages"). The module owns, for the process's life, the
//! spare buffers ([`SPARE`]: up to 8 MiB resident, twice that of address space), kept for
//! the next copy so that a folder of small files does not fault in and zero a huge page
//! for each.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError, mpsc};

use memmap2::MmapMut;

/// The alignment of every buffer, offset and length written directly: the largest
/// logical block a disk has.
const ALIGN: usize = 4096;

/// The size of one staging buffer (a multiple of [`ALIGN`]): one `pwrite` each. A huge
/// page on x86-64 and on most 64-bit systems; a buffer is aligned to its size, so that it
/// can be one.
pub(super) const STAGE_BYTES: usize = 2 << 20;

/// How many staging buffers a writer may have: the one being filled and those queued for
/// the disk or being written, so the writer waits only when the disk is that far behind.
/// They are made as they are needed: a file of a few kilobytes takes one.
const STAGES: usize = 4;

/// Staging buffers no writer holds, for the next copy (at most [`STAGES`]; the rest are
/// unmapped).
static SPARE: Mutex<Vec<MmapMut>> = Mutex::new(Vec::new());

/// Opens `path` again for writing around the page cache, where the filesystem allows it
/// and `path` is still the file `copy` has open (not a link, not a file put in its place
/// since it was created): else `None`, and the copy is written through `copy` itself.
/// Opened without blocking, so that a FIFO put in its place (in a folder others may write)
/// cannot hold the open before the check refuses it.
pub(super) fn open(path: &Path, copy: &File) -> Option<File> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let direct = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DIRECT | libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .ok()?;
        let (opened, created) = (direct.metadata().ok()?, copy.metadata().ok()?);
        ((opened.dev(), opened.ino()) == (created.dev(), created.ino())).then_some(direct)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _ = (path, copy);
        None
    }
}

/// An aligned buffer of [`STAGE_BYTES`] and what it holds: `len` bytes for the copy at
/// `offset`. Dropped, its memory goes back to [`SPARE`] while that holds fewer than
/// [`STAGES`].
pub(super) struct Stage {
    /// Twice [`STAGE_BYTES`] of memory, of which the buffer is the part aligned to
    /// [`STAGE_BYTES`]; `None` only once dropped.
    memory: Option<MmapMut>,
    /// Where the aligned part of `memory` starts.
    start: usize,
    len: usize,
    offset: u64,
}

impl Stage {
    /// A spare buffer, or new memory: what a stage held before is never written again,
    /// since a stage is written only as far as it was filled, and its padding zeroed.
    fn new() -> io::Result<Self> {
        let spare = SPARE.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let memory = match spare {
            Some(memory) => memory,
            None => Self::mapped()?,
        };
        Ok(Self {
            start: memory.as_ptr().align_offset(STAGE_BYTES),
            memory: Some(memory),
            len: 0,
            offset: 0,
        })
    }

    /// New memory for a stage, its aligned part asked to be a huge page (without huge
    /// pages, on a system that has none or none free, it is of small ones: slower, the
    /// same bytes).
    fn mapped() -> io::Result<MmapMut> {
        let memory = MmapMut::map_anon(2 * STAGE_BYTES)?;
        #[cfg(target_os = "linux")]
        let _ = memory.advise_range(
            memmap2::Advice::HugePage,
            memory.as_ptr().align_offset(STAGE_BYTES),
            STAGE_BYTES,
        );
        Ok(memory)
    }

    /// The buffer's first `end` bytes.
    fn buffer(&mut self, end: usize) -> &mut [u8] {
        let memory = self.memory.as_mut().expect("a stage not dropped");
        &mut memory[self.start..self.start + end]
    }

    /// Copies as much of `bytes` as fits; gives how much.
    fn fill(&mut self, bytes: &[u8]) -> usize {
        let taken = bytes.len().min(STAGE_BYTES - self.len);
        let at = self.len;
        self.buffer(at + taken)[at..].copy_from_slice(&bytes[..taken]);
        self.len += taken;
        taken
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        if let Some(memory) = self.memory.take() {
            let mut spare = SPARE.lock().unwrap_or_else(PoisonError::into_inner);
            if spare.len() < STAGES {
                spare.push(memory);
            }
        }
    }
}

/// A stage on its way to the disk; `ended`: the source is at its end.
pub(super) struct Piece {
    stage: Stage,
    ended: bool,
}

/// The writer's side (a tee's, or an atomic write's): fills stages and sends them to the
/// [`Writing`] side.
pub(super) struct Staging {
    /// The copy's path, for errors.
    path: PathBuf,
    /// `None` once sent at the source's end.
    stage: Option<Stage>,
    /// How many stages there are (at most [`STAGES`]).
    made: usize,
    /// Where the next stage starts in the copy.
    offset: u64,
    full: mpsc::SyncSender<Piece>,
    free: mpsc::Receiver<Stage>,
}

/// The write-back thread's side: writes each stage it is sent, then hands it back.
pub(super) struct Writing {
    direct: File,
    pieces: mpsc::Receiver<Piece>,
    free: mpsc::Sender<Stage>,
    /// Set once the filesystem refused a direct write: the rest goes through the cache.
    cached_from_now: bool,
}

/// The two sides of the copy at `path` written through `direct`; an error if no memory
/// could be had for a stage, and the caller then writes through the page cache.
pub(super) fn channel(direct: File, path: &Path) -> io::Result<(Staging, Writing)> {
    let (full, pieces) = mpsc::sync_channel(STAGES);
    let (free_sender, free) = mpsc::channel();
    Ok((
        Staging {
            path: path.to_owned(),
            stage: Some(Stage::new()?),
            made: 1,
            offset: 0,
            full,
            free,
        },
        Writing {
            direct,
            pieces,
            free: free_sender,
            cached_from_now: false,
        },
    ))
}

/// What a writer says when its write-back thread stopped (that thread's error says why):
/// [`is_stopped`] tells it from any other.
#[derive(Debug, thiserror::Error)]
#[error("the thread writing it to disk stopped")]
struct Stopped;

pub(super) fn stopped(path: &Path) -> io::Error {
    io::Error::other(super::io_at("writing", path)(io::Error::other(Stopped)))
}

/// Whether `error`, from a tee, only says that its write-back thread stopped.
pub(super) fn is_stopped(error: &io::Error) -> bool {
    error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<super::PathIoError>())
        .and_then(|named| named.source.get_ref())
        .is_some_and(|inner| inner.is::<Stopped>())
}

impl Staging {
    /// Stages `bytes`; sends each stage once full, and the last one at the source's end.
    pub(super) fn write(&mut self, mut bytes: &[u8], ended: bool) -> io::Result<()> {
        while !bytes.is_empty() {
            let stage = match &mut self.stage {
                Some(stage) if stage.len < STAGE_BYTES => stage,
                _ => self.next_stage()?,
            };
            let taken = stage.fill(bytes);
            bytes = &bytes[taken..];
        }
        if ended {
            self.send(true)?;
        }
        Ok(())
    }

    /// Sends the full stage (if any) and takes a free one.
    fn next_stage(&mut self) -> io::Result<&mut Stage> {
        if self.stage.is_some() {
            self.send(false)?;
        }
        let mut stage = match self.free.try_recv() {
            Ok(stage) => stage,
            Err(mpsc::TryRecvError::Empty) if self.made < STAGES => match Stage::new() {
                Ok(stage) => {
                    self.made += 1;
                    stage
                }
                // Without memory for another, the writer waits for one of those it has
                // (the one just sent, at least).
                Err(_) => self.free.recv().map_err(|_| stopped(&self.path))?,
            },
            Err(mpsc::TryRecvError::Empty) => self.free.recv().map_err(|_| stopped(&self.path))?,
            Err(mpsc::TryRecvError::Disconnected) => return Err(stopped(&self.path)),
        };
        stage.len = 0;
        stage.offset = self.offset;
        Ok(self.stage.insert(stage))
    }

    fn send(&mut self, ended: bool) -> io::Result<()> {
        let Some(stage) = self.stage.take() else {
            return Ok(());
        };
        self.offset += stage.len as u64;
        self.full
            .send(Piece { stage, ended })
            .map_err(|_| stopped(&self.path))
    }
}

impl Drop for Staging {
    /// A writer dropped before the source's end (an import or a report that stopped)
    /// still sends what it staged, so the file holds every byte the writer was handed.
    fn drop(&mut self) {
        let _ = self.send(true);
    }
}

impl Writing {
    /// Writes the pieces as they come until the writer is dropped; `cached` is the file's
    /// own handle, for a filesystem that refuses direct writes. `checkpoint` is called
    /// after every `every` bytes written and at the source's end; gives how many times.
    pub(super) fn run(
        mut self,
        cached: &File,
        path: &Path,
        every: u64,
        mut checkpoint: impl FnMut(bool) -> Result<(), super::PathIoError>,
    ) -> Result<u64, super::PathIoError> {
        let (mut unsynced, mut checkpoints) = (0, 0);
        while let Ok(Piece { mut stage, ended }) = self.pieces.recv() {
            self.put(&mut stage, cached)
                .map_err(super::io_at("writing", path))?;
            unsynced += stage.len as u64;
            if unsynced >= every || ended {
                checkpoint(self.cached_from_now)?;
                checkpoints += 1;
                unsynced = 0;
            }
            // The writer is gone once the source ended.
            let _ = self.free.send(stage);
        }
        Ok(checkpoints)
    }

    /// Writes one stage: directly, a partial last stage padded to [`ALIGN`] and the
    /// copy then cut back to its length; through `cached` once a direct write was
    /// refused.
    fn put(&mut self, stage: &mut Stage, cached: &File) -> io::Result<()> {
        let (len, offset) = (stage.len, stage.offset);
        let end = offset + len as u64;
        if len == 0 {
            return Ok(());
        }
        let padded = len.next_multiple_of(ALIGN);
        let buffer = stage.buffer(padded);
        if !self.cached_from_now {
            buffer[len..].fill(0);
            match self.direct.write_all_at(buffer, offset) {
                Ok(()) if padded == len => return Ok(()),
                Ok(()) => return self.direct.set_len(end),
                // EINVAL: a block larger than ALIGN, or an offset left unaligned.
                Err(error) if error.kind() == io::ErrorKind::InvalidInput => {
                    self.cached_from_now = true;
                    cached.write_all_at(&buffer[..len], offset)?;
                    // Part of the padding may have been written before the refusal.
                    return match padded == len {
                        true => Ok(()),
                        false => cached.set_len(end),
                    };
                }
                Err(error) => return Err(error),
            }
        }
        cached.write_all_at(&buffer[..len], offset)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::fs;

    /// Stages `source` in pieces of `piece` bytes, writes it on a second thread through
    /// `direct` (and `cached`, the file's plain handle), and gives the checkpoints. The
    /// tee is told of the source's end with its last piece, or, for pieces of 1,000
    /// bytes, only dropped (as when an import stops).
    fn copy(
        source: &[u8],
        piece: usize,
        direct: File,
        cached: &File,
        path: &Path,
    ) -> Result<u64, super::super::PathIoError> {
        let (mut staging, writing) = channel(direct, path).unwrap();
        std::thread::scope(|scope| {
            let written = scope.spawn(|| writing.run(cached, path, 3 << 20, |_| Ok(())));
            let mut pieces = source.chunks(piece).peekable();
            if source.is_empty() {
                staging.write(source, true).unwrap();
            }
            while let Some(bytes) = pieces.next() {
                let ended = pieces.peek().is_none() && piece != 1000;
                staging.write(bytes, ended).unwrap();
            }
            drop(staging);
            written.join().unwrap()
        })
    }

    fn source(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 253) as u8).collect()
    }

    #[test]
    fn the_copy_holds_every_byte_whatever_the_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("copy");
        let lengths = [
            0,
            1,
            ALIGN - 1,
            ALIGN,
            STAGE_BYTES - 1,
            STAGE_BYTES,
            STAGE_BYTES + 1,
            3 * STAGE_BYTES + 4097,
            (STAGES + 3) * STAGE_BYTES,
        ];
        for len in lengths {
            let source = source(len);
            for piece in [1000, 64 << 10, 3 << 20] {
                fs::write(&path, b"").unwrap();
                let cached = File::options().write(true).open(&path).unwrap();
                // Where the filesystem refuses O_DIRECT, a plain handle: the staging,
                // padding and cutting back are the same.
                let direct = open(&path, &cached).unwrap_or_else(|| cached.try_clone().unwrap());
                let checkpoints = copy(&source, piece, direct, &cached, &path).unwrap();
                assert_eq!(fs::read(&path).unwrap(), source, "{len} bytes by {piece}");
                // One once 3 MiB are written since the last (after every second stage)
                // and one at the end, after the last stage.
                let stages = len.div_ceil(STAGE_BYTES).max(1);
                let between = (3usize << 20).div_ceil(STAGE_BYTES);
                assert_eq!(
                    checkpoints,
                    ((stages - 1) / between + 1) as u64,
                    "{len} bytes"
                );
            }
        }
    }

    /// Says in one line that the filesystem of `dir` cannot show what a test checks
    /// (`why`), or fails where `BABEL_REQUIRE_TOOLS=1` (set by `.ci/test`; the CI
    /// machine's temporary folder is on ext4) says every test must run.
    pub(in crate::durable) fn skip(dir: &Path, why: &str) {
        assert!(
            std::env::var("BABEL_REQUIRE_TOOLS").as_deref() != Ok("1"),
            "BABEL_REQUIRE_TOOLS=1, but {} {why}",
            dir.display()
        );
        eprintln!("SKIPPED: {} {why}", dir.display());
    }

    /// A direct handle of `path` on a filesystem that refuses unaligned direct writes (as
    /// ext4 and XFS do), or why there is none.
    fn refusing_direct(path: &Path) -> Result<File, String> {
        let cached = File::options().write(true).open(path).unwrap();
        let direct = open(path, &cached).ok_or("refuses O_DIRECT")?;
        let length = fs::metadata(path).unwrap().len();
        match direct.write_all_at(b"x", 100) {
            Err(error) if error.kind() == io::ErrorKind::InvalidInput => Ok(direct),
            other => {
                cached.set_len(length).unwrap();
                Err(format!("takes unaligned direct writes ({other:?})"))
            }
        }
    }

    #[test]
    fn a_direct_write_the_filesystem_refuses_goes_through_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("copy");
        // A copy that starts 100 bytes into the file, so that no direct write of it is
        // aligned: two full stages and a few bytes, and a short copy (padded, then cut
        // back) with bytes past its end, as a padded write cut short would leave them.
        for (len, past_end) in [(2 * STAGE_BYTES + 10, 0), (5000, 20_000)] {
            let mut before = vec![b'-'; 100];
            before.resize(100 + len + past_end, b'!');
            fs::write(&path, &before).unwrap();
            let direct = match refusing_direct(&path) {
                Ok(direct) => direct,
                Err(why) => return skip(dir.path(), &why),
            };
            let cached = File::options().write(true).open(&path).unwrap();
            let (mut staging, mut writing) = channel(direct, &path).unwrap();
            staging.offset = 100;
            staging.stage.as_mut().unwrap().offset = 100;
            let source = source(len);
            std::thread::scope(|scope| {
                let written = scope.spawn(|| {
                    let piece = writing.pieces.recv().unwrap();
                    let mut stage = piece.stage;
                    writing.put(&mut stage, &cached).unwrap();
                    assert!(writing.cached_from_now, "the unaligned write was refused");
                    let _ = writing.free.send(stage);
                    writing.run(&cached, &path, u64::MAX, |cached| {
                        assert!(cached, "the checkpoint syncs the cached copy");
                        Ok(())
                    })
                });
                staging.write(&source, true).unwrap();
                drop(staging);
                let checkpoints = written.join().unwrap().unwrap();
                // The first piece was put above; a short copy has no other.
                assert_eq!(checkpoints, u64::from(len > STAGE_BYTES), "{len} bytes");
            });
            let copied = fs::read(&path).unwrap();
            assert_eq!(
                (&copied[..100], &copied[100..]),
                (&[b'-'; 100][..], &source[..]),
                "{len} bytes"
            );
        }
    }

    #[test]
    fn a_stage_used_before_writes_only_what_it_was_filled_with() {
        // A spare stage holds the bytes of an earlier copy: none of them may reach this
        // one, not even in the padding of its last block before the copy is cut back.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("copy");
        fs::write(&path, b"").unwrap();
        let cached = File::options().write(true).open(&path).unwrap();
        let direct = open(&path, &cached).unwrap_or_else(|| cached.try_clone().unwrap());
        let (_, mut writing) = channel(direct, &path).unwrap();
        let mut stage = Stage::new().unwrap();
        assert_eq!(stage.fill(&vec![b'x'; STAGE_BYTES]), STAGE_BYTES);
        stage.len = 0;
        let source = source(ALIGN + 10);
        assert_eq!(stage.fill(&source), source.len());
        writing.put(&mut stage, &cached).unwrap();
        let padded = source.len().next_multiple_of(ALIGN);
        assert!(stage.buffer(padded)[source.len()..].iter().all(|b| *b == 0));
        assert_eq!(fs::read(&path).unwrap(), source);
    }

    #[test]
    fn no_more_than_a_writer_s_stages_are_kept_spare() {
        let stages: Vec<Stage> = (0..2 * STAGES).map(|_| Stage::new().unwrap()).collect();
        drop(stages);
        assert!(SPARE.lock().unwrap().len() <= STAGES);
    }

    #[test]
    fn stages_are_made_as_they_are_needed() {
        // A short file takes one stage; a long one more, never more than STAGES.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("copy");
        fs::write(&path, b"").unwrap();
        let cached = File::options().write(true).open(&path).unwrap();
        let direct = open(&path, &cached).unwrap_or_else(|| cached.try_clone().unwrap());
        let (mut staging, writing) = channel(direct, &path).unwrap();
        let (short, long) = (source(5000), source(3 * STAGE_BYTES + 7));
        std::thread::scope(|scope| {
            let written = scope.spawn(|| writing.run(&cached, &path, u64::MAX, |_| Ok(())));
            staging.write(&short, false).unwrap();
            assert_eq!(staging.made, 1);
            staging.write(&long, true).unwrap();
            assert!((2..=STAGES).contains(&staging.made), "{}", staging.made);
            drop(staging);
            written.join().unwrap().unwrap();
        });
        assert_eq!(fs::read(&path).unwrap(), [short, long].concat());
    }

    #[test]
    fn only_the_copy_itself_is_opened_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("copy");
        fs::write(&path, b"").unwrap();
        let copy = File::options().write(true).open(&path).unwrap();
        if open(&path, &copy).is_none() {
            return skip(dir.path(), "refuses O_DIRECT");
        }
        // A link in its place, even to the copy itself (moved away).
        let moved = dir.path().join("moved");
        fs::rename(&path, &moved).unwrap();
        std::os::unix::fs::symlink(&moved, &path).unwrap();
        assert!(open(&path, &copy).is_none());
        assert!(open(&moved, &copy).is_some());
        // Another file put in the copy's place: its writes would miss the copy.
        let other = dir.path().join("other");
        fs::write(&other, b"").unwrap();
        fs::rename(&other, &moved).unwrap();
        assert!(open(&moved, &copy).is_none());
    }

    #[test]
    fn a_failed_write_stops_the_tee_and_names_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("copy");
        fs::write(&path, b"").unwrap();
        // A handle open for reading only: every write fails (EBADF, not a refusal of
        // O_DIRECT that the cache would take over).
        let read_only = File::open(&path).unwrap();
        let cached = File::open(&path).unwrap();
        let (mut staging, writing) = channel(read_only, &path).unwrap();
        let source = source((STAGES + 2) * STAGE_BYTES);
        std::thread::scope(|scope| {
            let written = scope.spawn(|| writing.run(&cached, &path, u64::MAX, |_| Ok(())));
            // The writing thread stops at its first piece; the tee finds out at its next
            // send, or once no free stage comes back.
            let stopped = staging.write(&source, true).unwrap_err();
            assert!(is_stopped(&stopped), "{stopped}");
            assert_eq!(
                stopped.to_string(),
                format!(
                    "writing {}: the thread writing it to disk stopped",
                    path.display()
                )
            );
            let failed = written.join().unwrap().unwrap_err();
            assert_eq!(
                (failed.action, failed.path.as_path()),
                ("writing", path.as_path())
            );
        });
    }
}
