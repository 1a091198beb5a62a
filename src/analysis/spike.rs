//! A rise by a level shift that may yet fall back ([`PendingRise`]): one
//! rule for the GPU's forecaster (`envelope::transient`) and for each
//! process's leak detectors (`analyzer::rise`). An evaluation pass holds
//! its activations for seconds and then gives them back; taken as a new
//! level, it would start the regime or the detectors again at every
//! validation (`fifteenth/02`, on an H100: a ten-crop validation's
//! 13 GiB, 17 % of the GPU, held for 3.3 s).

use crate::model::Millis;

/// A rise that falls back within this (ms) was a transient, however many
/// samples it lasted. (On the H200 the same `fifteenth/02` spike stays
/// under a shift.)
pub(crate) const SPIKE_MS: Millis = 30_000;

/// What a reading after a rise says of it ([`PendingRise::judge`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Back within half a shift of where it was: the rise was a transient,
    /// and what it ended comes back. (Half: a rise that drifts down a
    /// little stays a level; taken as back, its regime had come back
    /// carrying the new level, and a rate 2.7 times the real one.)
    Back,
    /// Still above where it was less a shift, within [`SPIKE_MS`]: wait.
    Pending,
    /// Its time is up, or memory fell to more than a shift below where it
    /// was (memory given back, not the spike's end): the rise stands.
    Stands,
}

/// A rise by a level shift at `at` from `level` (bytes), and what it ended
/// (`before`), kept until a reading says whether it was a transient.
#[derive(Clone, Debug)]
pub(crate) struct PendingRise<T> {
    pub(crate) at: Millis,
    pub(crate) level: f64,
    pub(crate) before: T,
}

impl<T> PendingRise<T> {
    /// A rise read at `at` from `level`, ending `before`.
    pub(crate) fn new(at: Millis, level: f64, before: T) -> Self {
        PendingRise { at, level, before }
    }

    /// What the reading `used` at `t` (a level shift being `shift` bytes)
    /// says of the rise.
    pub(crate) fn judge(&self, t: Millis, used: f64, shift: f64) -> Verdict {
        if t.saturating_sub(self.at) > SPIKE_MS {
            Verdict::Stands
        } else if (used - self.level).abs() < shift / 2.0 {
            Verdict::Back
        } else if used > self.level - shift {
            Verdict::Pending
        } else {
            Verdict::Stands
        }
    }

    /// Whether a process first seen at `first_seen_ms` and now gone was
    /// there before the rise: its memory given back is then not the
    /// spike's end (an OOM's process), and the rise stands; a process that
    /// came with the rise (a short-lived second process) leaving is the
    /// spike's end.
    pub(crate) fn predates(&self, first_seen_ms: Millis) -> bool {
        first_seen_ms < self.at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_after_a_rise_is_back_pending_or_stands() {
        let r = PendingRise::new(1_000, 100.0, ());
        // A shift of 10: back within 5 of 100.
        assert_eq!(r.judge(2_000, 104.0, 10.0), Verdict::Back);
        assert_eq!(r.judge(2_000, 96.0, 10.0), Verdict::Back);
        // Still up (or drifted down a little): pending.
        assert_eq!(r.judge(2_000, 120.0, 10.0), Verdict::Pending);
        assert_eq!(r.judge(2_000, 106.0, 10.0), Verdict::Pending);
        // Between half a shift and a shift below: still pending.
        assert_eq!(r.judge(2_000, 91.0, 10.0), Verdict::Pending);
        // More than a shift below: memory given back.
        assert_eq!(r.judge(2_000, 89.0, 10.0), Verdict::Stands);
        // Up to `SPIKE_MS` after the rise, not after.
        assert_eq!(r.judge(1_000 + SPIKE_MS, 100.0, 10.0), Verdict::Back);
        assert_eq!(r.judge(1_001 + SPIKE_MS, 100.0, 10.0), Verdict::Stands);
    }

    #[test]
    fn only_a_process_there_before_the_rise_predates_it() {
        let r = PendingRise::new(5_000, 0.0, ());
        assert!(r.predates(4_999));
        assert!(!r.predates(5_000));
        assert!(!r.predates(6_000));
    }
}
