//! A forecast as people read it: "~2m10s (1m50s–2m20s)", seconds from a
//! moment (the time on screen, or when it was made), rounded as precisely
//! as a forecast is. The dashboard, the events, the score tables and the
//! fleet all write a forecast this one way.

use crate::analysis::Forecast;
use crate::model::Millis;

/// A forecast as shown: seconds from the time on screen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Eta {
    pub low_s: f64,
    pub eta_s: f64,
    /// `None`: growth may stop before it is full.
    pub high_s: Option<f64>,
}

impl Eta {
    /// "~2m10s (1m50s–2m20s)", or "~2m10s (≥1m50s)" when it may not fill;
    /// "≤44s" where the estimate rounds to nought.
    /// Rounded to a step that grows with the time (1 s under a minute, 10 s
    /// under ten, then minutes), as precise as a forecast is, and steady on
    /// screen.
    pub fn describe(&self) -> String {
        use crate::model::units::duration_short as d;
        let step = |s: f64| -> f64 {
            if s < 60.0 {
                1.0
            } else if s < 600.0 {
                10.0
            } else if s < 3600.0 {
                60.0
            } else {
                600.0
            }
        };
        let r = |s: f64, f: fn(f64) -> f64| (f(s / step(s)) * step(s)) as u64;
        let eta = r(self.eta_s, f64::round);
        let low = d(r(self.low_s, f64::floor));
        match self.high_s {
            // "~0s" would read as "now" for a job that may run on for its
            // whole range (the next transient on top may not fit, or the
            // baseline reach the top at the slow end): the range's end.
            Some(h) if eta == 0 => format!("≤{}", d(r(h, f64::ceil))),
            Some(h) => format!("~{} ({low}–{})", d(eta), d(r(h, f64::ceil))),
            None => format!("~{} (≥{low})", d(eta)),
        }
    }

    /// "~2m10s": the estimate alone, rounded as [`Eta::describe`] rounds
    /// it, so the short and long forms never disagree.
    pub fn describe_short(&self) -> String {
        let full = self.describe();
        full.split(' ').next().unwrap_or(&full).to_owned()
    }

    /// Sure to be full within `secs`: even the latest end is sooner.
    pub fn surely_within(&self, secs: f64) -> bool {
        self.high_s.is_some_and(|h| h < secs)
    }

    pub(crate) fn of(f: &Forecast, now_ms: Millis) -> Eta {
        let age = now_ms.saturating_sub(f.made_ms) as f64 / 1000.0;
        Eta {
            low_s: (f.low_s - age).max(0.0),
            eta_s: (f.eta_s - age).max(0.0),
            high_s: f.high_s.map(|h| (h - age).max(0.0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_forecast_rounds_as_the_long_one() {
        let e = Eta {
            low_s: 160.0,
            eta_s: 201.0,
            high_s: Some(240.0),
        };
        assert_eq!(e.describe(), "~3m20s (2m40s–4m00s)");
        assert_eq!(e.describe_short(), "~3m20s");
    }

    #[test]
    fn a_forecast_whose_estimate_rounds_to_nought_says_its_latest_end() {
        // The next transient may not fit now, but the job may run on for 44 s
        // (`twentieth/02` read "~0s (0s–32s)" for 25 s before its OOM).
        let e = Eta {
            low_s: 0.0,
            eta_s: 0.4,
            high_s: Some(43.2),
        };
        assert_eq!(e.describe(), "≤44s");
        assert_eq!(e.describe_short(), "≤44s");
        let f = Forecast {
            made_ms: 0,
            room: crate::analysis::Room::flat(0),
            rate: crate::analysis::Rate {
                bps: 1.0,
                low: 1.0,
                high: 1.0,
            },
            eta_s: 0.4,
            low_s: 0.0,
            high_s: Some(43.6),
        };
        assert_eq!(f.label(), "≤44s");
        // Open-ended, or an estimate of a second: as before.
        assert_eq!(Eta { high_s: None, ..e }.describe(), "~0s (≥0s)");
        assert_eq!(Forecast { eta_s: 0.6, ..f }.label(), "~1s (0s–44s)");
    }
}
