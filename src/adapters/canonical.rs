//! The canonical adapter: lines already written in the schema-v1 record contract.
//!
//! `question_id` and `variant_id` are required unless `--id-field` / `--variant` supply
//! them; benchmark and model come from the record or the run and must agree with the run;
//! a record naming another run is refused; `source` is always set by the importer.
//! Unknown top-level fields are refused (a typo must not pass as data): additional
//! producer fields belong under `extra`.

use std::borrow::Cow;

use super::stable_id::{self, QuestionIdentity};
use super::{AdapterError, AdapterOptions, ImportContext, JsonLine, LineFields, RunContext, agree};
use crate::canonical_json::{Json, ObjectWriter};
use crate::jsonl::{FieldPath, PathSegment};
use crate::record::{DEFAULT_FILTER, IdentityScope, Locator, NewRecord, SCHEMA_VERSION};

/// The canonical format: records written directly in the schema-v1 contract.
pub const ADAPTER: super::Adapter = super::Adapter::new(
    "canonical",
    "records in babel's schema-v1 contract, one JSON object per line",
    "canonical/1",
    super::Reader::Lines(normalize),
);

/// The format a line is written in when it is plainly another one's (the fields that
/// format always writes, and a babel record never has): what it is, and its `--format`.
fn other_format(members: &crate::jsonl::Members) -> Option<(&'static str, &'static str)> {
    let has = |key: &str| members.get(key).is_some();
    if has("doc_id") && (has("resps") || has("filtered_resps")) {
        Some(("lm-evaluation-harness output (doc_id, resps)", "harness"))
    } else if has("original") && has("rephrased") {
        Some(("a paired result (original, rephrased)", "paired"))
    } else if has("evaluation_id") && has("sample_id") {
        Some((
            "an Every Eval Ever instance-level row (evaluation_id, sample_id)",
            "eee",
        ))
    } else {
        None
    }
}

/// Normalizes one canonical line into one record.
pub fn normalize<'a>(
    line: JsonLine<'a>,
    context: &'a ImportContext<'a>,
    out: &mut Vec<NewRecord<'a>>,
) -> Result<(), AdapterError> {
    if let Some((what, format)) = other_format(line.members) {
        return Err(AdapterError::new(
            FieldPath::root(),
            format!("this line looks like {what}, not a babel record"),
        )
        .with_hint(format!("import the file with --format {format}")));
    }
    let run = context.run;
    let options = context.options;
    let selected = stable_id::selected(line.members, options)?;
    let mut f = LineFields::new(line.members);
    let mut warnings = Vec::new();
    check_own_run(&mut f, run)?;
    let benchmark = super::benchmark(f.optional_string("benchmark")?, context)?;
    let (question_id, scope) = identity(&mut f, selected, options, &mut warnings)?;
    let variant_id = variant(&mut f, options, &mut warnings)?;
    let language = super::language(f.optional_string("language")?, options)?;
    let script = super::script(f.optional_string("script")?, run)?;
    // The importer supplies its own archived source location.
    f.take("source");
    let filter = f
        .defaulted_string("filter")?
        .unwrap_or(Cow::Borrowed(DEFAULT_FILTER));
    let repeat_id = f.defaulted_index("repeat_id")?.unwrap_or(0);
    let rephrasing_model = f.optional_string("rephrasing_model")?;
    let input = f.object_or_null("input", false)?;
    let target = f.json("target")?.unwrap_or(Json::NULL);
    let prediction = f.json("prediction")?.unwrap_or(Json::NULL);
    let correct = f.nullable_bool("correct", false)?;
    let scores = f.object("scores", false)?;
    let metrics = f.object("metrics", false)?;
    let response = f.json("response")?.unwrap_or(Json::NULL);
    let mut own_warnings = f.strings("warnings", false)?;
    let extra = f.object("extra", false)?;
    let extra = keep_selected_top_level_id(&mut f, options, extra)?;
    f.deny_unknown().map_err(|e| {
        AdapterError::from(e).with_hint("additional producer fields belong under \"extra\"")
    })?;
    own_warnings.extend(warnings);

    out.push(NewRecord {
        run_id: Cow::Borrowed(&run.run_id),
        benchmark,
        script,
        language,
        question_id,
        variant_id,
        filter,
        repeat_id,
        identity_scope: scope,
        model: Cow::Borrowed(&run.model),
        rephrasing_model,
        input,
        target,
        prediction,
        correct,
        scores,
        metrics,
        response,
        source_path: Cow::Borrowed(context.source.raw_path),
        locator: Locator::Line(line.number),
        warnings: own_warnings,
        extra,
    });
    Ok(())
}

/// Refuses a record of another schema version, run or model.
fn check_own_run(f: &mut LineFields<'_>, run: &RunContext) -> Result<(), AdapterError> {
    if let Some(version) = f.optional_index("schema_version")?
        && version != SCHEMA_VERSION
    {
        return Err(AdapterError::new(
            f.path("schema_version"),
            format!(
                "schema version {version} is not supported (this babel reads version {SCHEMA_VERSION})"
            ),
        ));
    }
    if let Some(other) = f.optional_string("run_id")?
        && other != run.run_id
    {
        return Err(AdapterError::new(
            f.path("run_id"),
            format!("the record belongs to run {other:?}, not {:?}", run.run_id),
        )
        .with_hint("remove run_id from records imported into another run, or set it to the destination run"));
    }
    agree(
        "model",
        f.optional_string("model")?,
        Some(&run.model),
        "the run's model",
    )?;
    Ok(())
}

/// The question ID: the record's own, or the one `--id-field` selected (which replaces
/// the record's with a warning, and keeps a record its producer declared run-local
/// run-local).
fn identity<'a>(
    f: &mut LineFields<'a>,
    selected: Option<QuestionIdentity>,
    options: &AdapterOptions,
    warnings: &mut Vec<String>,
) -> Result<(Cow<'a, str>, IdentityScope), AdapterError> {
    let own_question_id = f.optional_string("question_id")?;
    let own_scope = identity_scope(f)?;
    let Some(identity) = selected else {
        let question_id = own_question_id.ok_or_else(|| {
            AdapterError::new(f.path("question_id"), "required field is missing")
                .with_hint("write question_id in each record, or select a field with --id-field")
        })?;
        return Ok((question_id, own_scope.unwrap_or(IdentityScope::Stable)));
    };
    if let Some(own) = own_question_id.filter(|own| *own != identity.question_id) {
        warnings.push(format!(
            "question_id {own:?} replaced by {:?} from --id-field {}",
            identity.question_id,
            options.id_field.as_ref().expect("selected implies a field")
        ));
    }
    // A record its producer declared run-local stays run-local whatever field names its
    // ID: selecting a field never makes an identity pairable.
    let scope = match own_scope {
        Some(IdentityScope::RunLocal) => IdentityScope::RunLocal,
        _ => identity.scope,
    };
    Ok((Cow::Owned(identity.question_id), scope))
}

/// The variant: `--variant` (overriding the record's own with a warning), else the
/// record's own, which is then required.
fn variant<'a>(
    f: &mut LineFields<'a>,
    options: &'a AdapterOptions,
    warnings: &mut Vec<String>,
) -> Result<Cow<'a, str>, AdapterError> {
    let own_variant = f.optional_string("variant_id")?;
    match (&options.variant, own_variant) {
        (Some(forced), own) => {
            if let Some(own) = own.filter(|own| own != forced) {
                warnings.push(format!(
                    "variant_id {own:?} overridden by --variant {forced:?}"
                ));
            }
            Ok(Cow::Borrowed(forced.as_str()))
        }
        (None, Some(own)) => Ok(own),
        (None, None) => Err(
            AdapterError::new(f.path("variant_id"), "required field is missing")
                .with_hint("write variant_id in each record, or give the import --variant"),
        ),
    }
}

/// Reads `identity_scope` (`stable` or `run-local`), if present.
fn identity_scope(f: &mut LineFields<'_>) -> Result<Option<IdentityScope>, AdapterError> {
    let Some(member) = f.take("identity_scope") else {
        return Ok(None);
    };
    let json = member.peek();
    let found = match json.as_string() {
        Some(text) => match IdentityScope::parse(&text) {
            Some(scope) => return Ok(Some(scope)),
            None => format!("{text:?}"),
        },
        None => json.describe(),
    };
    Err(AdapterError::new(
        f.path("identity_scope"),
        format!("expected \"stable\" or \"run-local\", found {found}"),
    ))
}

/// A top-level field that `--id-field` selected (`--id-field id`) is the producer's own
/// data, not a schema field: it is kept under `extra`, as the paired adapter keeps it,
/// instead of being refused as unknown.
fn keep_selected_top_level_id<'a>(
    f: &mut LineFields<'a>,
    options: &super::AdapterOptions,
    extra: Json<'a>,
) -> Result<Json<'a>, AdapterError> {
    let Some([PathSegment::Key(name)]) = options.id_field.as_ref().map(FieldPath::segments) else {
        return Ok(extra);
    };
    let Some(selected) = f.json(name)? else {
        return Ok(extra);
    };
    let mut object = ObjectWriter::new();
    for (key, value) in extra.members().expect("extra is an object") {
        object.insert(key, value);
    }
    if !object.insert(name.as_str(), selected) {
        return Err(AdapterError::new(
            f.path(name),
            format!("--id-field selects {name}, which would be kept as extra.{name}, but extra already has one"),
        )
        .with_hint(format!("select extra.{name} instead, or rename one of the two fields")));
    }
    Ok(object.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::kit::{fixtures, records_of_line};
    use crate::jsonl::NonFinitePolicy;
    use crate::record::{Record, Source};
    use serde_json::{Value, json};

    fn run() -> RunContext {
        fixtures::run("r1", "m1")
    }

    fn import(
        value: Value,
        run: &RunContext,
        options: &AdapterOptions,
    ) -> Result<Record, AdapterError> {
        let context = fixtures::context(run, options, "runs/r1/raw/0001-a.jsonl", "a.jsonl");
        let text = value.to_string();
        let mut out = records_of_line(normalize, &text, 7, NonFinitePolicy::Reject, &context)?;
        assert_eq!(out.len(), 1);
        Ok(out.remove(0))
    }

    fn minimal() -> Value {
        json!({"question_id": "q1", "variant_id": "original", "benchmark": "b"})
    }

    #[test]
    fn defaults_are_filter_none_repeat_zero_and_unknown_correctness() {
        let record = import(minimal(), &run(), &AdapterOptions::default()).unwrap();
        assert_eq!(record.filter, "none");
        assert_eq!(record.repeat_id, 0);
        assert_eq!(
            record.correct, None,
            "absent correctness is unknown, not false"
        );
        assert_eq!(record.identity_scope, IdentityScope::Stable);
        assert_eq!(record.model, "m1", "the model comes from the run");
        assert_eq!(record.run_id, "r1");
    }

    #[test]
    fn the_importer_sets_source_itself() {
        // "The importer supplies its own archived source location."
        let mut value = minimal();
        value["source"] = json!({"path": "elsewhere.jsonl", "line": 99});
        let record = import(value, &run(), &AdapterOptions::default()).unwrap();
        assert_eq!(record.source, Source::line("runs/r1/raw/0001-a.jsonl", 7));
    }

    #[test]
    fn question_and_variant_ids_are_required_unless_given_on_the_command_line() {
        for missing in ["question_id", "variant_id"] {
            let mut value = minimal();
            value.as_object_mut().unwrap().shift_remove(missing);
            let error = import(value, &run(), &AdapterOptions::default()).unwrap_err();
            assert_eq!(error.path.to_string(), missing);
        }
        let options = AdapterOptions {
            variant: Some("rephrased".into()),
            id_field: Some(FieldPath::parse_dotted("extra.uid").unwrap()),
            ..Default::default()
        };
        let value = json!({"benchmark": "b", "extra": {"uid": 12}});
        let record = import(value, &run(), &options).unwrap();
        assert_eq!(
            (record.question_id.as_str(), record.variant_id.as_str()),
            ("12", "rephrased")
        );
    }

    #[test]
    fn a_top_level_field_selected_with_id_field_is_kept_under_extra() {
        // "`question_id` and `variant_id` are required (unless explicitly selected through
        // CLI options)": a selected top-level `id` supplies the question_id, and stays.
        let options = AdapterOptions {
            id_field: Some(FieldPath::parse_dotted("id").unwrap()),
            ..Default::default()
        };
        let value = json!({"id": 17, "variant_id": "original", "benchmark": "b"});
        let record = import(value, &run(), &options).unwrap();
        assert_eq!(record.question_id, "17");
        assert_eq!(record.extra["id"], json!(17));
        let without = import(
            json!({"id": 17, "question_id": "q", "variant_id": "original", "benchmark": "b"}),
            &run(),
            &AdapterOptions::default(),
        )
        .unwrap_err();
        assert_eq!(
            without.path.to_string(),
            "id",
            "unselected, it is still unknown"
        );
        let clash = import(
            json!({"id": 17, "variant_id": "original", "benchmark": "b", "extra": {"id": 1}}),
            &run(),
            &options,
        )
        .unwrap_err();
        assert!(
            clash.message.contains("extra already has one"),
            "{}",
            clash.message
        );
    }

    #[test]
    fn a_record_of_another_run_or_model_is_rejected() {
        // "Run/model conflicts are rejected."
        let mut other_run = minimal();
        other_run["run_id"] = json!("r0");
        assert_eq!(
            import(other_run, &run(), &AdapterOptions::default())
                .unwrap_err()
                .path
                .to_string(),
            "run_id"
        );
        let mut other_model = minimal();
        other_model["model"] = json!("m2");
        let error = import(other_model, &run(), &AdapterOptions::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "field model: model \"m2\" contradicts the run's model \"m1\""
        );
    }

    #[test]
    fn the_benchmark_comes_from_the_record_or_the_run_and_must_agree() {
        let mut with_benchmark = run();
        with_benchmark.benchmark = Some("b".into());
        let mut value = minimal();
        value.as_object_mut().unwrap().shift_remove("benchmark");
        assert_eq!(
            import(value.clone(), &with_benchmark, &AdapterOptions::default())
                .unwrap()
                .benchmark,
            "b"
        );
        assert!(import(value, &run(), &AdapterOptions::default()).is_err());
        with_benchmark.benchmark = Some("other".into());
        assert!(import(minimal(), &with_benchmark, &AdapterOptions::default()).is_err());
    }

    #[test]
    fn invalid_field_types_are_rejected_with_their_path() {
        let cases = [
            ("correct", json!(1)),
            ("correct", json!("true")),
            ("repeat_id", json!(-1)),
            ("identity_scope", json!("global")),
            ("scores", json!([1])),
            ("warnings", json!("w")),
            ("input", json!("a prompt")),
            ("filter", json!(null)),
            ("repeat_id", json!(null)),
        ];
        for (field, bad) in cases {
            let mut value = minimal();
            value[field] = bad;
            let error = import(value, &run(), &AdapterOptions::default()).unwrap_err();
            assert!(
                error.path.to_string().starts_with(field),
                "{field}: {error}"
            );
        }
    }

    #[test]
    fn unknown_top_level_fields_are_refused_and_extra_is_kept() {
        let mut typo = minimal();
        typo["corect"] = json!(true);
        let error = import(typo, &run(), &AdapterOptions::default()).unwrap_err();
        assert_eq!(error.path.to_string(), "corect");
        assert!(error.hint.unwrap().contains("extra"));
        let mut extra = minimal();
        extra["extra"] = json!({"doc_hash": "abc"});
        assert_eq!(
            import(extra, &run(), &AdapterOptions::default())
                .unwrap()
                .extra["doc_hash"],
            "abc"
        );
    }

    #[test]
    fn an_id_field_never_makes_a_run_local_record_stable() {
        let options = AdapterOptions {
            id_field: Some(FieldPath::parse_dotted("extra.uid").unwrap()),
            ..Default::default()
        };
        let mut value = minimal();
        value["identity_scope"] = json!("run-local");
        value["extra"] = json!({"uid": "u1"});
        let record = import(value, &run(), &options).unwrap();
        assert_eq!(
            (record.question_id.as_str(), record.identity_scope),
            ("u1", IdentityScope::RunLocal)
        );
    }

    #[test]
    fn strict_runs_require_a_script() {
        let mut strict = run();
        strict.strict = true;
        assert_eq!(
            import(minimal(), &strict, &AdapterOptions::default())
                .unwrap_err()
                .path
                .to_string(),
            "script"
        );
    }

    #[test]
    fn a_variant_override_is_recorded_as_a_warning() {
        let options = AdapterOptions {
            variant: Some("rephrased".into()),
            ..Default::default()
        };
        let record = import(minimal(), &run(), &options).unwrap();
        assert_eq!(record.variant_id, "rephrased");
        assert_eq!(
            record.warnings,
            ["variant_id \"original\" overridden by --variant \"rephrased\""]
        );
    }
}
