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

    pub fn of(f: &Forecast, now_ms: Millis) -> Eta {
        let age = now_ms.saturating_sub(f.made_ms) as f64 / 1000.0;
        Eta {
            low_s: (f.low_s - age).max(0.0),
            eta_s: (f.eta_s - age).max(0.0),
            high_s: f.high_s.map(|h| (h - age).max(0.0)),
        }
    }
}
