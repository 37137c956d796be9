//! JSON Lines inputs: the file is read in batches of whole lines, each written into the
//! archive's copy and hashed as it is read ([`Copying`]: the digest is of the bytes
//! written); each batch is normalized by whichever thread is free and taken in file order
//! by the [`Sink`], whose records the records writer encodes and compresses on the thread
//! that took them ([`parallel::run_ordered`]: as many threads as cores, the calling one
//! the only reader).
//!
//! The adapter is handed each line as the streaming reader's members (canonical text, no
//! tree).
//!
//! [`Sink`]: super::sink::Sink

use std::fs::File;
use std::io::{self, Write};

use super::identities::Identities;
use super::sink::{Normalized, Place, Refusal};
use super::{FileImport, FileOutcome, ImportReport, Progress};
use crate::adapters::{ImportContext, JsonLine, LinesHook};
use crate::archive::ArchiveError;
use crate::archive::artifacts::contract::BankIndex;
use crate::archive::records::RecordsWriter;
use crate::durable::{ContentDigest, CopiedFile, HashingWriter, NewFile, PathIoError, Tee, io_at};
use crate::jsonl::{self, LineBatch, Members, NonFinitePolicy, NonFiniteReplacement};
use crate::parallel::{self, InFlight};
use crate::record::NewRecord;

impl FileImport<'_, '_> {
    /// A JSON Lines file: read in batches of lines that are written to its raw file as
    /// they are read, normalized by whichever thread is free and written in order.
    pub(super) fn lines(
        &self,
        hook: LinesHook,
        mut source: File,
        seen: &mut Identities,
        report: &mut ImportReport,
    ) -> Result<FileOutcome, ArchiveError> {
        let raw_path = self.transaction.path(&self.plan.raw_rel);
        let records_path = self.transaction.path(&self.plan.records_rel);
        let file_bytes = source
            .metadata()
            .map_err(io_at("reading", self.plan.given_path))?
            .len();
        let copy = CopiedFile::create_empty(&raw_path)?;
        let mut records = NewFile::create(&records_path)?;
        let (tee, write_back) = copy.tee();
        let write_back = write_back.also(records.handle()?, &records_path);
        let copying = Copying {
            tee,
            hashing: HashingWriter::new(io::sink()),
            progress: self.progress,
        };
        let mut batcher = jsonl::Batcher::observed(&mut source, copying);
        let context = self.import_context();
        let mut sink = self.sink(seen);
        // A problem of the whole file: its lines are then only read through (to hash the
        // copy), not parsed, so one cause is not reported per line.
        let source_refused = self.source_refused(&sink, report);
        let (policy, bank) = (self.options.non_finite, self.bank);
        let mut read_error = None;
        let mut first = true;
        let mut writer =
            RecordsWriter::new(records.writer()).map_err(io_at("writing", &records_path))?;
        let mut write_error = None;
        let (parsed, raw_digest, written_back) = std::thread::scope(|scope| {
            // The copy goes to disk while the source is read.
            let writing_back = scope.spawn(|| write_back.run());
            let parsed = parallel::run_ordered(
                parallel::workers(),
                InFlight::batches(IN_FLIGHT_PER_THREAD)
                    .bytes(IN_FLIGHT_BYTES_PER_THREAD, LineBatch::bytes),
                || {
                    batcher.next_batch().map_err(|error| {
                        read_error = Some(error);
                        None
                    })
                },
                |batch| match source_refused {
                    true => Normalized::default(),
                    false => normalize_batch(&batch, hook, policy, &context, bank),
                },
                |batch: Normalized| {
                    if std::mem::take(&mut first) {
                        sink.reserve_for(&batch, file_bytes);
                    }
                    if let Some(records) = sink.take(batch, report) {
                        writer.write(records).map_err(|error| {
                            write_error = Some(error);
                            None
                        })?;
                        sink.wrote();
                    }
                    Ok(())
                },
            );
            // Dropping the tee ends the write-back.
            let raw_digest = batcher.into_observer().finish();
            let written_back = writing_back
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (parsed, raw_digest, written_back)
        });
        // The calling thread parsed too: its buffers, as large as the file's longest line,
        // are not kept past the file (the other threads have ended with theirs).
        MEMBERS.with_borrow_mut(|members| *members = Members::new());
        // A failed read or copy stops the import first, so its error comes first: the
        // records writer's own (a full disk, say) would be a consequence.
        PathIoError::of_copying(read_error, written_back, self.plan.given_path)?;
        let written = match write_error {
            Some(error) => {
                drop(writer);
                Err(error)
            }
            None => writer.finish().map(|(_, rows)| rows),
        };
        let count = written.map_err(io_at("writing", &records_path))?;
        parsed.or_else(|error: Option<ArchiveError>| error.map_or(Ok(()), Err))?;
        copy.finish()?;
        self.finish(sink, raw_digest, records, count, report)
    }
}

/// Where the batcher's reads go once read: into the raw copy, the digest and progress.
struct Copying<'c, 'p> {
    tee: Tee<'c>,
    hashing: HashingWriter<io::Sink>,
    progress: &'p dyn Progress,
}

impl Copying<'_, '_> {
    /// The digest of what was copied.
    fn finish(self) -> ContentDigest {
        self.hashing.finish().1
    }
}

impl jsonl::Observer for Copying<'_, '_> {
    fn observe(&mut self, bytes: &[u8], ended: bool) -> io::Result<()> {
        self.tee.write(bytes, ended)?;
        self.hashing.write_all(bytes)?;
        self.progress.advance(bytes.len() as u64);
        Ok(())
    }
}

/// How many batches of lines each thread may have read ahead of the records writer, and how
/// many of their bytes: enough that a thread always finds a batch to parse while another
/// writes, few enough that memory stays flat.
const IN_FLIGHT_PER_THREAD: usize = 4;
const IN_FLIGHT_BYTES_PER_THREAD: usize = 8 << 20;

thread_local! {
    /// Each worker's members buffers, kept from batch to batch.
    static MEMBERS: std::cell::RefCell<Members> = std::cell::RefCell::new(Members::new());
}

/// Says how a non-finite token was read.
fn non_finite_note(replaced: &NonFiniteReplacement) -> String {
    format!(
        "non-finite number {} at {} was read as null (--non-finite null)",
        replaced.token, replaced.path
    )
}

/// An emptied vector of records of one line, for the next line's: its records borrow
/// each line's members, so the vector changes lifetime, not allocation (collecting a
/// vector's own iterator into one of the same layout reuses its memory).
fn recycle<'b>(mut records: Vec<NewRecord<'_>>) -> Vec<NewRecord<'b>> {
    records.clear();
    records
        .into_iter()
        .map(|_| unreachable!("the vector was emptied"))
        .collect()
}

/// Reads and normalizes one batch of lines (on any thread of the run): everything that
/// needs no knowledge of the other lines, down to the encoded columns of every record.
fn normalize_batch(
    batch: &LineBatch,
    hook: LinesHook,
    policy: NonFinitePolicy,
    context: &ImportContext<'_>,
    bank: Option<&BankIndex>,
) -> Normalized {
    let mut out = Normalized::with_capacity(batch.bytes(), batch.line_count() as usize);
    MEMBERS.with_borrow_mut(|members| {
        let mut spare = Vec::new();
        for (number, bytes) in batch.lines() {
            let bytes = match bytes {
                Ok(Some(bytes)) => bytes,
                Ok(None) => continue,
                Err(error) => {
                    out.refuse(Refusal::of_line(error));
                    continue;
                }
            };
            if let Err(error) = jsonl::scan_bytes(bytes, number, policy, members) {
                out.refuse(Refusal::of_line(error));
                continue;
            }
            let mut records = recycle(std::mem::take(&mut spare));
            let line = JsonLine { number, members };
            match hook(line, context, &mut records) {
                Err(error) => out.refuse(Refusal::of_adapter(Place::Line(number), error)),
                Ok(()) => {
                    for record in records.drain(..) {
                        let replaced = members.replaced();
                        let place = Place::Line(number);
                        out.finish_record(record, replaced, &non_finite_note, bank, context, place);
                    }
                }
            }
            spare = recycle(records);
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recycled_vector_of_records_keeps_its_memory() {
        let new = || NewRecord::from_record(crate::record::tests::sample()).unwrap();
        let mut records = vec![new(), new()];
        records.reserve(6);
        let (at, capacity) = (records.as_ptr() as usize, records.capacity());
        let recycled: Vec<NewRecord<'static>> = recycle(records);
        assert!(recycled.is_empty());
        assert_eq!(
            (recycled.as_ptr() as usize, recycled.capacity()),
            (at, capacity)
        );
    }
}
