//! `.gitattributes` and `.gitignore` matching, enough of git's rules to
//! decide what the Hub decides: which paths are LFS and which are ignored.
//!
//! Pattern text can arrive over HTTP (a pushed `.gitattributes`), so matching
//! has a step budget instead of unbounded backtracking.

/// The `.gitattributes` the Hub writes into the initial commit of a new
/// dataset repository.
pub const DEFAULT_DATASET_GITATTRIBUTES: &str = "\
*.7z filter=lfs diff=lfs merge=lfs -text
*.arrow filter=lfs diff=lfs merge=lfs -text
*.bin filter=lfs diff=lfs merge=lfs -text
*.bz2 filter=lfs diff=lfs merge=lfs -text
*.ckpt filter=lfs diff=lfs merge=lfs -text
*.ftz filter=lfs diff=lfs merge=lfs -text
*.gz filter=lfs diff=lfs merge=lfs -text
*.h5 filter=lfs diff=lfs merge=lfs -text
*.joblib filter=lfs diff=lfs merge=lfs -text
*.lfs.* filter=lfs diff=lfs merge=lfs -text
*.lz4 filter=lfs diff=lfs merge=lfs -text
*.mds filter=lfs diff=lfs merge=lfs -text
*.mlmodel filter=lfs diff=lfs merge=lfs -text
*.model filter=lfs diff=lfs merge=lfs -text
*.msgpack filter=lfs diff=lfs merge=lfs -text
*.npy filter=lfs diff=lfs merge=lfs -text
*.npz filter=lfs diff=lfs merge=lfs -text
*.onnx filter=lfs diff=lfs merge=lfs -text
*.ot filter=lfs diff=lfs merge=lfs -text
*.parquet filter=lfs diff=lfs merge=lfs -text
*.pb filter=lfs diff=lfs merge=lfs -text
*.pickle filter=lfs diff=lfs merge=lfs -text
*.pkl filter=lfs diff=lfs merge=lfs -text
*.pt filter=lfs diff=lfs merge=lfs -text
*.pth filter=lfs diff=lfs merge=lfs -text
*.rar filter=lfs diff=lfs merge=lfs -text
*.safetensors filter=lfs diff=lfs merge=lfs -text
saved_model/**/* filter=lfs diff=lfs merge=lfs -text
*.tar.* filter=lfs diff=lfs merge=lfs -text
*.tar filter=lfs diff=lfs merge=lfs -text
*.tflite filter=lfs diff=lfs merge=lfs -text
*.tgz filter=lfs diff=lfs merge=lfs -text
*.wasm filter=lfs diff=lfs merge=lfs -text
*.xz filter=lfs diff=lfs merge=lfs -text
*.zip filter=lfs diff=lfs merge=lfs -text
*.zst filter=lfs diff=lfs merge=lfs -text
*tfevents* filter=lfs diff=lfs merge=lfs -text
# Audio files - uncompressed
*.pcm filter=lfs diff=lfs merge=lfs -text
*.sam filter=lfs diff=lfs merge=lfs -text
*.raw filter=lfs diff=lfs merge=lfs -text
# Audio files - compressed
*.aac filter=lfs diff=lfs merge=lfs -text
*.flac filter=lfs diff=lfs merge=lfs -text
*.mp3 filter=lfs diff=lfs merge=lfs -text
*.ogg filter=lfs diff=lfs merge=lfs -text
*.wav filter=lfs diff=lfs merge=lfs -text
# Image files - uncompressed
*.bmp filter=lfs diff=lfs merge=lfs -text
*.gif filter=lfs diff=lfs merge=lfs -text
*.png filter=lfs diff=lfs merge=lfs -text
*.tiff filter=lfs diff=lfs merge=lfs -text
# Image files - compressed
*.jpg filter=lfs diff=lfs merge=lfs -text
*.jpeg filter=lfs diff=lfs merge=lfs -text
*.webp filter=lfs diff=lfs merge=lfs -text
# Video files - compressed
*.mp4 filter=lfs diff=lfs merge=lfs -text
*.webm filter=lfs diff=lfs merge=lfs -text
";

/// The attributes line the Hub appends to track one path with LFS.
pub fn lfs_tracking_line(path: &str) -> String {
    let mut pattern = String::new();
    for c in path.chars() {
        match c {
            ' ' => pattern.push_str("[[:space:]]"),
            '\\' | '*' | '?' | '[' | '!' | '#' => {
                pattern.push('\\');
                pattern.push(c);
            }
            _ => pattern.push(c),
        }
    }
    format!("{pattern} filter=lfs diff=lfs merge=lfs -text\n")
}

/// Whether `.gitattributes` content sets `filter=lfs` on `path` (the last
/// matching line that mentions `filter` wins, as in git).
pub fn is_lfs_tracked(gitattributes: &str, path: &str) -> bool {
    let mut tracked = false;
    for line in gitattributes.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let Some(pattern) = words.next() else {
            continue;
        };
        let filter = words.fold(None, |state, attribute| {
            if let Some(value) = attribute.strip_prefix("filter=") {
                Some(value == "lfs")
            } else if matches!(attribute, "-filter" | "!filter") {
                Some(false)
            } else {
                state
            }
        });
        if let Some(filter) = filter
            && attribute_pattern_matches(pattern, path)
        {
            tracked = filter;
        }
    }
    tracked
}

fn attribute_pattern_matches(pattern: &str, path: &str) -> bool {
    if let Some(anchored) = pattern.strip_prefix('/') {
        return wildmatch(anchored, path);
    }
    if pattern.contains('/') {
        wildmatch(pattern, path)
    } else {
        wildmatch(pattern, path.rsplit('/').next().unwrap_or(path))
    }
}

/// Whether `.gitignore` content ignores `path` (a file), following git: a
/// path is ignored if it or one of its parent directories matches, later
/// lines win, `!` re-includes, a trailing `/` matches directories only.
pub fn is_ignored(gitignore: &str, path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').collect();
    // Check each parent directory first: once a directory is excluded git
    // never looks inside it, so nothing below can be re-included.
    for depth in 1..=segments.len() {
        let candidate = segments[..depth].join("/");
        let is_dir = depth < segments.len();
        if ignore_decision(gitignore, &candidate, is_dir) {
            return true;
        }
    }
    false
}

fn ignore_decision(gitignore: &str, path: &str, is_dir: bool) -> bool {
    let mut ignored = false;
    for line in gitignore.lines() {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (negated, pattern) = match line.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, line),
        };
        let (dir_only, pattern) = match pattern.strip_suffix('/') {
            Some(rest) => (true, rest),
            None => (false, pattern),
        };
        if pattern.is_empty() || (dir_only && !is_dir) {
            continue;
        }
        if attribute_pattern_matches(pattern, path) {
            ignored = !negated;
        }
    }
    ignored
}

/// Step budget for one match; hostile patterns fail closed (no match).
const MATCH_BUDGET: usize = 200_000;

/// Git wildmatch with path semantics: `*` and `?` stop at `/`, `**` as a
/// whole segment crosses directories, `[...]` classes with ranges, `!`/`^`
/// negation and `[:space:]`-style names, `\` escapes.
pub fn wildmatch(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let mut budget = MATCH_BUDGET;
    matches_at(&pattern, 0, &text, 0, &mut budget)
}

fn matches_at(p: &[char], pi: usize, t: &[char], ti: usize, budget: &mut usize) -> bool {
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    let Some(&c) = p.get(pi) else {
        return ti == t.len();
    };
    match c {
        '*' if p.get(pi + 1) == Some(&'*') => {
            let at_segment_start = pi == 0 || p[pi - 1] == '/';
            let rest = pi + 2;
            if at_segment_start && p.get(rest) == Some(&'/') {
                // `**/`: zero or more whole directories.
                if matches_at(p, rest + 1, t, ti, budget) {
                    return true;
                }
                (ti..t.len()).any(|i| t[i] == '/' && matches_at(p, rest + 1, t, i + 1, budget))
            } else {
                (ti..=t.len()).any(|i| matches_at(p, rest, t, i, budget))
            }
        }
        '*' => {
            for i in ti..=t.len() {
                if matches_at(p, pi + 1, t, i, budget) {
                    return true;
                }
                if i < t.len() && t[i] == '/' {
                    break;
                }
            }
            false
        }
        '?' => ti < t.len() && t[ti] != '/' && matches_at(p, pi + 1, t, ti + 1, budget),
        '[' => match class_match(p, pi, t.get(ti).copied()) {
            Some((true, next)) => matches_at(p, next, t, ti + 1, budget),
            Some((false, _)) => false,
            // An unterminated class is a literal `[`.
            None => t.get(ti) == Some(&'[') && matches_at(p, pi + 1, t, ti + 1, budget),
        },
        '\\' => match p.get(pi + 1) {
            Some(&literal) => {
                t.get(ti) == Some(&literal) && matches_at(p, pi + 2, t, ti + 1, budget)
            }
            None => false,
        },
        literal => t.get(ti) == Some(&literal) && matches_at(p, pi + 1, t, ti + 1, budget),
    }
}

/// Matches a bracket class starting at `p[start] == '['` against `c`.
/// Returns whether it matched and the index after the class, or `None`
/// when the class is not terminated.
fn class_match(p: &[char], start: usize, c: Option<char>) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negated = matches!(p.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let &item = p.get(i)?;
        if item == ']' && !first {
            break;
        }
        first = false;
        if item == '[' && p.get(i + 1) == Some(&':') {
            let close =
                (i + 2..p.len().saturating_sub(1)).find(|&j| p[j] == ':' && p[j + 1] == ']')?;
            let name: String = p[i + 2..close].iter().collect();
            if let Some(c) = c {
                matched |= match name.as_str() {
                    "space" => c.is_whitespace(),
                    "alpha" => c.is_alphabetic(),
                    "digit" => c.is_ascii_digit(),
                    "alnum" => c.is_alphanumeric(),
                    "upper" => c.is_uppercase(),
                    "lower" => c.is_lowercase(),
                    "xdigit" => c.is_ascii_hexdigit(),
                    "punct" => c.is_ascii_punctuation(),
                    _ => false,
                };
            }
            i = close + 2;
            continue;
        }
        let low = if item == '\\' {
            i += 1;
            *p.get(i)?
        } else {
            item
        };
        if p.get(i + 1) == Some(&'-') && p.get(i + 2).is_some_and(|&high| high != ']') {
            let high = p[i + 2];
            if let Some(c) = c {
                matched |= low <= c && c <= high;
            }
            i += 3;
        } else {
            if let Some(c) = c {
                matched |= c == low;
            }
            i += 1;
        }
    }
    // `/` never matches a class in path matching.
    let matched = c.is_some_and(|c| c != '/' && matched != negated);
    Some((matched, i + 1))
}
