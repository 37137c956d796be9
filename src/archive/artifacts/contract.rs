//! Strict benchmark runs: run metadata `benchmark_contract` pins an item bank and the
//! protocol that applies to it. Owns reading the contract, resolving it at run creation
//! and in validation, the bank index that import checks every record against, and the
//! rule that decides whether two runs may be compared.
//!
//! Runs without `benchmark_contract` are general runs and nothing here applies to them.
//! Reads artifacts; writes nothing.

use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};

use super::payload::{ArtifactPin, ItemBank, Payload, Protocol, pin_field};
use super::{ArtifactError, Kind, load};
use crate::archive::manifest::RunManifest;
use crate::archive::metadata::RunMetadata;
use crate::archive::{Archive, ArchiveError};
use crate::jsonl::FieldPath;
use crate::record::{FieldError, Fields, Record};

pub use crate::archive::metadata::CONTRACT_KEY;
/// The run metadata key of the correctness metric, which a strict run takes from its
/// protocol.
pub const CORRECTNESS_KEY: &str = "correctness_metric";

/// What a strict run pins: `{"item_bank": {"id", "sha256"}, "protocol": {"id", "sha256"}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchmarkContract {
    pub item_bank: ArtifactPin,
    pub protocol: ArtifactPin,
}

fn contract_path() -> FieldPath {
    FieldPath::root().key("metadata").key(CONTRACT_KEY)
}

impl BenchmarkContract {
    /// Reads the contract of run metadata; `None` for a general run.
    pub fn of(metadata: &RunMetadata) -> Result<Option<Self>, FieldError> {
        let Some(map) = &metadata.benchmark_contract else {
            return Ok(None);
        };
        let mut f = Fields::new(map.clone(), contract_path());
        let contract = Self {
            item_bank: pin_field(&mut f, "item_bank")?,
            protocol: pin_field(&mut f, "protocol")?,
        };
        f.deny_unknown()?;
        Ok(Some(contract))
    }

    /// The contract as run metadata stores it.
    pub fn to_value(&self) -> Value {
        let pin = |p: &ArtifactPin| json!({"id": p.id, "sha256": p.sha256});
        json!({"item_bank": pin(&self.item_bank), "protocol": pin(&self.protocol)})
    }
}

/// The contract that pins `bank` and `protocol` at their registered hashes (what
/// `babel run create --item-bank BANK --protocol PROTOCOL` stores).
pub fn contract_for(archive: &Archive, bank: &str, protocol: &str) -> Result<Value, ArchiveError> {
    let contract = BenchmarkContract {
        item_bank: load(archive, Kind::ItemBank, bank)?.pin(),
        protocol: load(archive, Kind::Protocol, protocol)?.pin(),
    };
    Ok(contract.to_value())
}

/// A contract whose pins resolved.
pub struct ResolvedContract {
    pub contract: BenchmarkContract,
    pub bank: ItemBank,
    pub protocol: Protocol,
}

/// Resolves a run's contract: both pins name registered artifacts with exactly the pinned
/// hashes, the protocol applies to the pinned bank, and a `correctness_metric` in the
/// metadata is the protocol's. `Ok(None)` for a general run; the problems otherwise.
pub fn resolve_contract(
    archive: &Archive,
    metadata: &RunMetadata,
) -> Result<Result<Option<ResolvedContract>, Vec<FieldError>>, ArchiveError> {
    let contract = match BenchmarkContract::of(metadata) {
        Ok(Some(contract)) => contract,
        Ok(None) => return Ok(Ok(None)),
        Err(error) => return Ok(Err(vec![error])),
    };
    let base = contract_path();
    let mut problems = Vec::new();
    let mut resolved =
        |kind: Kind, pin: &ArtifactPin, field: &str| -> Result<Option<Payload>, ArchiveError> {
            let at = base.key(field);
            match load(archive, kind, &pin.id) {
                Ok(registered) if registered.sha256 == pin.sha256 => Ok(Some(registered.payload)),
                Ok(registered) => {
                    problems.push(FieldError::new(
                        at.key("sha256"),
                        format!(
                            "pins {kind} {:?} at SHA-256 {}, but its registered payload has {}",
                            pin.id, pin.sha256, registered.sha256
                        ),
                    ));
                    Ok(None)
                }
                Err(ArchiveError::Artifact(error))
                    if matches!(*error, ArtifactError::Unknown { .. }) =>
                {
                    problems.push(FieldError::new(
                        at,
                        format!("{kind} {:?} is not registered", pin.id),
                    ));
                    Ok(None)
                }
                Err(ArchiveError::Damaged { path, reason }) => {
                    problems.push(FieldError::new(
                        at,
                        format!(
                            "{kind} {:?} is damaged ({}: {reason})",
                            pin.id,
                            path.display()
                        ),
                    ));
                    Ok(None)
                }
                Err(other) => Err(other),
            }
        };
    let bank = resolved(Kind::ItemBank, &contract.item_bank, "item_bank")?;
    let protocol = resolved(Kind::Protocol, &contract.protocol, "protocol")?;
    let (Some(Payload::ItemBank(bank)), Some(Payload::Protocol(protocol))) = (bank, protocol)
    else {
        return Ok(Err(problems));
    };
    if protocol.item_bank != contract.item_bank {
        problems.push(FieldError::new(
            base.key("protocol"),
            format!(
                "protocol {:?} applies to item bank {:?} at {}, not to the pinned item bank {:?} at {}",
                contract.protocol.id,
                protocol.item_bank.id,
                protocol.item_bank.sha256,
                contract.item_bank.id,
                contract.item_bank.sha256
            ),
        ));
    }
    if let Some(metric) = &metadata.correctness_metric
        && *metric != protocol.correctness_metric
    {
        problems.push(FieldError::new(
            FieldPath::root().key("metadata").key(CORRECTNESS_KEY),
            format!(
                "is {metric:?}, but protocol {:?} scores correctness by {:?}",
                contract.protocol.id, protocol.correctness_metric
            ),
        ));
    }
    if !problems.is_empty() {
        return Ok(Err(problems));
    }
    Ok(Ok(Some(ResolvedContract {
        contract,
        bank,
        protocol,
    })))
}

/// Checks a new run's contract before it is created, and gives a strict run its
/// protocol's correctness metric when the metadata names none. General runs pass
/// unchanged.
pub fn prepare_strict_run(
    archive: &Archive,
    run: &str,
    metadata: &mut RunMetadata,
) -> Result<(), ArchiveError> {
    match resolve_contract(archive, metadata)? {
        Ok(None) => Ok(()),
        Ok(Some(resolved)) => {
            metadata
                .correctness_metric
                .get_or_insert(resolved.protocol.correctness_metric);
            Ok(())
        }
        Err(problems) => Err(ArtifactError::Contract {
            run: run.to_owned(),
            problems,
        }
        .into()),
    }
}

/// Why a strict record is outside its run's contract: no script or language, not an
/// instance of the item bank, or a filter the protocol does not define.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutsideContract {
    /// The field at fault (the root path when it is the identity as a whole).
    pub path: FieldPath,
    pub message: String,
    pub hint: String,
}

/// The instances of a strict run's item bank and the filters of its protocol, for
/// checking records as they stream in (at import) and as they are read back (in validate).
#[derive(Debug, Clone)]
pub struct BankIndex {
    bank: String,
    protocol: String,
    /// The protocol's filter names (`filters[].name`), in payload order.
    filters: Vec<String>,
    /// language → script → question IDs.
    instances: HashMap<String, HashMap<String, HashSet<String>>>,
}

impl BankIndex {
    /// The index of a resolved contract: its bank's instances and its protocol's filters.
    pub fn of(resolved: &ResolvedContract) -> Self {
        let mut instances: HashMap<String, HashMap<String, HashSet<String>>> = HashMap::new();
        for instance in resolved.bank.items.iter().flat_map(|item| &item.instances) {
            instances
                .entry(instance.language.clone())
                .or_default()
                .entry(instance.script.clone())
                .or_default()
                .insert(instance.question_id.clone());
        }
        Self {
            bank: resolved.contract.item_bank.id.clone(),
            protocol: resolved.contract.protocol.id.clone(),
            filters: resolved.protocol.filters.clone(),
            instances,
        }
    }

    /// The index a strict run's records are checked against; `None` for a general run.
    /// A contract that does not resolve is an error: nothing can be imported under it.
    pub fn for_run(
        archive: &Archive,
        manifest: &RunManifest,
    ) -> Result<Option<Self>, ArchiveError> {
        match resolve_contract(archive, &manifest.metadata)? {
            Ok(None) => Ok(None),
            Ok(Some(resolved)) => Ok(Some(Self::of(&resolved))),
            Err(problems) => Err(ArtifactError::Contract {
                run: manifest.run_id.clone(),
                problems,
            }
            .into()),
        }
    }

    /// True when `(language, script, question_id)` is an instance of the bank.
    fn contains(&self, language: &str, script: &str, question_id: &str) -> bool {
        self.instances
            .get(language)
            .and_then(|scripts| scripts.get(script))
            .is_some_and(|ids| ids.contains(question_id))
    }

    /// Checks that a strict run's record names its script, is an instance of the bank and
    /// carries one of the protocol's filters.
    pub fn check(&self, record: &Record) -> Result<(), OutsideContract> {
        self.check_fields(
            record.language.as_deref(),
            record.script.as_deref(),
            &record.question_id,
            &record.filter,
        )
    }

    /// [`Self::check`] on the four fields it reads, for a caller that has not built a
    /// whole [`Record`] (validate reads them straight from the stored line).
    pub fn check_fields(
        &self,
        language: Option<&str>,
        script: Option<&str>,
        question_id: &str,
        filter: &str,
    ) -> Result<(), OutsideContract> {
        let root = FieldPath::root();
        let Some(script) = script else {
            return Err(OutsideContract {
                path: root.key("script"),
                message: "records of a strict benchmark run must name their script".into(),
                hint: "add \"script\" (e.g. \"Latn\") to each record; in a strict run the script is part of the identity".into(),
            });
        };
        let Some(language) = language else {
            return Err(OutsideContract {
                path: root.key("language"),
                message: format!(
                    "records of a strict benchmark run must name their language (every instance of item bank {:?} has one)",
                    self.bank
                ),
                hint: "add \"language\" to each record, or pass --language".into(),
            });
        };
        if !self.contains(language, script, question_id) {
            return Err(OutsideContract {
                path: root,
                message: format!(
                    "(language {language:?}, script {script:?}, question_id {question_id:?}) is not an instance of item bank {:?}",
                    self.bank
                ),
                hint: format!(
                    "a strict run holds only its bank's items; compare the record's language, script and question_id with `babel artifact show item-bank {}`, or register a new bank that includes it",
                    self.bank
                ),
            });
        }
        // ARTIFACTS.md: the protocol's `filters[].name` "is the records' `filter`".
        if !self.filters.iter().any(|name| name == filter) {
            return Err(OutsideContract {
                path: root.key("filter"),
                message: format!(
                    "{filter:?} is not one of the filters of protocol {:?} ({})",
                    self.protocol,
                    self.filters.join(", ")
                ),
                hint: format!(
                    "a strict run's records carry one of its protocol's filters; set each record's \"filter\" (absent means \"none\") to one that `babel artifact show protocol {}` lists, or register a protocol that defines this filter",
                    self.protocol
                ),
            });
        }
        Ok(())
    }
}

/// Why two runs may not be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotComparable {
    /// One strict run and one general run.
    #[error(
        "run {strict:?} is a strict benchmark run and run {general:?} is not; they measure under different contracts"
    )]
    StrictAndGeneral { strict: String, general: String },
    /// Two strict runs of different item banks.
    #[error("runs {a:?} and {b:?} pin different item banks ({a_pin} and {b_pin})")]
    DifferentItemBanks {
        a: String,
        b: String,
        a_pin: String,
        b_pin: String,
    },
    /// Two strict runs under different protocols.
    #[error("runs {a:?} and {b:?} pin different protocols ({a_pin} and {b_pin})")]
    DifferentProtocols {
        a: String,
        b: String,
        a_pin: String,
        b_pin: String,
    },
    /// A run whose contract cannot be read.
    #[error("run {run:?}: {error}")]
    BadContract { run: String, error: String },
}

impl NotComparable {
    /// As an archive error. Two runs of different contracts are a refused selection, a
    /// usage error (exit 2) wherever runs are selected: compare, panel, matrix. A contract
    /// that cannot be read is a damaged run, and stays an artifact error (exit 1).
    pub fn into_archive_error(self) -> ArchiveError {
        match self {
            Self::BadContract { .. } => ArchiveError::Artifact(Box::new(self.into())),
            _ => ArchiveError::Usage {
                message: self.to_string(),
                hint: Some(self.hint().to_owned()),
            },
        }
    }

    /// What the user can do next.
    pub fn hint(&self) -> &'static str {
        match self {
            Self::BadContract { .. } => "`babel validate` lists what is wrong with the run",
            _ => {
                "strict runs compare only with strict runs of the same item bank and protocol (different models and checkpoints are fine); compare runs measured under one contract"
            }
        }
    }
}

fn short(pin: &ArtifactPin) -> String {
    format!("{}@{}", pin.id, &pin.sha256[..12.min(pin.sha256.len())])
}

/// The comparison rule for two runs: general runs compare with general runs; strict runs
/// compare only with strict runs that pin the same item bank and the same protocol, at
/// the same hashes. Models and checkpoints may differ. Pure: reads the two manifests only.
pub fn check_comparable(a: &RunManifest, b: &RunManifest) -> Result<(), NotComparable> {
    let contract = |m: &RunManifest| {
        BenchmarkContract::of(&m.metadata).map_err(|error| NotComparable::BadContract {
            run: m.run_id.clone(),
            error: error.to_string(),
        })
    };
    match (contract(a)?, contract(b)?) {
        (None, None) => Ok(()),
        (Some(_), None) => Err(NotComparable::StrictAndGeneral {
            strict: a.run_id.clone(),
            general: b.run_id.clone(),
        }),
        (None, Some(_)) => Err(NotComparable::StrictAndGeneral {
            strict: b.run_id.clone(),
            general: a.run_id.clone(),
        }),
        (Some(x), Some(y)) if x.item_bank != y.item_bank => {
            Err(NotComparable::DifferentItemBanks {
                a: a.run_id.clone(),
                b: b.run_id.clone(),
                a_pin: short(&x.item_bank),
                b_pin: short(&y.item_bank),
            })
        }
        (Some(x), Some(y)) if x.protocol != y.protocol => Err(NotComparable::DifferentProtocols {
            a: a.run_id.clone(),
            b: b.run_id.clone(),
            a_pin: short(&x.protocol),
            b_pin: short(&y.protocol),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::artifacts::payload::{BankItem, Instance};
    use crate::archive::manifest::{RUN_MANIFEST_FORMAT, RunStatus};

    const BANK_SHA: &str = "1111111111111111111111111111111111111111111111111111111111111111";
    const PROTO_SHA: &str = "2222222222222222222222222222222222222222222222222222222222222222";
    const OTHER_SHA: &str = "3333333333333333333333333333333333333333333333333333333333333333";

    fn run(id: &str, model: &str, contract: Option<Value>) -> RunManifest {
        let mut metadata = RunMetadata::new(model);
        if let Some(contract) = contract {
            metadata.set(CONTRACT_KEY.into(), contract).unwrap();
        }
        RunManifest {
            format: RUN_MANIFEST_FORMAT.into(),
            schema_version: 1,
            run_id: id.into(),
            status: RunStatus::Open,
            created_at: "2026-12-02T12:00:00Z".into(),
            sealed_at: None,
            metadata,
            imports: Vec::new(),
            attachments: Vec::new(),
        }
    }

    fn contract(bank_sha: &str, protocol: &str, protocol_sha: &str) -> Value {
        json!({"item_bank": {"id": "bank", "sha256": bank_sha},
               "protocol": {"id": protocol, "sha256": protocol_sha}})
    }

    #[test]
    fn strict_runs_of_one_bank_and_protocol_are_comparable_across_checkpoints() {
        // "Different checkpoints are intentionally comparable."
        let a = run(
            "a",
            "m@step-1000",
            Some(contract(BANK_SHA, "proto", PROTO_SHA)),
        );
        let b = run(
            "b",
            "m@step-2000",
            Some(contract(BANK_SHA, "proto", PROTO_SHA)),
        );
        assert_eq!(check_comparable(&a, &b), Ok(()));
        let general = (run("c", "m", None), run("d", "n", None));
        assert_eq!(check_comparable(&general.0, &general.1), Ok(()));
    }

    #[test]
    fn strict_comparisons_require_the_same_protocol_reference() {
        // "comparisons require the same bank and protocol references"
        let a = run("a", "m", Some(contract(BANK_SHA, "proto", PROTO_SHA)));
        let other_protocol = run("b", "m", Some(contract(BANK_SHA, "proto-5shot", PROTO_SHA)));
        assert!(matches!(
            check_comparable(&a, &other_protocol),
            Err(NotComparable::DifferentProtocols { .. })
        ));
        let same_id_other_hash = run("c", "m", Some(contract(BANK_SHA, "proto", OTHER_SHA)));
        let error = check_comparable(&a, &same_id_other_hash).unwrap_err();
        assert_eq!(
            error.to_string(),
            "runs \"a\" and \"c\" pin different protocols (proto@222222222222 and proto@333333333333)"
        );
    }

    #[test]
    fn strict_comparisons_require_the_same_bank_reference() {
        let a = run("a", "m", Some(contract(BANK_SHA, "proto", PROTO_SHA)));
        let b = run("b", "m", Some(contract(OTHER_SHA, "proto", PROTO_SHA)));
        assert!(matches!(
            check_comparable(&a, &b),
            Err(NotComparable::DifferentItemBanks { .. })
        ));
    }

    #[test]
    fn a_strict_run_does_not_compare_with_a_general_one() {
        let strict = run("s", "m", Some(contract(BANK_SHA, "proto", PROTO_SHA)));
        let general = run("g", "m", None);
        for (x, y) in [(&strict, &general), (&general, &strict)] {
            assert_eq!(
                check_comparable(x, y),
                Err(NotComparable::StrictAndGeneral {
                    strict: "s".into(),
                    general: "g".into()
                })
            );
        }
        let broken = run("x", "m", Some(json!({"item_bank": "bank"})));
        assert!(matches!(
            check_comparable(&strict, &broken),
            Err(NotComparable::BadContract { .. })
        ));
    }

    #[test]
    fn contracts_are_read_field_precisely() {
        let mut metadata = RunMetadata::new("m");
        metadata.benchmark_contract = json!({"item_bank": {"id": "bank", "sha256": BANK_SHA}})
            .as_object()
            .cloned();
        let error = BenchmarkContract::of(&metadata).unwrap_err();
        assert_eq!(
            error.path.to_string(),
            "metadata.benchmark_contract.protocol"
        );
        metadata.benchmark_contract = json!({"item_bank": {"id": "bank", "sha256": BANK_SHA}, "protocol": {"id": "p", "sha256": PROTO_SHA}, "panel": 1})
            .as_object()
            .cloned();
        let error = BenchmarkContract::of(&metadata).unwrap_err();
        assert_eq!(error.path.to_string(), "metadata.benchmark_contract.panel");
    }

    fn record(language: Option<&str>, script: Option<&str>, question_id: &str) -> Record {
        let line = json!({"question_id": question_id, "variant_id": "original", "benchmark": "b",
                          "language": language, "script": script});
        let run = crate::adapters::RunContext {
            run_id: "r".into(),
            model: "m".into(),
            benchmark: None,
            correctness_metric: None,
            shared_answer_key: false,
            strict: false,
        };
        let options = crate::adapters::AdapterOptions::default();
        let context = crate::adapters::ImportContext {
            run: &run,
            options: &options,
            source: crate::adapters::SourceFile {
                raw_path: "runs/r/raw/0001-a.jsonl",
                basename: "a.jsonl",
                folder: "",
            },
        };
        let mut out = crate::adapters::kit::records_of_line(
            crate::adapters::canonical::normalize,
            &line.to_string(),
            1,
            Default::default(),
            &context,
        )
        .unwrap();
        out.remove(0)
    }

    fn resolved(bank: ItemBank, filters: &[&str]) -> ResolvedContract {
        let pin = |id: &str, sha256: &str| ArtifactPin {
            id: id.into(),
            sha256: sha256.into(),
        };
        ResolvedContract {
            contract: BenchmarkContract {
                item_bank: pin("bank", BANK_SHA),
                protocol: pin("proto", PROTO_SHA),
            },
            bank,
            protocol: Protocol {
                item_bank: pin("bank", BANK_SHA),
                filters: filters.iter().map(|f| f.to_string()).collect(),
                correctness_metric: "acc".into(),
                correctness_filter: filters[0].into(),
            },
        }
    }

    fn one_item_bank() -> ItemBank {
        ItemBank {
            items: vec![BankItem {
                id: "cap-fr".into(),
                family: None,
                split: None,
                groups: Default::default(),
                instances: vec![
                    Instance {
                        language: "en".into(),
                        script: "Latn".into(),
                        question_id: "q1".into(),
                    },
                    Instance {
                        language: "sr".into(),
                        script: "Cyrl".into(),
                        question_id: "q1".into(),
                    },
                ],
            }],
        }
    }

    #[test]
    fn every_strict_record_must_be_an_instance_of_the_bank_and_name_its_script() {
        let index = BankIndex::of(&resolved(one_item_bank(), &["none"]));
        assert_eq!(index.check(&record(Some("en"), Some("Latn"), "q1")), Ok(()));
        assert_eq!(index.check(&record(Some("sr"), Some("Cyrl"), "q1")), Ok(()));
        let absent = index
            .check(&record(Some("sr"), Some("Latn"), "q1"))
            .unwrap_err();
        assert_eq!(
            absent.message,
            "(language \"sr\", script \"Latn\", question_id \"q1\") is not an instance of item bank \"bank\""
        );
        assert!(
            index
                .check(&record(Some("en"), Some("Latn"), "q2"))
                .is_err()
        );
        let no_script = index.check(&record(Some("en"), None, "q1")).unwrap_err();
        assert_eq!(no_script.path.to_string(), "script");
        let no_language = index.check(&record(None, Some("Latn"), "q1")).unwrap_err();
        assert_eq!(no_language.path.to_string(), "language");
    }

    #[test]
    fn a_strict_record_must_carry_one_of_the_protocols_filters() {
        // ARTIFACTS.md, protocol `filters`: "`name` is the records' `filter`".
        let index = BankIndex::of(&resolved(one_item_bank(), &["none", "strict-match"]));
        let mut record = record(Some("en"), Some("Latn"), "q1");
        assert_eq!(record.filter, "none", "an absent filter is \"none\"");
        assert_eq!(index.check(&record), Ok(()));
        record.filter = "strict-match".into();
        assert_eq!(index.check(&record), Ok(()));
        record.filter = "made-up".into();
        let refused = index.check(&record).unwrap_err();
        assert_eq!(refused.path.to_string(), "filter");
        assert_eq!(
            refused.message,
            "\"made-up\" is not one of the filters of protocol \"proto\" (none, strict-match)"
        );
        assert!(refused.hint.contains("babel artifact show protocol proto"));
    }
}
