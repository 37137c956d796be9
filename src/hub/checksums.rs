//! `checksums.sha256`, the file a published snapshot carries so that a plain download can
//! be checked with `sha256sum -c checksums.sha256`: GNU format, one `<sha256>  <path>`
//! line per published file except itself, sorted by path bytes, LF line ends. Published
//! paths never contain a backslash or a newline, so no line needs GNU's escaping. Pure.

use std::collections::BTreeMap;

/// The file's name, at the repository root.
pub use crate::archive::layout::CHECKSUMS as CHECKSUMS_FILE;

/// Renders the file from `(path, sha256)` pairs (sorted here by path bytes).
pub fn render<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<u8> {
    let sorted: BTreeMap<&str, &str> = files.into_iter().collect();
    let mut out = String::new();
    for (path, sha256) in sorted {
        out.push_str(sha256);
        out.push_str("  ");
        out.push_str(path);
        out.push('\n');
    }
    out.into_bytes()
}

/// Parses the file strictly: UTF-8, every line `<64 lowercase hex>  <path>` (or ` *<path>`,
/// GNU's binary-mode marker) ending in LF, no escaped names, no path listed twice.
/// Returns path → SHA-256, or the one-based line and what is wrong with it.
pub fn parse(bytes: &[u8]) -> Result<BTreeMap<String, (String, usize)>, (usize, String)> {
    let text = std::str::from_utf8(bytes).map_err(|_| (0, "it is not UTF-8".to_owned()))?;
    if !text.is_empty() && !text.ends_with('\n') {
        return Err((text.lines().count(), "the last line has no LF".into()));
    }
    let mut entries = BTreeMap::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.starts_with('\\') {
            return Err((number, "escaped file names are not used by babel".into()));
        }
        let (hash, rest) = line
            .split_at_checked(64)
            .ok_or((number, "too short".into()))?;
        if !super::is_lower_hex(hash, 64) {
            return Err((
                number,
                "it does not start with 64 lowercase hex digits".into(),
            ));
        }
        let path = rest
            .strip_prefix("  ")
            .or_else(|| rest.strip_prefix(" *"))
            .filter(|path| !path.is_empty())
            .ok_or((
                number,
                "expected two spaces and a path after the hash".into(),
            ))?;
        if entries
            .insert(path.to_owned(), (hash.to_owned(), number))
            .is_some()
        {
            return Err((number, format!("{path} is listed twice")));
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
    const B: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn rendered_lines_are_what_sha256sum_prints_sorted_by_path() {
        // `sha256sum` prints "<hash>  <name>"; the hashes are of "hello\n" and "".
        let text = render([("runs/b.txt", A), ("Z.json", B), ("a.txt", A)]);
        assert_eq!(
            String::from_utf8(text).unwrap(),
            format!("{B}  Z.json\n{A}  a.txt\n{A}  runs/b.txt\n")
        );
    }

    #[test]
    fn parsing_round_trips_and_refuses_malformed_lines() {
        let text = render([("a.txt", A), ("d/é.txt", B)]);
        let parsed = parse(&text).unwrap();
        assert_eq!(
            parsed
                .get("d/é.txt")
                .map(|(hash, line)| (hash.as_str(), *line)),
            Some((B, 2))
        );
        assert_eq!(
            parse(format!("{A} *bin.dat\n").as_bytes()).unwrap().len(),
            1
        );
        for bad in [
            format!("{A}  a\n{B}  a\n"),
            format!("{A}  a"),
            format!("{A} a\n"),
            format!("{}  a\n", A.to_uppercase()),
            format!("\\{A}  a\\nb\n"),
            "short  a\n".to_owned(),
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }
}
