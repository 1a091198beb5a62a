//! A level shift that comes back is a transient, not a new regime
//! ([`Envelope::set_aside`], [`Envelope::come_back`]): a drop that comes
//! back at the next sample (a cache released and taken again), a rise that
//! falls back within [`SPIKE_MS`](crate::analysis::spike::SPIKE_MS) (an evaluation pass, another process's
//! spike: the rule of [`PendingRise`], shared with each process's leak
//! detectors).

use std::collections::VecDeque;

use super::{Envelope, Point, Regime};
use crate::analysis::forecast::Forecast;
use crate::analysis::spike::{PendingRise, Verdict};
use crate::model::Millis;

/// A drop that comes back after longer than this (ms), or not at the next
/// sample, is two shifts.
pub(super) const TRANSIENT_MS: Millis = 1500;

/// What a level shift ended, for [`Envelope::come_back`].
#[derive(Clone, Debug)]
pub(super) enum Undo {
    /// A drop at `at`: back at the next sample, within [`TRANSIENT_MS`].
    Drop { at: Millis, ended: Ended },
    /// A rise: back within [`SPIKE_MS`](crate::analysis::spike::SPIKE_MS).
    Rise(PendingRise<Ended>),
}

/// The regime a shift ended, and what comes back with it.
#[derive(Clone, Debug)]
pub(super) struct Ended {
    regime: Regime,
    /// The forecast shown before the shift: still shown for the shift's
    /// own sample, which cannot yet tell a transient from a new level.
    forecast: Option<Forecast>,
    /// The at-risk window a drop cleared (the peaks before it say nothing
    /// about the risk after an OOM's process is gone), back if it returns.
    fullness: Option<VecDeque<(Millis, f64)>>,
    /// The highest peak of a rise's regimes that a further shift during it
    /// ended (a spike that fell part of the way and rose again): kept as
    /// the returning sample's peak with the last one's.
    top: f64,
}

impl Undo {
    fn ended_mut(&mut self) -> &mut Ended {
        match self {
            Undo::Drop { ended, .. } => ended,
            Undo::Rise(r) => &mut r.before,
        }
    }
}

/// The highest peak of `regime`'s points.
fn top(regime: &Regime) -> f64 {
    regime.points.iter().map(|q| q.peak).fold(0.0, f64::max)
}

impl Envelope {
    /// A level shift by `change` at `t_ms` (the sample `pt`): the regime
    /// starts again, what it ended kept for [`Envelope::come_back`].
    pub(super) fn set_aside(&mut self, t_ms: Millis, change: f64, pt: &mut Point, young: Millis) {
        // A shift during a rise still pending, before the level after it
        // has lasted `young` (a spike or a fill climbing on in steps, or
        // falling part of the way): the regime before the rise is the one
        // to come back to, with the top of the one this shift ends.
        let since = self
            .regime
            .points
            .front()
            .map_or(0, |f| t_ms.saturating_sub(f.t));
        if matches!(self.undo.as_deref(), Some(Undo::Rise(_))) && since < young {
            let mut kept = self.undo.take();
            let spike_top = top(&self.regime);
            // A drop (an OOM's process gone, the spike's processes still
            // listed): its peaks say nothing about the risk now, as below;
            // they come back if the rise's regime does.
            let peaks = (change < 0.0).then(|| std::mem::take(&mut self.fullness));
            self.restart();
            if change < 0.0 {
                pt.peak = pt.used;
            }
            if let Some(u) = kept.as_mut() {
                let ended = u.ended_mut();
                ended.top = ended.top.max(spike_top);
                if let Some(p) = peaks {
                    ended.fullness.get_or_insert(p);
                }
            }
            self.undo = kept;
            return;
        }
        // Read before the regime is taken (it says whether one was shown).
        let forecast = self.last.filter(|_| self.regime.shown);
        let regime = std::mem::take(&mut self.regime);
        let level = regime.points.back().map_or(0.0, |b| b.used);
        let mut ended = Ended {
            regime,
            forecast,
            fullness: None,
            top: 0.0,
        };
        self.restart();
        let undo = if change > 0.0 {
            Undo::Rise(PendingRise::new(t_ms, level, ended))
        } else {
            // After a drop (an OOM's process gone) the old peaks say
            // nothing about the risk now, nor does the interval's peak: it
            // was read before the drop.
            pt.peak = pt.used;
            ended.fullness = Some(std::mem::take(&mut self.fullness));
            Undo::Drop { at: t_ms, ended }
        };
        self.undo = Some(Box::new(undo));
    }

    /// A sample after a shift (`used`, at `t_ms`; `pt` its point): a drop
    /// back within `shift` of where the regime was at the next sample,
    /// within [`TRANSIENT_MS`], or a rise judged back by
    /// [`PendingRise::judge`]: the shift was a transient and the regime
    /// comes back, the transient's top as `pt`'s peak. Else the shift
    /// stands (a rise's once it is judged to).
    pub(super) fn come_back(&mut self, t_ms: Millis, used: f64, shift: f64, pt: &mut Point) {
        let Some(u) = self.undo.take() else {
            return;
        };
        let ended = match *u {
            Undo::Drop { at, ended } => {
                let old = ended.regime.points.back().map(|b| b.used);
                let back = t_ms.saturating_sub(at) <= TRANSIENT_MS
                    && old.is_some_and(|o| (used - o).abs() < shift);
                if !back {
                    return;
                }
                ended
            }
            Undo::Rise(r) => match r.judge(t_ms, used, shift) {
                Verdict::Back => r.before,
                Verdict::Pending => {
                    self.undo = Some(Box::new(Undo::Rise(r)));
                    return;
                }
                Verdict::Stands => return,
            },
        };
        pt.peak = pt.peak.max(top(&self.regime)).max(ended.top);
        self.regime = ended.regime;
        if let Some(f) = ended.fullness {
            self.fullness = f;
        }
    }

    /// A process of this GPU first seen at `first_seen_ms` has gone: if it
    /// was there before a pending rise, a fall now is its memory given
    /// back, not a spike's end (the regime before the spike is not the one
    /// to come back to, and the peaks say nothing of the risk now). A
    /// process that came with the rise (a short-lived second process) is
    /// the spike, and its leaving is the spike's end.
    pub(crate) fn process_gone(&mut self, first_seen_ms: Millis) {
        if let Some(Undo::Rise(r)) = self.undo.as_deref()
            && r.predates(first_seen_ms)
        {
            self.undo = None;
        }
    }

    /// On a rise's own sample (`t_ms`), the forecast shown before it (no
    /// blank frame while it cannot tell a spike from a new level). Not on a
    /// drop's: memory given back makes its numbers wrong if the drop stays
    /// (a KV cache's server freeing 48 GiB read "full in ~55s" at 1 % of
    /// its GPU, `sixteenth/04`), and a dip that comes back brings the
    /// forecast back at the next sample.
    pub(super) fn shown_while_shifting(&self, t_ms: Millis) -> Option<Forecast> {
        match self.undo.as_deref()? {
            Undo::Rise(r) if r.at == t_ms => r.before.forecast,
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
