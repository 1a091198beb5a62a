//! GPUs whose growth is fills levelling off ([`Analyzer::levelling_gpus`]),
//! and those whose processes' tensors still grow
//! ([`Analyzer::tensors_growing_gpus`]).

use std::collections::{HashMap, HashSet};

use super::{Analyzer, GpuTrack};
use crate::analysis::Phase;
use crate::model::Millis;

/// A GPU whose growing processes were all fills levelling off stays so
/// for this long (ms) over samples that do not say so (each judges its fit
/// afresh): `sixteenth/04`'s card read "full in" for 4 s between two
/// "levelling off". Over every set: false alarms 18 → 16 of 65 (5 s to
/// 20 s the same), no OOM run's row changed. (Not for a process's leak
/// flag: held 10 s, it took `fifteenth/02`'s real leak's flag away.)
const FILL_HOLD_MS: Millis = 10_000;

/// A GPU's forecast is carried over samples that give none (its regime
/// restarted by a new segment of the caching allocator, or between two
/// segments) while a process's tensors there rose by this share of the
/// GPU's memory ...
const TENSORS_GROWING_FRAC: f64 = 0.01;
/// ... over this long (ms) before the sample. The driver's figure of a
/// leak beneath a KV cache is a staircase of segments (`fortyfifth/02`: 9
/// GiB at 53 s, then flat for 30 s while its tensors grew 0.4 GiB/s), and
/// each segment starts the forecaster's regime afresh; the tensors say
/// the growth goes on. A warm-up's tensors stay flat between its steps
/// (`healthy_train`: the steps are activations), so its forecast is not
/// carried. Over every set: held 278 → 284 of 339, no false alarm more;
/// 0.5 % to 2 % score the same, over 5 s 279 to 283.
const TENSORS_GROWING_MS: Millis = 10_000;

impl Analyzer {
    /// Each GPU whose live processes that grow (by phase, flagged before
    /// the fill was seen, or by tensors growing inside a cache that hides
    /// them from the driver) are all fills levelling off, with at least
    /// one: how much more their tensors will take, bytes. A process that
    /// grows without figures to tell (it does not publish them) or whose
    /// tensors do not slow keeps its GPU's forecast.
    pub(super) fn levelling_gpus(&self, t: Millis) -> HashMap<u32, f64> {
        let mut more: HashMap<u32, Option<f64>> = HashMap::new();
        for tr in self.procs.values().filter(|tr| tr.a.alive) {
            let gpu = tr.a.id.gpu;
            match tr.levelling {
                Some(rest) => {
                    if let Some(m) = more.entry(gpu).or_insert(Some(0.0)) {
                        *m += rest;
                    }
                }
                None if tr.series.phase.phase() == Phase::Growing
                    || tr.leak.flag().is_some()
                    || tr.tensors.flag(t).is_some() =>
                {
                    more.insert(gpu, None);
                }
                None => {}
            }
        }
        more.into_iter()
            .filter_map(|(g, m)| Some((g, m?)))
            .collect()
    }

    /// The GPUs where a live process's tensors rose by at least
    /// [`TENSORS_GROWING_FRAC`] of the GPU's memory over the last
    /// [`TENSORS_GROWING_MS`] before `t`.
    pub(super) fn tensors_growing_gpus(&self, t: Millis) -> HashSet<u32> {
        let total = |gpu: u32| {
            let mem = self.gpus.get(&gpu).and_then(|g| g.a.mem);
            mem.map_or(0, |m| m.total) as f64
        };
        self.procs
            .values()
            .filter(|tr| tr.a.alive)
            .filter(|tr| {
                let rose = tr.fill.rose_within(t, TENSORS_GROWING_MS);
                let least = TENSORS_GROWING_FRAC * total(tr.a.id.gpu);
                least > 0.0 && rose.is_some_and(|r| r >= least)
            })
            .map(|tr| tr.a.id.gpu)
            .collect()
    }
}

impl GpuTrack {
    /// How much more its fills' tensors will take (bytes), while its
    /// growing processes are all fills levelling off: `now` as this
    /// sample's [`Analyzer::levelling_gpus`] says, else as the last that
    /// said so within [`FILL_HOLD_MS`].
    pub(super) fn fills(&mut self, t: Millis, now: Option<f64>) -> Option<f64> {
        if let Some(more) = now {
            self.levelled = Some((t, more));
        }
        now.or(self
            .levelled
            .filter(|(at, _)| t.saturating_sub(*at) <= FILL_HOLD_MS)
            .map(|(_, m)| m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::AnalysisConfig;
    use crate::model::GpuSample;

    #[test]
    fn a_gpu_stays_filling_over_samples_that_do_not_say_so() {
        let mut g = GpuTrack::new(&GpuSample::default(), 0, &AnalysisConfig::default());
        assert_eq!(g.fills(1_000, None), None);
        assert_eq!(g.fills(2_000, Some(5.0)), Some(5.0));
        // Not said at the next samples: as the last that said so.
        assert_eq!(g.fills(3_000, None), Some(5.0));
        assert_eq!(g.fills(2_000 + FILL_HOLD_MS, None), Some(5.0));
        // Not after the hold.
        assert_eq!(g.fills(2_001 + FILL_HOLD_MS, None), None);
        // Said again: the new figure.
        assert_eq!(g.fills(20_000, Some(7.0)), Some(7.0));
    }
}
