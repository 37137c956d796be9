//! Validation of the history: the log chains and the head names its end
//! (`archive::history::read`), every entry is a legal write on top of the ones before it
//! (`archive::history::replay`), and the manifests on disk are exactly the ones the
//! replay rebuilds, byte for byte. That is what finds a whole edit that keeps every hash
//! consistent: a reopened seal, a dropped import, a record changed and rehashed into its
//! manifest, a deleted run or artifact, a manifest written by hand, and the same with an
//! entry appended to the log to cover it. With `--since`, a run the cited head held and
//! this copy has recorded as absent since is reported too.

use std::io;

use super::Collector;
use crate::archive::history::replay::State;
use crate::archive::history::{self, Head};
use crate::archive::layout::{self, MARKER, REGISTRIES};
use crate::archive::{Archive, ArchiveError};
use crate::durable::digest_file;

/// Which manifests a validation covers.
pub(super) enum Scope<'a> {
    /// The whole archive: every manifest recorded or present.
    Whole,
    /// These runs (and, with `registries`, every artifact).
    Runs {
        runs: &'a [layout::RunId],
        registries: bool,
    },
}

impl Scope<'_> {
    fn covers(&self, path: &str) -> bool {
        match self {
            Scope::Whole => true,
            Scope::Runs { runs, registries } => {
                path == MARKER
                    || runs
                        .iter()
                        .any(|run| path == layout::run_relative(run, layout::MANIFEST))
                    || (*registries
                        && REGISTRIES
                            .iter()
                            .any(|r| path.starts_with(&format!("{r}/"))))
            }
        }
    }
}

/// Checks the history and the manifests it records; with `since`, also that the history
/// still holds that entry (it grew from there, nothing before it was rewritten).
pub(super) fn check(
    archive: &Archive,
    scope: Scope<'_>,
    since: Option<&Head>,
    out: &mut Collector,
) -> Result<(), ArchiveError> {
    let read = history::read(archive.layout())?;
    for (path, line, message) in &read.problems {
        out.add(*path, *line, "history", message.clone());
    }
    if let Some(anchor) = since
        && !read.holds(anchor)
    {
        let ends = read.head().map_or(0, |head| head.seq);
        out.add(
            history::LOG,
            None,
            "history",
            if anchor.seq > ends {
                format!("this copy's history ends at entry {ends}, before entry {} that you gave with --since: it is an older copy than the one cited (validate the newer one), or another archive", anchor.seq)
            } else {
                format!("the history no longer holds entry {anchor} that you gave with --since: its past was rewritten, or it is another archive")
            },
        );
    }
    report_strays(archive, out);
    if read.entries.is_empty() {
        return Ok(());
    }
    out.files += 2;
    let replay = read.replay();
    for (seq, problem) in &replay.problems {
        let operation = operation_of(&read, *seq);
        out.add(
            history::LOG,
            Some(*seq),
            "history",
            format!("entry {seq} ({operation}) is not a legal write: {problem}"),
        );
    }
    if let Some(anchor) = since
        && read.holds(anchor)
    {
        for (path, at) in replay.removed_after(anchor.seq) {
            out.add(
                path.to_owned(),
                None,
                "history",
                format!("it existed at the entry {} you gave with --since, and entry {at} recorded it as absent from this copy: this copy cannot show that its data is unchanged (validate a whole copy, or a --since head after entry {at})", anchor.seq),
            );
        }
    }
    let on_disk = history::manifests_on_disk(archive.layout())?;
    for (path, state) in &replay.manifests {
        if scope.covers(path) {
            check_manifest(archive, &read, path, state, out);
        }
    }
    for path in on_disk {
        if scope.covers(&path) && !replay.manifests.contains_key(&path) {
            out.add(
                path,
                None,
                "history",
                "no history entry recorded this manifest: it was not written by a babel write",
            );
        }
    }
    Ok(())
}

/// Every file of the history folder but the log and the head is untracked.
fn report_strays(archive: &Archive, out: &mut Collector) {
    let folder = archive.layout().resolve(history::HISTORY);
    let Ok(entries) = std::fs::read_dir(&folder) else {
        return;
    };
    let mut strays: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| {
            format!(
                "{}/{}",
                history::HISTORY,
                entry.file_name().to_string_lossy()
            )
        })
        .filter(|path| path != history::LOG && path != history::HEAD)
        .collect();
    strays.sort();
    for stray in strays {
        out.add(
            stray,
            None,
            "untracked",
            "the history folder holds only log.jsonl and HEAD",
        );
    }
}

/// The manifest at `path` is the one the replay rebuilds, or absent where the history
/// recorded it so.
fn check_manifest(
    archive: &Archive,
    read: &history::History,
    path: &str,
    state: &State,
    out: &mut Collector,
) {
    let seq = state.seq;
    let file = archive.layout().resolve(path);
    let Some(sha256) = state.recorded.sha256() else {
        out.note(
            path.to_owned(),
            format!("history entry {seq} ({}) recorded this run as absent from this copy: a publication or bundle left it out", operation_of(read, seq)),
        );
        if file.symlink_metadata().is_ok() {
            out.add(
                path.to_owned(),
                None,
                "history",
                format!("history entry {seq} recorded this manifest as absent from this copy, but it is here: it was written outside babel"),
            );
        }
        return;
    };
    match digest_file(&file) {
        Ok(found) if found.sha256 == sha256 => {}
        Ok(_) => out.add(
            path.to_owned(),
            None,
            "history",
            format!("the manifest differs from the one history entry {seq} recorded: it was changed outside babel"),
        ),
        Err(error) if error.source.kind() == io::ErrorKind::NotFound => out.add(
            path.to_owned(),
            None,
            "history",
            format!("history entry {seq} recorded this manifest, but it is gone (a deleted run or artifact?)"),
        ),
        Err(error) => out.add(path.to_owned(), None, "history", error.to_string()),
    }
}

/// The operation of entry `seq`, for messages.
fn operation_of(read: &history::History, seq: u64) -> &str {
    read.entries
        .iter()
        .find(|entry| entry.seq == seq)
        .map_or("", |entry| entry.operation.as_str())
}
