//! `babel hub-plan`, `babel hub-push` and `babel hub-pull`, with progress bars on stderr
//! for transfers (hidden with --quiet, --json, or when stderr is not a terminal).

use std::path::PathBuf;
use std::sync::Arc;

use indicatif::ProgressBar;

use super::output::{print_json, redacted};
use super::{CliError, Exit, Globals, run_ids};
use babel::hub::client::HubClient;
use babel::hub::config::HubConfig;
use babel::hub::plan::{self, FileStatus, LocalPlan, Remote, Selection};
use babel::hub::pull::{self, PullOptions, Revision};
use babel::hub::push::{self, PushOptions};
use babel::hub::{HubError, Progress, RepoId};
use babel::outputs::{HubPlanOutput, RemoteState};

const PLAN_HELP: &str = "\
Examples:
  babel hub-plan --repo my-lab/eval-archive
  babel hub-plan --repo my-lab/eval-archive --runs llama-3-mmlu,qwen-mmlu --json

Published: every file under ROOT (a README.md dataset card and notes too) except .babel/,
plus a generated checksums.sha256; a local checksums.sha256 or .gitattributes is not sent.
With --runs, runs/ holds only those runs and every run an artifact pins (calibration
inputs, release members); every artifact is published either way. The archive must
validate; babel never writes reports inside it.
Authentication: HF_TOKEN, else $HF_TOKEN_PATH or $HF_HOME/token. Endpoint: HF_ENDPOINT.";

const PUSH_HELP: &str = "\
Examples:
  babel hub-push --repo my-lab/eval-archive --create --private
  babel hub-push --repo my-lab/eval-archive --runs llama-3-mmlu -m 'Add the Llama 3 run'

The printed commit ID is what a paper cites: `babel hub-pull --repo my-lab/eval-archive
--revision <commit> --dest DIR` restores exactly that snapshot. The branch's head ends up
holding exactly the plan: files outside it are deleted from the head (older commits keep
them). If someone else pushed since babel looked, the Hub refuses the commit (HTTP 412)
and babel says so; nothing is retried. Exit code 4 means a network failure.";

const PULL_HELP: &str = "\
Examples:
  babel hub-pull --repo my-lab/eval-archive --revision 3f2a1c...(40 hex) --dest restored
  babel hub-pull --repo my-lab/eval-archive --revision main --dest latest

Every file of the commit is checked (path safety, size, git blob SHA-1 or LFS SHA-256,
the commit the Hub served it from, checksums.sha256) in DIR/.babel-pull-<commit>/, then
initialized and validated, and only then moved into DIR, which becomes the archive root.
A failed pull leaves no archive in DIR; running it again reuses the verified downloads.";

/// Show exactly the files a push would publish, with size and SHA-256, and whether each
/// is new, changed or unchanged in the repository (when it is reachable).
#[derive(Debug, clap::Args)]
#[command(after_help = PLAN_HELP)]
pub struct PlanArgs {
    /// The Hub dataset repository, OWNER/NAME.
    #[arg(long, value_name = "OWNER/NAME")]
    repo: String,
    /// Publish only these runs (plus every registered artifact, and every run an artifact
    /// pins: calibration inputs, release members).
    #[arg(long, value_name = "RUN,...", value_delimiter = ',')]
    runs: Option<Vec<String>>,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
}

/// Publish the archive to a Hub dataset repository in one commit, and print its ID.
#[derive(Debug, clap::Args)]
#[command(after_help = PUSH_HELP)]
pub struct PushArgs {
    /// The Hub dataset repository, OWNER/NAME.
    #[arg(long, value_name = "OWNER/NAME")]
    repo: String,
    /// Publish only these runs (plus every registered artifact, and every run an artifact
    /// pins: calibration inputs, release members); the head then holds only them.
    #[arg(long, value_name = "RUN,...", value_delimiter = ',')]
    runs: Option<Vec<String>>,
    /// Create the repository if it does not exist.
    #[arg(long)]
    create: bool,
    /// With --create: make the new repository private.
    #[arg(long, requires = "create")]
    private: bool,
    /// The commit title.
    #[arg(long, short, value_name = "MSG")]
    message: Option<String>,
    /// Print the outcome as JSON.
    #[arg(long)]
    json: bool,
}

/// Restore an archive from one commit of a Hub dataset repository into a new folder,
/// verifying every file, then validate it.
#[derive(Debug, clap::Args)]
#[command(after_help = PULL_HELP)]
pub struct PullArgs {
    /// The Hub dataset repository, OWNER/NAME.
    #[arg(long, value_name = "OWNER/NAME")]
    repo: String,
    /// The 40-hex commit to restore; a branch name (main) only if you mean a moving
    /// target (the commit it resolves to is printed).
    #[arg(long, value_name = "COMMIT")]
    revision: String,
    /// The folder to restore into: new or empty; it becomes the archive root.
    #[arg(long, value_name = "DIR")]
    dest: PathBuf,
    /// Refuse any file larger than this (e.g. 500MiB, 20GiB).
    #[arg(long, value_name = "SIZE", default_value = "10GiB", value_parser = pull::parse_size)]
    max_file_size: u64,
    /// Refuse a commit larger than this in total.
    #[arg(long, value_name = "SIZE", default_value = "100GiB", value_parser = pull::parse_size)]
    max_total_size: u64,
    /// Print the outcome as JSON.
    #[arg(long)]
    json: bool,
}

struct Bar(ProgressBar);

impl Progress for Bar {
    fn begin(&self, label: &str, _files: usize, bytes: u64) {
        self.0.reset();
        self.0.set_length(bytes);
        self.0.set_message(label.to_owned());
    }

    fn file(&self, path: &str) {
        self.0.set_message(path.to_owned());
    }

    fn advance(&self, bytes: u64) {
        self.0.inc(bytes);
    }

    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

fn progress_bar(hidden: bool) -> Arc<Bar> {
    Arc::new(Bar(super::output::progress_bar(hidden)))
}

fn client() -> Result<HubClient, HubError> {
    HubClient::new(HubConfig::from_env()?)
}

/// The runs to publish (the plan adds every run an artifact pins).
fn selection(runs: Option<Vec<String>>) -> Result<Selection, CliError> {
    let runs = runs.as_deref().map(run_ids).transpose()?;
    Ok(Selection { runs })
}

fn status_name(status: FileStatus) -> &'static str {
    match status {
        FileStatus::New => "new",
        FileStatus::Changed => "changed",
        FileStatus::Unchanged => "unchanged",
    }
}

pub fn plan(globals: &Globals, args: PlanArgs) -> Result<Exit, CliError> {
    let repo = RepoId::parse(&args.repo)?;
    let archive = globals.archive()?;
    // Planning validates and hashes the archive: it sees one committed state.
    let wait = globals.wait.or(Some(std::time::Duration::MAX));
    let lock = archive.hold_still("babel hub-plan", wait, &mut globals.announce_wait())?;
    let local = plan::plan_local(&archive, &selection(args.runs)?)?;
    drop(lock);
    let remote = client().and_then(|client| plan::fetch_remote(&client, &repo));
    let comparison = match &remote {
        Ok(Remote::Missing) => Some(plan::compare(&local, &[])),
        Ok(Remote::At { files, .. }) => Some(plan::compare(&local, files)),
        Err(_) => None,
    };
    let output = HubPlanOutput::new(
        &repo,
        &local,
        remote
            .as_ref()
            .map_err(|error| redacted(&error.to_string())),
        comparison.as_ref(),
    );
    if args.json {
        print_json(&output)?;
        return Ok(Exit::Ok);
    }
    print_plan(&repo, &local, comparison.as_ref(), output.remote.head);
    match (&output.remote.state, &remote) {
        (RemoteState::Missing, _) => outln!(
            "{repo} does not exist yet (or the token cannot see it): every file is new; `babel hub-push --repo {repo} --create` makes it"
        ),
        (_, Err(error)) => {
            errln!(
                "note: could not compare with {repo}: {}",
                redacted(&error.to_string())
            );
            if let Some(hint) = error.hint() {
                errln!("hint: {}", redacted(&hint));
            }
        }
        _ => {}
    }
    Ok(Exit::Ok)
}

fn print_plan(
    repo: &RepoId,
    local: &LocalPlan,
    comparison: Option<&plan::Comparison>,
    head: Option<String>,
) {
    let scope = if local.whole {
        "the whole archive"
    } else {
        "a run selection"
    };
    outln!(
        "hub-plan for {repo}: {} run(s), {} file(s), {} bytes ({scope})",
        local.runs.len(),
        local.files.len(),
        local.bytes()
    );
    if let Some(head) = head {
        outln!("compared with the head of main, commit {head}");
    }
    for (index, file) in local.files.iter().enumerate() {
        let status = comparison.map_or("", |c| status_name(c.statuses[index]));
        outln!(
            "  {status:<9} {:>12}  {}  {}",
            file.size,
            file.sha256,
            file.path
        );
    }
    for name in &local.not_published {
        outln!("  {:<9} {:>12}  {:<64}  {}", "not published", "", "", name);
    }
    if let Some(comparison) = comparison {
        for path in &comparison.deletions {
            outln!("  {:<9} {:>12}  {:<64}  {path}", "delete", "", "");
        }
        let count =
            |wanted: FileStatus| comparison.statuses.iter().filter(|s| **s == wanted).count();
        outln!(
            "{} new, {} changed, {} unchanged, {} to delete",
            count(FileStatus::New),
            count(FileStatus::Changed),
            count(FileStatus::Unchanged),
            comparison.deletions.len()
        );
    }
}

pub fn push(globals: &Globals, args: PushArgs) -> Result<Exit, CliError> {
    let repo = RepoId::parse(&args.repo)?;
    let selection = selection(args.runs)?;
    let client = client()?;
    let archive = globals.archive()?;
    let session = globals.write_session(&archive)?;
    let options = PushOptions {
        create: args.create,
        private: args.private,
        message: args.message,
    };
    let bar = progress_bar(globals.quiet || args.json);
    let report = push::push(&session, &client, &repo, &selection, &options, bar)?;
    if args.json {
        print_json(&report)?;
        return Ok(Exit::Ok);
    }
    if !globals.quiet {
        if report.created_repo {
            outln!("created the dataset repository {repo}");
        }
        if report.committed {
            outln!(
                "pushed {} run(s) to {repo}: {} file(s) sent ({} as LFS objects, {} already stored), {} unchanged, {} deleted",
                report.runs.len(),
                report.sent,
                report.lfs,
                report.lfs_already_stored,
                report.unchanged,
                report.deleted.len()
            );
        } else {
            outln!("{repo} already holds exactly this archive; no commit was made");
        }
        outln!(
            "cite it as: babel hub-pull --repo {repo} --revision {} --dest DIR",
            report.commit
        );
        if let Some(head) = &report.history_head {
            outln!("archive history head {head} (named in the commit description)");
        }
    }
    outln!("{}", report.commit);
    Ok(Exit::Ok)
}

pub fn pull(globals: &Globals, args: PullArgs) -> Result<Exit, CliError> {
    let repo = RepoId::parse(&args.repo)?;
    let revision = Revision::parse(&args.revision)?;
    let client = client()?;
    let options = PullOptions {
        max_file_size: args.max_file_size,
        max_total_size: args.max_total_size,
    };
    let bar = progress_bar(globals.quiet || args.json);
    let report = pull::pull(
        &client,
        &repo,
        &revision,
        &args.dest,
        &options,
        bar.as_ref(),
    )?;
    if args.json {
        print_json(&report)?;
        return Ok(Exit::Ok);
    }
    if let Some(name) = &report.resolved_from {
        outln!("resolved {name} to commit {}", report.commit);
    }
    if !globals.quiet {
        let checksums = if report.checksums_verified {
            "checksums.sha256 verified"
        } else {
            "no checksums.sha256 in this commit (every file was checked against the Hub's IDs)"
        };
        outln!(
            "restored {repo} at {} into {}: {} file(s), {} bytes ({} downloaded, {} reused); {checksums}",
            report.commit,
            report.dest.display(),
            report.files,
            report.bytes,
            report.downloaded,
            report.reused
        );
        if let Some(head) = &report.history_head {
            outln!(
                "history head as published: {head} (check later with `babel validate --since {head}`)"
            );
        }
        if !report.left_out.is_empty() {
            outln!(
                "{} run(s) of the pushed archive were not published and are not restored: {} (recorded in the history, `babel log`)",
                report.left_out.len(),
                report.left_out.join(", ")
            );
        }
        outln!(
            "validate: ok ({} run(s), {} file(s), {} record(s) checked)",
            report.validation.runs,
            report.validation.files,
            report.validation.records
        );
    }
    Ok(Exit::Ok)
}
