//! Shared test environment: a temporary archive and the real `babel` binary run against it.
//! Each test crate uses what it needs, so unused helpers are expected here.
#![allow(dead_code)]

use assert_cmd::Command;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The pinned clock every test run uses, so manifests and snapshots are reproducible.
pub const TIMESTAMP: &str = "2026-12-02T12:00:00Z";

/// A temporary folder holding an archive at `root()` and inputs beside it.
pub struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    /// A new, empty environment (no archive yet).
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("a temporary folder"),
        }
    }

    /// An environment with an initialized archive.
    pub fn with_archive() -> Self {
        let env = Self::new();
        env.babel(&["init"]).assert().success();
        env
    }

    /// An environment with an archive and an open run `r1` of model `m1`.
    pub fn with_run() -> Self {
        let env = Self::with_archive();
        env.babel(&["run", "create", "r1", "--model", "m1", "--benchmark", "b"])
            .assert()
            .success();
        env
    }

    /// The archive root.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("archive")
    }

    /// The environment folder (inputs live here, outside the archive).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A path under the archive root.
    pub fn archived(&self, relative: &str) -> PathBuf {
        self.root().join(relative)
    }

    /// Writes an input file beside the archive and returns its path relative to the
    /// environment folder (where `babel()` runs), e.g. `inputs/a.jsonl`.
    pub fn input(&self, name: &str, bytes: impl AsRef<[u8]>) -> String {
        let relative = format!("inputs/{name}");
        let path = self.dir.path().join(&relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        relative
    }

    /// The babel binary run in the environment folder, with `--root archive` and the clock
    /// pinned, so paths in its output are short and the same on every run.
    pub fn babel(&self, args: &[&str]) -> Command {
        self.babel_as(Command::new(env!("CARGO_BIN_EXE_babel")), args)
    }

    /// [`Env::babel`] run inside `cgroup`: a shell moves itself in, then becomes babel.
    pub fn babel_inside(&self, cgroup: &MemoryCgroup, args: &[&str]) -> Command {
        let mut shell = Command::new("sh");
        shell
            .args(["-c", r#"echo $$ > "$0" && exec "$@""#])
            .arg(cgroup.dir.join("cgroup.procs"))
            .arg(env!("CARGO_BIN_EXE_babel"));
        self.babel_as(shell, args)
    }

    fn babel_as(&self, mut command: Command, args: &[&str]) -> Command {
        command
            .current_dir(self.path())
            .args(["--root", "archive"])
            .args(args)
            .env("BABEL_TIMESTAMP", TIMESTAMP)
            .env_remove("BABEL_ROOT")
            .env_remove("BABEL_FAULT");
        command
    }

    /// Runs `babel validate --json` and returns the parsed report.
    pub fn validate_json(&self) -> serde_json::Value {
        let output = self.babel(&["validate", "--json"]).output().unwrap();
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "validate --json printed no JSON ({e}): {}",
                String::from_utf8_lossy(&output.stderr)
            )
        })
    }

    /// The run's records as parsed JSON values (`babel records`).
    pub fn records(&self, run: &str) -> Vec<serde_json::Value> {
        let output = self.babel(&["records", run]).output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// Every file under the archive root (ROOT-relative, sorted), `.babel/` excluded.
    pub fn files(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![self.root()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let entry = entry.unwrap();
                let path = entry.path();
                let relative = path
                    .strip_prefix(self.root())
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                if relative == ".babel" {
                    continue;
                }
                if path.is_dir() {
                    stack.push(path);
                } else {
                    out.push(relative);
                }
            }
        }
        out.sort();
        out
    }
}

/// A file of the repository's `examples/` folder, by its path there.
pub fn example(relative: &str) -> String {
    format!("{}/examples/{relative}", env!("CARGO_MANIFEST_DIR"))
}

impl Env {
    /// Registers the example item bank `capitals-bank` and protocol `capitals-0shot`.
    pub fn register_example_benchmark(&self) {
        for (kind, id, file) in [
            ("item-bank", "capitals-bank", "benchmark/item-bank.json"),
            ("protocol", "capitals-0shot", "benchmark/protocol.json"),
        ] {
            self.babel(&["artifact", "add", kind, id, &example(file)])
                .assert()
                .success();
        }
    }

    /// Creates the open strict run `run` of `model` under the example bank and protocol,
    /// holding `examples/benchmark/results/<results>.jsonl`.
    pub fn strict_run(&self, run: &str, model: &str, results: &str) {
        self.babel(&[
            "run",
            "create",
            run,
            "--model",
            model,
            "--benchmark",
            "world-capitals",
            "--item-bank",
            "capitals-bank",
            "--protocol",
            "capitals-0shot",
        ])
        .assert()
        .success();
        let file = example(&format!("benchmark/results/{results}.jsonl"));
        self.babel(&["import", run, "--format", "canonical", &file])
            .assert()
            .success();
    }
}

/// One canonical record line for question `q`, variant `v`.
pub fn canonical_line(q: &str, v: &str, correct: Option<bool>) -> String {
    serde_json::json!({
        "question_id": q,
        "variant_id": v,
        "language": "en",
        "input": {"question": format!("question {q}?")},
        "target": "a",
        "prediction": if correct == Some(true) { "a" } else { "b" },
        "correct": correct,
    })
    .to_string()
}

/// The rows of a records file as JSON objects, in the shape `babel records` prints (each
/// JSON column's value parsed), read with babel's own reader.
pub fn records_file_rows(path: &Path) -> Vec<serde_json::Value> {
    let mut rows = Vec::new();
    let mut stored = babel::record::StoredRecord::default();
    for batch in records_file_batches(path) {
        for row in 0..batch.len() {
            let mut line = Vec::new();
            batch.stored_record(row, &mut stored);
            stored.write_json_line(&mut line);
            rows.push(serde_json::from_slice(&line).unwrap());
        }
    }
    rows
}

/// The batches of every column of the records file at `path`, read with babel's reader.
pub fn records_file_batches(path: &Path) -> Vec<babel::archive::records::Batch> {
    use babel::archive::records::{Columns, RecordsFile};
    let file = std::fs::File::open(path).unwrap();
    RecordsFile::open(file)
        .unwrap()
        .batches(Columns::ALL)
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Writes rows (JSON objects in the shape of [`records_file_rows`]) as a records file with
/// babel's schema, the way a tool that edits records would: a JSON column gets the
/// canonical text of its value, or exactly the text of `{"$raw": TEXT}`. Returns the bytes.
pub fn write_records_file(path: &Path, rows: &[serde_json::Value]) -> Vec<u8> {
    use arrow_array::{ArrayRef, BooleanArray, RecordBatch, StringArray, UInt64Array};
    use babel::archive::records::{COLUMNS, Kind, SCHEMA_KEY, SCHEMA_VALUE, file_schema};
    use serde_json::Value;
    use std::sync::Arc;
    let field = |row: &Value, name: &str| -> Value {
        match name {
            "source_path" => row["source"]["path"].clone(),
            "source_line" => row["source"]["line"].clone(),
            "source_member" => row["source"]["member"].clone(),
            "source_pointer" => row["source"]["pointer"].clone(),
            _ => row[name].clone(),
        }
    };
    let columns: Vec<ArrayRef> = COLUMNS
        .iter()
        .map(|(_, name, kind)| -> ArrayRef {
            let values = rows.iter().map(|row| field(row, name));
            match kind {
                Kind::Label { .. } | Kind::Text => Arc::new(StringArray::from(
                    values
                        .map(|v| v.as_str().map(str::to_owned))
                        .collect::<Vec<_>>(),
                )),
                Kind::Json => Arc::new(StringArray::from(
                    values
                        .map(|v| match v.get("$raw").and_then(Value::as_str) {
                            Some(raw) => raw.to_owned(),
                            None => babel::canonical_json::to_canonical_string(&v).unwrap(),
                        })
                        .collect::<Vec<_>>(),
                )),
                Kind::Integer { .. } => Arc::new(UInt64Array::from(
                    values.map(|v| v.as_u64()).collect::<Vec<_>>(),
                )),
                Kind::Boolean => Arc::new(BooleanArray::from(
                    values.map(|v| v.as_bool()).collect::<Vec<_>>(),
                )),
            }
        })
        .collect();
    let batch = RecordBatch::try_new(file_schema(), columns).unwrap();
    let properties = parquet::file::properties::WriterProperties::builder()
        .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
            SCHEMA_KEY.to_owned(),
            SCHEMA_VALUE.to_owned(),
        )]))
        .build();
    let options = parquet::arrow::arrow_writer::ArrowWriterOptions::new()
        .with_properties(properties)
        .with_skip_arrow_metadata(true);
    let mut bytes = Vec::new();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new_with_options(&mut bytes, file_schema(), options)
            .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    std::fs::write(path, &bytes).unwrap();
    bytes
}

/// Rewrites the records file of import `import` (0-based) of `run` and its manifest entry
/// consistently, as a careless tool would, so that only the record-level checks can
/// notice.
pub fn rewrite_records(
    env: &Env,
    run: &str,
    import: usize,
    edit: impl Fn(&mut Vec<serde_json::Value>),
) {
    use serde_json::Value;
    let manifest_path = env.archived(&format!("runs/{run}/manifest.json"));
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    let entry = &mut manifest["imports"][import]["records"];
    let path = env.archived(&format!("runs/{run}/{}", entry["path"].as_str().unwrap()));
    let mut records = records_file_rows(&path);
    edit(&mut records);
    let bytes = write_records_file(&path, &records);
    entry["sha256"] = Value::String(babel::durable::digest_of(&bytes).sha256);
    entry["bytes"] = bytes.len().into();
    let canonical = babel::canonical_json::to_canonical_bytes(&manifest).unwrap();
    std::fs::write(manifest_path, canonical).unwrap();
}

/// How long an import takes, for the crash tests that spread their kills over it.
///
/// A duration measured once goes stale: the tests running beside a crash test come and
/// go, so an import can take half or twice as long later in the loop, and kills aimed by
/// the first figure would mostly land after the import ended (or before it began). The
/// clock starts from the fastest of three imports and then learns from every import it
/// aims at: one that ended by itself took that long; one still running when killed took
/// at least that long.
pub struct ImportClock {
    typical: std::time::Duration,
}

/// What [`ImportClock::kill_import`] did: the status the process ended with and when the kill
/// was aimed.
pub struct Kill {
    pub status: std::process::ExitStatus,
    pub delay: std::time::Duration,
}

impl ImportClock {
    /// Times importing `input` (canonical lines) into a fresh run, three times.
    pub fn measure(input: &[u8]) -> Self {
        let typical = (0..3)
            .map(|_| {
                let scratch = Env::with_run();
                let path = scratch.input("timed.jsonl", input);
                let started = std::time::Instant::now();
                scratch
                    .babel(&["import", "r1", "--format", "canonical", &path])
                    .assert()
                    .success();
                started.elapsed()
            })
            .min()
            .expect("three timings");
        Self { typical }
    }

    /// The current estimate of an import's duration.
    pub fn typical(&self) -> std::time::Duration {
        self.typical
    }

    /// Starts `babel import RUN --format canonical INPUT` in `env` and SIGKILLs it `at`
    /// times the typical duration after it started, unless it ended first; then moves the
    /// estimate halfway towards what was seen.
    pub fn kill_import(&mut self, env: &Env, run: &str, input: &str, at: f64) -> Kill {
        use std::process::{Command, Stdio};
        use std::time::{Duration, Instant};
        let delay = self.typical.mul_f64(at);
        let started = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_babel"))
            .current_dir(env.path())
            .args([
                "--root",
                "archive",
                "import",
                run,
                "--format",
                "canonical",
                input,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                self.typical = (self.typical + started.elapsed()) / 2;
                return Kill { status, delay };
            }
            let elapsed = started.elapsed();
            if elapsed >= delay {
                break;
            }
            std::thread::sleep((delay - elapsed).min(Duration::from_micros(200)));
        }
        let _ = child.kill();
        let status = child.wait().unwrap();
        if delay > self.typical {
            self.typical = (self.typical + delay) / 2;
        }
        Kill { status, delay }
    }
}

/// `babel ARGS --json`, which must succeed, its stdout parsed.
pub fn babel_json(env: &Env, args: &[&str]) -> serde_json::Value {
    let output = env.babel(args).arg("--json").output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// CLI output made stable for a snapshot: the environment folder becomes `ENV`, the
/// repository (where fixtures are) `REPO`, and every
/// run of 12 or more hex digits (a SHA-256 or its prefix, which varies with the babel
/// version recorded in manifests and history) becomes `HASH`.
pub fn stable_output(env: &Env, text: &str) -> String {
    let text = text
        .replace(&env.path().to_string_lossy().into_owned(), "ENV")
        .replace(env!("CARGO_MANIFEST_DIR"), "REPO");
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    for c in text.chars().chain(std::iter::once('\n')) {
        if c.is_ascii_hexdigit() {
            run.push(c);
            continue;
        }
        if run.len() >= 12 {
            out.push_str("HASH");
        } else {
            out.push_str(&run);
        }
        run.clear();
        out.push(c);
    }
    out.pop();
    out
}

/// SHA-256 as lowercase hex, computed with `sha2` independently of babel.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Rewrites the archive's history as an attacker who knows the format would: `edit`
/// changes the parsed entries, then every entry is re-chained and the head rewritten, so
/// the history is self-consistent again. Only an anchor (`validate --since`) can tell.
pub fn rechain_history(env: &Env, edit: impl FnOnce(&mut Vec<serde_json::Value>)) {
    let log = env.archived("history/log.jsonl");
    let mut entries: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    edit(&mut entries);
    let mut out = Vec::new();
    let mut prev = serde_json::Value::Null;
    for entry in &mut entries {
        entry["prev"] = prev.clone();
        let bytes = babel::canonical_json::to_canonical_bytes(&*entry).unwrap();
        prev = sha256_hex(&bytes).into();
        out.extend_from_slice(&bytes);
    }
    std::fs::write(&log, out).unwrap();
    let head = serde_json::json!({"seq": entries.len(), "sha256": prev});
    std::fs::write(
        env.archived("history/HEAD"),
        babel::canonical_json::to_canonical_bytes(&head).unwrap(),
    )
    .unwrap();
}

/// Rewrites the whole history as one `adopt` entry that snapshots every manifest now on
/// disk, re-chained: what a forger who controls the only copy does after an edit (trust
/// on first use makes it a valid history), so that only the checks below the history, or
/// an anchor cited before, can find it.
pub fn launder_history(env: &Env) {
    let layout = babel::archive::layout::Layout::new(env.root());
    let mut manifests = serde_json::Map::new();
    let mut changes = Vec::new();
    for path in babel::archive::history::manifests_on_disk(&layout).unwrap() {
        let bytes = std::fs::read(env.archived(&path)).unwrap();
        manifests.insert(path.clone(), sha256_hex(&bytes).into());
        let manifest: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        changes.push(serde_json::json!({"change": "snapshot", "path": path, "manifest": manifest}));
    }
    rechain_history(env, |entries| {
        let mut adopt = entries[0].clone();
        adopt["operation"] = "adopt".into();
        adopt["subject"] = ".".into();
        adopt["manifests"] = manifests.into();
        adopt["changes"] = changes.into();
        *entries = vec![adopt];
    });
}

/// A tmpfs mounted for a test's life (it needs root, or CAP_SYS_ADMIN).
pub struct Tmpfs {
    pub path: PathBuf,
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(&self.path)
            .status();
    }
}

/// A tmpfs of `size` (`4m`, `16m`) at `tmpfs/` in the environment, or `None` with one
/// line saying why the test is skipped; `BABEL_REQUIRE_ROOT=1` (set by the reliability
/// script when it runs as root) makes that a failure.
pub fn tmpfs_or_skip(env: &Env, size: &str) -> Option<Tmpfs> {
    let at = env.path().join("tmpfs");
    std::fs::create_dir_all(&at).unwrap();
    let output = std::process::Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            &format!("size={size},mode=0755"),
            "tmpfs",
        ])
        .arg(&at)
        .output();
    let reason = match output {
        Ok(output) if output.status.success() => return Some(Tmpfs { path: at }),
        Ok(output) => format!(
            "mount -t tmpfs failed (not root, or no CAP_SYS_ADMIN): {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ),
        Err(error) => format!("cannot run mount: {error}"),
    };
    skip_needing_root(&format!("no tmpfs: {reason}"));
    None
}

/// Skips a test that needs root, with one line saying why; `BABEL_REQUIRE_ROOT=1` (set by
/// the reliability script when it runs as root) makes that a failure.
fn skip_needing_root(reason: &str) {
    assert!(
        std::env::var("BABEL_REQUIRE_ROOT").as_deref() != Ok("1"),
        "BABEL_REQUIRE_ROOT=1 but {reason}"
    );
    skip_line(reason);
}

/// A memory cgroup made for a test, with a limit, removed when dropped (once the
/// processes started in it have ended).
pub struct MemoryCgroup {
    dir: PathBuf,
}

impl MemoryCgroup {
    /// A new memory cgroup limited to `limit` bytes, under the root of the machine's
    /// memory hierarchy (cgroup v1's memory controller, or cgroup v2 where its root hands
    /// the controller down), or `None` with one line saying why the test is skipped
    /// (it needs root).
    pub fn create_or_skip(limit: u64) -> Option<MemoryCgroup> {
        match Self::create(limit) {
            Ok(cgroup) => Some(cgroup),
            Err(reason) => {
                skip_needing_root(&format!("no memory cgroup: {reason}"));
                None
            }
        }
    }

    fn create(limit: u64) -> Result<MemoryCgroup, String> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|error| format!("cannot read /proc/self/mountinfo: {error}"))?;
        // `id parent major:minor root mount options ... - type source super-options`.
        let mount = mountinfo.lines().find_map(|line| {
            let (mount, filesystem) = line.split_once(" - ")?;
            let fields: Vec<&str> = mount.split(' ').collect();
            let filesystem: Vec<&str> = filesystem.split(' ').collect();
            let point = PathBuf::from(fields.get(4)?);
            let whole_tree = fields.get(3) == Some(&"/");
            let v1_memory = filesystem[0] == "cgroup"
                && filesystem
                    .get(2)?
                    .split(',')
                    .any(|option| option == "memory");
            let v2_memory = filesystem[0] == "cgroup2"
                && std::fs::read_to_string(point.join("cgroup.subtree_control"))
                    .is_ok_and(|controllers| controllers.split_whitespace().any(|c| c == "memory"));
            (whole_tree && (v1_memory || v2_memory)).then_some((point, v1_memory))
        });
        let (point, v1) = mount.ok_or("no memory controller mounted whole")?;
        // On v1 the test's cgroup is made inside this process's own, so babel stays under
        // whatever limits the test runs beneath (a job's, a container's); v2 allows no
        // processes beside a child that takes the controller, except at its root.
        let parent = match v1 {
            true => {
                let cgroups = std::fs::read_to_string("/proc/self/cgroup")
                    .map_err(|error| format!("cannot read /proc/self/cgroup: {error}"))?;
                let own = cgroups
                    .lines()
                    .find_map(|line| {
                        let mut fields = line.splitn(3, ':');
                        let (_, controllers) = (fields.next()?, fields.next()?);
                        let path = fields.next()?;
                        controllers
                            .split(',')
                            .any(|c| c == "memory")
                            .then_some(path)
                    })
                    .ok_or("this process has no v1 memory cgroup")?;
                point.join(own.trim_start_matches('/'))
            }
            false => point,
        };
        remove_stale_cgroups(&parent);
        static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let made = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = parent.join(format!("babel-test-{}-{made}", std::process::id()));
        std::fs::create_dir(&dir)
            .map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
        let cgroup = MemoryCgroup { dir };
        let file = if v1 {
            "memory.limit_in_bytes"
        } else {
            "memory.max"
        };
        std::fs::write(cgroup.dir.join(file), limit.to_string())
            .map_err(|error| format!("cannot limit {}: {error}", cgroup.dir.display()))?;
        Ok(cgroup)
    }
}

/// Removes the cgroups under `parent` that tests of a process no longer running left
/// (one killed before its cleanup).
fn remove_stale_cgroups(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix("babel-test-")
            .and_then(|rest| rest.split('-').next());
        if let Some(pid) = pid
            && !Path::new("/proc").join(pid).exists()
        {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        if let Err(error) = std::fs::remove_dir(&self.dir) {
            eprintln!(
                "cannot remove the test's cgroup {}: {error}",
                self.dir.display()
            );
        }
    }
}

/// Every file and folder under `root`, `.babel/` included (relative, sorted, folders
/// ending in `/`): what a write that must leave nothing behind is compared with.
pub fn files_under(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                out.push(format!("{relative}/"));
                stack.push(path);
            } else {
                out.push(relative);
            }
        }
    }
    out.sort();
    out
}

/// An outside tool a test needs (Python packages, a browser, a validator): what it is, the
/// `.ci/setup-*` script that installs it, and whether it answered when probed.
pub struct Tool {
    what: String,
    setup: &'static str,
    present: bool,
}

impl Tool {
    /// `what`, which `.ci/{setup}` installs, is present when `probe` runs and exits 0.
    pub fn probe(
        what: impl Into<String>,
        setup: &'static str,
        probe: &mut std::process::Command,
    ) -> Tool {
        use std::process::Stdio;
        let present = probe
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        Tool {
            what: what.into(),
            setup,
            present,
        }
    }
}

/// Whether a test that needs outside tools can run. When one is missing, the test is
/// skipped with one line naming it and the `.ci/setup-*` script that installs it, unless
/// `BABEL_REQUIRE_TOOLS=1` (which `.ci/test` sets) makes that a failure.
pub fn tools_or_skip(tools: &[Tool]) -> bool {
    let missing: Vec<&Tool> = tools.iter().filter(|tool| !tool.present).collect();
    if missing.is_empty() {
        return true;
    }
    let what = missing
        .iter()
        .map(|tool| tool.what.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let mut setups: Vec<String> = missing
        .iter()
        .map(|tool| format!(".ci/{}", tool.setup))
        .collect();
    setups.sort();
    setups.dedup();
    let setups = setups.join(", ");
    let them = if missing.len() == 1 { "it" } else { "them" };
    assert!(
        std::env::var("BABEL_REQUIRE_TOOLS").as_deref() != Ok("1"),
        "BABEL_REQUIRE_TOOLS=1, but this test is missing {what}: run .ci/test, which installs {them} ({setups})"
    );
    skip_line(&format!(
        "missing {what}; .ci/test installs {them} ({setups})"
    ));
    false
}

/// Prints `SKIPPED <test>: <reason>` on one line, straight to stderr past the test
/// harness's capture, so that a plain `cargo test` shows every skip.
fn skip_line(reason: &str) {
    use std::io::Write;
    let current = std::thread::current();
    let test = current.name().unwrap_or("a test");
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
}

/// The Python the tests run DuckDB, pandas, pyarrow, `datasets` and girth with: the
/// project's venv `target/ci/venv`, where `.ci/setup-data-tools` and `.ci/setup-girth`
/// install them, else `python3` on the PATH.
pub fn python() -> PathBuf {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ci/venv/bin/python");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// [`python()`] importing `modules` (`"duckdb, pandas"`), which `.ci/{setup}` installs.
pub fn python_with(modules: &str, setup: &'static str) -> Tool {
    Tool::probe(
        format!("Python (import {modules})"),
        setup,
        std::process::Command::new(python()).args(["-c", &format!("import {modules}")]),
    )
}

/// Debian's headless Chromium, where `.ci/setup-browser` installs it.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// The `node_modules` folder holding the playwright-core `.ci/setup-browser` installs: the
/// browser drivers' `NODE_PATH`.
pub fn playwright_modules() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ci/playwright/node_modules")
}

/// [`CHROMIUM`], answering `--version`.
pub fn chromium() -> Tool {
    Tool::probe(
        format!("Chromium at {CHROMIUM}"),
        "setup-browser",
        std::process::Command::new(CHROMIUM).arg("--version"),
    )
}

/// node, loading playwright-core from [`playwright_modules()`].
pub fn playwright() -> Tool {
    Tool::probe(
        "node with playwright-core",
        "setup-browser",
        std::process::Command::new("node")
            .args(["-e", "require('playwright-core')"])
            .env("NODE_PATH", playwright_modules()),
    )
}

/// An import of `input` into `run` expected to be refused: its stderr, after checking that
/// it exited 1 (rejected input) or 2 (an input the format cannot read at all) and wrote
/// nothing (no record, no raw file left behind).
pub fn refused_import(env: &Env, run: &str, format: &str, args: &[&str], input: &Path) -> String {
    let output = env
        .babel(&["import", run, "--format", format])
        .args(args)
        .arg(input)
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(matches!(output.status.code(), Some(1 | 2)), "{stderr}");
    assert!(env.records(run).is_empty(), "nothing was written: {stderr}");
    let raw = env.archived(&format!("runs/{run}/raw"));
    assert!(
        !raw.exists() || std::fs::read_dir(&raw).unwrap().next().is_none(),
        "no raw file is left behind: {stderr}"
    );
    stderr
}

/// Peak resident memory (KiB) of `babel import RUN --format FORMAT INPUT`, quietly
/// ([`peak_kib`]).
pub fn import_peak_kib(env: &Env, run: &str, format: &str, input: &Path) -> u64 {
    let args: [&OsStr; 6] = [
        "-q".as_ref(),
        "import".as_ref(),
        run.as_ref(),
        "--format".as_ref(),
        format.as_ref(),
        input.as_os_str(),
    ];
    peak_kib(env, &args)
}

/// Peak resident memory (KiB) of the real binary run with `args` on `env`'s archive, as the
/// kernel accounts for a child process (getrusage through Python's standard library); the
/// command must succeed (its stderr is shown if not). Its stdout is discarded.
pub fn peak_kib(env: &Env, args: &[&OsStr]) -> u64 {
    let script = "import resource, subprocess, sys\n\
                  code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n\
                  print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)";
    let output = std::process::Command::new("python3")
        .current_dir(env.path())
        .args([
            "-c",
            script,
            env!("CARGO_BIN_EXE_babel"),
            "--root",
            "archive",
        ])
        .args(args)
        .output()
        .expect("python3 measures the child's peak memory");
    let text = String::from_utf8(output.stdout).unwrap();
    let fields: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(
        fields.get(1),
        Some(&"0"),
        "babel {args:?} fails: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    fields[0].parse().unwrap()
}

/// Runs h (lm-evaluation-harness), i (Inspect) and m (HELM) of questions q001..q020,
/// each of the model its framework names, filed under benchmark babel_mc.
pub fn producer_runs() -> Env {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let env = Env::with_archive();
    let harness: Vec<_> = std::fs::read_dir(format!("{fixtures}/lm-eval-0.4.13/original/dummy-p"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().unwrap().contains("samples_babel_mc_original_"))
        .collect();
    let inspect = format!(
        "{fixtures}/inspect-ai-0.3.285/logs/seed1/2026-12-03T14-54-39-00-00_babel-mc_L3aC6TktMr8Qp7aQ5S3fqq.eval"
    );
    let helm = format!("{fixtures}/crfm-helm-0.5.16/runs/babel_mc:model=simple_model1");
    for (run, model, format, input) in [
        (
            "h",
            "dummy",
            "harness",
            harness[0].to_str().unwrap().to_owned(),
        ),
        ("i", "mockllm/model", "inspect", inspect),
        ("m", "simple/model1", "helm", helm),
    ] {
        env.babel(&["run", "create", run, "--model", model])
            .assert()
            .success();
        env.babel(&[
            "import",
            run,
            "--format",
            format,
            "--benchmark",
            "babel_mc",
            &input,
        ])
        .assert()
        .success();
    }
    env
}
