use super::*;
use crate::model::MemInfo;
use crate::model::ProcSample;
use crate::model::ProcessKey;

fn snap(t_ms: Millis, used: u64, procs: &[(u32, u64)]) -> Snapshot {
    Snapshot {
        seq: 0,
        t_ms,
        gpus: vec![GpuSample {
            index: 0,
            mem: Some(MemInfo {
                used,
                reserved: 0,
                free: 1000 - used,
                total: 1000,
            }),
            mem_peak: Some(used),
            ..Default::default()
        }],
        procs: procs
            .iter()
            .map(|&(pid, mem)| ProcSample {
                pid,
                start_time: 1,
                gpu: 0,
                mem: Some(mem),
                mem_peak: Some(mem),
                command: Some(format!("cmd {pid}").into()),
                ..Default::default()
            })
            .collect(),
        events: Vec::new(),
    }
}

fn id(pid: u32) -> ProcId {
    ProcId {
        gpu: 0,
        key: ProcessKey { pid, start_time: 1 },
    }
}

#[test]
fn capacity_bounds_every_series() {
    let mut h = History::new(5, 1000, 60_000);
    for i in 0..12u64 {
        h.push(&snap(i * 1000, i * 10, &[(7, i)]));
    }
    assert_eq!(h.len(), 5);
    assert_eq!(h.first_slot(), 7);
    assert_eq!(h.last_slot(), Some(11));
    assert_eq!(h.gpu_series(0).count(), 5);
    let s = h.process(&id(7)).unwrap();
    assert_eq!(s.iter_from(0).count(), 5);
    assert_eq!(s.at(7).unwrap().mem, Some(7));
    assert!(s.at(6).is_none(), "evicted");
}

#[test]
fn missing_samples_become_gaps() {
    let mut h = History::new(100, 1000, 60_000);
    h.push(&snap(0, 10, &[]));
    h.push(&snap(1000, 10, &[]));
    // Three intervals missed.
    h.push(&snap(5000, 10, &[]));
    assert_eq!(h.len(), 6);
    assert!(!h.is_gap(1));
    assert!(h.is_gap(2) && h.is_gap(3) && h.is_gap(4));
    assert!(!h.is_gap(5));
    assert_eq!(h.gpu_at(0, 3), None);
    assert_eq!(h.time_at(3), Some(3000));
    assert!(h.snapshot_at(3).is_none());
    // Jitter under 2.5 intervals is not a gap.
    h.push(&snap(7400, 10, &[]));
    assert_eq!(h.len(), 7);
}

#[test]
fn processes_get_history_from_first_sight_and_exited_ones_linger() {
    let mut h = History::new(100, 1000, 3000);
    h.push(&snap(0, 10, &[(1, 5)]));
    h.push(&snap(1000, 10, &[(1, 6), (2, 9)]));
    h.push(&snap(2000, 10, &[(2, 9)]));
    let s2 = h.process(&id(2)).unwrap();
    assert_eq!(s2.first_slot(), 1);
    assert_eq!(s2.at(0), None);
    let at2 = h.processes_at(2);
    let exited: Vec<_> = at2
        .iter()
        .filter(|(_, e)| *e)
        .map(|(s, _)| s.id.key.pid)
        .collect();
    assert_eq!(exited, vec![1]);
    // Past exited_keep it is gone from the table ...
    for i in 3..8 {
        h.push(&snap(i * 1000, 10, &[(2, 9)]));
    }
    assert!(h.processes_at(7).iter().all(|(s, _)| s.id.key.pid == 2));
    // ... but scrubbing back still finds it, until it leaves the window.
    assert!(h.processes_at(1).iter().any(|(s, _)| s.id.key.pid == 1));
    let mut small = History::new(3, 1000, 1000);
    small.push(&snap(0, 10, &[(1, 5)]));
    for i in 1..5 {
        small.push(&snap(i * 1000, 10, &[]));
    }
    assert!(
        small.process(&id(1)).is_none(),
        "evicted with its last point"
    );
}

#[test]
fn a_process_that_comes_back_has_a_gap_in_its_series() {
    let mut h = History::new(100, 1000, 60_000);
    h.push(&snap(0, 10, &[(1, 5)]));
    h.push(&snap(1000, 10, &[]));
    h.push(&snap(2000, 10, &[(1, 7)]));
    let s = h.process(&id(1)).unwrap();
    let mems: Vec<_> = s.iter_from(0).map(|(_, p)| p.and_then(|p| p.mem)).collect();
    assert_eq!(mems, vec![Some(5), None, Some(7)]);
}

#[test]
fn peaks_as_of_a_slot_ignore_what_came_after() {
    let mut h = History::new(100, 1000, 60_000);
    for (i, used) in [100u64, 900, 300, 950, 200].into_iter().enumerate() {
        h.push(&snap(i as u64 * 1000, used, &[(1, used)]));
    }
    let p = h.process(&id(1)).unwrap().clone();
    assert_eq!(
        h.gpu_peak_at(0, 4),
        Some((950, 3000)),
        "the newest: since start"
    );
    assert_eq!(
        h.gpu_peak_at(0, 2),
        Some((900, 1000)),
        "not the 950 read later"
    );
    assert_eq!(h.gpu_peak_at(0, 0), Some((100, 0)));
    assert_eq!(h.proc_peak_at(&p, 2), Some((900, 1000)));
    assert_eq!(h.proc_peak_at(&p, 4), Some((950, 3000)));
}

#[test]
fn peaks_remember_the_highest_and_when() {
    let mut h = History::new(100, 1000, 60_000);
    let mut a = snap(0, 10, &[(1, 5)]);
    a.gpus[0].mem_peak = Some(900);
    a.procs[0].mem_peak = Some(800);
    h.push(&a);
    h.push(&snap(1000, 20, &[(1, 6)]));
    assert_eq!(h.gpu_peak(0), Some((900, 0)));
    assert_eq!(h.process(&id(1)).unwrap().peak, Some((800, 0)));
}

#[test]
fn buckets_are_clock_aligned_max_or_mean() {
    let mut h = History::new(100, 1000, 60_000);
    for i in 0..12u64 {
        h.push(&snap(i * 1000, i * 10, &[]));
    }
    let used = |g: &GpuSample| g.mem.map(|m| m.used);
    // 5 s buckets: [0..4] [5..9] [10..11 filling].
    let b = h.gpu_buckets(0, 11, 4, 5000, Agg::Max, used);
    assert_eq!(b, vec![None, Some(40), Some(90), Some(110)]);
    let b = h.gpu_buckets(0, 11, 3, 5000, Agg::Mean, used);
    assert_eq!(b, vec![Some(20), Some(70), Some(105)]);
    // Up to an earlier slot (paused).
    let b = h.gpu_buckets(0, 4, 2, 5000, Agg::Max, used);
    assert_eq!(b, vec![None, Some(40)]);
    assert!(
        h.gpu_buckets(0, 99, 3, 5000, Agg::Max, used)
            .iter()
            .all(Option::is_none)
    );
    assert!(h.gpu_buckets(0, 11, 0, 5000, Agg::Max, used).is_empty());
}

#[test]
fn snapshots_are_rebuilt_from_history() {
    let mut h = History::new(100, 1000, 60_000);
    let a = snap(0, 10, &[(1, 5), (2, 6)]);
    h.push(&a);
    h.push(&snap(1000, 20, &[(2, 7)]));
    let back = h.snapshot_at(0).unwrap();
    assert_eq!(back.gpus, a.gpus);
    assert_eq!(back.procs.len(), 2);
    assert_eq!(back.procs[1].command.as_deref(), Some("cmd 2"));
    assert_eq!(h.slot_at_time(1500), Some(1));
    assert_eq!(h.slot_at_time(0), Some(0));
}
