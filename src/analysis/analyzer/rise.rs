//! A process's memory rising by a level shift, and falling back
//! ([`BeforeRise`], judged by the rule of [`PendingRise`] that the GPU's
//! forecaster uses too).

use super::ProcTrack;
use crate::analysis::envelope::Rises;
use crate::analysis::leak::LeakDetector;
use crate::analysis::series::Trend;
use crate::analysis::spike::{PendingRise, Verdict};
use crate::analysis::tensors::TensorLeak;
use crate::analysis::{AnalysisConfig, Phase};
use crate::model::Millis;

/// A process's leak detectors as they were before its memory rose by a
/// level shift. The rise starts them again (weights or a data set arriving
/// are not a leak's beginning); when the rise is judged back (a transient:
/// an evaluation pass), they come back as they were: `fifteenth/02`'s
/// leak, on an H100 where its validation spike was 17 % of the GPU, was
/// never flagged, its detector started again at each validation.
#[derive(Clone, Debug)]
pub(super) struct BeforeRise {
    pub(super) leak: LeakDetector,
    tensors: TensorLeak,
    rises: Rises,
    leak_alerted: bool,
    /// Its trend, where the rise was to a new high (which restarts it).
    trend: Option<Trend>,
}

impl ProcTrack {
    /// Memory `m` read at `t` on a GPU of `total` bytes: a level shift
    /// starts the leak detectors (and, to a new high, the trend) again; a
    /// rise that falls back brings them back.
    pub(super) fn level_shift(&mut self, t: Millis, m: u64, total: u64, cfg: &AnalysisConfig) {
        // A level shift (weights or a data set arriving) is not a
        // leak's beginning: the detector starts again after it.
        let shift = cfg.envelope.shift_frac * total as f64;
        let verdict = self
            .before_rise
            .as_ref()
            .map(|r| r.judge(t, m as f64, shift));
        if verdict == Some(Verdict::Stands) {
            self.before_rise = None;
        }
        if verdict == Some(Verdict::Back)
            && let Some(r) = self.before_rise.take()
        {
            let b = r.before;
            self.leak = b.leak;
            self.tensors = b.tensors;
            self.rises = b.rises;
            self.leak_alerted = b.leak_alerted;
            if let Some(trend) = b.trend {
                self.series.put_trend(trend);
            }
        } else if total > 0
            && let Some(l) = self.last_mem
            && l.abs_diff(m) as f64 >= shift
        {
            // A rise: what the detectors knew is kept for its fall
            // (but a rise in steps keeps the level before the
            // first: the level after it had not settled).
            let settled = self.shifted_ms.is_none_or(|s| {
                t.saturating_sub(s) >= cfg.envelope.min_regime.as_millis() as Millis
            });
            if m > l && (settled || self.before_rise.is_none()) {
                let before = BeforeRise {
                    leak: self.leak.clone(),
                    tensors: self.tensors.clone(),
                    rises: self.rises.clone(),
                    leak_alerted: self.leak_alerted,
                    trend: None,
                };
                self.before_rise = Some(Box::new(PendingRise::new(t, l as f64, before)));
            }
            self.shifted_ms = Some(t);
            self.leak = LeakDetector::new(&cfg.leak);
            self.tensors = TensorLeak::new(&cfg.leak);
            self.leak_alerted = false;
            self.rises.clear();
            // A fill to a new high is not the growth after it
            // either (a sawtooth climbing back to where it was is
            // its own shape, and stays in the window).
            let high = self.series.window.max().unwrap_or(0.0);
            if m as f64 >= high + shift {
                // (A trend not yet known is not worth keeping: a
                // sawtooth's first tooth then stays in its window.)
                if let Some(r) = self.before_rise.as_mut().filter(|r| r.at == t)
                    && self.series.phase.phase() != Phase::Unknown
                {
                    r.before.trend = Some(self.series.trend());
                }
                self.series.restart_trend();
            }
        }
    }
}
