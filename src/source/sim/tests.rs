//! The simulator's scenarios move as documented, and deterministically.

use super::*;
use crate::source::{SlowDue, Source};

const T0: Millis = 1_764_000_000_000;

fn world(name: &str) -> SimWorld {
    SimWorld::new(name, 7, T0).expect("scenario exists")
}

fn at(s: f64) -> Millis {
    T0 + (s * 1000.0) as u64
}

fn used(w: &SimWorld, gpu: u32, s: f64) -> u64 {
    w.fast(gpu, at(s)).mem.map(|m| m.used).unwrap_or(0)
}

fn pid_mem(w: &SimWorld, gpu: u32, s: f64, pid: u32) -> Option<u64> {
    w.fast(gpu, at(s))
        .procs
        .iter()
        .find(|p| p.pid == pid)
        .and_then(|p| p.mem)
}

#[test]
fn same_seed_same_numbers_other_seed_other_numbers() {
    let a = SimWorld::new("crowded", 1, T0).unwrap();
    let b = SimWorld::new("crowded", 1, T0).unwrap();
    let c = SimWorld::new("crowded", 2, T0).unwrap();
    for s in [0.0, 1.5, 33.3, 600.0] {
        assert_eq!(a.snapshot(0, at(s), "me"), b.snapshot(0, at(s), "me"));
    }
    assert_ne!(a.snapshot(0, at(60.0), "me"), c.snapshot(0, at(60.0), "me"));
}

#[test]
fn the_probe_reads_pcie_and_energy_only_when_due_as_nvml_does() {
    let src = SimSource::new(world("demo"), "me".into());
    let mut p = src.probe(0);
    let all = p.slow(at(10.0), SlowDue::ALL).unwrap();
    assert!(all.pcie_read && all.energy_read);
    assert!(all.pcie_rx_kbs.is_some() && all.energy_mj.is_some());
    let none = p.slow(at(15.0), SlowDue::default()).unwrap();
    assert!(!none.pcie_read && !none.energy_read);
    assert_eq!((none.pcie_rx_kbs, none.energy_mj), (None, None));
    assert_eq!(none.ecc_volatile, Some(0), "ECC every round");
    assert_eq!(
        (
            none.ecc_sbe_volatile,
            none.ecc_dbe_volatile,
            none.pcie_replays
        ),
        (Some(0), Some(0), Some(0)),
        "counters every round"
    );
    assert_eq!(
        (
            none.remapped_rows_cor,
            none.remapped_rows_unc,
            none.row_remap_failure
        ),
        (Some(0), Some(0), Some(false))
    );
    let mem_temp = none.mem_temp_c.unwrap();
    assert!((30..=95).contains(&mem_temp), "{mem_temp} °C");
    let energy = SlowDue {
        pcie: false,
        energy: true,
    };
    let later = p.slow(at(20.0), energy).unwrap();
    assert_eq!(later.pcie_rx_kbs, None);
    // The counter kept counting while it was not read.
    assert!(later.energy_mj > all.energy_mj, "{later:?} {all:?}");
}

#[test]
fn unknown_scenario_names_the_valid_ones() {
    let e = SimWorld::new("nope", 1, T0).unwrap_err().to_string();
    assert!(
        e.contains("`nope`") && e.contains("training") && e.contains("crowded"),
        "{e}"
    );
}

#[test]
fn crowded_is_eight_gpus_and_three_hundred_processes() {
    let w = world("crowded");
    let snap = w.snapshot(0, at(60.0), "me");
    assert_eq!(snap.gpus.len(), 8);
    assert_eq!(snap.procs.len(), 300);
    for g in &snap.gpus {
        let m = g.mem.unwrap();
        assert!(m.used + m.reserved <= m.total, "gpu {} over full", g.index);
    }
}

#[test]
fn training_is_a_sawtooth_with_an_optimizer_jump() {
    let w = world("training");
    let before = pid_mem(&w, 0, 12.0, 48_211).unwrap();
    let after = pid_mem(&w, 0, 16.0, 48_211).unwrap();
    assert!(
        after > before + 15 * GIB,
        "optimizer jump: {before} -> {after}"
    );
    // Within one 2.4 s step memory rises then falls back.
    let samples: Vec<u64> = (0..24)
        .map(|i| pid_mem(&w, 0, 24.0 + i as f64 * 0.1, 48_211).unwrap())
        .collect();
    let max = *samples.iter().max().unwrap();
    let min = *samples.iter().min().unwrap();
    assert!(max - min > 20 * GIB, "sawtooth amplitude {}", max - min);
}

#[test]
fn leak_grows_until_oom_then_exits_and_restarts_with_new_pid() {
    let w = world("leak");
    let m10 = pid_mem(&w, 0, 10.0, 52_090).unwrap();
    let m20 = pid_mem(&w, 0, 20.0, 52_090).unwrap();
    let rate = (m20 - m10) as f64 / 10.0;
    assert!((rate - GIB as f64).abs() < 0.05 * GIB as f64, "rate {rate}");
    // Find the exit; the GPU is nearly full just before it.
    let mut t = 20.0;
    while pid_mem(&w, 0, t, 52_090).is_some() {
        t += 0.1;
        assert!(t < 400.0, "leak never ended");
    }
    let last = t - 0.1;
    let m = w.fast(0, at(last)).mem.unwrap();
    assert!(m.free < 2 * GIB, "free before OOM {}", m.free);
    // Restarted later with another PID.
    let later = w.fast(0, at(t + 20.0));
    assert!(later.procs.iter().any(|p| p.pid == 52_090 + 97));
}

#[test]
fn inference_reaches_a_plateau() {
    let w = world("inference");
    let a = used(&w, 0, 120.0);
    let b = used(&w, 0, 180.0);
    assert!(a > 100 * GIB);
    assert!(b.abs_diff(a) < 64 * MIB, "plateau moved {a} -> {b}");
}

#[test]
fn idle_does_not_move() {
    let w = world("idle");
    assert_eq!(used(&w, 0, 10.0), used(&w, 0, 500.0));
    assert_eq!(w.normal(0, at(100.0), true).util_gpu, Some(0));
}

#[test]
fn demo_spikes_are_short() {
    let w = world("demo");
    // Spike at 17 s after a 2 s start: 19.0 ..= 19.35 s.
    let base = pid_mem(&w, 3, 18.5, 39_004).unwrap();
    let spike = pid_mem(&w, 3, 19.1, 39_004).unwrap();
    let after = pid_mem(&w, 3, 19.6, 39_004).unwrap();
    assert!(spike > base + 25 * GIB);
    assert_eq!(base, after);
}

#[test]
fn demo_has_other_users_containers_graphics_and_unaccounted_memory() {
    let w = world("demo");
    let snap = w.snapshot(0, at(30.0), "me");
    let users: std::collections::BTreeSet<_> =
        snap.procs.iter().filter_map(|p| p.user.clone()).collect();
    assert!(users.contains("me") && users.contains("alice"));
    assert!(snap.procs.iter().any(|p| p.container.is_some()));
    assert!(snap.procs.iter().any(|p| p.kind == ProcKind::Graphics));
    let g2 = &snap.gpus[2];
    assert!(g2.unaccounted(&snap.procs).unwrap() >= 2 * GIB);
}

/// A simulated PyTorch process's allocator peaks are high-water marks:
/// never below its figures now, never lower than a moment before.
#[test]
fn allocator_figures_hold_together_and_peaks_never_fall() {
    let w = world("demo");
    let mut last: std::collections::HashMap<u32, (u64, u64)> = Default::default();
    let mut checked = 0;
    for tenth in 0..2_000u64 {
        let t = at(tenth as f64 / 10.0);
        for g in 0..4 {
            let mut procs: Vec<ProcSample> = w
                .fast(g, t)
                .procs
                .iter()
                .map(|p| ProcSample {
                    pid: p.pid,
                    gpu: g,
                    mem: p.mem,
                    ..Default::default()
                })
                .collect();
            w.enrich(t, "me", &mut procs);
            for p in &procs {
                let Some(d) = p.torch.as_deref().and_then(|s| s.devices.first()) else {
                    continue;
                };
                assert!(d.reserved_peak >= d.reserved, "{}: {d:?}", p.pid);
                assert!(d.allocated_peak >= d.allocated, "{}: {d:?}", p.pid);
                // The cache's free part holds the split blocks and the
                // largest free block (the process view said "cached free
                // 5.85G" beside 13.5G in split blocks).
                let free = d.reserved - d.active;
                assert!(d.inactive_split <= free, "{}: {d:?}", p.pid);
                assert!(d.largest_free.unwrap_or(0) <= free, "{}: {d:?}", p.pid);
                let before = last.insert(p.pid, (d.reserved_peak, d.allocated_peak));
                if let Some((r, a)) = before {
                    assert!(d.reserved_peak >= r, "{} at {tenth}: {r} -> {d:?}", p.pid);
                    assert!(d.allocated_peak >= a, "{} at {tenth}: {a} -> {d:?}", p.pid);
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 1_000, "{checked}");
}
