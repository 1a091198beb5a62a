//! A level shift that comes back is a transient, not a new regime
//! ([`Envelope::set_aside`], [`Envelope::come_back`]): a drop that comes
//! back at the next sample (a cache released and taken again), a rise that
//! falls back to within half a shift within [`SPIKE_MS`] (an evaluation
//! pass, another process's spike; a fall to more than a shift below, or a
//! process of the GPU gone, ends the wait).

use std::collections::VecDeque;

use super::{Envelope, Point, Regime};
use crate::analysis::forecast::Forecast;
use crate::model::Millis;

/// A drop that comes back after longer than this (ms), or not at the next
/// sample, is two shifts.
pub(super) const TRANSIENT_MS: Millis = 1500;

/// A rise that falls back within this (ms) was a transient, however many
/// samples it lasted: an evaluation pass holds its activations for
/// seconds. (`fifteenth/02`, on an H100: a ten-crop validation's 13 GiB,
/// 17 % of the GPU, held for 3.3 s; taken as a new level, it started the
/// regime again and the forecast of the leak under it was lost until
/// 3 s before the OOM. On the H200 the same spike stays under a shift.)
pub(crate) const SPIKE_MS: Millis = 30_000;

/// What a level shift ended, for [`Envelope::undo`].
#[derive(Clone, Debug)]
pub(super) struct Undo {
    /// When the shift came.
    at: Millis,
    /// It was a rise (it may last up to [`SPIKE_MS`]).
    up: bool,
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
    /// starts again, what it ended kept for [`Envelope::come_back`].
    pub(super) fn set_aside(&mut self, t_ms: Millis, change: f64, pt: &mut Point, young: Millis) {
        // A shift during a rise still pending, before the level after it
        // has lasted `young` (a spike or a fill climbing on in steps, or
        // falling part of the way): the regime before the rise is the one
        // to come back to.
        let since = self
            .regime
            .points
            .front()
            .map_or(0, |f| t_ms.saturating_sub(f.t));
        if self.undo.as_ref().is_some_and(|u| u.up) && since < young {
            let mut kept = self.undo.take();
            self.restart();
            // A drop (an OOM's process gone, the spike's processes still
            // listed): its peaks say nothing about the risk now, as below;
            // they come back if the rise's regime does.
            if change < 0.0 {
                pt.peak = pt.used;
                let peaks = std::mem::take(&mut self.fullness);
                if let Some(u) = kept.as_mut() {
                    u.fullness.get_or_insert(peaks);
                }
            }
            self.undo = kept;
            return;
        }
        // Read before the regime is taken (it says whether one was shown).
        let forecast = self.last.filter(|_| self.regime.shown);
        let mut undo = Undo {
            at: t_ms,
            up: change > 0.0,
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

    /// A sample after a shift (`used`, at `t_ms`; `pt` its point): back
    /// within `shift` of where the regime was — a drop at the next sample,
    /// within [`TRANSIENT_MS`]; a rise at any sample within [`SPIKE_MS`] —
    /// the shift was a transient and the regime comes back, the
    /// transient's top as `pt`'s peak. Else the shift stands (a rise's
    /// once its time is up).
    pub(super) fn come_back(&mut self, t_ms: Millis, used: f64, shift: f64, pt: &mut Point) {
        let Some(u) = self.undo.take() else {
            return;
        };
        let age = t_ms.saturating_sub(u.at);
        if age > if u.up { SPIKE_MS } else { TRANSIENT_MS } {
            return;
        }
        // A rise is back within half a shift (one that drifts down a
        // little stays a level); a drop at the next sample, within one.
        let Some(old) = u.regime.points.back().map(|b| b.used) else {
            return;
        };
        let near = if u.up { shift / 2.0 } else { shift };
        if (used - old).abs() >= near {
            // A rise stays pending while memory stays above where it was
            // less a shift: a fall below that is memory given back.
            if u.up && used > old - shift {
                self.undo = Some(u);
            }
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

    /// A process of this GPU has gone: a fall now is its memory given
    /// back, not a spike's end (the regime before the spike is not the
    /// one to come back to, and the peaks say nothing of the risk now).
    pub(crate) fn process_gone(&mut self) {
        if self.undo.as_ref().is_some_and(|u| u.up) {
            self.undo = None;
        }
    }

    /// On the shift's own sample (`t_ms`), the forecast shown before it.
    pub(super) fn shown_while_shifting(&self, t_ms: Millis) -> Option<Forecast> {
        self.undo.as_ref().filter(|u| u.at == t_ms)?.forecast
    }
}

#[cfg(test)]
mod tests;
