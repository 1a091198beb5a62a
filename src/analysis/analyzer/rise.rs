//! A process's memory rising by a level shift, and falling back
//! ([`BeforeRise`]).

use super::ProcTrack;
use crate::analysis::envelope::{Rises, SPIKE_MS};
use crate::analysis::leak::LeakDetector;
use crate::analysis::series::Trend;
use crate::analysis::tensors::TensorLeak;
use crate::analysis::{AnalysisConfig, Phase};
use crate::model::Millis;

/// A process's leak detectors as they were before its memory rose by a
/// level shift. The rise starts them again (weights or a data set arriving
/// are not a leak's beginning); when memory falls back to within half a
/// shift of where it was within [`SPIKE_MS`], the rise was a transient (an
/// evaluation pass), and they come back as they were: `fifteenth/02`'s
/// leak, on an H100 where its validation spike was 17 % of the GPU, was
/// never flagged, its detector started again at each validation.
#[derive(Debug)]
pub(super) struct BeforeRise {
    at: Millis,
    level: u64,
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
        // Pending for `SPIKE_MS`, and while memory stays above
        // where it was less a shift (a fall below that is memory
        // given back, not the spike's end).
        self.before_rise = self
            .before_rise
            .take()
            .filter(|b| t <= b.at.saturating_add(SPIKE_MS) && m as f64 > b.level as f64 - shift);
        // Back: within half a shift of where it was (a rise that
        // drifts down a little stays a level).
        let back = self
            .before_rise
            .as_ref()
            .is_some_and(|b| (m as f64 - b.level as f64).abs() < shift / 2.0);
        if back && let Some(b) = self.before_rise.take() {
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
                self.before_rise = Some(Box::new(BeforeRise {
                    at: t,
                    level: l,
                    leak: self.leak.clone(),
                    tensors: self.tensors.clone(),
                    rises: self.rises.clone(),
                    leak_alerted: self.leak_alerted,
                    trend: None,
                }));
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
                if let Some(b) = self.before_rise.as_mut().filter(|b| b.at == t)
                    && self.series.phase.phase() != Phase::Unknown
                {
                    b.trend = Some(self.series.trend());
                }
                self.series.restart_trend();
            }
        }
    }
}
