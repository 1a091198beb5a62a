//! The comparison end to end on recordings written by the library's
//! `Writer`: exact figures for the gate. The real corpus: `tests_corpus`.

use std::path::{Path, PathBuf};

use super::*;
use crate::model::units::MIB;
use crate::model::{
    DeviceInfo, Event, EventKind, GpuSample, MemInfo, ProcSample, Snapshot, SystemInfo,
};
use crate::record::{Header, Writer, WriterOptions};

const T0: u64 = 1_764_000_000_000;

fn system(gpus: u32) -> SystemInfo {
    SystemInfo {
        host: "node".into(),
        source: "nvml".into(),
        gpus: (0..gpus)
            .map(|index| DeviceInfo {
                index,
                name: "NVIDIA H200".into(),
                memory_total: 1000 * MIB,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// One snapshot: (GPU, MiB used) and (GPU, PID, MiB, command).
fn snap(i: u64, gpus: &[(u32, u64)], procs: &[(u32, u32, u64, &str)]) -> Snapshot {
    Snapshot {
        seq: i,
        t_ms: T0 + i * 1000,
        gpus: gpus
            .iter()
            .map(|&(index, used)| GpuSample {
                index,
                mem: Some(MemInfo {
                    used: used * MIB,
                    reserved: 0,
                    free: (1000 - used) * MIB,
                    total: 1000 * MIB,
                }),
                ..Default::default()
            })
            .collect(),
        procs: procs
            .iter()
            .map(|&(gpu, pid, mib, cmd)| ProcSample {
                pid,
                gpu,
                start_time: T0 / 1000,
                mem: Some(mib * MIB),
                user: Some("ci".into()),
                name: Some("python".into()),
                command: Some(cmd.into()),
                ..Default::default()
            })
            .collect(),
        events: Vec::new(),
    }
}

fn write(dir: &Path, name: &str, gpus: u32, snaps: &[Snapshot]) -> PathBuf {
    let path = dir.join(name);
    let mut w = Writer::create(
        &path,
        Header::new(&system(gpus), 1000, T0),
        WriterOptions::default(),
    )
    .unwrap();
    for s in snaps {
        w.write(s);
    }
    w.finish().unwrap();
    path
}

/// A job on GPU 0 whose memory goes through `mib` (the GPU holds 2 MiB
/// more: its context).
fn job(dir: &Path, name: &str, pid: u32, mib: &[u64]) -> PathBuf {
    let snaps: Vec<Snapshot> = mib
        .iter()
        .enumerate()
        .map(|(i, &m)| {
            snap(
                i as u64,
                &[(0, m + 2)],
                &[(0, pid, m, "python train.py --port 29500")],
            )
        })
        .collect();
    write(dir, name, 1, &snaps)
}

pub(super) fn read(p: &Path) -> RunStats {
    progress::read_both(p, p).unwrap().0.stats
}

fn opts(new: &Path, old: &Path, metric: Metric, t: &str) -> CompareOptions {
    CompareOptions {
        fail_above: Some(parse_threshold(t).unwrap()),
        metric,
        ..CompareOptions::new(new.into(), old.into())
    }
}

/// The outcome of `report NEW --baseline OLD` with these options: its
/// standard output and its error.
fn outcome(o: &CompareOptions) -> (String, Option<anyhow::Error>) {
    let mut out = Vec::new();
    let r = run_to(o, &mut out);
    (String::from_utf8(out).unwrap(), r.err())
}

#[test]
fn the_gate_passes_at_the_threshold_and_fails_just_above_it() {
    let d = tempfile::tempdir().unwrap();
    let old = job(d.path(), "old.jsonl", 100, &[10, 50, 100, 20]);
    let at = job(d.path(), "at.jsonl.zst", 200, &[10, 60, 105, 20]);
    let above = job(d.path(), "above.jsonl", 300, &[10, 60, 106, 20]);
    let (text, err) = outcome(&opts(&at, &old, Metric::Peak, "5%"));
    assert!(err.is_none(), "{err:?}");
    assert!(text.contains("Gate (2 checked): passed"), "{text}");
    let (text, err) = outcome(&opts(&above, &old, Metric::Peak, "5%"));
    let err = err.unwrap();
    assert_eq!(crate::cli::exit_code(&err), 1);
    let reason = err.to_string();
    assert_eq!(
        reason,
        "peak of process python train.py (PID 300 on GPU 0) rose 6M (+6.0%: 100M → 106M): more than --fail-above 5% allows (and 1 more over it)"
    );
    assert!(!reason.contains('\n'));
    assert!(text.contains("Gate (2 checked): FAILED"), "{text}");
    // An absolute threshold: 6 MiB more is within 6MiB, not within 5MiB.
    assert!(
        outcome(&opts(&above, &old, Metric::Peak, "6MiB"))
            .1
            .is_none()
    );
    assert!(
        outcome(&opts(&above, &old, Metric::Peak, "5MiB"))
            .1
            .is_some()
    );
}

#[test]
fn mean_and_p95_gates_read_their_own_figures() {
    let d = tempfile::tempdir().unwrap();
    // Same peak; the mean rises 12.1 % (40.5 → 45.4 MiB), the p95 (the
    // 19th of 20 samples: 0.95 × 20) 4 % (50 → 52 MiB).
    let base: Vec<u64> = [vec![30; 10], vec![50; 9], vec![60]].concat();
    let more: Vec<u64> = [vec![38; 10], vec![52; 9], vec![60]].concat();
    let old = job(d.path(), "old.jsonl", 1, &base);
    let new = job(d.path(), "new.jsonl", 2, &more);
    let (n, o) = (read(&new), read(&old));
    let cmp = compare(&n, &o, &CompareOptions::new(new.clone(), old.clone())).unwrap();
    let p = &cmp.procs[0];
    let fig = |k: &str| {
        p.rows
            .iter()
            .find(|r| r.key == k)
            .map(|r| (r.old.unwrap(), r.new.unwrap()))
            .unwrap()
    };
    let m = MIB as f64;
    assert_eq!(fig("peak_bytes"), (60.0 * m, 60.0 * m));
    assert_eq!(fig("mean_bytes"), (40.5 * m, 45.4 * m));
    assert_eq!(fig("p95_bytes"), (50.0 * m, 52.0 * m));
    assert!(outcome(&opts(&new, &old, Metric::Peak, "0%")).1.is_none());
    let e = outcome(&opts(&new, &old, Metric::Mean, "10%")).1.unwrap();
    assert!(
        e.to_string().starts_with("mean of process python train.py"),
        "{e}"
    );
    assert!(outcome(&opts(&new, &old, Metric::Mean, "12%")).1.is_some());
    assert!(
        outcome(&opts(&new, &old, Metric::Mean, "12.1%"))
            .1
            .is_none()
    );
    assert!(outcome(&opts(&new, &old, Metric::P95, "4%")).1.is_none());
    assert!(outcome(&opts(&new, &old, Metric::P95, "3.9%")).1.is_some());
}

#[test]
fn missing_gpus_and_unmatched_processes_are_listed_on_their_side() {
    let d = tempfile::tempdir().unwrap();
    let old: Vec<Snapshot> = (0..3)
        .map(|i| {
            snap(
                i,
                &[(0, 40)],
                &[
                    (0, 10, 30, "python train.py"),
                    (0, 11, 5, "python old_eval.py"),
                ],
            )
        })
        .collect();
    let new: Vec<Snapshot> = (0..3)
        .map(|i| {
            snap(
                i,
                &[(0, 40), (1, 70)],
                &[
                    (0, 20, 31, "python train.py"),
                    (1, 21, 60, "python \x1b[31mnew_probe.py"),
                ],
            )
        })
        .collect();
    let old = write(d.path(), "old.jsonl", 1, &old);
    let new = write(d.path(), "new.jsonl", 2, &new);
    let (text, err) = outcome(&CompareOptions::new(new.clone(), old.clone()));
    assert!(err.is_none(), "{err:?}");
    let cmp = compare(
        &read(&new),
        &read(&old),
        &CompareOptions::new(new.clone(), old.clone()),
    )
    .unwrap();
    assert_eq!(cmp.gpus.len(), 1);
    assert_eq!(
        cmp.gpus_only.0.iter().map(|g| g.index).collect::<Vec<_>>(),
        [1]
    );
    assert!(cmp.gpus_only.1.is_empty());
    assert_eq!(cmp.procs.len(), 1);
    assert_eq!((cmp.procs[0].new.pid, cmp.procs[0].old.pid), (20, 10));
    assert_eq!(cmp.procs_only.0[0].pid, 21);
    assert_eq!(cmp.procs_only.1[0].pid, 11);
    let only_new = text.split("Only in the new recording:").nth(1).unwrap();
    let (only_new, only_old) = only_new.split_once("Only in the baseline:").unwrap();
    assert!(
        only_new.contains("GPU 1 NVIDIA H200, peak 70M") && only_new.contains("PID 21 on GPU 1"),
        "{text}"
    );
    assert!(
        only_old.contains("PID 11 on GPU 0") && only_old.contains("old_eval.py"),
        "{text}"
    );
    assert!(
        !text.contains('\x1b'),
        "escape sequences are removed: {text}"
    );
    // The SVG escapes what it shows and draws both runs.
    let svg = d.path().join("o.svg");
    let o = CompareOptions {
        svg: Some(svg.clone()),
        ..CompareOptions::new(new, old)
    };
    assert!(outcome(&o).1.is_none());
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.starts_with("<svg") && drawn.trim_end().ends_with("</svg>"));
    assert_eq!(drawn.matches("<polyline").count(), 2);
    assert!(drawn.contains("capacity 1.0 GiB") && !drawn.contains('\x1b'));
}

#[test]
fn an_empty_recording_is_a_clear_error() {
    let d = tempfile::tempdir().unwrap();
    let old = job(d.path(), "old.jsonl", 1, &[10, 20]);
    let empty = write(d.path(), "empty.jsonl.zst", 1, &[]);
    let e = outcome(&CompareOptions::new(empty, old)).1.unwrap();
    assert_eq!(crate::cli::exit_code(&e), 2);
    let msg = e.to_string();
    assert!(
        msg.contains("empty.jsonl.zst: no snapshots in it, nothing to compare"),
        "{msg}"
    );
    // A gate with nothing matched fails rather than passing silently.
    let other: Vec<Snapshot> = (0..2).map(|i| snap(i, &[], &[])).collect();
    let other = write(d.path(), "none.jsonl", 1, &other);
    let e = outcome(&opts(
        &other,
        &d.path().join("old.jsonl"),
        Metric::Peak,
        "5%",
    ))
    .1
    .unwrap();
    assert!(e.to_string().contains("nothing could be checked"), "{e}");
}

#[test]
fn events_are_counted_per_gpu_and_process_and_json_names_them() {
    let d = tempfile::tempdir().unwrap();
    let mut snaps: Vec<Snapshot> = (0..3)
        .map(|i| snap(i, &[(0, 90)], &[(0, 5, 88, "python train.py --port 29611")]))
        .collect();
    let mut last = snap(3, &[(0, 2)], &[]);
    last.events.push(Event {
        t_ms: last.t_ms,
        kind: EventKind::SuspectedOom,
        gpu: Some(0),
        pid: Some(5),
        message: "PID 5 exited on GPU 0 at 99% full (suspected OOM)".into(),
        after_oom: false,
    });
    snaps.push(last);
    let new = write(d.path(), "new.jsonl", 1, &snaps);
    let old = job(d.path(), "old.jsonl", 4, &[10, 20]);
    let o = CompareOptions {
        json: true,
        ..opts(&new, &old, Metric::Peak, "1GiB")
    };
    let (out, err) = outcome(&o);
    assert!(err.is_none(), "{err:?}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["format"], "vramwatch-baseline");
    assert_eq!(v["gpus"][0]["figures"]["suspected_ooms"]["new"], 1);
    assert_eq!(v["gpus"][0]["figures"]["peak_bytes"]["baseline"], 22 * MIB);
    let p = &v["processes"][0];
    assert_eq!(p["matched_by"], "command");
    assert_eq!(p["figures"]["suspected_ooms"]["new"], 1);
    assert_eq!(p["figures"]["peak_bytes"]["change"], 68 * MIB);
    assert!(p["figures"]["peak_bytes"]["change_pct"].as_f64().unwrap() > 339.0);
    assert_eq!(v["gate"]["threshold"], "1GiB");
    assert_eq!(v["gate"]["passed"], true);
    assert_eq!(v["p95"]["resolution_bytes"], MIB);
}

#[test]
fn thresholds_parse_in_every_documented_form() {
    let pct = |num, den| Ok(Threshold::Percent { num, den });
    assert_eq!(parse_threshold("5%"), pct(5, 1));
    assert_eq!(parse_threshold("5"), pct(5, 1));
    assert_eq!(parse_threshold(" 0.5 % "), pct(5, 10));
    assert_eq!(parse_threshold("120MiB"), Ok(Threshold::Bytes(120 * MIB)));
    assert_eq!(parse_threshold("1GiB"), Ok(Threshold::Bytes(1 << 30)));
    assert_eq!(parse_threshold("1.5g"), Ok(Threshold::Bytes(3 << 29)));
    assert_eq!(parse_threshold("512 M"), Ok(Threshold::Bytes(512 * MIB)));
    for (s, shown) in [
        ("5%", "5%"),
        ("0.50", "0.5%"),
        ("1.05%", "1.05%"),
        ("120MiB", "120MiB"),
        ("2G", "2GiB"),
    ] {
        assert_eq!(parse_threshold(s).unwrap().to_string(), shown);
    }
    for (bad, why) in [
        ("", "no number"),
        ("%", "no number"),
        ("-5%", "must not be negative"),
        ("5MB", "MB is ambiguous: use MiB"),
        ("1gb", "gb is ambiguous: use GiB"),
        ("5 pct", "unknown unit `pct`"),
        ("1.2.3", "no number"),
        ("0.0000001%", "too many digits"),
        ("99999999999TiB", "too large"),
    ] {
        let e = parse_threshold(bad).unwrap_err();
        assert!(e.contains(why) && e.contains("120MiB, 1GiB"), "{bad}: {e}");
    }
    assert_eq!(Metric::from_name("p95"), Ok(Metric::P95));
    assert!(
        Metric::from_name("max")
            .unwrap_err()
            .contains("peak, mean or p95")
    );
    assert_eq!(Align::from_name("wall"), Ok(Align::Wall));
}
