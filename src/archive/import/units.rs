//! Inputs of a format that splits a producer's output folder into units (lighteval,
//! OpenCompass): the folder is listed (regular files only, no links, bounded), the
//! adapter plans the units, and each unit is opened as a folder input of its own, its
//! items file with its header files archived beside it as `<role>-<name>`, so two header
//! files of one name (OpenCompass's predictions and results of one dataset) never meet.
//!
//! A file input is a unit alone; the header files the adapter names beside it (`../`
//! reaches the sibling folders its producer always writes) are read only if no step of
//! their path is a link.

use std::fs;
use std::path::{Component, Path, PathBuf};

use super::{Companion, FolderInput, Input, MAX_FOLDER_FILES};
use crate::adapters::{Listing, PlanUnits, Unit};
use crate::archive::{ArchiveError, layout};
use crate::durable::io_at;

/// How deep a producer's output folder may nest.
const MAX_DEPTH: usize = 16;

/// The units of the input at `path`, each `(its items file's path, its input)`; `ids`
/// (`--ids NAME=FILE`) adds a dataset file to the unit of that name.
pub(super) fn open_units(
    path: &Path,
    format: &str,
    plan: PlanUnits,
    ids: &[(String, PathBuf)],
) -> Result<Vec<(PathBuf, Input)>, ArchiveError> {
    let folder = path.is_dir();
    let files = if folder {
        list(path)?
    } else {
        // The folders a file is in name what it is (`predictions/<model>/`), even when
        // it is given by its name alone from inside them.
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        let parent = parent.unwrap_or(Path::new("."));
        let parent = fs::canonicalize(parent).map_err(io_at("reading", parent))?;
        let name = path.file_name().unwrap_or_default();
        vec![parent.join(name).to_string_lossy().into_owned()]
    };
    let base = if folder {
        path.to_path_buf()
    } else {
        PathBuf::new()
    };
    let units = plan(&Listing {
        files: &files,
        folder,
    })
    .map_err(|message| ArchiveError::Usage {
        message: format!("{}: {message}", path.display()),
        hint: Some(format!(
            "give --format {format} the output folder its producer wrote, or one of its result files"
        )),
    })?;
    for (index, (name, _)) in ids.iter().enumerate() {
        if ids[..index].iter().any(|(earlier, _)| earlier == name) {
            return Err(ArchiveError::Usage {
                message: format!("--ids names {name:?} twice"),
                hint: Some("give each dataset one file".into()),
            });
        }
        if !units.iter().any(|unit| unit.takes_ids) {
            return Err(ArchiveError::Usage {
                message: format!(
                    "--ids does not apply to --format {format}: its items carry their ids"
                ),
                hint: Some("name an id field of the items with --id-field".into()),
            });
        }
        if !units.iter().any(|unit| unit.name == *name) {
            let known: Vec<&str> = units.iter().map(|u| u.name.as_str()).collect();
            return Err(ArchiveError::Usage {
                message: format!(
                    "--ids names {name:?}, but {} holds no such dataset (it holds {})",
                    path.display(),
                    known.join(", ")
                ),
                hint: Some("name a dataset by its file name without .json".into()),
            });
        }
    }
    units
        .into_iter()
        .map(|unit| open_unit(&base, folder, unit, ids))
        .collect()
}

/// Opens one unit's files.
fn open_unit(
    base: &Path,
    folder: bool,
    unit: Unit,
    ids: &[(String, PathBuf)],
) -> Result<(PathBuf, Input), ArchiveError> {
    let items_path = base.join(&unit.items);
    let (items, mut bytes) = super::super::open_input(&items_path, None)?;
    let mut companions = Vec::new();
    let mut roles = Vec::new();
    let mut add = |role: &'static str, path: &Path| -> Result<(), ArchiveError> {
        let (file, size) = super::super::open_input(path, None)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stored = layout::stored_basename(&format!("{role}-{name}"));
        bytes += size;
        companions.push(Companion {
            stored: stored.clone(),
            path: path.to_owned(),
            file,
            bytes: size,
        });
        roles.push((role, stored));
        Ok(())
    };
    for (role, relative) in &unit.header {
        let path = if folder {
            base.join(relative)
        } else {
            let parent = items_path.parent().filter(|p| !p.as_os_str().is_empty());
            beside(parent.unwrap_or(Path::new(".")), relative)?
        };
        if !path.is_file() {
            return Err(ArchiveError::Usage {
                message: format!(
                    "{} has no {role} file: {} is missing",
                    items_path.display(),
                    path.display()
                ),
                hint: Some(
                    "import the whole output folder the tool wrote; babel reads the results beside each file"
                        .into(),
                ),
            });
        }
        add(role, &path)?;
    }
    for (_, file) in ids.iter().filter(|(name, _)| *name == unit.name) {
        add("ids", file)?;
    }
    companions.sort_by(|a, b| a.stored.cmp(&b.stored));
    let items_file = layout::stored_basename(
        &items_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    );
    Ok((
        items_path.clone(),
        Input::Folder(FolderInput {
            items_file,
            items,
            items_path,
            companions,
            roles,
            bytes,
        }),
    ))
}

/// `relative` resolved from the folder `base` of a file input, refused if any step below
/// the folder it climbs to is a link: a sibling the producer wrote, not what a link
/// points at.
fn beside(base: &Path, relative: &str) -> Result<PathBuf, ArchiveError> {
    let mut path = fs::canonicalize(base).map_err(io_at("reading", base))?;
    for component in Path::new(relative).components() {
        match component {
            Component::ParentDir => {
                path.pop();
            }
            Component::Normal(part) => {
                path.push(part);
                let linked = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
                if linked {
                    return Err(ArchiveError::Usage {
                        message: format!("{} is a symbolic link", path.display()),
                        hint: Some(
                            "babel reads the files its producer wrote, not what a link points at; copy the file in".into(),
                        ),
                    });
                }
            }
            _ => {}
        }
    }
    Ok(path)
}

/// Every regular file under `root` (relative, `/`-separated, sorted); a link or a special
/// file anywhere is refused, as in a run folder.
fn list(root: &Path) -> Result<Vec<String>, ArchiveError> {
    let usage = |message: String| {
        ArchiveError::Usage {
        message,
        hint: Some(
            "an output folder is read as its producer wrote it, with regular files only; copy a linked file in, or move the rest out"
                .into(),
        ),
    }
    };
    let mut files = Vec::new();
    // Every entry listed, files and folders alike (empty folders too).
    let mut entries = 0usize;
    let mut stack = vec![(root.to_path_buf(), String::new(), 0usize)];
    while let Some((dir, prefix, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(usage(format!(
                "{} nests more than {MAX_DEPTH} folders deep",
                root.display()
            )));
        }
        for entry in fs::read_dir(&dir).map_err(io_at("listing", &dir))? {
            let entry = entry.map_err(io_at("listing", &dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = format!("{prefix}{name}");
            let kind = entry.file_type().map_err(io_at("reading", &entry.path()))?;
            if kind.is_symlink() {
                return Err(usage(format!(
                    "{} holds {relative:?}, which is a symbolic link",
                    root.display()
                )));
            } else if kind.is_dir() {
                stack.push((entry.path(), format!("{relative}/"), depth + 1));
            } else if kind.is_file() {
                files.push(relative);
            } else {
                return Err(usage(format!(
                    "{} holds {relative:?}, which is not a regular file",
                    root.display()
                )));
            }
            entries += 1;
            if entries > MAX_FOLDER_FILES {
                return Err(usage(format!(
                    "{} holds more than {MAX_FOLDER_FILES} entries",
                    root.display()
                )));
            }
        }
    }
    files.sort();
    Ok(files)
}
