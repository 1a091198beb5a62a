//! What a simulated PyTorch process publishes about its caching allocator
//! (as `vramwatch_torch` would), and the high-water mark of its memory its
//! peaks come from.

use std::sync::Arc;

use super::{Shape, SimProc, SimWorld, activation_share, noise};
use crate::model::alloc::{AllocStats, DeviceAlloc};
use crate::model::units::MIB;
use crate::model::{Millis, ProcSample};

impl SimWorld {
    /// The most memory process `p` has held since it was born, `age`
    /// seconds ago (at least what it holds at `t`, and never less than at
    /// an earlier `age`): a training job's weights, optimizer state,
    /// activations and evaluation at the highest they have stood together
    /// so far, a spike once one has come; the other shapes only grow.
    pub(super) fn proc_high_water(&self, p: &SimProc, pid: u32, age: f64, t: f64) -> u64 {
        let now = self.proc_mem(p, pid, age, t);
        let top = match &p.shape {
            Shape::Training {
                weights,
                optimizer,
                optimizer_at,
                activations,
                step_s,
                eval_every,
                eval_bytes,
            } => {
                let load = (age / 3.0).clamp(0.0, 1.0);
                let mut m = *weights as f64 * load;
                if age >= *optimizer_at {
                    // The activations' highest share since `from` (as
                    // `proc_mem` builds them: up for 70 % of a step, down
                    // for the rest, phased from the process's start).
                    let most_since = |from: f64| {
                        if age - from >= *step_s {
                            1.0
                        } else {
                            let to_top = (0.7 * step_s - from % step_s).rem_euclid(*step_s);
                            if age >= from + to_top {
                                1.0
                            } else {
                                activation_share(from, *step_s).max(activation_share(age, *step_s))
                            }
                        }
                    };
                    let act = *activations as f64;
                    let mut top = act * most_since(*optimizer_at);
                    // An evaluation (from just after `eval_every`, 4 s
                    // long) rides on the step it comes in.
                    let first_eval = optimizer_at.max(*eval_every);
                    if age > *eval_every {
                        top = top.max(*eval_bytes as f64 + act * most_since(first_eval));
                    }
                    m += *optimizer as f64 + top;
                }
                // `proc_mem`'s jitter at its most.
                m as u64 + 64 * MIB
            }
            Shape::Spiky {
                base, spike, every, ..
            } if age > *every => base + spike,
            _ => 0,
        };
        // As `proc_mem` rounds: 2 MiB pages and the context.
        now.max((top + 500 * MIB) / (2 * MIB) * (2 * MIB))
    }

    /// Allocator figures for a simulated PyTorch process holding what `s`
    /// says and at most `high` since it began: the context and 12 MiB of
    /// other libraries outside the cache, tensors at 70–90 % of the cache,
    /// 60 % of the cache's free part in split blocks, a retry every 40 s;
    /// the peaks are the cache at its high-water mark and 93 % of that,
    /// never below what is held now.
    pub(super) fn torch_stats(
        &self,
        s: &ProcSample,
        high: u64,
        t_ms: Millis,
        age: f64,
    ) -> Option<Arc<AllocStats>> {
        let mem = s.mem?;
        let reserved = mem.saturating_sub(512 * MIB);
        let phase = noise(self.seed, s.pid as u64 ^ 0x7a, (age * 2.0) as u64);
        let allocated = (reserved as f64 * (0.70 + 0.2 * phase)) as u64 / (2 * MIB) * (2 * MIB);
        let reserved_peak = high.max(mem).saturating_sub(512 * MIB);
        let uuid = self.info.gpus.get(s.gpu as usize).map(|g| g.uuid.clone());
        Some(Arc::new(AllocStats {
            schema: 1,
            pid: s.pid,
            start_time: Some(s.start_time),
            t_ms,
            seq: (age * 2.0) as u64,
            interval_ms: 500,
            writer: Some("sim".into()),
            torch_version: Some("sim".into()),
            cuda_initialized: true,
            devices: vec![DeviceAlloc {
                index: 0,
                uuid,
                allocated,
                reserved,
                active: allocated,
                // Split blocks are part of the cache's free part, never
                // more than it: 60 % of it.
                inactive_split: (reserved - allocated) / 100 * 60,
                allocated_peak: (reserved_peak / 100 * 93).max(allocated),
                reserved_peak,
                num_alloc_retries: (age / 40.0) as u64,
                largest_free: Some((reserved - allocated) / 5),
                ..Default::default()
            }],
            ..Default::default()
        }))
    }
}
