//! Events that follow from two consecutive snapshots.

use std::collections::{HashMap, HashSet};

use crate::model::{
    AFTER_OOM_MS, Event, EventKind, GpuSample, GpuState, Millis, ProcId, ProcSample, Snapshot,
};

/// A GPU within this share of full when a process exits makes that exit a
/// suspected OOM.
pub const OOM_NEAR_FULL_PCT: f64 = 95.0;
/// The out-of-memory errors a process's PyTorch allocator has counted on
/// this GPU, where it publishes its figures (`vramwatch_torch`).
fn ooms(p: &ProcSample) -> Option<u64> {
    let t = p.torch.as_ref()?;
    Some(t.devices.iter().map(|d| d.num_ooms).sum())
}

/// "1 out-of-memory error" / "2 out-of-memory errors".
fn oom_count(n: u64) -> String {
    crate::model::units::plural(n, "out-of-memory error", "out-of-memory errors")
}

/// What each live process's allocator has counted so far, kept across
/// snapshots: a round without its figures (a publish not read in time)
/// loses no count, and an exit soon after a counted error is told apart.
#[derive(Debug, Default)]
pub struct OomCounts(HashMap<ProcId, Counted>);

impl OomCounts {
    /// Whether process `id` (in the snapshot before, live or gone since)
    /// ran out of memory by its allocator's count within
    /// [`AFTER_OOM_MS`] before `t_ms`: an exit then is after that OOM.
    fn just_counted(&self, id: &ProcId, t_ms: Millis) -> bool {
        self.0
            .get(id)
            .and_then(|c| c.rose_ms)
            .is_some_and(|at| t_ms.saturating_sub(at) <= AFTER_OOM_MS)
    }
}

#[derive(Debug)]
struct Counted {
    /// The count last seen.
    n: u64,
    /// When the count last rose.
    rose_ms: Option<Millis>,
}

/// A new out-of-memory error counted by process `p`'s allocator since its
/// last publish seen: an OOM it lived through (caught: a batch skipped),
/// or the one it is about to exit with. A count already there when its
/// figures first arrive is not new.
fn counted_oom(counts: &mut OomCounts, p: &ProcSample, t_ms: Millis) -> Option<Event> {
    let now = ooms(p)?;
    let seen = counts.0.entry(p.id()).or_insert(Counted {
        n: now,
        rose_ms: None,
    });
    if now <= seen.n {
        seen.n = now;
        return None;
    }
    *seen = Counted {
        n: now,
        rose_ms: Some(t_ms),
    };
    Some(Event {
        t_ms,
        kind: EventKind::SuspectedOom,
        gpu: Some(p.gpu),
        pid: Some(p.pid),
        message: format!(
            "PID {} on GPU {} ran out of memory (its allocator counted {}): {}",
            p.pid,
            p.gpu,
            oom_count(now),
            p.label()
        ),
        after_oom: false,
    })
}

/// Events that follow from two consecutive snapshots: processes that came
/// and went (an exit on a nearly full GPU is a suspected OOM, unless it
/// follows one its allocator counted: then it exited after it), an
/// out-of-memory error a process's allocator counted ([`counted_oom`],
/// against `counts`), GPUs lost.
pub fn diff_events(prev: &Snapshot, next: &Snapshot, counts: &mut OomCounts) -> Vec<Event> {
    let before: HashSet<ProcId> = prev.procs.iter().map(ProcSample::id).collect();
    let after: HashSet<ProcId> = next.procs.iter().map(ProcSample::id).collect();
    // Those gone before `prev` are forgotten (those gone since are asked
    // about below); those in `prev` seen, if these are the first
    // snapshots.
    counts.0.retain(|id, _| before.contains(id));
    for p in &prev.procs {
        if let Some(n) = ooms(p) {
            counts
                .0
                .entry(p.id())
                .or_insert(Counted { n, rose_ms: None });
        }
    }
    let mut out = Vec::new();
    for p in &next.procs {
        out.extend(counted_oom(counts, p, next.t_ms));
        if !before.contains(&p.id()) {
            out.push(Event {
                t_ms: next.t_ms,
                kind: EventKind::ProcessStarted,
                gpu: Some(p.gpu),
                pid: Some(p.pid),
                message: format!("PID {} started on GPU {}: {}", p.pid, p.gpu, p.label()),
                after_oom: false,
            });
        }
    }
    for p in &prev.procs {
        if after.contains(&p.id()) {
            continue;
        }
        let full = prev
            .gpus
            .iter()
            .find(|g| g.index == p.gpu)
            .and_then(GpuSample::peak_pct_full)
            .unwrap_or(0.0);
        let after_oom = counts.just_counted(&p.id(), next.t_ms);
        let (kind, message) = if after_oom {
            (
                EventKind::ProcessExited,
                format!(
                    "PID {} exited on GPU {} after running out of memory: {}",
                    p.pid,
                    p.gpu,
                    p.label()
                ),
            )
        } else if full >= OOM_NEAR_FULL_PCT {
            (
                EventKind::SuspectedOom,
                format!(
                    "PID {} exited on GPU {} at {:.0}% full (suspected OOM): {}",
                    p.pid,
                    p.gpu,
                    full,
                    p.label()
                ),
            )
        } else {
            (
                EventKind::ProcessExited,
                format!("PID {} exited on GPU {}: {}", p.pid, p.gpu, p.label()),
            )
        };
        out.push(Event {
            t_ms: next.t_ms,
            kind,
            gpu: Some(p.gpu),
            pid: Some(p.pid),
            message,
            after_oom,
        });
    }
    for g in &next.gpus {
        let was_lost = prev
            .gpus
            .iter()
            .any(|o| o.index == g.index && o.state == GpuState::Lost);
        if g.state == GpuState::Lost && !was_lost {
            out.push(Event {
                t_ms: next.t_ms,
                kind: EventKind::GpuLost,
                gpu: Some(g.index),
                pid: None,
                message: format!("GPU {} is lost", g.index),
                after_oom: false,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MemInfo;
    use crate::model::units::GIB;

    /// `procs` at `t_ms` on GPU 0 of 100 GiB, `used_gib` of it used (and
    /// its peak there).
    fn on_gpu_used(t_ms: Millis, used_gib: u64, procs: Vec<ProcSample>) -> Snapshot {
        Snapshot {
            t_ms,
            gpus: vec![GpuSample {
                index: 0,
                mem: Some(MemInfo {
                    used: used_gib * GIB,
                    reserved: GIB,
                    free: (100 - used_gib) * GIB,
                    total: 100 * GIB,
                }),
                mem_peak: Some(used_gib * GIB),
                ..Default::default()
            }],
            procs,
            ..Default::default()
        }
    }

    /// PID 9, whose allocator has counted `ooms` errors (no figures: `None`).
    fn counted(ooms: Option<u64>) -> ProcSample {
        use crate::model::alloc::{AllocStats, DeviceAlloc};
        use std::sync::Arc;
        ProcSample {
            pid: 9,
            start_time: 7,
            torch: ooms.map(|n| {
                Arc::new(AllocStats {
                    devices: vec![DeviceAlloc {
                        num_ooms: n,
                        ..Default::default()
                    }],
                    ..Default::default()
                })
            }),
            ..Default::default()
        }
    }

    #[test]
    fn exits_near_full_are_suspected_ooms() {
        let snap = |procs: Vec<ProcSample>, used: u64, peak: u64| Snapshot {
            t_ms: 5,
            gpus: vec![GpuSample {
                index: 0,
                mem: Some(MemInfo {
                    used,
                    reserved: GIB,
                    free: 0,
                    total: 100 * GIB,
                }),
                mem_peak: Some(peak),
                ..Default::default()
            }],
            procs,
            ..Default::default()
        };
        let p = |pid| ProcSample {
            pid,
            start_time: 7,
            ..Default::default()
        };
        let a = snap(vec![p(1), p(2)], 80 * GIB, 98 * GIB);
        let b = snap(vec![p(2), p(3)], 10 * GIB, 10 * GIB);
        let ev = diff_events(&a, &b, &mut OomCounts::default());
        let kinds: Vec<_> = ev.iter().map(|e| (e.kind, e.pid)).collect();
        assert_eq!(
            kinds,
            vec![
                (EventKind::ProcessStarted, Some(3)),
                (EventKind::SuspectedOom, Some(1))
            ]
        );
        // Far from full: a plain exit.
        let a = snap(vec![p(1)], 50 * GIB, 50 * GIB);
        let ev = diff_events(&a, &snap(vec![], 0, 0), &mut OomCounts::default());
        assert_eq!(ev[0].kind, EventKind::ProcessExited);
        // A recycled PID is a new process.
        let mut q = p(2);
        q.start_time = 8;
        let ev = diff_events(
            &snap(vec![p(2)], 0, 0),
            &snap(vec![q], 0, 0),
            &mut OomCounts::default(),
        );
        assert_eq!(ev.len(), 2);
    }

    #[test]
    fn a_new_oom_counted_by_the_allocator_is_an_event() {
        let snap = |procs: Vec<ProcSample>| on_gpu_used(5, 10, procs);
        let p = counted;
        let kinds = |a: &Snapshot, b: &Snapshot| -> Vec<(EventKind, String)> {
            diff_events(a, b, &mut OomCounts::default())
                .into_iter()
                .map(|e| (e.kind, e.message))
                .collect()
        };
        // Counted while it runs (the GPU at 10 %): a suspected OOM.
        let ev = kinds(&snap(vec![p(Some(0))]), &snap(vec![p(Some(1))]));
        assert_eq!(ev.len(), 1, "{ev:?}");
        assert_eq!(ev[0].0, EventKind::SuspectedOom);
        assert!(ev[0].1.contains("ran out of memory"), "{}", ev[0].1);
        assert!(ev[0].1.contains("1 out-of-memory error"), "{}", ev[0].1);
        // Not new: no event; nor a count first seen (no figures before).
        assert!(kinds(&snap(vec![p(Some(1))]), &snap(vec![p(Some(1))])).is_empty());
        assert!(kinds(&snap(vec![p(None)]), &snap(vec![p(Some(2))])).is_empty());
        // Gone with a count from before, far from full: a plain exit (an
        // OOM caught long ago says nothing about why it left).
        let ev = kinds(&snap(vec![p(Some(2))]), &snap(vec![]));
        assert_eq!(ev.len(), 1, "{ev:?}");
        assert_eq!(ev[0].0, EventKind::ProcessExited);
        // Gone with none counted, far from full: a plain exit.
        let ev = kinds(&snap(vec![p(Some(0))]), &snap(vec![]));
        assert_eq!(ev[0].0, EventKind::ProcessExited);
    }

    #[test]
    fn a_count_is_kept_over_a_round_without_figures() {
        let snap = |t_ms: Millis, procs: Vec<ProcSample>| Snapshot {
            t_ms,
            procs,
            ..Default::default()
        };
        let p = counted;
        // 0, then a round without figures, then 1: counted at 3 s (two
        // snapshots apart, it was lost); then no more.
        let snaps: Vec<_> = [Some(0), None, Some(1), Some(1), None, Some(1)]
            .into_iter()
            .enumerate()
            .map(|(i, n)| snap(1_000 * (i as Millis + 1), vec![p(n)]))
            .collect();
        let mut counts = OomCounts::default();
        let ev: Vec<_> = snaps
            .windows(2)
            .flat_map(|w| diff_events(&w[0], &w[1], &mut counts))
            .map(|e| (e.t_ms, e.kind))
            .collect();
        assert_eq!(ev, [(3_000, EventKind::SuspectedOom)]);
    }

    #[test]
    fn the_exit_after_a_counted_oom_is_no_second_one() {
        // The GPU 98 % full: an exit is a suspected OOM, unless it follows
        // one the allocator counted.
        let snap = |t_ms: Millis, procs: Vec<ProcSample>| on_gpu_used(t_ms, 98, procs);
        let run = |states: &[(Millis, Option<u64>)]| {
            let mut counts = OomCounts::default();
            let snaps: Vec<_> = states
                .iter()
                .map(|&(t, n)| snap(t, n.map(|n| counted(Some(n))).into_iter().collect()))
                .collect();
            snaps
                .windows(2)
                .flat_map(|w| diff_events(&w[0], &w[1], &mut counts))
                .map(|e| (e.kind, e.message, e.after_oom))
                .collect::<Vec<_>>()
        };
        let ev = run(&[(1_000, Some(0)), (2_000, Some(1)), (4_000, None)]);
        let kinds: Vec<_> = ev.iter().map(|e| (e.0, e.2)).collect();
        assert_eq!(
            kinds,
            [
                (EventKind::SuspectedOom, false),
                (EventKind::ProcessExited, true)
            ]
        );
        assert!(
            ev[1].1.contains("after running out of memory"),
            "{}",
            ev[1].1
        );
        // Long after a caught one: the exit is suspected again.
        let late = 2_000 + AFTER_OOM_MS + 1;
        let ev = run(&[
            (1_000, Some(0)),
            (2_000, Some(1)),
            (late, Some(1)),
            (late + 1, None),
        ]);
        let kinds: Vec<_> = ev.iter().map(|e| (e.0, e.2)).collect();
        assert_eq!(
            kinds,
            [
                (EventKind::SuspectedOom, false),
                (EventKind::SuspectedOom, false)
            ]
        );
        assert!(ev[1].1.contains("(suspected OOM)"), "{}", ev[1].1);
    }
}
