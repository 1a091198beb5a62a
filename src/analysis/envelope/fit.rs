//! The two fits the forecaster makes over a regime's points: Theil–Sen's
//! rate, and the largest step that stays (see [`super::Envelope`]).

use std::collections::VecDeque;

use super::Point;
use crate::analysis::slope::{Rate, quantile};

/// The largest rise between consecutive values of the series' lower
/// envelope (each value replaced by the lowest from it on): the steps that
/// stay, not the spikes that fall back.
pub(super) fn persistent_step(values: impl DoubleEndedIterator<Item = f64>) -> f64 {
    let mut step = 0.0f64;
    let mut later_min = f64::INFINITY;
    for v in values.rev() {
        let here = v.min(later_min);
        if later_min.is_finite() {
            step = step.max(later_min - here);
        }
        later_min = here;
    }
    step
}

/// The share of the series' whole rise (its last value less its lowest)
/// made by its [`persistent_step`]; 0 where it did not rise.
pub(super) fn step_share(values: impl DoubleEndedIterator<Item = f64> + Clone) -> f64 {
    let last = values.clone().next_back().unwrap_or(0.0);
    let whole = last - values.clone().fold(f64::INFINITY, f64::min);
    if whole > 0.0 {
        persistent_step(values) / whole
    } else {
        0.0
    }
}

/// Theil–Sen over pairs at least `min_dt_s` apart (so a staircase's steps
/// average out): the median slope and Sen's 90 % confidence interval for
/// it (ranks `(N ∓ z·√(n(n−1)(2n+5)/18))/2` of the N pairwise slopes,
/// applied as quantiles to the pairs kept), bytes/s.
pub(super) fn theil_sen(points: &VecDeque<Point>, min_dt_s: f64) -> Option<Rate> {
    let mut slopes = Vec::with_capacity(points.len() * points.len() / 2);
    for (i, a) in points.iter().enumerate() {
        for b in points.iter().skip(i + 1) {
            let dt = (b.t - a.t) as f64 / 1000.0;
            if dt >= min_dt_s && dt > 0.0 {
                slopes.push((b.used - a.used) / dt);
            }
        }
    }
    if slopes.len() < 3 {
        return None;
    }
    let n = points.len() as f64;
    let all = n * (n - 1.0) / 2.0;
    let c = 1.645 * (n * (n - 1.0) * (2.0 * n + 5.0) / 18.0).sqrt();
    let half = (c / all / 2.0).min(0.5);
    let bps = quantile(&mut slopes, 0.5);
    let low = quantile(&mut slopes, 0.5 - half);
    let high = quantile(&mut slopes, 0.5 + half);
    Some(Rate { bps, low, high })
}
