//! Full records for a report, read in one sequential pass over each run: every row of a
//! side is written, as its JSON line, to an unnamed temporary file (the spill), and a
//! report item reads its two lines back by offset. Items are written in identity order,
//! records files hold rows in input order; the spill keeps memory flat whatever the two
//! orders are, at the cost of one temporary copy on disk.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::{ComparisonSide, ComparisonSides};
use crate::archive::records::Columns;
use crate::archive::{Archive, ArchiveError, read};
use crate::durable::io_at;
use crate::jsonl::{self, NonFinitePolicy};
use crate::record::Record;

/// The full records of one side, spilled in row order, read back one by one.
pub struct FullRecords {
    spill: File,
    /// Where each row's JSON line starts; one more entry marks the end.
    offsets: Vec<u64>,
    line: Vec<u8>,
    /// The records files, for messages.
    origin: String,
}

impl FullRecords {
    /// The full record of a side's row, read strictly.
    pub fn load(&mut self, row: u32) -> io::Result<Record> {
        let row = row as usize;
        let (start, end) = (self.offsets[row], self.offsets[row + 1]);
        self.line.resize((end - start) as usize, 0);
        self.spill.read_exact_at(&mut self.line, start)?;
        let damaged = |message: String| {
            io::Error::other(format!(
                "a record of {} cannot be read back: {message}",
                self.origin
            ))
        };
        let line = jsonl::parse_bytes(
            jsonl::strip_line_ending(&self.line),
            1,
            NonFinitePolicy::Reject,
        )
        .map_err(|e| damaged(e.message()))?;
        Record::from_json(line.object).map_err(|e| damaged(e.to_string()))
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

    fn finish(self, origin: String) -> io::Result<FullRecords> {
        let spill = self.file.into_inner().map_err(|e| e.into_error())?;
        Ok(FullRecords {
            spill,
            offsets: self.offsets,
            line: Vec::new(),
            origin,
        })
    }
}

/// Spills the full records of both sides (see the module doc).
pub(super) fn full_records(
    archive: &Archive,
    sides: &ComparisonSides,
) -> Result<(FullRecords, FullRecords), ArchiveError> {
    let spill_error = |error: io::Error| {
        ArchiveError::Io(io_at(
            "writing a temporary file",
            Path::new("the report's spill"),
        )(error))
    };
    let mut baseline = Spill::new(&sides.baseline.variant_id).map_err(spill_error)?;
    let mut variant = Spill::new(&sides.variant.variant_id).map_err(spill_error)?;
    let runs: Vec<(&ComparisonSide, Vec<&mut Spill>)> = if sides.same_run() {
        vec![(&sides.baseline, vec![&mut baseline, &mut variant])]
    } else {
        vec![
            (&sides.baseline, vec![&mut baseline]),
            (&sides.variant, vec![&mut variant]),
        ]
    };
    let mut line = Vec::with_capacity(1 << 16);
    for (side, mut spills) in runs {
        for entry in &side.manifest.imports {
            for batch in read::batches(archive, &side.run, entry, Columns::ALL)? {
                let batch = batch?;
                for row in 0..batch.len() {
                    let variant_id = batch.identity(row).variant_id;
                    for spill in spills.iter_mut().filter(|s| s.variant_id == variant_id) {
                        line.clear();
                        batch.write_json_line(row, &mut line);
                        spill.file.write_all(&line).map_err(spill_error)?;
                        spill.written += line.len() as u64;
                        spill.offsets.push(spill.written);
                    }
                }
            }
        }
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
