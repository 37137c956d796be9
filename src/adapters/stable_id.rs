//! Stable question identity: the automatic lookup order of the data contract, the
//! `--id-field` override, and the run-local identity used when no stable ID exists. Every
//! adapter's identity checks go through here: [`selected`] first, then its format's own
//! rule, which ends in a [`QuestionIdentity::stable`] id or a [`run_local`] one.

use serde_json::{Map, Value};

use std::cmp::Ordering;
use std::fmt::Display;
use std::sync::LazyLock;

use super::{AdapterError, AdapterOptions, SourceFile};
use crate::canonical_json::{Json, JsonKind, ObjectMembers, utf16_order};
use crate::jsonl::{FieldPath, Member, Members, PathSegment};
use crate::record::{IdentityScope, fields::describe};

/// Where the automatic lookup looks, in order.
pub const LOOKUP_ORDER: [&str; 6] = [
    "original_question_id",
    "doc.original_question_id",
    "question_id",
    "doc.question_id",
    "id",
    "doc.id",
];

/// A question identity and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionIdentity {
    pub question_id: String,
    pub scope: IdentityScope,
    /// The field it was read from; `None` when the format's own rule made it.
    pub field: Option<FieldPath>,
}

impl QuestionIdentity {
    /// An ID the format's own rule reads as the question's, stable across runs.
    pub fn stable(question_id: String) -> Self {
        Self {
            question_id,
            scope: IdentityScope::Stable,
            field: None,
        }
    }
}

/// What stands at a place an ID may be read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Candidate {
    Null,
    /// A string (possibly empty).
    Text(String),
    /// An integer, as its decimal text.
    Integer(String),
    /// Anything else, described for the message.
    Other(String),
}

/// An object a question ID can be read from: a line's members, or a parsed object.
pub trait IdSource {
    /// What stands at `path`, or `None` when nothing does.
    fn candidate(&self, path: &FieldPath) -> Option<Candidate>;

    /// What stands at each of `paths`, in their order, up to the first that is present
    /// and not null (where the automatic lookup stops); `None` for the rest, which are not
    /// looked at (describing a value that is no ID parses it whole).
    fn candidates(&self, paths: &[FieldPath]) -> Vec<Option<Candidate>> {
        let mut found = vec![None; paths.len()];
        for (index, path) in paths.iter().enumerate() {
            found[index] = self.candidate(path);
            if ends_lookup(&found[index]) {
                break;
            }
        }
        found
    }
}

impl IdSource for Map<String, Value> {
    fn candidate(&self, path: &FieldPath) -> Option<Candidate> {
        Some(match path.lookup_in(self)? {
            Value::Null => Candidate::Null,
            Value::String(text) => Candidate::Text(text.clone()),
            Value::Number(n) if n.is_u64() || n.is_i64() => Candidate::Integer(n.to_string()),
            other => Candidate::Other(describe(other)),
        })
    }
}

impl IdSource for Members {
    fn candidate(&self, path: &FieldPath) -> Option<Candidate> {
        let (PathSegment::Key(first), rest) = path.segments().split_first()? else {
            return None;
        };
        let member = self.get(first)?;
        let mut value = member.peek();
        for segment in rest {
            value = match segment {
                PathSegment::Key(key) => value.get(key)?,
                PathSegment::Index(index) => value.elements()?.get(*index)?.clone(),
            }
            .into_owned();
        }
        Some(classify(&member, &value, rest))
    }

    /// The keys asked for one level inside the same member are found in one walk of it:
    /// the automatic lookup asks for three keys of `doc`, and walking a long document
    /// three times was 4 % of a harness import (BENCHMARKS.md, "Question IDs in one walk").
    fn candidates(&self, paths: &[FieldPath]) -> Vec<Option<Candidate>> {
        let mut walked: Vec<Option<Option<Json<'_>>>> = vec![None; paths.len()];
        let mut found = vec![None; paths.len()];
        for (index, path) in paths.iter().enumerate() {
            let inside =
                one_key_inside(path).and_then(|(parent, _)| Some((parent, self.get(parent)?)));
            found[index] = match inside {
                None => self.candidate(path),
                Some((parent, member)) => {
                    if walked[index].is_none() {
                        walk(&member, parent, paths, index, &mut walked);
                    }
                    walked[index]
                        .take()
                        .flatten()
                        .map(|value| classify(&member, &value, &path.segments()[1..]))
                }
            };
            if ends_lookup(&found[index]) {
                break;
            }
        }
        found
    }
}

/// Walks `member` (named `parent`) once for `paths[from]` and every later path one key
/// inside it, noting what each finds in `walked` (`Some(None)`: nothing).
fn walk<'a>(
    member: &Member<'a>,
    parent: &str,
    paths: &[FieldPath],
    from: usize,
    walked: &mut [Option<Option<Json<'a>>>],
) {
    let wanted: Vec<(usize, &str)> = paths
        .iter()
        .enumerate()
        .skip(from)
        .filter_map(|(at, path)| match one_key_inside(path) {
            Some((other, key)) if other == parent => Some((at, key)),
            _ => None,
        })
        .collect();
    for &(at, _) in &wanted {
        walked[at] = Some(None);
    }
    let Some(members) = ObjectMembers::of(member.value) else {
        return;
    };
    // Canonical keys are sorted: none wanted comes after the greatest.
    let Some(last) = wanted
        .iter()
        .map(|&(_, key)| key)
        .max_by(|a, b| utf16_order(a, b))
    else {
        return;
    };
    for (key, value) in members {
        if utf16_order(&key, last) == Ordering::Greater {
            break;
        }
        for &(at, wanted_key) in &wanted {
            if key == wanted_key {
                walked[at] = Some(Some(value.clone()));
            }
        }
    }
}

/// Whether the automatic lookup stops at this candidate: one present and not null is an
/// ID or an error.
fn ends_lookup(candidate: &Option<Candidate>) -> bool {
    candidate
        .as_ref()
        .is_some_and(|candidate| *candidate != Candidate::Null)
}

/// The member and the key a path of two keys names (`doc` and `id` of `doc.id`); none
/// for any other path.
fn one_key_inside(path: &FieldPath) -> Option<(&str, &str)> {
    match path.segments() {
        [PathSegment::Key(parent), PathSegment::Key(key)] => Some((parent, key)),
        _ => None,
    }
}

/// What `value`, found at `below` inside `member`, is as a question ID.
fn classify(member: &Member<'_>, value: &Json<'_>, below: &[PathSegment]) -> Candidate {
    match value.kind() {
        JsonKind::Null => Candidate::Null,
        JsonKind::String => Candidate::Text(value.as_string().expect("a string").into_owned()),
        // An integer no double holds: the exact decimal as written, as the tree reader's
        // u64 gives it (the scan notes every one of a member).
        JsonKind::Number
            if let Some((_, (_, decimal))) = member
                .unsafe_integers
                .iter()
                .find(|(_, (at, _))| at.segments() == below) =>
        {
            Candidate::Integer(decimal.clone())
        }
        JsonKind::Number if below.is_empty() && member.written_as_fraction => {
            Candidate::Other(super::kit::describe(member))
        }
        // `12.0` or `1e2` deep in a line: the tree reader's double, not an integer ID.
        JsonKind::Number if member.is_integral_double(below) => Candidate::Other(
            crate::record::fields::describe(&Value::from(value.as_f64().unwrap_or_default())),
        ),
        JsonKind::Number
            if value
                .as_str()
                .trim_start_matches('-')
                .bytes()
                .all(|b| b.is_ascii_digit()) =>
        {
            Candidate::Integer(value.as_str().to_owned())
        }
        _ => Candidate::Other(value.describe()),
    }
}

fn as_id(candidate: Candidate, path: &FieldPath) -> Result<Option<String>, AdapterError> {
    match candidate {
        Candidate::Null => Ok(None),
        Candidate::Text(text) if !text.is_empty() => Ok(Some(text)),
        // Integer IDs are common in datasets; they are read as their decimal text.
        Candidate::Integer(text) => Ok(Some(text)),
        Candidate::Text(_) => Err(not_an_id(path, "the string \"\"")),
        Candidate::Other(found) => Err(not_an_id(path, &found)),
    }
}

fn not_an_id(path: &FieldPath, found: &str) -> AdapterError {
    AdapterError::new(
        path.clone(),
        format!("a question ID is a non-empty string or an integer, found {found}"),
    )
}

/// Reads the ID at an explicit `--id-field` path. Selecting `doc_id` (the harness's
/// position in the split) gives a run-local identity: enumeration is not persistent.
pub fn at_field(
    object: &impl IdSource,
    field: &FieldPath,
) -> Result<QuestionIdentity, AdapterError> {
    let found = object.candidate(field).ok_or_else(|| {
        AdapterError::new(
            field.clone(),
            "the field selected with --id-field is missing",
        )
    })?;
    let question_id = as_id(found, field)?.ok_or_else(|| {
        AdapterError::new(field.clone(), "the field selected with --id-field is null")
    })?;
    let positional = field.segments() == [PathSegment::Key("doc_id".into())];
    Ok(QuestionIdentity {
        question_id,
        scope: if positional {
            IdentityScope::RunLocal
        } else {
            IdentityScope::Stable
        },
        field: Some(field.clone()),
    })
}

/// The automatic lookup: the first of [`LOOKUP_ORDER`] that is present and not null.
pub fn lookup(object: &impl IdSource) -> Result<Option<QuestionIdentity>, AdapterError> {
    static PATHS: LazyLock<Vec<FieldPath>> = LazyLock::new(|| {
        LOOKUP_ORDER
            .iter()
            .map(|dotted| FieldPath::parse_dotted(dotted).expect("lookup paths are valid"))
            .collect()
    });
    for (path, found) in PATHS.iter().zip(object.candidates(&PATHS)) {
        let Some(found) = found else {
            continue;
        };
        if let Some(question_id) = as_id(found, path)? {
            return Ok(Some(QuestionIdentity {
                question_id,
                scope: IdentityScope::Stable,
                field: Some(path.clone()),
            }));
        }
    }
    Ok(None)
}

/// The identity `--id-field` selects in `object`, when the import names a field.
pub fn selected(
    object: &impl IdSource,
    options: &AdapterOptions,
) -> Result<Option<QuestionIdentity>, AdapterError> {
    options
        .id_field
        .as_ref()
        .map(|field| at_field(object, field))
        .transpose()
}

/// The identity of an item whose only name is local to its file (a line number, a
/// position): `label` after the archived raw file's path, so it collides with no other
/// file's item, and run-local, so it is never paired.
pub fn run_local(source: SourceFile<'_>, label: impl Display) -> QuestionIdentity {
    QuestionIdentity {
        question_id: format!("{}:{label}", source.raw_path),
        scope: IdentityScope::RunLocal,
        field: None,
    }
}

/// The identity of a line of a format without its own identity rule: `--id-field` when
/// given, else the automatic lookup, else the line-derived run-local identity.
pub fn resolve(
    object: &impl IdSource,
    id_field: Option<&FieldPath>,
    source: SourceFile<'_>,
    line: u64,
) -> Result<QuestionIdentity, AdapterError> {
    match id_field {
        Some(field) => at_field(object, field),
        None => Ok(lookup(object)?.unwrap_or_else(|| run_local(source, line))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        let Value::Object(map) = value else { panic!() };
        map
    }

    #[test]
    fn the_lookup_checks_the_six_places_in_order() {
        // "Automatic lookup checks original_question_id, doc.original_question_id,
        // question_id, doc.question_id, id, and doc.id, in that order."
        let all = json!({
            "original_question_id": "a",
            "doc": {"original_question_id": "b", "question_id": "d", "id": "f"},
            "question_id": "c",
            "id": "e"
        });
        let mut remaining = object(all);
        let mut seen = Vec::new();
        for _ in 0..6 {
            let found = lookup(&remaining).unwrap().unwrap();
            seen.push(found.question_id.clone());
            let field = found.field.unwrap().to_string();
            match field.split_once('.') {
                Some((_, key)) => {
                    remaining["doc"].as_object_mut().unwrap().shift_remove(key);
                }
                None => {
                    remaining.shift_remove(&field);
                }
            }
        }
        assert_eq!(seen, ["a", "b", "c", "d", "e", "f"]);
        assert_eq!(lookup(&remaining).unwrap(), None);
    }

    #[test]
    fn a_line_s_ids_read_in_one_walk_are_those_read_one_path_at_a_time() {
        let paths: Vec<FieldPath> = LOOKUP_ORDER
            .iter()
            .chain(&["doc.answer", "meta.id", "doc", "doc.choices.1", "zz.a"])
            .chain(&["doc.\u{e9}", "doc.\u{1f600}", "doc.\u{ff46}"])
            .map(|dotted| FieldPath::parse_dotted(dotted).unwrap())
            .collect();
        let lines = [
            r#"{"doc": {"id": "q1", "choices": ["a", "b"], "question": "x", "subject": "s"}}"#,
            r#"{"doc": {"question_id": 7, "original_question_id": null, "id": 1.0}, "id": "e"}"#,
            r#"{"doc": {"zeta": 1, "\u00e9": 2, "id": 12345678901234567890, "question_id": 1e2}}"#,
            r#"{"doc": {"id": {"nested": 1}, "answer": [1, 2], "question_id": ""}, "meta": {"id": 3}}"#,
            r#"{"doc": ["not", "an", "object"], "question_id": 0.5, "meta": 4}"#,
            r#"{"doc": {}, "original_question_id": "a", "zz": {"a": null}}"#,
            r#"{"doc": 1.0, "id": null}"#,
            // Sorted by UTF-16 units, "\u{1f600}" (0xD83D) comes before "\u{ff46}", though
            // its UTF-8 bytes come after.
            r#"{"doc": {"z": 2, "\uff46": 1, "\ud83d\ude00": "s", "\u00e9": null}}"#,
            r#"{"other": 1}"#,
        ];
        let mut members = Members::new();
        for (number, line) in lines.iter().enumerate() {
            crate::jsonl::scan_bytes(
                line.as_bytes(),
                number as u64 + 1,
                crate::jsonl::NonFinitePolicy::Reject,
                &mut members,
            )
            .unwrap();
            // From every place in the list on, so that walks start at each path.
            for from in 0..paths.len() {
                let asked = &paths[from..];
                // One path at a time, up to the first present and not null.
                let mut one_by_one: Vec<Option<Candidate>> = vec![None; asked.len()];
                for (index, path) in asked.iter().enumerate() {
                    one_by_one[index] = members.candidate(path);
                    if ends_lookup(&one_by_one[index]) {
                        break;
                    }
                }
                assert_eq!(members.candidates(asked), one_by_one, "{line} from {from}");
            }
        }
    }

    #[test]
    fn null_ids_are_skipped_and_integers_are_read_as_text() {
        let found = lookup(&object(json!({"question_id": null, "doc": {"id": 17}})))
            .unwrap()
            .unwrap();
        assert_eq!(found.question_id, "17");
        assert_eq!(found.scope, IdentityScope::Stable);
    }

    #[test]
    fn ids_of_other_types_are_refused() {
        let error = lookup(&object(json!({"id": {"x": 1}}))).unwrap_err();
        assert_eq!(error.path.to_string(), "id");
        assert!(lookup(&object(json!({"id": 1.5}))).is_err());
    }

    #[test]
    fn selecting_doc_id_marks_the_identity_run_local() {
        // "Selecting doc_id still marks an identity as run-local because harness
        // enumeration is not a persistent identity."
        let line = object(json!({"doc_id": 3, "doc": {"id": "q4"}}));
        let by_position = at_field(&line, &FieldPath::parse_dotted("doc_id").unwrap()).unwrap();
        assert_eq!(by_position.scope, IdentityScope::RunLocal);
        let by_doc = at_field(&line, &FieldPath::parse_dotted("doc.id").unwrap()).unwrap();
        assert_eq!(
            (by_doc.question_id.as_str(), by_doc.scope),
            ("q4", IdentityScope::Stable)
        );
        assert!(at_field(&line, &FieldPath::parse_dotted("doc.nope").unwrap()).is_err());
    }

    #[test]
    fn line_derived_identities_are_run_local_and_distinct_per_line() {
        let source = SourceFile {
            raw_path: "runs/r1/raw/0001-a.jsonl",
            basename: "a.jsonl",
            folder: "",
        };
        let a = run_local(source, 1);
        let b = run_local(source, 2);
        assert_eq!(a.scope, IdentityScope::RunLocal);
        assert_ne!(a.question_id, b.question_id);
    }

    #[test]
    fn without_a_stable_id_the_identity_is_derived_from_the_line() {
        // "Without a stable ID, a source/line-derived identity prevents accidental record
        // collisions, but the record is excluded from pair analysis."
        let source = SourceFile {
            raw_path: "runs/r1/raw/0001-a.jsonl",
            basename: "a.jsonl",
            folder: "",
        };
        let none = object(json!({"doc": {"text": "no id here"}}));
        let derived = resolve(&none, None, source, 4).unwrap();
        assert_eq!(derived, run_local(source, 4));
        let with_id = object(json!({"doc": {"id": "q9"}, "doc_id": 0}));
        assert_eq!(
            resolve(&with_id, None, source, 4).unwrap().question_id,
            "q9"
        );
        let by_position = FieldPath::parse_dotted("doc_id").unwrap();
        let chosen = resolve(&with_id, Some(&by_position), source, 4).unwrap();
        assert_eq!(
            (chosen.question_id.as_str(), chosen.scope),
            ("0", IdentityScope::RunLocal)
        );
    }
}

#[cfg(test)]
mod readers {
    use super::*;
    use crate::jsonl::{NonFinitePolicy, parse_line, scan_bytes};

    /// The streaming reader's members give every ID, and refuse every one, as the tree
    /// does: a number the tree reads as a double is no integer ID at any depth, though its
    /// canonical text is an integer.
    #[test]
    fn members_and_trees_agree_on_every_id() {
        let lines = [
            r#"{"id": 12}"#,
            r#"{"id": 12.0}"#,
            r#"{"id": -0}"#,
            r#"{"id": 1e2}"#,
            r#"{"doc": {"id": 12.0}}"#,
            r#"{"doc": {"id": 1e2, "x": 3}}"#,
            r#"{"doc": {"id": 7, "x": 3.0}}"#,
            r#"{"doc": {"id": 18446744073709551617}}"#,
            r#"{"doc": {"id": 9007199254740993}}"#,
            // Every integer beyond 2^53 is noted exactly, not only a member's first.
            r#"{"doc": {"a": 9007199254740993, "id": 9007199254740995}}"#,
            r#"{"doc": {"a": 9007199254740993, "id": 9007199254740994}}"#,
            r#"{"doc": {"id": "q1"}}"#,
        ];
        let mut members = Members::new();
        for line in lines {
            scan_bytes(line.as_bytes(), 1, NonFinitePolicy::Reject, &mut members).unwrap();
            let tree = parse_line(line, 1, NonFinitePolicy::Reject).unwrap().object;
            let streamed = lookup(&members).map(|found| found.map(|id| id.question_id));
            let expected = lookup(&tree).map(|found| found.map(|id| id.question_id));
            match (&streamed, &expected) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{line}"),
                (Err(a), Err(b)) => assert_eq!(a.path, b.path, "{line}"),
                _ => panic!("{line}: {streamed:?} against {expected:?}"),
            }
        }
    }
}
