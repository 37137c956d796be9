//! The ordered end of an import: what workers made of each item (records encoded in a
//! batch, or refusals) is taken here in file order. Owns the checks that need every
//! record before it: duplicate identities within the run, and the breakdown the manifest
//! keeps; and the last steps of every record on a worker ([`finish_record`]).

use std::collections::HashMap;

use super::identities::Identities;
use super::{FilePlan, ImportReport, Rejection};
use crate::adapters::AdapterError;
use crate::adapters::ImportContext;
use crate::archive::artifacts::contract::BankIndex;
use crate::archive::manifest::BreakdownCounter;
use crate::archive::records::EncodedBatch;
use crate::jsonl::{LineError, NonFiniteReplacement};
use crate::record::{KeyDigest, NewRecord};

/// Where an identity was first seen: the import and the place in its file (for
/// duplicate messages).
#[derive(Debug, Clone)]
pub(super) struct Seen {
    pub(super) seq: u64,
    pub(super) place: Place,
}

/// The place of an item in its file: a line, or (for structured inputs) a ZIP member or
/// JSON Pointer as `!member` or `#pointer`.
#[derive(Debug, Clone)]
pub(super) enum Place {
    Line(u64),
    Other(Box<str>),
}

impl Place {
    pub(super) fn of(locator: &crate::record::Locator) -> Self {
        match locator {
            crate::record::Locator::Line(line) => Place::Line(*line),
            crate::record::Locator::Member(member) => Place::Other(format!("!{member}").into()),
            crate::record::Locator::Pointer(pointer) => Place::Other(format!("#{pointer}").into()),
        }
    }

    /// A line and byte column inside the structured item at `locator` (its JSON may span
    /// lines): `!member:3:14`, `#/samples/3:1:2`, counted from the item's own start.
    pub(super) fn within(locator: &crate::record::Locator, line: usize, column: usize) -> Self {
        Place::Other(format!("{}:{line}:{column}", Place::of(locator).suffix()).into())
    }

    /// `:N` for a line, `!member` or `#pointer` otherwise: what follows a file name.
    fn suffix(&self) -> String {
        match self {
            Place::Line(line) => format!(":{line}"),
            Place::Other(other) => other.to_string(),
        }
    }
}

/// Where the first record with an identity came from.
pub(super) enum Origin {
    /// A published import: its archived raw file.
    Published(String),
    /// A file of this batch, as the user named it, and its position in the batch.
    Batch(String, usize),
}

impl Origin {
    /// The place of `line` of this origin, as a duplicate message names it, seen from the
    /// file whose sequence number is `current`.
    pub(super) fn describe(origins: &HashMap<u64, Origin>, first: &Seen, current: u64) -> String {
        let place = first.place.suffix();
        if first.seq == current {
            return match &first.place {
                Place::Line(line) => format!("at line {line} of this file"),
                Place::Other(other) => format!("at {other} of this file"),
            };
        }
        match origins.get(&first.seq) {
            Some(Origin::Published(raw)) => format!("at {raw}{place} (import {})", first.seq),
            Some(Origin::Batch(given, position)) => {
                format!("at {given}{place} (file {position} of this batch)")
            }
            None => format!("at {place} of import {}", first.seq),
        }
    }
}

fn duplicate_hint(strict: bool) -> &'static str {
    if strict {
        "each (benchmark, language, script, question_id, variant_id, filter, repeat_id) may occur once \
         in a strict run; give repeated measurements distinct repeat_id values"
    } else {
        "each (benchmark, language, question_id, variant_id, filter, repeat_id) may occur once per run; \
         give repeated measurements distinct repeat_id values"
    }
}

/// A refused item (or one of its records), located.
#[derive(Debug)]
pub(super) struct Refusal {
    pub(super) place: Place,
    pub(super) column: Option<usize>,
    pub(super) field: Option<String>,
    pub(super) message: String,
    pub(super) hint: Option<String>,
}

impl Refusal {
    /// What an adapter refused, at `place`.
    pub(super) fn of_adapter(place: Place, error: AdapterError) -> Self {
        Refusal {
            place,
            column: None,
            field: (!error.path.is_root()).then(|| error.path.to_string()),
            message: error.message,
            hint: error.hint,
        }
    }

    /// A line that is not the JSON babel reads.
    pub(super) fn of_line(error: LineError) -> Self {
        Refusal {
            place: Place::Line(error.line),
            column: error.column,
            field: (!error.path.is_root()).then(|| error.path.to_string()),
            message: error.message(),
            hint: error.hint().map(str::to_owned),
        }
    }
}

/// What a worker made of one item, in file order.
#[derive(Debug)]
enum Outcome {
    Refused(Refusal),
    /// Record `row` of the batch's encoded records, with the digest of its key.
    Record {
        place: Place,
        digest: KeyDigest,
        row: usize,
    },
}

/// What a worker made of a batch of items: its records, encoded, and what happened to
/// each item in order.
#[derive(Debug, Default)]
pub(super) struct Normalized {
    pub(super) records: EncodedBatch,
    outcomes: Vec<Outcome>,
    /// How many bytes of input the items took.
    input_bytes: usize,
}

impl Normalized {
    /// Room for the records of `items` items of about `bytes` bytes in all.
    pub(super) fn with_capacity(bytes: usize, items: usize) -> Self {
        Normalized {
            records: EncodedBatch::with_capacity(bytes + bytes / 8, items),
            outcomes: Vec::with_capacity(items),
            input_bytes: bytes,
        }
    }

    pub(super) fn refuse(&mut self, refusal: Refusal) {
        self.outcomes.push(Outcome::Refused(refusal));
    }

    /// The last steps of every record, whatever its input: a warning for each non-finite
    /// token read as null (`note` says how), the strict run's bank check, the identity
    /// digest, and the encoding into columns.
    pub(super) fn finish_record(
        &mut self,
        mut record: NewRecord<'_>,
        replaced: &[NonFiniteReplacement],
        note: &dyn Fn(&NonFiniteReplacement) -> String,
        bank: Option<&BankIndex>,
        context: &ImportContext<'_>,
        place: Place,
    ) {
        record.warnings.extend(replaced.iter().map(note));
        let identity = record.identity();
        // A strict run holds only its item bank's instances, each naming its script.
        if let Some(bank) = bank
            && let Err(refused) = bank.check_fields(
                identity.language,
                identity.script,
                identity.question_id,
                identity.filter,
            )
        {
            self.refuse(Refusal {
                place,
                column: None,
                field: (!refused.path.is_root()).then(|| refused.path.to_string()),
                message: refused.message,
                hint: Some(refused.hint),
            });
            return;
        }
        let digest = identity.record_digest(context.run.strict);
        self.records.push(&record);
        self.outcomes.push(Outcome::Record {
            place,
            digest,
            row: self.records.len() - 1,
        });
    }
}

/// Takes normalized items in order: reports refusals, refuses duplicate identities,
/// counts the breakdown, and says which records to write.
pub(super) struct Sink<'a> {
    pub(super) seen: &'a mut Identities,
    pub(super) plan: &'a FilePlan<'a>,
    pub(super) strict: bool,
    pub(super) file_label: String,
    pub(super) breakdown: BreakdownCounter,
    pub(super) partly_written: bool,
}

/// How many records ahead of its lookup an identity's slot is asked for.
const PREFETCH_AHEAD: usize = 16;

/// The most records [`Sink::reserve_for`] makes room for ahead (the identity table is
/// written when reserved): 48 MiB of table slots at most, and 32 MiB of places whose pages
/// come only as records arrive. A file of more records grows the table by doubling.
pub(super) const RESERVE_AHEAD: usize = 1 << 20;

impl Sink<'_> {
    /// Makes room in the identity set for the records of a file of `file_bytes` bytes,
    /// judged by its first batch: grown by doubling, a set of a million identities is
    /// rehashed twenty times and its pages faulted in twice (a tenth of the main thread's
    /// time on a million small records).
    pub(super) fn reserve_for(&mut self, first: &Normalized, file_bytes: u64) {
        if first.input_bytes == 0 {
            return;
        }
        let records = first
            .outcomes
            .iter()
            .filter(|outcome| matches!(outcome, Outcome::Record { .. }))
            .count();
        let per_byte = records as f64 / first.input_bytes as f64;
        let expected = (per_byte * file_bytes as f64) as usize;
        self.seen.reserve(expected.min(RESERVE_AHEAD));
    }

    pub(super) fn reject(
        &self,
        report: &mut ImportReport,
        place: Option<&Place>,
        column: Option<usize>,
        field: Option<String>,
        message: String,
        hint: Option<String>,
    ) {
        let (line, item) = match place {
            Some(Place::Line(line)) => (Some(*line), None),
            Some(Place::Other(other)) => (None, Some(other.to_string())),
            None => (None, None),
        };
        report.reject(Rejection {
            file: self.file_label.clone(),
            line,
            column,
            item,
            field,
            message,
            hint,
        });
    }

    /// Takes a batch in order; gives back its records when they are to be written (none
    /// once the import has a problem: a rejected import publishes nothing).
    pub(super) fn take(
        &mut self,
        batch: Normalized,
        report: &mut ImportReport,
    ) -> Option<EncodedBatch> {
        let digests: Vec<KeyDigest> = batch
            .outcomes
            .iter()
            .filter_map(|outcome| match outcome {
                Outcome::Record { digest, .. } => Some(*digest),
                Outcome::Refused(_) => None,
            })
            .collect();
        // The set does not move while the batch is taken, and each identity's slot is
        // asked for a few records ahead of its lookup.
        self.seen.reserve(digests.len());
        for digest in digests.iter().take(PREFETCH_AHEAD) {
            self.seen.prefetch(*digest);
        }
        let mut ahead = digests.iter().skip(PREFETCH_AHEAD);
        for outcome in batch.outcomes {
            match outcome {
                Outcome::Refused(refusal) => self.reject(
                    report,
                    Some(&refusal.place),
                    refusal.column,
                    refusal.field,
                    refusal.message,
                    refusal.hint,
                ),
                Outcome::Record { place, digest, row } => {
                    if let Some(next) = ahead.next() {
                        self.seen.prefetch(*next);
                    }
                    if let Some(first) = self.seen.first(digest) {
                        self.reject(
                            report,
                            Some(&place),
                            None,
                            None,
                            format!(
                                "duplicate record identity ({}); the same identity is {}",
                                batch.records.identity(row).record_key(self.strict),
                                Origin::describe(self.plan.origins, first, self.plan.seq)
                            ),
                            Some(duplicate_hint(self.strict).into()),
                        );
                    } else {
                        let seen = Seen {
                            seq: self.plan.seq,
                            place,
                        };
                        self.seen.insert(digest, seen);
                        let identity = batch.records.identity(row);
                        self.breakdown.add(
                            identity.benchmark,
                            identity.language,
                            identity.variant_id,
                        );
                    }
                }
            }
        }
        (report.rejected_total == 0 && !batch.records.is_empty()).then_some(batch.records)
    }

    /// Marks that records were written (the fault point of a partly written file).
    pub(super) fn wrote(&mut self) {
        if !self.partly_written {
            self.partly_written = true;
            crate::archive::faults::point("data-partly-written");
        }
    }
}
