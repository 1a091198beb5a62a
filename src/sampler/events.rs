//! Events that follow from two consecutive snapshots.

use std::collections::HashSet;

use crate::model::{Event, EventKind, GpuSample, GpuState, ProcId, ProcSample, Snapshot};

/// A GPU within this share of full when a process exits makes that exit a
/// suspected OOM.
pub const OOM_NEAR_FULL_PCT: f64 = 95.0;
/// Events that follow from two consecutive snapshots: processes that came
/// and went (an exit on a nearly full GPU is a suspected OOM), GPUs lost.
pub fn diff_events(prev: &Snapshot, next: &Snapshot) -> Vec<Event> {
    let before: HashSet<ProcId> = prev.procs.iter().map(ProcSample::id).collect();
    let after: HashSet<ProcId> = next.procs.iter().map(ProcSample::id).collect();
    let mut out = Vec::new();
    for p in &next.procs {
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
}
