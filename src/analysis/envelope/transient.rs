//! A level shift that comes back the next sample is a transient, not a new
//! regime ([`Envelope::set_aside`], [`Envelope::come_back`]): an
//! evaluation pass, another process's spike, a cache released and taken
//! again.

use std::collections::VecDeque;

use super::{Envelope, Point, Regime};
use crate::analysis::forecast::Forecast;
use crate::model::Millis;

/// A shift that comes back after longer than this (ms) is two shifts.
pub(super) const TRANSIENT_MS: Millis = 1500;

/// What a level shift ended, for [`Envelope::undo`].
#[derive(Clone, Debug)]
pub(super) struct Undo {
    /// When the shift came.
    at: Millis,
    regime: Regime,
    /// The forecast shown before the shift: still shown for the shift's
    /// own sample, which cannot yet tell a transient from a new level.
    forecast: Option<Forecast>,
    /// The at-risk window a drop cleared (the peaks before it say nothing
    /// about the risk after an OOM's process is gone), back if it returns.
    fullness: Option<VecDeque<(Millis, f64)>>,
}

impl Envelope {
    /// A level shift by `change` at `t_ms` (the sample `pt`): the regime
    /// starts again, what it ended kept for one sample.
    pub(super) fn set_aside(&mut self, t_ms: Millis, change: f64, pt: &mut Point) {
        // Read before the regime is taken (it says whether one was shown).
        let forecast = self.last.filter(|_| self.regime.shown);
        let mut undo = Undo {
            at: t_ms,
            forecast,
            regime: std::mem::take(&mut self.regime),
            fullness: None,
        };
        self.restart();
        // After a drop (an OOM's process gone) the old peaks say nothing
        // about the risk now, nor does the interval's peak: it was read
        // before the drop.
        if change < 0.0 {
            pt.peak = pt.used;
            undo.fullness = Some(std::mem::take(&mut self.fullness));
        }
        self.undo = Some(Box::new(undo));
    }

    /// The sample after a shift (`used`, at `t_ms`; `pt` its point): back
    /// within `shift` of where the regime was, within [`TRANSIENT_MS`], the
    /// shift was a transient and the regime comes back, the transient's
    /// top as `pt`'s peak (read since the sample before). Else the shift
    /// stands.
    pub(super) fn come_back(&mut self, t_ms: Millis, used: f64, shift: f64, pt: &mut Point) {
        let Some(u) = self.undo.take() else {
            return;
        };
        let back = u
            .regime
            .points
            .back()
            .is_some_and(|b| (used - b.used).abs() < shift);
        if !back || t_ms.saturating_sub(u.at) > TRANSIENT_MS {
            return;
        }
        let top = self
            .regime
            .points
            .iter()
            .map(|q| q.peak)
            .fold(0.0, f64::max);
        pt.peak = pt.peak.max(top);
        self.regime = u.regime;
        if let Some(f) = u.fullness {
            self.fullness = f;
        }
    }

    /// On the shift's own sample (`t_ms`), the forecast shown before it.
    pub(super) fn shown_while_shifting(&self, t_ms: Millis) -> Option<Forecast> {
        self.undo.as_ref().filter(|u| u.at == t_ms)?.forecast
    }
}
