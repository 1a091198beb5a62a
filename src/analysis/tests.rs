//! The analyzer over snapshots made in code.

use super::*;
use crate::model::ProcessKey;
use crate::model::{GpuSample, ProcSample, Snapshot};

mod leaking;
mod segments;

#[test]
fn config_maps_every_field() {
    let mut c = Config::default();
    c.alerts.leak_min_rate = 8.0 * 1024.0 * 1024.0;
    c.alerts.leak_min_duration = Duration::from_secs(40);
    c.alerts.forecast_below = Duration::from_secs(90);
    c.alerts.command = vec!["notify-send".into()];
    c.alerts.bell = true;
    c.thresholds.memory.crit = 97.0;
    c.sampling.interval = Duration::from_secs(10);
    let a = AnalysisConfig::from_config(&c);
    assert_eq!(a.leak.min_rate, 8.0 * 1024.0 * 1024.0);
    assert_eq!(a.leak.min_duration, Duration::from_secs(40));
    assert_eq!(a.leak.interval, Duration::from_secs(10));
    assert_eq!(a.phase.grow_rate, 2.0 * 1024.0 * 1024.0);
    assert_eq!(a.levels.forecast_below, Duration::from_secs(90));
    assert_eq!(a.levels.memory.crit, 97.0);
    assert_eq!(a.command, ["notify-send"]);
    assert!(a.bell);
    // 8 intervals of 10 s are longer than 30 s.
    assert_eq!(a.rate_window, Duration::from_secs(80));
    assert_eq!(AnalysisConfig::default().rate_window, RATE_WINDOW);
}

/// Second `t_s` (at 1,000 s + `t_s`): GPU 0 of `total` bytes using
/// `used`, with `procs`.
pub(super) fn snapshot(t_s: u64, used: u64, total: u64, procs: Vec<ProcSample>) -> Snapshot {
    Snapshot {
        seq: t_s,
        t_ms: 1_000_000 + t_s * 1000,
        gpus: vec![GpuSample {
            index: 0,
            mem: Some(MemInfo {
                used,
                reserved: 0,
                free: total - used,
                total,
            }),
            mem_peak: Some(used),
            ..Default::default()
        }],
        procs,
        events: Vec::new(),
    }
}

fn snap(t_s: u64, used: u64, procs: &[(u32, u64)]) -> Snapshot {
    let procs = procs
        .iter()
        .map(|&(pid, mem)| ProcSample {
            pid,
            start_time: 7,
            gpu: 0,
            mem: Some(mem),
            mem_peak: Some(mem),
            ..Default::default()
        })
        .collect();
    snapshot(t_s, used, 100 << 30, procs)
}

#[test]
fn the_gpus_trend_starts_again_when_a_process_gives_back_its_memory() {
    const GIB: u64 = 1 << 30;
    let mut a = Analyzer::new(&AnalysisConfig::default());
    // 20 GiB steady, and a leak from 40 GiB at 1 GiB/s that dies at
    // 30 s (an OOM); then only the 20 GiB.
    let phase_at = |a: &Analyzer| a.gpu(0).map(|g| g.phase);
    for t in 0..30 {
        let l = 40 * GIB + t * GIB;
        a.observe(&snap(t, 20 * GIB + l, &[(1, 20 * GIB), (2, l)]));
    }
    assert_eq!(phase_at(&a), Some(Phase::Growing));
    a.observe(&snap(30, 20 * GIB, &[(1, 20 * GIB)]));
    assert_eq!(phase_at(&a), Some(Phase::Unknown), "the growth is gone");
    for t in 31..50 {
        a.observe(&snap(t, 20 * GIB, &[(1, 20 * GIB)]));
    }
    assert_eq!(phase_at(&a), Some(Phase::Stable));
    // A sawtooth's teeth fall to where they began, not below the
    // window: its trend goes on.
    let mut a = Analyzer::new(&AnalysisConfig::default());
    for t in 0..60 {
        let used = 40 * GIB + (t % 10) * 3 * GIB;
        a.observe(&snap(t, used, &[(1, used)]));
        if t > 15 {
            assert_ne!(phase_at(&a), Some(Phase::Unknown), "{t}");
        }
    }
}

#[test]
fn a_reading_at_a_tooths_top_does_not_hide_a_leak_flag() {
    const MIB: u64 = 1 << 20;
    let mut a = Analyzer::new(&AnalysisConfig::default());
    // 300 MiB/s from 40 GiB; the reading at 6 s caught an
    // `empty_cache()` tooth's top 7 GiB above. The leak holds its flag
    // from `leak_min_duration` on, the top reading notwithstanding
    // (taken as a new high, it hid the flag from 16 s to ~30 s).
    let mem = |t: u64| 40 * 1024 * MIB + t * 300 * MIB + if t == 6 { 7 * 1024 * MIB } else { 0 };
    let mut flagged = Vec::new();
    for t in 0..40 {
        a.observe(&snap(t, mem(t), &[(1, mem(t))]));
        let p = a.processes().find(|p| p.id.key.pid == 1).unwrap();
        if p.leak.is_some() {
            flagged.push(t);
        }
    }
    let first = *flagged.first().expect("flagged");
    assert!(first <= 22, "flagged at {first} s");
    assert_eq!(flagged.len() as u64, 40 - first, "{flagged:?}");
}

#[test]
fn a_spike_that_falls_back_does_not_start_the_leak_flag_again() {
    const MIB: u64 = 1 << 20;
    // 300 MiB/s from 40 GiB of 100; from 10 s to 12 s an evaluation
    // pass holds 15 GiB more (more than a level shift). The flag comes
    // as without the spike; taken as a level, the detector started
    // again at 10 s and at 13 s.
    let first_flag = |spike: u64| {
        let mut a = Analyzer::new(&AnalysisConfig::default());
        let mem = |t: u64| {
            40 * 1024 * MIB + t * 300 * MIB + if (10..=12).contains(&t) { spike } else { 0 }
        };
        (0..40).find(|&t| {
            a.observe(&snap(t, mem(t), &[(1, mem(t))]));
            let p = a.processes().find(|p| p.id.key.pid == 1).unwrap();
            p.leak.is_some()
        })
    };
    let plain = first_flag(0).expect("flagged");
    assert_eq!(first_flag(15 * 1024 * MIB), Some(plain));
    // A spike from 25 s to 27 s, after the flag: the flag stays shown
    // through it, no second leak alert comes, and the process's rate
    // afterwards is the leak's, not the spike's fall.
    let mut a = Analyzer::new(&AnalysisConfig::default());
    let mem = |t: u64| {
        40 * 1024 * MIB
            + t * 300 * MIB
            + if (25..=27).contains(&t) {
                15 * 1024 * MIB
            } else {
                0
            }
    };
    let mut alerts = 0;
    for t in 0..35 {
        let out = a.observe(&snap(t, mem(t), &[(1, mem(t))]));
        alerts += out.iter().filter(|x| x.kind == AlertKind::Leak).count();
        let p = a.processes().find(|p| p.id.key.pid == 1).unwrap();
        if t >= plain {
            assert!(p.leak.is_some(), "{t}: flag lost");
        }
    }
    assert_eq!(alerts, 1);
    let p = a.processes().find(|p| p.id.key.pid == 1).unwrap();
    let rate = p.rate.map_or(0.0, |r| r.bps) / MIB as f64;
    assert!((250.0..350.0).contains(&rate), "{rate} MiB/s");
}

#[test]
fn a_fill_to_a_new_high_restarts_a_process_trend_and_a_sawtooth_does_not() {
    const GIB: u64 = 1 << 30;
    let mut a = Analyzer::new(&AnalysisConfig::default());
    // Weights arrive in one step (1 to 41 GiB of 100), then 200 MiB/s.
    let mem = |t: u64| match t {
        0..10 => GIB,
        _ => 41 * GIB + (t - 10) * 200 * (1 << 20),
    };
    // A second process swings between 20 and 35 GiB every 2 s
    // (empty_cache, then the cache taken again in one step).
    let saw = |t: u64| if t % 4 < 2 { 20 * GIB } else { 35 * GIB };
    let proc_of = |a: &Analyzer, pid: u32| {
        a.processes()
            .find(|p| p.id.key.pid == pid)
            .cloned()
            .unwrap()
    };
    for t in 0..60 {
        a.observe(&snap(t, mem(t) + saw(t), &[(1, mem(t)), (2, saw(t))]));
        if t == 15 {
            let p = proc_of(&a, 1);
            assert_eq!(p.phase, Phase::Unknown, "too few points since the fill");
            // The growth's rate, not the fill's (40 GiB over the window).
            let r = p.rate.map_or(0.0, |r| r.bps) / (1 << 20) as f64;
            assert!(r < 210.0, "{r} MiB/s");
        }
    }
    let p = proc_of(&a, 1);
    assert_eq!(p.phase, Phase::Growing);
    let r = p.rate.unwrap().bps / (1 << 20) as f64;
    assert!((190.0..210.0).contains(&r), "{r} MiB/s");
    assert_eq!(
        proc_of(&a, 2).phase,
        Phase::Volatile,
        "the sawtooth kept its window"
    );
}

#[test]
fn exited_processes_are_kept_then_forgotten() {
    let cfg = AnalysisConfig {
        forget_after: Duration::from_secs(5),
        ..Default::default()
    };
    let mut a = Analyzer::new(&cfg);
    a.observe(&snap(0, 1 << 30, &[(10, 1 << 30)]));
    let key = ProcessKey {
        pid: 10,
        start_time: 7,
    };
    let id = |gpu| ProcId { gpu, key };
    assert!(a.process(&id(0)).is_some_and(|p| p.alive));
    assert!(a.process(&id(1)).is_none());
    a.observe(&snap(1, 0, &[]));
    assert!(a.process(&id(0)).is_some_and(|p| !p.alive));
    a.observe(&snap(7, 0, &[]));
    assert!(a.process(&id(0)).is_none());
    assert_eq!(a.gpus().count(), 1);
}

#[test]
fn a_gpu_missing_from_snapshots_keeps_sane_counts() {
    let mut a = Analyzer::new(&AnalysisConfig::default());
    let mut with_gpu1 = snap(0, 1 << 30, &[(10, 1 << 30)]);
    with_gpu1.gpus[0].index = 1;
    with_gpu1.procs[0].gpu = 1;
    a.observe(&with_gpu1);
    for s in 1..50u64 {
        let used = (1u64 << 30) + s * (1 << 30);
        let mut x = snap(s, used, &[(10, used)]);
        x.procs[0].gpu = 1;
        a.observe(&x);
    }
    // GPU 1 left the snapshots: its counts still describe one process.
    let g1 = a.gpu(1).unwrap();
    assert!(g1.growing <= 1 && g1.leaking <= 1, "{g1:?}");
}

/// A GPU of 140 GiB that PyTorch's caching allocator holds at the top
/// (139.5 GiB: the driver sees nothing move) while its tensors' peak
/// climbs 0.25 GiB/s from 125 GiB: full at 58 s (139.5 GiB of tensors
/// and the 0.5 GiB context). With the allocator figures (`torch`) the
/// forecast holds that; without, the GPU is only at risk.
fn saturated(s: u64, torch: bool) -> Snapshot {
    let gib = (1u64 << 30) as f64;
    let peak = ((125.0 + 0.25 * s as f64) * gib) as u64;
    one_torch_process(s, (139.5 * gib) as u64, torch.then_some(peak))
}

/// Second `s` of a 140 GiB GPU whose one process holds `used` (all of
/// it in PyTorch's caching allocator but a 0.5 GiB context) and, when
/// `peak` is given, publishes its tensors' peak.
pub(super) fn one_torch_process(s: u64, used: u64, peak: Option<u64>) -> Snapshot {
    use crate::model::alloc::{AllocStats, DeviceAlloc};
    use std::sync::Arc;
    let total = 140u64 << 30;
    let t = 1_000_000 + s * 1000;
    let stats = |peak: u64| AllocStats {
        schema: 1,
        pid: 10,
        t_ms: t,
        interval_ms: 500,
        seq: s,
        cuda_initialized: true,
        devices: vec![DeviceAlloc {
            allocated: peak - (1 << 30),
            reserved: used - (512 << 20),
            allocated_peak: peak,
            ..Default::default()
        }],
        ..Default::default()
    };
    snapshot(
        s,
        used,
        total,
        vec![ProcSample {
            pid: 10,
            start_time: 7,
            gpu: 0,
            mem: Some(used),
            mem_peak: Some(used),
            torch: peak.map(|p| Arc::new(stats(p))),
            ..Default::default()
        }],
    )
}

/// The driver sees 0.5 GiB/s from 100 GiB (full at 80 s), but half of
/// each new segment stays in the allocator's cache: the tensors' peak
/// climbs 0.25 GiB/s from 95 GiB, so the job may go on well past the
/// driver's top (the allocator frees its cache and retries). The
/// driver's forecast keeps its central estimate and earliest end; its
/// latest end reaches the demand's.
#[test]
fn a_caching_allocator_moves_the_latest_end_out_to_its_tensors_demand() {
    let gib = (1u64 << 30) as f64;
    let driver = |s: u64| ((100.0 + 0.5 * s as f64) * gib) as u64;
    let tensors = |s: u64| ((95.0 + 0.25 * s as f64) * gib) as u64;
    let shown_at_30 = |torch: bool| {
        let mut a = Analyzer::new(&AnalysisConfig::default());
        for s in 0..=30u64 {
            a.observe(&one_torch_process(s, driver(s), torch.then(|| tensors(s))));
        }
        a.gpu(0).and_then(|g| g.forecast).unwrap()
    };
    let (with, without) = (shown_at_30(true), shown_at_30(false));
    // The driver's top: 50 s after second 30.
    assert!((without.eta_s - 50.0).abs() < 1.0, "{without:?}");
    assert!(without.high_s.unwrap() < 55.0, "{without:?}");
    assert_eq!(with.eta_s, without.eta_s);
    assert_eq!(with.low_s, without.low_s);
    // The tensors (and the 0.5 GiB context) reach 140 GiB 148 s after
    // second 30, at the rate's slow end later still.
    assert!(with.high_s.unwrap() >= 148.0, "{with:?}");
}

/// Held at 130 GiB of 140 (93 %: not at risk) by the caching
/// allocator while the tensors' peak climbs 0.25 GiB/s from 110 GiB:
/// the driver sees no growth, the demand reaches the top (139.5 GiB of
/// tensors and the 0.5 GiB context) at 118 s. From `cache_full_pct`
/// (90 %) on, the forecast is the demand's; above it, none.
#[test]
fn a_gpu_held_flat_by_its_cache_is_forecast_from_its_allocators_figures() {
    let gib = (1u64 << 30) as f64;
    let oom_ms = 1_000_000 + 118_000;
    let shown = |cache_full_pct: f64| {
        let mut cfg = AnalysisConfig::default();
        cfg.envelope.cache_full_pct = cache_full_pct;
        let mut a = Analyzer::new(&cfg);
        let mut shown = Vec::new();
        for s in 0..60u64 {
            let peak = ((110.0 + 0.25 * s as f64) * gib) as u64;
            a.observe(&one_torch_process(s, 130 << 30, Some(peak)));
            let g = a.gpu(0).unwrap();
            assert!(g.at_risk_pct.is_none(), "{s}: {g:?}");
            if let Some(f) = g.forecast {
                shown.push((s, f));
            }
        }
        shown
    };
    let on = shown(90.0);
    assert!(on.first().is_some_and(|(s, _)| *s <= 10), "{on:?}");
    assert!(on.len() >= 45, "{}", on.len());
    for (s, f) in &on {
        assert!(f.contains(oom_ms), "{s}: {f:?}");
    }
    assert!(shown(95.0).is_empty());
}

/// At 90 % and more, a GPU with a forecast of its own (the driver's
/// figure still growing) shows that one: the allocators' demand is the
/// forecast only where the driver's view gives none (or at risk).
#[test]
fn a_full_gpu_with_a_forecast_of_its_own_shows_the_drivers() {
    let gib = (1u64 << 30) as f64;
    // 126 GiB (90 % of 140) growing 0.25 GiB/s; the tensors 110 GiB
    // growing 0.2 GiB/s (their own forecast: two minutes away).
    let driver = |s: u64| ((126.0 + 0.25 * s as f64) * gib) as u64;
    let tensors = |s: u64| ((110.0 + 0.2 * s as f64) * gib) as u64;
    let mut a = Analyzer::new(&AnalysisConfig::default());
    for s in 0..=20u64 {
        a.observe(&one_torch_process(s, driver(s), Some(tensors(s))));
    }
    let g = a.gpu(0).unwrap();
    assert!(g.at_risk_pct.is_none(), "{g:?}");
    let f = g.forecast.expect("the driver's forecast");
    // The driver reaches 140 GiB 36 s after second 20.
    assert!((f.eta_s - 36.0).abs() < 2.0, "{f:?}");
}

/// A cache held flat by the caching allocator below the at-risk level
/// while the tensors inside grow 0.3 GiB/s (`eighteenth/01`, a leak
/// beneath a KV cache on an H100: 88 % for 44 s): from `cache_full_pct`
/// the tensors' leak flag is taken; below it, the driver's flat figure
/// decides and there is none.
#[test]
fn tensors_growing_in_a_cache_held_flat_are_flagged_from_cache_full_pct() {
    let gib = (1u64 << 30) as f64;
    let flagged = |held_gib: u64| {
        let mut a = Analyzer::new(&AnalysisConfig::default());
        (0..60u64).find_map(|s| {
            let tensors = ((80.0 + 0.3 * s as f64) * gib) as u64;
            a.observe(&one_torch_process(s, held_gib << 30, Some(tensors)));
            assert!(a.gpu(0).unwrap().at_risk_pct.is_none());
            let p = a.processes().next().unwrap();
            p.leak.map(|f| (s, f.seen_in))
        })
    };
    // 123 GiB of 140: 87.9 %.
    let (s, seen) = flagged(123).expect("flagged");
    assert_eq!(seen, LeakSeen::Tensors);
    assert!(s <= 25, "{s}");
    // 112 GiB: 80 %.
    assert_eq!(flagged(112), None);
}

#[test]
fn a_saturated_gpu_is_forecast_from_its_allocators_figures() {
    let oom_ms = 1_000_000 + 58_000;
    for torch in [true, false] {
        let mut a = Analyzer::new(&AnalysisConfig::default());
        let mut shown = Vec::new();
        for s in 0..50u64 {
            a.observe(&saturated(s, torch));
            let g = a.gpu(0).unwrap();
            assert!(s < 1 || g.at_risk_pct.is_some(), "{s}: {g:?}");
            if let Some(f) = g.forecast {
                shown.push((s, f));
            }
        }
        if !torch {
            assert!(shown.is_empty(), "{shown:?}");
            continue;
        }
        // Shown within seconds, from then on, each holding the moment.
        assert!(shown.first().is_some_and(|(s, _)| *s <= 10), "{shown:?}");
        assert!(shown.len() >= 40, "{}", shown.len());
        for (s, f) in &shown {
            assert!(f.contains(oom_ms), "{s}: {f:?}");
            assert_eq!(f.low_s, 0.0, "at risk: it may fail at once");
        }
    }
    // Turned off, the figures are not used.
    let cfg = AnalysisConfig {
        allocator_demand: false,
        ..Default::default()
    };
    let mut a = Analyzer::new(&cfg);
    for s in 0..50u64 {
        a.observe(&saturated(s, true));
        assert!(a.gpu(0).unwrap().forecast.is_none());
    }
}

#[test]
fn a_gpu_without_a_memory_reading_still_raises_its_alerts() {
    // Lost: no memory reading is used, and the alert still comes.
    let mut a = Analyzer::new(&AnalysisConfig::default());
    a.observe(&snap(0, 1 << 30, &[(10, 1 << 30)]));
    let mut lost = snap(1, 1 << 30, &[]);
    lost.gpus[0].state = GpuState::Lost;
    let alerts = a.observe(&lost);
    assert_eq!(
        alerts.iter().map(|x| x.kind).collect::<Vec<_>>(),
        [AlertKind::GpuLost]
    );
    assert!(a.gpu(0).is_some_and(|g| g.forecast.is_none()));
}

#[test]
fn a_growing_gpu_gets_a_forecast_and_one_alert() {
    let mut a = Analyzer::new(&AnalysisConfig::default());
    let mut fired = Vec::new();
    for s in 0..60u64 {
        let used = (10u64 << 30) + s * (1 << 30);
        for al in a.observe(&snap(s, used, &[(10, used)])) {
            fired.push((s, al.kind));
        }
    }
    let g = a.gpu(0).unwrap();
    assert_eq!(g.phase, Phase::Growing);
    assert_eq!(g.leaking, 1);
    assert_eq!(g.growing, 1);
    let f = g.forecast.unwrap();
    // 31 GiB free at 1 GiB/s.
    assert!((f.eta_s - 31.0).abs() < 1e-6, "{f:?}");
    let kinds: Vec<_> = fired.iter().map(|x| x.1).collect();
    // The forecast once the growth is 3 s old and held for 3 s; the
    // leak flag after 20 s of it.
    assert_eq!(
        kinds,
        [AlertKind::ForecastFull, AlertKind::Leak],
        "{fired:?}"
    );
    assert!(fired[0].0 <= 10 && fired[1].0 <= 21, "{fired:?}");
    let p = a
        .process(&ProcId {
            gpu: 0,
            key: ProcessKey {
                pid: 10,
                start_time: 7,
            },
        })
        .unwrap();
    assert!(p.leak.is_some());
    assert!(p.forecast.is_some());
    assert_eq!(
        p.peak.map(|k| k.bytes),
        Some((10u64 << 30) + 59 * (1 << 30))
    );
}

#[test]
fn a_process_gone_during_a_spike_ends_the_gpus_regime() {
    const GIB: u64 = 1 << 30;
    // 100 GiB: a steady 60 GiB process, and a small one leaking 50 MiB/s
    // from 2 GiB that spikes 15 GiB at 30 s and is gone at 31 s (its OOM).
    // What is left is within half a shift of the level before the spike,
    // but it is memory given back, not the spike's end: the GPU's regime
    // starts again rather than going on with the leak's growth.
    let mut a = Analyzer::new(&AnalysisConfig::default());
    for t in 0..30 {
        let b = 2 * GIB + t * 50 * (1 << 20);
        a.observe(&snap(t, 60 * GIB + b, &[(1, 60 * GIB), (2, b)]));
    }
    let b = 2 * GIB + 30 * 50 * (1 << 20) + 15 * GIB;
    a.observe(&snap(30, 60 * GIB + b, &[(1, 60 * GIB), (2, b)]));
    a.observe(&snap(31, 60 * GIB, &[(1, 60 * GIB)]));
    let (_, why) = a.envelope_state(0).unwrap();
    assert_eq!(why, "young regime");
}

/// Second `s` of a 140 GiB GPU whose one process's tensors hold
/// `tensors` GiB (published), in 2 GiB segments the driver sees, with a
/// 0.5 GiB context.
fn torch_tensors(s: u64, tensors: f64) -> Snapshot {
    let gib = (1u64 << 30) as f64;
    let segments = (tensors / 2.0).ceil() * 2.0 + 0.5;
    let allocated = (tensors * gib) as u64;
    // `one_torch_process` publishes its peak less 1 GiB as allocated.
    one_torch_process(s, (segments * gib) as u64, Some(allocated + (1 << 30)))
}

/// Weights (8 GiB) in 5 s, then a cache of 40 GiB filling with a time
/// constant of 30 s, and with `leak` GiB/s kept beneath it: what the
/// analyzer says each second, (leak flag, GPU forecast, levels at).
fn cache_fill(leak: f64, secs: u64) -> Vec<(bool, bool, bool)> {
    let mut a = Analyzer::new(&AnalysisConfig::default());
    (0..secs)
        .map(|s| {
            let t = s.saturating_sub(5) as f64;
            let cache = 40.0 * (1.0 - (-t / 30.0).exp());
            let tensors = 1.6 * s.min(5) as f64 + cache + leak * t;
            a.observe(&torch_tensors(s, tensors));
            let p = a.processes().find(|p| p.id.key.pid == 10).unwrap();
            let g = a.gpu(0).unwrap();
            (
                p.leak.is_some(),
                g.forecast.is_some(),
                g.levels_at.is_some(),
            )
        })
        .collect()
}

#[test]
fn a_cache_filling_towards_a_plateau_is_no_leak_and_no_forecast() {
    let said = cache_fill(0.0, 150);
    assert!(said.iter().all(|(leak, ..)| !leak), "{said:?}");
    // From the fill's first 10 s (and weights' 5 s) on, no "full in"
    // (the driver's view alone forecast it to 39 s).
    assert!(said[15..].iter().all(|(_, fc, _)| !fc), "{said:?}");
    assert!(said[40..100].iter().all(|(.., lv)| *lv), "{said:?}");
}

#[test]
fn a_leak_beneath_a_cache_that_levels_off_is_not_hidden() {
    // 0.5 GiB/s beneath: 140 GiB at ~190 s. After the fill is seen (from
    // 22 s) the forecast comes back by 71 s, to stay; judged by the whole
    // fill alone it came at 122 s. (By 70 s before the allocator's idle
    // cache, up to 2.5 GiB here, was taken as room for the fill's rest.)
    // The leak flag waits up to 15 s more while the tensors are below the
    // last steady level found (session 24): back by 84 s, and by 99 s
    // since session 36, which counts growth faster than 1.1 % of the GPU a
    // second as loading, not 1.5 % (hidden to 83 s at 1.5 %, to 98 s at
    // 1.1 %).
    let said = cache_fill(0.5, 180);
    let hidden = |of: fn(&(bool, bool, bool)) -> bool| said.iter().rposition(|x| !of(x)).unwrap();
    let forecast = hidden(|&(_, fc, _)| fc);
    assert!(forecast <= 70, "hidden to {forecast} s: {said:?}");
    let flag = hidden(|&(leak, ..)| leak);
    assert!(flag <= 98, "hidden to {flag} s: {said:?}");
    assert!(
        said[25..40]
            .iter()
            .all(|&(leak, fc, lv)| !leak && !fc && lv),
        "{said:?}"
    );
}
