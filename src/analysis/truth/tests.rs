//! The truth scorer on runs whose answer is known by construction.

use super::*;
use crate::model::{GpuSample, MemInfo, ProcSample};

const T0: Millis = 1_800_000_000_000;
const GIB: u64 = 1 << 30;

/// One GPU of 100 GiB; `used(s)` bytes at second `s`, all of it one process.
fn run(seconds: u64, used: impl Fn(u64) -> u64) -> Vec<Snapshot> {
    (0..seconds)
        .map(|s| {
            let u = used(s).min(100 * GIB);
            Snapshot {
                seq: s,
                t_ms: T0 + s * 1000,
                gpus: vec![GpuSample {
                    index: 0,
                    mem: Some(MemInfo {
                        used: u,
                        reserved: 0,
                        free: 100 * GIB - u,
                        total: 100 * GIB,
                    }),
                    mem_peak: Some(u),
                    ..Default::default()
                }],
                procs: vec![ProcSample {
                    pid: 7,
                    start_time: 1,
                    gpu: 0,
                    mem: Some(u),
                    mem_peak: Some(u),
                    ..Default::default()
                }],
                events: Vec::new(),
            }
        })
        .collect()
}

fn truth(expect: Expect, growth_s: Option<u64>, oom_s: Option<u64>) -> Truth {
    Truth {
        workload: "test".into(),
        variant: None,
        speed: Some(1.0),
        device: Some(0),
        device_uuid: None,
        pids: vec![7],
        start_unix_ms: T0,
        growth_start_unix_ms: growth_s.map(|s| T0 + s * 1000),
        oom_unix_ms: oom_s.map(|s| T0 + s * 1000),
        oom_pid: oom_s.map(|_| 7),
        expect,
        outcome: None,
        end_unix_ms: None,
    }
}

#[test]
fn a_steady_leak_is_forecast_at_every_checkpoint_after_its_start() {
    // 10 GiB, then 0.5 GiB/s from 10 s: full at 190 s.
    let used = |s: u64| 10 * GIB + s.saturating_sub(10) * GIB / 2;
    let snaps = run(191, used);
    let t = truth(Expect::Oom, Some(10), Some(190));
    let r = score_run("leak", &t, 0, &AnalysisConfig::default(), snaps);
    let (counted, held) = r.held();
    assert_eq!(counted, 4, "{r:?}");
    assert_eq!(held, 4, "{r:?}");
    assert!(
        r.leak_flag_after_growth_s.is_some_and(|s| s <= 25.0),
        "{r:?}"
    );
    assert!(r.false_alarms.is_empty());
    let s = Summary::of(std::slice::from_ref(&r));
    assert_eq!((s.checkpoints, s.held, s.shown_by_30), (3, 3, 1));
    // Growth from 10 s, OOM at 190 s: every checkpoint has 120 s or more
    // of growth behind it.
    assert_eq!((s.settled_checkpoints, s.settled_held), (3, 3));
    // The median width of the held ranges, as a share of the time left:
    // the middle of the three checkpoints' own widths.
    let mut w: Vec<f64> = r
        .checkpoints
        .iter()
        .filter(|c| c.counts && c.lead_s <= 60)
        .filter_map(|c| {
            c.shown
                .and_then(|x| x.high_s.map(|h| (h - x.low_s) / c.lead_s as f64))
        })
        .collect();
    w.sort_by(f64::total_cmp);
    assert_eq!(s.held_width, Some(w[1]), "{w:?}");
    assert!(
        w[1] > 0.0 && w[1] < 1.0,
        "a clean leak's range is narrow: {w:?}"
    );
    let md = markdown(&[r]);
    assert!(md.contains("| test ×1 | OOM |"), "{md}");
    assert!(md.contains("3 of 3 checkpoints"), "{md}");
    assert!(
        md.contains("where the growth had run 15s or more: 3 of 3, 100%"),
        "{md}"
    );
    assert!(md.contains("(0 OOM runs never flagged)"), "{md}");
    assert!(md.contains("× the time left wide, median"), "{md}");
}

#[test]
fn checkpoints_before_the_growth_do_not_count() {
    // Growth starts 50 s before the OOM: T−120 and T−60 cannot count.
    let used = |s: u64| 50 * GIB + s.saturating_sub(100) * GIB;
    let t = truth(Expect::Oom, Some(100), Some(150));
    let r = score_run("late", &t, 0, &AnalysisConfig::default(), run(151, used));
    let counts: Vec<bool> = r.checkpoints.iter().map(|c| c.counts).collect();
    assert_eq!(counts, [false, false, true, true]);
}

#[test]
fn a_flat_run_that_must_not_alarm_has_no_false_alarm() {
    let t = truth(Expect::NoAlarm, None, None);
    let r = score_run(
        "flat",
        &t,
        0,
        &AnalysisConfig::default(),
        run(120, |_| 40 * GIB),
    );
    assert!(r.false_alarms.is_empty(), "{r:?}");
    assert!(r.checkpoints.iter().all(|c| !c.counts));
}

#[test]
fn a_leak_on_a_run_that_must_not_alarm_is_a_false_alarm() {
    let used = |s: u64| 10 * GIB + s * GIB / 2;
    let t = truth(Expect::NoAlarm, Some(0), None);
    let r = score_run("x", &t, 0, &AnalysisConfig::default(), run(120, used));
    assert!(!r.false_alarms.is_empty());
    assert_eq!(Summary::of(&[r]).false_alarm_runs, 1);
}

#[test]
fn truth_files_are_read_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.json");
    std::fs::write(
        &p,
        r#"{"workload":"leak_keep","variant":null,"speed":1.5,"device":1,"pids":[5],
            "start_unix_ms":1,"growth_start_unix_ms":2,"oom_unix_ms":3,"expect":"oom","extra":true}"#,
    )
    .unwrap();
    let t = Truth::read(&p).unwrap();
    assert_eq!(t.expect, Expect::Oom);
    assert_eq!(t.label(), "leak_keep ×1.5");
    std::fs::write(&p, r#"{"workload":"w","start_unix_ms":1,"expect":"oom"}"#).unwrap();
    let e = Truth::read(&p).unwrap_err().to_string();
    assert!(e.contains("no oom_unix_ms"), "{e}");
    std::fs::write(&p, "{\n  \"workload\": 5\n}").unwrap();
    let e = Truth::read(&p).unwrap_err().to_string();
    assert!(e.contains("line 2"), "{e}");
    // Times out of order, or an OOM years away, are refused (they scored
    // as "growth→OOM 213503961545d09h").
    for (times, want) in [
        (
            r#""start_unix_ms":100,"oom_unix_ms":50"#,
            "not within a day after",
        ),
        (
            r#""start_unix_ms":1,"oom_unix_ms":18446744073709551615"#,
            "not within a day after",
        ),
        (
            r#""start_unix_ms":1,"growth_start_unix_ms":9,"oom_unix_ms":5"#,
            "is after oom_unix_ms",
        ),
        (
            r#""start_unix_ms":10,"growth_start_unix_ms":9,"oom_unix_ms":50"#,
            "is before start_unix_ms",
        ),
    ] {
        std::fs::write(&p, format!(r#"{{"workload":"w","expect":"oom",{times}}}"#)).unwrap();
        let e = Truth::read(&p).unwrap_err().to_string();
        assert!(e.contains(want), "{times}: {e}");
    }
    // Too large is said so (it was cut at 4 MiB and read as broken JSON).
    std::fs::write(&p, format!("{{\"pad\":\"{}\"}}", "x".repeat(5 << 20))).unwrap();
    let e = Truth::read(&p).unwrap_err().to_string();
    assert!(e.contains("larger than 4 MiB"), "{e}");
}

#[test]
fn the_gpu_is_found_by_uuid_first() {
    let mut t = truth(Expect::Oom, None, Some(1));
    t.device = Some(0);
    t.device_uuid = Some("GPU-ABC".into());
    let system = SystemInfo {
        gpus: vec![
            crate::model::DeviceInfo {
                index: 0,
                uuid: "GPU-xyz".into(),
                ..Default::default()
            },
            crate::model::DeviceInfo {
                index: 1,
                uuid: "gpu-abc".into(),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    assert_eq!(t.gpu_in(&system), Some(1));
    t.device_uuid = None;
    assert_eq!(t.gpu_in(&system), Some(0));
}

#[test]
fn a_checkpoint_early_in_the_growth_is_not_settled() {
    // 10 GiB, then 4.5 GiB/s from 170 s: full at 190 s. T−10 s has 10 s of
    // growth behind it, T−30 s and T−60 s come before it.
    let used = |s: u64| 10 * GIB + s.saturating_sub(170) * 9 * GIB / 2;
    let t = truth(Expect::Oom, Some(170), Some(190));
    let r = score_run("short", &t, 0, &AnalysisConfig::default(), run(191, used));
    let s = Summary::of(std::slice::from_ref(&r));
    assert_eq!(s.checkpoints, 1, "{r:?}");
    assert_eq!((s.settled_checkpoints, s.settled_held), (0, 0), "{r:?}");
    assert!(markdown(&[r]).contains("15s or more: 0 of 0, —"));
}

#[test]
fn a_run_whose_oom_did_not_come_by_its_end_is_scored_apart() {
    // 10 GiB, then 1 GiB/s from 10 s to 80 GiB at 80 s, then flat; the
    // workload expected an OOM but its time ran out at 200 s.
    let used = |s: u64| 10 * GIB + s.clamp(10, 80).saturating_sub(10) * GIB;
    let mut t = truth(Expect::Oom, Some(10), None);
    t.outcome = Some(Outcome::NoOomBeforeDeadline);
    t.end_unix_ms = Some(T0 + 200_000);
    assert!(t.unreached());
    let r = score_run("stall", &t, 0, &AnalysisConfig::default(), run(200, used));
    let u = r.unreached.clone().expect("scored as unreached");
    assert_eq!(u.growth_to_end_s, Some(190.0));
    // A forecast was shown while it grew, and its range closed long
    // before the end: known wrong.
    assert!(r.first_forecast_before_oom_s.is_some(), "{r:?}");
    assert!(
        u.range_passed
            .as_deref()
            .is_some_and(|p| p.contains("with no OOM")),
        "{u:?}"
    );
    assert!(r.checkpoints.iter().all(|c| !c.counts));
    assert!(r.leak_flag_after_growth_s.is_some(), "{r:?}");
    let s = Summary::of(std::slice::from_ref(&r));
    assert_eq!((s.oom_runs, s.checkpoints, s.never_flagged), (0, 0, 0));
    assert_eq!(
        (
            s.unreached_runs,
            s.unreached_flagged,
            s.unreached_range_passed
        ),
        (1, 1, 1)
    );
    let md = markdown(&[r]);
    assert!(md.contains("| no OOM by the end (+3m10s) |"), "{md}");
    assert!(
        md.contains("1 run grew towards an OOM that had not come by the end"),
        "{md}"
    );
}

#[test]
fn a_truth_that_expects_an_oom_needs_its_time_or_an_outcome_that_explains() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, extra: &str| {
        let p = dir.path().join(name);
        std::fs::write(
            &p,
            format!(r#"{{"workload":"w","start_unix_ms":1000,"expect":"oom"{extra}}}"#),
        )
        .unwrap();
        p
    };
    let err = Truth::read(&write("a.json", "")).unwrap_err().to_string();
    assert!(
        err.contains("a.json") && err.contains("no oom_unix_ms"),
        "{err}"
    );
    let t = Truth::read(&write(
        "b.json",
        r#","outcome":"no_oom_before_deadline","end_unix_ms":9000"#,
    ))
    .unwrap();
    assert!(t.unreached());
    // An outcome this version does not know reads, but does not excuse a
    // missing OOM time.
    let err = Truth::read(&write("c.json", r#","outcome":"exploded""#))
        .unwrap_err()
        .to_string();
    assert!(err.contains("c.json"), "{err}");
}

/// A leak of 0.8 GiB/s from 20 s, run into OOM at 120 s, scored.
fn leak_to_oom() -> RunScore {
    score_run(
        "leak",
        &truth(Expect::Oom, Some(20), Some(120)),
        0,
        &AnalysisConfig::default(),
        run(121, |s| (10 + s.saturating_sub(20) * 4 / 5) * GIB),
    )
}

#[test]
fn grouped_runs_have_a_line_each_and_one_for_all() {
    let cfg = AnalysisConfig::default();
    // A leak run into OOM at 120 s, and a flat run that must not alarm.
    let leak = leak_to_oom();
    let flat = score_run(
        "flat",
        &truth(Expect::NoAlarm, None, None),
        0,
        &cfg,
        run(120, |_| 30 * GIB),
    );
    assert!(leak.leak_flag_after_growth_s.is_some_and(|s| s <= 20.5));
    assert_eq!(leak.shape, "test");
    let all = Summary::of(&[leak.clone(), flat.clone()]);
    let t = grouped(
        "set",
        &[
            ("a/".into(), vec![leak.clone()]),
            ("b`|/".into(), vec![flat.clone()]),
        ],
        &all,
    );
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 5, "{t}");
    assert!(lines[0].starts_with("| set | runs | OOM |"), "{t}");
    // The leak: its three checkpoints held, flagged within 20 s.
    let held = Summary::of(std::slice::from_ref(&leak)).held;
    assert_eq!(
        lines[2],
        format!("| `a/` | 1 | 1 | {held} of 3 | {held} of 3 | 0 | 1 of 1 | 1 / 0 / 0 / 0 | — |")
    );
    // The flat run: nothing to forecast, no false alarm.
    // A name cannot end its code span or its cell early.
    assert_eq!(lines[3], "| `b''/` | 1 | 0 | — | — | — | — | — | 0 of 1 |");
    assert!(
        lines[4].starts_with("| **all** | 2 | 1 |")
            && lines[4].ends_with("| 1 / 0 / 0 / 0 | 0 of 1 |"),
        "{t}"
    );
}

#[test]
fn leak_flags_are_counted_by_when_they_came_as_the_tables_round() {
    let leak = leak_to_oom();
    let at = |s: Option<f64>| RunScore {
        leak_flag_after_growth_s: s,
        ..leak.clone()
    };
    let runs = [
        at(Some(20.49)),
        at(Some(20.5)),
        at(Some(25.49)),
        at(Some(25.5)),
        at(None),
    ];
    let s = Summary::of(&runs);
    assert_eq!(
        (
            s.flagged_within_20,
            s.flagged_within_25,
            s.flagged_later,
            s.never_flagged
        ),
        (1, 2, 1, 1)
    );
    // A run whose OOM had not come by its end is in none of them.
    let unreached = RunScore {
        unreached: Some(Unreached {
            growth_to_end_s: Some(100.0),
            range_passed: None,
        }),
        ..at(Some(19.0))
    };
    let s = Summary::of(&[unreached]);
    assert_eq!(s.flagged_within_20 + s.never_flagged + s.oom_runs, 0);
}
