//! Real recordings from two H200s (docs/results/h200-runs.md) keep
//! the analysis honest in CI: gpu_workload.py's `leak` roles are flagged
//! within 20 s of their first allocation, the forecasts made 60, 30 and 10 s
//! before the real CUDA OOM contain it, and no steady, sawtooth or idle
//! process is flagged.

use std::path::Path;

use vramwatch::analysis::AnalysisConfig;
use vramwatch::analysis::scorecard::score;
use vramwatch::model::units::MIB;
use vramwatch::model::{EventKind, Snapshot};
use vramwatch::record::Recording;

const LEAK_OOM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/h200/leak-oom.jsonl.zst"
);
const TEN_MIN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/assets/h200-2gpu-10min.jsonl.zst"
);

fn snapshots(path: &str) -> Vec<Snapshot> {
    let rec = Recording::open(Path::new(path)).expect("the recording opens");
    assert!(rec.warnings().is_empty(), "{:?}", rec.warnings());
    rec.iter()
        .map(|s| s.expect("every snapshot reads"))
        .collect()
}

/// When a process first holds more than a bare CUDA context: its growth
/// starts there.
fn growth_start(snaps: &[Snapshot], pid: u32) -> u64 {
    snaps
        .iter()
        .find(|s| {
            s.procs
                .iter()
                .any(|p| p.pid == pid && p.mem.unwrap_or(0) >= 64 * MIB)
        })
        .map(|s| s.t_ms)
        .expect("the process grows")
}

/// PIDs whose memory only ever grew (the `leak` roles).
fn growers(snaps: &[Snapshot]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for s in snaps {
        for p in &s.procs {
            seen.insert((p.gpu, p.pid));
        }
    }
    for (gpu, pid) in seen {
        let mems: Vec<u64> = snaps
            .iter()
            .filter_map(|s| s.procs.iter().find(|p| p.pid == pid && p.gpu == gpu)?.mem)
            .collect();
        let grew = mems
            .last()
            .zip(mems.first())
            .is_some_and(|(l, f)| *l > f + 4096 * MIB);
        let monotonic = mems.windows(2).all(|w| w[1] >= w[0]);
        // A leak steps up again and again; `steady` jumps once and stays.
        let steps = mems.windows(2).filter(|w| w[1] > w[0]).count();
        if grew && monotonic && steps >= 20 {
            out.push((gpu, pid));
        }
    }
    out
}

#[test]
fn a_real_leak_is_flagged_in_time_and_its_oom_forecast_holds() {
    let snaps = snapshots(LEAK_OOM);
    let card = score(&AnalysisConfig::default(), &snaps);
    // The 512 MiB/s leak on GPU 1 ran into CUDA OOM.
    let oom = card
        .ooms
        .iter()
        .find(|o| {
            card.proc(&o.key, o.gpu)
                .is_some_and(|p| o.oom_ms - p.first_seen_ms > 60_000)
        })
        .expect("the long leak's OOM is in the recording");
    for lead in [60, 30, 10] {
        assert_eq!(
            oom.hit(lead),
            Some(true),
            "forecast {lead} s before the OOM: {:?}",
            oom.forecasts
        );
    }
    // The recorder saw it too.
    assert!(
        snaps
            .iter()
            .flat_map(|s| &s.events)
            .any(|e| e.kind == EventKind::SuspectedOom && e.pid == Some(oom.key.pid))
    );
}

#[test]
fn every_leak_role_is_flagged_within_20_s_and_nothing_else_is() {
    for path in [LEAK_OOM, TEN_MIN] {
        let snaps = snapshots(path);
        let card = score(&AnalysisConfig::default(), &snaps);
        let leaks = growers(&snaps);
        assert!(leaks.len() >= 2, "{path}: leak roles found: {leaks:?}");
        for (gpu, pid) in &leaks {
            let p = card
                .procs
                .iter()
                .find(|p| p.key.pid == *pid && p.gpu == *gpu)
                .expect("scored");
            let flagged = p
                .leak_flagged_ms
                .unwrap_or_else(|| panic!("{path}: PID {pid} not flagged"));
            let after = flagged.saturating_sub(growth_start(&snaps, *pid));
            assert!(
                after <= 20_000,
                "{path}: PID {pid} flagged {after} ms after its growth began"
            );
        }
        for p in &card.procs {
            if !leaks.contains(&(p.gpu, p.key.pid)) {
                assert!(
                    p.leak_flagged_ms.is_none(),
                    "{path}: PID {} ({}) flagged",
                    p.key.pid,
                    p.label
                );
            }
        }
    }
}

#[test]
fn the_ten_minute_recording_has_both_gpus_on_time() {
    let snaps = snapshots(TEN_MIN);
    assert_eq!(snaps.len(), 600);
    for g in 0..2u32 {
        let lags: Vec<u32> = snaps
            .iter()
            .filter_map(|s| s.gpus.iter().find(|x| x.index == g).map(|x| x.lag_ms))
            .collect();
        assert_eq!(lags.len(), 600, "GPU {g} in every snapshot");
        // No GPU waited on another's slow call (PCIe reads take 20 ms a side).
        assert!(
            lags.iter().all(|&l| l < 500),
            "GPU {g} lag up to {:?} ms",
            lags.iter().max()
        );
    }
    // One snapshot a second, none missing.
    for w in snaps.windows(2) {
        let gap = w[1].t_ms - w[0].t_ms;
        assert!((900..=1100).contains(&gap), "gap of {gap} ms");
    }
}
