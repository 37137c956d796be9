//! `babel export` and `babel verify-bundle` (FORMAT.md "Release bundles"): the same
//! archive state gives the same bundle bytes, from two processes and from a second archive
//! built from the same inputs; GNU tar, zstd and sha256sum accept it; and hand-built
//! hostile bundles are each refused with a clear message.

use crate::common::{Env, Tool, tools_or_skip};
use babel::bundle::tar;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A study: the example item bank, protocol and model panel, two sealed strict runs and
/// an open run.
fn study() -> Env {
    let env = crate::artifacts::registered();
    for run in ["demo-7b-step1000", "demo-7b-step2000"] {
        crate::artifacts::strict_run(&env, run, run, true);
    }
    env.babel(&["run", "create", "open-run", "--model", "m"])
        .assert()
        .success();
    env
}

fn export(env: &Env, out: &str) -> std::process::Output {
    env.babel(&[
        "export",
        "--run",
        "demo-7b-step1000",
        "--run",
        "demo-7b-step2000",
        out,
    ])
    .output()
    .unwrap()
}

fn verify(env: &Env, file: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let output = env
        .babel(&["verify-bundle"])
        .arg(file)
        .args(extra)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr),
    )
}

#[test]
fn the_same_archive_state_exports_the_same_bytes_from_two_processes_and_two_archives() {
    let (a, b) = (study(), study());
    for (env, out) in [
        (&a, "one.tar.zst"),
        (&a, "two.tar.zst"),
        (&b, "one.tar.zst"),
    ] {
        let output = export(env, out);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let sha = |env: &Env, name: &str| {
        crate::common::sha256_hex(&std::fs::read(env.path().join(name)).unwrap())
    };
    assert_eq!(
        sha(&a, "one.tar.zst"),
        sha(&a, "two.tar.zst"),
        "two processes"
    );
    assert_eq!(
        sha(&a, "one.tar.zst"),
        sha(&b, "one.tar.zst"),
        "a second archive from the same inputs"
    );
    let (code, text) = verify(
        &a,
        &a.path().join("one.tar.zst"),
        &["--expect-sha256", &sha(&a, "one.tar.zst")],
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("valid bundle: 4 component(s)"), "{text}");
    let (code, text) = verify(
        &a,
        &a.path().join("one.tar.zst"),
        &["--expect-sha256", &"0".repeat(64)],
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("not the expected"), "{text}");
}

#[test]
fn gnu_tar_zstd_and_sha256sum_accept_the_bundle() {
    if !tools_or_skip(&[Tool::probe(
        "GNU tar and zstd",
        "setup-bundle-tools",
        Command::new("sh").args(["-c", "zstd --version && tar --version | grep -q 'GNU tar'"]),
    )]) {
        return;
    }
    let env = study();
    assert!(export(&env, "study.tar.zst").status.success());
    let run = |program: &str, args: &[&str], at: &Path| {
        let output = Command::new(program)
            .args(args)
            .current_dir(at)
            .output()
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        assert!(
            output.status.success(),
            "{program} {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    run("zstd", &["-t", "study.tar.zst"], env.path());
    let listing = run("tar", &["-tvf", "study.tar.zst"], env.path());
    assert!(listing.contains("babel-bundle/manifest.json"), "{listing}");
    assert!(
        listing.lines().all(|l| l.contains(" 0/0 ")),
        "owners are 0: {listing}"
    );
    let out = env.path().join("extracted");
    std::fs::create_dir(&out).unwrap();
    run("tar", &["-xf", "../study.tar.zst"], &out);
    let checked = run(
        "sha256sum",
        &["-c", "checksums.sha256"],
        &out.join("babel-bundle"),
    );
    assert_eq!(
        checked.lines().count(),
        11,
        "every file but checksums.sha256: {checked}"
    );
}

#[test]
fn open_runs_are_refused_and_nothing_is_written() {
    let env = study();
    let output = env
        .babel(&["export", "--run", "open-run", "b.tar.zst"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("babel seal open-run"));
    assert!(!env.path().join("b.tar.zst").exists());
}

/// A bundle unpacked for editing (its zstd frame decoded here, the tar stream unpacked by
/// tar): the top folder's files by path.
fn unpack(env: &Env, bundle: &Path) -> PathBuf {
    let dir = env.path().join(format!(
        "edit-{}",
        bundle.file_name().unwrap().to_str().unwrap()
    ));
    std::fs::create_dir(&dir).unwrap();
    let tar_bytes = zstd::decode_all(std::fs::File::open(bundle).unwrap()).unwrap();
    let mut untar = Command::new("tar")
        .args(["-xf", "-"])
        .current_dir(&dir)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    untar.stdin.take().unwrap().write_all(&tar_bytes).unwrap();
    assert!(untar.wait().unwrap().success());
    dir
}

/// Packs raw tar members (header block, payload) into a zstd frame like babel's.
fn pack(members: &[(Vec<u8>, Vec<u8>)], out: &Path) {
    let mut tar_bytes = Vec::new();
    for (header, payload) in members {
        tar_bytes.extend_from_slice(header);
        tar_bytes.extend_from_slice(payload);
        tar_bytes.resize(tar_bytes.len().div_ceil(512) * 512, 0);
    }
    tar_bytes.extend_from_slice(&tar::END);
    let mut encoder =
        zstd::stream::write::Encoder::new(std::fs::File::create(out).unwrap(), 9).unwrap();
    encoder.include_checksum(true).unwrap();
    encoder.include_contentsize(true).unwrap();
    encoder
        .set_pledged_src_size(Some(tar_bytes.len() as u64))
        .unwrap();
    encoder.write_all(&tar_bytes).unwrap();
    encoder.finish().unwrap();
}

/// Every folder and file under `dir`, as profile members, in path byte order.
fn members_of(dir: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut paths = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(dir).unwrap().to_str().unwrap().to_owned();
            if path.is_dir() {
                paths.push((format!("{relative}/"), Vec::new()));
                stack.push(path);
            } else {
                paths.push((relative, std::fs::read(&path).unwrap()));
            }
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|(path, bytes)| {
            (
                tar::header(&path, bytes.len() as u64).unwrap().to_vec(),
                bytes,
            )
        })
        .collect()
}

/// A raw header with any typeflag, name and size (what a hostile tool writes).
fn raw_header(name: &str, typeflag: u8, size: u64, link: &str) -> Vec<u8> {
    let mut block = tar::header("babel-bundle/x", size).unwrap();
    block[..100].fill(0);
    block[..name.len()].copy_from_slice(name.as_bytes());
    block[156] = typeflag;
    block[157..157 + link.len()].copy_from_slice(link.as_bytes());
    if typeflag == b'2' {
        block[124..136].copy_from_slice(b"00000000000\0");
    }
    block[148..156].copy_from_slice(b"        ");
    let sum: u32 = block.iter().map(|b| u32::from(*b)).sum();
    block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    block.to_vec()
}

/// Re-derives manifest.json's file hashes, roots and checksums.sha256 after an edit, as a
/// careful forger would; the records files' row roots too when `row_roots`.
fn reseal(top: &Path, row_roots: bool) {
    let path = top.join("manifest.json");
    let mut manifest: babel::bundle::BundleManifest =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for component in &mut manifest.components {
        for file in &mut component.files {
            let bytes = std::fs::read(top.join(&file.path)).unwrap();
            file.sha256 = crate::common::sha256_hex(&bytes);
            file.bytes = bytes.len() as u64;
            if row_roots && file.role == "records" {
                let opened = std::fs::File::open(top.join(&file.path)).unwrap();
                let (rows, root) = babel::bundle::row_root(opened).unwrap();
                (file.rows, file.row_root) = (Some(rows), Some(root));
            }
        }
        component.root = babel::bundle::component_root(&component.name, &component.files);
    }
    manifest.bundle_root = babel::bundle::bundle_root(&manifest.components);
    let bytes = babel::bundle::manifest_bytes(&manifest);
    std::fs::write(&path, &bytes).unwrap();
    let checksums =
        babel::bundle::checksums(&crate::common::sha256_hex(&bytes), &manifest.components);
    std::fs::write(top.join("checksums.sha256"), checksums).unwrap();
}

#[test]
fn hostile_bundles_are_each_refused_with_what_is_wrong() {
    let env = study();
    assert!(export(&env, "good.tar.zst").status.success());
    let good = env.path().join("good.tar.zst");
    let unpacked = unpack(&env, &good);
    let top = unpacked.join("babel-bundle");
    let valid = members_of(&unpacked);
    let hostile = env.path().join("hostile.tar.zst");
    // Every hostile bundle is also offered to another archive's import-bundle, which must
    // refuse it the same way and write nothing.
    let target = Env::with_archive();
    let before = target.files();
    let refused = |members: &[(Vec<u8>, Vec<u8>)], extra: &[&str], expected: &str| {
        pack(members, &hostile);
        let (code, text) = verify(&env, &hostile, extra);
        assert_eq!(code, Some(1), "{expected}: {text}");
        assert!(text.contains(expected), "expected {expected:?} in: {text}");
        let output = target
            .babel(&["import-bundle"])
            .arg(&hostile)
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{expected}: {stderr}");
        assert!(
            stderr.contains(expected) && stderr.contains("nothing was imported"),
            "{stderr}"
        );
        assert_eq!(
            target.files(),
            before,
            "{expected}: the archive is as it was"
        );
    };
    // The repacked original is valid: the cases below differ from it in one way each.
    pack(&valid, &hostile);
    assert_eq!(verify(&env, &hostile, &[]).0, Some(0));

    let with = |member: (Vec<u8>, Vec<u8>)| {
        let mut members = valid.clone();
        members.insert(1, member);
        members
    };
    refused(
        &with((
            raw_header("babel-bundle/../evil", b'0', 4, ""),
            b"evil".to_vec(),
        )),
        &[],
        ".. path component",
    );
    refused(
        &with((raw_header("/etc/evil", b'0', 4, ""), b"evil".to_vec())),
        &[],
        "an absolute path",
    );
    refused(
        &with((raw_header("babel-bundle/a\\b", b'0', 1, ""), b"x".to_vec())),
        &[],
        "backslash",
    );
    refused(
        &with((
            raw_header("babel-bundle/link", b'2', 0, "/etc/passwd"),
            Vec::new(),
        )),
        &[],
        "member \"babel-bundle/link\": a link member",
    );
    refused(
        &with((raw_header("babel-bundle/dev", b'3', 0, ""), Vec::new())),
        &[],
        "a device",
    );
    refused(
        &with((raw_header("babel-bundle/pax", b'x', 0, ""), Vec::new())),
        &[],
        "PAX or GNU",
    );
    refused(
        &[valid.clone(), vec![valid[1].clone()]].concat(),
        &[],
        "out of order or repeated",
    );
    // Declared nowhere, though in order.
    let mut extra = valid.clone();
    extra.insert(
        2,
        (
            tar::header("babel-bundle/checksums.sha257", 1)
                .unwrap()
                .to_vec(),
            b"x".to_vec(),
        ),
    );
    refused(&extra, &[], "not declared in manifest.json");
    // A member longer than its header says: its header claims 10 bytes of a longer file.
    let mut longer = valid.clone();
    let at = longer
        .iter()
        .position(|(h, _)| h.starts_with(b"babel-bundle/manifest.json"))
        .unwrap();
    let payload = longer[at].1.clone();
    longer[at].0 = tar::header("babel-bundle/manifest.json", 10)
        .unwrap()
        .to_vec();
    longer[at].1 = payload;
    refused(&longer, &[], "longer than its header says");
    // A bomb: 64 MiB of zeros compress to almost nothing; the ceilings stop it.
    let bomb = with((
        tar::header("babel-bundle/bomb", 64 << 20).unwrap().to_vec(),
        vec![0; 64 << 20],
    ));
    refused(
        &bomb,
        &["--max-expanded-bytes", "1000000"],
        "exceeds this verifier's ceiling",
    );
    // Undeclared, the same bomb is refused by name, nothing of it written.
    refused(&bomb, &[], "bomb is in the archive but not declared");
    // A declared file beyond a ceiling the user sets is refused before unpacking.
    refused(
        &valid,
        &["--max-file-bytes", "100"],
        "more than the 100 this verifier accepts",
    );
    // A member whose header says another size than manifest.json declares is refused
    // before anything of it is written.
    let mut resized = valid.clone();
    let path_of = |header: &[u8]| tar::path_of(header.try_into().unwrap());
    let at = resized
        .iter()
        .position(|(h, _)| {
            let path = path_of(h);
            path.starts_with("babel-bundle/runs/") && !path.ends_with('/')
        })
        .unwrap();
    let path = path_of(&resized[at].0);
    let mut payload = resized[at].1.clone();
    payload.push(b'\n');
    resized[at].0 = tar::header(&path, payload.len() as u64).unwrap().to_vec();
    resized[at].1 = payload;
    refused(&resized, &[], "but manifest.json declares");

    // A changed record, with every file hash, root and checksum updated to match: only
    // the records file's row root can tell.
    let records = top.join("runs/demo-7b-step1000/records/0001.parquet");
    let mut rows = crate::common::records_file_rows(&records);
    rows[0]["correct"] = Value::Bool(!rows[0]["correct"].as_bool().unwrap());
    crate::common::write_records_file(&records, &rows);
    reseal(&top, false);
    refused(&members_of(&unpacked), &[], "row root");
    // The row roots re-derived too: the run's sealed manifest still registers the old file.
    reseal(&top, true);
    refused(
        &members_of(&unpacked),
        &[],
        "differ from what runs/demo-7b-step1000/manifest.json registers",
    );

    // An artifact copied into a folder of another ID, and a component named to escape.
    for (name, expected) in [
        ("item-banks/evil", "does not live in item-banks/evil"),
        ("item-banks/..", "component \"item-banks/..\""),
    ] {
        std::fs::remove_dir_all(&unpacked).unwrap();
        let unpacked = unpack(&env, &good);
        let top = unpacked.join("babel-bundle");
        let path = top.join("manifest.json");
        let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let components = manifest["components"].as_array_mut().unwrap();
        let mut copy = components[0].clone();
        assert_eq!(copy["name"], "item-banks/capitals-bank");
        copy["name"] = name.into();
        for file in copy["files"].as_array_mut().unwrap() {
            let renamed = file["path"]
                .as_str()
                .unwrap()
                .replace("item-banks/capitals-bank", name);
            if !name.ends_with("..") {
                let from = top.join(file["path"].as_str().unwrap());
                std::fs::create_dir_all(top.join(name)).unwrap();
                std::fs::copy(from, top.join(&renamed)).unwrap();
            }
            file["path"] = renamed.into();
        }
        if name.ends_with("..") {
            copy["files"] = serde_json::json!([]);
        }
        components.push(copy);
        components.sort_by_key(|c| c["name"].as_str().unwrap().to_owned());
        std::fs::write(
            &path,
            babel::canonical_json::to_canonical_bytes(&manifest).unwrap(),
        )
        .unwrap();
        reseal(&top, false);
        refused(&members_of(&unpacked), &[], expected);
    }

    // A missing dependency: the item bank left out, everything else consistent.
    std::fs::remove_dir_all(&unpacked).unwrap();
    let unpacked = unpack(&env, &good);
    let top = unpacked.join("babel-bundle");
    std::fs::remove_dir_all(top.join("item-banks")).unwrap();
    let path = top.join("manifest.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    manifest["components"]
        .as_array_mut()
        .unwrap()
        .retain(|c| c["name"] != "item-banks/capitals-bank");
    std::fs::write(
        &path,
        babel::canonical_json::to_canonical_bytes(&manifest).unwrap(),
    )
    .unwrap();
    reseal(&top, false);
    refused(&members_of(&unpacked), &[], "a missing dependency");

    // A run whose manifest names another model, every hash, root and checksum made to
    // match: the bundle is whole, but its records belong to another run than the one it
    // names, which the archive's own validate would refuse once imported.
    std::fs::remove_dir_all(&unpacked).unwrap();
    let unpacked = unpack(&env, &good);
    let top = unpacked.join("babel-bundle");
    let path = top.join("runs/demo-7b-step2000/manifest.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    manifest["metadata"]["model"] = "another-model".into();
    std::fs::write(
        &path,
        babel::canonical_json::to_canonical_bytes(&manifest).unwrap(),
    )
    .unwrap();
    reseal(&top, false);
    refused(
        &members_of(&unpacked),
        &[],
        "does not pass babel validate (17 finding(s); the first 5 below; its maker can run `babel validate`",
    );
    refused(
        &members_of(&unpacked),
        &[],
        "\n  runs/demo-7b-step2000/records/0001.parquet row 1: [record] model \"demo-org/demo-7b\" \
         differs from the run's model \"another-model\"\n",
    );

    // A run manifest padded past the largest manifest a verifier reads (every hash made to
    // match): refused from what manifest.json declares, before it is read into memory.
    let mut padded = babel::canonical_json::to_canonical_bytes(&manifest).unwrap();
    padded.resize(padded.len() + (64 << 20), b' ');
    let expected = format!(
        "runs/demo-7b-step2000/manifest.json is declared as {} bytes, more than the 67108864 \
         a verifier parses of a manifest or payload",
        padded.len()
    );
    std::fs::write(&path, padded).unwrap();
    reseal(&top, false);
    refused(&members_of(&unpacked), &[], &expected);
    // An artifact's payload alike: parsed whole, and as well compressed.
    std::fs::write(
        &path,
        babel::canonical_json::to_canonical_bytes(&manifest).unwrap(),
    )
    .unwrap();
    let bundle_manifest: Value =
        serde_json::from_slice(&std::fs::read(top.join("manifest.json")).unwrap()).unwrap();
    let payload = bundle_manifest["components"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["files"].as_array().unwrap())
        .find(|f| f["role"] == "artifact-payload")
        .unwrap()["path"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut padded = std::fs::read(top.join(&payload)).unwrap();
    padded.resize(padded.len() + (64 << 20), b' ');
    let expected = format!(
        "{payload} is declared as {} bytes, more than the 67108864 a verifier parses",
        padded.len()
    );
    std::fs::write(top.join(&payload), padded).unwrap();
    reseal(&top, false);
    refused(&members_of(&unpacked), &[], &expected);

    // Bytes after the frame, and a file that is not zstd at all.
    let mut trailing = std::fs::read(&good).unwrap();
    trailing.extend_from_slice(b"more");
    std::fs::write(&hostile, trailing).unwrap();
    let (code, text) = verify(&env, &hostile, &[]);
    assert_eq!(code, Some(1));
    assert!(text.contains("bytes after the zstd frame"), "{text}");
    std::fs::write(&hostile, b"not a bundle").unwrap();
    let (code, text) = verify(&env, &hostile, &[]);
    assert_eq!(code, Some(1));
    assert!(text.contains("not a zstd"), "{text}");
}

#[test]
fn a_release_exports_with_everything_it_pins() {
    let env = study();
    let sha =
        |relative: &str| crate::common::sha256_hex(&std::fs::read(env.archived(relative)).unwrap());
    let release = serde_json::json!({
        "format": "babel-release",
        "schema_version": 1,
        "name": "capitals 2026.1",
        "artifacts": [
            {"kind": "item-bank", "id": "capitals-bank", "sha256": sha("item-banks/capitals-bank/artifact.json")},
            {"kind": "protocol", "id": "capitals-0shot", "sha256": sha("protocols/capitals-0shot/artifact.json")}
        ],
        "runs": [
            {"run_id": "demo-7b-step2000", "manifest_sha256": sha("runs/demo-7b-step2000/manifest.json")}
        ]
    });
    let file = env.input("release.json", release.to_string());
    env.babel(&["artifact", "add", "release", "paper", &file])
        .assert()
        .success();
    let exported =
        crate::common::babel_json(&env, &["export", "--release", "paper", "paper.tar.zst"]);
    // The release's members and the release itself; not the study's other run.
    assert_eq!(
        exported["components"],
        serde_json::json!([
            "item-banks/capitals-bank",
            "protocols/capitals-0shot",
            "releases/paper",
            "runs/demo-7b-step2000"
        ])
    );
    let (code, text) = verify(&env, &env.path().join("paper.tar.zst"), &[]);
    assert_eq!(code, Some(0), "{text}");

    // A release of artifacts alone: its bundle has no runs folder, verifies and imports.
    let mut artifacts_only = release.clone();
    artifacts_only["runs"] = serde_json::json!([]);
    let file = env.input("artifacts.json", artifacts_only.to_string());
    env.babel(&["artifact", "add", "release", "bank-only", &file])
        .assert()
        .success();
    crate::common::babel_json(&env, &["export", "--release", "bank-only", "bank.tar.zst"]);
    let bundle = env.path().join("bank.tar.zst");
    let (code, text) = verify(&env, &bundle, &[]);
    assert_eq!(code, Some(0), "{text}");
    let target = Env::with_archive();
    target
        .babel(&["import-bundle"])
        .arg(&bundle)
        .assert()
        .success();
    assert_eq!(target.validate_json()["ok"], true);
}

#[test]
fn an_imported_bundle_is_published_whole_validates_and_names_its_bundle_in_the_history() {
    let source = study();
    assert!(export(&source, "study.tar.zst").status.success());
    let bundle = source.path().join("study.tar.zst");
    let sha = crate::common::sha256_hex(&std::fs::read(&bundle).unwrap());
    let target = Env::with_archive();
    let imported = crate::common::babel_json(
        &target,
        &[
            "import-bundle",
            bundle.to_str().unwrap(),
            "--expect-sha256",
            &sha,
        ],
    );
    assert_eq!(
        imported["published"].as_array().unwrap().len(),
        4,
        "{imported}"
    );
    target.babel(&["validate"]).assert().success();
    for run in ["demo-7b-step1000", "demo-7b-step2000"] {
        assert_eq!(target.records(run), source.records(run), "{run}");
    }
    let log = crate::common::babel_json(&target, &["log"]);
    let last = log["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["operation"], "import-bundle");
    assert_eq!(last["bundle"]["sha256"], sha.as_str());
    assert_eq!(last["bundle"]["root"], imported["bundle_root"]);
    assert!(
        last["manifests"]
            .get("runs/demo-7b-step1000/manifest.json")
            .is_some(),
        "{last}"
    );

    // Again: nothing changes, not even the history.
    let head = std::fs::read(target.archived("history/HEAD")).unwrap();
    let again = crate::common::babel_json(&target, &["import-bundle", bundle.to_str().unwrap()]);
    assert_eq!(again["published"], serde_json::json!([]));
    assert_eq!(again["already_present"].as_array().unwrap().len(), 4);
    assert_eq!(
        std::fs::read(target.archived("history/HEAD")).unwrap(),
        head
    );
    // And the archive exports the same bundle, byte for byte.
    assert!(export(&target, "again.tar.zst").status.success());
    assert_eq!(
        std::fs::read(target.path().join("again.tar.zst")).unwrap(),
        std::fs::read(&bundle).unwrap()
    );

    // A present run edited outside babel is named as damaged, not taken for a bundle that
    // contradicts it.
    let manifest = target.archived("runs/demo-7b-step1000/manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("demo-org/demo-7b", "demo-org/other-7b"),
    )
    .unwrap();
    let stderr = refused_import(&target, &bundle);
    assert!(
        stderr.contains("runs/demo-7b-step1000/manifest.json is damaged: it differs from the manifest history entry"),
        "{stderr}"
    );
}

/// `import-bundle BUNDLE` into `target`, refused (exit 1) with nothing written: its
/// stderr.
fn refused_import(target: &Env, bundle: &Path) -> String {
    let before = target.files();
    let output = target
        .babel(&["import-bundle"])
        .arg(bundle)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(target.files(), before, "nothing was written");
    stderr
}

#[test]
fn a_bundle_that_contradicts_the_archive_is_refused_and_nothing_is_written() {
    let source = study();
    assert!(export(&source, "study.tar.zst").status.success());
    let bundle = source.path().join("study.tar.zst");
    // The same run ID, other results.
    let target = crate::artifacts::registered();
    crate::artifacts::strict_run(&target, "demo-7b-step1000", "demo-7b-step2000", true);
    let stderr = refused_import(&target, &bundle);
    assert!(
        stderr.contains("runs/demo-7b-step1000 is in this archive with root"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was imported"), "{stderr}");
    target.babel(&["validate"]).assert().success();
}

#[test]
fn a_bundle_that_declares_more_than_the_disk_holds_is_refused_before_anything_is_written() {
    // "Bundles: nothing is written before manifest.json is read and checked [...] the
    // defaults are sized from the bundle and the free space; a full disk is reported as a
    // full disk at its path, not as a bad bundle." (issue 18)
    let env = study();
    assert!(export(&env, "good.tar.zst").status.success());
    let unpacked = unpack(&env, &env.path().join("good.tar.zst"));
    let top = unpacked.join("babel-bundle");
    // A consistent bundle whose attachment is 256 MiB of zeros: a few kilobytes packed.
    let attachment = std::fs::read_dir(top.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find_map(|run| {
            let folder = run.join("attachments");
            folder.is_dir().then(|| {
                std::fs::read_dir(folder)
                    .unwrap()
                    .next()
                    .unwrap()
                    .unwrap()
                    .path()
            })
        });
    let target = attachment.unwrap_or_else(|| {
        let run = std::fs::read_dir(top.join("runs"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        std::fs::read_dir(run.join("raw"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
    });
    std::fs::write(&target, vec![0u8; 256 << 20]).unwrap();
    reseal(&top, false);
    let bomb = env.path().join("bomb.tar.zst");
    pack(&members_of(&unpacked), &bomb);
    assert!(std::fs::metadata(&bomb).unwrap().len() < 1 << 20);
    let Some(mounted) = crate::common::tmpfs_or_skip(&env, "16m") else {
        return;
    };
    let root = mounted.path.join("archive");
    let init = assert_cmd::Command::new(env!("CARGO_BIN_EXE_babel"))
        .arg("--root")
        .arg(&root)
        .arg("init")
        .output()
        .unwrap();
    assert!(init.status.success());
    let before = crate::common::files_under(&root);
    let output = assert_cmd::Command::new(env!("CARGO_BIN_EXE_babel"))
        .arg("--root")
        .arg(&root)
        .arg("import-bundle")
        .arg(&bomb)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("are free") && stderr.contains(&root.join(".babel").display().to_string()),
        "a full disk at its path: {stderr}"
    );
    assert_eq!(
        crate::common::files_under(&root),
        before,
        "nothing was written"
    );
}

#[test]
fn quiet_bundle_commands_print_nothing_and_still_do_their_work() {
    // `--quiet`: "Print nothing but errors (no progress bars, no summaries)".
    let source = study();
    let quiet = |env: &Env, args: &[&str]| {
        let output = env.babel(&["-q"]).args(args).output().unwrap();
        assert!(output.status.success(), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&output.stdout), "", "{args:?}");
        assert_eq!(String::from_utf8_lossy(&output.stderr), "", "{args:?}");
    };
    quiet(
        &source,
        &["export", "--run", "demo-7b-step1000", "study.tar.zst"],
    );
    let bundle = source.path().join("study.tar.zst");
    let bundle = bundle.to_str().unwrap();
    quiet(&source, &["verify-bundle", bundle]);
    let target = Env::with_archive();
    quiet(&target, &["import-bundle", bundle]);
    assert!(target.archived("runs/demo-7b-step1000").is_dir());
    quiet(&target, &["export-eee", "demo-7b-step1000", "eee"]);
    assert!(target.path().join("eee").is_dir());
}

/// The row root of the records file at `path` as the format defines it, computed the
/// way babel computed it before it hashed stored lines: each row read into a record
/// (which checks it, as validate does) and serialized, canonicalized by an independent
/// RFC 8785 implementation. An error for a row the record reader refuses.
fn tree_row_root(path: &Path) -> Result<(u64, String), String> {
    let canonical = |value: &Value| serde_json_canonicalizer::to_vec(value).unwrap();
    let mut rows = Vec::new();
    for batch in crate::common::records_file_batches(path) {
        for row in 0..batch.len() {
            let record = batch.record(row).map_err(|e| e.to_string())?;
            let record = serde_json::to_value(&record).unwrap();
            let identity = serde_json::json!([
                record["benchmark"],
                record["language"],
                record["script"],
                record["question_id"],
                record["variant_id"],
                record["filter"],
                record["repeat_id"]
            ]);
            rows.push(serde_json::json!([
                identity,
                crate::common::sha256_hex(&canonical(&record))
            ]));
        }
    }
    let count = rows.len() as u64;
    let envelope = serde_json::json!({"algorithm": "sha256-ordered-rows-v1", "rows": rows});
    Ok((count, crate::common::sha256_hex(&canonical(&envelope))))
}

/// The records file of run `run`.
fn records_file_of(env: &Env, run: &str) -> std::path::PathBuf {
    let dir = env.archived(&format!("runs/{run}"));
    let records_file = crate::common::files_under(&dir)
        .into_iter()
        .find(|path| path.ends_with(".parquet"))
        .unwrap();
    dir.join(records_file)
}

/// `row_root` of the file at `path`.
fn row_root_of(path: &Path) -> Result<(u64, String), String> {
    babel::bundle::row_root(std::fs::File::open(path).unwrap())
}

#[test]
fn a_row_root_is_the_format_s_envelope_hashed_whole() {
    let env = Env::with_run();
    let lines = "{\"question_id\": \"q\\\"1\\u00e9\\n\", \"variant_id\": \"original\", \"input\": {\"z\": 1e21, \"a\": [-0.0, 2.5]}, \"correct\": true}\n\
                 {\"question_id\": \"q2\", \"variant_id\": \"original\", \"language\": \"tr\", \"input\": {\"s\": \"\\u2028\"}, \"correct\": false, \"repeat_id\": 3}\n";
    let input = env.input("rows.jsonl", lines);
    env.babel(&["import", "r1", "--format", "canonical", &input])
        .assert()
        .success();
    let file = records_file_of(&env, "r1");
    let expected = tree_row_root(&file).unwrap();
    assert_eq!(expected.0, 2);
    assert_eq!(row_root_of(&file), Ok(expected));
}

/// Row roots hash each record's canonical JSON, which babel writes from the stored line
/// without a tree: the records of real producers' files (nested messages, scores,
/// metadata, non-ASCII text) give the root the format defines.
#[test]
fn the_row_roots_of_real_producers_records_are_the_format_s() {
    let env = crate::common::producer_runs();
    for run in ["h", "i", "m"] {
        let file = records_file_of(&env, run);
        let expected = tree_row_root(&file).unwrap();
        assert!(expected.0 > 0, "{run}");
        assert_eq!(row_root_of(&file), Ok(expected), "{run}");
    }
}

/// A row the record reader refuses (as validate does) has no row root, however well its
/// stored line reads as JSON; and one nested as deep as a record may be, which the
/// streaming reader cannot put in order inside its line, gets the tree's root.
#[test]
fn a_row_root_is_refused_where_the_record_reader_refuses_the_row() {
    let env = Env::with_run();
    let input = env.input(
        "one.jsonl",
        crate::common::canonical_line("q1", "original", Some(true)),
    );
    env.babel(&["import", "r1", "--format", "canonical", &input])
        .assert()
        .success();
    let row = crate::common::records_file_rows(&records_file_of(&env, "r1")).remove(0);
    let raw = |text: &str| serde_json::json!({"$raw": text});
    let damaged: [(&str, Value); 7] = [
        ("input", raw("{},\"zz\":1")),
        ("input", raw("{\"b\":1,\"a\":2}")),
        ("scores", raw("[]")),
        ("warnings", raw("[1]")),
        ("identity_scope", Value::from("bogus")),
        ("schema_version", Value::from(2)),
        ("benchmark", Value::from("")),
    ];
    for (field, value) in damaged {
        let mut bad = row.clone();
        bad[field] = value;
        let path = env.path().join("damaged.parquet");
        crate::common::write_records_file(&path, &[bad]);
        assert!(tree_row_root(&path).is_err(), "{field}");
        assert!(
            row_root_of(&path).is_err(),
            "{field}: a root for a row the reader refuses"
        );
    }
    let mut deep = row.clone();
    let nested = (0..125).fold(Value::from(1), |inner, _| Value::Array(vec![inner]));
    deep["input"] = serde_json::json!({ "x": nested });
    let path = env.path().join("deep.parquet");
    crate::common::write_records_file(&path, &[deep]);
    let expected = tree_row_root(&path).unwrap();
    assert_eq!(row_root_of(&path), Ok(expected));
}
