//! "Import is streaming: memory does not grow with input size beyond the identity set."
//! Peak memory of importing a file and a file three times as long (three times the
//! identities too) differs by far less than the extra bytes read. The peak is a maximum over the run,
//! so it wobbles by a few MiB with how many batches happen to be in flight at once and how
//! the allocator's arenas fill; the extra input (about 110 MiB) is large enough that this
//! wobble cannot be mistaken for holding the input. Both files are long enough for the
//! import to reach its steady state (every queue full): with a 19 MB small file the queues
//! had not filled, and the difference (8-21 MiB, up to 18 run alone) was that, not growth.

use crate::common::Env;

/// Peak resident memory (KiB) of the real binary importing `file`.
fn peak_kib(env: &Env, run: &str, file: &str) -> u64 {
    env.babel(&["run", "create", run, "--model", "m1", "--benchmark", "b"])
        .assert()
        .success();
    peak_of(env, &["import", run, "--format", "canonical", "-q", file])
}

/// Peak resident memory (KiB) of the real binary run with `args` on the archive.
fn peak_of(env: &Env, args: &[&str]) -> u64 {
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|arg| arg.as_ref()).collect();
    crate::common::peak_kib(env, &args)
}

fn input(env: &Env, name: &str, lines: usize, record_bytes: usize) -> (String, u64) {
    let padding = "x".repeat(record_bytes);
    let text: String = (0..lines)
        .map(|q| {
            format!(
                "{{\"question_id\": \"{name}-{q}\", \"variant_id\": \"original\", \"input\": {{\"prompt\": \"{padding}\"}}, \"correct\": true}}\n"
            )
        })
        .collect();
    let bytes = text.len() as u64;
    (env.input(name, text), bytes)
}

/// Imports a file of `lines` records of `record_bytes` and one three times as long, and
/// holds the growth of the peak to a third of the extra input.
fn memory_is_flat(lines: usize, record_bytes: usize) {
    let env = Env::with_archive();
    let (small, small_bytes) = input(&env, "small.jsonl", lines, record_bytes);
    let (large, large_bytes) = input(&env, "large.jsonl", lines * 3, record_bytes);
    let small_peak = peak_kib(&env, "r-small", &small);
    let large_peak = peak_kib(&env, "r-large", &large);
    let extra_input_kib = (large_bytes - small_bytes) / 1024;
    let growth = large_peak.saturating_sub(small_peak);
    println!("peak {small_peak} KiB for {small_bytes} B, {large_peak} KiB for {large_bytes} B");
    assert!(
        growth * 3 < extra_input_kib,
        "memory grew by {growth} KiB for {extra_input_kib} KiB more input"
    );
}

#[test]
fn import_memory_does_not_grow_with_the_bytes_read() {
    // 72,000 more identities cost a few MiB; holding the input would cost ~110 MiB.
    memory_is_flat(36_000, 1500);
}

/// Long-context records (400 KB each): what the encoder has not taken yet is bounded by
/// its text, not only by its count of records, so a file three times as long still costs
/// no more memory. Held by count alone, 300 such records (120 MB) waited for the encoder.
#[test]
fn import_memory_does_not_grow_with_long_records() {
    memory_is_flat(100, 400_000);
}

/// A bundle's row root covers every record of a records file: exporting and verifying a
/// run of 300,000 records holds one record at a time, not every row's entry (built whole,
/// the envelope of a million rows took 3 GB in both commands).
#[test]
fn a_bundle_of_many_records_is_exported_and_verified_in_bounded_memory() {
    let env = Env::with_archive();
    let (file, _) = input(&env, "many.jsonl", 300_000, 10);
    env.babel(&["run", "create", "many", "--model", "m1", "--benchmark", "b"])
        .assert()
        .success();
    env.babel(&["import", "many", "--format", "canonical", "-q", &file])
        .assert()
        .success();
    env.babel(&["seal", "many"]).assert().success();
    let export = peak_of(&env, &["export", "--run", "many", "-q", "many.tar.zst"]);
    let verify = peak_of(&env, &["verify-bundle", "-q", "many.tar.zst"]);
    println!("peak {export} KiB exporting, {verify} KiB verifying 300,000 records");
    // The rows' entries alone were about 900 MB; what remains is the records reader's.
    for peak in [export, verify] {
        assert!(peak < 300 * 1024, "peak {peak} KiB");
    }
}

/// An Every Eval Ever export writes each instance row as it is made: a run three times as
/// long costs no more memory. Holding every row, and then each samples file whole, the
/// export of a million records took 2.5 GB.
#[test]
fn an_every_eval_ever_export_holds_no_run_s_rows() {
    let env = Env::with_archive();
    let mut peaks = Vec::new();
    let mut output_kib = Vec::new();
    // Both runs are long enough for validate's and the records reader's batches (4,096
    // records) to reach their size and for the export's batches in flight (two per
    // worker) to fill on up to 8 cores: 17 batches and more.
    for (run, lines) in [("small", 72_000), ("large", 216_000)] {
        let (file, _) = input(&env, &format!("{run}.jsonl"), lines, 300);
        env.babel(&[
            "run",
            "create",
            run,
            "--model",
            "org/m1",
            "--benchmark",
            "b",
        ])
        .assert()
        .success();
        env.babel(&["import", run, "--format", "canonical", "-q", &file])
            .assert()
            .success();
        let dest = env.path().join(format!("eee-{run}"));
        peaks.push(peak_of(
            &env,
            &["export-eee", run, "-q", dest.to_str().unwrap()],
        ));
        output_kib.push(bytes_under(&dest) / 1024);
    }
    let (growth, extra) = (
        peaks[1].saturating_sub(peaks[0]),
        output_kib[1] - output_kib[0],
    );
    println!("peaks {peaks:?} KiB for {output_kib:?} KiB of EEE files");
    assert!(
        growth * 3 < extra,
        "memory grew by {growth} KiB for {extra} KiB more rows"
    );
}

/// The bytes of every file under `dir`.
fn bytes_under(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            match entry.file_type().unwrap().is_dir() {
                true => bytes_under(&entry.path()),
                false => entry.metadata().unwrap().len(),
            }
        })
        .sum()
}
