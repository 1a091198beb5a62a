//! GPUs whose growth is fills levelling off ([`Analyzer::levelling_gpus`]).

use std::collections::HashMap;

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
