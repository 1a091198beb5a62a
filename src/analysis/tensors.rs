//! A process's tensors as a second view of a leak: the bytes its tensors
//! hold (`allocated`, from the figures PyTorch's caching allocator
//! publishes, `model::alloc`) fed to a leak detector of their own.
//!
//! The driver's figure is the allocator's cache, not the tensors: once the
//! cache holds nearly the whole GPU (an evaluation pass's transient kept
//! reserved, `eval_spike/cached`), the driver sees a flat line while the
//! tensors inside it keep growing to the OOM. The analyzer takes this
//! flag only where the driver's figure is saturated (the GPU at risk, or
//! read at `cache_full_pct` or more with no forecast of its own), as the
//! allocators' demand is shown only there (`demand`): below that, a
//! cache filling what it reserved (a KV cache's blocks) looks as linear
//! in the tensors as in the driver for its first tens of seconds, and the
//! driver's own flag decides.

use super::envelope::Rises;
use super::leak::{LeakChange, LeakDetector, LeakFlag, LeakParams, LeakSeen};
use crate::model::{Millis, ProcSample};

/// The tensors' leak detector of one process.
#[derive(Clone, Debug)]
pub(crate) struct TensorLeak {
    leak: LeakDetector,
    rises: Rises,
    /// The publish (`seq`) last fed: each is fed once, at its own time.
    seq: Option<u64>,
}

impl TensorLeak {
    pub(crate) fn new(p: &LeakParams) -> TensorLeak {
        TensorLeak {
            leak: LeakDetector::new(p),
            rises: Rises::default(),
            seq: None,
        }
    }

    /// Feeds `sp`'s allocator figures, when fresh and not fed before;
    /// `tol` is the rise that counts as a new high. Returns the detector's
    /// change, if any.
    pub(crate) fn observe(&mut self, sp: &ProcSample, t: Millis, tol: f64) -> Option<LeakChange> {
        let stats = sp.torch.as_deref()?;
        let d = stats.fresh(t).filter(|_| self.seq != Some(stats.seq))?;
        self.seq = Some(stats.seq);
        let at = stats.t_ms.min(t);
        self.rises.observe(at, d.allocated as f64, tol);
        self.leak.observe(at, d.allocated as f64)
    }

    /// The flag, while the tensors still reach new highs at `t` (as for
    /// the driver's figure: [`LeakDetector::flag_while_rising`]).
    pub(crate) fn flag(&self, t: Millis) -> Option<LeakFlag> {
        let f = self.leak.flag_while_rising(&self.rises, t)?;
        Some(LeakFlag {
            seen_in: LeakSeen::Tensors,
            ..*f
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::analysis::{AnalysisConfig, Analyzer, LeakSeen};
    use crate::model::Snapshot;
    use crate::model::alloc::{AllocStats, DeviceAlloc};

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    /// Process 1 at second `t`: the driver's figure `mem`, its tensors
    /// `allocated` as published at `t` (publish number `seq`).
    fn proc(t: u64, mem: u64, allocated: u64, seq: u64) -> ProcSample {
        ProcSample {
            pid: 1,
            start_time: 7,
            gpu: 0,
            mem: Some(mem),
            mem_peak: Some(mem),
            torch: Some(Arc::new(AllocStats {
                schema: 1,
                pid: 1,
                start_time: Some(7),
                t_ms: ms(t),
                seq,
                interval_ms: 500,
                cuda_initialized: true,
                devices: vec![DeviceAlloc {
                    allocated,
                    reserved: mem - GIB,
                    active: allocated,
                    allocated_peak: allocated,
                    reserved_peak: mem - GIB,
                    ..Default::default()
                }],
                ..Default::default()
            })),
            ..Default::default()
        }
    }

    fn ms(t: u64) -> Millis {
        1_000_000 + t * 1000
    }

    fn snap(t: u64, p: ProcSample) -> Snapshot {
        let used = p.mem.unwrap_or(0);
        crate::analysis::tests::snapshot(t, used, 140 * GIB, vec![p])
    }

    /// The seconds at which process 1 is flagged, and the flag's view.
    fn flagged(secs: u64, tensors: impl Fn(u64) -> u64) -> Vec<(u64, LeakSeen)> {
        flagged_at(137 * GIB, secs, tensors)
    }

    /// As [`flagged`], with the cache holding the GPU flat at `cache` (of
    /// 140 GiB; from 97 % the GPU is at risk): an evaluation pass's
    /// transient kept reserved, while the tensors grow.
    fn flagged_at(cache: u64, secs: u64, tensors: impl Fn(u64) -> u64) -> Vec<(u64, LeakSeen)> {
        let mut a = Analyzer::new(&AnalysisConfig::default());
        let mut out = Vec::new();
        for t in 0..secs {
            a.observe(&snap(t, proc(t, cache, tensors(t), t)));
            let p = a.processes().find(|p| p.id.key.pid == 1).unwrap();
            out.extend(p.leak.map(|f| (t, f.seen_in)));
        }
        out
    }

    #[test]
    fn tensors_that_grow_inside_a_flat_cache_are_flagged_as_theirs() {
        let f = flagged(40, |t| 80 * GIB + t * 300 * MIB);
        let first = f.first().expect("flagged");
        assert!((18..=26).contains(&first.0), "{f:?}");
        assert!(f.iter().all(|x| x.1 == LeakSeen::Tensors), "{f:?}");
        assert_eq!(f.last().map(|x| x.0), Some(39), "{f:?}");
    }

    #[test]
    fn below_the_risk_the_drivers_figure_decides() {
        // At 100 GiB of 140 the cache is no wall: growth the driver does
        // not see yet (a KV cache's blocks filling what it reserved) is
        // not a leak to flag.
        assert_eq!(
            flagged_at(100 * GIB, 40, |t| 60 * GIB + t * 300 * MIB),
            vec![]
        );
    }

    #[test]
    fn flat_tensors_inside_a_flat_cache_are_not() {
        assert_eq!(flagged(40, |_| 80 * GIB), vec![]);
        // A training step's swing (activations taken and given back) is
        // not growth either.
        assert_eq!(flagged(40, |t| 80 * GIB + (t % 3) * 4 * GIB), vec![]);
    }

    #[test]
    fn tensors_that_stop_growing_are_not_leaking_now() {
        let f = flagged(70, |t| 80 * GIB + t.min(35) * 300 * MIB);
        assert!(!f.is_empty(), "{f:?}");
        assert!(f.iter().all(|x| x.0 < 50), "{f:?}");
    }

    #[test]
    fn tensors_with_no_new_high_for_the_floor_are_not_leaking_now() {
        let tol = 140.0 * GIB as f64 / 1000.0;
        let mut tl = TensorLeak::new(&LeakParams::default());
        // 1 GiB/s for 30 s, then flat: the last new high is the reading
        // of 30 s (the one at 29 s, confirmed by it).
        for t in 0..32 {
            let a = 80 * GIB + t.min(29) * GIB;
            tl.observe(&proc(t, 130 * GIB, a, t), ms(t), tol);
        }
        assert!(tl.flag(ms(37)).is_some(), "7 s after its last high");
        // The forecaster's floor (10 s) would still say rising at 38 s.
        assert!(tl.flag(ms(38)).is_none(), "8 s after its last high");
    }

    #[test]
    fn a_publish_is_fed_once_and_stale_or_missing_figures_not_at_all() {
        let tol = 140.0 * GIB as f64 / 1000.0;
        // Tensors growing 1 GiB/s, read every second for 40 s.
        let run = |publish: &dyn Fn(u64) -> ProcSample| {
            let mut tl = TensorLeak::new(&LeakParams::default());
            for t in 0..40 {
                tl.observe(&publish(t), ms(t), tol);
            }
            tl.flag(ms(39)).is_some()
        };
        // Fresh publishes, one a second: flagged (the control).
        assert!(run(&|t| proc(t, 130 * GIB, 80 * GIB + t * GIB, t)));
        // One publish (the same number) read forty times, its figures
        // changing as a torn read might: one point, no span of growth.
        assert!(!run(&|t| proc(t, 130 * GIB, 80 * GIB + t * GIB, 1)));
        // Stale figures, published 10 s before each reading (the file
        // left by a publisher that stopped): not fed.
        assert!(!run(&|t| {
            let mut p = proc(t, 130 * GIB, 80 * GIB + t * GIB, t);
            if let Some(s) = p.torch.as_mut() {
                Arc::make_mut(s).t_ms = ms(t).saturating_sub(10_000);
            }
            p
        }));
        // No figures at all.
        assert!(!run(&|t| ProcSample {
            torch: None,
            ..proc(t, 130 * GIB, 80 * GIB + t * GIB, t)
        }));
    }
}
