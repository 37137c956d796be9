//! Which repository paths babel publishes and restores. File names in a tree listing come
//! from the server and are hostile until checked. On top of the package-path rules
//! ([`check_package_path`]: no empty, `.` or `..` segment, not absolute, no backslash,
//! NUL, control character, URI scheme or drive prefix), a path must not have a `.git` or
//! `.cache` segment (in any letter case) and must not lie in `.babel/` or a
//! `.babel-pull-*` folder (the operational folder and babel's pull staging are never data). Across a set of paths,
//! two paths that differ only in letter case, and a file that is also a folder of another
//! path, are refused: they cannot both exist on every filesystem.
//!
//! A push applies the same rules to what it plans, so babel never publishes what it would
//! refuse to pull. Pure: nothing here touches the disk.

use std::collections::BTreeMap;

use crate::archive::layout::{OPERATIONAL, RuleViolation, check_package_path};

/// The name prefix of a pull's staging folder inside the destination (`.babel-pull-<sha>`).
pub const STAGING_PREFIX: &str = ".babel-pull-";

/// Checks one repository path.
pub fn check_repo_path(path: &str) -> Result<(), RuleViolation> {
    check_package_path(path)?;
    let fail = |why: &str| Err(RuleViolation(format!("unsafe path {path:?}: {why}")));
    for segment in path.split('/') {
        if segment.eq_ignore_ascii_case(".git") || segment.eq_ignore_ascii_case(".cache") {
            return fail("it has a .git or .cache segment");
        }
    }
    let first = path.split('/').next().unwrap_or(path).to_ascii_lowercase();
    if first == OPERATIONAL || first.starts_with(STAGING_PREFIX) {
        return fail(
            "it is inside babel's operational or pull staging folder, which is never data",
        );
    }
    Ok(())
}

/// Every clash in a set of paths: two paths equal up to letter case, and a path that is a
/// file in one place and a folder (a prefix) in another. Empty when there is none.
pub fn check_path_set<'a>(paths: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    // Every file and every folder prefix, folded to lower case, with how it was spelled
    // and whether it is a file.
    let mut seen: BTreeMap<String, (String, bool)> = BTreeMap::new();
    let mut problems = Vec::new();
    for path in paths {
        let segments: Vec<&str> = path.split('/').collect();
        for end in 1..=segments.len() {
            let spelled = segments[..end].join("/");
            let is_file = end == segments.len();
            let folded = spelled.to_lowercase();
            match seen.get(&folded) {
                None => {
                    seen.insert(folded, (spelled, is_file));
                }
                Some((other, other_is_file)) => {
                    if *other != spelled {
                        problems.push(format!(
                            "{spelled:?} and {other:?} differ only in letter case"
                        ));
                        break;
                    }
                    if is_file || *other_is_file {
                        let what = if is_file && *other_is_file {
                            "is listed twice"
                        } else {
                            "is both a file and a folder"
                        };
                        problems.push(format!("{spelled:?} {what}"));
                        break;
                    }
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_api_3_1_paths_are_refused() {
        // HUB-API §3.1: reject `..`, absolute, drive and UNC paths, empty and `.` segments,
        // NUL/control characters, leading and trailing `/`, and `.git`/`.cache` segments.
        for bad in [
            "../escape.txt",
            "a/../b",
            "/abs.txt",
            "a\\b.txt",
            "\\\\host\\share",
            "C:/x",
            "D:foo",
            "a//b.txt",
            "a/./b",
            "a/",
            "a\0b",
            "a\tb",
            ".git/config",
            "x/.GIT/hooks",
            ".cache/huggingface/x",
            ".babel/journal.json",
            ".babel-pull-abc/x",
            ".Babel/lock",
        ] {
            assert!(check_repo_path(bad).is_err(), "{bad:?}");
        }
        for good in [
            ".gitattributes",
            "babel-archive.json",
            "runs/r1/raw/0001-a.jsonl",
            "données/été.txt",
            "runs/r1/attachments/results:x.json",
            "a/.gitignore",
            ".babelrc",
        ] {
            assert!(check_repo_path(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn case_folding_collisions_and_file_folder_clashes_are_found() {
        assert!(check_path_set(["a/b.txt", "a/c.txt", "b"]).is_empty());
        let case = check_path_set(["runs/A.csv", "runs/a.csv"]);
        assert_eq!(case.len(), 1, "{case:?}");
        assert!(case[0].contains("letter case"));
        let folders = check_path_set(["Runs/x", "runs/y"]);
        assert_eq!(folders.len(), 1, "{folders:?}");
        let clash = check_path_set(["a", "a/b"]);
        assert_eq!(clash, vec!["\"a\" is both a file and a folder".to_owned()]);
        let clash = check_path_set(["a/b", "a"]);
        assert_eq!(clash, vec!["\"a\" is both a file and a folder".to_owned()]);
        assert_eq!(check_path_set(["x", "x"]).len(), 1);
    }
}
