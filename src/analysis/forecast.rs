//! "Full in ~N s": when free memory runs out at the current growth, as a
//! range rather than one false-precise number.
//!
//! Free memory is seen three ways ([`Room`]): now; at the peaks (the
//! highest readings of the rate window, fast-lane peaks included, each
//! raised by the growth since it was read: a sawtooth next door allocates
//! its peak again, on top of what the leak added); and at the troughs (the
//! lowest readings, raised likewise). With growth rate r and its range
//! `r_low..r_high` (see `slope`, widened by the readings' scatter around
//! the line), and the largest allocation step seen recently s:
//!
//! - central estimate `at_peaks / r`: the peaks reach the top;
//! - earliest `(at_peaks - s) / r_high`: the next allocation of size s fails
//!   as soon as less than s is left, and growth may be as fast as `r_high`;
//! - latest `at_troughs / r_low + gap`: growth may be as slow as `r_low`,
//!   even the troughs reach the top, and an OOM is only seen at the first
//!   sample after it (`gap`: the longest recent time between samples, at
//!   least the interval). When `r_low <= 0` the data cannot rule out that
//!   growth stops: no upper end.
//!
//! For a steady leak all three rooms are equal and the range is about one
//! step and one interval wide.
//!
//! This is the forecast of a *process* (when, at its own growth, it uses up
//! what its GPU has free); a GPU's forecast is [`crate::analysis::envelope`].
//!
//! A forecast is shown only once growth is sustained: the forecast has
//! existed for `hold` (`leak_min_duration`, 20 s by default) and the time
//! it predicts has not moved by more than [`MAX_SLIP`] of the time that
//! passed (see [`Steady`]). A steady leak predicts the same moment again
//! and again; loading weights or a cache filling towards a plateau
//! predicts a moment that keeps moving away (for a fill with time constant
//! τ the predicted moment recedes at eta/τ seconds per second), and is not
//! shown.

use serde::Serialize;

use crate::analysis::slope::Rate;
use crate::model::Millis;

/// Forecasts further out than this are not made (a week).
pub(crate) const MAX_HORIZON_S: f64 = 7.0 * 86_400.0;

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Forecast {
    /// When the forecast was made.
    pub made_ms: Millis,
    /// The free memory it started from.
    pub room: Room,
    /// The growth it assumes.
    pub rate: Rate,
    /// Central estimate, seconds from `made_ms`.
    pub eta_s: f64,
    /// Earliest, seconds.
    pub low_s: f64,
    /// Latest, seconds; `None` when growth may stop.
    pub high_s: Option<f64>,
}

impl Forecast {
    /// The central estimate as a unix time.
    pub fn full_at_ms(&self) -> Millis {
        self.made_ms.saturating_add(secs_to_ms(self.eta_s))
    }

    /// The range as unix times (`None`: open-ended).
    pub fn range_ms(&self) -> (Millis, Option<Millis>) {
        (
            self.made_ms.saturating_add(secs_to_ms(self.low_s)),
            self.high_s
                .map(|h| self.made_ms.saturating_add(secs_to_ms(h))),
        )
    }

    /// Whether `t_ms` falls in the range.
    pub fn contains(&self, t_ms: Millis) -> bool {
        let (lo, hi) = self.range_ms();
        t_ms >= lo && hi.is_none_or(|h| t_ms <= h)
    }

    /// Whether this forecast, made at most `within` before `t_ms` and with
    /// its latest end still ahead, may stand for a sample that gives none,
    /// its times counting from when it was made.
    pub(crate) fn stands_over(&self, t_ms: Millis, within: std::time::Duration) -> bool {
        let ended = self.range_ms().1.is_some_and(|h| h <= t_ms);
        t_ms.saturating_sub(self.made_ms) <= within.as_millis() as u64 && !ended
    }

    /// This forecast, shown on a GPU that is still at risk (or beside a
    /// process still flagged as leaking: the analyzer decides), carried to
    /// a sample `t_ms` that gives none: at risk the next larger allocation
    /// may fail at once, so its earliest end is now, and its latest end
    /// stays where it was; its central estimate keeps its moment until
    /// that has passed, and is then halfway to the latest end (a "~0s"
    /// that stood for tens of seconds read as "now", which it is not). A
    /// saturated GPU's candidates come and go ("no new high", "saturated",
    /// "one step": seen on corpus `ninth/02`, shown, gone, shown), and one
    /// made before an evaluation pass's spike put the GPU at risk says how
    /// long the growth can go on at most (`tenth/01`, `eleventh/01`).
    /// `None` once that latest end has passed. An open-ended forecast
    /// (growth may stop) stands over one sample only (at most one and a
    /// half `interval`s after it was made).
    pub(crate) fn carried_forward(
        &self,
        t_ms: Millis,
        interval: std::time::Duration,
    ) -> Option<Forecast> {
        let Some(high) = self.range_ms().1 else {
            return self.stands_over(t_ms, interval * 3 / 2).then_some(*self);
        };
        if high <= t_ms {
            return None;
        }
        if t_ms <= self.made_ms {
            return Some(*self);
        }
        let secs = |at: Millis| at.saturating_sub(t_ms) as f64 / 1000.0;
        let central = secs(self.full_at_ms());
        Some(Forecast {
            made_ms: t_ms,
            eta_s: if central > 0.0 {
                central
            } else {
                secs(high) / 2.0
            },
            low_s: 0.0,
            high_s: Some(secs(high)),
            ..*self
        })
    }

    /// On a GPU at risk, the forecast shown at the last sample (`before`)
    /// and this one as one range where this one ends before `before`
    /// began: a transient reaching the top says the job may fail at the
    /// next one (the earliest end, now), not that the growth beneath it
    /// runs out sooner than the last sample said it would at the latest.
    /// A validation spike read at 98.8 % of the GPU put a latest end 2.4 s
    /// ahead, for one sample, where the forecast before said 9–45 s; the
    /// OOM came 10.6 s later (`fresh/06`, `two_proc` ×0.8, T−10 s).
    /// Ranges that overlap are left as they are: a latest end that only
    /// grew would keep the widest range of the whole regime.
    pub(crate) fn joined_with(mut self, before: &Forecast) -> Forecast {
        let (Some(was), Some(now)) = (before.range_ms().1, self.range_ms().1) else {
            return self;
        };
        if now < before.range_ms().0 && was > now {
            self.high_s = Some(was.saturating_sub(self.made_ms) as f64 / 1000.0);
        }
        self
    }

    /// As [`crate::analysis::Eta::describe`] says it, from when it was made: "~2m10s
    /// (1m50s–2m20s)", "~2m10s (≥1m50s)" when open-ended, "≤44s" where the
    /// estimate rounds to nought.
    pub fn label(&self) -> String {
        crate::analysis::Eta::of(self, self.made_ms).describe()
    }
}

/// How fast (seconds per second) the predicted moment may move while a
/// forecast is held.
pub(crate) const MAX_SLIP: f64 = 0.25;

/// Most candidates [`Steady`] keeps.
const STEADY_CAP: usize = 256;

/// Holds back candidate forecasts until they are steady.
#[derive(Clone, Debug, Default)]
pub(crate) struct Steady {
    /// (made_ms, full_at_ms) of the candidates, oldest first; the first is
    /// the newest one at least `hold` old.
    seen: std::collections::VecDeque<(Millis, Millis)>,
}

impl Steady {
    /// Feeds this snapshot's candidate; returns it when it is steady:
    /// candidates have existed without a break for `hold_ms`, and the
    /// moment each of them predicted is within [`MAX_SLIP`] × its age, plus
    /// one `interval_ms`, of the moment predicted now. Moving earlier counts too: a
    /// one-off jump (an optimizer allocating its state) pulls the moment in
    /// once, and is not a trend until it holds.
    pub(crate) fn update(
        &mut self,
        candidate: Option<Forecast>,
        hold_ms: u64,
        interval_ms: u64,
    ) -> Option<Forecast> {
        let Some(f) = candidate else {
            self.seen.clear();
            return None;
        };
        let t = f.made_ms;
        if self.seen.back().is_some_and(|&(last, _)| t <= last) {
            self.seen.clear();
        }
        self.seen.push_back((t, f.full_at_ms()));
        let cutoff = t.saturating_sub(hold_ms);
        while self.seen.len() > 1 && self.seen[1].0 <= cutoff {
            self.seen.pop_front();
        }
        while self.seen.len() > STEADY_CAP {
            self.seen.pop_front();
        }
        let &(t0, _) = self.seen.front()?;
        if t - t0 < hold_ms || self.seen.len() < 2 {
            return None;
        }
        let full = f.full_at_ms() as f64;
        let steady = self.seen.iter().all(|&(ti, fi)| {
            let allowed = MAX_SLIP * (t - ti) as f64 + interval_ms as f64;
            (full - fi as f64).abs() <= allowed
        });
        steady.then_some(f)
    }
}

fn secs_to_ms(s: f64) -> u64 {
    if s.is_finite() && s > 0.0 {
        (s * 1000.0).min(u64::MAX as f64 / 2.0) as u64
    } else {
        0
    }
}

/// Free memory now, at the peaks and at the troughs, bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Room {
    pub free: u64,
    /// At most `free`.
    pub at_peaks: u64,
    /// At least `free`.
    pub at_troughs: u64,
}

impl Room {
    /// No swings: the same room everywhere.
    pub fn flat(free: u64) -> Room {
        Room {
            free,
            at_peaks: free,
            at_troughs: free,
        }
    }

    /// Orders the three (`at_peaks <= free <= at_troughs`).
    pub fn ordered(free: u64, at_peaks: u64, at_troughs: u64) -> Room {
        Room {
            free,
            at_peaks: at_peaks.min(free),
            at_troughs: at_troughs.max(free),
        }
    }
}

/// The forecast for `room` consumed at `rate`; `None` unless the rate is
/// positive and the central estimate is within [`MAX_HORIZON_S`]. `step`
/// is the largest recent allocation, bytes; `gap_s` the longest recent time
/// between samples.
pub(crate) fn forecast(
    made_ms: Millis,
    room: Room,
    rate: Rate,
    step: f64,
    gap_s: f64,
) -> Option<Forecast> {
    if !(rate.bps.is_finite() && rate.bps > 0.0) {
        return None;
    }
    let room = Room::ordered(room.free, room.at_peaks, room.at_troughs);
    let peaks = room.at_peaks as f64;
    let troughs = room.at_troughs as f64;
    let eta_s = peaks / rate.bps;
    if eta_s.is_nan() || eta_s > MAX_HORIZON_S {
        return None;
    }
    let fast = if rate.high.is_finite() {
        rate.high.max(rate.bps)
    } else {
        rate.bps
    };
    let slow = if rate.low.is_finite() {
        rate.low.min(rate.bps)
    } else {
        0.0
    };
    let step = if step.is_finite() {
        step.clamp(0.0, peaks)
    } else {
        0.0
    };
    let gap_s = if gap_s.is_finite() {
        gap_s.max(0.0)
    } else {
        0.0
    };
    let low_s = (peaks - step) / fast;
    let high_s = (slow > 0.0)
        .then(|| troughs / slow + gap_s)
        .filter(|x| x.is_finite());
    Some(Forecast {
        made_ms,
        room,
        rate,
        eta_s,
        low_s: low_s.min(eta_s),
        high_s: high_s.map(|x| x.max(eta_s)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: f64 = (1u64 << 30) as f64;

    #[test]
    fn an_exact_rate_gives_a_range_of_one_step_and_one_interval() {
        let f = forecast(1_000_000, Room::flat(30 << 30), Rate::exact(GIB), GIB, 1.0).unwrap();
        assert_eq!(f.eta_s, 30.0);
        assert_eq!(f.low_s, 29.0);
        assert_eq!(f.high_s, Some(31.0));
        assert_eq!(f.full_at_ms(), 1_030_000);
        assert_eq!(f.range_ms(), (1_029_000, Some(1_031_000)));
        assert!(f.contains(1_030_500) && !f.contains(1_031_001) && !f.contains(1_028_999));
        assert_eq!(f.label(), "~30s (29s–31s)");
    }

    #[test]
    fn an_uncertain_rate_widens_the_range_or_leaves_it_open() {
        let r = Rate {
            bps: GIB,
            low: GIB / 2.0,
            high: 2.0 * GIB,
        };
        let f = forecast(0, Room::flat(60 << 30), r, 0.0, 1.0).unwrap();
        assert_eq!((f.low_s, f.eta_s, f.high_s), (30.0, 60.0, Some(121.0)));
        let r = Rate {
            bps: GIB,
            low: -GIB,
            high: 2.0 * GIB,
        };
        let f = forecast(0, Room::flat(60 << 30), r, 0.0, 1.0).unwrap();
        assert_eq!(f.high_s, None);
        assert!(f.contains(u64::MAX));
        assert_eq!(f.label(), "~1m00s (≥30s)");
    }

    #[test]
    fn a_forecast_at_risk_is_carried_from_now_until_its_latest_end() {
        let second = std::time::Duration::from_secs(1);
        let f = forecast(1_000_000, Room::flat(3 << 30), Rate::exact(GIB), GIB, 1.0).unwrap();
        assert_eq!(f.range_ms(), (1_002_000, Some(1_004_000)));
        assert_eq!(f.full_at_ms(), 1_003_000);
        let c = f.carried_forward(1_002_500, second).unwrap();
        assert_eq!(c.made_ms, 1_002_500);
        assert_eq!(c.range_ms(), (1_002_500, Some(1_004_000)), "from now");
        assert_eq!(c.full_at_ms(), 1_003_000, "the central moment kept");
        assert_eq!(c.rate, f.rate);
        let c = f.carried_forward(1_003_000, second).unwrap();
        assert_eq!(
            c.full_at_ms(),
            1_003_500,
            "a central moment passed: halfway"
        );
        assert_eq!(c.label(), "~1s (0s–1s)");
        assert!(
            f.carried_forward(1_004_000, second).is_none(),
            "its latest end has passed"
        );
        let open = Forecast { high_s: None, ..f };
        assert_eq!(
            open.carried_forward(1_001_500, second),
            Some(open),
            "one late sample"
        );
        assert!(
            open.carried_forward(1_001_501, second).is_none(),
            "two samples: not carried"
        );
        assert!(
            open.carried_forward(1_002_000, 2 * second).is_some(),
            "counted in the interval given"
        );
    }

    #[test]
    fn no_forecast_without_growth_or_beyond_the_horizon() {
        assert!(forecast(0, Room::flat(1 << 30), Rate::exact(0.0), 0.0, 1.0).is_none());
        assert!(forecast(0, Room::flat(1 << 30), Rate::exact(-5.0), 0.0, 1.0).is_none());
        assert!(forecast(0, Room::flat(1 << 30), Rate::exact(f64::NAN), 0.0, 1.0).is_none());
        assert!(forecast(0, Room::flat(u64::MAX), Rate::exact(1.0), 0.0, 1.0).is_none());
        // Full already: due now.
        let f = forecast(5, Room::flat(0), Rate::exact(1.0), 10.0, 1.0).unwrap();
        assert_eq!((f.low_s, f.eta_s), (0.0, 0.0));
    }

    #[test]
    fn a_sawtooth_next_door_makes_the_peaks_the_central_estimate() {
        // 38 GiB free now; a neighbour peaks 8 GiB higher and dips 4 GiB
        // lower every few seconds: the peaks reach the top at 30 s, the
        // troughs at 42 s.
        let room = Room::ordered(38 << 30, 30 << 30, 42 << 30);
        let f = forecast(0, room, Rate::exact(GIB), GIB, 1.0).unwrap();
        assert_eq!((f.low_s, f.eta_s, f.high_s), (29.0, 30.0, Some(43.0)));
        // Out of order rooms are put in order.
        let room = Room::ordered(10 << 30, 20 << 30, 5 << 30);
        assert_eq!(room, Room::flat(10 << 30));
    }

    #[test]
    fn a_steady_forecast_is_shown_after_the_hold_a_receding_one_never() {
        let mut st = Steady::default();
        let shown: Vec<bool> = (0..20u64)
            .map(|i| {
                let t = i * 1000;
                // Full at 100 s, whatever the time.
                let free = (100 - i) << 30;
                let f = forecast(t, Room::flat(free), Rate::exact(GIB), 0.0, 1.0);
                st.update(f, 10_000, 1000).is_some()
            })
            .collect();
        assert!(shown[..10].iter().all(|s| !s) && shown[10..].iter().all(|s| *s));
        // A break starts the hold again.
        assert!(st.update(None, 10_000, 1000).is_none());
        let f = forecast(20_000, Room::flat(80 << 30), Rate::exact(GIB), 0.0, 1.0);
        assert!(st.update(f, 10_000, 1000).is_none());
        // The predicted moment moving away 0.5 s per second: never shown.
        let mut st = Steady::default();
        for i in 0..60u64 {
            let free = (50 + i / 2) << 30;
            let f = forecast(i * 1000, Room::flat(free), Rate::exact(GIB), 0.0, 1.0);
            assert!(st.update(f, 10_000, 1000).is_none(), "shown at {i}");
        }
        // Time going back starts again, without a panic.
        let f = forecast(5_000, Room::flat(1 << 30), Rate::exact(GIB), 0.0, 1.0);
        assert!(st.update(f, 10_000, 1000).is_none());
    }

    #[test]
    fn at_risk_a_range_before_the_last_one_is_joined_to_it() {
        let at = |made_ms: Millis, low_s: f64, high_s: f64| Forecast {
            made_ms,
            room: Room::flat(0),
            rate: Rate::exact(GIB),
            eta_s: low_s,
            low_s,
            high_s: Some(high_s),
        };
        // The last sample: 9–45 s from 43 s (52–88 s). A spike: 0–2.4 s
        // from 44 s, wholly before 52 s: one range, 44–88 s.
        let before = at(43_000, 9.0, 45.0);
        let j = at(44_000, 0.0, 2.4).joined_with(&before);
        assert_eq!(j.range_ms(), (44_000, Some(88_000)));
        assert_eq!(j.low_s, 0.0);
        // Overlapping ranges stay as they are (the range may narrow).
        let j = at(44_000, 0.0, 20.0).joined_with(&before);
        assert_eq!(j.high_s, Some(20.0));
        // A later latest end is kept; an open one is left open.
        let j = at(44_000, 50.0, 90.0).joined_with(&before);
        assert_eq!(j.high_s, Some(90.0));
        let open = Forecast {
            high_s: None,
            ..before
        };
        assert_eq!(at(44_000, 0.0, 2.4).joined_with(&open).high_s, Some(2.4));
    }
}
