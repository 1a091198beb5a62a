//! Property tests of the analysis: no panic and no NaN on any input (empty,
//! one point, constant, huge values, time going backwards, gaps, missing
//! readings, lost GPUs), slopes and phases right on noisy synthetic series,
//! and hysteresis that does not flicker.

use std::time::Duration;

use proptest::prelude::*;

use vramwatch::analysis::leak::{LeakDetector, LeakParams};
use vramwatch::analysis::phase::{PhaseParams, PhaseTracker};
use vramwatch::analysis::slope::{MAX_POINTS, Window};
use vramwatch::analysis::{AnalysisConfig, Analyzer, Forecast, Phase, Rate};
use vramwatch::model::{Event, EventKind, GpuSample, GpuState, MemInfo, ProcSample, Snapshot};

const MIB: f64 = 1024.0 * 1024.0;

fn finite_rate(r: &Rate) -> bool {
    r.bps.is_finite()
        && r.low.is_finite()
        && r.high.is_finite()
        && r.low <= r.bps
        && r.bps <= r.high
}

fn sane_forecast(f: &Forecast) -> bool {
    f.eta_s.is_finite()
        && f.low_s.is_finite()
        && f.low_s >= 0.0
        && f.low_s <= f.eta_s
        && f.high_s.is_none_or(|h| h.is_finite() && h >= f.eta_s)
        && finite_rate(&f.rate)
        && !f.label().is_empty()
}

/// Deterministic noise in [-1, 1).
fn noise(seed: u64, i: u64) -> f64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(i.wrapping_mul(0xD1B5_4A32_D192_ED03));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

fn mem_strategy() -> impl Strategy<Value = Option<MemInfo>> {
    prop_oneof![
        Just(None),
        (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>()).prop_map(
            |(used, reserved, free, total)| Some(MemInfo {
                used,
                reserved,
                free,
                total
            })
        ),
        (0u64..200, 0u64..200).prop_map(|(used, total)| Some(MemInfo {
            used: used << 30,
            reserved: 1 << 29,
            free: total.saturating_sub(used) << 30,
            total: total << 30,
        })),
    ]
}

fn gpu_strategy() -> impl Strategy<Value = GpuSample> {
    (
        0u32..3,
        prop_oneof![
            Just(GpuState::Ok),
            Just(GpuState::Stale),
            Just(GpuState::Lost)
        ],
        mem_strategy(),
        proptest::option::of(any::<u64>()),
        proptest::option::of(any::<u32>()),
        proptest::option::of(any::<u32>()),
        proptest::option::of(any::<u32>()),
    )
        .prop_map(
            |(index, state, mem, mem_peak, temp_c, power_mw, power_limit_mw)| GpuSample {
                index,
                state,
                mem,
                mem_peak,
                temp_c,
                power_mw,
                power_limit_mw,
                ..Default::default()
            },
        )
}

fn proc_strategy() -> impl Strategy<Value = ProcSample> {
    (
        0u32..6,
        0u64..3,
        0u32..3,
        proptest::option::of(prop_oneof![any::<u64>(), 0u64..(64u64 << 30)]),
        proptest::option::of(any::<u64>()),
        proptest::option::of(".{0,20}"),
    )
        .prop_map(|(pid, start_time, gpu, mem, mem_peak, cmd)| ProcSample {
            pid,
            start_time,
            gpu,
            mem,
            mem_peak,
            command: cmd.map(Into::into),
            ..Default::default()
        })
}

fn snapshot_strategy() -> impl Strategy<Value = Snapshot> {
    (
        prop_oneof![any::<u64>(), 0u64..10_000_000],
        proptest::collection::vec(gpu_strategy(), 0..4),
        proptest::collection::vec(proc_strategy(), 0..8),
        proptest::collection::vec((0u32..3, 0u64..100), 0..2),
    )
        .prop_map(|(t_ms, gpus, procs, xids)| Snapshot {
            seq: 0,
            t_ms,
            gpus,
            procs,
            events: xids
                .into_iter()
                .map(|(g, x)| Event {
                    t_ms,
                    kind: EventKind::Xid,
                    gpu: Some(g),
                    pid: None,
                    message: format!("XID {x}"),
                    after_oom: false,
                })
                .collect(),
        })
}

/// The phase after each point of `f(i)` sampled at 1 Hz.
fn phases(n: u64, f: impl Fn(u64) -> f64) -> Vec<Phase> {
    let p = PhaseParams::default();
    let mut w = Window::new(Duration::from_secs(30));
    let mut ph = PhaseTracker::default();
    (0..n)
        .map(|i| {
            w.push(i * 1000, f(i));
            ph.update(i * 1000, w.estimate().as_ref(), &p)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn window_estimates_are_finite_and_ordered(
        pts in proptest::collection::vec((any::<u64>(), any::<u64>()), 0..200),
        span_s in 1u64..600,
    ) {
        let mut w = Window::new(Duration::from_secs(span_s));
        for (t, v) in pts {
            w.push(t, v as f64);
            prop_assert!(w.len() <= MAX_POINTS);
            if let Some(e) = w.estimate() {
                prop_assert!(finite_rate(&e.rate), "{e:?}");
                prop_assert!(e.spread >= 0.0 && e.noise >= 0.0 && e.swing >= 0.0);
                prop_assert!(e.level.is_finite() && e.max_step.is_finite());
            }
        }
    }

    #[test]
    fn slope_of_a_noisy_line_is_close(
        rate_mib in -500.0f64..500.0,
        noise_mib in 0.0f64..32.0,
        seed in any::<u64>(),
        dt_ms in 200u64..2_000,
    ) {
        let mut w = Window::new(Duration::from_secs(30));
        for i in 0..200u64 {
            let t = i * dt_ms;
            let v = 80e9 + rate_mib * MIB * t as f64 / 1000.0 + noise_mib * MIB * noise(seed, i);
            w.push(t, v);
        }
        let e = w.estimate().unwrap();
        // The median of n/2 pair slopes over a 30 s window: the error is
        // bounded by the noise over half the window.
        let tol = 2.0 * noise_mib * MIB / 15.0 + 1.0;
        prop_assert!((e.rate.bps - rate_mib * MIB).abs() <= tol, "{} vs {}", e.rate.bps / MIB, rate_mib);
        prop_assert!(e.rate.low <= rate_mib * MIB + tol && e.rate.high >= rate_mib * MIB - tol);
    }

    #[test]
    fn phase_of_noisy_growth_and_decline(
        rate_mib in 20.0f64..2_000.0,
        sign in prop_oneof![Just(1.0f64), Just(-1.0)],
        noise_mib in 0.0f64..64.0,
        seed in any::<u64>(),
    ) {
        let p = PhaseParams::default();
        let mut w = Window::new(Duration::from_secs(30));
        let mut ph = PhaseTracker::default();
        let want = if sign > 0.0 { Phase::Growing } else { Phase::Shrinking };
        for i in 0..120u64 {
            let t = i * 1000;
            let v = 500e9 + sign * rate_mib * MIB * i as f64 + noise_mib * MIB * noise(seed, i);
            w.push(t, v);
            let got = ph.update(t, w.estimate().as_ref(), &p);
            if i >= 40 {
                prop_assert_eq!(got, want, "at {} s", i);
            }
        }
    }

    #[test]
    fn leak_detector_survives_anything(
        pts in proptest::collection::vec((any::<u64>(), any::<u64>()), 0..300),
        min_s in 0u64..120,
        rate in prop_oneof![Just(0.0f64), 0.0f64..1e12, Just(f64::MAX)],
    ) {
        let params = LeakParams {
            min_rate: rate,
            min_duration: Duration::from_secs(min_s),
            interval: Duration::from_secs(1),
        };
        let mut d = LeakDetector::new(&params);
        for (t, v) in pts {
            d.observe(t, v as f64);
            if let Some(f) = d.flag() {
                prop_assert!(finite_rate(&f.rate));
                prop_assert!(f.onset_ms <= f.since_ms);
            }
        }
    }

    #[test]
    fn analyzer_survives_any_snapshot_stream(
        snaps in proptest::collection::vec(snapshot_strategy(), 0..40),
    ) {
        let mut a = Analyzer::new(&AnalysisConfig::default());
        for s in &snaps {
            for al in a.observe(s) {
                prop_assert!(!al.message.is_empty());
                let e = al.to_event();
                prop_assert_eq!(e.kind, EventKind::Alert);
                prop_assert!(!vramwatch::analysis::alert_env(&al).is_empty());
            }
            for g in a.gpus() {
                if let Some(r) = &g.rate { prop_assert!(finite_rate(r)); }
                if let Some(f) = &g.forecast { prop_assert!(sane_forecast(f), "{f:?}"); }
            }
            for p in a.processes() {
                if let Some(r) = &p.rate { prop_assert!(finite_rate(r)); }
                if let Some(f) = &p.forecast { prop_assert!(sane_forecast(f), "{f:?}"); }
                prop_assert!(p.first_seen_ms <= p.last_seen_ms);
            }
        }
    }

    #[test]
    fn monotonic_streams_with_gaps_stay_sane(
        steps in proptest::collection::vec((1u64..120_000, 0u64..(140u64 << 30)), 1..200),
    ) {
        // Realistic values, time only forward but with gaps up to 2 min.
        let mut a = Analyzer::new(&AnalysisConfig::default());
        let mut t = 1_700_000_000_000u64;
        let total = 140u64 << 30;
        for (i, (dt, used)) in steps.into_iter().enumerate() {
            t += dt;
            let snap = Snapshot {
                seq: i as u64,
                t_ms: t,
                gpus: vec![GpuSample {
                    index: 0,
                    mem: Some(MemInfo { used, reserved: 0, free: total - used, total }),
                    mem_peak: Some(used),
                    ..Default::default()
                }],
                procs: vec![ProcSample { pid: 1, mem: Some(used), mem_peak: Some(used), ..Default::default() }],
                events: Vec::new(),
            };
            a.observe(&snap);
            let g = a.gpu(0).unwrap();
            prop_assert!(g.peak.is_some_and(|p| p.bytes >= used));
            if let Some(f) = &g.forecast { prop_assert!(sane_forecast(f), "{f:?}"); }
        }
    }
}

#[test]
fn degenerate_inputs() {
    let mut a = Analyzer::new(&AnalysisConfig::default());
    // Empty snapshot, twice at the same time, then one going back.
    let empty = Snapshot::default();
    assert!(a.observe(&empty).is_empty());
    assert!(a.observe(&empty).is_empty());
    assert_eq!(a.gpus().count(), 0);
    // One constant point repeated at the same time: no estimate, no panic.
    let g = GpuSample {
        index: 0,
        mem: Some(MemInfo {
            used: u64::MAX,
            reserved: u64::MAX,
            free: 0,
            total: u64::MAX,
        }),
        mem_peak: Some(u64::MAX),
        ..Default::default()
    };
    let s = Snapshot {
        t_ms: 5,
        gpus: vec![g],
        ..Default::default()
    };
    let alerts = a.observe(&s);
    assert_eq!(alerts.len(), 1, "memory at 200 %: {alerts:?}");
    assert!(a.observe(&s).is_empty());
    let back = Snapshot {
        t_ms: 1,
        ..s.clone()
    };
    assert!(a.observe(&back).is_empty());
    let gpu = a.gpu(0).unwrap();
    assert_eq!(gpu.rate, None);
    assert_eq!(gpu.phase, Phase::Unknown);
    assert_eq!(gpu.peak.map(|p| p.bytes), Some(u64::MAX));
    // A constant series: stable, rate exactly 0, no forecast.
    let mut a = Analyzer::new(&AnalysisConfig::default());
    for i in 0..100u64 {
        let mut s = s.clone();
        s.t_ms = i * 1000;
        if let Some(m) = s.gpus[0].mem.as_mut() {
            *m = MemInfo {
                used: 1 << 30,
                reserved: 0,
                free: 1 << 30,
                total: 2 << 30,
            };
        }
        s.gpus[0].mem_peak = None;
        a.observe(&s);
    }
    let g = a.gpu(0).unwrap();
    assert_eq!(g.phase, Phase::Stable);
    assert_eq!(g.rate.map(|r| r.bps), Some(0.0));
    assert!(g.forecast.is_none());
    a.reset();
    assert!(a.gpu(0).is_none());
}

// 20 simulated minutes per case: fewer cases here (several runs of 256
// cases each passed when the thresholds were set).
proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn noisy_plateau_never_flickers(
        noise_mib in 0.0f64..96.0,
        level_gib in 1.0f64..140.0,
        seed in any::<u64>(),
    ) {
        // Noise well below the volatile level (256 MiB): stable throughout.
        let v = phases(1200, |i| level_gib * 1024.0 * MIB + noise_mib * MIB * noise(seed, i));
        let known: Vec<_> = v.iter().copied().filter(|p| *p != Phase::Unknown).collect();
        prop_assert!(known.len() > 1100);
        prop_assert!(known.iter().all(|p| *p == Phase::Stable));
    }

    #[test]
    fn borderline_noise_changes_phase_rarely(
        noise_mib in 96.0f64..512.0,
        level_gib in 1.0f64..140.0,
        seed in any::<u64>(),
    ) {
        // Noise around the volatile level (a spread of 256 MiB) may tip the
        // phase between stable and volatile, but the 3:1 level band keeps
        // such changes rare and each phase at least a window (30 s) long,
        // and noise is never mistaken for growth.
        let v = phases(1200, |i| level_gib * 1024.0 * MIB + noise_mib * MIB * noise(seed, i));
        // After the window's warm-up (30 s).
        let changes: Vec<usize> = (31..v.len()).filter(|&i| v[i] != v[i - 1]).collect();
        prop_assert!(changes.len() <= 4, "{changes:?}");
        prop_assert!(changes.windows(2).all(|w| w[1] - w[0] >= 30), "{changes:?}");
        prop_assert!(v.iter().all(|p| matches!(p, Phase::Unknown | Phase::Stable | Phase::Volatile)));
    }
}
