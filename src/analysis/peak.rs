//! Peak memory since a series started, and when it happened.
//!
//! Each snapshot carries the highest reading of the interval (`mem_peak`,
//! fed by the fast lane), so a spike shorter than the display interval still
//! counts. Such a peak happened somewhere between the previous snapshot and
//! this one; [`Peak::not_before_ms`] says where that interval began.

use std::collections::VecDeque;

use serde::Serialize;

use crate::model::Millis;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Peak {
    pub bytes: u64,
    /// The snapshot that reported it.
    pub t_ms: Millis,
    /// The peak happened in `not_before_ms..=t_ms`: equal to `t_ms` when the
    /// snapshot's own reading was the peak, the previous snapshot's time
    /// when only a fast-lane read between the two saw it.
    pub not_before_ms: Millis,
}

/// The running maximum of one series.
#[derive(Clone, Debug, Default)]
pub(crate) struct PeakTracker {
    peak: Option<Peak>,
    last_t: Option<Millis>,
}

impl PeakTracker {
    pub(crate) fn peak(&self) -> Option<Peak> {
        self.peak
    }

    /// Feeds one snapshot's reading (`current`) and the highest reading of
    /// its interval (`interval_peak`); either may be missing. Time may go
    /// backwards (a replay that seeks): the maximum is kept all the same.
    pub(crate) fn observe(
        &mut self,
        t_ms: Millis,
        current: Option<u64>,
        interval_peak: Option<u64>,
    ) {
        let best = match (current, interval_peak) {
            (Some(c), Some(p)) => Some((c.max(p), p > c)),
            (Some(c), None) => Some((c, false)),
            (None, Some(p)) => Some((p, true)),
            (None, None) => None,
        };
        if let Some((bytes, between)) = best
            && self.peak.is_none_or(|p| bytes > p.bytes)
        {
            let not_before_ms = match self.last_t {
                Some(prev) if between && prev < t_ms => prev,
                _ => t_ms,
            };
            self.peak = Some(Peak {
                bytes,
                t_ms,
                not_before_ms,
            });
        }
        self.last_t = Some(t_ms);
    }
}

/// Most readings a [`PeakWindow`] keeps.
const PEAK_WINDOW_CAP: usize = 256;

/// The highest readings (fast-lane peaks included) within a sliding time
/// window, to project where the peaks are now: a sawtooth next to a leak
/// peaks higher each time by what the leak added.
#[derive(Clone, Debug)]
pub(crate) struct PeakWindow {
    span_ms: u64,
    points: VecDeque<(Millis, u64)>,
}

impl PeakWindow {
    pub(crate) fn new(span_ms: u64) -> PeakWindow {
        PeakWindow {
            span_ms,
            points: VecDeque::new(),
        }
    }

    /// Adds a reading; one not newer than the newest is ignored.
    pub(crate) fn push(&mut self, t_ms: Millis, v: u64) {
        if self.points.back().is_some_and(|&(t, _)| t_ms <= t) {
            return;
        }
        self.points.push_back((t_ms, v));
        let oldest = t_ms.saturating_sub(self.span_ms);
        while self.points.front().is_some_and(|&(t, _)| t < oldest)
            || self.points.len() > PEAK_WINDOW_CAP
        {
            self.points.pop_front();
        }
    }

    /// The highest reading in the window.
    #[cfg(test)]
    pub(crate) fn max(&self) -> Option<u64> {
        self.points.iter().map(|&(_, v)| v).max()
    }

    /// Where the peaks are at `t_ms` if everything has grown at `rate_bps`
    /// since it was read: max over the window of `v + rate × age`.
    pub(crate) fn envelope(&self, t_ms: Millis, rate_bps: f64) -> Option<f64> {
        let r = if rate_bps.is_finite() {
            rate_bps.max(0.0)
        } else {
            0.0
        };
        self.points
            .iter()
            .map(|&(t, v)| v as f64 + r * t_ms.saturating_sub(t) as f64 / 1000.0)
            .reduce(f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_highest_and_when() {
        let mut p = PeakTracker::default();
        assert_eq!(p.peak(), None);
        p.observe(1_000, None, None);
        assert_eq!(p.peak(), None);
        p.observe(2_000, Some(10), Some(10));
        p.observe(3_000, Some(30), Some(30));
        p.observe(4_000, Some(20), Some(25));
        assert_eq!(
            p.peak(),
            Some(Peak {
                bytes: 30,
                t_ms: 3_000,
                not_before_ms: 3_000
            })
        );
    }

    #[test]
    fn a_spike_between_snapshots_counts_with_its_interval() {
        let mut p = PeakTracker::default();
        p.observe(1_000, Some(10), Some(10));
        p.observe(2_000, Some(10), Some(900));
        assert_eq!(
            p.peak(),
            Some(Peak {
                bytes: 900,
                t_ms: 2_000,
                not_before_ms: 1_000
            })
        );
        // An equal value later does not move the time.
        p.observe(3_000, Some(900), Some(900));
        assert_eq!(p.peak().map(|k| k.t_ms), Some(2_000));
    }

    #[test]
    fn peak_window_slides_and_projects() {
        let mut w = PeakWindow::new(10_000);
        assert_eq!(w.max(), None);
        assert_eq!(w.envelope(0, 1.0), None);
        for (t, v) in [(0, 5), (1_000, 9), (2_000, 3), (3_000, 4)] {
            w.push(t, v);
        }
        assert_eq!(w.max(), Some(9));
        w.push(3_000, 100);
        assert_eq!(w.max(), Some(9));
        // 9 read 3 s ago, growing 2/s since: 15 now.
        assert_eq!(w.envelope(4_000, 2.0), Some(15.0));
        assert_eq!(w.envelope(4_000, f64::NAN), Some(9.0));
        w.push(11_500, 1);
        assert_eq!(w.max(), Some(4));
        w.push(30_000, 2);
        assert_eq!(w.max(), Some(2));
        for t in 0..10_000 {
            w.push(40_000 + t, 10_000 - t);
        }
        assert!(w.points.len() <= PEAK_WINDOW_CAP);
    }

    #[test]
    fn time_going_back_keeps_the_maximum_and_a_sane_interval() {
        let mut p = PeakTracker::default();
        p.observe(5_000, Some(10), None);
        p.observe(1_000, None, Some(u64::MAX));
        let k = p.peak().unwrap();
        assert_eq!(k.bytes, u64::MAX);
        assert!(k.not_before_ms <= k.t_ms);
    }
}
