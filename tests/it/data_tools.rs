//! Recordings as data (issue 17): the examples of docs/recording-format.md
//! ("Reading it with other tools") run as written with the real jq, pandas
//! and DuckDB on a real recording, and their answers are checked against
//! vramwatch's own reading; every key keeps one shape across line types,
//! and every recording shipped with vramwatch (format version 1) opens in
//! every command (`versions.rs`); `export --csv --processes` and friends
//! (`export.rs`).
//!
//! The examples are taken from the page itself, so the page and the tests
//! cannot drift apart. A missing program is skipped with a notice, or a
//! failure with `VRAMWATCH_REQUIRE_TOOLS=1` (`.ci/run` installs them all).

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use assert_cmd::Command as Vw;

use vramwatch::model::Snapshot;
use vramwatch::record::{Recording, WriteOutcome, Writer, WriterOptions};

const GIB: f64 = (1u64 << 30) as f64;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The real recording the examples run on: two GPUs, two processes each
/// with PyTorch allocator figures, events.
fn source() -> PathBuf {
    root().join("tests/fixtures/corpus/quick/10-gpu1-two_proc-s3.jsonl.zst")
}

fn vw() -> Vw {
    let mut c = Vw::cargo_bin("vramwatch").expect("binary");
    c.env("XDG_CONFIG_HOME", "/nonexistent-vramwatch-test");
    c
}

/// A folder holding the recording twice: `run.jsonl.zst` (the file as
/// recorded) and `run.jsonl` (written again by this vramwatch, in blocks of
/// 10 snapshots, so it has index lines that list processes and events),
/// and the snapshots in it.
struct Data {
    dir: tempfile::TempDir,
    snaps: Vec<Snapshot>,
}

fn data() -> Data {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::copy(source(), dir.path().join("run.jsonl.zst")).expect("copy");
    let rec = Recording::open(&source()).expect("the fixture opens");
    let snaps: Vec<Snapshot> = rec.iter().map(|s| s.expect("reads")).collect();
    let opts = WriterOptions {
        block_snapshots: 10,
        flush_every: Duration::ZERO,
        sync_every: Duration::from_secs(3600),
        ..WriterOptions::default()
    };
    let path = dir.path().join("run.jsonl");
    let mut w = Writer::create(&path, rec.header().clone(), opts).expect("create");
    for s in &snaps {
        assert_eq!(w.write(s), WriteOutcome::Written);
    }
    w.finish().expect("finish");
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.lines().any(|l| l.starts_with("{\"type\":\"index\"")
        && l.contains("\"processes\":[{")
        && l.contains("\"events\":[{")));
    assert!(snaps.iter().any(|s| !s.events.is_empty()));
    Data { dir, snaps }
}

/// The fenced blocks of language `lang` under `### {tool}` in the section
/// "Reading it with other tools" of docs/recording-format.md.
fn doc_blocks(tool: &str, lang: &str) -> Vec<String> {
    let page = fs::read_to_string(root().join("docs/recording-format.md")).unwrap();
    let section = page
        .split("\n## ")
        .find(|s| s.starts_with("Reading it with other tools"))
        .expect("the section");
    let part = section
        .split("\n### ")
        .find(|s| s.starts_with(&format!("{tool}\n")))
        .unwrap_or_else(|| panic!("### {tool}"));
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    for line in part.lines() {
        match &mut block {
            None if line == format!("```{lang}") => block = Some(String::new()),
            Some(b) if line == "```" => {
                out.push(std::mem::take(b));
                block = None;
            }
            Some(b) => {
                b.push_str(line);
                b.push('\n');
            }
            None => {}
        }
    }
    assert!(!out.is_empty(), "no ```{lang} block under ### {tool}");
    out
}

/// Runs `program args` in `dir` with `stdin`; its standard output, or a
/// panic showing what it said.
fn run(dir: &Path, program: &str, args: &[&str], stdin: &str, what: &str) -> String {
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    {
        use std::io::Write;
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.as_bytes()).unwrap();
    }
    let out: Output = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Whether python3 can import every module of `modules`; else a skip
/// notice, or a panic with `VRAMWATCH_REQUIRE_TOOLS=1` (as
/// `common::tool_available` does for programs).
fn python_modules(modules: &str) -> bool {
    if !common::tool_available("python3") {
        return false;
    }
    let found = Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        if std::env::var("VRAMWATCH_REQUIRE_TOOLS").as_deref() == Ok("1") {
            panic!(
                "python3 modules `{modules}` are required (VRAMWATCH_REQUIRE_TOOLS=1) but not installed"
            );
        }
        eprintln!(
            "SKIPPED: python3 modules `{modules}` are not installed; set VRAMWATCH_REQUIRE_TOOLS=1 to make this a failure"
        );
    }
    found
}

/// Per GPU: the highest `mem_peak` and the mean `mem_used`, in bytes.
fn gpu_figures(snaps: &[Snapshot]) -> BTreeMap<u32, (u64, f64)> {
    let mut acc: BTreeMap<u32, (u64, f64, u64)> = BTreeMap::new();
    for g in snaps.iter().flat_map(|s| &s.gpus) {
        let e = acc.entry(g.index).or_default();
        e.0 = e.0.max(g.mem_peak.unwrap_or(0));
        if let Some(m) = g.mem {
            e.1 += m.used as f64;
            e.2 += 1;
        }
    }
    acc.into_iter()
        .map(|(k, (peak, sum, n))| (k, (peak, sum / n as f64)))
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

#[test]
fn the_documented_jq_commands_work() {
    if !(common::tool_available("sh")
        && common::tool_available("jq")
        && common::tool_available("zstd"))
    {
        return;
    }
    let d = data();
    let blocks = doc_blocks("jq", "sh");
    assert_eq!(blocks.len(), 2, "{blocks:?}");

    // Memory used per GPU per snapshot, as CSV.
    let out = run(d.dir.path(), "sh", &["-c", &blocks[0]], "", &blocks[0]);
    let want: Vec<String> = d
        .snaps
        .iter()
        .flat_map(|s| {
            s.gpus.iter().map(|g| {
                format!(
                    "{},{},{}",
                    s.t_ms,
                    g.index,
                    g.mem.map_or("null".into(), |m| m.used.to_string())
                )
            })
        })
        .collect();
    assert_eq!(out.lines().collect::<Vec<_>>(), want);

    // Every event of the compressed recording.
    let out = run(d.dir.path(), "sh", &["-c", &blocks[1]], "", &blocks[1]);
    let want: Vec<String> = d
        .snaps
        .iter()
        .flat_map(|s| &s.events)
        .map(|e| {
            let kind = serde_json::to_value(e.kind).unwrap();
            format!("{}\t{}\t{}", e.t_ms, kind.as_str().unwrap(), e.message)
        })
        .collect();
    assert!(!want.is_empty());
    assert_eq!(out.lines().collect::<Vec<_>>(), want);
}

#[test]
fn the_documented_pandas_example_works_without_deprecated_arguments() {
    if !python_modules("pandas, zstandard") {
        return;
    }
    let d = data();
    let blocks = doc_blocks("pandas", "python");
    assert_eq!(blocks.len(), 1, "{blocks:?}");
    let code = &blocks[0];
    assert!(code.contains("\"run.jsonl.zst\""), "{code}");
    assert!(code.contains("mem_peak"), "the peak is mem_peak: {code}");
    // A deprecated argument (pandas 3.1 deprecates `convert_dates`) or
    // anything else pandas warns will change is an error.
    let strict = [
        "-W",
        "error::DeprecationWarning",
        "-W",
        "error::FutureWarning",
        "-",
    ];
    let zst = run(d.dir.path(), "python3", &strict, code, code);
    let plain_code = code.replace("\"run.jsonl.zst\"", "\"run.jsonl\"");
    let plain = run(d.dir.path(), "python3", &strict, &plain_code, &plain_code);
    assert_eq!(zst, plain, ".jsonl and .jsonl.zst read alike");
    // `print(series)`: "index", then one "GPU  GiB" line per GPU.
    let got: BTreeMap<u32, f64> = zst
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (a, b) = (w.next()?, w.next()?);
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .collect();
    let want = gpu_figures(&d.snaps);
    assert_eq!(got.len(), want.len(), "{zst}");
    for (gpu, (peak, _)) in want {
        let gib = peak as f64 / GIB;
        assert!((got[&gpu] - gib).abs() < 1e-5, "GPU {gpu}: {zst}");
    }
}

/// How the SQL runs: the DuckDB program, or Python's duckdb module.
enum Duck {
    Cli,
    Python,
}

fn duckdb() -> Option<Duck> {
    let cli = Command::new("sh")
        .args(["-c", "command -v duckdb"])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if cli {
        return Some(Duck::Cli);
    }
    python_modules("duckdb").then_some(Duck::Python)
}

/// Runs `sql` in `dir`; the rows as CSV, a header line first.
fn duck_csv(how: &Duck, dir: &Path, sql: &str) -> String {
    match how {
        Duck::Cli => run(dir, "duckdb", &["-csv"], sql, sql),
        Duck::Python => run(
            dir,
            "python3",
            &[
                "-c",
                "import csv, sys, duckdb\n\
                 r = duckdb.sql(sys.stdin.read())\n\
                 w = csv.writer(sys.stdout, lineterminator='\\n')\n\
                 w.writerow(r.columns)\n\
                 w.writerows(r.fetchall())",
            ],
            sql,
            sql,
        ),
    }
}

fn csv_rows(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let head: Vec<String> = r.headers().unwrap().iter().map(str::to_owned).collect();
    r.records()
        .map(|x| {
            head.iter()
                .cloned()
                .zip(x.unwrap().iter().map(str::to_owned))
                .collect()
        })
        .collect()
}

#[test]
fn the_documented_duckdb_queries_work_on_jsonl_and_zst() {
    let Some(how) = duckdb() else {
        return;
    };
    let d = data();
    let blocks = doc_blocks("DuckDB", "sql");
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    let mut outputs = Vec::new();
    for sql in &blocks {
        assert!(sql.contains("read_json_auto('run.jsonl.zst')"), "{sql}");
        let zst = duck_csv(&how, d.dir.path(), sql);
        // The same query on the `.jsonl` file, with its index lines: the
        // key `procs` has one shape in every line (format version 2).
        let plain = duck_csv(
            &how,
            d.dir.path(),
            &sql.replace("run.jsonl.zst", "run.jsonl"),
        );
        assert_eq!(zst, plain, ".jsonl and .jsonl.zst read alike: {sql}");
        outputs.push(zst);
    }

    // Peak (mem_peak) and mean memory per GPU.
    let rows = csv_rows(&outputs[0]);
    let want = gpu_figures(&d.snaps);
    assert_eq!(rows.len(), want.len(), "{}", outputs[0]);
    for r in &rows {
        let gpu: u32 = r["gpu"].parse().unwrap();
        let (peak, mean) = want[&gpu];
        assert!(
            close(r["peak_gib"].parse().unwrap(), peak as f64 / GIB),
            "{r:?}"
        );
        assert!(close(r["mean_gib"].parse().unwrap(), mean / GIB), "{r:?}");
    }

    // The processes that held the most memory, with their command lines.
    let mut peaks: BTreeMap<(u32, u32, u64), (u64, String, String)> = BTreeMap::new();
    let mut at: BTreeMap<(u32, u32, u64, u64), u64> = BTreeMap::new();
    for s in &d.snaps {
        for p in &s.procs {
            let k = (p.gpu, p.pid, p.start_time);
            let e = peaks.entry(k).or_default();
            let m = p.mem_peak.unwrap_or(0);
            e.0 = e.0.max(m);
            e.1 = p.user.as_deref().unwrap_or("").to_owned();
            e.2 = p.command.as_deref().unwrap_or("").to_owned();
            at.insert((p.gpu, p.pid, p.start_time, s.t_ms), m);
        }
    }
    let rows = csv_rows(&outputs[1]);
    assert_eq!(rows.len(), peaks.len().min(10), "{}", outputs[1]);
    for r in &rows {
        let (gpu, pid): (u32, u32) = (r["gpu"].parse().unwrap(), r["pid"].parse().unwrap());
        let (k, (peak, user, command)) = peaks
            .iter()
            .find(|(k, _)| k.0 == gpu && k.1 == pid)
            .unwrap_or_else(|| panic!("{r:?}"));
        assert!(
            close(r["peak_gib"].parse().unwrap(), *peak as f64 / GIB),
            "{r:?}"
        );
        assert_eq!(&r["user"], user);
        assert_eq!(&r["command"], command);
        assert!(!command.is_empty());
        let t: u64 = r["peak_t_ms"].parse().unwrap();
        assert_eq!(
            at[&(k.0, k.1, k.2, t)],
            *peak,
            "the peak is at peak_t_ms: {r:?}"
        );
    }
    let order: Vec<f64> = rows
        .iter()
        .map(|r| r["peak_gib"].parse().unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] >= w[1]), "{order:?}");
}

mod export;
mod versions;
