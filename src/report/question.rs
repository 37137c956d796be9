//! The question text a report shows for an item, by one rule over a record's `input`:
//!
//! 1. `input.question`, when it is a string (the paired format, canonical records);
//! 2. else the first string among `input.doc.question`, `query`, `problem`, `prompt`,
//!    `ctx`, `context`, `sentence`, `text`, `premise` and `goal` (the dataset row of an
//!    lm-evaluation-harness sample, whatever the task calls its question);
//! 3. else `input.prompt`, when it is a string;
//! 4. else the last message whose `role` is `user` in `input.messages` (chat inputs): its
//!    `content` string, or the `text` of its content parts joined by a space;
//! 5. else nothing: the item is listed by its question_id alone, never as raw JSON.

use crate::canonical_json::Json;
use crate::record::JsonChecker;

/// The `input.doc` fields that hold a task's question, in the order they are tried.
pub const DOC_QUESTION_FIELDS: [&str; 10] = [
    "question", "query", "problem", "prompt", "ctx", "context", "sentence", "text", "premise",
    "goal",
];

/// The question text of a record's `input` (its canonical text), by the rule above.
pub fn question_text(input: &Json<'_>) -> Option<String> {
    let members = input.members()?;
    let string = |key: &str| {
        let (_, value) = members.iter().find(|(found, _)| found == key)?;
        value.as_string().map(|text| text.into_owned())
    };
    if let Some(question) = string("question") {
        return Some(question);
    }
    if let Some((_, doc)) = members.iter().find(|(key, _)| key == "doc")
        && let Some(doc) = doc.members()
    {
        let found = DOC_QUESTION_FIELDS.iter().find_map(|field| {
            let (_, value) = doc.iter().find(|(key, _)| key == field)?;
            value.as_string()
        });
        if let Some(question) = found {
            return Some(question.into_owned());
        }
    }
    if let Some(prompt) = string("prompt") {
        return Some(prompt);
    }
    let (_, messages) = members.iter().find(|(key, _)| key == "messages")?;
    let last_user = messages.elements()?.into_iter().rev().find(|message| {
        message
            .get("role")
            .is_some_and(|role| role.as_string().as_deref() == Some("user"))
    })?;
    let content = last_user.get("content")?;
    if let Some(text) = content.as_string() {
        return Some(text.into_owned());
    }
    let texts: Vec<String> = content
        .elements()?
        .iter()
        .filter_map(|part| Some(part.get("text")?.as_string()?.into_owned()))
        .collect();
    (!texts.is_empty()).then(|| texts.join(" "))
}

/// Reads the question text of stored `input` columns, checking each first (a column
/// that is not canonical JSON has no question).
#[derive(Debug, Default)]
pub struct QuestionReader(JsonChecker);

impl QuestionReader {
    pub fn question(&mut self, input: &str) -> Option<String> {
        question_text(&self.0.check(input).ok()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn question_text(input: &Value) -> Option<String> {
        super::question_text(&Json::of(input).unwrap())
    }

    #[test]
    fn each_step_of_the_rule_in_order() {
        assert_eq!(
            question_text(&json!({"question": "Q?", "doc": {"question": "D"}})).as_deref(),
            Some("Q?")
        );
        assert_eq!(
            question_text(&json!({"doc": {"ctx": "C", "query": "Qu"}, "prompt": "P"})).as_deref(),
            Some("Qu"),
            "query comes before ctx"
        );
        assert_eq!(
            question_text(&json!({"doc": {"answer": 1}, "prompt": "P"})).as_deref(),
            Some("P")
        );
        let chat = json!({"messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": [{"type": "text", "text": "last"}, {"type": "image"}, {"type": "text", "text": "one"}]},
        ]});
        assert_eq!(question_text(&chat).as_deref(), Some("last one"));
        assert_eq!(question_text(&json!({"doc": {"answer": 1}})), None);
        assert_eq!(question_text(&Value::Null), None);
        assert_eq!(
            question_text(&json!({"question": {"not": "text"}})),
            None,
            "never raw JSON"
        );
    }

    #[test]
    fn a_stored_input_is_read_only_when_it_is_canonical() {
        let mut reader = QuestionReader::default();
        assert_eq!(
            reader.question(r#"{"question":"Q?"}"#).as_deref(),
            Some("Q?")
        );
        assert_eq!(
            reader.question(r#"{ "question": "Q?" }"#),
            None,
            "not canonical"
        );
        assert_eq!(reader.question(r#"{"question":"#), None, "not JSON");
    }
}
