//! Events that follow from two consecutive snapshots.

use std::collections::HashSet;

use crate::model::{Event, EventKind, GpuSample, GpuState, Millis, ProcId, ProcSample, Snapshot};

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

/// A new out-of-memory error counted by process `p`'s allocator since its
/// sample in `prev`: an OOM it lived through (caught: a batch skipped), or
/// the one it is about to exit with. Counted against its last publish
/// seen: a count already there when its figures first arrive is not new,
/// nor is one an exit carries (an OOM caught hours before, as batch-size
/// finders do on purpose, says nothing about why it left).
fn counted_oom(prev: &Snapshot, p: &ProcSample, t_ms: Millis) -> Option<Event> {
    let was = prev
        .procs
        .iter()
        .find(|q| q.id() == p.id())
        .and_then(ooms)?;
    let now = ooms(p).filter(|&n| n > was)?;
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
    })
}

/// Events that follow from two consecutive snapshots: processes that came
/// and went (an exit on a nearly full GPU is a suspected OOM), an
/// out-of-memory error a process's allocator counted ([`counted_oom`]),
/// GPUs lost.
pub fn diff_events(prev: &Snapshot, next: &Snapshot) -> Vec<Event> {
    let before: HashSet<ProcId> = prev.procs.iter().map(ProcSample::id).collect();
    let after: HashSet<ProcId> = next.procs.iter().map(ProcSample::id).collect();
    let mut out = Vec::new();
    for p in &next.procs {
        out.extend(counted_oom(prev, p, next.t_ms));
        if !before.contains(&p.id()) {
            out.push(Event {
                t_ms: next.t_ms,
                kind: EventKind::ProcessStarted,
                gpu: Some(p.gpu),
                pid: Some(p.pid),
                message: format!("PID {} started on GPU {}: {}", p.pid, p.gpu, p.label()),
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
        let (kind, message) = if full >= OOM_NEAR_FULL_PCT {
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
        let ev = diff_events(&a, &b);
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
        let ev = diff_events(&a, &snap(vec![], 0, 0));
        assert_eq!(ev[0].kind, EventKind::ProcessExited);
        // A recycled PID is a new process.
        let mut q = p(2);
        q.start_time = 8;
        let ev = diff_events(&snap(vec![p(2)], 0, 0), &snap(vec![q], 0, 0));
        assert_eq!(ev.len(), 2);
    }

    #[test]
    fn a_new_oom_counted_by_the_allocator_is_an_event() {
        use crate::model::alloc::{AllocStats, DeviceAlloc};
        use std::sync::Arc;
        let snap = |procs: Vec<ProcSample>| Snapshot {
            t_ms: 5,
            gpus: vec![GpuSample {
                index: 0,
                mem: Some(MemInfo {
                    used: 10 * GIB,
                    reserved: GIB,
                    free: 90 * GIB,
                    total: 100 * GIB,
                }),
                mem_peak: Some(10 * GIB),
                ..Default::default()
            }],
            procs,
            ..Default::default()
        };
        let p = |ooms: Option<u64>| ProcSample {
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
        };
        let kinds = |a: &Snapshot, b: &Snapshot| -> Vec<(EventKind, String)> {
            diff_events(a, b)
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
}
