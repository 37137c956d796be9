"""The benchmark suite: generates its inputs deterministically, then measures babel beside
sha256sum, a plain Python implementation (bench/reference.py), pandas and DuckDB on the
same files, in one run. Prints a Markdown report; BENCHMARKS.md records the latest.

  python3 bench/suite.py full BABEL WORKDIR     the sizes of the targets (about 20 minutes)
  python3 bench/suite.py smoke BABEL WORKDIR    every step on tiny inputs (seconds): what the
                                                test suite runs to keep this script working

Every figure is one run's wall clock and the peak resident memory of that process
(os.wait4), with the inputs already in the page cache: each step reads what it will read
right before it starts (this machine pages out file pages left unread for about a minute,
BENCHMARKS.md "The machine"); the imports (with their sha256sum), the validates of the
harness runs and the item reports are the median of REPEATS runs, each after os.sync(),
each import into a fresh run (the panel's hundred imports are timed once each, after
one os.sync()). Run bench/run.sh rather than this file directly: it builds the release
binary first.
"""
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SIZES = {
    "full": {"harness_bytes": 200_000_000, "harness_big_bytes": 1_000_000_000,
             "canonical": 1_000_000, "fewshot_lines": 39_506, "short_items": 200_000,
             "panel_sides": 100, "panel_items": 100_000, "inspect_samples": 25_000,
             "lighteval_rows": 200_000, "helm_states": 20_000, "paired_lines": 200_000,
             "eee_rows": 100_000},
    "smoke": {"harness_bytes": 1_000_000, "harness_big_bytes": 3_000_000,
              "canonical": 5_000, "fewshot_lines": 300, "short_items": 2_000,
              "panel_sides": 4, "panel_items": 500, "inspect_samples": 100,
              "lighteval_rows": 500, "helm_states": 160, "paired_lines": 500, "eee_rows": 300},
}


# The imports' and item reports' targets are a few tenths of a second to a few seconds of
# writing on a shared machine's disk, whose writes stall now and then for a second: each
# runs this many times (an import's sha256sum too), and the median is reported beside the
# range.
REPEATS = 3


def median(values):
    return sorted(values)[len(values) // 2]


def measure(argv, stdin=None, stdout=subprocess.DEVNULL, cwd=None, reads=()):
    """Runs argv once `reads` (the files and folders it will read) are in the page cache;
    returns (seconds, peak RSS in MiB, bytes written to stdout when piped)."""
    warm(reads)
    start = time.monotonic()
    process = subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, cwd=cwd)
    written = 0
    if stdout == subprocess.PIPE:
        while True:
            chunk = process.stdout.read(1 << 20)
            if not chunk:
                break
            written += len(chunk)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.monotonic() - start
    stderr = process.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{stderr}")
    return seconds, usage.ru_maxrss / 1024, written


def python(script_args):
    return [sys.executable] + script_args


def generate(mode, work):
    size = SIZES[mode]
    gen = os.path.join(HERE, "generate.py")
    files = {}
    def make(name, args):
        """Generates `name` in `work` unless it is there: under a temporary name first, so
        that a generator stopped half-way leaves nothing a later run would take as made."""
        path = os.path.join(work, name)
        if not os.path.exists(path):
            partial = path + ".partial"
            if os.path.isdir(partial):
                shutil.rmtree(partial)
            elif os.path.exists(partial):
                os.remove(partial)
            subprocess.run(python([gen] + args[:1] + [partial] + args[1:]), check=True, stdout=subprocess.DEVNULL)
            os.rename(partial, path)
        files[name] = path
    make("harness.jsonl", ["harness", "--bytes", str(size["harness_bytes"])])
    make("harness-big.jsonl", ["harness", "--bytes", str(size["harness_big_bytes"]), "--seed", "3"])
    make("canonical-a.jsonl", ["canonical", str(size["canonical"]), "--seed", "1"])
    make("canonical-b.jsonl", ["canonical", str(size["canonical"]), "--seed", "2"])
    make("fewshot-a.jsonl", ["harness", "--lines", str(size["fewshot_lines"]), "--seed", "11"])
    make("fewshot-b.jsonl", ["harness", "--lines", str(size["fewshot_lines"]), "--seed", "12"])
    make("short.jsonl", ["mixed", str(size["short_items"] * 2)])
    make("inspect.json", ["inspect", str(size["inspect_samples"])])
    make("inspect.eval", ["inspect-eval", str(size["inspect_samples"])])
    make("lighteval", ["lighteval", str(size["lighteval_rows"])])
    make("helm", ["helm", str(size["helm_states"])])
    make("paired.jsonl", ["paired", str(size["paired_lines"])])
    make("eee.jsonl", ["eee", str(size["eee_rows"])])
    return files


def warm(paths):
    """Reads every file of `paths` (files, and folders walked whole) into the page cache."""
    for path in paths:
        if os.path.isdir(path):
            warm(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs)
            continue
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass


def babel_in(babel, root):
    return lambda *args: [babel, "--root", root, "-q"] + list(args)


def tree_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def main():
    mode, babel, work = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    os.makedirs(work, exist_ok=True)
    files = generate(mode, work)
    rows = []  # (group, work, contender, seconds, peak MiB, note)
    def row(group, what, who, measured, note=""):
        rows.append((group, what, who, measured[0], measured[1], note))
        print(f"  {what} / {who}: {measured[0]:.2f} s, {measured[1]:.0f} MiB {note}", file=sys.stderr)

    archive = os.path.join(work, "archive")
    shutil.rmtree(archive, ignore_errors=True)
    b = babel_in(babel, archive)
    subprocess.run(b("init"), check=True)
    for run, extra in [("h", []), ("hbig", []), ("ca", ["--benchmark", "bench"]), ("cb", ["--benchmark", "bench"]),
                       ("fa", []), ("fb", []), ("short", ["--benchmark", "bench"])]:
        subprocess.run(b("run", "create", run, "--model", "m", *extra), check=True)

    # Import.
    scratch = os.path.join(work, "scratch-archive")
    def repeated(argvs, reads):
        """Runs each argv (or the argv a callable returns) once, after os.sync() (no
        write of an earlier step pending) with `reads` warm; returns the median (seconds,
        peak, written) and every run's seconds, sorted."""
        runs = []
        for argv in argvs:
            argv = argv() if callable(argv) else argv
            os.sync()
            runs.append(measure(argv, reads=reads))
        return median(runs), sorted(r[0] for r in runs)
    def imported(run, create, args):
        """Imports into `run` of a fresh scratch archive REPEATS - 1 times, then into the
        suite's archive (whose `run` exists): the median, and each run's seconds."""
        def fresh():
            shutil.rmtree(scratch, ignore_errors=True)
            s = babel_in(babel, scratch)
            subprocess.run(s("init"), check=True)
            subprocess.run(s("run", "create", run, *create), check=True)
            return s("import", run, *args)
        def last():
            shutil.rmtree(scratch, ignore_errors=True)
            return b("import", run, *args)
        return repeated([fresh] * (REPEATS - 1) + [last], reads=[args[-1]])
    def spread(seconds):
        return f"median of {len(seconds)}, {seconds[0]:.2f}–{seconds[-1]:.2f} s"
    h = files["harness.jsonl"]
    h_mb = os.path.getsize(h) / 1e6
    sha = {}
    def sha_row(path, what):
        measured, seconds = repeated([["sha256sum", path]] * REPEATS, reads=[path])
        sha[path] = measured[0]
        row("import", what, "sha256sum", measured, spread(seconds))
    def import_row(what, run, create, args, note):
        measured, seconds = imported(run, create, args)
        row("import", what, "babel", measured, f"{note(measured)}; {spread(seconds)}")
    def against_sha(path):
        return lambda measured: f"{measured[0] / sha[path]:.2f} × sha256sum"
    sha_row(h, f"harness file, {h_mb:.0f} MB")
    import_row(f"harness file, {h_mb:.0f} MB", "h", ["--model", "m"],
               ["--format", "harness", "--benchmark", "mmlu", h], against_sha(h))
    py_h = os.path.join(work, "py-h")
    shutil.rmtree(py_h, ignore_errors=True)
    row("import", f"harness file, {h_mb:.0f} MB", "python", measure(python([os.path.join(HERE, "reference.py"), "import-harness", h, py_h]), reads=[h]))
    big = files["harness-big.jsonl"]
    big_mb = os.path.getsize(big) / 1e6
    sha_row(big, f"harness file, {big_mb:.0f} MB")
    import_row(f"harness file, {big_mb:.0f} MB", "hbig", ["--model", "m"],
               ["--format", "harness", "--benchmark", "mmlu", big], against_sha(big))
    ca, cb = files["canonical-a.jsonl"], files["canonical-b.jsonl"]
    n = SIZES[mode]["canonical"]
    sha_row(ca, f"{n:,} canonical records")
    import_row(f"{n:,} canonical records", "ca", ["--model", "m", "--benchmark", "bench"],
               ["--format", "canonical", ca], lambda m: f"{m[0] / n * 1e6:.2f} µs per record")
    py_a, py_b = os.path.join(work, "py-a"), os.path.join(work, "py-b")
    for d in (py_a, py_b):
        shutil.rmtree(d, ignore_errors=True)
    measured = measure(python([os.path.join(HERE, "reference.py"), "import", ca, py_a]), reads=[ca])
    row("import", f"{n:,} canonical records", "python", measured, f"{measured[0] / n * 1e6:.2f} µs per record")
    for name, label, run in [("inspect.json", "Inspect log", "insp"), ("inspect.eval", "Inspect .eval log", "ieval")]:
        log = files[name]
        what = f"{label}, {os.path.getsize(log) / 1e6:.0f} MB ({SIZES[mode]['inspect_samples']:,} samples)"
        sha_row(log, what)
        subprocess.run(b("run", "create", run, "--model", "mockllm/model"), check=True)
        import_row(what, run, ["--model", "mockllm/model"], ["--format", "inspect", log], against_sha(log))
    for name, label, model, count in [("lighteval", "lighteval details, {:,} rows", "dummy", "lighteval_rows"),
                                      ("helm", "HELM run, {:,} request states", "simple/model1", "helm_states")]:
        n_items = SIZES[mode][count]
        subprocess.run(b("run", "create", name, "--model", model), check=True)
        import_row(label.format(n_items), name, ["--model", model], ["--format", name, files[name]],
                   lambda m, n_items=n_items: f"{m[0] / n_items * 1e6:.1f} µs per item")
    # An EEE row names its benchmark (evaluation_name); a paired line here does not.
    for name, label, fmt, create, count in [
            ("paired.jsonl", "paired file, {:.0f} MB ({:,} lines)", "paired", ["--model", "m", "--benchmark", "bench"],
             "paired_lines"),
            ("eee.jsonl", "Every Eval Ever rows, {:.0f} MB ({:,} rows)", "eee", ["--model", "dummy-a"], "eee_rows")]:
        path = files[name]
        what = label.format(os.path.getsize(path) / 1e6, SIZES[mode][count])
        sha_row(path, what)
        subprocess.run(b("run", "create", fmt, *create), check=True)
        import_row(what, fmt, create, ["--format", fmt, path], against_sha(path))
    subprocess.run(b("import", "cb", "--format", "canonical", cb), check=True)
    subprocess.run(python([os.path.join(HERE, "reference.py"), "import", cb, py_b]), check=True, stdout=subprocess.DEVNULL)
    subprocess.run(b("import", "fa", "--format", "harness", "--benchmark", "mmlu", files["fewshot-a.jsonl"]), check=True)
    subprocess.run(b("import", "fb", "--format", "harness", "--benchmark", "mmlu", files["fewshot-b.jsonl"]), check=True)
    subprocess.run(b("import", "short", "--format", "canonical", files["short.jsonl"]), check=True)
    sizes = {}
    for run, source in [("h", h), ("hbig", big), ("ca", ca)]:
        stored = tree_bytes(os.path.join(archive, "runs", run))
        sizes[run] = (stored, os.path.getsize(source))

    # Validate and records.
    def run_dir(run):
        return os.path.join(archive, "runs", run)
    def records_of(*runs):
        return [os.path.join(run_dir(run), "records") for run in runs]
    # The validate target is against sha256sum: timed as the imports are (one run after
    # the imports' writes read 0.44 s where three by hand read 0.21-0.23 s).
    measured, seconds = repeated([b("validate", "h")] * REPEATS, reads=[run_dir("h")])
    row("validate", f"harness run, {h_mb:.0f} MB", "babel", measured, f"{against_sha(h)(measured)}; {spread(seconds)}")
    row("validate", f"harness run, {h_mb:.0f} MB", "python", measure(python([os.path.join(HERE, "reference.py"), "validate", py_h]), reads=[py_h]))
    measured, seconds = repeated([b("validate", "hbig")] * REPEATS, reads=[run_dir("hbig")])
    row("validate", f"harness run, {big_mb:.0f} MB", "babel", measured, f"{against_sha(big)(measured)}; {spread(seconds)}")
    row("validate", f"{n:,} canonical records", "babel", measure(b("validate", "ca"), reads=[run_dir("ca")]))
    row("validate", f"{n:,} canonical records", "python", measure(python([os.path.join(HERE, "reference.py"), "validate", py_a]), reads=[py_a]))
    measured = measure(b("records", "ca"), stdout=subprocess.PIPE, reads=records_of("ca"))
    row("records", f"{n:,} canonical records", "babel", measured, f"{measured[2] / 1e6 / measured[0]:.0f} MB/s of JSON Lines")
    measured = measure(b("records", "h"), stdout=subprocess.PIPE, reads=records_of("h"))
    row("records", f"harness run, {h_mb:.0f} MB", "babel", measured, f"{measured[2] / 1e6 / measured[0]:.0f} MB/s of JSON Lines")

    # Compare two runs: the summary, then each report.
    what = f"2 × {n:,} records, summary"
    row("compare", what, "babel", measure(b("compare", "ca", "--other-run", "cb"), reads=records_of("ca", "cb")))
    glob_a = os.path.join(archive, "runs", "ca", "records", "*.parquet")
    glob_b = os.path.join(archive, "runs", "cb", "records", "*.parquet")
    sql = os.path.join(HERE, "sql_join.py")
    row("compare", what, "DuckDB on babel's Parquet", measure(python([sql, "parquet", glob_a, glob_b]), reads=records_of("ca", "cb")))
    row("compare", what, "DuckDB on the JSONL inputs", measure(python([sql, "jsonl", ca, cb]), reads=[ca, cb]))
    row("compare", what, "pandas on the JSONL inputs", measure(python([os.path.join(HERE, "pandas_join.py"), ca, cb]), reads=[ca, cb]))
    row("compare", what, "python", measure(python([os.path.join(HERE, "reference.py"), "compare-runs", py_a, py_b]), reads=[py_a, py_b]))
    reports = {}
    for fmt in ["jsonl", "csv", "html"]:
        dest = os.path.join(work, f"report.{fmt}")
        def report(dest=dest):
            if os.path.exists(dest):
                os.remove(dest)
            return b("compare", "ca", "--other-run", "cb", "--items", dest)
        measured, seconds = repeated([report] * REPEATS, reads=records_of("ca", "cb"))
        row("compare", f"2 × {n:,} records, {fmt} report", "babel", measured,
            f"{os.path.getsize(dest) / 1e6:.0f} MB; {spread(seconds)}")
        reports[fmt] = dest

    # HTML reports in a browser.
    render = os.path.join(HERE, "render.cjs")
    node_path = os.path.join(ROOT, "target", "ci", "playwright", "node_modules")
    def browse(report, query):
        out = subprocess.run(["node", render, report, query], check=True, capture_output=True,
                             env=dict(os.environ, NODE_PATH=node_path)).stdout
        return json.loads(out)
    html_rows = []
    for name, run_a, run_b, extra, query in [
        (f"{SIZES[mode]['fewshot_lines']:,} few-shot harness items", "fa", "fb", ["--other-run", "fb"], "subject_12"),
        (f"{SIZES[mode]['short_items']:,} short items", "short", None, [], "q0000123"),
    ]:
        dest = os.path.join(work, f"{run_a}.html")
        if os.path.exists(dest):
            os.remove(dest)
        written = measure(b("compare", run_a, *extra, "--items", dest),
                          reads=records_of(*[r for r in (run_a, run_b) if r]))
        seen = browse(dest, query)
        html_rows.append((name, os.path.getsize(dest), written[0], seen))

    # A panel: S runs of the same N questions, in an archive of their own.
    sides, items = SIZES[mode]["panel_sides"], SIZES[mode]["panel_items"]
    panel_archive = os.path.join(work, "panel-archive")
    shutil.rmtree(panel_archive, ignore_errors=True)
    p = babel_in(babel, panel_archive)
    subprocess.run(p("init"), check=True)
    gen = os.path.join(HERE, "generate.py")
    import_seconds = 0.0
    os.sync()  # the reports' gigabytes written back first, as before the other imports
    for k in range(sides):
        path = os.path.join(work, f"panel-{sides}-{items}-{k:03d}.jsonl")
        if not os.path.exists(path):
            subprocess.run(python([gen, "panel", path, str(items), "--side", str(k), "--sides", str(sides)]), check=True)
        subprocess.run(p("run", "create", f"p{k:03d}", "--model", f"model-{k:03d}", "--benchmark", "bench"), check=True)
        import_seconds += measure(p("import", f"p{k:03d}", "--format", "canonical", path), reads=[path])[0]
    what = f"{sides} runs × {items:,} items, summary"
    row("panel", f"{sides} runs × {items:,} items, import", "babel", (import_seconds, 0), f"{sides * items / import_seconds / 1e6:.2f} M records/s")
    panel_records = os.path.join(panel_archive, "runs")
    row("panel", what, "babel", measure(p("panel", "--all", "--variant", "original"), reads=[panel_records]))
    row("panel", what, "DuckDB on babel's Parquet (SQL self-join)", measure(python([
        os.path.join(HERE, "panel_sql.py"), os.path.join(panel_archive, "runs", "p*", "records", "*.parquet")]), reads=[panel_records]))
    dashboard = os.path.join(work, "panel.html")
    if os.path.exists(dashboard):
        os.remove(dashboard)
    measured = measure(p("panel", "--all", "--variant", "original", "--items", dashboard), reads=[panel_records])
    row("panel", f"{sides} runs × {items:,} items, HTML dashboard", "babel", measured, f"{os.path.getsize(dashboard) / 1e6:.1f} MB")
    config = os.path.join(work, "drive-panel.json")
    with open(config, "w") as f:
        json.dump({"chromium": "/usr/bin/chromium", "userDataDir": os.path.join(work, "chromium-profile"),
                   "page": dashboard, "screenshot": None, "query": "q0001234", "flag": "consensus",
                   "language": "tr", "open": "q0000001"}, f)
    seen = json.loads(subprocess.run(["node", os.path.join(ROOT, "tests", "browser", "drive-panel.cjs"), config],
                                     check=True, capture_output=True,
                                     env=dict(os.environ, NODE_PATH=node_path)).stdout)
    panel_browser = (f"{sides} runs × {items:,} items", os.path.getsize(dashboard), seen)

    # The report.
    print(f"Machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d', time.gmtime())}; mode {mode}")
    print()
    print("| work | contender | wall | peak RSS | note |")
    print("|---|---|---|---|---|")
    for group, what, who, seconds, peak, note in rows:
        print(f"| {group}: {what} | {who} | {seconds:.2f} s | {peak:.0f} MiB | {note} |")
    print()
    print("| archive | stored bytes / input bytes |")
    print("|---|---|")
    for run, (stored, given) in sizes.items():
        print(f"| run {run} ({given / 1e6:.0f} MB input) | {stored / given:.2f} |")
    print()
    print("| HTML report | size | written in | first render | search, max per key | open an item |")
    print("|---|---|---|---|---|---|")
    for name, size, seconds, seen in html_rows:
        print(f"| {name} | {size / 1e6:.1f} MB | {seconds:.1f} s | {seen['firstRenderMs']:.0f} ms | {seen['maxKeyMs']:.0f} ms | {seen['detailMs']:.0f} ms |")
    print()
    name, size, seen = panel_browser
    print("| panel dashboard | size | first render | search, max / mean per key | requests |")
    print("|---|---|---|---|---|")
    print(f"| {name} | {size / 1e6:.1f} MB | {seen['first_render_ms']:.0f} ms | {seen['keystroke_max_ms']:.0f} / {seen['keystroke_mean_ms']:.0f} ms | {len(seen['requests'])} |")


if __name__ == "__main__":
    main()

