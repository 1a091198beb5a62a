//! Whether a candidate forecast has held long enough, and steadily
//! enough, to be shown (see [`Envelope::hold`]).

use super::{Envelope, EnvelopeParams};
use crate::analysis::forecast::Forecast;
use crate::model::Millis;

impl Envelope {
    /// Shows `candidate` once candidates have agreed for `hold`; once
    /// shown, it stays for as long as there are candidates (a forecast
    /// reaching "now" predicts a moment that moves with the clock, and
    /// must not vanish for it).
    ///
    /// On a GPU at risk (`at_risk`) a candidate is shown at once: the hold
    /// keeps a GPU with room from crying wolf over a fill, and one whose
    /// readings have peaked near the top has no room to wait with. Beside
    /// a process flagged as leaking the hold is `hold_leaking` (1 s: two
    /// candidates a second apart that agree): the flag has already seen
    /// 20 s of growth that did not slow, so the hold's work against a fill
    /// crying wolf is done, and a leak beneath a KV cache, flagged late
    /// (30–90 s into its growth), has its allocator's segments start new
    /// regimes whose candidates waited out 3 s while the OOM came closer
    /// (`fortyfirst/01` at T−30 s). What is left to keep out is a single
    /// sample's flash: with no hold, `thirtyseventh/03` flashed "15.6 s"
    /// for 1 s, 74 s before its OOM; 2 s held the same checkpoints.
    pub(super) fn hold(
        &mut self,
        candidate: Option<Forecast>,
        at_risk: bool,
        p: &EnvelopeParams,
    ) -> Option<Forecast> {
        let Some(f) = candidate else {
            self.regime.held.clear();
            self.regime.shown = false;
            return None;
        };
        // A forecast that went away for less than `hold` (the baseline
        // touched the top for a sample or two, a cache release) comes back
        // at once: it was steady, and it is not flicker to show it again.
        let hold = if self.leaking {
            p.hold.min(p.hold_leaking)
        } else {
            p.hold
        };
        let hold = hold.as_millis() as u64;
        if self.regime.shown
            || at_risk
            || self
                .regime
                .last_shown
                .is_some_and(|l| f.made_ms.saturating_sub(l) <= hold)
        {
            self.regime.shown = true;
            self.regime.last_shown = Some(f.made_ms);
            return Some(f);
        }
        let now = Held::of(&f);
        let t = now.made;
        self.regime.held.push_back(now);
        // Keep one candidate at least `hold` old, and the ones since.
        while self.regime.held.len() > 1 && t.saturating_sub(self.regime.held[1].made) >= hold {
            self.regime.held.pop_front();
        }
        let t0 = self.regime.held.front()?.made;
        if t.saturating_sub(t0) < hold {
            self.why = "holding";
            return None;
        }
        let steady = self
            .regime
            .held
            .iter()
            .all(|h| h.agrees(&now, p.max_slip, p.max_slip_rel));
        self.regime.shown = steady;
        if steady {
            self.regime.last_shown = Some(t);
        } else {
            self.why = "unsteady";
        }
        steady.then_some(f)
    }
}

/// A candidate as [`Envelope::hold`] remembers it: when it was made and
/// the moment it predicted (unix ms).
#[derive(Clone, Copy, Debug)]
pub(super) struct Held {
    made: Millis,
    full: f64,
}

impl Held {
    fn of(f: &Forecast) -> Held {
        Held {
            made: f.made_ms,
            full: f.full_at_ms() as f64,
        }
    }

    /// Whether `now`, made later, agrees with this one: the moment moved by
    /// at most `max_slip` seconds per second, a second, and `rel` of the
    /// time still to go (an extrapolation's moment scatters in proportion
    /// to how far it reaches: a sawtooth's next peak moves a moment 20 s
    /// away by a second or two, and that is agreement; a fill speeding up
    /// or levelling off moves it by much more).
    fn agrees(&self, now: &Held, max_slip: f64, rel: f64) -> bool {
        let ahead = (now.full - now.made as f64).max(0.0);
        let allowed = max_slip * now.made.saturating_sub(self.made) as f64 + 1000.0 + rel * ahead;
        (now.full - self.full).abs() <= allowed
    }
}
