//! `vramwatch record`, `export` and `report` from the command line.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

use assert_cmd::Command;
use predicates::prelude::*;
use vramwatch::model::Snapshot;
use vramwatch::model::units::MIB;
use vramwatch::record::{Header, Recording, Writer, WriterOptions};
use vramwatch::source::sim::SimWorld;

const T0: u64 = 1_764_000_000_000;

fn vw() -> Command {
    Command::cargo_bin("vramwatch").expect("binary")
}

/// A recording of the demo node made through the library: `n` snapshots
/// 1 s apart.
fn demo_recording(dir: &Path, name: &str, n: u64) -> (PathBuf, Vec<Snapshot>) {
    let w = SimWorld::new("demo", 1, T0).unwrap();
    let path = dir.join(name);
    let mut wr = Writer::create(
        &path,
        Header::new(&w.info(), 1000, T0),
        WriterOptions::default(),
    )
    .unwrap();
    let snaps = w.snapshots(T0, 1000, n, "me");
    for s in &snaps {
        wr.write(s);
    }
    wr.finish().unwrap();
    (path, snaps)
}

#[test]
fn record_demo_for_three_seconds() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("rec.jsonl");
    vw().args(["record", "--demo", "--duration", "3s", "-o"])
        .arg(&out)
        .assert()
        .success()
        .stderr(
            predicate::str::contains(out.display().to_string())
                .and(predicate::str::contains(
                    "recording 4 GPUs (sim:demo) every 1s",
                ))
                .and(predicate::str::contains("wrote")),
        );
    let rec = Recording::open(&out).unwrap();
    assert!((3..=5).contains(&rec.len()), "{} snapshots", rec.len());
    assert!(rec.warnings().is_empty(), "{:?}", rec.warnings());
    assert_eq!(rec.header().interval_ms, 1000);
    assert_eq!(rec.get(0).unwrap().gpus.len(), 4);
    // Stopped cleanly: the file ends with the last block's index record.
    let text = fs::read_to_string(&out).unwrap();
    assert!(
        text.lines()
            .last()
            .unwrap()
            .starts_with("{\"type\":\"index\"")
    );
}

#[test]
fn record_refuses_to_overwrite_unless_forced() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("rec.jsonl.zst");
    fs::write(&out, "precious").unwrap();
    vw().args(["record", "--demo", "--duration", "1s", "-o"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("already exists").and(predicate::str::contains("--force")),
        );
    assert_eq!(fs::read_to_string(&out).unwrap(), "precious");
    vw().args([
        "record",
        "--demo",
        "training",
        "--duration",
        "1s",
        "--interval",
        "250ms",
        "--force",
        "-o",
    ])
    .arg(&out)
    .assert()
    .success();
    let rec = Recording::open(&out).unwrap();
    assert!(rec.compressed() && rec.len() >= 2);
    assert_eq!(rec.system().source, "sim:training");
}

#[test]
fn record_serve_shares_the_sampler_with_an_exporter() {
    use std::io::{Read, Write};
    let d = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let out = d.path().join("x.jsonl");
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("vramwatch"))
        .args([
            "record",
            "--demo",
            "--duration",
            "4s",
            "--serve",
            &addr,
            "-o",
        ])
        .arg(&out)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut body = String::new();
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(100));
        if let Ok(mut s) = std::net::TcpStream::connect(&addr) {
            let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let _ = s.read_to_string(&mut body);
            if body.contains("DCGM_FI_DEV_FB_USED{") {
                break;
            }
        }
    }
    assert!(body.contains("DCGM_FI_DEV_FB_USED{"), "{body}");
    assert!(child.wait().unwrap().success());
    assert!(Recording::open(&out).unwrap().len() >= 2);
    // A bad address stops it before anything is written.
    vw().args(["record", "--demo", "--serve", "nonsense", "-o"])
        .arg(d.path().join("y.jsonl"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--serve"));
    assert!(!d.path().join("y.jsonl").exists());
}

fn spawn_record(out: &Path) -> std::process::Child {
    StdCommand::new(assert_cmd::cargo::cargo_bin("vramwatch"))
        .args(["record", "--demo", "--interval", "100ms", "-o"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_for_snapshots(out: &Path, n: usize) {
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        if Recording::open(out).is_ok_and(|r| r.len() >= n) {
            return;
        }
    }
    panic!("the recorder did not write {n} snapshots in 10 s");
}

#[test]
fn sigterm_stops_the_recorder_cleanly() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("term.jsonl.zst");
    let child = spawn_record(&out);
    wait_for_snapshots(&out, 5);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{stderr}");
    let rec = Recording::open(&out).unwrap();
    assert!(rec.warnings().is_empty(), "{:?}", rec.warnings());
    // Everything written is reported, and all of it reads back.
    assert!(
        stderr.contains(&format!("wrote {} snapshots", rec.len())),
        "{stderr} vs {}",
        rec.len()
    );
    rec.iter().for_each(|s| {
        s.unwrap();
    });
}

#[test]
fn after_kill_9_the_file_reads_back_losing_at_most_the_last_line() {
    for name in ["kill.jsonl", "kill.jsonl.zst"] {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join(name);
        let mut child = spawn_record(&out);
        wait_for_snapshots(&out, 8);
        child.kill().unwrap();
        child.wait().unwrap();
        let rec = Recording::open(&out).unwrap();
        assert!(rec.len() >= 8);
        let last = rec.get(rec.len() - 1).unwrap();
        assert_eq!(last.gpus.len(), 4);
        if name.ends_with(".jsonl") {
            // Every complete snapshot line in the file is read.
            let text = fs::read_to_string(&out).unwrap();
            let complete = text
                .split_inclusive('\n')
                .filter(|l| l.ends_with('\n') && l.starts_with("{\"type\":\"snapshot\""))
                .count();
            assert_eq!(rec.len(), complete);
        }
    }
}

fn csv_rows(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let head = r.headers().unwrap().iter().map(str::to_owned).collect();
    let rows = r
        .records()
        .map(|x| x.unwrap().iter().map(str::to_owned).collect())
        .collect();
    (head, rows)
}

#[test]
fn export_gives_one_row_per_gpu_per_sample() {
    let d = tempfile::tempdir().unwrap();
    let (path, snaps) = demo_recording(d.path(), "e.jsonl.zst", 30);
    let out = vw().args(["export", "--csv"]).arg(&path).assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let (head, rows) = csv_rows(&text);
    assert_eq!(rows.len(), 30 * 4);
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let row = &rows[7 * 4 + 2];
    let g = &snaps[7].gpus[2];
    assert_eq!(row[col("t_ms")], snaps[7].t_ms.to_string());
    assert_eq!(row[col("gpu")], "2");
    let used: f64 = row[col("mem_used_mib")].parse().unwrap();
    assert_eq!(used, g.mem.unwrap().used as f64 / MIB as f64);
    assert_eq!(row[col("temp_c")], g.temp_c.unwrap().to_string());
    assert_eq!(row[col("fan_pct")], "", "the H200 has no fan");
    assert!(
        row[col("time")].starts_with("2025-11-24T"),
        "{}",
        row[col("time")]
    );

    let out = vw()
        .args(["export", "--csv", "--gpu", "2"])
        .arg(&path)
        .assert()
        .success();
    let (_, rows) = csv_rows(&String::from_utf8_lossy(&out.get_output().stdout));
    assert_eq!(rows.len(), 30);
    assert!(rows.iter().all(|r| r[3] == "2"));
}

#[test]
fn export_a_process_to_a_file() {
    let d = tempfile::tempdir().unwrap();
    let (path, snaps) = demo_recording(d.path(), "p.jsonl", 30);
    let csv_path = d.path().join("p.csv");
    vw().args(["export", "--csv", "--process", "20310", "-o"])
        .arg(&csv_path)
        .arg(&path)
        .assert()
        .success()
        .stdout("")
        .stderr(predicate::str::contains("wrote 30 rows"));
    let (head, rows) = csv_rows(&fs::read_to_string(&csv_path).unwrap());
    assert_eq!(rows.len(), 30);
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let p = snaps[20].procs.iter().find(|p| p.pid == 20310).unwrap();
    assert_eq!(
        rows[20][col("mem_mib")].parse::<f64>().unwrap(),
        p.mem.unwrap() as f64 / MIB as f64
    );
    assert_eq!(rows[20][col("user")], "svc-infer");
    assert!(rows[20][col("command")].starts_with("vllm serve"));
    assert_eq!(rows[20][col("container")], "c41d9e0f5a27");
}

#[test]
fn export_names_what_is_wrong() {
    let d = tempfile::tempdir().unwrap();
    let (path, _) = demo_recording(d.path(), "w.jsonl", 3);
    vw().args(["export", "--csv", "--gpu", "9"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("--gpu 9").and(predicate::str::contains("GPUs 0, 1, 2, 3")),
        );
    vw().args(["export", "--csv", "--process", "1"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("PID 1 does not appear in"));
    let not = d.path().join("notes.txt");
    fs::write(&not, "hello\n").unwrap();
    vw().args(["export", "--csv"])
        .arg(&not)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "notes.txt is not a vramwatch recording",
        ));
}

#[test]
fn report_summarises_and_draws() {
    let d = tempfile::tempdir().unwrap();
    // Two minutes of the demo: the leak on GPU 1 runs into OOM.
    let (path, snaps) = demo_recording(d.path(), "r.jsonl.zst", 120);
    assert!(
        snaps
            .iter()
            .flat_map(|s| &s.events)
            .any(|e| e.kind == vramwatch::model::EventKind::SuspectedOom)
    );
    let svg = d.path().join("r.svg");
    let out = vw()
        .args(["report", "--svg"])
        .arg(&svg)
        .arg(&path)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for want in [
        "2m00s, 120 snapshots every 1s",
        "MEMORY PEAK",
        "MEM≥80%",
        "TEMP≥90",
        "Top processes by peak memory",
        "python finetune.py",
        "suspected OOM",
        "PID 52090 exited on GPU 1",
    ] {
        assert!(text.contains(want), "`{want}` missing from:\n{text}");
    }
    // GPU 1's peak: the leak just before the OOM.
    let peak = snaps
        .iter()
        .map(|s| s.gpus[1].mem.unwrap().used)
        .max()
        .unwrap();
    let line = text.lines().find(|l| l.starts_with("  1  NVIDIA")).unwrap();
    assert!(
        line.contains(&vramwatch::model::units::bytes_short(peak)),
        "{line}"
    );
    let drawn = fs::read_to_string(&svg).unwrap();
    assert!(drawn.starts_with("<svg"));
    assert!(
        drawn.contains("GPU memory used") && drawn.contains("GPU 3") && drawn.contains("PID 31877")
    );
    assert!(
        drawn.matches("<polyline").count() >= 4 + 5,
        "one line per GPU and top process"
    );
}

#[test]
fn report_warns_about_a_cut_off_last_line_and_refuses_other_files() {
    let d = tempfile::tempdir().unwrap();
    let (path, _) = demo_recording(d.path(), "t.jsonl", 5);
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(b"{\"type\":\"snapshot\",\"seq\":5,\"t_");
    fs::write(&path, bytes).unwrap();
    vw().arg("report")
        .arg(&path)
        .assert()
        .success()
        .stdout(predicate::str::contains("5 snapshots"))
        .stderr(predicate::str::contains("t.jsonl:").and(predicate::str::contains("cut off")));
    let v3 = d.path().join("v3.jsonl");
    fs::write(&v3, "{\"type\":\"header\",\"format\":\"vramwatch-recording\",\"version\":3,\"vramwatch_version\":\"9.0.0\"}\n").unwrap();
    vw().arg("report").arg(&v3).assert().code(2).stderr(
        predicate::str::contains("format version 3").and(predicate::str::contains("upgrade")),
    );
}

/// The number before `word` in `text` (`wrote 12 snapshots` → 12).
fn number_before(text: &str, word: &str) -> Option<u64> {
    let at = text.find(word)?;
    text[..at].split_whitespace().last()?.parse().ok()
}

/// A real recording whose writes start failing part way: the file may not
/// grow past RLIMIT_FSIZE (set by `ulimit -f` in a shell that then runs
/// vramwatch, with SIGXFSZ ignored so that a write past it fails with
/// EFBIG instead of killing the process). The outage is told as it
/// begins, and the summary gives every snapshot lost.
#[test]
fn record_reports_writes_that_fail_part_way() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("capped.jsonl");
    // 64 blocks: 32 KiB (POSIX sh's 512-byte blocks) or 64 KiB (bash's
    // 1 KiB): the header and some snapshots fit, 40 demo snapshots do not.
    let run = StdCommand::new("sh")
        .args(["-c", "trap '' XFSZ; ulimit -f 64 && exec \"$0\" \"$@\""])
        .arg(assert_cmd::cargo::cargo_bin("vramwatch"))
        .args([
            "record",
            "--demo",
            "--interval",
            "100ms",
            "--duration",
            "4s",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    eprintln!("{stderr}");
    // Finishing fails too when the last index record does not fit.
    let code = run.status.code();
    assert!(
        code == Some(0) || (code == Some(1) && stderr.contains("error: finishing")),
        "{code:?}: {stderr}"
    );
    let written = number_before(&stderr, "snapshots (").expect("the summary");
    let lost = number_before(&stderr, "snapshots not recorded in")
        .or_else(|| number_before(&stderr, "snapshot not recorded in"))
        .expect("the losses in the summary");
    assert!(written >= 2 && lost >= 1, "{stderr}");
    // The first failed write is told at once, with its cause and the
    // snapshot lost: the first one missing from the file.
    let told = "capped.jsonl: outage 1 began at ";
    assert!(stderr.contains(told), "{stderr}");
    assert!(
        stderr.contains("writing failed: File too large"),
        "{stderr}"
    );
    let first_lost = stderr
        .split_once("not recorded (seq ")
        .and_then(|(_, rest)| rest.split(')').next()?.parse::<u64>().ok())
        .expect("the snapshot lost");
    // The file never grows again: the recording ends in an outage.
    assert!(stderr.contains(" to the end ("), "{stderr}");
    // What the summary says was written is what the file holds.
    let rec = Recording::open(&out).unwrap();
    assert_eq!(rec.len() as u64, written);
    let seqs: Vec<u64> = rec.iter().map(|s| s.unwrap().seq).collect();
    assert_eq!(
        seqs[..first_lost as usize],
        (0..first_lost).collect::<Vec<u64>>()
    );
}

/// A real full disk that empties again: a 4 MiB tmpfs mounted in a private
/// user and mount namespace (`unshare -rm`; skipped where the kernel does
/// not allow one). Filled while recording, then emptied: the outage's
/// beginning and end are told, and the snapshots the summary says were
/// lost are exactly those missing from the file.
#[test]
fn record_reports_a_full_disk_as_it_fills_and_empties() {
    let probe = StdCommand::new("unshare")
        .args(["-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /tmp"])
        .output();
    match probe {
        Ok(o) if o.status.success() => {}
        other => {
            eprintln!(
                "SKIPPED: cannot mount a tmpfs in a private namespace (unshare -rm): {other:?}"
            );
            return;
        }
    }
    let d = tempfile::tempdir().unwrap();
    let script = r#"
        set -u
        fs=$1; bin=$2; keep=$3
        mount -t tmpfs -o size=4m tmpfs "$fs" || exit 90
        "$bin" record --demo --interval 100ms -o "$fs/rec.jsonl" 2>"$keep/stderr" &
        rec=$!
        # Until a few snapshots are written, until the outage is told, until it ends.
        wait_for() { i=0; until eval "$1"; do i=$((i+1)); [ $i -gt 300 ] && return 1; sleep 0.1; done; }
        wait_for '[ "$(wc -c <"$fs/rec.jsonl" 2>/dev/null || echo 0)" -gt 10000 ]' || exit 91
        head -c 8388608 /dev/zero >"$fs/fill" 2>/dev/null
        wait_for 'grep -q "outage 1 began" "$keep/stderr"' || exit 92
        sleep 1
        rm "$fs/fill"
        wait_for 'grep -q "outage 1 ended" "$keep/stderr"' || exit 93
        sleep 1
        kill -TERM $rec
        wait $rec
        echo "exit $?" >>"$keep/stderr"
        cp "$fs/rec.jsonl" "$keep/"
    "#;
    let fs_dir = d.path().join("fs");
    let keep = d.path().join("keep");
    fs::create_dir_all(&fs_dir).unwrap();
    fs::create_dir_all(&keep).unwrap();
    let run = StdCommand::new("unshare")
        .args(["-rm", "sh", "-c", script, "sh"])
        .arg(&fs_dir)
        .arg(assert_cmd::cargo::cargo_bin("vramwatch"))
        .arg(&keep)
        .output()
        .unwrap();
    let stderr = fs::read_to_string(keep.join("stderr")).unwrap_or_default();
    eprintln!("{stderr}");
    assert!(run.status.success(), "{:?}: {stderr}", run.status);
    assert!(stderr.ends_with("exit 0\n"), "{stderr}");
    assert!(stderr.contains("the disk is full"), "{stderr}");
    let written = number_before(&stderr, "snapshots (").expect("the summary");
    let lost = number_before(&stderr, "snapshots not recorded in")
        .or_else(|| number_before(&stderr, "snapshot not recorded in"))
        .expect("the losses in the summary");
    // A full disk can take a small write now and then: each outage that
    // began ended (the disk was emptied before the stop).
    let began = stderr.matches(" began at ").count();
    assert!(began >= 1, "{stderr}");
    assert_eq!(began, stderr.matches(" ended at ").count(), "{stderr}");
    assert!(!stderr.contains("to the end"), "{stderr}");
    let rec = Recording::open(&keep.join("rec.jsonl")).unwrap();
    let seqs: Vec<u64> = rec.iter().map(|s| s.unwrap().seq).collect();
    assert_eq!(seqs.len() as u64, written);
    let made = seqs.last().unwrap() + 1;
    assert_eq!(
        made - written,
        lost,
        "missing from the file vs said: {stderr}"
    );
}
