//! Git object ids as the Hub reports them: blob, tree and commit SHA-1s and
//! Git LFS pointers. Computed for real, so a client that checks an `oid`
//! against the bytes it downloaded is checked against git's own arithmetic.

use std::collections::BTreeMap;

use sha1::{Digest, Sha1};
use sha2::Sha256;

/// Lowercase hex of a byte string.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// SHA-256 of `bytes`, lowercase hex (the LFS object id).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn object_id(kind: &str, content: &[u8]) -> [u8; 20] {
    let mut hasher = Sha1::new();
    hasher.update(format!("{kind} {}\0", content.len()).as_bytes());
    hasher.update(content);
    hasher.finalize().into()
}

/// The git blob id of `content`: `sha1("blob <len>\0" + content)`.
pub fn blob_id(content: &[u8]) -> String {
    hex(&object_id("blob", content))
}

/// The text of a Git LFS pointer file for an object.
pub fn lfs_pointer(sha256: &str, size: u64) -> String {
    format!("version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n")
}

/// Whether `text` is a lowercase hex string of exactly `len` digits.
pub fn is_hex(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Git tree ids of every directory of a snapshot, keyed by directory path
/// (`""` is the root). `files` maps a path to the blob id git stores for it.
pub fn tree_ids(files: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    #[derive(Default)]
    struct Dir {
        files: BTreeMap<String, String>,
        dirs: BTreeMap<String, Dir>,
    }
    fn insert(dir: &mut Dir, path: &str, blob: &str) {
        match path.split_once('/') {
            None => {
                dir.files.insert(path.to_owned(), blob.to_owned());
            }
            Some((head, rest)) => insert(dir.dirs.entry(head.to_owned()).or_default(), rest, blob),
        }
    }
    fn hash(dir: &Dir, path: &str, out: &mut BTreeMap<String, String>) -> [u8; 20] {
        // Git orders tree entries by name, comparing a directory as `name/`.
        let mut entries: Vec<(Vec<u8>, &'static str, String, [u8; 20])> = Vec::new();
        for (name, blob) in &dir.files {
            let mut id = [0u8; 20];
            for (index, slot) in id.iter_mut().enumerate() {
                *slot = u8::from_str_radix(blob.get(2 * index..2 * index + 2).unwrap_or("00"), 16)
                    .unwrap_or(0);
            }
            entries.push((name.as_bytes().to_vec(), "100644", name.clone(), id));
        }
        for (name, sub) in &dir.dirs {
            let sub_path = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}/{name}")
            };
            let id = hash(sub, &sub_path, out);
            let mut key = name.as_bytes().to_vec();
            key.push(b'/');
            entries.push((key, "40000", name.clone(), id));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut content = Vec::new();
        for (_, mode, name, id) in &entries {
            content.extend_from_slice(format!("{mode} {name}\0").as_bytes());
            content.extend_from_slice(id);
        }
        let id = object_id("tree", &content);
        out.insert(path.to_owned(), hex(&id));
        id
    }
    let mut root = Dir::default();
    for (path, blob) in files {
        insert(&mut root, path, blob);
    }
    let mut out = BTreeMap::new();
    hash(&root, "", &mut out);
    out
}

/// What a commit object is made of.
pub struct CommitObject<'a> {
    pub tree: &'a str,
    pub parent: Option<&'a str>,
    pub author: &'a str,
    pub time: u64,
    pub summary: &'a str,
    pub description: &'a str,
}

/// The git commit id of a commit object, formatted as `git commit` would.
pub fn commit_id(commit: &CommitObject<'_>) -> String {
    let mut text = format!("tree {}\n", commit.tree);
    if let Some(parent) = commit.parent {
        text.push_str(&format!("parent {parent}\n"));
    }
    let who = format!(
        "{0} <{0}@users.noreply.huggingface.co> {1} +0000",
        commit.author, commit.time
    );
    text.push_str(&format!(
        "author {who}\ncommitter {who}\n\n{}\n",
        commit.summary
    ));
    if !commit.description.is_empty() {
        text.push_str(&format!("\n{}\n", commit.description));
    }
    hex(&object_id("commit", text.as_bytes()))
}

/// RFC 3339 UTC time with milliseconds, as the Hub writes `lastModified`.
pub fn iso_time(unix_seconds: u64) -> String {
    let days = (unix_seconds / 86_400) as i64;
    let seconds = unix_seconds % 86_400;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.000Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}
