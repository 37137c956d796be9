//! A run manifest as the replay keeps it from entry to entry: its fields without the
//! imports and attachments, and the canonical text of those two arrays' elements, so that
//! an entry appending an import costs the import's size and one SHA-256 of the manifest,
//! not a parse and a canonical rewrite of the whole run. Rebuilt whole at each entry, a run
//! of 570 imports (a 355 KB manifest) took 1.2 s to replay, twice for every write.
//!
//! The canonical text of an array is `[`, its elements' canonical text joined by `,`, and
//! `]`, and an object's members are ordered by key whatever their values: so the manifest's
//! text is the text of its shell (both arrays empty) with the elements' text inserted
//! between each array's brackets. Owns only that text; the replay owns the rules.

use std::collections::BTreeSet;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::archive::manifest::{AttachmentEntry, ImportEntry, RunManifest, RunStatus};
use crate::canonical_json::{to_canonical_bytes, write_value};
use crate::durable::hex;

/// A run manifest in parts.
#[derive(Debug)]
pub(super) struct RunParts {
    /// The manifest with no import and no attachment.
    shell: RunManifest,
    /// The shell's canonical text, and where in it the attachments' and the imports'
    /// elements go (between each array's brackets).
    text: Vec<u8>,
    attachments_at: usize,
    imports_at: usize,
    /// The elements' canonical text, joined by `,`.
    attachments: Vec<u8>,
    imports: Vec<u8>,
    /// The number of the run's last import (0: none).
    pub last_import: u64,
    /// Every path the run registers (raw files, companions, records, attachments).
    pub taken: BTreeSet<String>,
}

impl RunParts {
    /// The parts of `run`.
    pub fn of(mut run: RunManifest) -> Result<Self, String> {
        let imports = std::mem::take(&mut run.imports);
        let attachments = std::mem::take(&mut run.attachments);
        let (text, attachments_at, imports_at) = shell_text(&run)?;
        let mut parts = Self {
            shell: run,
            text,
            attachments_at,
            imports_at,
            attachments: Vec::new(),
            imports: Vec::new(),
            last_import: 0,
            taken: BTreeSet::new(),
        };
        parts.append(&imports, &attachments)?;
        Ok(parts)
    }

    pub fn run_id(&self) -> &str {
        &self.shell.run_id
    }

    pub fn status(&self) -> RunStatus {
        self.shell.status
    }

    /// Seals the run at `sealed_at` (unchanged on failure).
    pub fn seal(&mut self, sealed_at: &str) -> Result<(), String> {
        let mut shell = self.shell.clone();
        shell.status = RunStatus::Sealed;
        shell.sealed_at = Some(sealed_at.to_owned());
        let (text, attachments_at, imports_at) = shell_text(&shell)?;
        (self.shell, self.text) = (shell, text);
        (self.attachments_at, self.imports_at) = (attachments_at, imports_at);
        Ok(())
    }

    /// Appends `imports` and `attachments` as they are (the replay checked them); the run
    /// is unchanged on failure.
    pub fn append(
        &mut self,
        imports: &[ImportEntry],
        attachments: &[AttachmentEntry],
    ) -> Result<(), String> {
        let imports_text = elements_text(imports)?;
        let attachments_text = elements_text(attachments)?;
        join(&mut self.imports, &imports_text);
        join(&mut self.attachments, &attachments_text);
        for import in imports {
            self.last_import = import.seq;
            self.taken
                .extend(import.raw_files().map(|f| f.path.clone()));
            self.taken.insert(import.records.path.clone());
        }
        self.taken
            .extend(attachments.iter().map(|attachment| attachment.path.clone()));
        Ok(())
    }

    /// The SHA-256 of the manifest's canonical bytes.
    pub fn sha256(&self) -> String {
        let mut hasher = Sha256::new();
        let mut pieces = [
            (self.attachments_at, &self.attachments),
            (self.imports_at, &self.imports),
        ];
        pieces.sort_by_key(|(at, _)| *at);
        let mut from = 0;
        for (at, elements) in pieces {
            hasher.update(&self.text[from..at]);
            hasher.update(elements);
            from = at;
        }
        hasher.update(&self.text[from..]);
        hex(&hasher.finalize())
    }
}

/// The canonical text of `shell` (a manifest with no import and no attachment) and where
/// the attachments' and the imports' elements go: the first byte where the text differs
/// from that of the shell with one element in the array.
fn shell_text(shell: &RunManifest) -> Result<(Vec<u8>, usize, usize), String> {
    let stored = |value: &Value| {
        to_canonical_bytes(value).map_err(|e| format!("its manifest cannot be stored: {e}"))
    };
    let mut value = serde_json::to_value(shell).map_err(|e| e.to_string())?;
    let text = stored(&value)?;
    let mut position = |key: &str| -> Result<usize, String> {
        let empty = std::mem::replace(&mut value[key], Value::from(vec![0]));
        let with_one = stored(&value)?;
        value[key] = empty;
        Ok(text
            .iter()
            .zip(&with_one)
            .position(|(a, b)| a != b)
            .expect("a manifest with one more element differs"))
    };
    let attachments_at = position("attachments")?;
    let imports_at = position("imports")?;
    Ok((text, attachments_at, imports_at))
}

/// The canonical text of `elements`, joined by `,`.
fn elements_text<T: serde::Serialize>(elements: &[T]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for element in elements {
        let value = serde_json::to_value(element).map_err(|e| e.to_string())?;
        if !out.is_empty() {
            out.push(b',');
        }
        write_value(&value, &mut out).map_err(|e| format!("its manifest cannot be stored: {e}"))?;
    }
    Ok(out)
}

/// Appends the joined elements `more` to the joined elements `out`.
fn join(out: &mut Vec<u8>, more: &[u8]) {
    if !out.is_empty() && !more.is_empty() {
        out.push(b',');
    }
    out.extend_from_slice(more);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::digest_of;

    /// A run of the fixtures' shape: an import, then another, then an attachment, then a
    /// seal, each hashed in parts against its whole canonical bytes.
    #[test]
    fn the_parts_hash_as_the_whole_manifest() {
        let manifest: RunManifest = serde_json::from_value(serde_json::json!({
            "format": "babel-run",
            "schema_version": 1,
            "run_id": "r1",
            "status": "open",
            "created_at": "2026-12-05T00:00:00Z",
            "sealed_at": null,
            "metadata": {"model": "m", "imports": [], "attachments": "[]", "é": "\"imports\":[]"},
            "imports": [],
            "attachments": []
        }))
        .unwrap();
        let import = |seq: u64| -> ImportEntry {
            let mut import = serde_json::json!({
                "seq": seq,
                "format": "helm",
                "source_basename": "run",
                "raw": {"path": format!("raw/{seq:04}-run/a.json"), "sha256": "00", "bytes": 3},
                "records": {"path": format!("records/{seq:04}.parquet"), "sha256": "11", "bytes": 4, "count": 1},
                "breakdown": [{"benchmark": "b", "language": null, "variant_id": "original", "records": 1}],
                "variant_override": null,
                "id_field": null,
                "options": {"benchmark": "ünï", "non_finite": "reject"},
                "normalizer_version": "helm/1",
                "babel_version": "0.1.0",
                "imported_at": "2026-12-05T00:00:01Z"
            });
            if seq == 2 {
                import["companions"] = serde_json::json!([
                    {"path": "raw/0002-run/b.json", "sha256": "33", "bytes": 6}
                ]);
            }
            serde_json::from_value(import).unwrap()
        };
        let attachment = AttachmentEntry {
            path: "attachments/a.json".into(),
            sha256: "22".into(),
            bytes: 5,
            added_at: "2026-12-05T00:00:02Z".into(),
        };
        let mut whole = manifest.clone();
        let mut parts = RunParts::of(manifest).unwrap();
        let hash_of = |run: &RunManifest| digest_of(&run.to_bytes().unwrap()).sha256;
        assert_eq!(parts.sha256(), hash_of(&whole));
        for seq in [1, 2] {
            parts.append(&[import(seq)], &[]).unwrap();
            whole.imports.push(import(seq));
            assert_eq!(parts.sha256(), hash_of(&whole), "import {seq}");
        }
        parts
            .append(&[], std::slice::from_ref(&attachment))
            .unwrap();
        whole.attachments.push(attachment);
        assert_eq!(parts.sha256(), hash_of(&whole));
        parts.seal("2026-12-05T00:00:03Z").unwrap();
        whole.status = RunStatus::Sealed;
        whole.sealed_at = Some("2026-12-05T00:00:03Z".into());
        assert_eq!(parts.sha256(), hash_of(&whole));
        // Made from the whole, the parts hash alike.
        assert_eq!(
            RunParts::of(whole.clone()).unwrap().sha256(),
            hash_of(&whole)
        );
        assert_eq!(parts.last_import, 2);
        assert!(parts.taken.contains("records/0002.parquet"));
        assert!(parts.taken.contains("raw/0002-run/b.json"));
        assert!(parts.taken.contains("attachments/a.json"));
    }
}
