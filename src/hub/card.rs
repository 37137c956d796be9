//! The dataset card (`README.md` at the repository root) a push publishes: it declares the
//! records table in its YAML front matter, a `configs` entry whose `data_files` are every
//! run's Parquet records, so the Hub's viewer and `datasets.load_dataset` read it.
//!
//! An archive without a `README.md` gets the card written here. A `README.md` the user
//! keeps at ROOT is published as written when its front matter already has `configs`;
//! otherwise babel's `configs` entry is added at the top of its front matter (or a front
//! matter holding only it is put before the text). The file under ROOT is never changed:
//! only the published copy carries the addition. Pure: bytes in, bytes out.

/// The card's name, at the repository root.
pub use crate::archive::layout::DATASET_CARD as CARD_FILE;

/// The `configs` entry: one `records` configuration, every records file of every run.
pub const CONFIGS: &str = "configs:
- config_name: records
  data_files:
  - split: train
    path: runs/*/records/*.parquet
  default: true
";

/// The card of an archive that has none.
pub fn generated() -> Vec<u8> {
    format!(
        "---
{CONFIGS}tags:
- babel
- evaluation
---
# Evaluation results kept by babel

This dataset repository is a babel archive: per-question results of language-model
evaluations, kept with their provenance.

- `runs/<run>/raw/`: the files the evaluation framework wrote, byte for byte.
- `runs/<run>/records/<seq>.parquet`: the normalized records of each import, one row per
  question, variant, filter and repeat (the `records` configuration above).
- `runs/<run>/manifest.json`, `item-banks/`, `protocols/`, ...: manifests and registered
  artifacts, each file hashed.

Check a download with `sha256sum -c checksums.sha256`; restore a commit into an archive
with `babel hub-pull --repo OWNER/NAME --revision COMMIT --dest DIR`.
"
    )
    .into_bytes()
}

/// The published copy of a card the user wrote: unchanged when its front matter has a
/// `configs` key, else with babel's `configs` entry added.
pub fn completed(card: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(card);
    let body = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if let Some(rest) = body.strip_prefix("---\n") {
        let front_matter = rest.split("\n---").next().unwrap_or("");
        if front_matter
            .lines()
            .any(|line| line == "configs:" || line.starts_with("configs:"))
        {
            return card.to_vec();
        }
        return format!("---\n{CONFIGS}{rest}").into_bytes();
    }
    format!("---\n{CONFIGS}---\n{body}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_without_front_matter_gets_one_with_the_records_configuration() {
        let card = String::from_utf8(completed(b"# My study\n")).unwrap();
        assert_eq!(card, format!("---\n{CONFIGS}---\n# My study\n"));
    }

    #[test]
    fn front_matter_without_configs_gets_them_and_keeps_the_rest() {
        let card = completed(b"---\nlicense: cc-by-4.0\n---\n# My study\n");
        assert_eq!(
            String::from_utf8(card).unwrap(),
            format!("---\n{CONFIGS}license: cc-by-4.0\n---\n# My study\n")
        );
    }

    #[test]
    fn a_card_that_declares_its_own_configs_is_published_as_written() {
        let own = b"---\nconfigs:\n- config_name: mine\n  data_files: x.parquet\n---\ntext\n";
        assert_eq!(completed(own), own.to_vec());
    }

    #[test]
    fn the_generated_card_starts_with_the_configs_front_matter() {
        let card = String::from_utf8(generated()).unwrap();
        assert!(card.starts_with(&format!("---\n{CONFIGS}")));
        assert!(card.contains("\n---\n# Evaluation results kept by babel\n"));
    }
}
