//! Field paths inside one JSON value, as printed in error messages (`doc.choices[2]`).

use std::fmt;

/// One step from a JSON container to a child: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment {
    /// A key of an object.
    Key(String),
    /// A zero-based index of an array.
    Index(usize),
}

/// The location of a value inside a JSON line, from the top-level object down.
///
/// Displayed the way a user would type it in jq: `doc.choices[2]`, with keys that are not
/// plain identifiers quoted (`metrics["acc,none"]`). The empty path is the whole line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath(Vec<PathSegment>);

impl FieldPath {
    /// The path of the whole line.
    pub fn root() -> Self {
        Self(Vec::new())
    }

    /// Parses a dotted path such as `doc.id` (as given to `--id-field`).
    ///
    /// Segments are separated by `.`; a segment of digits after the first addresses an array
    /// element. Empty segments are refused.
    pub fn parse_dotted(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("the field path is empty".to_owned());
        }
        let mut segments = Vec::new();
        for (position, part) in text.split('.').enumerate() {
            if part.is_empty() {
                return Err(format!("`{text}` has an empty segment"));
            }
            match part.parse::<usize>() {
                Ok(index) if position > 0 && part.bytes().all(|b| b.is_ascii_digit()) => {
                    segments.push(PathSegment::Index(index))
                }
                _ => segments.push(PathSegment::Key(part.to_owned())),
            }
        }
        Ok(Self(segments))
    }

    /// A path with one more key at the end.
    pub fn key(&self, key: &str) -> Self {
        let mut next = self.clone();
        next.0.push(PathSegment::Key(key.to_owned()));
        next
    }

    /// A path with one more array index at the end.
    pub fn index(&self, index: usize) -> Self {
        let mut next = self.clone();
        next.0.push(PathSegment::Index(index));
        next
    }

    /// This path placed under `key` (`doc.id` under `input` is `input.doc.id`).
    pub fn under(&self, key: &str) -> Self {
        let mut segments = Vec::with_capacity(self.0.len() + 1);
        segments.push(PathSegment::Key(key.to_owned()));
        segments.extend(self.0.iter().cloned());
        Self(segments)
    }

    /// The steps of this path, outermost first.
    pub fn segments(&self) -> &[PathSegment] {
        &self.0
    }

    /// True for the path of the whole line.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn push(&mut self, segment: PathSegment) {
        self.0.push(segment);
    }

    pub(crate) fn pop_segment(&mut self) -> Option<PathSegment> {
        self.0.pop()
    }

    /// Looks the path up in a JSON value.
    pub fn lookup<'v>(&self, value: &'v serde_json::Value) -> Option<&'v serde_json::Value> {
        self.descend(value, &self.0)
    }

    /// Looks the path up in a JSON object (a parsed line).
    pub fn lookup_in<'v>(
        &self,
        object: &'v serde_json::Map<String, serde_json::Value>,
    ) -> Option<&'v serde_json::Value> {
        match self.0.split_first()? {
            (PathSegment::Key(key), rest) => self.descend(object.get(key)?, rest),
            (PathSegment::Index(_), _) => None,
        }
    }

    fn descend<'v>(
        &self,
        mut current: &'v serde_json::Value,
        segments: &[PathSegment],
    ) -> Option<&'v serde_json::Value> {
        for segment in segments {
            current = match segment {
                PathSegment::Key(key) => current.as_object()?.get(key)?,
                PathSegment::Index(index) => current.as_array()?.get(*index)?,
            };
        }
        Some(current)
    }
}

fn is_plain_key(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some(c) if c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(the whole line)");
        }
        for (position, segment) in self.0.iter().enumerate() {
            match segment {
                PathSegment::Key(key) if is_plain_key(key) => {
                    if position > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(key)?;
                }
                PathSegment::Key(key) => {
                    let quoted = serde_json::to_string(key).map_err(|_| fmt::Error)?;
                    write!(f, "[{quoted}]")?;
                }
                PathSegment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_like_a_jq_path() {
        let path = FieldPath::root().key("doc").key("choices").index(2);
        assert_eq!(path.to_string(), "doc.choices[2]");
        let odd = FieldPath::root().key("metrics").key("acc,none");
        assert_eq!(odd.to_string(), "metrics[\"acc,none\"]");
        assert_eq!(FieldPath::root().to_string(), "(the whole line)");
    }

    #[test]
    fn parses_dotted_paths_and_refuses_empty_segments() {
        let path = FieldPath::parse_dotted("doc.choices.1").unwrap();
        assert_eq!(path, FieldPath::root().key("doc").key("choices").index(1));
        assert_eq!(
            FieldPath::parse_dotted("1").unwrap(),
            FieldPath::root().key("1")
        );
        assert!(FieldPath::parse_dotted("doc..id").is_err());
        assert!(FieldPath::parse_dotted("").is_err());
    }

    #[test]
    fn looks_up_values() {
        let value = serde_json::json!({"doc": {"id": "q1", "list": [1, 2]}});
        let id = FieldPath::parse_dotted("doc.id").unwrap();
        assert_eq!(id.lookup(&value), Some(&serde_json::json!("q1")));
        let second = FieldPath::parse_dotted("doc.list.1").unwrap();
        assert_eq!(second.lookup(&value), Some(&serde_json::json!(2)));
        assert_eq!(
            FieldPath::parse_dotted("doc.x").unwrap().lookup(&value),
            None
        );
    }
}
