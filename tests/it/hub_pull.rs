//! `babel hub-pull` against the local test Hub: a round trip restores the archive byte
//! for byte, and a hostile or broken server is refused with a clear message, with nothing
//! written outside the staging folder and no half-restored archive in DIR. "After
//! downloading a Hub repository, run ... init to recreate empty local operational
//! directories that remote repositories cannot preserve. Then run validate." (spec,
//! Recovery and restoration): hub-pull does both before the archive appears.

use std::process::Output;

use serde_json::Value;

use crate::common::Env;
use crate::hub_server::{
    Failure, FileFault, HubServer, LengthHeader, Origin, Request, RequestMatch, Response,
    Visibility,
};
use crate::hub_support::{archive, entries, hub, push, text, tree};

const REPO: &str = "tester/bench";
/// A regular file and the LFS file of the archive the tests push.
const REGULAR: &str = "runs/r1/raw/0001-original.jsonl";
const LFS: &str = "runs/r1/attachments/weights.bin";

fn pushed() -> (Env, HubServer, String) {
    let env = archive();
    let server = HubServer::start();
    let commit = push(&env, &server, REPO, &["--create"]);
    server.clear_requests();
    (env, server, commit)
}

fn pull(env: &Env, server: &HubServer, revision: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "hub-pull",
        "--repo",
        REPO,
        "--revision",
        revision,
        "--dest",
        "restored",
    ];
    args.extend_from_slice(extra);
    hub(env, server, &args).output().unwrap()
}

/// A failed pull: exit `code`, stderr containing `needle`; DIR holds no archive, only the
/// staging folder if anything, and nothing appeared beside DIR.
fn assert_refused(env: &Env, output: &Output, code: i32, needle: &str) {
    assert_eq!(output.status.code(), Some(code), "{}", text(output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(needle) && stderr.contains("hint:"),
        "{needle:?} not in: {stderr}"
    );
    let dest = env.path().join("restored");
    assert!(!dest.join("babel-archive.json").exists());
    let inside = entries(&dest);
    assert!(
        inside.is_empty() || (inside.len() == 1 && inside[0].starts_with(".babel-pull-")),
        "DIR holds more than the staging folder: {inside:?}"
    );
    assert_eq!(
        entries(env.path()),
        if dest.exists() {
            vec!["archive", "inputs", "restored"]
        } else {
            vec!["archive", "inputs"]
        },
        "something was written beside DIR"
    );
}

#[test]
fn a_round_trip_restores_the_archive_byte_for_byte_and_it_validates() {
    let env = archive();
    let server = HubServer::start();
    // Text files of 1 KiB or more go to LFS too, so the Hub rewrites .gitattributes to
    // track them: the pull must accept the rewritten file.
    server.set_lfs_threshold(Some(1024));
    let commit = push(&env, &server, REPO, &["--create"]);
    let gitattributes = server.file(REPO, &commit, ".gitattributes").unwrap();
    let gitattributes = String::from_utf8_lossy(gitattributes.bytes()).into_owned();
    assert!(
        gitattributes.contains("runs/r1/manifest.json filter=lfs"),
        "{gitattributes}"
    );
    server.clear_requests();
    let output = pull(&env, &server, &commit, &["--json"]);
    assert!(output.status.success(), "{}", text(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["commit"], commit.as_str());
    assert_eq!(report["checksums_verified"], true);
    assert_eq!(report["validation"]["ok"], true);
    let restored = env.path().join("restored");
    assert_eq!(
        tree(&restored),
        tree(&env.root()),
        "the restored tree differs from the pushed one"
    );
    // babel validate on the restored root, as a user would run it.
    let validate = assert_cmd::Command::new(env!("CARGO_BIN_EXE_babel"))
        .arg("--root")
        .arg(&restored)
        .arg("validate")
        .output()
        .unwrap();
    assert!(validate.status.success(), "{}", text(&validate));
    assert!(
        restored.join(".babel").is_dir(),
        "init recreated the operational folder"
    );
    assert!(
        !entries(&restored)
            .iter()
            .any(|e| e.starts_with(".babel-pull-"))
    );

    // A 40-hex revision needs no repo info call; LFS bytes came from the CDN without a
    // token, and every Hub answer named the commit.
    let log = server.requests();
    assert!(!log.iter().any(|r| r.path().contains("/revision/")));
    let lfs_files = server
        .files(REPO, &commit)
        .unwrap()
        .values()
        .filter(|file| file.is_lfs())
        .count();
    let cdn: Vec<_> = log.iter().filter(|r| r.origin == Origin::Cdn).collect();
    assert!(lfs_files > 1, "the fixture has several LFS files");
    assert_eq!(cdn.len(), lfs_files, "one storage download per LFS file");
    assert!(
        cdn.iter()
            .all(|r| !r.has_authorization() && r.status == 200)
    );
    assert!(
        log.iter()
            .all(|r| r.origin == Origin::Hub || !r.has_authorization())
    );
}

#[test]
fn revision_main_is_resolved_once_and_the_commit_printed() {
    let (env, server, commit) = pushed();
    let output = pull(&env, &server, "main", &[]);
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!("resolved main to commit {commit}")),
        "{stdout}"
    );
    // Every download used the resolved commit, never the moving branch.
    assert!(
        server
            .requests()
            .iter()
            .filter(|r| r.path().contains("/resolve/"))
            .all(|r| r.path().contains(&format!("/resolve/{commit}/")))
    );
    let upper = pull(&env, &server, &commit.to_uppercase(), &[]);
    assert_eq!(upper.status.code(), Some(2), "{}", text(&upper));
    let unknown = "0".repeat(40);
    let missing = hub(
        &env,
        &server,
        &[
            "hub-pull",
            "--repo",
            REPO,
            "--revision",
            &unknown,
            "--dest",
            "other",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing));
    assert!(
        text(&missing).contains(&format!("revision \"{unknown}\" was not found in {REPO}")),
        "{}",
        text(&missing)
    );
}

#[test]
fn hostile_paths_are_refused_before_anything_is_downloaded() {
    let cases = [
        "../escape.txt",
        "/abs.txt",
        "a\\b.txt",
        "a//b.txt",
        "C:/x.txt",
        ".git/config",
        ".babel/journal.json",
        "runs/R1/manifest.json",
        "babel-archive.json/x",
    ];
    for path in cases {
        let (env, server, commit) = pushed();
        server.add_tree_entry(REPO, path, b"evil\n");
        let output = pull(&env, &server, &commit, &[]);
        assert_refused(&env, &output, 1, "unsafe path");
        assert!(
            !server
                .requests()
                .iter()
                .any(|r| r.path().contains("/resolve/")),
            "{path}: a file was downloaded before the list was checked"
        );
        assert!(
            !env.path().join("escape.txt").exists() && !std::path::Path::new("/abs.txt").exists()
        );
    }
}

#[test]
fn a_server_that_echoes_the_token_never_gets_it_printed() {
    // No secret reaches an error message, though a server may quote the token it was
    // sent: in a path, or far into a message babel shortens.
    let (env, server, commit) = pushed();
    let token = server.token().to_owned();
    server.add_tree_entry(REPO, &format!("../{token}"), b"evil\n");
    let output = pull(&env, &server, &commit, &[]);
    assert_refused(&env, &output, 1, "an entry holds the token babel sent");
    assert!(!text(&output).contains(&token), "{}", text(&output));
    // The plan, which compares with the same listing, prints it nowhere either.
    for extra in [&[][..], &["--json"]] {
        let mut args = vec!["hub-plan", "--repo", REPO];
        args.extend_from_slice(extra);
        let output = hub(&env, &server, &args).output().unwrap();
        assert!(output.status.success(), "{}", text(&output));
        assert!(
            text(&output).contains("holds the token"),
            "{}",
            text(&output)
        );
        assert!(!text(&output).contains(&token), "{}", text(&output));
    }

    let (env, server, commit) = pushed();
    let message = format!("{} {token}", "x".repeat(285));
    server.fail_next(
        1,
        RequestMatch::any().method("GET").path_contains("/tree/"),
        Failure::status(403).with_header("X-Error-Message", &message),
    );
    let output = pull(&env, &server, &commit, &[]);
    assert_refused(&env, &output, 1, "HTTP 403");
    let shown = text(&output);
    assert!(!shown.contains(&token[..token.len() / 2]), "{shown}");
    assert!(shown.contains("hf_***"), "{shown}");
}

#[test]
fn a_listing_path_longer_than_babel_accepts_is_refused_before_more_is_kept() {
    // Each page of a listing is bounded, not their number: a path no archive holds
    // is refused as the page is read, before the listing grows with it.
    let (env, server, commit) = pushed();
    server.add_tree_entry(REPO, &format!("runs/{}", "x".repeat(1020)), b"x\n");
    let output = pull(&env, &server, &commit, &[]);
    assert_refused(
        &env,
        &output,
        1,
        "a path of 1025 bytes, more than the 1024 babel accepts",
    );
}

/// The listing's answers, each within what babel reads of one (64 MiB), and its pages:
/// a next-page link that names a page already read is a loop, refused before more is
/// asked for, and a page larger than the bound is refused before it is parsed.
#[test]
fn a_listing_that_loops_or_answers_too_much_is_refused() {
    let (env, server, commit) = pushed();
    let endpoint = server.endpoint().to_owned();
    answer_listings(&server, move |request| {
        let again = format!("<{endpoint}{}>; rel=\"next\"", request.target);
        listing(b"[]".to_vec()).with_header("Link", &again)
    });
    let output = pull(&env, &server, &commit, &[]);
    assert_refused(&env, &output, 1, "the listing's pages loop or never end");
    let listed = server
        .requests()
        .iter()
        .filter(|r| r.path().contains("/tree/"))
        .count();
    assert_eq!(listed, 1, "the page a link named again was asked for again");

    let (env, server, commit) = pushed();
    answer_listings(&server, |_| {
        // An empty list padded with spaces: valid JSON, so only its size refuses it.
        let mut body = vec![b' '; (64 << 20) + 1];
        body[0] = b'[';
        *body.last_mut().unwrap() = b']';
        listing(body)
    });
    let output = pull(&env, &server, &commit, &[]);
    assert_refused(&env, &output, 1, "the answer is larger than 67108864 bytes");
}

/// Answers every request for a tree listing with `answer`'s response.
fn answer_listings(
    server: &HubServer,
    answer: impl Fn(&Request) -> Response + Send + Sync + 'static,
) {
    server.set_interceptor(move |request| {
        (request.method == "GET" && request.path().contains("/tree/")).then(|| answer(request))
    });
}

/// A listing page with this body.
fn listing(body: Vec<u8>) -> Response {
    Response::new(200)
        .with_header("Content-Type", "application/json")
        .with_body(body)
}

#[test]
fn a_file_larger_than_declared_is_refused() {
    for length in [LengthHeader::Actual, LengthHeader::Omitted] {
        let (env, server, commit) = pushed();
        let fault = FileFault::ExtraBytes {
            extra: b"SURPLUS".to_vec(),
            length,
        };
        server.set_file_fault(REPO, REGULAR, fault);
        let output = pull(&env, &server, &commit, &[]);
        assert_refused(&env, &output, 1, "more than the");
        assert!(text(&output).contains(REGULAR));
    }
}

#[test]
fn wrong_bytes_are_refused_by_their_git_blob_id_or_sha256() {
    for (path, needle) in [(REGULAR, "git blob ID"), (LFS, "SHA-256")] {
        let (env, server, commit) = pushed();
        let size = server.file(REPO, &commit, path).unwrap().bytes().len();
        server.set_file_fault(REPO, path, FileFault::WrongBytes(vec![b'x'; size]));
        let output = pull(&env, &server, &commit, &[]);
        assert_refused(&env, &output, 1, needle);
        assert!(text(&output).contains("tampered"), "{}", text(&output));
    }
}

#[test]
fn a_redirect_to_another_host_is_followed_without_the_token() {
    let (env, server, commit) = pushed();
    server.set_file_fault(REPO, LFS, FileFault::RedirectToForeign);
    let output = pull(&env, &server, &commit, &[]);
    assert!(output.status.success(), "{}", text(&output));
    let foreign: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.origin == Origin::Foreign)
        .collect();
    assert_eq!(foreign.len(), 1);
    assert!(
        !foreign[0].has_authorization(),
        "the token went to another host: {}",
        foreign[0]
    );
    assert_eq!(tree(&env.path().join("restored")), tree(&env.root()));
}

#[test]
fn an_endless_redirect_loop_is_refused() {
    let (env, server, commit) = pushed();
    server.set_file_fault(REPO, REGULAR, FileFault::RedirectLoop);
    let output = pull(&env, &server, &commit, &[]);
    assert_refused(&env, &output, 1, "more than 5 redirects");
    let hops = server
        .requests()
        .iter()
        .filter(|r| r.path().ends_with("/raw/0001-original.jsonl"))
        .count();
    assert_eq!(hops, 6, "the first request and five redirects");
}

#[test]
fn rate_limits_during_a_pull_are_waited_out_then_fail_after_the_cap() {
    let (env, server, commit) = pushed();
    let resolve = || RequestMatch::any().method("GET").path_contains("/resolve/");
    server.fail_next(
        3,
        resolve(),
        Failure::too_many_requests(0).with_rate_limit(0),
    );
    let output = pull(&env, &server, &commit, &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(
        server.requests().iter().filter(|r| r.status == 429).count(),
        3
    );

    let env = archive();
    let server = HubServer::start();
    let commit = push(&env, &server, REPO, &["--create"]);
    server.fail_next(1000, resolve(), Failure::service_unavailable());
    let output = pull(&env, &server, &commit, &[]);
    assert_refused(&env, &output, 4, "the Hub answered HTTP 503 6 time(s)");
}

#[test]
fn a_cut_download_resumes_with_a_range_request() {
    let (env, server, commit) = pushed();
    server.set_file_fault(
        REPO,
        LFS,
        FileFault::DropAfter {
            after: 1000,
            times: 1,
        },
    );
    let output = pull(&env, &server, &commit, &[]);
    assert!(output.status.success(), "{}", text(&output));
    let cdn: Vec<(String, u16, Option<String>)> = server
        .requests()
        .iter()
        .filter(|r| r.origin == Origin::Cdn)
        .map(|r| {
            (
                r.path().to_owned(),
                r.status,
                r.header("range").map(str::to_owned),
            )
        })
        .collect();
    // Every LFS file once, and the cut one a second time from where it broke off.
    let resumed: Vec<_> = cdn.iter().filter(|c| c.1 == 206).collect();
    assert_eq!(resumed.len(), 1, "{cdn:?}");
    assert_eq!(resumed[0].2.as_deref(), Some("bytes=1000-"));
    let files: std::collections::BTreeSet<&str> = cdn.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(cdn.len(), files.len() + 1, "{cdn:?}");
    assert_eq!(tree(&env.path().join("restored")), tree(&env.root()));
}

#[test]
fn a_second_pull_reuses_the_files_a_failed_one_verified() {
    let (env, server, commit) = pushed();
    // Files download in path order; the last run's records (an LFS file) fail the first
    // time.
    let late = "runs/s1/records/0001.parquet";
    let size = server.file(REPO, &commit, late).unwrap().bytes().len();
    server.set_file_fault(REPO, late, FileFault::WrongBytes(vec![b'x'; size]));
    let first = pull(&env, &server, &commit, &[]);
    assert_refused(&env, &first, 1, "its bytes have the SHA-256");
    let fetched_first: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path().contains("/resolve/"))
        .map(|r| r.path().to_owned())
        .collect();
    assert!(fetched_first.len() > 5, "{fetched_first:?}");
    server.clear_faults();
    server.clear_requests();
    let second = pull(&env, &server, &commit, &["--json"]);
    assert!(second.status.success(), "{}", text(&second));
    let report: Value = serde_json::from_slice(&second.stdout).unwrap();
    let fetched: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path().contains("/resolve/"))
        .map(|r| r.path().to_owned())
        .collect();
    assert_eq!(
        fetched,
        vec![format!("/datasets/{REPO}/resolve/{commit}/{late}")],
        "only the file that failed is downloaded again"
    );
    assert_eq!(report["downloaded"], 1);
    assert_eq!(report["reused"], report["files"].as_u64().unwrap() - 1);
    assert_eq!(tree(&env.path().join("restored")), tree(&env.root()));
}

#[test]
fn size_ceilings_are_enforced_before_downloading() {
    let (env, server, commit) = pushed();
    let output = pull(&env, &server, &commit, &["--max-file-size", "1KiB"]);
    assert_refused(&env, &output, 1, "--max-file-size");
    let output = pull(&env, &server, &commit, &["--max-total-size", "4KiB"]);
    assert_refused(&env, &output, 1, "--max-total-size");
    assert!(
        !server
            .requests()
            .iter()
            .any(|r| r.path().contains("/resolve/"))
    );
    let output = pull(&env, &server, &commit, &["--max-file-size", "lots"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
}

#[test]
fn an_answer_from_another_commit_is_refused() {
    let (env, server, commit) = pushed();
    let other = "0123456789abcdef0123456789abcdef01234567";
    server.set_interceptor(move |request| {
        (request.method == "GET" && request.path().ends_with("/babel-archive.json")).then(|| {
            Response::new(200)
                .with_header("X-Repo-Commit", other)
                .with_body(b"{}\n".to_vec())
        })
    });
    let output = pull(&env, &server, &commit, &[]);
    assert_refused(&env, &output, 1, &format!("served it from commit {other}"));
}

#[test]
fn the_destination_must_be_new_or_empty() {
    let (env, server, commit) = pushed();
    let output = hub(
        &env,
        &server,
        &[
            "hub-pull",
            "--repo",
            REPO,
            "--revision",
            &commit,
            "--dest",
            "archive",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("already holds a babel archive"));
    let output = hub(
        &env,
        &server,
        &[
            "hub-pull",
            "--repo",
            REPO,
            "--revision",
            &commit,
            "--dest",
            "inputs",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("is not empty"));
}

#[test]
fn a_commit_without_a_babel_archive_is_refused() {
    let env = Env::new();
    let server = HubServer::start();
    let initial = server.create_repo(REPO, Visibility::Public);
    let output = pull(&env, &server, initial.as_str(), &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("does not hold a babel archive"));
    assert!(!env.path().join("restored").exists());
}

#[test]
fn a_checksum_list_that_disagrees_with_the_files_is_refused() {
    let (env, server, commit) = pushed();
    let listed = server
        .file(REPO, &commit, "checksums.sha256")
        .unwrap()
        .bytes()
        .to_vec();
    let edited = String::from_utf8(listed)
        .unwrap()
        .lines()
        .filter(|line| !line.ends_with("babel-archive.json"))
        .map(|line| format!("{line}\n"))
        .collect::<String>();
    let tampered = server
        .commit(REPO)
        .file("checksums.sha256", edited.as_bytes())
        .apply()
        .unwrap();
    let output = pull(&env, &server, tampered.as_str(), &[]);
    assert_refused(
        &env,
        &output,
        1,
        "babel-archive.json is in the commit but not in the list",
    );
}

#[test]
fn a_commit_whose_archive_does_not_validate_is_not_restored() {
    let (env, server, commit) = pushed();
    // A consistent commit (the file list's IDs and checksums.sha256 agree with the bytes)
    // of an archive whose manifest no longer matches a records file.
    let mut records = server
        .file(REPO, &commit, REGULAR)
        .unwrap()
        .bytes()
        .to_vec();
    records.extend_from_slice(b"\n");
    let listed = String::from_utf8(
        server
            .file(REPO, &commit, "checksums.sha256")
            .unwrap()
            .bytes()
            .to_vec(),
    )
    .unwrap();
    let sha = |bytes: &[u8]| {
        use sha2::Digest;
        sha2::Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let edited: String = listed
        .lines()
        .map(|line| {
            if line.ends_with(REGULAR) {
                format!("{}  {REGULAR}\n", sha(&records))
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    let damaged = server
        .commit(REPO)
        .file(REGULAR, &records)
        .file("checksums.sha256", edited.as_bytes())
        .apply()
        .unwrap();
    let output = pull(&env, &server, damaged.as_str(), &[]);
    assert_refused(&env, &output, 1, "validation finding");
    assert!(
        text(&output).contains(&format!("{REGULAR}: [size]")),
        "{}",
        text(&output)
    );
}

use crate::hub_support::head_of;

#[test]
fn the_commit_names_the_history_head_and_the_pull_restores_that_history() {
    // "The log is published with the archive; hub-pull verifies it; a commit made by a
    // pushed archive names its head." (issue 13)
    let (env, server, commit) = pushed();
    let head = head_of(&env.root());
    let info = server.commits(REPO).pop().unwrap();
    assert_eq!(info.id.as_str(), commit);
    assert_eq!(
        info.description,
        format!("babel archive history head {head}")
    );
    let output = pull(&env, &server, &commit, &["--json"]);
    assert!(output.status.success(), "{}", text(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["history_head"], head.as_str());
    assert_eq!(report["left_out"], serde_json::json!([]));
    let restored = env.path().join("restored");
    assert_eq!(head_of(&restored), head);
}

#[test]
fn a_commit_whose_history_was_rewritten_is_not_restored() {
    let (env, server, commit) = pushed();
    // Drop the last history entry and point the head at the one before: a consistent
    // log, checksums updated to match, but the last manifest no longer matches it.
    let log = server.file(REPO, &commit, "history/log.jsonl").unwrap();
    let log = String::from_utf8(log.bytes().to_vec()).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    let kept = lines[..lines.len() - 1].join("\n") + "\n";
    let sha = |bytes: &[u8]| {
        use sha2::Digest;
        sha2::Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let head = format!(
        "{{\"seq\":{},\"sha256\":\"{}\"}}\n",
        lines.len() - 1,
        sha(format!("{}\n", lines[lines.len() - 2]).as_bytes())
    );
    let listed = String::from_utf8(
        server
            .file(REPO, &commit, "checksums.sha256")
            .unwrap()
            .bytes()
            .to_vec(),
    )
    .unwrap();
    let edited: String = listed
        .lines()
        .map(|line| match line.rsplit_once("  ") {
            Some((_, "history/log.jsonl")) => {
                format!("{}  history/log.jsonl\n", sha(kept.as_bytes()))
            }
            Some((_, "history/HEAD")) => format!("{}  history/HEAD\n", sha(head.as_bytes())),
            _ => format!("{line}\n"),
        })
        .collect();
    let rewritten = server
        .commit(REPO)
        .file("history/log.jsonl", kept.as_bytes())
        .file("history/HEAD", head.as_bytes())
        .file("checksums.sha256", edited.as_bytes())
        .apply()
        .unwrap();
    let output = pull(&env, &server, rewritten.as_str(), &[]);
    assert_refused(&env, &output, 1, "validation finding");
    assert!(text(&output).contains("[history]"), "{}", text(&output));
}

#[test]
fn a_history_other_than_the_one_the_commit_names_is_not_restored() {
    // "hub-pull checks that the head named in the Hub commit's description equals the
    // head of the history it downloaded" (issue 18): a later commit that keeps the
    // description of the published one but carries a history that ends elsewhere (an
    // archive that grew after the push, uploaded by another tool) is refused before
    // anything is restored.
    let (env, server, commit) = pushed();
    let head = head_of(&env.root());
    env.babel(&["run", "create", "late", "--model", "m"])
        .assert()
        .success();
    let grown = |path: &str| std::fs::read(env.archived(path)).unwrap();
    let mut listed = String::from_utf8(
        server
            .file(REPO, &commit, "checksums.sha256")
            .unwrap()
            .bytes()
            .to_vec(),
    )
    .unwrap();
    let manifest = grown("runs/late/manifest.json");
    listed.push_str(&format!(
        "{}  runs/late/manifest.json\n",
        crate::common::sha256_hex(&manifest)
    ));
    let mut lines: Vec<String> = listed
        .lines()
        .map(|line| match line.rsplit_once("  ") {
            Some((_, path @ ("history/log.jsonl" | "history/HEAD"))) => {
                format!("{}  {path}", crate::common::sha256_hex(&grown(path)))
            }
            _ => line.to_owned(),
        })
        .collect();
    lines.sort_by(|a, b| {
        a.split_once("  ")
            .unwrap()
            .1
            .cmp(b.split_once("  ").unwrap().1)
    });
    let checksums = lines.join("\n") + "\n";
    let later = server
        .commit(REPO)
        .description(&format!("babel archive history head {head}"))
        .file("history/log.jsonl", &grown("history/log.jsonl"))
        .file("history/HEAD", &grown("history/HEAD"))
        .file("runs/late/manifest.json", &manifest)
        .file("checksums.sha256", checksums.as_bytes())
        .apply()
        .unwrap();
    let output = pull(&env, &server, later.as_str(), &[]);
    assert_refused(&env, &output, 1, &format!("names history head {head}"));
}

#[test]
fn a_publication_of_some_runs_restores_with_the_rest_recorded_as_left_out() {
    let env = archive();
    let server = HubServer::start();
    let pushed_head = head_of(&env.root());
    let commit = push(&env, &server, REPO, &["--create", "--runs", "r1"]);
    let output = pull(&env, &server, &commit, &[]);
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout
            .contains("1 run(s) of the pushed archive were not published and are not restored: r2"),
        "{stdout}"
    );
    let restored = env.path().join("restored");
    let babel = |args: &[&str]| {
        assert_cmd::Command::new(env!("CARGO_BIN_EXE_babel"))
            .arg("--root")
            .arg(&restored)
            .args(args)
            .output()
            .unwrap()
    };
    let log = babel(&["log", "--json"]);
    assert!(log.status.success(), "{}", text(&log));
    let log: Value = serde_json::from_slice(&log.stdout).unwrap();
    let last = log["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["operation"], "hub-pull");
    assert_eq!(
        last["manifests"]["runs/r2/manifest.json"],
        Value::Null,
        "{last}"
    );
    // The restored history grew from the pushed one: the cited head still holds, but this
    // copy cannot vouch for the run the head held and the publication left out, so the
    // anchor check names it instead of passing it over.
    let since = babel(&["validate", "--since", &pushed_head]);
    assert_eq!(since.status.code(), Some(1), "{}", text(&since));
    let since = text(&since);
    assert!(!since.contains("no longer holds entry"), "{since}");
    assert!(
        since.contains("runs/r2/manifest.json: [history] it existed at the entry")
            && since.contains("recorded it as absent from this copy"),
        "{since}"
    );
    assert!(babel(&["validate"]).status.success());
    // A run folder that appears later under the left-out name is not the history's.
    std::fs::create_dir_all(restored.join("runs/r2")).unwrap();
    std::fs::copy(
        env.archived("runs/r2/manifest.json"),
        restored.join("runs/r2/manifest.json"),
    )
    .unwrap();
    let validate = babel(&["validate"]);
    assert_eq!(validate.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&validate.stdout)
            .contains("runs/r2/manifest.json: [history] history entry"),
        "{}",
        text(&validate)
    );
}
