//! Tests of the model: units, durations and events as recorded.

use super::units::*;
use super::*;

#[test]
fn bytes_short_picks_sensible_units() {
    assert_eq!(bytes_short(0), "0B");
    assert_eq!(bytes_short(512 * KIB), "512K");
    assert_eq!(bytes_short(300 * MIB), "300M");
    assert_eq!(bytes_short(3 * GIB / 2), "1.50G");
    assert_eq!(bytes_short(16 * GIB), "16.0G");
    assert_eq!(bytes_short(140 * GIB), "140G");
    // Where rounding crosses into the next precision or unit.
    let gib = |x: f64| (x * GIB as f64) as u64;
    assert_eq!(bytes_short(gib(99.97)), "100G");
    assert_eq!(bytes_short(gib(99.94)), "99.9G");
    assert_eq!(bytes_short(gib(9.996)), "10.0G");
    assert_eq!(bytes_short(gib(9.994)), "9.99G");
    assert_eq!(bytes_short(1023 * MIB + 700 * KIB), "1.00G");
    assert_eq!(bytes_short(999 * MIB), "999M");
    assert_eq!(bytes_short(1000 * MIB), "0.98G");
    assert_eq!(bytes_short(1000 * KIB), "1M");
    assert_eq!(bytes_short(1000), "1K");
    assert_eq!(bytes_short(999), "999B");
    for b in (0..200).map(|i| 1u64 << (i % 40) | (i * 7919)) {
        assert!(bytes_short(b).len() <= 5, "{b}: {}", bytes_short(b));
    }
}

#[test]
fn an_exit_after_an_oom_says_so_in_the_recording_and_older_ones_read() {
    let e = Event {
        t_ms: 5,
        kind: EventKind::ProcessExited,
        gpu: Some(1),
        pid: Some(7),
        message: "PID 7 exited on GPU 1 after running out of memory: x".into(),
        after_oom: true,
    };
    let line = serde_json::to_string(&e).unwrap();
    assert!(line.contains(r#""after_oom":true"#), "{line}");
    assert_eq!(serde_json::from_str::<Event>(&line).unwrap(), e);
    // False is left out, and a line without it (before 2026-12-06) is
    // an ordinary exit.
    let plain = Event {
        after_oom: false,
        ..e
    };
    let line = serde_json::to_string(&plain).unwrap();
    assert!(!line.contains("after_oom"), "{line}");
    assert_eq!(serde_json::from_str::<Event>(&line).unwrap(), plain);
}

#[test]
fn durations_read_like_a_clock() {
    assert_eq!(duration_short(5), "5s");
    assert_eq!(duration_short(130), "2m10s");
    assert_eq!(duration_short(3 * 3600 + 5 * 60), "3h05m");
    assert_eq!(duration_short(2 * 86_400 + 4 * 3600), "2d04h");
    assert_eq!(rate_short(504.0 * MIB as f64), "+500M/s");
    assert_eq!(rate_short(-128.0 * MIB as f64), "-130M/s");
    assert_eq!(rate_short(0.0), "+0B/s");
    // Just under 1 GiB/s is 1.0G, never "1000M".
    assert_eq!(rate_short(999.6 * MIB as f64), "+1.0G/s");
    assert_eq!(rate_short(1.01 * GIB as f64), "+1.0G/s");
    assert_eq!(rate_short(996.0 * MIB as f64), "+1.0G/s");
    assert_eq!(rate_short(990.0 * MIB as f64), "+990M/s");
    assert_eq!(age_short(9), "9s");
    assert_eq!(age_short(10), "10s");
    assert_eq!(age_short(59), "50s");
    assert_eq!(age_short(179), "2m");
    assert_eq!(age_short(3 * 3600 + 5 * 60), "3h05m");
}

#[test]
fn unaccounted_is_used_minus_process_sum_on_that_gpu() {
    let g = GpuSample {
        index: 1,
        mem: Some(MemInfo {
            used: 10 * GIB,
            reserved: GIB / 2,
            free: 20 * GIB,
            total: 30 * GIB + GIB / 2,
        }),
        ..Default::default()
    };
    let p = |gpu, mem| ProcSample {
        gpu,
        mem,
        ..Default::default()
    };
    let procs = [
        p(1, Some(4 * GIB)),
        p(1, Some(5 * GIB)),
        p(0, Some(GIB)),
        p(1, None),
    ];
    assert_eq!(g.unaccounted(&procs), Some(GIB));
    // Never negative: processes can briefly report more than the device.
    let procs = [p(1, Some(11 * GIB))];
    assert_eq!(g.unaccounted(&procs), Some(0));
}

#[test]
fn used_pct_counts_reserved() {
    let m = MemInfo {
        used: 40,
        reserved: 10,
        free: 50,
        total: 100,
    };
    assert_eq!(m.used_pct(), 50.0);
    assert_eq!(MemInfo::default().used_pct(), 0.0);
}

#[test]
fn kinds_merge_to_both() {
    assert_eq!(
        ProcKind::Compute.merge(ProcKind::Compute),
        ProcKind::Compute
    );
    assert_eq!(ProcKind::Compute.merge(ProcKind::Graphics), ProcKind::Both);
}
