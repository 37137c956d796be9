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

use serde_json::Value;

/// The `input.doc` fields that hold a task's question, in the order they are tried.
pub const DOC_QUESTION_FIELDS: [&str; 10] = [
    "question", "query", "problem", "prompt", "ctx", "context", "sentence", "text", "premise",
    "goal",
];

/// The question text of a record's `input`, by the rule above.
pub fn question_text(input: &Value) -> Option<String> {
    if let Some(question) = input.get("question").and_then(Value::as_str) {
        return Some(question.to_owned());
    }
    if let Some(doc) = input.get("doc") {
        let found = DOC_QUESTION_FIELDS
            .iter()
            .find_map(|field| doc.get(field).and_then(Value::as_str));
        if let Some(question) = found {
            return Some(question.to_owned());
        }
    }
    if let Some(prompt) = input.get("prompt").and_then(Value::as_str) {
        return Some(prompt.to_owned());
    }
    let messages = input.get("messages")?.as_array()?;
    let last_user = messages
        .iter()
        .rev()
        .find(|message| message.get("role").and_then(Value::as_str) == Some("user"))?;
    match last_user.get("content")? {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join(" "))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
