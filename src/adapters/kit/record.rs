//! The record builder: the fields every record of an import shares, filled once from the
//! import context, so that an adapter sets only what its format decides.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::adapters::stable_id::QuestionIdentity;
use crate::adapters::{AdapterError, Begun, ImportContext, MembersItem};
use crate::canonical_json::Json;
use crate::record::{DEFAULT_FILTER, Locator, NewRecord};

/// The variant of a record whose format has no variants of its own, unless `--variant`
/// names another.
pub const ORIGINAL: &str = "original";

/// A record of this import, at `locator` in the archived raw file, for a question of
/// `benchmark`: the run's id and model, `--language`, the variant `--variant` names (else
/// [`ORIGINAL`]), filter `none`, repeat 0, no script or rephrasing model, and nothing
/// observed yet (null values, empty objects, no warnings), borrowed from the context. The
/// adapter then sets what its format decides.
pub fn new_record<'a>(
    context: &'a ImportContext<'a>,
    benchmark: Cow<'a, str>,
    identity: QuestionIdentity,
    locator: Locator,
) -> NewRecord<'a> {
    NewRecord {
        run_id: Cow::Borrowed(&context.run.run_id),
        benchmark,
        script: None,
        language: context.options.language.as_deref().map(Cow::Borrowed),
        question_id: Cow::Owned(identity.question_id),
        variant_id: Cow::Borrowed(context.options.variant.as_deref().unwrap_or(ORIGINAL)),
        filter: Cow::Borrowed(DEFAULT_FILTER),
        repeat_id: 0,
        identity_scope: identity.scope,
        model: Cow::Borrowed(&context.run.model),
        rephrasing_model: None,
        input: Json::EMPTY_OBJECT,
        target: Json::NULL,
        prediction: Json::NULL,
        correct: None,
        scores: Json::EMPTY_OBJECT,
        metrics: Json::EMPTY_OBJECT,
        response: Json::NULL,
        source_path: Cow::Borrowed(context.source.raw_path),
        locator,
        warnings: Vec::new(),
        extra: Json::EMPTY_OBJECT,
    }
}

/// Adds to `producer` (what the manifest keeps about the producer) each fact the
/// producer's files give and do not leave null.
pub fn add_facts<'v>(
    producer: &mut Map<String, Value>,
    facts: impl IntoIterator<Item = (&'static str, Option<&'v Value>)>,
) {
    for (key, value) in facts {
        if let Some(value) = value.filter(|v| !v.is_null()) {
            producer.insert(key.into(), value.clone());
        }
    }
}

/// What [`ItemMembers::record`] makes of an item: its record, none, or why it cannot.
pub type ItemRecord<'a> = Result<Option<NewRecord<'a>>, AdapterError>;

/// What a structured format's `begin` makes for the items of one input: it turns each
/// item, read as members, into its record.
pub trait ItemMembers: Send + Sync + 'static {
    /// The record of one item, or `None` for an item that makes none.
    fn record<'a>(
        &'a self,
        item: MembersItem<'a>,
        context: &'a ImportContext<'a>,
    ) -> ItemRecord<'a>;
}

/// The [`crate::adapters::MembersHook`] of a format whose `begin` makes an `S`.
pub fn normalize_members<'a, S: ItemMembers>(
    begun: &'a Begun,
    item: MembersItem<'a>,
    context: &'a ImportContext<'a>,
    out: &mut Vec<NewRecord<'a>>,
) -> Result<(), AdapterError> {
    out.extend(state::<S>(begun).record(item, context)?);
    Ok(())
}

/// The state `begin` made, of the adapter that normalizes.
fn state<S: 'static>(begun: &Begun) -> &S {
    begun
        .state
        .downcast_ref()
        .expect("begun by the adapter that normalizes")
}
