//! Whether a series is still rising (see [`Rises`]).

use std::collections::VecDeque;
use std::time::Duration;

use crate::analysis::slope::quantile;
use crate::model::Millis;

/// Whether a series is still rising: the times it reached a new high
/// (by more than a tolerance). Growth has stopped once no new high has come
/// for [`Rises::STALE_GAPS`] times the usual gap between highs (at least
/// [`Rises::STALE_MIN`]): a warm-up or a fill that has levelled off is not
/// growth any more, while a staircase with a step every few seconds is.
///
/// A reading is only as high as the next one confirms (the lower of the
/// two counts): one caught at the top of a transient a sample long (an
/// `empty_cache()` sawtooth's tooth) is not growth, and taken as the high
/// it would hide the growth until the baseline passed it.
/// A reading as high as the next one confirms: the lower of each reading
/// and the one before it (the rule [`Rises`] and the deceleration test
/// share).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Confirm {
    prev: Option<f64>,
}

impl Confirm {
    /// The previous reading as `v` confirms it (the first reading as is).
    pub(crate) fn next(&mut self, v: f64) -> f64 {
        self.prev.replace(v).map_or(v, |p| p.min(v))
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Rises {
    high: f64,
    /// The previous reading, which the next one confirms.
    confirm: Confirm,
    /// Times of the recent new highs, oldest first.
    times: VecDeque<Millis>,
}

impl Rises {
    /// Gaps kept.
    const KEEP: usize = 16;
    pub(crate) const STALE_GAPS: f64 = 3.0;
    pub(crate) const STALE_MIN: Duration = Duration::from_secs(10);

    /// Notes the reading `v` at `t_ms`; a rise of the confirmed reading
    /// by more than `tol` above the last new high is a new high (slow
    /// growth adds up to one).
    pub(crate) fn observe(&mut self, t_ms: Millis, v: f64, tol: f64) {
        let v = self.confirm.next(v);
        if self.times.is_empty() || v > self.high + tol {
            self.times.push_back(t_ms);
            if self.times.len() > Self::KEEP {
                self.times.pop_front();
            }
            self.high = v;
        }
    }

    /// Forgets everything (a level shift).
    pub(crate) fn clear(&mut self) {
        self.times.clear();
        self.high = 0.0;
        self.confirm = Confirm::default();
    }

    /// Whether the series is still rising at `t_ms`.
    pub(crate) fn current(&self, t_ms: Millis) -> bool {
        self.current_within(t_ms, Self::STALE_MIN)
    }

    /// As [`Rises::current`], with `stale_min` in place of
    /// [`Rises::STALE_MIN`].
    pub(crate) fn current_within(&self, t_ms: Millis, stale_min: Duration) -> bool {
        let Some(&last) = self.times.back() else {
            return false;
        };
        let mut gaps: Vec<f64> = self
            .times
            .iter()
            .zip(self.times.iter().skip(1))
            .map(|(a, b)| b.saturating_sub(*a) as f64)
            .collect();
        let usual = if gaps.is_empty() {
            0.0
        } else {
            quantile(&mut gaps, 0.5)
        };
        let stale = (Self::STALE_GAPS * usual).max(stale_min.as_millis() as f64);
        (t_ms.saturating_sub(last) as f64) <= stale
    }
}
