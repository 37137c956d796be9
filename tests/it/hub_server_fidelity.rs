//! The local Hub test server, driven by the official `huggingface_hub`
//! 2.4.0 client: what the real client accepts, sends and gets back is what
//! proves the server faithful. Ids are recomputed here independently (git
//! blob SHA-1, SHA-256, and `git write-tree` for tree ids), never taken from
//! the server's own code.
//!
//! The client runs in the venv `.ci/setup-hub-client` builds (or at
//! `$BABEL_TEST_PYTHON`), as `tests/hub_client/hub_driver.py`, one process
//! per test, with `HF_HUB_DISABLE_XET=1` and an isolated `HF_HOME`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};
use sha1::{Digest, Sha1};
use sha2::Sha256;

use crate::common::{Tool, tools_or_skip};
use crate::hub_server::{
    Access, DEFAULT_DATASET_GITATTRIBUTES, Failure, FileFault, HubServer, LengthHeader,
    LoggedRequest, Origin, RequestMatch, Visibility,
};

// ---------------------------------------------------------------------------
// The official client, as a child process speaking JSON lines.

fn python_interpreter() -> PathBuf {
    if let Some(python) = std::env::var_os("BABEL_TEST_PYTHON") {
        return PathBuf::from(python);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ci/hub-venv/bin/python")
}

/// [`python_interpreter`] importing huggingface_hub, which `.ci/setup-hub-client` installs.
fn official_client() -> Tool {
    Tool::probe(
        "the official huggingface_hub client",
        "setup-hub-client",
        Command::new(python_interpreter()).args(["-c", "import huggingface_hub"]),
    )
}

/// The official client under a temp `HF_HOME`, pointed at one server.
struct OfficialClient {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<String>,
    home: tempfile::TempDir,
}

impl OfficialClient {
    fn start(server: &HubServer, token: Option<&str>) -> OfficialClient {
        let python = python_interpreter();
        let home = tempfile::tempdir().expect("temp HF_HOME");
        let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hub_client/hub_driver.py");
        let stderr = std::fs::File::create(home.path().join("driver.stderr")).expect("stderr file");
        let mut command = Command::new(&python);
        // A clean environment: no proxy, token file or offline switch of the developer's leaks in.
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("HF_HOME", home.path().join("hf"))
            .env("HF_ENDPOINT", server.endpoint())
            .env("HF_HUB_DISABLE_XET", "1")
            .env("HF_HUB_DISABLE_TELEMETRY", "1")
            .env("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONUNBUFFERED", "1")
            .arg(&driver)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr);
        if let Some(token) = token {
            command.env("HF_TOKEN", token);
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|error| panic!("starting {}: {error}", python.display()));
        let stdin = child.stdin.take().expect("driver stdin");
        let stdout = child.stdout.take().expect("driver stdout");
        let (sender, answers) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut client = OfficialClient {
            child,
            stdin,
            answers,
            home,
        };
        let hello = client.receive("startup");
        let version = hello["result"]["version"].as_str().unwrap_or("");
        assert_eq!(
            version, "2.4.0",
            "the fidelity test pins huggingface_hub 2.4.0\nhint: run .ci/setup-hub-client"
        );
        assert_eq!(
            hello["result"]["xet"],
            json!(false),
            "HF_HUB_DISABLE_XET=1 must disable xet"
        );
        client
    }

    fn receive(&mut self, what: &str) -> Value {
        match self.answers.recv_timeout(Duration::from_secs(90)) {
            Ok(line) => serde_json::from_str(&line)
                .unwrap_or_else(|error| panic!("driver answered {line:?} to {what}: {error}")),
            Err(_) => {
                let _ = self.child.kill();
                let stderr = std::fs::read_to_string(self.home.path().join("driver.stderr"))
                    .unwrap_or_default();
                panic!("the Hub client driver gave no answer to {what}; its stderr:\n{stderr}")
            }
        }
    }

    /// Runs one client call: `Ok(result)` or `Err(error description)`.
    fn call(&mut self, op: &str, args: Value) -> Result<Value, Value> {
        let line = json!({ "op": op, "args": args }).to_string();
        writeln!(self.stdin, "{line}").expect("writing to the driver");
        self.stdin.flush().expect("flushing the driver's stdin");
        let answer = self.receive(op);
        if answer["ok"] == json!(true) {
            Ok(answer["result"].clone())
        } else {
            Err(answer["error"].clone())
        }
    }

    /// A call that must succeed.
    fn ok(&mut self, op: &str, args: Value) -> Value {
        self.call(op, args.clone()).unwrap_or_else(|error| {
            panic!(
                "{op}({args}) failed: {error:#}\ndriver stderr:\n{}",
                self.stderr()
            )
        })
    }

    /// A call that must fail; returns the error description.
    fn fails(&mut self, op: &str, args: Value) -> Value {
        match self.call(op, args.clone()) {
            Ok(result) => panic!("{op}({args}) should have failed but returned {result}"),
            Err(error) => error,
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.home.path().join("driver.stderr")).unwrap_or_default()
    }
}

impl Drop for OfficialClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn error_is(error: &Value, type_name: &str) -> bool {
    error["types"]
        .as_array()
        .is_some_and(|types| types.iter().any(|name| name == type_name))
}

// ---------------------------------------------------------------------------
// Independent arithmetic and file helpers.

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn git_blob_sha1(bytes: &[u8]) -> String {
    let mut hasher = Sha1::new();
    hasher.update(format!("blob {}\0", bytes.len()).as_bytes());
    hasher.update(bytes);
    hex(&hasher.finalize())
}

fn sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn lfs_pointer(bytes: &[u8]) -> String {
    format!(
        "version https://git-lfs.github.com/spec/v1\noid sha256:{}\nsize {}\n",
        sha256(bytes),
        bytes.len()
    )
}

type Files = BTreeMap<String, Vec<u8>>;

fn write_files(root: &Path, files: &Files) {
    for (path, bytes) in files {
        let target = root.join(path);
        std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        std::fs::write(&target, bytes).expect("write fixture");
    }
}

/// Every file under `root` (paths relative, `/`-separated), skipping the
/// client's own `.cache` folder.
fn read_files(root: &Path) -> Files {
    fn walk(root: &Path, dir: &Path, out: &mut Files) {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let entry = entry.expect("dir entry");
            let path = entry.path();
            let relative = path
                .strip_prefix(root)
                .expect("under root")
                .to_str()
                .expect("UTF-8 path")
                .to_owned();
            if relative == ".cache" {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(relative, std::fs::read(&path).expect("read file"));
            }
        }
    }
    let mut out = Files::new();
    walk(root, root, &mut out);
    out
}

fn bytes_of(server: &HubServer, repo: &str, revision: &str) -> Files {
    crate::hub_server::snapshot_bytes(&server.files(repo, revision).expect("revision exists"))
}

fn ndjson_lines(request: &LoggedRequest) -> Vec<Value> {
    request
        .body_text()
        .lines()
        .map(|line| serde_json::from_str(line).expect("NDJSON line"))
        .collect()
}

fn requests_matching(server: &HubServer, method: &str, path_part: &str) -> Vec<LoggedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|request| request.method == method && request.path().contains(path_part))
        .collect()
}

fn assert_all_routed(server: &HubServer) {
    let unrouted: Vec<String> = server
        .unrouted_requests()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        unrouted.is_empty(),
        "the client called routes the server lacks: {unrouted:#?}"
    );
}

fn text_file(lines: usize) -> Vec<u8> {
    (0..lines)
        .map(|n| format!("row {n:05}, value {}\n", n * 7))
        .collect::<String>()
        .into_bytes()
}

fn binary_file(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|n| (n as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

// ---------------------------------------------------------------------------
// Uploads.

#[test]
fn official_client_creates_and_uploads_like_on_the_hub() {
    if !tools_or_skip(&[official_client()]) {
        return;
    }
    let server = HubServer::start();
    // Large text goes to LFS on the Hub at 10 MB; a 4 KiB threshold keeps the fixture small.
    server.set_lfs_threshold(Some(4096));
    let mut client = OfficialClient::start(&server, Some(server.token()));
    let repo = "tester/bench-archive";

    // create_repo(repo_type="dataset"): 200, and the Hub's initial commit holds .gitattributes.
    let created = client.ok("create_repo", json!({ "repo_id": repo }));
    assert_eq!(
        created["url"],
        json!(format!("{}/datasets/{repo}", server.endpoint()))
    );
    let initial = server.head(repo, "main").expect("main exists");
    assert_eq!(server.commits(repo).len(), 1);
    assert_eq!(
        bytes_of(&server, repo, "main"),
        Files::from([(
            ".gitattributes".to_owned(),
            DEFAULT_DATASET_GITATTRIBUTES.as_bytes().to_vec()
        )])
    );

    // A second create is a 409; exist_ok=True swallows it (and reads "url" from the 409 body).
    let conflict = client.fails("create_repo", json!({ "repo_id": repo }));
    assert_eq!(conflict["status"], json!(409), "{conflict}");
    let again = client.ok("create_repo", json!({ "repo_id": repo, "exist_ok": true }));
    assert_eq!(again["url"], created["url"]);
    assert_eq!(
        requests_matching(&server, "POST", "/api/repos/create").len(),
        3
    );
    assert_eq!(
        server.commits(repo).len(),
        1,
        "exist_ok must not create anything"
    );

    // upload_folder with regular, LFS, empty, nested and non-ASCII files.
    let big_text = text_file(300);
    assert!(big_text.len() > 4096);
    let mut local = Files::from([
        ("index.json".to_owned(), b"{\"runs\": 1}\n".to_vec()),
        ("empty.txt".to_owned(), Vec::new()),
        (
            "runs/2026-01-01/results.csv".to_owned(),
            b"bench,ns\nfoo,12\n".to_vec(),
        ),
        ("runs/2026-01-01/blob.bin".to_owned(), (0..=255u8).collect()),
        ("runs/2026-01-01/big.txt".to_owned(), big_text),
        ("runs/2026-01-01/raw.dat".to_owned(), binary_file(300, 0)),
        (
            "données/résumé ü.txt".to_owned(),
            "naïve café\n".as_bytes().to_vec(),
        ),
        ("a/b/c/d/deep.txt".to_owned(), b"deep\n".to_vec()),
        ("a/b/other.txt".to_owned(), b"other\n".to_vec()),
        // README.md makes the client call /api/validate-yaml first.
        (
            "README.md".to_owned(),
            b"---\nlicense: mit\n---\n# Bench\n".to_vec(),
        ),
        // .gitignore makes the client send "gitIgnore" in preupload; debug.log is then skipped.
        (".gitignore".to_owned(), b"*.log\n".to_vec()),
    ]);
    let lfs_paths: BTreeSet<&str> = [
        "runs/2026-01-01/blob.bin",
        "runs/2026-01-01/big.txt",
        "runs/2026-01-01/raw.dat",
    ]
    .into_iter()
    .collect();
    let folder = tempfile::tempdir().expect("upload folder");
    write_files(folder.path(), &local);
    std::fs::write(folder.path().join("debug.log"), b"ignored\n").expect("write debug.log");
    server.clear_requests();
    let first = client.ok(
        "upload_folder",
        json!({ "repo_id": repo, "folder": folder.path(), "parent_commit": initial.as_str(), "message": "push 1" }),
    );
    let head1 = server.head(repo, "main").expect("head");
    assert_eq!(first["oid"], json!(head1.as_str()));
    assert_eq!(
        first["commit_url"],
        json!(format!(
            "{}/datasets/{repo}/commit/{head1}",
            server.endpoint()
        ))
    );
    let commits = server.commits(repo);
    assert_eq!(commits.len(), 2);
    assert_eq!(commits[1].parent.as_ref(), Some(&initial));
    assert_eq!(commits[1].summary, "push 1");

    // The stored bytes are the local files, plus .gitattributes rewritten by the "Hub".
    let stored = server.files(repo, "main").expect("files");
    let mut stored_bytes = crate::hub_server::snapshot_bytes(&stored);
    let gitattributes = stored_bytes
        .remove(".gitattributes")
        .expect(".gitattributes kept");
    assert_eq!(
        stored_bytes, local,
        "stored bytes differ from the uploaded folder"
    );
    let stored_lfs: BTreeSet<&str> = stored
        .iter()
        .filter(|(_, file)| file.is_lfs())
        .map(|(path, _)| path.as_str())
        .collect();
    assert_eq!(
        stored_lfs, lfs_paths,
        "the server's upload modes (binary, large text) decide LFS"
    );
    let gitattributes = String::from_utf8(gitattributes).expect("UTF-8");
    let appended = gitattributes
        .strip_prefix(DEFAULT_DATASET_GITATTRIBUTES)
        .expect("the default patterns are kept");
    let appended: BTreeSet<&str> = appended.lines().collect();
    // blob.bin is already covered by `*.bin`; the other two get their own line.
    assert_eq!(
        appended,
        BTreeSet::from([
            "runs/2026-01-01/big.txt filter=lfs diff=lfs merge=lfs -text",
            "runs/2026-01-01/raw.dat filter=lfs diff=lfs merge=lfs -text",
        ])
    );

    // What went over the wire, recorded request sequence of HUB-API.md.
    let preuploads = requests_matching(&server, "POST", "/preupload/main");
    assert_eq!(preuploads.len(), 1);
    let preupload: Value = serde_json::from_slice(&preuploads[0].body).expect("preupload JSON");
    assert_eq!(preupload["gitIgnore"], json!("*.log\n"));
    assert_eq!(
        preupload["files"].as_array().map(Vec::len),
        Some(local.len() + 1)
    );
    // Once while preparing the folder, once again in create_commit.
    assert_eq!(
        requests_matching(&server, "POST", "/api/validate-yaml").len(),
        2
    );
    let batches = requests_matching(&server, "POST", ".git/info/lfs/objects/batch");
    assert_eq!(batches.len(), 1);
    assert!(batches[0].has_authorization());
    let batch: Value = serde_json::from_slice(&batches[0].body).expect("batch JSON");
    assert_eq!(batch["operation"], json!("upload"));
    assert_eq!(batch["objects"].as_array().map(Vec::len), Some(3));
    let puts: Vec<LoggedRequest> = server
        .requests()
        .into_iter()
        .filter(|request| request.method == "PUT")
        .collect();
    assert_eq!(puts.len(), 3);
    for put in &puts {
        assert_eq!(put.origin, Origin::Cdn, "{put}");
        assert!(
            !put.has_authorization(),
            "the presigned PUT must carry no token: {put}"
        );
        assert_eq!(put.status, 200, "{put}");
    }
    let verifies = requests_matching(&server, "POST", "/info/lfs/objects/verify");
    assert_eq!(verifies.len(), 3);
    assert!(verifies.iter().all(|verify| verify.origin == Origin::Hub
        && verify.header("authorization") == Some(&format!("Bearer {}", server.token()))
        && verify.status == 200));
    let commit_posts = requests_matching(&server, "POST", "/commit/main");
    assert_eq!(commit_posts.len(), 1);
    assert!(
        commit_posts[0]
            .header("content-type")
            .is_some_and(|value| value.starts_with("application/x-ndjson"))
    );
    let lines = ndjson_lines(&commit_posts[0]);
    assert_eq!(lines[0]["key"], json!("header"));
    assert_eq!(lines[0]["value"]["parentCommit"], json!(initial.as_str()));
    let sent: BTreeMap<String, String> = lines[1..]
        .iter()
        .map(|line| {
            (
                line["value"]["path"].as_str().unwrap_or("").to_owned(),
                line["key"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let expected: BTreeMap<String, String> = local
        .keys()
        .map(|path| {
            let key = if lfs_paths.contains(path.as_str()) {
                "lfsFile"
            } else {
                "file"
            };
            (path.clone(), key.to_owned())
        })
        .collect();
    assert_eq!(
        sent, expected,
        "empty.txt must go as a regular file, LFS files as lfsFile"
    );

    // An unchanged second upload makes no commit and uploads nothing. (An ignored file
    // would defeat this: the client has no remote oid for it and sends a header-only commit.)
    std::fs::remove_file(folder.path().join("debug.log")).expect("remove debug.log");
    server.clear_requests();
    let unchanged = client.ok(
        "upload_folder",
        json!({ "repo_id": repo, "folder": folder.path() }),
    );
    assert_eq!(unchanged["oid"], json!(head1.as_str()));
    assert_eq!(server.commits(repo).len(), 2);
    assert!(requests_matching(&server, "POST", "/commit/").is_empty());
    assert!(
        server
            .requests()
            .iter()
            .all(|request| request.method != "PUT")
    );
    assert_eq!(requests_matching(&server, "POST", "/preupload/").len(), 1);

    // A changed file makes a commit with only that file (LFS objects are deduplicated by the batch).
    local.insert("index.json".to_owned(), b"{\"runs\": 2}\n".to_vec());
    write_files(folder.path(), &local);
    server.clear_requests();
    let changed = client.ok(
        "upload_folder",
        json!({ "repo_id": repo, "folder": folder.path() }),
    );
    let head2 = server.head(repo, "main").expect("head");
    assert_eq!(changed["oid"], json!(head2.as_str()));
    assert_ne!(head2, head1);
    let commit_posts = requests_matching(&server, "POST", "/commit/main");
    assert_eq!(commit_posts.len(), 1);
    let lines = ndjson_lines(&commit_posts[0]);
    assert_eq!(lines.len(), 2, "header plus one file: {lines:?}");
    assert_eq!(lines[1]["key"], json!("file"));
    assert_eq!(lines[1]["value"]["path"], json!("index.json"));
    let batch_answer_had_actions = requests_matching(&server, "POST", "/objects/batch").len();
    assert_eq!(
        batch_answer_had_actions, 1,
        "the client still asks the batch API"
    );
    assert!(
        server
            .requests()
            .iter()
            .all(|request| request.method != "PUT"),
        "stored objects need no PUT"
    );
    let before = bytes_of(&server, repo, head1.as_str());
    let after = bytes_of(&server, repo, head2.as_str());
    let differing: Vec<&String> = after
        .keys()
        .filter(|path| before.get(*path) != after.get(*path))
        .collect();
    assert_eq!(differing, vec!["index.json"]);
    // Old commits stay resolvable with their old bytes.
    assert_eq!(before["index.json"], b"{\"runs\": 1}\n".to_vec());

    // A stale parent_commit is refused with HTTP 412 and changes nothing.
    local.insert(
        "runs/2026-01-01/results.csv".to_owned(),
        b"bench,ns\nfoo,13\n".to_vec(),
    );
    write_files(folder.path(), &local);
    server.clear_requests();
    let stale = client.fails(
        "upload_folder",
        json!({ "repo_id": repo, "folder": folder.path(), "parent_commit": head1.as_str() }),
    );
    assert_eq!(stale["status"], json!(412), "{stale}");
    assert!(error_is(&stale, "HfHubHTTPError"), "{stale}");
    assert_eq!(server.head(repo, "main"), Some(head2.clone()));
    assert_eq!(
        requests_matching(&server, "POST", "/commit/main")[0].status,
        412
    );

    // Deletions: a folder (deletedFolder) and a file (deletedFile).
    server.clear_requests();
    client.ok("delete_folder", json!({ "repo_id": repo, "path": "a/b" }));
    client.ok(
        "delete_file",
        json!({ "repo_id": repo, "path": "empty.txt" }),
    );
    let keys: Vec<Value> = requests_matching(&server, "POST", "/commit/main")
        .iter()
        .map(|request| ndjson_lines(request)[1]["key"].clone())
        .collect();
    assert_eq!(keys, vec![json!("deletedFolder"), json!("deletedFile")]);
    let remaining = bytes_of(&server, repo, "main");
    assert!(
        remaining
            .keys()
            .all(|path| !path.starts_with("a/b/") && path != "empty.txt")
    );
    assert!(remaining.contains_key("runs/2026-01-01/big.txt"));
    assert_eq!(server.commits(repo).len(), 5);

    assert_all_routed(&server);
}

// ---------------------------------------------------------------------------
// Downloads, repo info and auth.

struct Seeded {
    repo: &'static str,
    first: Files,
    second: Files,
    c1: String,
    c2: String,
    lfs: BTreeSet<String>,
}

fn seed_download_repo(server: &HubServer) -> Seeded {
    let repo = "tester/pull-me";
    server.create_repo(repo, Visibility::Public);
    let regular = Files::from([
        ("index.json".to_owned(), b"{\"v\": 1}\n".to_vec()),
        ("empty.txt".to_owned(), Vec::new()),
        ("runs/r1/results.csv".to_owned(), b"a,b\n1,2\n".to_vec()),
        ("runs/r2/results.csv".to_owned(), b"a,b\n3,4\n".to_vec()),
        ("données/été.txt".to_owned(), "soleil\n".as_bytes().to_vec()),
        ("x/y/z/deep.txt".to_owned(), b"deep\n".to_vec()),
    ]);
    let lfs = Files::from([
        ("runs/r1/big.bin".to_owned(), binary_file(5000, 1)),
        ("runs/r2/weights.parquet".to_owned(), binary_file(2048, 2)),
    ]);
    let mut builder = server.commit(repo).summary("first");
    for (path, bytes) in &regular {
        builder = builder.file(path, bytes);
    }
    for (path, bytes) in &lfs {
        builder = builder.lfs_file(path, bytes);
    }
    let c1 = builder.apply().expect("seed c1").to_string();
    let c2 = server
        .commit(repo)
        .summary("second")
        .file("index.json", b"{\"v\": 2}\n")
        .lfs_file("runs/r1/big.bin", &binary_file(5000, 9))
        .apply()
        .expect("seed c2")
        .to_string();
    Seeded {
        repo,
        first: bytes_of(server, repo, &c1),
        second: bytes_of(server, repo, &c2),
        c1,
        c2,
        lfs: lfs.keys().cloned().collect(),
    }
}

#[test]
fn official_client_downloads_and_lists_like_on_the_hub() {
    if !tools_or_skip(&[official_client()]) {
        return;
    }
    let server = HubServer::start();
    let seeded = seed_download_repo(&server);
    let repo = seeded.repo;
    let mut client = OfficialClient::start(&server, Some(server.token()));
    // The seeding API stores what it was given, and old commits keep old bytes.
    assert_eq!(seeded.first["index.json"], b"{\"v\": 1}\n".to_vec());
    assert_eq!(seeded.second["index.json"], b"{\"v\": 2}\n".to_vec());
    assert_ne!(
        seeded.first["runs/r1/big.bin"],
        seeded.second["runs/r1/big.bin"]
    );

    // list_repo_tree(recursive=True) across pages of 3, validated by the client's own parser.
    server.set_tree_page_size(3);
    server.clear_requests();
    let tree = client.ok(
        "list_repo_tree",
        json!({ "repo_id": repo, "revision": seeded.c1, "recursive": true }),
    );
    let tree = tree.as_array().expect("entries");
    let tree_gets = requests_matching(&server, "GET", "/tree/");
    let expected_pages = tree.len().div_ceil(3);
    assert!(expected_pages >= 3, "the fixture must span several pages");
    assert_eq!(tree_gets.len(), expected_pages);
    assert!(
        tree_gets[0].query() == Some("recursive=true&expand=false"),
        "{}",
        tree_gets[0]
    );
    assert!(
        tree_gets[1..]
            .iter()
            .all(|get| get.query().is_some_and(|q| q.contains("&cursor=")))
    );
    let files: BTreeMap<String, &Value> = tree
        .iter()
        .filter(|entry| entry["type"] == json!("file"))
        .map(|entry| (entry["path"].as_str().unwrap_or("").to_owned(), entry))
        .collect();
    assert_eq!(
        files.keys().cloned().collect::<BTreeSet<_>>(),
        seeded.first.keys().cloned().collect()
    );
    for (path, entry) in &files {
        let bytes = &seeded.first[path];
        assert_eq!(entry["size"], json!(bytes.len()), "{path}");
        if seeded.lfs.contains(path) {
            assert_eq!(
                entry["blob_id"],
                json!(git_blob_sha1(lfs_pointer(bytes).as_bytes())),
                "{path}"
            );
            assert_eq!(entry["lfs"]["sha256"], json!(sha256(bytes)), "{path}");
            assert_eq!(entry["lfs"]["size"], json!(bytes.len()), "{path}");
            assert_eq!(
                entry["lfs"]["pointer_size"],
                json!(lfs_pointer(bytes).len()),
                "{path}"
            );
        } else {
            assert_eq!(entry["blob_id"], json!(git_blob_sha1(bytes)), "{path}");
            assert_eq!(entry["lfs"], Value::Null, "{path}");
        }
    }
    let directories: BTreeSet<&str> = tree
        .iter()
        .filter(|entry| entry["type"] == json!("directory"))
        .filter_map(|entry| entry["path"].as_str())
        .collect();
    assert_eq!(
        directories,
        BTreeSet::from(["données", "runs", "runs/r1", "runs/r2", "x", "x/y", "x/y/z"])
    );
    // A sub-path listing, sent as quote(path, safe="") with %2F.
    let sub = client.ok(
        "list_repo_tree",
        json!({ "repo_id": repo, "revision": seeded.c1, "path": "runs/r1" }),
    );
    let sub_paths: BTreeSet<&str> = sub
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert_eq!(
        sub_paths,
        BTreeSet::from(["runs/r1/big.bin", "runs/r1/results.csv"])
    );
    assert!(
        requests_matching(&server, "GET", "/tree/")
            .last()
            .is_some_and(|get| get.path().ends_with("/runs%2Fr1"))
    );
    server.set_tree_page_size(1000);

    // snapshot_download at a pinned 40-hex commit: byte-identical, LFS through the CDN without a token.
    let target = tempfile::tempdir().expect("download dir");
    server.clear_requests();
    client.ok(
        "snapshot_download",
        json!({ "repo_id": repo, "revision": seeded.c1, "local_dir": target.path() }),
    );
    assert_eq!(
        read_files(target.path()),
        seeded.first,
        "snapshot differs from commit {}",
        seeded.c1
    );
    let log = server.requests();
    assert!(
        !log.iter()
            .any(|r| r.path().starts_with(&format!("/api/datasets/{repo}"))
                && !r.path().contains("/tree/")),
        "a 40-hex revision needs no repo_info call"
    );
    let cdn_gets: Vec<&LoggedRequest> = log.iter().filter(|r| r.origin == Origin::Cdn).collect();
    assert_eq!(cdn_gets.len(), seeded.lfs.len(), "one CDN GET per LFS file");
    for get in &cdn_gets {
        assert_eq!(get.method, "GET");
        assert!(!get.has_authorization(), "token sent to the CDN: {get}");
        assert_eq!(get.status, 200, "{get}");
    }
    let resolve_prefix = format!("/datasets/{repo}/resolve/{}/", seeded.c1);
    for path in seeded.first.keys() {
        let url_path = format!(
            "{resolve_prefix}{}",
            path.split('/').map(encode).collect::<Vec<_>>().join("/")
        );
        let heads: Vec<&LoggedRequest> = log
            .iter()
            .filter(|r| r.method == "HEAD" && r.path() == url_path)
            .collect();
        assert_eq!(heads.len(), 1, "one HEAD for {path}");
        assert!(
            heads[0].has_authorization() && heads[0].header("accept-encoding") == Some("identity")
        );
        let expected_status = if seeded.lfs.contains(path) { 302 } else { 200 };
        assert_eq!(heads[0].status, expected_status, "{path}");
        let gets = log
            .iter()
            .filter(|r| r.method == "GET" && r.path() == url_path)
            .count();
        let expected_gets =
            usize::from(!seeded.lfs.contains(path) && !seeded.first[path].is_empty());
        assert_eq!(
            gets, expected_gets,
            "GETs on the Hub origin for {path} (0 for LFS and empty files)"
        );
    }

    // hf_hub_download of one file, at main (which moved on).
    let one = tempfile::tempdir().expect("download dir");
    let downloaded = client.ok(
        "hf_hub_download",
        json!({ "repo_id": repo, "filename": "runs/r1/big.bin", "local_dir": one.path() }),
    );
    let path = downloaded["path"].as_str().expect("path");
    assert_eq!(
        std::fs::read(path).expect("read"),
        seeded.second["runs/r1/big.bin"]
    );
    let cached = client.ok(
        "hf_hub_download",
        json!({ "repo_id": repo, "filename": "index.json" }),
    );
    assert_eq!(
        std::fs::read(cached["path"].as_str().expect("path")).expect("read"),
        b"{\"v\": 2}\n".to_vec()
    );

    // dataset_info / repo_info at a revision.
    let info = client.ok(
        "dataset_info",
        json!({ "repo_id": repo, "revision": seeded.c1 }),
    );
    assert_eq!(info["sha"], json!(seeded.c1));
    assert_eq!(info["id"], json!(repo));
    let siblings: BTreeSet<&str> = info["siblings"]
        .as_array()
        .expect("siblings")
        .iter()
        .filter_map(|s| s["rfilename"].as_str())
        .collect();
    assert_eq!(siblings, seeded.first.keys().map(String::as_str).collect());
    let detailed = client.ok(
        "dataset_info",
        json!({ "repo_id": repo, "revision": seeded.c2, "files_metadata": true }),
    );
    for sibling in detailed["siblings"].as_array().expect("siblings") {
        let path = sibling["rfilename"].as_str().expect("name");
        let bytes = &seeded.second[path];
        assert_eq!(sibling["size"], json!(bytes.len()), "{path}");
        if seeded.lfs.contains(path) {
            assert_eq!(sibling["lfs"]["sha256"], json!(sha256(bytes)), "{path}");
            assert_eq!(
                sibling["blob_id"],
                json!(git_blob_sha1(lfs_pointer(bytes).as_bytes()))
            );
        } else {
            assert_eq!(sibling["blob_id"], json!(git_blob_sha1(bytes)), "{path}");
        }
    }
    let head = client.ok("repo_info", json!({ "repo_id": repo }));
    assert_eq!(head["sha"], json!(seeded.c2));
    let at_main = client.ok("repo_info", json!({ "repo_id": repo, "revision": "main" }));
    assert_eq!(at_main["sha"], json!(seeded.c2));

    // Errors are classified by X-Error-Code exactly as on the Hub.
    let missing_repo = client.fails("dataset_info", json!({ "repo_id": "tester/missing" }));
    assert!(
        error_is(&missing_repo, "RepositoryNotFoundError"),
        "{missing_repo}"
    );
    let missing_rev = client.fails(
        "dataset_info",
        json!({ "repo_id": repo, "revision": "0".repeat(40) }),
    );
    assert!(
        error_is(&missing_rev, "RevisionNotFoundError"),
        "{missing_rev}"
    );
    let missing_file = client.fails(
        "hf_hub_download",
        json!({ "repo_id": repo, "filename": "nope.txt", "revision": seeded.c1 }),
    );
    assert!(
        error_is(&missing_file, "RemoteEntryNotFoundError"),
        "{missing_file}"
    );
    let not_found = requests_matching(&server, "HEAD", "/nope.txt");
    assert_eq!(not_found[0].status, 404);

    assert_all_routed(&server);
}

#[test]
fn official_client_meets_the_hub_auth_rules() {
    if !tools_or_skip(&[official_client()]) {
        return;
    }
    let server = HubServer::start();
    server.create_repo("tester/secret", Visibility::Private);
    server.create_repo("tester/open", Visibility::Public);
    let reader = server.add_token("tester", Access::Read);
    let stranger = server.add_token("mallory", Access::Write);
    let mut client = OfficialClient::start(&server, Some(server.token()));

    // With the owner's token, the private repo is readable.
    let info = client.ok("dataset_info", json!({ "repo_id": "tester/secret" }));
    assert_eq!(info["private"], json!(true));
    // Without a token it looks missing: 401 with X-Error-Code RepoNotFound.
    let anonymous = client.fails(
        "dataset_info",
        json!({ "repo_id": "tester/secret", "token": false }),
    );
    assert!(
        error_is(&anonymous, "RepositoryNotFoundError"),
        "{anonymous}"
    );
    assert_eq!(anonymous["status"], json!(401));
    // Another user's token: 404 RepoNotFound.
    let foreign = client.fails(
        "dataset_info",
        json!({ "repo_id": "tester/secret", "token": stranger }),
    );
    assert!(error_is(&foreign, "RepositoryNotFoundError"), "{foreign}");
    assert_eq!(foreign["status"], json!(404));
    // An unknown token is refused even on a public repo, with the message the client special-cases.
    let invalid = client.fails(
        "dataset_info",
        json!({ "repo_id": "tester/open", "token": "hf_not_a_token" }),
    );
    assert_eq!(invalid["status"], json!(401));
    assert!(!error_is(&invalid, "RepositoryNotFoundError"), "{invalid}");
    assert!(
        invalid["message"]
            .as_str()
            .is_some_and(|m| m.contains("Invalid credentials")),
        "{invalid}"
    );
    // Public repos read without a token.
    client.ok(
        "dataset_info",
        json!({ "repo_id": "tester/open", "token": false }),
    );

    // Writes need a write token of the namespace.
    let folder = tempfile::tempdir().expect("folder");
    write_files(
        folder.path(),
        &Files::from([("a.txt".to_owned(), b"a\n".to_vec())]),
    );
    let upload =
        |token: Value| json!({ "repo_id": "tester/open", "folder": folder.path(), "token": token });
    let no_token = client.fails("upload_folder", upload(json!(false)));
    assert_eq!(no_token["status"], json!(401), "{no_token}");
    let read_only = client.fails("upload_folder", upload(json!(reader)));
    assert_eq!(read_only["status"], json!(403), "{read_only}");
    let wrong_user = client.fails("upload_folder", upload(json!(stranger)));
    assert_eq!(wrong_user["status"], json!(403), "{wrong_user}");
    let create_elsewhere = client.fails(
        "create_repo",
        json!({ "repo_id": "tester/new", "token": stranger }),
    );
    assert_eq!(create_elsewhere["status"], json!(403), "{create_elsewhere}");
    assert_eq!(
        server.commits("tester/open").len(),
        1,
        "no refused write changed anything"
    );
    client.ok("upload_folder", upload(json!(server.token())));
    assert_eq!(server.commits("tester/open").len(), 2);

    let whoami = client.ok("whoami", json!({}));
    assert_eq!(whoami["name"], json!("tester"));
    assert_all_routed(&server);
}

fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                (byte as char).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Hostile knobs, observed through the official client.

#[test]
fn hostile_knobs_are_real_to_the_official_client() {
    if !tools_or_skip(&[official_client()]) {
        return;
    }
    let server = HubServer::start();
    let repo = "tester/hostile";
    server.create_repo(repo, Visibility::Public);
    let big = binary_file(5000, 3);
    let contents = Files::from([
        ("a.txt".to_owned(), b"alpha\n".to_vec()),
        ("extra.txt".to_owned(), b"exact size\n".to_vec()),
        ("wrong.txt".to_owned(), b"true bytes\n".to_vec()),
        ("loop.txt".to_owned(), b"never served\n".to_vec()),
    ]);
    let mut builder = server.commit(repo);
    for (path, bytes) in &contents {
        builder = builder.file(path, bytes);
    }
    builder
        .lfs_file("big.bin", &big)
        .lfs_file("foreign.bin", &binary_file(700, 4))
        .apply()
        .expect("seed");
    let mut client = OfficialClient::start(&server, Some(server.token()));
    let download = |filename: &str, dir: &Path| json!({ "repo_id": repo, "filename": filename, "local_dir": dir });

    // The next tree request answers 429 Retry-After: 0; the client waits and retries.
    server.clear_requests();
    server.fail_next(
        1,
        RequestMatch::any().path_contains("/tree/"),
        Failure::too_many_requests(0),
    );
    client.ok(
        "list_repo_tree",
        json!({ "repo_id": repo, "recursive": true }),
    );
    let statuses: Vec<u16> = requests_matching(&server, "GET", "/tree/")
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, vec![429, 200]);
    assert_eq!(requests_matching(&server, "GET", "/tree/")[0].status, 429);

    // A 503 on the LFS batch is retried by the client's backoff.
    let folder = tempfile::tempdir().expect("folder");
    write_files(
        folder.path(),
        &Files::from([("new.bin".to_owned(), binary_file(100, 5))]),
    );
    server.clear_requests();
    server.fail_next(
        1,
        RequestMatch::any()
            .method("POST")
            .path_contains("/objects/batch"),
        Failure::service_unavailable(),
    );
    client.ok(
        "upload_folder",
        json!({ "repo_id": repo, "folder": folder.path() }),
    );
    let statuses: Vec<u16> = requests_matching(&server, "POST", "/objects/batch")
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, vec![503, 200]);
    assert_eq!(
        server
            .file(repo, "main", "new.bin")
            .map(|file| file.is_lfs()),
        Some(true)
    );

    // A CDN transfer cut mid-file: the client resumes with Range and gets a 206. It writes
    // in 10 MiB chunks (DOWNLOAD_CHUNK_SIZE), so only a cut after the first chunk leaves
    // bytes on disk to resume from; a smaller file would simply be fetched again.
    const CHUNK: usize = 10 * 1024 * 1024;
    let large = binary_file(CHUNK + 300_000, 6);
    server
        .commit(repo)
        .lfs_file("large.bin", &large)
        .apply()
        .expect("seed large");
    let dir = tempfile::tempdir().expect("dir");
    server.set_file_fault(
        repo,
        "large.bin",
        FileFault::DropAfter {
            after: CHUNK + 1000,
            times: 1,
        },
    );
    server.clear_requests();
    let got = client.ok("hf_hub_download", download("large.bin", dir.path()));
    assert!(
        std::fs::read(got["path"].as_str().expect("path")).expect("read") == large,
        "resumed bytes differ"
    );
    let cdn: Vec<LoggedRequest> = server
        .requests()
        .into_iter()
        .filter(|r| r.origin == Origin::Cdn)
        .collect();
    assert_eq!(cdn.len(), 2, "{cdn:#?}");
    assert_eq!((cdn[0].status, cdn[0].header("range")), (200, None));
    assert_eq!(
        cdn[1].header("range"),
        Some(format!("bytes={CHUNK}-").as_str())
    );
    assert_eq!(cdn[1].status, 206);
    // A cut inside the first chunk: the retry starts over, without Range.
    server.set_file_fault(
        repo,
        "big.bin",
        FileFault::DropAfter {
            after: 1000,
            times: 1,
        },
    );
    server.clear_requests();
    let got = client.ok("hf_hub_download", download("big.bin", dir.path()));
    assert_eq!(
        std::fs::read(got["path"].as_str().expect("path")).expect("read"),
        big
    );
    let cdn: Vec<(u16, Option<String>)> = server
        .requests()
        .into_iter()
        .filter(|r| r.origin == Origin::Cdn)
        .map(|r| (r.status, r.header("range").map(str::to_owned)))
        .collect();
    assert_eq!(cdn, vec![(200, None), (200, None)]);

    // More bytes than declared: the client's size check catches it.
    server.set_file_fault(
        repo,
        "extra.txt",
        FileFault::ExtraBytes {
            extra: b"SURPLUS".to_vec(),
            length: LengthHeader::Actual,
        },
    );
    let extra = client.fails("hf_hub_download", download("extra.txt", dir.path()));
    assert!(
        error_is(&extra, "OSError")
            && extra["message"]
                .as_str()
                .is_some_and(|m| m.contains("Consistency check failed")),
        "{extra}"
    );

    // Wrong bytes of the right size: the official downloader does not hash, so only a
    // checksum against the tree's oid reveals it (which babel's puller must do).
    let lie = b"LIE! bytes\n".to_vec();
    assert_eq!(lie.len(), contents["wrong.txt"].len());
    server.set_file_fault(repo, "wrong.txt", FileFault::WrongBytes(lie.clone()));
    let got = client.ok("hf_hub_download", download("wrong.txt", dir.path()));
    let served = std::fs::read(got["path"].as_str().expect("path")).expect("read");
    assert_eq!(served, lie);
    let tree = client.ok("list_repo_tree", json!({ "repo_id": repo }));
    let oid = tree
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["path"] == json!("wrong.txt"))
        .map(|e| e["blob_id"].clone());
    assert_eq!(oid, Some(json!(git_blob_sha1(&contents["wrong.txt"]))));
    assert_ne!(
        git_blob_sha1(&served),
        git_blob_sha1(&contents["wrong.txt"])
    );

    // An LFS redirect to a third origin: the client follows it without its token.
    server.set_file_fault(repo, "foreign.bin", FileFault::RedirectToForeign);
    server.clear_requests();
    let got = client.ok("hf_hub_download", download("foreign.bin", dir.path()));
    assert_eq!(
        std::fs::read(got["path"].as_str().expect("path")).expect("read"),
        binary_file(700, 4)
    );
    let foreign: Vec<LoggedRequest> = server
        .requests()
        .into_iter()
        .filter(|r| r.origin == Origin::Foreign)
        .collect();
    assert_eq!(foreign.len(), 1);
    assert!(!foreign[0].has_authorization(), "{}", foreign[0]);

    // An endless same-origin redirect loop: the client gives up after its hop limit.
    server.set_file_fault(repo, "loop.txt", FileFault::RedirectLoop);
    server.clear_requests();
    let looped = client.fails("hf_hub_download", download("loop.txt", dir.path()));
    assert!(
        looped["message"]
            .as_str()
            .is_some_and(|m| m.contains("redirect")),
        "{looped}"
    );
    let hops = requests_matching(&server, "HEAD", "/loop.txt");
    assert!(hops.len() >= 20, "only {} hops", hops.len());
    assert!(hops.iter().all(|hop| hop.status == 302));

    // Hostile tree paths are served verbatim, listed and resolvable. What the official client
    // makes of them (babel's puller must refuse all four):
    let cases = [
        ("../escape.txt", "cannot contain a '..' path segment", None),
        ("/abs.txt", "cannot be an absolute", None),
        ("a\\b.txt", "", Some("a\\b.txt")),
        ("a//b.txt", "", Some("a/b.txt")),
    ];
    for (index, (path, refusal, written_as)) in cases.into_iter().enumerate() {
        let evil = format!("tester/evil{index}");
        server.create_repo(&evil, Visibility::Public);
        server.add_tree_entry(&evil, path, b"evil\n");
        let listed = client.ok(
            "list_repo_tree",
            json!({ "repo_id": evil, "recursive": true }),
        );
        let listed: BTreeSet<&str> = listed
            .as_array()
            .expect("entries")
            .iter()
            .filter_map(|e| e["path"].as_str())
            .collect();
        assert_eq!(listed, BTreeSet::from([".gitattributes", path]));
        let outer = tempfile::tempdir().expect("outer");
        let inner = outer.path().join("pull");
        let pulled = client.call(
            "snapshot_download",
            json!({ "repo_id": evil, "local_dir": inner }),
        );
        match written_as {
            None => {
                let error = pulled.expect_err(path);
                assert!(error_is(&error, "ValueError"), "{path}: {error}");
                assert!(
                    error["message"]
                        .as_str()
                        .is_some_and(|m| m.contains(refusal)),
                    "{path}: {error}"
                );
                let outside: Vec<_> = std::fs::read_dir(outer.path()).expect("outer").collect();
                assert_eq!(
                    outside.len(),
                    1,
                    "{path}: the client wrote outside its folder"
                );
            }
            Some(name) => {
                pulled.unwrap_or_else(|error| panic!("{path}: {error}"));
                assert_eq!(
                    read_files(&inner).get(name),
                    Some(&b"evil\n".to_vec()),
                    "{path}"
                );
            }
        }
    }

    assert_all_routed(&server);
}

// ---------------------------------------------------------------------------
// The HTTP layer and storage rules, spoken to directly.

struct RawResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl RawResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// Sends raw bytes, then reads responses until the server closes.
fn raw_exchange(base_url: &str, request: &[u8]) -> Vec<RawResponse> {
    let address = base_url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream.write_all(request).expect("send");
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    let mut responses = Vec::new();
    let mut rest = bytes.as_slice();
    while let Some(end) = rest.windows(4).position(|window| window == b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&rest[..end]).into_owned();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .and_then(|code| code.parse().ok())
            .unwrap_or(0);
        let headers: Vec<(String, String)> = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.to_owned(), value.trim().to_owned()))
            .collect();
        let length = headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, value)| value.parse::<usize>().ok())
            .unwrap_or(0);
        let body_start = end + 4;
        let is_head = request.starts_with(b"HEAD") && responses.is_empty();
        let body_len = if is_head || status == 100 {
            0
        } else {
            length.min(rest.len() - body_start)
        };
        responses.push(RawResponse {
            status,
            headers,
            body: rest[body_start..body_start + body_len].to_vec(),
        });
        rest = &rest[body_start + body_len..];
    }
    responses
}

#[test]
fn malformed_requests_get_400_and_the_server_keeps_serving() {
    let server = HubServer::start();
    let cases: [&[u8]; 6] = [
        b"GARBAGE\r\n\r\n",
        b"GET /api/whoami-v2 HTTP/9.9\r\n\r\n",
        b"GET no-slash HTTP/1.1\r\n\r\n",
        b"POST /api/repos/create HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST /api/repos/create HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
        b"POST /api/repos/create HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n",
    ];
    for case in cases {
        let responses = raw_exchange(server.endpoint(), case);
        assert_eq!(responses.len(), 1, "{}", String::from_utf8_lossy(case));
        assert_eq!(
            responses[0].status,
            400,
            "{}",
            String::from_utf8_lossy(case)
        );
    }
    // A JSON body that is not JSON is a 400 from the route, not a dead thread.
    let bad_json = b"POST /api/repos/create HTTP/1.1\r\nAuthorization: Bearer hf_test_tester_write_0\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{{{";
    assert_eq!(raw_exchange(server.endpoint(), bad_json)[0].status, 400);
    // Still alive, and no internal error was recorded.
    let alive = raw_exchange(
        server.endpoint(),
        b"GET /api/datasets/tester/none HTTP/1.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(alive[0].status, 404);
    assert_eq!(alive[0].header("x-error-code"), Some("RepoNotFound"));
    assert!(server.internal_errors().is_empty());
}

#[test]
fn chunked_bodies_keep_alive_expect_continue_and_head() {
    let server = HubServer::start();
    let token = server.token().to_owned();
    let body = r#"{"name":"chunky","organization":null,"type":"dataset"}"#;
    let (first, second) = body.split_at(20);
    let request = format!(
        "POST /api/repos/create HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nTransfer-Encoding: chunked\r\n\
         Expect: 100-continue\r\n\r\n{:x}\r\n{first}\r\n{:x};ext=1\r\n{second}\r\n0\r\nTrailer: t\r\n\r\n\
         GET /api/datasets/tester/chunky HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        first.len(),
        second.len()
    );
    let responses = raw_exchange(server.endpoint(), request.as_bytes());
    let statuses: Vec<u16> = responses.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        vec![100, 200, 200],
        "100 Continue, then two answers on one connection"
    );
    let info: Value = serde_json::from_slice(&responses[2].body).expect("repo info JSON");
    assert_eq!(info["id"], json!("tester/chunky"));
    assert_eq!(responses[1].header("connection"), Some("keep-alive"));
    assert_eq!(responses[2].header("connection"), Some("close"));

    let head = server
        .commit("tester/chunky")
        .file("f.txt", b"12345")
        .apply()
        .expect("commit");
    let responses = raw_exchange(
        server.endpoint(),
        format!("HEAD /datasets/tester/chunky/resolve/{head}/f.txt HTTP/1.1\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    assert_eq!(responses.len(), 1);
    assert_eq!(responses[0].header("content-length"), Some("5"));
    assert_eq!(responses[0].header("x-repo-commit"), Some(head.as_str()));
    assert_eq!(
        responses[0].header("etag"),
        Some(format!("\"{}\"", git_blob_sha1(b"12345")).as_str())
    );
    assert!(responses[0].body.is_empty());
}

#[test]
fn storage_urls_refuse_tokens_and_expire() {
    let server = HubServer::start();
    let repo = "tester/store";
    server.create_repo(repo, Visibility::Public);
    let blob = binary_file(64, 7);
    let commit = server
        .commit(repo)
        .lfs_file("b.bin", &blob)
        .apply()
        .expect("commit");
    let resolve = format!(
        "GET /datasets/{repo}/resolve/{commit}/b.bin HTTP/1.1\r\nConnection: close\r\n\r\n"
    );
    let redirect = raw_exchange(server.endpoint(), resolve.as_bytes()).remove(0);
    assert_eq!(redirect.status, 302);
    assert_eq!(redirect.header("x-linked-size"), Some("64"));
    assert_eq!(
        redirect.header("x-linked-etag"),
        Some(format!("\"{}\"", sha256(&blob)).as_str())
    );
    let location = redirect.header("location").expect("Location").to_owned();
    assert!(location.starts_with(server.cdn_url()), "{location}");
    let target = &location[server.cdn_url().len()..];
    let get = |extra: &str| {
        raw_exchange(
            server.cdn_url(),
            format!("GET {target} HTTP/1.1\r\n{extra}Connection: close\r\n\r\n").as_bytes(),
        )
        .remove(0)
    };

    assert_eq!(get("").body, blob);
    let ranged = get("Range: bytes=60-\r\n");
    assert_eq!((ranged.status, ranged.body.as_slice()), (206, &blob[60..]));
    assert_eq!(ranged.header("content-range"), Some("bytes 60-63/64"));
    assert_eq!(get("Range: bytes=64-\r\n").status, 416);
    assert_eq!(
        get("Authorization: Bearer x\r\n").status,
        400,
        "a presigned URL refuses a second credential"
    );
    server.expire_storage_urls();
    assert_eq!(get("").status, 403, "expired URLs answer 403");

    // An interceptor answers anything it likes, after the request is logged.
    server.set_interceptor(|request| {
        request
            .path()
            .ends_with("/teapot")
            .then(|| crate::hub_server::Response::new(418).with_body(b"short and stout".to_vec()))
    });
    let teapot = raw_exchange(
        server.endpoint(),
        b"GET /teapot HTTP/1.1\r\nConnection: close\r\n\r\n",
    )
    .remove(0);
    assert_eq!(
        (teapot.status, teapot.body.as_slice()),
        (418, b"short and stout".as_slice())
    );
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.path() == "/teapot" && r.status == 418)
    );
}

#[test]
fn seeded_ids_are_real_git_ids() {
    let server = HubServer::start();
    let repo = "tester/ids";
    server.create_repo(repo, Visibility::Public);
    let files = Files::from([
        ("a.txt".to_owned(), b"a\n".to_vec()),
        ("a-b.txt".to_owned(), b"dash\n".to_vec()),
        ("a/b.txt".to_owned(), b"nested\n".to_vec()),
        ("z/y/x.bin".to_owned(), binary_file(10, 1)),
    ]);
    let mut builder = server.commit(repo);
    for (path, bytes) in &files {
        builder = builder.file(path, bytes);
    }
    let commit = builder
        .lfs_file("lfs.bin", &binary_file(40, 2))
        .apply()
        .expect("commit");

    // Rebuild both commits with real git (LFS files as their pointers) and compare ids.
    let work = tempfile::tempdir().expect("git dir");
    let git = |args: &[&str], time: Option<u64>| {
        let mut command = Command::new("git");
        command.args(args).current_dir(work.path());
        if let Some(time) = time {
            for (name, value) in [
                ("GIT_AUTHOR_NAME", "tester".to_owned()),
                (
                    "GIT_AUTHOR_EMAIL",
                    "tester@users.noreply.huggingface.co".to_owned(),
                ),
                ("GIT_AUTHOR_DATE", format!("{time} +0000")),
                ("GIT_COMMITTER_NAME", "tester".to_owned()),
                (
                    "GIT_COMMITTER_EMAIL",
                    "tester@users.noreply.huggingface.co".to_owned(),
                ),
                ("GIT_COMMITTER_DATE", format!("{time} +0000")),
            ] {
                command.env(name, value);
            }
        }
        let output = command
            .output()
            .expect("git must be installed to run this test");
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout)
            .expect("UTF-8")
            .trim()
            .to_owned()
    };
    git(&["init", "-q"], None);
    let history = server.commits(repo);
    assert_eq!(history.len(), 2);
    let mut parent: Option<String> = None;
    let mut root = String::new();
    for info in &history {
        for (path, file) in server.files(repo, info.id.as_str()).expect("files") {
            let bytes = file.lfs.as_ref().map_or_else(
                || file.bytes().to_vec(),
                |pointer| pointer.text().into_bytes(),
            );
            write_files(work.path(), &Files::from([(path.clone(), bytes)]));
            git(&["add", "--", &path], None);
        }
        root = git(&["write-tree"], None);
        let mut args = vec!["commit-tree", root.as_str(), "-m", info.summary.as_str()];
        if let Some(parent) = &parent {
            args.extend(["-p", parent.as_str()]);
        }
        let made = git(&args, Some(info.time));
        assert_eq!(
            made,
            info.id.as_str(),
            "commit {} is a git commit object",
            info.summary
        );
        parent = Some(made);
    }
    assert_eq!(history[1].id, commit);
    let listing = raw_exchange(
        server.endpoint(),
        format!("GET /api/datasets/{repo}/tree/{commit}?recursive=true HTTP/1.1\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .remove(0);
    let entries: Value = serde_json::from_slice(&listing.body).expect("tree JSON");
    let oid_of = |path: &str| {
        entries
            .as_array()
            .expect("entries")
            .iter()
            .find(|e| e["path"] == json!(path))
            .map(|e| e["oid"].clone())
    };
    for path in ["z/y", "z", "a", "lfs.bin", "a-b.txt"] {
        assert_eq!(
            oid_of(path),
            Some(json!(git(&["rev-parse", &format!("{root}:{path}")], None))),
            "{path}"
        );
    }
}

/// Everything a connection carried until the server closed it.
fn raw_bytes(base_url: &str, request: &str) -> (Vec<u8>, Duration) {
    let started = std::time::Instant::now();
    let mut stream = TcpStream::connect(base_url.trim_start_matches("http://")).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream.write_all(request.as_bytes()).expect("send");
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    (bytes, started.elapsed())
}

#[test]
fn body_faults_and_failures_on_the_wire() {
    let server = HubServer::start();
    let repo = "tester/wire";
    server.create_repo(repo, Visibility::Public);
    let content = b"0123456789abcdefghij".to_vec();
    server
        .commit(repo)
        .file("f.txt", &content)
        .apply()
        .expect("commit");
    let get = |extra: &str| {
        format!(
            "GET /datasets/{repo}/resolve/main/f.txt HTTP/1.1\r\n{extra}Connection: close\r\n\r\n"
        )
    };
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();

    // Honest ranges on the Hub origin too.
    let ranged = raw_exchange(server.endpoint(), get("Range: bytes=15-\r\n").as_bytes()).remove(0);
    assert_eq!(
        (ranged.status, ranged.body.as_slice()),
        (206, b"fghij".as_slice())
    );
    assert_eq!(ranged.header("content-range"), Some("bytes 15-19/20"));
    assert!(ranged.header("x-repo-commit").is_some());

    // Extra bytes behind a Content-Length that declares only the true size.
    let extra = FileFault::ExtraBytes {
        extra: b"+EXTRA".to_vec(),
        length: LengthHeader::Original,
    };
    server.set_file_fault(repo, "f.txt", extra);
    let (bytes, _) = raw_bytes(server.endpoint(), &get(""));
    let wire = text(&bytes);
    assert!(
        wire.contains("Content-Length: 20\r\n") && wire.ends_with("0123456789abcdefghij+EXTRA"),
        "{wire}"
    );
    // ... or with no length at all (chunked).
    let extra = FileFault::ExtraBytes {
        extra: b"+EXTRA".to_vec(),
        length: LengthHeader::Omitted,
    };
    server.set_file_fault(repo, "f.txt", extra);
    let wire = text(&raw_bytes(server.endpoint(), &get("")).0);
    assert!(
        wire.contains("Transfer-Encoding: chunked\r\n") && !wire.contains("Content-Length"),
        "{wire}"
    );
    assert!(
        wire.contains("\r\n1a\r\n0123456789abcdefghij+EXTRA\r\n0\r\n\r\n"),
        "{wire}"
    );
    // HEAD keeps telling the truth.
    let head = raw_exchange(
        server.endpoint(),
        format!("HEAD /datasets/{repo}/resolve/main/f.txt HTTP/1.1\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
    .remove(0);
    assert_eq!(head.header("content-length"), Some("20"));

    // A body cut after 7 bytes, once; the next GET is whole.
    server.set_file_fault(repo, "f.txt", FileFault::DropAfter { after: 7, times: 1 });
    let wire = text(&raw_bytes(server.endpoint(), &get("")).0);
    assert!(
        wire.contains("Content-Length: 20\r\n") && wire.ends_with("\r\n\r\n0123456"),
        "{wire}"
    );
    assert!(text(&raw_bytes(server.endpoint(), &get("")).0).ends_with("0123456789abcdefghij"));

    // A slow body: 4 chunks of 5 bytes, 60 ms apart.
    let slow = FileFault::Slow {
        chunk: 5,
        delay: Duration::from_millis(60),
    };
    server.set_file_fault(repo, "f.txt", slow);
    let (bytes, took) = raw_bytes(server.endpoint(), &get(""));
    assert!(text(&bytes).ends_with("0123456789abcdefghij"));
    assert!(took >= Duration::from_millis(180), "took only {took:?}");
    server.clear_faults();

    // Injected failures: count, match, and carry the headers asked for.
    let date = "Wed, 21 Oct 2026 07:28:00 GMT";
    server.fail_next(
        2,
        RequestMatch::any()
            .origin(Origin::Hub)
            .method("GET")
            .path_contains("/resolve/"),
        Failure::too_many_requests(3).with_rate_limit(3),
    );
    server.fail_next(
        1,
        RequestMatch::any().path_contains("/resolve/"),
        Failure::status(503).with_header("Retry-After", date),
    );
    let statuses: Vec<u16> = (0..4)
        .map(|_| {
            raw_exchange(server.endpoint(), get("").as_bytes())
                .remove(0)
                .status
        })
        .collect();
    assert_eq!(statuses, vec![429, 429, 503, 200]);
    let log = server.requests();
    let answered = |status: u16| log.iter().filter(|r| r.status == status).count();
    assert_eq!((answered(429), answered(503)), (2, 1));
    server.fail_next(
        1,
        RequestMatch::any(),
        Failure::too_many_requests(3).with_rate_limit(3),
    );
    let limited = raw_exchange(server.endpoint(), get("").as_bytes()).remove(0);
    assert_eq!(limited.header("retry-after"), Some("3"));
    assert_eq!(limited.header("ratelimit"), Some("\"api\";r=0;t=3"));
    server.fail_next(
        1,
        RequestMatch::any(),
        Failure::service_unavailable().with_header("Retry-After", date),
    );
    let unavailable = raw_exchange(server.endpoint(), get("").as_bytes()).remove(0);
    assert_eq!(
        (unavailable.status, unavailable.header("retry-after")),
        (503, Some(date))
    );

    // A connection closed without any answer.
    server.set_interceptor(|_| {
        Some(
            crate::hub_server::Response::new(200)
                .with_delivery(crate::hub_server::Delivery::NoResponse),
        )
    });
    assert!(raw_bytes(server.endpoint(), &get("")).0.is_empty());
    server.clear_interceptor();
    assert_eq!(
        raw_exchange(server.endpoint(), get("").as_bytes())
            .remove(0)
            .status,
        200
    );
}

#[test]
fn lfs_batch_upload_and_verify_rules() {
    let server = HubServer::start();
    let repo = "tester/lfs";
    server.create_repo(repo, Visibility::Public);
    let token = server.token().to_owned();
    let content = binary_file(300, 8);
    let oid = sha256(&content);
    let post = |path: &str, body: &str, auth: bool| {
        let auth = if auth {
            format!("Authorization: Bearer {token}\r\n")
        } else {
            String::new()
        };
        raw_exchange(
            server.endpoint(),
            format!(
                "POST {path} HTTP/1.1\r\n{auth}Content-Type: application/vnd.git-lfs+json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .remove(0)
    };
    let batch_path = format!("/datasets/{repo}.git/info/lfs/objects/batch");
    let batch = json!({ "operation": "upload", "transfers": ["basic"], "hash_algo": "sha256",
        "objects": [{ "oid": oid, "size": content.len() }, { "oid": "not-hex", "size": 1 }] })
    .to_string();
    assert_eq!(
        post(&batch_path, &batch, false).status,
        401,
        "uploads need a token"
    );
    let answer = post(&batch_path, &batch, true);
    assert_eq!(
        answer.header("content-type"),
        Some("application/vnd.git-lfs+json")
    );
    let answer: Value = serde_json::from_slice(&answer.body).expect("batch JSON");
    assert_eq!(answer["transfer"], json!("basic"));
    assert_eq!(answer["objects"][1]["error"]["code"], json!(422));
    let upload = answer["objects"][0]["actions"]["upload"]["href"]
        .as_str()
        .expect("upload href")
        .to_owned();
    let verify = answer["objects"][0]["actions"]["verify"]["href"]
        .as_str()
        .expect("verify href")
        .to_owned();
    assert!(upload.starts_with(server.cdn_url()), "{upload}");
    assert!(verify.starts_with(server.endpoint()), "{verify}");
    let put = |body: &[u8], extra: &str| {
        let mut request = format!(
            "PUT {} HTTP/1.1\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
            &upload[server.cdn_url().len()..],
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body);
        raw_exchange(server.cdn_url(), &request).remove(0).status
    };
    let mut wrong = content.clone();
    wrong[0] ^= 1;
    assert_eq!(put(&wrong, ""), 400, "the PUT checks the SHA-256");
    assert_eq!(put(&content[1..], ""), 400, "the PUT checks the size");
    assert_eq!(
        put(&content, &format!("Authorization: Bearer {token}\r\n")),
        400,
        "no token on a presigned PUT"
    );
    assert!(server.lfs_objects(repo).is_empty());
    assert_eq!(put(&content, ""), 200);
    assert_eq!(server.lfs_objects(repo), BTreeSet::from([oid.clone()]));
    let verify_path = &verify[server.endpoint().len()..];
    let verify_body = json!({ "oid": oid, "size": content.len() }).to_string();
    assert_eq!(
        post(verify_path, &verify_body, false).status,
        401,
        "verify needs the token"
    );
    assert_eq!(post(verify_path, &verify_body, true).status, 200);
    let again: Value =
        serde_json::from_slice(&post(&batch_path, &batch, true).body).expect("batch JSON");
    assert_eq!(
        again["objects"][0].get("actions"),
        None,
        "a stored object needs no upload"
    );

    // Committing it as lfsFile works; an object never uploaded is refused.
    let commit = |lines: &[Value]| {
        let body: String = lines.iter().map(|line| format!("{line}\n")).collect();
        raw_exchange(
            server.endpoint(),
            format!(
                "POST /api/datasets/{repo}/commit/main HTTP/1.1\r\nAuthorization: Bearer {token}\r\nContent-Type: application/x-ndjson\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .remove(0)
    };
    let header = json!({ "key": "header", "value": { "summary": "lfs" } });
    let missing = json!({ "key": "lfsFile", "value": { "path": "x.bin", "algo": "sha256", "oid": "0".repeat(64), "size": 1 } });
    assert_eq!(commit(&[header.clone(), missing]).status, 400);
    let present = json!({ "key": "lfsFile", "value": { "path": "data/x.bin", "algo": "sha256", "oid": oid, "size": content.len() } });
    let done = commit(&[header, present]);
    assert_eq!(done.status, 200);
    let done: Value = serde_json::from_slice(&done.body).expect("commit JSON");
    let head = server.head(repo, "main").expect("head");
    assert_eq!(done["commitOid"], json!(head.as_str()));
    assert_eq!(done["success"], json!(true));
    let stored = server.file(repo, "main", "data/x.bin").expect("stored");
    assert!(stored.is_lfs() && stored.bytes() == content.as_slice());
}

// ---------------------------------------------------------------------------
// babel and the official client on the same Hub: each reads what the other wrote.

#[test]
fn an_archive_uploaded_by_the_official_client_is_pulled_and_validated_by_babel() {
    if !tools_or_skip(&[official_client()]) {
        return;
    }
    let server = HubServer::start();
    let repo = "tester/uploaded-by-python";
    let env = crate::hub_support::archive();
    // What a user uploads: the archive root without its operational folder .babel/.
    let archived = crate::hub_support::tree(&env.root());
    let folder = tempfile::tempdir().expect("upload folder");
    write_files(folder.path(), &archived);
    let mut client = OfficialClient::start(&server, Some(server.token()));
    client.ok("create_repo", json!({ "repo_id": repo }));
    let uploaded = client.ok(
        "upload_folder",
        json!({ "repo_id": repo, "folder": folder.path(), "message": "archive" }),
    );
    let commit = uploaded["oid"].as_str().expect("commit oid").to_owned();
    assert!(
        server
            .file(repo, &commit, "runs/r1/attachments/weights.bin")
            .is_some_and(|f| f.is_lfs()),
        "the binary attachment is an LFS file"
    );

    let output = crate::hub_support::hub(
        &env,
        &server,
        &[
            "hub-pull",
            "--repo",
            repo,
            "--revision",
            &commit,
            "--dest",
            "restored",
            "--json",
        ],
    )
    .output()
    .expect("babel runs");
    assert!(
        output.status.success(),
        "{}",
        crate::hub_support::text(&output)
    );
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON report");
    assert_eq!(report["validation"]["ok"], json!(true));
    assert_eq!(
        report["checksums_verified"],
        json!(false),
        "a plain upload has no checksums.sha256"
    );
    assert_eq!(
        crate::hub_support::tree(&env.path().join("restored")),
        archived,
        "babel restored other bytes than the official client uploaded"
    );
}

#[test]
fn an_archive_pushed_by_babel_is_downloaded_byte_for_byte_by_snapshot_download() {
    if !tools_or_skip(&[official_client()]) {
        return;
    }
    let server = HubServer::start();
    let repo = "tester/pushed-by-babel";
    let env = crate::hub_support::archive();
    let commit = crate::hub_support::push(&env, &server, repo, &["--create"]);
    let mut client = OfficialClient::start(&server, Some(server.token()));
    let target = tempfile::tempdir().expect("download dir");
    client.ok(
        "snapshot_download",
        json!({ "repo_id": repo, "revision": commit, "local_dir": target.path() }),
    );
    // The commit's description names the history head babel published, and the client
    // reads it (and the history before it, paged) as the Hub lists commits.
    server.set_tree_page_size(1);
    let listed = client.ok(
        "list_repo_commits",
        json!({ "repo_id": repo, "revision": commit }),
    );
    let listed = listed.as_array().expect("commits");
    assert_eq!(
        listed.len(),
        2,
        "the initial commit, then babel's: {listed:?}"
    );
    assert_eq!(listed[0]["commit_id"], json!(commit));
    assert_eq!(listed[1]["authors"], json!(["system"]));
    let head = crate::hub_support::head_of(&env.root());
    assert_eq!(
        listed[0]["message"],
        json!(format!("babel archive history head {head}"))
    );
    let mut downloaded = read_files(target.path());
    assert_eq!(
        downloaded.remove(".gitattributes"),
        Some(DEFAULT_DATASET_GITATTRIBUTES.as_bytes().to_vec()),
        "the Hub-managed .gitattributes (weights.bin is covered by *.bin)"
    );
    let checksums = downloaded
        .remove("checksums.sha256")
        .expect("checksums.sha256 is published");
    assert_eq!(
        downloaded,
        crate::hub_support::tree(&env.root()),
        "the official client got other bytes than babel published"
    );

    // `sha256sum -c` verifies the plain download, one OK line per published file.
    let check = Command::new("sha256sum")
        .args(["--check", "--strict", "checksums.sha256"])
        .current_dir(target.path())
        .output()
        .expect("coreutils sha256sum must be installed");
    let report = String::from_utf8_lossy(&check.stdout).into_owned();
    assert!(
        check.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let checked: BTreeSet<&str> = report
        .lines()
        .filter_map(|line| line.strip_suffix(": OK"))
        .collect();
    assert_eq!(checked, downloaded.keys().map(String::as_str).collect());
    assert_eq!(
        String::from_utf8(checksums).expect("UTF-8").lines().count(),
        downloaded.len()
    );
}
