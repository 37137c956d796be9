//! Full records for a report, read in one sequential pass over each run: every row of a
//! side is written, as its stored fields ([`StoredRecord`]'s frame: nothing parsed, the
//! nested values as the canonical text they are stored as), to an unnamed temporary file
//! (the spill), and a report item reads its two frames back by offset. Items are written in identity order,
//! records files hold rows in input order; the spill keeps memory flat whatever the two
//! orders are, at the cost of one temporary copy on disk.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use memmap2::{Mmap, UncheckedAdvice};

use super::{ComparisonSide, ComparisonSides};
use crate::archive::records::Columns;
use crate::archive::{Archive, ArchiveError, read};
use crate::durable::io_at;
use crate::record::StoredRecord;

/// The full records of one side, spilled in row order, read back one by one.
pub struct FullRecords {
    /// The spill, mapped: items come in identity order, rows in input order, so frames
    /// are read at random, and a read call per frame of a few hundred bytes spent more time
    /// entering the kernel than copying.
    spill: Mmap,
    /// Where each row's frame starts; one more entry marks the end.
    offsets: Vec<u64>,
    /// Frame bytes read since the map's pages were last let go (by any thread: a
    /// report's workers read items in parallel).
    read_since_release: AtomicUsize,
    /// The records files, for messages.
    origin: String,
}

/// How many frame bytes are read before the map's pages are let go. Mapped pages count in
/// the process's resident memory (they are the page cache's, but a reader of `ps` or of
/// BENCHMARKS.md cannot tell), and items touch pages all over the spill: letting go every
/// 64 MiB read still peaked at 0.9 GB on a million-item report, every 4 MiB keeps the
/// peak where the join puts it, at no measurable cost (a page read again comes back from
/// the page cache).
const RELEASE_BYTES: usize = 4 << 20;

impl FullRecords {
    /// The bytes of a row's frame in the spill, without reading it.
    pub fn size(&self, row: u32) -> usize {
        let row = row as usize;
        (self.offsets[row + 1] - self.offsets[row]) as usize
    }

    /// The full record of a side's row, as stored.
    pub fn load(&self, row: u32) -> io::Result<StoredRecord> {
        let row = row as usize;
        let (start, end) = (self.offsets[row] as usize, self.offsets[row + 1] as usize);
        let frame = self.spill.get(start..end).ok_or_else(|| {
            io::Error::other(format!(
                "the report's spill of {} ends before row {row}",
                self.origin
            ))
        })?;
        let mut record = StoredRecord::default();
        record.decode(frame).map_err(|message| {
            io::Error::other(format!(
                "a record of {} cannot be read back from the report's spill: {message}",
                self.origin
            ))
        })?;
        let read = self
            .read_since_release
            .fetch_add(end - start, Ordering::Relaxed);
        if read + (end - start) >= RELEASE_BYTES {
            // Two threads may both get here: the second advice only repeats the first.
            self.read_since_release.store(0, Ordering::Relaxed);
            // SAFETY: the map is a read-only shared mapping of a file nothing changes
            // (see `Spill::finish`); after MADV_DONTNEED a page is read again from that
            // file when it is next touched, by this thread or another reading a frame at
            // that moment, so every byte reads as before. The advice only lets memory
            // go: if the kernel refuses it, nothing is lost.
            #[allow(unsafe_code)]
            let _ = unsafe { self.spill.unchecked_advise(UncheckedAdvice::DontNeed) };
        }
        Ok(record)
    }
}

struct Spill {
    file: io::BufWriter<File>,
    written: u64,
    offsets: Vec<u64>,
    variant_id: String,
}

impl Spill {
    fn new(variant_id: &str) -> io::Result<Self> {
        Ok(Self {
            file: io::BufWriter::with_capacity(1 << 20, tempfile::tempfile()?),
            written: 0,
            offsets: vec![0],
            variant_id: variant_id.to_owned(),
        })
    }

    /// Appends the next row's frame.
    fn push(&mut self, frame: &[u8]) -> io::Result<()> {
        self.file.write_all(frame)?;
        self.written += frame.len() as u64;
        self.offsets.push(self.written);
        Ok(())
    }

    fn finish(self, origin: String) -> io::Result<FullRecords> {
        let spill = self.file.into_inner().map_err(|e| e.into_error())?;
        // SAFETY: the spill is an unnamed temporary file (`tempfile::tempfile`: unlinked
        // from the start, so no other process can open it by name) that this process
        // has finished writing and never writes or truncates again. The map keeps the
        // file alive once its descriptor closes here. (A disk error reading a page back
        // is a SIGBUS now where a read call returned an error: the spill is written and
        // read within one command, from the page cache as a rule.)
        #[allow(unsafe_code)]
        let spill = unsafe { Mmap::map(&spill)? };
        Ok(FullRecords {
            spill,
            offsets: self.offsets,
            read_since_release: AtomicUsize::new(0),
            origin,
        })
    }
}

/// Spills every row of `side`'s run to the spills of its variant.
fn spill_run(
    archive: &Archive,
    side: &ComparisonSide,
    spills: &mut [&mut Spill],
) -> Result<(), ArchiveError> {
    let mut frame = Vec::with_capacity(1 << 16);
    let mut record = StoredRecord::default();
    for entry in &side.manifest.imports {
        for batch in read::batches(archive, &side.run, entry, Columns::ALL)? {
            let batch = batch?;
            for row in 0..batch.len() {
                let variant_id = batch.identity(row).variant_id;
                if !spills.iter().any(|s| s.variant_id == variant_id) {
                    continue;
                }
                batch.stored_record(row, &mut record);
                frame.clear();
                record.encode(&mut frame);
                for spill in spills.iter_mut().filter(|s| s.variant_id == variant_id) {
                    spill.push(&frame).map_err(spill_error)?;
                }
            }
        }
    }
    Ok(())
}

fn spill_error(error: io::Error) -> ArchiveError {
    ArchiveError::Io(io_at(
        "writing a temporary file",
        Path::new("the report's spill"),
    )(error))
}

/// Spills the full records of both sides (see the module doc).
pub(super) fn full_records(
    archive: &Archive,
    sides: &ComparisonSides,
) -> Result<(FullRecords, FullRecords), ArchiveError> {
    let mut baseline = Spill::new(&sides.baseline.variant_id).map_err(spill_error)?;
    let mut variant = Spill::new(&sides.variant.variant_id).map_err(spill_error)?;
    if sides.same_run() {
        spill_run(archive, &sides.baseline, &mut [&mut baseline, &mut variant])?;
    } else {
        // Two runs are two files: each is read and spilled on a thread of its own.
        std::thread::scope(|scope| {
            let other = scope.spawn(|| spill_run(archive, &sides.variant, &mut [&mut variant]));
            let this = spill_run(archive, &sides.baseline, &mut [&mut baseline]);
            let other = other
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            this.and(other)
        })?;
    }
    let origin = |side: &ComparisonSide| format!("run {}", side.run);
    Ok((
        baseline
            .finish(origin(&sides.baseline))
            .map_err(spill_error)?,
        variant
            .finish(origin(&sides.variant))
            .map_err(spill_error)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::record;

    #[test]
    fn each_row_reads_back_as_spilled_and_its_size_is_its_frame_s() {
        let long = "a much longer question id ".repeat(50);
        let records = [
            record("original", "q1", "en", None),
            record("original", &long, "tr", Some(true)),
            record("original", "q3", "en", Some(false)),
        ];
        let mut spill = Spill::new("original").unwrap();
        let mut frames = Vec::new();
        for record in &records {
            let stored = StoredRecord::of(record).unwrap();
            let mut frame = Vec::new();
            stored.encode(&mut frame);
            spill.push(&frame).unwrap();
            frames.push(frame.len());
        }
        let full = spill.finish("run r1".into()).unwrap();
        for (row, (record, bytes)) in records.iter().zip(frames).enumerate() {
            let row = row as u32;
            assert_eq!(full.size(row), bytes, "row {row}");
            let loaded = full.load(row).unwrap();
            assert_eq!(loaded.identity().question_id, record.question_id);
            assert_eq!(loaded.correct, record.correct);
        }
        assert!(full.size(1) > full.size(0) + 1000);
    }
}
