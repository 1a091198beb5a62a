//! One memory series (a GPU's or a process's): its window, peak and phase,
//! fed one snapshot at a time.

use std::time::Duration;

use crate::analysis::peak::{PeakTracker, PeakWindow};
use crate::analysis::phase::{PhaseParams, PhaseTracker};
use crate::analysis::slope::{Estimate, Window};
use crate::model::Millis;

#[derive(Clone, Debug)]
pub(crate) struct Series {
    pub window: Window,
    pub peak: PeakTracker,
    /// Highest readings (fast-lane peaks included) over the window.
    pub peaks: PeakWindow,
    pub phase: PhaseTracker,
    /// The estimate after the newest accepted point.
    pub estimate: Option<Estimate>,
}

/// A series' trend, set aside over a transient ([`Series::trend`]).
#[derive(Clone, Debug)]
pub(crate) struct Trend {
    window: Window,
    estimate: Option<Estimate>,
    phase: PhaseTracker,
}

impl Series {
    pub(crate) fn new(window: Duration) -> Series {
        Series {
            window: Window::new(window),
            peak: PeakTracker::default(),
            peaks: PeakWindow::new(window.as_millis() as u64),
            phase: PhaseTracker::default(),
            estimate: None,
        }
    }

    /// The trend (window, estimate, phase) as it stands, for
    /// [`Series::put_trend`] after a transient.
    pub(crate) fn trend(&self) -> Trend {
        Trend {
            window: self.window.clone(),
            estimate: self.estimate,
            phase: self.phase.clone(),
        }
    }

    /// Puts back a trend taken before a transient (the peaks stay).
    pub(crate) fn put_trend(&mut self, t: Trend) {
        self.window = t.window;
        self.estimate = t.estimate;
        self.phase = t.phase;
    }

    /// Forgets the trend (the window, its estimate and the phase) but not
    /// the peaks: after a fill (weights or a data set arriving in one
    /// step) the growth is measured from the new level on, as the GPU's
    /// regime is (`envelope`), rather than as the fill's rate and noise
    /// lingering in the window for its whole span.
    pub(crate) fn restart_trend(&mut self) {
        self.window.clear();
        self.estimate = None;
        self.phase = PhaseTracker::default();
    }

    /// Feeds the snapshot at `t_ms`: `current` is the reading, `interval_peak`
    /// the highest read since the previous snapshot. Returns whether the
    /// point was new (not older than the newest).
    pub(crate) fn observe(
        &mut self,
        t_ms: Millis,
        current: Option<u64>,
        interval_peak: Option<u64>,
        p: &PhaseParams,
    ) -> bool {
        self.peak.observe(t_ms, current, interval_peak);
        let Some(v) = current else {
            return false;
        };
        self.peaks.push(t_ms, interval_peak.map_or(v, |p| p.max(v)));
        if !self.window.push(t_ms, v as f64) {
            return false;
        }
        self.estimate = self.window.estimate();
        self.phase.update(t_ms, self.estimate.as_ref(), p);
        true
    }
}
