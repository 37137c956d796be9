//! Item-by-item comparison of two sides of an evaluation (e.g. original vs rephrased
//! questions, or one selection in two runs).
//!
//! Owns the join by stable item identity, the outcome categories and the counts behind the
//! summary statistics. Pure: it reads rows through [`Rows`] (the archive's columnar
//! records, or plain [`Record`]s) and returns [`Comparison`] items that point at rows; it
//! never touches the filesystem or knows where rows come from.
//!
//! The join is a sort-merge on each row's key ([`keys::RowKey`]: label symbols shared by
//! both sides, and a 128-bit key of the question), so it never touches the identity
//! strings, which lie scattered in memory. The two sides are keyed and sorted on two
//! threads. Items come out grouped by question, which is how the pooling caveat counts
//! questions; reports sort them by identity ([`Comparison::sort_by_identity`]).

pub mod keys;
pub mod stats;
pub mod summary;

use serde::Serialize;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::record::{Identity, Record};
use keys::{Interner, RowKey};

pub use summary::{Summary, Tally};

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
    /// The run's model.
    pub model: String,
}

/// What the join needs of one side's rows, by row number.
pub trait Rows: Sync {
    /// The join key of every row, in row order, labels interned with `interner`; or why
    /// the rows cannot be read.
    fn keys(&self, interner: &Interner) -> Result<Vec<RowKey>, String>;
    /// The item identity and the source of a row, as a message about it shows them
    /// (`(benchmark=… …)`, `path:line`).
    fn describe(&self, row: usize) -> (String, String);
}

/// Rows whose identities are at hand: what sorting items as reports list them needs.
pub trait Identities {
    /// The row's identity fields.
    fn identity(&self, row: usize) -> Identity<'_>;
}

impl Rows for [Record] {
    fn keys(&self, interner: &Interner) -> Result<Vec<RowKey>, String> {
        Ok(self
            .iter()
            .enumerate()
            .map(|(row, r)| interner.key(row, &r.identity(), r.identity_scope, r.correct))
            .collect())
    }

    fn describe(&self, row: usize) -> (String, String) {
        (
            self[row].identity().item_key(),
            self[row].source.to_string(),
        )
    }
}

impl Identities for [Record] {
    fn identity(&self, row: usize) -> Identity<'_> {
        self[row].identity()
    }
}

/// One side as handed to [`compare`]: its label and its rows.
pub struct SideInput<'r, R: ?Sized> {
    pub label: &'r SideLabel,
    pub rows: &'r R,
}

impl<R: ?Sized> Clone for SideInput<'_, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R: ?Sized> Copy for SideInput<'_, R> {}

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

/// One report item: a stable identity and the rows the two sides hold for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    /// The baseline's row of this identity, if it has one.
    pub baseline: Option<u32>,
    /// The variant's row of this identity, if it has one.
    pub variant: Option<u32>,
    pub outcome: Outcome,
}

impl Item {
    /// The row of `side`, if that side has one.
    pub fn row(&self, side: Side) -> Option<u32> {
        match side {
            Side::Baseline => self.baseline,
            Side::Variant => self.variant,
        }
    }

    /// The item's identity, read from the baseline's row when there is one (`variant_id`
    /// is that row's own).
    pub fn identity<'r, B, V>(&self, baseline: &'r B, variant: &'r V) -> Identity<'r>
    where
        B: Identities + ?Sized,
        V: Identities + ?Sized,
    {
        match (self.baseline, self.variant) {
            (Some(row), _) => baseline.identity(row as usize),
            (None, Some(row)) => variant.identity(row as usize),
            (None, None) => unreachable!("an item has a row on at least one side"),
        }
    }
}

/// Counts that exist once per side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PerSide<T = u64> {
    pub baseline: T,
    pub variant: T,
}

/// The joined comparison: every stable identity of either side, once.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub baseline: SideLabel,
    pub variant: SideLabel,
    /// Items grouped by question as the join leaves them, or sorted by identity after
    /// [`Comparison::sort_by_identity`].
    pub items: Vec<Item>,
    /// Records with a run-local identity, left out of the join (they never pair).
    pub run_local_excluded: PerSide,
    /// The counts the summary is computed from.
    pub tally: Tally,
}

impl Comparison {
    /// Sorts the items by identity: `(benchmark, language, script, question_id, filter,
    /// repeat_id)`, null language and script first; the order every report writes.
    pub fn sort_by_identity<B, V>(&mut self, baseline: &B, variant: &V)
    where
        B: Identities + ?Sized,
        V: Identities + ?Sized,
    {
        // Each identity is read once, not once per comparison: reading one from the
        // columns is a cache miss per field, and a sort compares n log n times. Most
        // comparisons are then settled by a prefix key that holds no pointer.
        let mut labels = HashMap::new();
        let mut keyed: Vec<(SortPrefix, Identity<'_>, Item)> = self
            .items
            .drain(..)
            .map(|item| {
                let identity = item.identity(baseline, variant);
                let triple = (identity.benchmark, identity.language, identity.script);
                let next = labels.len() as u32;
                let label = *labels.entry(triple).or_insert(next);
                let prefix = SortPrefix::of(label, identity.question_id);
                (prefix, identity, item)
            })
            .collect();
        // The labels' first-seen numbers become their ranks in identity order.
        let mut order: Vec<_> = labels
            .iter()
            .map(|(triple, &seen)| (*triple, seen))
            .collect();
        order.sort_unstable();
        let mut rank = vec![0u32; order.len()];
        for (position, (_, seen)) in order.into_iter().enumerate() {
            rank[seen as usize] = position as u32;
        }
        for (prefix, _, _) in &mut keyed {
            prefix.labels = rank[prefix.labels as usize];
        }
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.item_cmp(&b.1)));
        self.items = keyed.into_iter().map(|(_, _, item)| item).collect();
    }
}

/// What orders most items without reading their identity's strings: the rank of the
/// item's `(benchmark, language, script)` among the comparison's, then the first 16 bytes
/// of its question_id (zero-padded, so a shorter id orders first; a tie is settled by the
/// whole identity). Two prefixes that differ order as their identities do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct SortPrefix {
    labels: u32,
    question: [u8; 16],
}

impl SortPrefix {
    fn of(labels: u32, question_id: &str) -> Self {
        let mut bytes = [0u8; 16];
        let head = &question_id.as_bytes()[..question_id.len().min(16)];
        bytes[..head.len()].copy_from_slice(head);
        Self {
            labels,
            question: bytes,
        }
    }
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
    /// A side's rows could not be read.
    #[error("the {side} side cannot be read: {reason}")]
    Unreadable { side: Side, reason: String },
}

/// Two records of one side with the same stable item identity, and where each came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "two {side} records ({run_id}, variant {variant_id}) share the item identity {identity}: {first} and {second}"
)]
pub struct DuplicateIdentity {
    pub side: Side,
    pub run_id: String,
    pub variant_id: String,
    pub identity: String,
    pub first: String,
    pub second: String,
}

/// One side keyed and sorted, with its run-local rows counted apart.
struct Prepared {
    keys: Vec<RowKey>,
    run_local: u64,
    run_local_scored: Scored,
}

fn prepare<R: Rows + ?Sized>(
    side: Side,
    input: SideInput<'_, R>,
    interner: &Interner,
) -> Result<Prepared, CompareError> {
    let rows = input.rows;
    let mut keys = rows
        .keys(interner)
        .map_err(|reason| CompareError::Unreadable { side, reason })?;
    let mut run_local_scored = Scored::default();
    let before = keys.len();
    keys.retain(|key| {
        if !key.stable {
            run_local_scored.add(key.correct);
        }
        key.stable
    });
    let run_local = (before - keys.len()) as u64;
    keys.sort_unstable_by_key(RowKey::item);
    if let Some(pair) = keys
        .windows(2)
        .find(|pair| pair[0].item() == pair[1].item())
    {
        let (a, b) = (pair[0].row as usize, pair[1].row as usize);
        let (identity, first) = rows.describe(a.min(b));
        let (_, second) = rows.describe(a.max(b));
        return Err(CompareError::DuplicateIdentity(Box::new(
            DuplicateIdentity {
                side,
                run_id: input.label.run_id.clone(),
                variant_id: input.label.variant_id.clone(),
                identity,
                first,
                second,
            },
        )));
    }
    Ok(Prepared {
        keys,
        run_local,
        run_local_scored,
    })
}

/// Joins two sides by stable item identity.
///
/// One item per identity in the union of both sides: matched identities point at both
/// rows, the others at the side they have. Run-local identities are excluded and counted
/// per side. Two rows of one side with the same identity are an error naming both
/// sources. Memory: a 48-byte key per row while joining, then a small item each.
pub fn compare<B, V>(
    baseline: SideInput<'_, B>,
    variant: SideInput<'_, V>,
) -> Result<Comparison, CompareError>
where
    B: Rows + ?Sized,
    V: Rows + ?Sized,
{
    let interner = Interner::new();
    let (left, right) = std::thread::scope(|scope| {
        let left = scope.spawn(|| prepare(Side::Baseline, baseline, &interner));
        let right = prepare(Side::Variant, variant, &interner);
        (left.join().expect("keying a side does not panic"), right)
    });
    let (left, right) = (left?, right?);
    let mut items = Vec::with_capacity(left.keys.len().max(right.keys.len()));
    let mut tally = Counting::default();
    tally.scored.baseline = left.run_local_scored;
    tally.scored.variant = right.run_local_scored;
    let (mut i, mut j) = (0, 0);
    while i < left.keys.len() || j < right.keys.len() {
        let (b, v) = match (left.keys.get(i), right.keys.get(j)) {
            (Some(a), Some(b)) => match a.item().cmp(&b.item()) {
                Ordering::Equal => (Some(a), Some(b)),
                Ordering::Less => (Some(a), None),
                Ordering::Greater => (None, Some(b)),
            },
            (Some(a), None) => (Some(a), None),
            (None, b) => (None, b),
        };
        i += usize::from(b.is_some());
        j += usize::from(v.is_some());
        let outcome = match (b, v) {
            (Some(b), Some(v)) => Outcome::of_pair(b.correct, v.correct),
            (Some(_), None) => Outcome::OnlyBaseline,
            _ => Outcome::OnlyVariant,
        };
        let key = b.or(v).expect("one side has the item");
        tally.count(key, outcome, b.map(|k| k.correct), v.map(|k| k.correct));
        items.push(Item {
            baseline: b.map(|k| k.row),
            variant: v.map(|k| k.row),
            outcome,
        });
    }
    Ok(Comparison {
        baseline: baseline.label.clone(),
        variant: variant.label.clone(),
        items,
        run_local_excluded: PerSide {
            baseline: left.run_local,
            variant: right.run_local,
        },
        tally: tally.finish(&interner),
    })
}

/// Outcome counts per label symbol.
#[derive(Default)]
struct GroupCounts {
    counts: Vec<Option<summary::OutcomeCounts>>,
}

impl GroupCounts {
    fn add(&mut self, symbol: u32, outcome: Outcome) {
        let symbol = symbol as usize;
        if self.counts.len() <= symbol {
            self.counts.resize(symbol + 1, None);
        }
        self.counts[symbol]
            .get_or_insert_with(Default::default)
            .add(outcome);
    }

    /// The groups by name, sorted (null first).
    fn finish(self, interner: &Interner) -> Vec<(Option<String>, summary::OutcomeCounts)> {
        let mut groups: Vec<_> = self
            .counts
            .into_iter()
            .enumerate()
            .filter_map(|(symbol, counts)| Some((interner.name(symbol as u32), counts?)))
            .collect();
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        groups
    }
}

/// The counts gathered while the items are joined (items come grouped by question).
#[derive(Default)]
struct Counting {
    overall: summary::OutcomeCounts,
    benchmarks: GroupCounts,
    languages: GroupCounts,
    filters: GroupCounts,
    questions: u64,
    question_filters: u64,
    repeat_ids: HashSet<u64>,
    /// The previous item's question and filter.
    previous: Option<(u128, u32)>,
    records: PerSide,
    scored: PerSide<Scored>,
}

impl Counting {
    fn count(
        &mut self,
        key: &RowKey,
        outcome: Outcome,
        baseline: Option<Option<bool>>,
        variant: Option<Option<bool>>,
    ) {
        // Items are sorted by (question, filter, repeat_id): one question's items, and
        // one filter's within it, are adjacent.
        match self.previous {
            Some((question, filter)) if question == key.question => {
                if filter != key.filter {
                    self.question_filters += 1;
                }
            }
            _ => {
                self.questions += 1;
                self.question_filters += 1;
            }
        }
        self.previous = Some((key.question, key.filter));
        self.overall.add(outcome);
        self.benchmarks.add(key.benchmark, outcome);
        self.languages.add(key.language, outcome);
        self.filters.add(key.filter, outcome);
        self.repeat_ids.insert(key.repeat_id);
        if let Some(correct) = baseline {
            self.records.baseline += 1;
            self.scored.baseline.add(correct);
        }
        if let Some(correct) = variant {
            self.records.variant += 1;
            self.scored.variant.add(correct);
        }
    }

    fn finish(self, interner: &Interner) -> Tally {
        let named = |groups: GroupCounts| {
            groups
                .finish(interner)
                .into_iter()
                .map(|(name, counts)| (name.unwrap_or_default(), counts))
                .collect()
        };
        Tally {
            overall: self.overall,
            by_benchmark: named(self.benchmarks),
            by_language: self.languages.finish(interner),
            by_filter: named(self.filters),
            questions: self.questions,
            question_filters: self.question_filters,
            repeat_ids: self.repeat_ids.len() as u64,
            records: self.records,
            scored: self.scored,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::record::{DEFAULT_FILTER, IdentityScope, Source};
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
            source: Source::line("runs/r1/raw/0001-x.jsonl", 1),
            warnings: vec![],
            extra: Map::new(),
        }
    }

    /// A comparison of two record lists (baseline `original`, variant `rephrased` of run
    /// r1) with the records its items point at.
    pub(crate) struct Joined {
        pub comparison: Comparison,
        pub baseline: Vec<Record>,
        pub variant: Vec<Record>,
    }

    pub(crate) fn join(
        baseline: Vec<Record>,
        variant: Vec<Record>,
    ) -> Result<Joined, CompareError> {
        let label = |variant_id: &str| SideLabel {
            run_id: "r1".into(),
            variant_id: variant_id.into(),
            model: "m".into(),
        };
        let (b_label, v_label) = (label("original"), label("rephrased"));
        let comparison = compare(
            SideInput {
                label: &b_label,
                rows: &baseline[..],
            },
            SideInput {
                label: &v_label,
                rows: &variant[..],
            },
        )?;
        Ok(Joined {
            comparison,
            baseline,
            variant,
        })
    }

    impl Joined {
        /// (question_id, outcome) of each item, in identity order.
        fn outcomes(&mut self) -> Vec<(String, Outcome)> {
            self.comparison
                .sort_by_identity(&self.baseline[..], &self.variant[..]);
            self.comparison
                .items
                .iter()
                .map(|item| {
                    let identity = item.identity(&self.baseline[..], &self.variant[..]);
                    (identity.question_id.to_owned(), item.outcome)
                })
                .collect()
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
        let mut joined = join(
            vec![
                record("original", "q2", "en", Some(true)),
                record("original", "q1", "en", Some(false)),
            ],
            vec![
                record("rephrased", "q3", "en", None),
                record("rephrased", "q1", "en", Some(true)),
            ],
        )
        .unwrap();
        assert_eq!(
            joined.outcomes(),
            [
                ("q1".into(), Outcome::WrongToCorrect),
                ("q2".into(), Outcome::OnlyBaseline),
                ("q3".into(), Outcome::OnlyVariant),
            ]
        );
        let first = joined.comparison.items[0];
        assert_eq!((first.baseline, first.variant), (Some(1), Some(1)));
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
            let joined = join(
                vec![record("original", "q1", "en", Some(true))],
                vec![changed],
            )
            .unwrap();
            assert_eq!(
                joined.comparison.items.len(),
                2,
                "{:?}",
                joined.comparison.items
            );
        }
        let joined = join(
            vec![record("original", "q1", "en", Some(true))],
            vec![record("rephrased", "q1", "en", Some(true))],
        )
        .unwrap();
        assert_eq!(joined.comparison.items.len(), 1);
    }

    #[test]
    fn many_items_join_like_a_map_keyed_by_identity() {
        // An independent join: a BTreeMap from identity to the two sides' correctness.
        use std::collections::BTreeMap;
        type Key = (String, String, u64);
        type Sides = (Option<Option<bool>>, Option<Option<bool>>);
        let mut baseline = Vec::new();
        let mut variant = Vec::new();
        for i in 0..3000u64 {
            let mut r = record("original", &format!("q{}", i % 997), "en", Some(i % 3 == 0));
            r.filter = ["none", "strict", "flex"][(i / 997) as usize % 3].into();
            r.repeat_id = i / 2991;
            if i % 5 != 0 {
                baseline.push(r.clone());
            }
            if i % 7 != 0 {
                r.variant_id = "rephrased".into();
                r.correct = (i % 4 != 0).then_some(i % 2 == 0);
                variant.push(r);
            }
        }
        let mut expected: BTreeMap<Key, Sides> = BTreeMap::new();
        for r in &baseline {
            expected
                .entry((r.question_id.clone(), r.filter.clone(), r.repeat_id))
                .or_default()
                .0 = Some(r.correct);
        }
        for r in &variant {
            expected
                .entry((r.question_id.clone(), r.filter.clone(), r.repeat_id))
                .or_default()
                .1 = Some(r.correct);
        }
        let mut joined = join(baseline, variant).unwrap();
        joined
            .comparison
            .sort_by_identity(&joined.baseline[..], &joined.variant[..]);
        let found: Vec<(Key, Sides)> = joined
            .comparison
            .items
            .iter()
            .map(|item| {
                let id = item.identity(&joined.baseline[..], &joined.variant[..]);
                (
                    (
                        id.question_id.to_owned(),
                        id.filter.to_owned(),
                        id.repeat_id,
                    ),
                    (
                        item.baseline
                            .map(|row| joined.baseline[row as usize].correct),
                        item.variant.map(|row| joined.variant[row as usize].correct),
                    ),
                )
            })
            .collect();
        let mut expected: Vec<_> = expected.into_iter().collect();
        expected.sort_by(|a, b| (&a.0.0, &a.0.1, a.0.2).cmp(&(&b.0.0, &b.0.1, b.0.2)));
        assert_eq!(found, expected);
    }

    #[test]
    fn the_identity_sort_agrees_with_comparing_whole_identities() {
        // Ids sharing 16-byte prefixes, shorter ids, a NUL byte, labels seen out of order
        // and a null language: the prefix key must never order two items otherwise than
        // `Identity::item_cmp` does.
        let ids = [
            "abcdefghijklmnopq2",
            "abcdefghijklmnopq10",
            "abcdefghijklmnop",
            "abcdefghijklmno",
            "ab",
            "ab\u{0}",
            "ab\u{0}c",
            "b",
            "é",
            "",
        ];
        let mut baseline = Vec::new();
        for (n, id) in ids.iter().enumerate() {
            for (language, benchmark) in
                [(Some("tr"), "zeta"), (None, "zeta"), (Some("en"), "alpha")]
            {
                let mut r = record("original", id, "en", Some(n % 2 == 0));
                r.language = language.map(str::to_owned);
                r.benchmark = benchmark.into();
                r.filter = ["strict", "flex"][n % 2].into();
                baseline.push(r);
            }
        }
        let mut joined = join(baseline, Vec::new()).unwrap();
        joined
            .comparison
            .sort_by_identity(&joined.baseline[..], &joined.variant[..]);
        let sorted: Vec<Identity<'_>> = joined
            .comparison
            .items
            .iter()
            .map(|item| item.identity(&joined.baseline[..], &joined.variant[..]))
            .collect();
        let mut expected = sorted.clone();
        expected.sort_by(|a, b| a.item_cmp(b));
        assert_eq!(sorted, expected);
        assert_eq!(sorted.len(), ids.len() * 3);
    }

    #[test]
    fn run_local_identities_are_excluded_and_counted_per_side() {
        // "Run-local identities are excluded, with counts for each side in the summary."
        let mut local = record("original", "runs/r1/raw/0001-x.jsonl:4", "en", Some(true));
        local.identity_scope = IdentityScope::RunLocal;
        let mut local_variant = record("rephrased", "q1", "en", Some(true));
        local_variant.identity_scope = IdentityScope::RunLocal;
        let mut joined = join(
            vec![local, record("original", "q1", "en", Some(true))],
            vec![local_variant],
        )
        .unwrap();
        assert_eq!(
            joined.comparison.run_local_excluded,
            PerSide {
                baseline: 1,
                variant: 1
            }
        );
        assert_eq!(joined.outcomes(), [("q1".into(), Outcome::OnlyBaseline)]);
    }

    #[test]
    fn duplicate_stable_identities_are_an_error_naming_both_sources() {
        // "Duplicate stable identities are an error, not an arbitrary choice of one record."
        let mut first = record("rephrased", "q1", "en", Some(true));
        first.source = Source::line("runs/r1/raw/0001-x.jsonl", 3);
        let mut second = record("rephrased", "q1", "en", Some(false));
        second.source = Source::line("runs/r1/raw/0001-x.jsonl", 9);
        let error = join(
            vec![record("original", "q1", "en", Some(true))],
            vec![first, second],
        )
        .err()
        .unwrap();
        let text = error.to_string();
        assert!(
            text == "two variant records (r1, variant rephrased) share the item identity \
             (benchmark=bench language=en script=null question_id=q1 filter=none repeat_id=0): \
             runs/r1/raw/0001-x.jsonl:3 and runs/r1/raw/0001-x.jsonl:9"
                || text
                    == "two variant records (r1, variant rephrased) share the item identity \
             (benchmark=bench language=en script=null question_id=q1 filter=none repeat_id=0): \
             runs/r1/raw/0001-x.jsonl:9 and runs/r1/raw/0001-x.jsonl:3",
            "{text}"
        );
    }
}
