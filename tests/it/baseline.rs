//! `vramwatch report NEW --baseline OLD` from the command line
//! (docs/baseline.md): the real H200 corpus (the same scripts at two
//! speeds, on other GPUs), and small recordings written through the
//! library for the gate's exact figures.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use vramwatch::model::units::MIB;
use vramwatch::model::{DeviceInfo, GpuSample, MemInfo, ProcSample, Snapshot, SystemInfo};
use vramwatch::record::{Header, Writer, WriterOptions};

const T0: u64 = 1_764_000_000_000;

fn vw() -> Command {
    Command::cargo_bin("vramwatch").expect("binary")
}

fn corpus(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/corpus")
        .join(rel)
}

/// A one-GPU recording of `python train.py` whose memory goes through
/// `mib` (the GPU holds 2 MiB more), one snapshot a second.
fn job(dir: &Path, name: &str, pid: u32, mib: &[u64]) -> PathBuf {
    let system = SystemInfo {
        host: "ci".into(),
        source: "nvml".into(),
        gpus: vec![DeviceInfo {
            index: 0,
            name: "NVIDIA H200".into(),
            memory_total: 1000 * MIB,
            ..Default::default()
        }],
        ..Default::default()
    };
    let path = dir.join(name);
    let mut w = Writer::create(
        &path,
        Header::new(&system, 1000, T0),
        WriterOptions::default(),
    )
    .unwrap();
    for (i, &m) in mib.iter().enumerate() {
        let used = (m + 2) * MIB;
        w.write(&Snapshot {
            seq: i as u64,
            t_ms: T0 + i as u64 * 1000,
            gpus: vec![GpuSample {
                index: 0,
                mem: Some(MemInfo {
                    used,
                    reserved: 0,
                    free: 1000 * MIB - used,
                    total: 1000 * MIB,
                }),
                ..Default::default()
            }],
            procs: vec![ProcSample {
                pid,
                gpu: 0,
                start_time: T0 / 1000,
                mem: Some(m * MIB),
                user: Some("ci".into()),
                command: Some(format!("python train.py --master_port {}", 29000 + pid).into()),
                ..Default::default()
            }],
            events: Vec::new(),
        });
    }
    w.finish().unwrap();
    path
}

#[test]
fn baseline_pairs_the_same_scripts_of_real_runs() {
    let out = vw()
        .arg("report")
        .arg(corpus("quick/05-gpu0-healthy_train-s3.jsonl.zst"))
        .arg("--baseline")
        .arg(corpus("heldout/08-gpu1-healthy_train-s2.jsonl.zst"))
        .args(["--match-gpu", "model"])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for want in [
        "GPU 0 NVIDIA H200 against baseline GPU 1 NVIDIA H200 (matched by the processes they share)",
        "Process python healthy_train.py (matched by program)",
        "  new       PID 1401 on GPU 0, root: python3 ",
        "  baseline  PID 1196 on GPU 1, root: python3 ",
        "PyTorch allocator:",
        "Only in the new recording:",
        "dataset_load.py",
        "Only in the baseline:",
        "weights_load.py",
    ] {
        assert!(text.contains(want), "`{want}` missing from:\n{text}");
    }
}

#[test]
fn baseline_gate_passes_at_the_limit_and_fails_above_it_with_one_line() {
    let d = tempfile::tempdir().unwrap();
    let old = job(d.path(), "old.jsonl", 10, &[10, 50, 100, 20]);
    let at = job(d.path(), "at.jsonl.zst", 20, &[10, 60, 105, 20]);
    let above = job(d.path(), "above.jsonl", 30, &[10, 60, 106, 20]);
    vw().arg("report")
        .arg(&at)
        .arg("--baseline")
        .arg(&old)
        .args(["--fail-above", "5%"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Gate (2 checked): passed"));
    let out = vw()
        .arg("report")
        .arg(&above)
        .arg("--baseline")
        .arg(&old)
        .args(["--fail-above", "5%", "--metric", "peak"])
        .assert()
        .code(1);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert_eq!(
        err,
        "vramwatch: error: peak of process python train.py (PID 30 on GPU 0) rose 6M (+6.0%: 100M → 106M): more than --fail-above 5% allows (and 1 more over it)\n"
    );
    // The means rose 8.9 % (45 → 49 MiB) and 8.5 % (the GPU's).
    for (limit, code) in [("10%", 0), ("8.8%", 1)] {
        vw().arg("report")
            .arg(&above)
            .arg("--baseline")
            .arg(&old)
            .args(["--fail-above", limit, "--metric", "mean"])
            .assert()
            .code(code);
    }
}

#[test]
fn baseline_writes_json_and_an_overlay() {
    let d = tempfile::tempdir().unwrap();
    let svg = d.path().join("cmp.svg");
    let out = vw()
        .arg("report")
        .arg(corpus("quick/02-gpu0-eval_spike-s3.jsonl.zst"))
        .arg("--baseline")
        .arg(corpus("heldout/05-gpu1-eval_spike-s2.jsonl.zst"))
        .args(["--match-gpu", "0=1", "--json", "--svg"])
        .arg(&svg)
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["format"], "vramwatch-baseline");
    assert_eq!(v["gpus"].as_array().unwrap().len(), 1);
    assert_eq!(v["gpus"][0]["matched_by"], "given");
    let eval = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["new"]["program"] == "python eval_spike.py")
        .unwrap();
    assert_eq!(eval["baseline"]["gpu"], 1);
    assert!(eval["figures"]["peak_bytes"]["new"].as_u64().unwrap() > 0);
    let drawn = fs::read_to_string(&svg).unwrap();
    assert!(drawn.starts_with("<svg") && drawn.contains("capacity 140.4 GiB"));
    assert_eq!(drawn.matches("<polyline").count(), 2);
}

#[test]
fn baseline_refuses_bad_limits_and_empty_recordings() {
    let d = tempfile::tempdir().unwrap();
    let old = job(d.path(), "old.jsonl", 10, &[10, 20]);
    vw().arg("report")
        .arg(&old)
        .arg("--baseline")
        .arg(&old)
        .args(["--fail-above", "5MB"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("MB is ambiguous: use MiB"));
    let empty = job(d.path(), "empty.jsonl", 10, &[]);
    vw().arg("report")
        .arg(&empty)
        .arg("--baseline")
        .arg(&old)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no snapshots in it, nothing to compare",
        ));
    vw().arg("report")
        .arg(&old)
        .args(["--fail-above", "5%"])
        .assert()
        .code(2);
}

/// The closing example of docs/baseline.md: `healthy_train.py` recorded on
/// an H200 with `record -- COMMAND` at batch 16 and at batch 24
/// (tests/fixtures/baseline). The bigger batch's peak is 29.0 % higher:
/// a 30 % gate passes it, a 25 % one fails it with its one-line reason, and
/// the JSON says the same figures as the table.
#[test]
fn baseline_gates_a_real_batch_size_change() {
    let fx = |name: &str| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/baseline")
            .join(name)
    };
    let (new, old) = (fx("train-b24.jsonl.zst"), fx("train-b16.jsonl.zst"));
    let run = |limit: &str| {
        vw().arg("report")
            .arg(&new)
            .arg("--baseline")
            .arg(&old)
            .args(["--fail-above", limit])
            .assert()
    };
    let pass = run("30%").success();
    let text = String::from_utf8(pass.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains("(matched by the only GPU in use on each side)"),
        "{text}"
    );
    assert!(
        text.contains("Process python healthy_train.py (matched by program)"),
        "{text}"
    );
    assert!(
        text.contains("  peak                      95.7G       123G     +27.8G   +29.0%"),
        "{text}"
    );
    let fail = run("25%").code(1);
    let err = String::from_utf8(fail.get_output().stderr.clone()).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("rose 27.8G (+29.0%: 95.7G → 123G): more than --fail-above 25% allows"),
        "{err}"
    );
    let json = vw()
        .arg("report")
        .arg(&new)
        .arg("--baseline")
        .arg(&old)
        .arg("--json")
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    let peak = &v["gpus"][0]["figures"]["peak_bytes"];
    assert_eq!(v["gpus"][0]["matched_by"], "only_in_use");
    assert_eq!(peak["baseline"], 102_759_202_816_u64);
    assert_eq!(peak["new"], 132_597_481_472_u64);
    let pct = peak["change_pct"].as_f64().unwrap();
    assert!((pct - 29.037).abs() < 0.001, "{pct}");
}
