//! The archive's part of `babel panel`: selecting its sides (named ones, every run of a
//! variant, or the runs of a registered model panel), the rule that any two of them may
//! be compared (the one `compare` applies, to every pair), and each side's rows keyed for
//! the join. Reads only, takes no lock.

use super::{ComparisonSide, SideRequest, check_comparable, side, usage};
use crate::archive::artifacts::{self, Kind, payload::Payload};
use crate::archive::layout::RunId;
use crate::archive::records::Columns;
use crate::archive::{Archive, ArchiveError};
use crate::compare::keys::Interner;
use crate::panel::KeyedRows;

/// One side as named on the command line: `RUN` (its only variant) or `RUN:VARIANT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedSide {
    pub run: RunId,
    pub variant: Option<String>,
}

impl NamedSide {
    /// Reads `RUN` or `RUN:VARIANT`.
    pub fn parse(text: &str) -> Result<Self, ArchiveError> {
        let (run, variant) = match text.split_once(':') {
            Some((run, variant)) if !variant.is_empty() => (run, Some(variant.to_owned())),
            Some(_) => {
                return Err(usage(
                    format!("side {text:?} names no variant after the colon"),
                    "write RUN or RUN:VARIANT",
                ));
            }
            None => (text, None),
        };
        Ok(Self {
            run: RunId::parse(run)?,
            variant,
        })
    }
}

/// Which sides a panel has.
#[derive(Debug, Clone)]
pub enum PanelSelection {
    /// These sides, in this order.
    Named(Vec<NamedSide>),
    /// Every run of the archive that holds records of this variant, by run ID.
    All { variant: String },
    /// The runs of the archive whose model (and checkpoint, where the panel lists
    /// checkpoints) a registered model panel lists, with this variant, by run ID.
    ModelPanel { id: String, variant: String },
}

/// Selects the sides of a panel and checks that every two of them may be compared.
pub fn select(
    archive: &Archive,
    selection: &PanelSelection,
) -> Result<Vec<ComparisonSide>, ArchiveError> {
    let requests = match selection {
        PanelSelection::Named(named) => named_requests(archive, named)?,
        PanelSelection::All { variant } => {
            let mut requests = Vec::new();
            for run in archive.run_ids()? {
                if archive.run_manifest(&run)?.variants().contains(variant) {
                    requests.push(SideRequest {
                        run,
                        variant_id: variant.clone(),
                    });
                }
            }
            requests
        }
        PanelSelection::ModelPanel { id, variant } => panel_requests(archive, id, variant)?,
    };
    if requests.len() < 2 {
        let found = requests.len();
        return Err(usage(
            format!("a panel needs at least two sides; this selection has {found}"),
            match selection {
                PanelSelection::Named(_) => "name two or more sides (RUN or RUN:VARIANT)",
                PanelSelection::All { .. } => {
                    "no two runs hold that variant: check --variant (`babel list` shows the runs)"
                }
                PanelSelection::ModelPanel { .. } => {
                    "fewer than two runs of the panel's models hold that variant: check --variant and the runs' models and checkpoints"
                }
            },
        ));
    }
    let sides = requests
        .into_iter()
        .map(|request| side(archive, request))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, a) in sides.iter().enumerate() {
        for b in &sides[i + 1..] {
            if a.run != b.run {
                check_comparable(&a.manifest, &b.manifest)?;
            }
        }
    }
    Ok(sides)
}

fn named_requests(
    archive: &Archive,
    named: &[NamedSide],
) -> Result<Vec<SideRequest>, ArchiveError> {
    let mut requests: Vec<SideRequest> = Vec::new();
    for side in named {
        let variant_id = match &side.variant {
            Some(variant) => variant.clone(),
            None => {
                let variants = archive.run_manifest(&side.run)?.variants();
                match variants.as_slice() {
                    [only] => only.clone(),
                    [] => {
                        return Err(usage(
                            format!("run {} has no records yet", side.run),
                            "import records into it, or leave it out of the panel",
                        ));
                    }
                    several => {
                        return Err(usage(
                            format!(
                                "run {} holds several variants ({}); name the one for this side",
                                side.run,
                                several.join(", ")
                            ),
                            format!(
                                "write {}:VARIANT, e.g. {}:{} (one side per variant)",
                                side.run, side.run, several[0]
                            ),
                        ));
                    }
                }
            }
        };
        let request = SideRequest {
            run: side.run.clone(),
            variant_id,
        };
        if requests.contains(&request) {
            return Err(usage(
                format!("side {}:{} is named twice", request.run, request.variant_id),
                "name each side once",
            ));
        }
        requests.push(request);
    }
    Ok(requests)
}

fn panel_requests(
    archive: &Archive,
    id: &str,
    variant: &str,
) -> Result<Vec<SideRequest>, ArchiveError> {
    let registered = artifacts::load(archive, Kind::ModelPanel, id)?;
    let Payload::ModelPanel(panel) = &registered.payload else {
        unreachable!("a model-panels artifact holds a model panel");
    };
    let mut requests = Vec::new();
    for run in archive.run_ids()? {
        let manifest = archive.run_manifest(&run)?;
        let listed = panel.models.iter().any(|entry| {
            entry.model == manifest.model()
                && (entry.checkpoints.is_empty()
                    || manifest
                        .metadata
                        .checkpoint
                        .as_ref()
                        .is_some_and(|c| entry.checkpoints.contains(c)))
        });
        if listed && manifest.variants().iter().any(|v| v == variant) {
            requests.push(SideRequest {
                run,
                variant_id: variant.to_owned(),
            });
        }
    }
    Ok(requests)
}

/// A side's rows keyed for the panel's join: every record of its variant, in import
/// order, with its key (labels interned, question hashed), script and question_id.
pub fn keyed_rows(
    archive: &Archive,
    side: &ComparisonSide,
    interner: &Interner,
) -> Result<KeyedRows, String> {
    let files = super::rows::SideFiles::new(archive, side);
    let mut rows = KeyedRows::default();
    let mut next = 0;
    files.scan(Columns::JOIN, |batch, selected| {
        super::rows::each_key(
            batch,
            selected,
            interner,
            &mut next,
            &mut |key, script, id| rows.push(key, script, id),
        )
        .map(|()| true)
    })?;
    Ok(rows)
}

/// A side's records of its variant in import order, with the columns `columns`: `each`
/// is called with every batch and the side's rows in it.
pub fn scan(
    archive: &Archive,
    side: &ComparisonSide,
    columns: Columns,
    each: impl FnMut(&crate::archive::records::Batch, &[usize]) -> Result<bool, String>,
) -> Result<(), String> {
    super::rows::SideFiles::new(archive, side).scan(columns, each)
}
