//! Item-by-item comparison of two sides of an evaluation (e.g. original vs rephrased
//! questions, or one selection in two runs).
//!
//! Owns the join by stable item identity, the outcome categories and the summary
//! statistics. Pure: records in, [`Comparison`] and [`summary::Summary`] out. It must not
//! touch the filesystem or know where records come from (`archive::comparison` reads them,
//! `report` renders the result).

pub mod stats;
pub mod summary;

use serde::Serialize;
use std::cmp::Ordering;
use std::fmt;

use crate::record::{Entry, IdentityScope, ItemIdentity, Record, Source};

pub use summary::Summary;

/// Which side of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Baseline,
    Variant,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Baseline => "baseline",
            Side::Variant => "variant",
        })
    }
}

/// What a side is: a run and the variant of its records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideLabel {
    pub run_id: String,
    pub variant_id: String,
}

/// One side's records, as handed to [`compare`]: full [`Record`]s, or lighter
/// [`Entry`]s that say where the full record can be read again.
#[derive(Debug, Clone)]
pub struct SideInput<R = Record> {
    pub label: SideLabel,
    pub records: Vec<R>,
}

/// The identity fields of a record, borrowed, in the order items are sorted by:
/// `(benchmark, language, script, question_id, filter, repeat_id)`.
pub type IdentityKey<'r> = (
    &'r str,
    Option<&'r str>,
    Option<&'r str>,
    &'r str,
    &'r str,
    u64,
);

/// What the join and the summary need of a record.
pub trait Comparable {
    /// The item identity.
    fn identity_key(&self) -> IdentityKey<'_>;
    /// Run-local identities never pair.
    fn identity_scope(&self) -> IdentityScope;
    /// The record's own correctness (null is unknown).
    fn correct(&self) -> Option<bool>;
    /// Where the record came from.
    fn source(&self) -> &Source;
}

impl Comparable for Record {
    fn identity_key(&self) -> IdentityKey<'_> {
        (
            &self.benchmark,
            self.language.as_deref(),
            self.script.as_deref(),
            &self.question_id,
            &self.filter,
            self.repeat_id,
        )
    }

    fn identity_scope(&self) -> IdentityScope {
        self.identity_scope
    }

    fn correct(&self) -> Option<bool> {
        self.correct
    }

    fn source(&self) -> &Source {
        &self.source
    }
}

impl Comparable for Entry {
    fn identity_key(&self) -> IdentityKey<'_> {
        (
            &self.benchmark,
            self.language.as_deref(),
            self.script.as_deref(),
            &self.question_id,
            &self.filter,
            self.repeat_id,
        )
    }

    fn identity_scope(&self) -> IdentityScope {
        self.identity_scope
    }

    fn correct(&self) -> Option<bool> {
        self.correct
    }

    fn source(&self) -> &Source {
        &self.source
    }
}

/// How an item fares on the two sides. Unknown correctness never becomes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Correct on both sides.
    BothCorrect,
    /// Wrong on both sides.
    BothWrong,
    /// Correct on the baseline, wrong on the variant.
    CorrectToWrong,
    /// Wrong on the baseline, correct on the variant.
    WrongToCorrect,
    /// Present on both sides, but correctness is unknown (null) on at least one.
    Unscored,
    /// Present on the baseline side only.
    OnlyBaseline,
    /// Present on the variant side only.
    OnlyVariant,
}

impl Outcome {
    /// Every outcome, in the order reports list them.
    pub const ALL: [Outcome; 7] = [
        Outcome::BothCorrect,
        Outcome::BothWrong,
        Outcome::CorrectToWrong,
        Outcome::WrongToCorrect,
        Outcome::Unscored,
        Outcome::OnlyBaseline,
        Outcome::OnlyVariant,
    ];

    /// The machine name used in JSON, CSV and JSONL (`correct_to_wrong`).
    pub fn name(self) -> &'static str {
        match self {
            Outcome::BothCorrect => "both_correct",
            Outcome::BothWrong => "both_wrong",
            Outcome::CorrectToWrong => "correct_to_wrong",
            Outcome::WrongToCorrect => "wrong_to_correct",
            Outcome::Unscored => "unscored",
            Outcome::OnlyBaseline => "only_baseline",
            Outcome::OnlyVariant => "only_variant",
        }
    }

    /// The words shown to people (`correct -> wrong`).
    pub fn label(self) -> &'static str {
        match self {
            Outcome::BothCorrect => "both correct",
            Outcome::BothWrong => "both wrong",
            Outcome::CorrectToWrong => "correct -> wrong",
            Outcome::WrongToCorrect => "wrong -> correct",
            Outcome::Unscored => "unscored",
            Outcome::OnlyBaseline => "only baseline",
            Outcome::OnlyVariant => "only variant",
        }
    }

    /// The outcome of a matched pair from each side's `correct`.
    pub fn of_pair(baseline: Option<bool>, variant: Option<bool>) -> Self {
        match (baseline, variant) {
            (Some(true), Some(true)) => Outcome::BothCorrect,
            (Some(false), Some(false)) => Outcome::BothWrong,
            (Some(true), Some(false)) => Outcome::CorrectToWrong,
            (Some(false), Some(true)) => Outcome::WrongToCorrect,
            (None, _) | (_, None) => Outcome::Unscored,
        }
    }
}

/// One report item: a stable identity and the records the two sides hold for it.
#[derive(Debug, Clone, PartialEq)]
pub enum Item<R = Record> {
    /// Both sides hold a record of this identity.
    Matched { baseline: Box<R>, variant: Box<R> },
    /// Only the baseline side does.
    OnlyBaseline(Box<R>),
    /// Only the variant side does.
    OnlyVariant(Box<R>),
}

impl<R: Comparable> Item<R> {
    /// The item's outcome category.
    pub fn outcome(&self) -> Outcome {
        match self {
            Item::Matched { baseline, variant } => {
                Outcome::of_pair(baseline.correct(), variant.correct())
            }
            Item::OnlyBaseline(_) => Outcome::OnlyBaseline,
            Item::OnlyVariant(_) => Outcome::OnlyVariant,
        }
    }

    /// The baseline record, when the baseline side has one.
    pub fn baseline(&self) -> Option<&R> {
        match self {
            Item::Matched { baseline, .. } | Item::OnlyBaseline(baseline) => Some(baseline),
            Item::OnlyVariant(_) => None,
        }
    }

    /// The variant record, when the variant side has one.
    pub fn variant(&self) -> Option<&R> {
        match self {
            Item::Matched { variant, .. } | Item::OnlyVariant(variant) => Some(variant),
            Item::OnlyBaseline(_) => None,
        }
    }

    /// A record that carries the item's identity (the baseline one when there are two).
    pub fn any_record(&self) -> &R {
        match self {
            Item::Matched { baseline, .. } | Item::OnlyBaseline(baseline) => baseline,
            Item::OnlyVariant(variant) => variant,
        }
    }

    /// The item's identity: `(benchmark, language, script, question_id, filter, repeat_id)`.
    pub fn identity(&self) -> ItemIdentity {
        let (benchmark, language, script, question_id, filter, repeat_id) =
            self.any_record().identity_key();
        ItemIdentity {
            benchmark: benchmark.to_owned(),
            language: language.map(str::to_owned),
            script: script.map(str::to_owned),
            question_id: question_id.to_owned(),
            filter: filter.to_owned(),
            repeat_id,
        }
    }

    /// The same item with each side's record replaced by `load(record)` (how a report
    /// turns an [`Entry`] item into one with full records, one item at a time).
    pub fn load<S, E>(&self, mut load: impl FnMut(&R) -> Result<S, E>) -> Result<Item<S>, E> {
        Ok(match self {
            Item::Matched { baseline, variant } => Item::Matched {
                baseline: Box::new(load(baseline)?),
                variant: Box::new(load(variant)?),
            },
            Item::OnlyBaseline(record) => Item::OnlyBaseline(Box::new(load(record)?)),
            Item::OnlyVariant(record) => Item::OnlyVariant(Box::new(load(record)?)),
        })
    }
}

/// Counts that exist once per side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PerSide<T = u64> {
    pub baseline: T,
    pub variant: T,
}

/// The joined comparison: every stable identity of either side, once, in identity order.
#[derive(Debug, Clone)]
pub struct Comparison<R = Record> {
    pub baseline: SideLabel,
    pub variant: SideLabel,
    /// Items sorted by identity (benchmark, language, script, question_id, filter,
    /// repeat_id; null language and script first).
    pub items: Vec<Item<R>>,
    /// Records with a run-local identity, left out of the join (they never pair).
    pub run_local_excluded: PerSide,
    /// Of those run-local records, how many have known correctness and how many are
    /// correct: they still count when each side is summarized on its own.
    pub run_local_scored: PerSide<Scored>,
}

/// Records with known correctness, and how many of them are correct.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Scored {
    pub known: u64,
    pub correct: u64,
}

impl Scored {
    /// Counts one record's correctness; unknown (null) is counted nowhere.
    pub fn add(&mut self, correct: Option<bool>) {
        if let Some(correct) = correct {
            self.known += 1;
            self.correct += u64::from(correct);
        }
    }
}

/// Why two sides cannot be joined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    /// Two records of one side share a stable identity; picking one would be arbitrary.
    #[error("{0}")]
    DuplicateIdentity(Box<DuplicateIdentity>),
}

/// Two records of one side with the same stable item identity, and where each came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "two {side} records ({run_id}, variant {variant_id}) share the item identity {identity}: {} and {}",
    source_text(first),
    source_text(second)
)]
pub struct DuplicateIdentity {
    pub side: Side,
    pub run_id: String,
    pub variant_id: String,
    pub identity: String,
    pub first: Source,
    pub second: Source,
}

fn source_text(source: &Source) -> String {
    format!("{}:{}", source.path, source.line)
}

fn describe_identity(record: &impl Comparable) -> String {
    let (benchmark, language, script, question_id, filter, repeat_id) = record.identity_key();
    format!(
        "(benchmark={benchmark} language={} script={} question_id={question_id} filter={filter} repeat_id={repeat_id})",
        language.unwrap_or("null"),
        script.unwrap_or("null"),
    )
}

/// Splits off run-local records (counted, with their correctness) and sorts the stable
/// ones by identity, refusing duplicates. Records are boxed once here, so that sorting and
/// building items move pointers, not whole records.
fn prepare<R: Comparable>(
    side: Side,
    input: SideInput<R>,
) -> Result<(Vec<Box<R>>, u64, Scored), CompareError> {
    let before = input.records.len();
    let mut run_local_scored = Scored::default();
    let mut records: Vec<Box<R>> = input
        .records
        .into_iter()
        .filter(|record| {
            let stable = record.identity_scope() == IdentityScope::Stable;
            if !stable {
                run_local_scored.add(record.correct());
            }
            stable
        })
        .map(Box::new)
        .collect();
    let run_local = (before - records.len()) as u64;
    records.sort_unstable_by(|a, b| a.identity_key().cmp(&b.identity_key()));
    if let Some(pair) = records
        .windows(2)
        .find(|pair| pair[0].identity_key() == pair[1].identity_key())
    {
        return Err(CompareError::DuplicateIdentity(Box::new(
            DuplicateIdentity {
                side,
                run_id: input.label.run_id,
                variant_id: input.label.variant_id,
                identity: describe_identity(pair[0].as_ref()),
                first: pair[0].source().clone(),
                second: pair[1].source().clone(),
            },
        )));
    }
    Ok((records, run_local, run_local_scored))
}

/// Joins two sides by stable item identity.
///
/// One item per identity in the union of both sides: matched identities hold both
/// records, the others the side they have. Run-local identities are excluded and counted
/// per side. Two records of one side with the same identity are an error naming both
/// sources. Memory: the records themselves, moved into the items (nothing is copied).
pub fn compare<R: Comparable>(
    baseline: SideInput<R>,
    variant: SideInput<R>,
) -> Result<Comparison<R>, CompareError> {
    let baseline_label = baseline.label.clone();
    let variant_label = variant.label.clone();
    let (baseline_records, baseline_local, baseline_local_scored) =
        prepare(Side::Baseline, baseline)?;
    let (variant_records, variant_local, variant_local_scored) = prepare(Side::Variant, variant)?;
    let mut items = Vec::with_capacity(baseline_records.len().max(variant_records.len()));
    let mut left = baseline_records.into_iter().peekable();
    let mut right = variant_records.into_iter().peekable();
    loop {
        let order = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(a), Some(b)) => a.identity_key().cmp(&b.identity_key()),
        };
        let item = match order {
            Ordering::Less => left.next().map(Item::OnlyBaseline),
            Ordering::Greater => right.next().map(Item::OnlyVariant),
            Ordering::Equal => left
                .next()
                .zip(right.next())
                .map(|(baseline, variant)| Item::Matched { baseline, variant }),
        };
        items.extend(item);
    }
    Ok(Comparison {
        baseline: baseline_label,
        variant: variant_label,
        items,
        run_local_excluded: PerSide {
            baseline: baseline_local,
            variant: variant_local,
        },
        run_local_scored: PerSide {
            baseline: baseline_local_scored,
            variant: variant_local_scored,
        },
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::record::DEFAULT_FILTER;
    use serde_json::{Map, Value, json};

    /// A stored-looking record of `question_id` on a side, with its correctness.
    pub(crate) fn record(
        variant_id: &str,
        question_id: &str,
        language: &str,
        correct: Option<bool>,
    ) -> Record {
        Record {
            schema_version: 1,
            run_id: "r1".into(),
            benchmark: "bench".into(),
            script: None,
            language: Some(language.into()),
            question_id: question_id.into(),
            variant_id: variant_id.into(),
            filter: DEFAULT_FILTER.into(),
            repeat_id: 0,
            identity_scope: IdentityScope::Stable,
            model: "m".into(),
            rephrasing_model: None,
            input: json!({"question": format!("{question_id}?")}),
            target: json!("a"),
            prediction: Value::Null,
            correct,
            scores: Map::new(),
            metrics: Map::new(),
            response: Value::Null,
            source: Source {
                path: "runs/r1/raw/0001-x.jsonl".into(),
                line: 1,
            },
            warnings: vec![],
            extra: Map::new(),
        }
    }

    pub(crate) fn side(variant_id: &str, records: Vec<Record>) -> SideInput {
        SideInput {
            label: SideLabel {
                run_id: "r1".into(),
                variant_id: variant_id.into(),
            },
            records,
        }
    }

    #[test]
    fn outcomes_follow_the_two_correctness_values_and_unknown_never_becomes_wrong() {
        // "Unknown correctness does not become an incorrect answer."
        use Outcome::*;
        let cases = [
            (Some(true), Some(true), BothCorrect),
            (Some(false), Some(false), BothWrong),
            (Some(true), Some(false), CorrectToWrong),
            (Some(false), Some(true), WrongToCorrect),
            (None, Some(false), Unscored),
            (Some(false), None, Unscored),
            (None, None, Unscored),
        ];
        for (baseline, variant, expected) in cases {
            assert_eq!(Outcome::of_pair(baseline, variant), expected);
        }
    }

    #[test]
    fn one_item_represents_the_union_of_stable_identities_on_the_two_sides() {
        // "Matched items contain both records; unmatched items retain the available side."
        let baseline = side(
            "original",
            vec![
                record("original", "q2", "en", Some(true)),
                record("original", "q1", "en", Some(false)),
            ],
        );
        let variant = side(
            "rephrased",
            vec![
                record("rephrased", "q3", "en", None),
                record("rephrased", "q1", "en", Some(true)),
            ],
        );
        let comparison = compare(baseline, variant).unwrap();
        let summary: Vec<(String, Outcome)> = comparison
            .items
            .iter()
            .map(|item| (item.identity().question_id, item.outcome()))
            .collect();
        assert_eq!(
            summary,
            [
                ("q1".into(), Outcome::WrongToCorrect),
                ("q2".into(), Outcome::OnlyBaseline),
                ("q3".into(), Outcome::OnlyVariant),
            ]
        );
        let Item::Matched { baseline, variant } = &comparison.items[0] else {
            panic!("q1 is on both sides");
        };
        assert_eq!(
            (baseline.variant_id.as_str(), variant.variant_id.as_str()),
            ("original", "rephrased")
        );
    }

    #[test]
    fn each_identity_field_separates_items_and_variant_id_does_not() {
        // "Its identity is (benchmark, language, script, question_id, filter, repeat_id)."
        let changes: [fn(&mut Record); 6] = [
            |r| r.benchmark = "other".into(),
            |r| r.language = None,
            |r| r.script = Some("Latn".into()),
            |r| r.question_id = "other".into(),
            |r| r.filter = "strict".into(),
            |r| r.repeat_id = 1,
        ];
        for change in changes {
            let mut changed = record("rephrased", "q1", "en", Some(true));
            change(&mut changed);
            let comparison = compare(
                side("original", vec![record("original", "q1", "en", Some(true))]),
                side("rephrased", vec![changed]),
            )
            .unwrap();
            assert_eq!(comparison.items.len(), 2, "{:?}", comparison.items);
        }
        let comparison = compare(
            side("original", vec![record("original", "q1", "en", Some(true))]),
            side(
                "rephrased",
                vec![record("rephrased", "q1", "en", Some(true))],
            ),
        )
        .unwrap();
        assert_eq!(comparison.items.len(), 1);
    }

    #[test]
    fn run_local_identities_are_excluded_and_counted_per_side() {
        // "Run-local identities are excluded, with counts for each side in the summary."
        let mut local = record("original", "runs/r1/raw/0001-x.jsonl:4", "en", Some(true));
        local.identity_scope = IdentityScope::RunLocal;
        let mut local_variant = record("rephrased", "q1", "en", Some(true));
        local_variant.identity_scope = IdentityScope::RunLocal;
        let comparison = compare(
            side(
                "original",
                vec![local, record("original", "q1", "en", Some(true))],
            ),
            side("rephrased", vec![local_variant]),
        )
        .unwrap();
        assert_eq!(
            comparison.run_local_excluded,
            PerSide {
                baseline: 1,
                variant: 1
            }
        );
        assert_eq!(comparison.items.len(), 1);
        assert_eq!(comparison.items[0].outcome(), Outcome::OnlyBaseline);
    }

    #[test]
    fn duplicate_stable_identities_are_an_error_naming_both_sources() {
        // "Duplicate stable identities are an error, not an arbitrary choice of one record."
        let mut first = record("rephrased", "q1", "en", Some(true));
        first.source.line = 3;
        let mut second = record("rephrased", "q1", "en", Some(false));
        second.source.line = 9;
        let error = compare(
            side("original", vec![record("original", "q1", "en", Some(true))]),
            side("rephrased", vec![first, second]),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "two variant records (r1, variant rephrased) share the item identity \
             (benchmark=bench language=en script=null question_id=q1 filter=none repeat_id=0): \
             runs/r1/raw/0001-x.jsonl:3 and runs/r1/raw/0001-x.jsonl:9"
        );
    }
}
