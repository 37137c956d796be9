//! The two content IDs the Hub uses: the git blob SHA-1 (`sha1("blob <len>\0" + bytes)`,
//! what `git hash-object` prints) for regular files, and the SHA-256 for LFS files. Local
//! files are hashed both ways in one pass, reusing `durable`'s SHA-256 reader.

use sha1::{Digest, Sha1};
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use crate::durable::{HashingReader, PathIoError, hex, io_at};

/// A file's size and both of its IDs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDigests {
    pub size: u64,
    /// Lowercase hex SHA-256 of the content.
    pub sha256: String,
    /// Lowercase hex git blob SHA-1.
    pub git_sha1: String,
}

/// A git blob SHA-1 computed incrementally; the length must be known up front because
/// git hashes it before the content.
pub struct GitBlobHasher {
    hasher: Sha1,
    declared: u64,
    seen: u64,
}

impl GitBlobHasher {
    /// Starts hashing a blob of `len` bytes.
    pub fn new(len: u64) -> Self {
        let mut hasher = Sha1::new();
        hasher.update(format!("blob {len}\0").as_bytes());
        Self {
            hasher,
            declared: len,
            seen: 0,
        }
    }

    /// Adds content bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.seen += bytes.len() as u64;
    }

    /// The blob ID, or `None` when the content was not exactly the declared length.
    pub fn finish(self) -> Option<String> {
        (self.seen == self.declared).then(|| hex(&self.hasher.finalize()))
    }
}

/// The git blob SHA-1 of bytes in memory.
pub fn git_blob_sha1(bytes: &[u8]) -> String {
    let mut hasher = GitBlobHasher::new(bytes.len() as u64);
    hasher.update(bytes);
    hasher.finish().unwrap_or_default()
}

/// Both IDs of bytes in memory.
pub fn digests_of(bytes: &[u8]) -> FileDigests {
    FileDigests {
        size: bytes.len() as u64,
        sha256: crate::durable::digest_of(bytes).sha256,
        git_sha1: git_blob_sha1(bytes),
    }
}

/// Hashes a file both ways in one streaming pass. A file that changes length while it is
/// read is an error, since its git ID would be wrong.
pub fn digest_file(path: &Path) -> Result<FileDigests, PathIoError> {
    let file = File::open(path).map_err(io_at("opening", path))?;
    let len = file.metadata().map_err(io_at("reading", path))?.len();
    let mut reader = HashingReader::new(file);
    let mut git = GitBlobHasher::new(len);
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let read = reader.read(&mut buffer).map_err(io_at("reading", path))?;
        if read == 0 {
            break;
        }
        git.update(&buffer[..read]);
    }
    let sha256 = reader.finish();
    let git_sha1 = git.finish().ok_or_else(|| {
        io_at("reading", path)(io::Error::other("the file changed size while it was read"))
    })?;
    Ok(FileDigests {
        size: sha256.bytes,
        sha256: sha256.sha256,
        git_sha1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_blob_ids_match_git_hash_object() {
        // `printf '' | git hash-object --stdin` and `printf 'hello\n' | git hash-object --stdin`.
        assert_eq!(
            git_blob_sha1(b""),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
        assert_eq!(
            git_blob_sha1(b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
    }

    #[test]
    fn a_file_is_hashed_both_ways_in_one_pass() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"hello\n").unwrap();
        let digests = digest_file(&path).unwrap();
        assert_eq!(digests, digests_of(b"hello\n"));
        assert_eq!(
            digests.sha256,
            "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        );
    }

    #[test]
    fn a_blob_of_the_wrong_length_has_no_id() {
        let mut hasher = GitBlobHasher::new(3);
        hasher.update(b"ab");
        assert_eq!(hasher.finish(), None);
    }
}
