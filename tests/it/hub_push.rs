//! `babel hub-plan` and `babel hub-push` against the local test Hub: what is published,
//! one commit per push with the planned parent, unchanged files not sent again, deletions,
//! run selections, the 412 of a concurrent push, retries and their cap, and where the
//! token goes. Expected values are computed here from the archive's own files (SHA-256,
//! git blob IDs), never taken from babel's output.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::common::Env;
use crate::hub_server::{Failure, HubServer, Origin, RequestMatch, Visibility};
use crate::hub_support::{archive, hub, push, text, tree};

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What the published set must be, read from the archive's manifests: the marker, each
/// run's manifest and registered files, and every registry file.
fn registered_files(env: &Env) -> BTreeSet<String> {
    // The marker, the history, and the dataset card the test archive keeps at ROOT.
    let mut files = BTreeSet::from(
        [
            "babel-archive.json",
            "history/HEAD",
            "history/log.jsonl",
            "README.md",
        ]
        .map(str::to_owned),
    );
    for run in ["r1", "r2", "s1"] {
        let manifest: Value = serde_json::from_slice(
            &std::fs::read(env.archived(&format!("runs/{run}/manifest.json"))).unwrap(),
        )
        .unwrap();
        files.insert(format!("runs/{run}/manifest.json"));
        for import in manifest["imports"].as_array().unwrap() {
            for key in ["raw", "records"] {
                files.insert(format!(
                    "runs/{run}/{}",
                    import[key]["path"].as_str().unwrap()
                ));
            }
        }
        for attachment in manifest["attachments"].as_array().unwrap() {
            files.insert(format!(
                "runs/{run}/{}",
                attachment["path"].as_str().unwrap()
            ));
        }
    }
    files.extend(crate::hub_support::registry_files(env));
    files
}

/// `sha256sum`'s output for these files of the archive, sorted by path.
fn expected_checksums(env: &Env, files: &BTreeSet<String>) -> String {
    files
        .iter()
        .map(|path| {
            format!(
                "{}  {path}\n",
                sha256_hex(&std::fs::read(env.archived(path)).unwrap())
            )
        })
        .collect()
}

fn plan_json(env: &Env, server: &HubServer, repo: &str, extra: &[&str]) -> Value {
    let mut args = vec!["hub-plan", "--repo", repo, "--json"];
    args.extend_from_slice(extra);
    let output = hub(env, server, &args).output().unwrap();
    assert!(output.status.success(), "{}", text(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

fn statuses(plan: &Value) -> BTreeMap<String, String> {
    plan["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["status"].as_str().unwrap_or("?").to_owned(),
            )
        })
        .collect()
}

fn commit_lines(server: &HubServer) -> Vec<Vec<Value>> {
    server
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path().contains("/commit/"))
        .map(|r| {
            r.body_text()
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect()
        })
        .collect()
}

#[test]
fn hub_plan_publishes_exactly_what_the_archive_manages() {
    let env = archive();
    // Published beside what the archive registers: the dataset card. Never published:
    // what else a user keeps at ROOT (notes, a token, a key, an export), the operational
    // folder, and the checksums list and .gitattributes a plain download leaves (the
    // first is generated, the second the Hub's).
    let card = format!("---\n{}---\n# capitals study\n", babel::hub::card::CONFIGS);
    std::fs::write(env.archived("README.md"), card).unwrap();
    std::fs::create_dir_all(env.archived("notes")).unwrap();
    std::fs::write(env.archived("notes/method.txt"), "zero-shot\n").unwrap();
    std::fs::write(env.archived("notes.txt"), "todo\n").unwrap();
    std::fs::write(env.archived(".env"), "HF_TOKEN=hf_secret\n").unwrap();
    std::fs::create_dir_all(env.archived(".ssh")).unwrap();
    std::fs::write(env.archived(".ssh/id_rsa"), "-----BEGIN KEY-----\n").unwrap();
    std::fs::create_dir_all(env.archived("eee-out/data")).unwrap();
    std::fs::write(env.archived("eee-out/data/x.json"), "{}").unwrap();
    std::fs::write(env.archived(".babel/scratch"), "x").unwrap();
    std::fs::write(env.archived("checksums.sha256"), "stale\n").unwrap();
    std::fs::write(env.archived(".gitattributes"), "*.bin filter=lfs\n").unwrap();
    let server = HubServer::start();
    let plan = plan_json(&env, &server, "tester/new-repo", &[]);
    assert_eq!(plan["remote"]["state"], "missing");
    assert_eq!(
        plan["not_published"],
        json!([".env", ".ssh", "eee-out", "notes", "notes.txt"])
    );
    let text = hub(&env, &server, &["hub-plan", "--repo", "tester/new-repo"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(
        text.contains("not published") && text.contains(".env"),
        "{text}"
    );
    assert!(!text.contains("hf_secret"), "{text}");
    let mut expected = registered_files(&env);
    expected.insert("README.md".to_owned());
    let checksums = expected_checksums(&env, &expected);
    expected.insert("checksums.sha256".to_owned());
    let listed: BTreeMap<String, &Value> = plan["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap().to_owned(), f))
        .collect();
    assert_eq!(listed.keys().cloned().collect::<BTreeSet<_>>(), expected);
    for (path, file) in &listed {
        let bytes = if path == "checksums.sha256" {
            checksums.clone().into_bytes()
        } else {
            std::fs::read(env.archived(path)).unwrap()
        };
        assert_eq!(file["size"], json!(bytes.len()), "{path}");
        assert_eq!(file["sha256"], json!(sha256_hex(&bytes)), "{path}");
        assert_eq!(
            file["status"], "new",
            "{path}: the repository does not exist"
        );
    }
    assert_eq!(plan["whole_archive"], true);
    assert_eq!(plan["runs"], json!(["r1", "r2", "s1"]));
    // The plan only reads: no request wrote anything.
    assert!(server.requests().iter().all(|r| r.method == "GET"));
}

#[test]
fn hub_plan_refuses_an_archive_that_validate_finds_faulty() {
    let env = archive();
    let path = env.archived("runs/r1/attachments/results.json");
    std::fs::write(&path, "{\"acc\": 0.9}\n").unwrap();
    let server = HubServer::start();
    let output = hub(&env, &server, &["hub-plan", "--repo", "tester/x"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("publishes only an archive that validates")
            && stderr.contains("runs/r1/attachments/results.json: [sha256]")
            && stderr.contains("hint:"),
        "{stderr}"
    );
    let push = hub(
        &env,
        &server,
        &["hub-push", "--repo", "tester/x", "--create"],
    )
    .output()
    .unwrap();
    assert_eq!(push.status.code(), Some(1), "{}", text(&push));
    assert!(
        server.requests().is_empty(),
        "nothing is sent from a faulty archive"
    );
}

#[test]
fn hub_push_publishes_one_commit_that_holds_exactly_the_plan() {
    let env = archive();
    let server = HubServer::start();
    let repo = "tester/bench";
    let commit = push(&env, &server, repo, &["--create", "-m", "first archive"]);
    let history = server.commits(repo);
    assert_eq!(
        history.len(),
        2,
        "the Hub's initial commit, then exactly one push"
    );
    assert_eq!(history[1].id.as_str(), commit);
    assert_eq!(history[1].summary, "first archive");
    assert_eq!(history[1].parent.as_ref(), Some(&history[0].id));
    assert_eq!(server.head(repo, "main").unwrap().as_str(), commit);

    let stored = server.files(repo, &commit).unwrap();
    let mut bytes = crate::hub_server::snapshot_bytes(&stored);
    assert!(
        bytes.remove(".gitattributes").is_some(),
        "the Hub-managed file stays"
    );
    let checksums = bytes.remove("checksums.sha256").expect("checksums.sha256");
    let registered = registered_files(&env);
    assert_eq!(
        String::from_utf8(checksums).unwrap(),
        expected_checksums(&env, &registered)
    );
    let archived: BTreeMap<String, Vec<u8>> = tree(&env.root())
        .into_iter()
        .filter(|(path, _)| registered.contains(path))
        .collect();
    assert_eq!(bytes, archived, "the commit holds the archive's bytes");
    assert!(
        stored["runs/r1/attachments/weights.bin"].is_lfs(),
        "binary goes to LFS, as the Hub decided"
    );
    assert!(
        stored["runs/r1/records/0001.parquet"].is_lfs(),
        "Parquet records go to LFS (the Hub's default patterns)"
    );
    assert!(!stored["runs/r1/manifest.json"].is_lfs());

    // Each presigned PUT carried no token; verify and the API calls did, on the Hub only.
    let log = server.requests();
    let puts: Vec<_> = log.iter().filter(|r| r.method == "PUT").collect();
    assert_eq!(puts.len(), stored.values().filter(|f| f.is_lfs()).count());
    assert!(
        puts.iter()
            .all(|put| put.origin == Origin::Cdn && !put.has_authorization())
    );
    assert!(
        log.iter()
            .filter(|r| r.origin != Origin::Hub)
            .all(|r| !r.has_authorization())
    );
    let commits = commit_lines(&server);
    assert_eq!(commits.len(), 1);
    assert_eq!(
        commits[0][0]["value"]["parentCommit"],
        json!(history[0].id.as_str())
    );
    let stdout = String::from_utf8(
        hub(&env, &server, &["hub-plan", "--repo", repo])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(
        stdout.contains(&format!("compared with the head of main, commit {commit}")),
        "{stdout}"
    );
    let published = registered.len() + 1;
    assert!(
        stdout.contains(&format!(
            "0 new, 0 changed, {published} unchanged, 0 to delete"
        )),
        "{stdout}"
    );
}

#[test]
fn an_unchanged_archive_makes_no_commit_and_a_change_sends_only_the_difference() {
    let env = archive();
    let server = HubServer::start();
    let repo = "tester/bench";
    let first = push(&env, &server, repo, &["--create"]);
    server.clear_requests();
    let again = push(&env, &server, repo, &[]);
    assert_eq!(again, first, "the head already holds this archive");
    assert_eq!(server.commits(repo).len(), 2);
    assert!(commit_lines(&server).is_empty(), "no commit request at all");

    let more = env.input(
        "more.jsonl",
        crate::common::canonical_line("q9", "original", Some(true)) + "\n",
    );
    env.babel(&["import", "r2", "--format", "canonical", &more])
        .assert()
        .success();
    let plan = plan_json(&env, &server, repo, &[]);
    let changed: BTreeSet<String> = statuses(&plan)
        .into_iter()
        .filter(|(_, status)| status != "unchanged")
        .map(|(path, status)| format!("{status} {path}"))
        .collect();
    assert_eq!(
        changed,
        BTreeSet::from([
            "changed checksums.sha256".to_owned(),
            "changed history/HEAD".to_owned(),
            "changed history/log.jsonl".to_owned(),
            "changed runs/r2/manifest.json".to_owned(),
            "new runs/r2/raw/0002-more.jsonl".to_owned(),
            "new runs/r2/records/0002.parquet".to_owned(),
        ])
    );
    server.clear_requests();
    let second = push(&env, &server, repo, &[]);
    assert_ne!(second, first);
    let commits = commit_lines(&server);
    let sent: BTreeSet<&str> = commits[0][1..]
        .iter()
        .map(|line| line["value"]["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        sent,
        BTreeSet::from([
            "checksums.sha256",
            "history/HEAD",
            "history/log.jsonl",
            "runs/r2/manifest.json",
            "runs/r2/raw/0002-more.jsonl",
            "runs/r2/records/0002.parquet"
        ])
    );
    assert_eq!(commits[0][0]["value"]["parentCommit"], json!(first));
    let puts: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.method == "PUT")
        .map(|r| r.path().to_owned())
        .collect();
    assert_eq!(
        puts.len(),
        1,
        "only the new records file's LFS object is sent: {puts:?}"
    );
}

#[test]
fn a_whole_archive_push_deletes_remote_files_outside_the_plan_but_keeps_gitattributes() {
    let env = archive();
    let server = HubServer::start();
    let repo = "tester/bench";
    server.create_repo(repo, Visibility::Public);
    server
        .commit(repo)
        .file("notes/stray.txt", b"left by someone\n")
        .apply()
        .unwrap();
    let plan = plan_json(&env, &server, repo, &[]);
    assert_eq!(plan["deletions"], json!(["notes/stray.txt"]));
    let commit = push(&env, &server, repo, &[]);
    let files = server.files(repo, &commit).unwrap();
    assert!(!files.contains_key("notes/stray.txt"));
    assert!(files.contains_key(".gitattributes"));
    let deleted: Vec<Value> = commit_lines(&server)[0]
        .iter()
        .filter(|line| line["key"] == "deletedFile")
        .cloned()
        .collect();
    assert_eq!(
        deleted,
        vec![json!({"key": "deletedFile", "value": {"path": "notes/stray.txt"}})]
    );
}

#[test]
fn a_run_selection_publishes_those_runs_and_every_registered_artifact() {
    let env = archive();
    let server = HubServer::start();
    let repo = "tester/bench";
    let only_r1 = push(&env, &server, repo, &["--create", "--runs", "r1"]);
    let paths: BTreeSet<String> = server
        .files(repo, &only_r1)
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert!(paths.iter().any(|p| p.starts_with("runs/r1/")));
    assert!(!paths.iter().any(|p| p.starts_with("runs/r2/")));
    // "hub-plan includes all registered artifacts and adds calibration input runs even
    // when a narrower run selection was requested."
    for path in crate::hub_support::registry_files(&env) {
        assert!(
            paths.contains(&path),
            "{path}: artifacts are published with any selection"
        );
    }
    assert!(
        paths.contains("runs/s1/manifest.json") && paths.contains("runs/s1/records/0001.parquet"),
        "the calibration's input run s1 is published although only r1 was selected: {paths:?}"
    );
    let listed = String::from_utf8(
        server
            .file(repo, &only_r1, "checksums.sha256")
            .unwrap()
            .bytes()
            .to_vec(),
    )
    .unwrap();
    assert!(!listed.contains("runs/r2/"), "{listed}");
    // Documented: the head holds exactly the selection, so a later --runs r2 removes r1
    // from the head while the earlier commit keeps it.
    let only_r2 = push(&env, &server, repo, &["--runs", "r2"]);
    let head: BTreeSet<String> = server
        .files(repo, &only_r2)
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert!(!head.iter().any(|p| p.starts_with("runs/r1/")));
    assert!(
        server
            .files(repo, &only_r1)
            .unwrap()
            .contains_key("runs/r1/manifest.json")
    );
    let unknown = hub(&env, &server, &["hub-plan", "--repo", repo, "--runs", "r9"])
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
}

#[test]
fn a_run_selection_brings_the_runs_a_release_pins_and_restores_whole() {
    // "hub-pull restores and validates that dependency set from one pinned commit": a
    // release pins run r2, so a push of --runs r1 must carry r2 too.
    let env = archive();
    env.babel(&["seal", "r2"]).assert().success();
    let manifest = std::fs::read(env.archived("runs/r2/manifest.json")).unwrap();
    let release = json!({
        "format": "babel-release", "schema_version": 1, "name": "r2 alone",
        "artifacts": [],
        "runs": [{"run_id": "r2", "manifest_sha256": sha256_hex(&manifest)}],
    });
    let file = env.input("release.json", release.to_string());
    env.babel(&["artifact", "add", "release", "rel-1", &file])
        .assert()
        .success();
    let server = HubServer::start();
    let repo = "tester/bench";
    let plan = plan_json(&env, &server, repo, &["--runs", "r1"]);
    assert_eq!(plan["runs"], json!(["r1", "r2", "s1"]), "{plan:#}");
    let commit = push(&env, &server, repo, &["--create", "--runs", "r1"]);
    let dest = env.path().join("restored");
    let pulled = hub(
        &env,
        &server,
        &["hub-pull", "--repo", repo, "--revision", &commit, "--dest"],
    )
    .arg(&dest)
    .output()
    .unwrap();
    assert!(pulled.status.success(), "{}", text(&pulled));
    assert!(dest.join("runs/r2/manifest.json").is_file());
}

#[test]
fn a_run_selection_is_refused_when_an_artifact_does_not_validate() {
    // Artifacts are published with any selection, so they are validated with any.
    let env = archive();
    let artifact = crate::hub_support::registry_files(&env)
        .into_iter()
        .find(|p| p.ends_with("/artifact.json"))
        .unwrap();
    let path = env.archived(&artifact);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.push(b' ');
    std::fs::write(&path, bytes).unwrap();
    let server = HubServer::start();
    let output = hub(
        &env,
        &server,
        &["hub-plan", "--repo", "tester/x", "--runs", "r1"],
    )
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("publishes only an archive that validates") && stderr.contains(&artifact),
        "{stderr}"
    );
}

#[test]
fn a_concurrent_push_makes_the_commit_fail_with_http_412_and_is_never_overwritten() {
    let env = archive();
    let server = HubServer::start();
    let repo = "tester/bench";
    let planned = server.create_repo(repo, Visibility::Public);
    // Hold babel's preupload until someone else has committed: babel planned against the
    // initial commit, and the branch has moved on when its commit arrives.
    let other_committed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&other_committed);
    server.set_interceptor(move |request| {
        if request.path().contains("/preupload/") {
            let deadline = Instant::now() + Duration::from_secs(20);
            while !flag.load(Ordering::SeqCst) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        None
    });
    let mut command = hub(&env, &server, &["hub-push", "--repo", repo]);
    let (output, theirs) = std::thread::scope(|scope| {
        let babel = scope.spawn(move || command.output().unwrap());
        let deadline = Instant::now() + Duration::from_secs(20);
        while !server
            .requests()
            .iter()
            .any(|r| r.path().contains("/preupload/"))
        {
            assert!(Instant::now() < deadline, "babel never reached preupload");
            std::thread::sleep(Duration::from_millis(5));
        }
        let theirs = server
            .commit(repo)
            .summary("someone else")
            .file("theirs.txt", b"mine\n")
            .apply()
            .unwrap();
        other_committed.store(true, Ordering::SeqCst);
        (babel.join().unwrap(), theirs)
    });
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("HTTP 412")
            && stderr.contains(&format!("planned this push against commit {planned}"))
            && stderr.contains(&format!("the branch is now at {theirs}"))
            && stderr.contains("nothing was retried"),
        "{stderr}"
    );
    assert_eq!(
        server.head(repo, "main"),
        Some(theirs),
        "their commit stands"
    );
    let posts: Vec<u16> = server
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path().contains("/commit/"))
        .map(|r| r.status)
        .collect();
    assert_eq!(posts, vec![412], "exactly one commit attempt");
}

#[test]
fn rate_limits_are_waited_out_as_the_hub_asks_then_fail_clearly_after_the_cap() {
    let env = archive();
    let server = HubServer::start();
    let repo = "tester/bench";
    server.create_repo(repo, Visibility::Public);
    let tree = || RequestMatch::any().method("GET").path_contains("/tree/");
    let tree_statuses = |server: &HubServer| -> Vec<u16> {
        server
            .requests()
            .iter()
            .filter(|r| r.path().contains("/tree/"))
            .map(|r| r.status)
            .collect()
    };

    // Two 429s asking for 50 s (50 ms at the test's time scale): babel waits, then succeeds.
    // Its own backoff alone would wait 1 + 2 ms.
    server.fail_next(2, tree(), Failure::too_many_requests(50));
    let started = Instant::now();
    let output = hub(&env, &server, &["hub-plan", "--repo", repo])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        started.elapsed() >= Duration::from_millis(100),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(tree_statuses(&server), vec![429, 429, 200]);

    // A storm: 1 attempt and 5 retries, then exit code 4 with the count.
    server.clear_requests();
    server.fail_next(100, tree(), Failure::too_many_requests(1));
    let output = hub(&env, &server, &["hub-push", "--repo", repo])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the Hub answered HTTP 429 6 time(s)") && stderr.contains("hint:"),
        "{stderr}"
    );
    assert_eq!(tree_statuses(&server).len(), 6);
    server.clear_faults();

    // A wait beyond the budget fails at once; an HTTP-date Retry-After counts too.
    let tomorrow = std::process::Command::new("date")
        .args(["-u", "-d", "+1 day", "+%a, %d %b %Y %H:%M:%S GMT"])
        .env("LC_ALL", "C")
        .output()
        .expect("coreutils date");
    let tomorrow = String::from_utf8(tomorrow.stdout).unwrap();
    server.clear_requests();
    server.fail_next(
        1,
        tree(),
        Failure::service_unavailable().with_header("Retry-After", tomorrow.trim()),
    );
    let output = hub(&env, &server, &["hub-push", "--repo", repo])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("HTTP 503 and asked babel to wait 86")
            && stderr.contains("beyond its retry budget"),
        "{stderr}"
    );
    assert_eq!(tree_statuses(&server), vec![503]);
    assert_eq!(server.commits(repo).len(), 1, "nothing was committed");
}

#[test]
fn transient_failures_are_retried_but_the_commit_is_sent_exactly_once() {
    let env = archive();
    let server = HubServer::start();
    let repo = "tester/bench";
    server.create_repo(repo, Visibility::Public);
    server.fail_next(
        1,
        RequestMatch::any().path_contains("/preupload/"),
        Failure::service_unavailable(),
    );
    server.fail_next(
        1,
        RequestMatch::any().path_contains("/objects/batch"),
        Failure::service_unavailable(),
    );
    server.fail_next(1, RequestMatch::any().method("PUT"), Failure::status(500));
    server.fail_next(
        1,
        RequestMatch::any().path_contains("/commit/"),
        Failure::service_unavailable(),
    );
    let output = hub(&env, &server, &["hub-push", "--repo", repo])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("babel never retries a commit"), "{stderr}");
    let statuses = |part: &str| -> Vec<u16> {
        server
            .requests()
            .iter()
            .filter(|r| r.path().contains(part) || r.method == part)
            .map(|r| r.status)
            .collect()
    };
    assert_eq!(statuses("/preupload/"), vec![503, 200]);
    assert_eq!(statuses("/objects/batch"), vec![503, 200]);
    let puts = statuses("PUT");
    assert_eq!(puts[0], 500, "{puts:?}");
    assert!(puts[1..].iter().all(|&status| status == 200), "{puts:?}");
    assert_eq!(
        puts.len(),
        1 + registered_files(&env)
            .iter()
            .filter(|path| path.ends_with(".parquet") || path.ends_with(".bin"))
            .count(),
        "each LFS object once, the failed one twice"
    );
    assert_eq!(statuses("/commit/"), vec![503]);
    assert_eq!(server.commits(repo).len(), 1);
    // Running it again publishes (the LFS object is already stored, so no PUT).
    server.clear_requests();
    push(&env, &server, repo, &[]);
    assert_eq!(server.commits(repo).len(), 2);
    assert_eq!(statuses("PUT"), Vec::<u16>::new());
}

#[test]
fn a_missing_repository_needs_create_and_a_bad_token_is_never_printed() {
    let env = archive();
    let server = HubServer::start();
    let output = hub(&env, &server, &["hub-push", "--repo", "tester/absent"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("tester/absent was not found") && stderr.contains("--create"),
        "{stderr}"
    );

    let bad = "hf_not_a_real_token_123";
    let output = hub(
        &env,
        &server,
        &["hub-push", "--repo", "tester/absent", "--create"],
    )
    .env("HF_TOKEN", bad)
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let all = text(&output);
    assert!(
        all.contains("Invalid credentials") && all.contains("HF_TOKEN"),
        "{all}"
    );
    assert!(!all.contains(bad), "the token was printed: {all}");
    assert!(server.commits("tester/absent").is_empty());
}

#[test]
fn an_unreachable_hub_is_exit_code_4() {
    let env = archive();
    let server = HubServer::start();
    let output = hub(&env, &server, &["hub-push", "--repo", "tester/x"])
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("could not reach http://127.0.0.1:9/") && stderr.contains("hint:"),
        "{stderr}"
    );
    // hub-plan still prints the plan, noting that it could not compare.
    let output = hub(&env, &server, &["hub-plan", "--repo", "tester/x"])
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("note: could not compare with tester/x"));
}
