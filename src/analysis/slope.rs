//! The robust growth rate of one memory series: Theil's incomplete method
//! over a sliding time window.
//!
//! The window holds at most [`MAX_POINTS`] points (older points fall out by
//! age, faster samples are thinned to one per `span / MAX_POINTS`), so one
//! estimate costs O(n) with n ≤ 64 whatever the sampling rate. The points
//! are split in an older and a newer half and paired (i, i + n/2); the rate
//! is the median of those n/2 slopes. The pairs share no point, so under
//! independent noise their slopes are independent and the distribution-free
//! confidence interval of a median (order statistics of a binomial) applies:
//! that interval is the `low..high` range. A sawtooth or a plateau with
//! noise gives slopes of both signs and a wide range; a steady leak gives a
//! tight one.

use std::collections::VecDeque;
use std::time::Duration;

use serde::Serialize;

use crate::model::Millis;

/// Most points one window keeps (and so the most work one estimate does).
pub const MAX_POINTS: usize = 64;

/// Fewest points an estimate is made from.
pub const MIN_POINTS: usize = 4;

/// z of the two-sided 90 % confidence interval of the median slope.
const Z_90: f64 = 1.645;

/// A rate in bytes per second with its confidence range.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rate {
    /// Median slope, bytes/s.
    pub bps: f64,
    /// Lower end of the 90 % confidence interval, bytes/s.
    pub low: f64,
    /// Upper end, bytes/s.
    pub high: f64,
}

impl Rate {
    /// A rate known exactly (the range is the point).
    pub fn exact(bps: f64) -> Rate {
        Rate {
            bps,
            low: bps,
            high: bps,
        }
    }

    /// The range widened by `by` bytes/s each way (not below 0 for `by`).
    pub fn widen(self, by: f64) -> Rate {
        let by = if by.is_finite() { by.max(0.0) } else { 0.0 };
        Rate {
            bps: self.bps,
            low: self.low - by,
            high: self.high + by,
        }
    }

    /// Sum of independent rates (the ranges add; a conservative bound).
    pub fn plus(self, o: Rate) -> Rate {
        Rate {
            bps: self.bps + o.bps,
            low: self.low + o.low,
            high: self.high + o.high,
        }
    }
}

/// What one window says about its series.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub rate: Rate,
    /// Points used.
    pub n: usize,
    /// Seconds from the oldest to the newest point.
    pub span_s: f64,
    /// Interquartile range of the residuals around the fitted line, bytes:
    /// near 0 for a line or steps, about half the amplitude for a sawtooth.
    pub spread: f64,
    /// Noise of one reading, bytes: 1.4826 × the median absolute deviation
    /// of the point-to-point changes, over √2. Steady growth (even in
    /// steps) has none.
    pub noise: f64,
    /// The smaller of the largest fall and the largest rise within the
    /// window, bytes: 0 for anything monotonic (a leak, a fill, a kink from
    /// flat to growing), about the amplitude for a sawtooth.
    pub swing: f64,
    /// Mean value in the window, bytes.
    pub level: f64,
    /// Largest rise between two consecutive points, bytes (the allocation
    /// step seen at this sampling rate).
    pub max_step: f64,
    /// Longest time between two consecutive points, seconds.
    pub max_gap_s: f64,
}

impl Estimate {
    /// How far the scatter of the readings around the line (allocation
    /// steps between samples, jitter) can move a slope over half the
    /// window, bytes/s: `spread / (span / 2)`.
    pub fn scatter_rate(&self) -> f64 {
        if self.span_s > 0.0 {
            self.spread / (self.span_s / 2.0)
        } else {
            0.0
        }
    }
}

/// A sliding window of (time, value) points.
#[derive(Clone, Debug)]
pub struct Window {
    points: VecDeque<(Millis, f64)>,
    span_ms: u64,
    min_gap_ms: u64,
}

impl Window {
    /// A window `span` long (at least 1 ms).
    pub fn new(span: Duration) -> Window {
        let span_ms = (span.as_millis() as u64).max(1);
        Window {
            points: VecDeque::with_capacity(MAX_POINTS),
            span_ms,
            min_gap_ms: span_ms / MAX_POINTS as u64,
        }
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The newest point.
    pub fn last(&self) -> Option<(Millis, f64)> {
        self.points.back().copied()
    }

    /// Adds a point. A point not newer than the newest one (clock stepped
    /// back, duplicate snapshot) or not finite is ignored and `false`
    /// returned. A point closer than `span / MAX_POINTS` to the one before
    /// the newest replaces the newest, so fast sampling is thinned rather
    /// than shortening the window.
    pub fn push(&mut self, t_ms: Millis, v: f64) -> bool {
        if !v.is_finite() {
            return false;
        }
        if let Some(&(last_t, _)) = self.points.back() {
            if t_ms <= last_t {
                return false;
            }
            let before = self
                .points
                .len()
                .checked_sub(2)
                .and_then(|i| self.points.get(i));
            if let Some(&(prev_t, _)) = before
                && t_ms - prev_t < self.min_gap_ms
            {
                self.points.pop_back();
            }
        }
        self.points.push_back((t_ms, v));
        let oldest = t_ms.saturating_sub(self.span_ms);
        while self.points.front().is_some_and(|&(t, _)| t < oldest) {
            self.points.pop_front();
        }
        while self.points.len() > MAX_POINTS {
            self.points.pop_front();
        }
        true
    }

    /// Where the lowest readings are at `t_ms` if everything has grown at
    /// `rate_bps` since it was read: min over the window of `v + rate × age`.
    pub fn floor_at(&self, t_ms: Millis, rate_bps: f64) -> Option<f64> {
        let r = if rate_bps.is_finite() {
            rate_bps.max(0.0)
        } else {
            0.0
        };
        self.points
            .iter()
            .map(|&(t, v)| v + r * t_ms.saturating_sub(t) as f64 / 1000.0)
            .reduce(f64::min)
    }

    /// The average change per second over the last `span_ms` (from the
    /// newest point at least that old, else the oldest); `None` with fewer
    /// than two points.
    pub fn recent_rate(&self, span_ms: u64) -> Option<f64> {
        let &(t1, v1) = self.points.back()?;
        let &(t0, v0) = self
            .points
            .iter()
            .rev()
            .find(|(t, _)| t1.saturating_sub(*t) >= span_ms)
            .or_else(|| self.points.front())?;
        (t1 > t0).then(|| (v1 - v0) * 1000.0 / (t1 - t0) as f64)
    }

    /// The highest value in the window.
    pub(crate) fn max(&self) -> Option<f64> {
        self.points.iter().map(|p| p.1).reduce(f64::max)
    }

    /// Drops every point.
    pub fn clear(&mut self) {
        self.points.clear();
    }

    /// The rate and shape of the series in the window; `None` with fewer
    /// than [`MIN_POINTS`] points.
    pub fn estimate(&self) -> Option<Estimate> {
        let n = self.points.len();
        if n < MIN_POINTS {
            return None;
        }
        let t0 = self.points.front()?.0;
        let mut ts = [0.0f64; MAX_POINTS];
        let mut vs = [0.0f64; MAX_POINTS];
        let mut work = [0.0f64; MAX_POINTS];
        let mut max_step = 0.0f64;
        let mut max_gap_s = 0.0f64;
        // Largest fall from a running maximum and rise from a running minimum.
        let (mut hi, mut lo) = (f64::NEG_INFINITY, f64::INFINITY);
        let (mut fall, mut rise) = (0.0f64, 0.0f64);
        for (i, &(t, v)) in self.points.iter().enumerate() {
            ts[i] = (t - t0) as f64 / 1000.0;
            vs[i] = v;
            if i > 0 {
                max_step = max_step.max(v - vs[i - 1]);
                max_gap_s = max_gap_s.max(ts[i] - ts[i - 1]);
                work[i - 1] = v - vs[i - 1];
            }
            hi = hi.max(v);
            lo = lo.min(v);
            fall = fall.max(hi - v);
            rise = rise.max(v - lo);
        }
        let d = &mut work[..n - 1];
        let mid = median(d);
        for x in d.iter_mut() {
            *x = (*x - mid).abs();
        }
        let noise = 1.4826 * median(d) / std::f64::consts::SQRT_2;
        let rate = theil_incomplete(&ts[..n], &vs[..n])?;
        // Residuals around the line, up to its intercept (the interquartile
        // range does not depend on it).
        let mut sum = 0.0;
        for i in 0..n {
            work[i] = vs[i] - rate.bps * ts[i];
            sum += vs[i] / n as f64;
        }
        let (q1, q3) = quartiles(&mut work[..n]);
        let level = sum;
        let est = Estimate {
            rate,
            n,
            span_s: ts[n - 1],
            spread: (q3 - q1).max(0.0),
            noise,
            swing: fall.min(rise),
            level,
            max_step,
            max_gap_s,
        };
        est.is_finite().then_some(est)
    }
}

impl Estimate {
    fn is_finite(&self) -> bool {
        [
            self.rate.bps,
            self.rate.low,
            self.rate.high,
            self.span_s,
            self.spread,
            self.noise,
            self.swing,
            self.level,
            self.max_step,
            self.max_gap_s,
        ]
        .iter()
        .all(|x| x.is_finite())
    }
}

/// Theil's incomplete method: the median of the slopes of the disjoint pairs
/// (i, i + ⌈n/2⌉), with the 90 % order-statistic confidence interval of that
/// median. `ts` must be strictly increasing (seconds); at most
/// [`MAX_POINTS`] points are read. `None` with fewer than 2 points.
pub fn theil_incomplete(ts: &[f64], vs: &[f64]) -> Option<Rate> {
    let n = ts.len().min(vs.len()).min(MAX_POINTS);
    if n < 2 {
        return None;
    }
    let h = n.div_ceil(2);
    let mut slopes = [0.0f64; MAX_POINTS];
    let mut m = 0;
    for i in 0..n - h {
        let dt = ts[i + h] - ts[i];
        if dt > 0.0 {
            let s = (vs[i + h] - vs[i]) / dt;
            if s.is_finite() {
                slopes[m] = s;
                m += 1;
            }
        }
    }
    if m == 0 {
        return None;
    }
    // At most 32 slopes: sorting them is as cheap as three selections.
    let s = &mut slopes[..m];
    s.sort_unstable_by(f64::total_cmp);
    let bps = if m % 2 == 1 {
        s[m / 2]
    } else {
        s[m / 2 - 1] / 2.0 + s[m / 2] / 2.0
    };
    // Order statistics k and m-1-k bound the median with ~90 % coverage.
    let k = ((m as f64 - Z_90 * (m as f64).sqrt()) / 2.0).floor();
    let k = if k < 0.0 { 0 } else { k as usize };
    let k = k.min((m - 1) / 2);
    Some(Rate {
        bps,
        low: s[k].min(bps),
        high: s[m - 1 - k].max(bps),
    })
}

/// The first and third quartiles (nearest rank); reorders `xs`. `(0, 0)`
/// for an empty slice.
pub fn quartiles(xs: &mut [f64]) -> (f64, f64) {
    let n = xs.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    let k1 = ((n - 1) as f64 * 0.25).round() as usize;
    let k3 = ((n - 1) as f64 * 0.75).round() as usize;
    let (_, q1, right) = xs.select_nth_unstable_by(k1, f64::total_cmp);
    let q1 = *q1;
    // Everything right of k1 is >= q1: the third quartile is among them.
    let q3 = if k3 > k1 {
        *right.select_nth_unstable_by(k3 - k1 - 1, f64::total_cmp).1
    } else {
        q1
    };
    (q1, q3)
}

/// The k-th smallest value (0-based); reorders `xs`. `xs` must not be empty.
fn select(xs: &mut [f64], k: usize) -> f64 {
    let k = k.min(xs.len() - 1);
    *xs.select_nth_unstable_by(k, f64::total_cmp).1
}

/// Median (mean of the two middle values for an even count); reorders `xs`.
/// 0 for an empty slice.
pub fn median(xs: &mut [f64]) -> f64 {
    let n = xs.len();
    if n == 0 {
        return 0.0;
    }
    let hi = select(xs, n / 2);
    if n % 2 == 1 {
        return hi;
    }
    // After the selection every value left of n/2 is <= hi.
    let lo = xs[..n / 2]
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    lo / 2.0 + hi / 2.0
}

/// The q-quantile (nearest rank, q in 0..=1); reorders `xs`. 0 for an empty
/// slice.
pub fn quantile(xs: &mut [f64], q: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let k = (q.clamp(0.0, 1.0) * (xs.len() - 1) as f64).round() as usize;
    select(xs, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: f64 = 1024.0 * 1024.0;

    fn window_of(span_s: u64, f: impl Fn(f64) -> f64, n: u64, dt_ms: u64) -> Window {
        let mut w = Window::new(Duration::from_secs(span_s));
        for i in 0..n {
            let t = 1_000_000 + i * dt_ms;
            w.push(t, f(i as f64 * dt_ms as f64 / 1000.0));
        }
        w
    }

    /// splitmix64 noise in [-1, 1).
    fn noise(i: u64) -> f64 {
        let mut z = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(17);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    #[test]
    fn a_line_gives_its_slope_with_no_spread() {
        let w = window_of(30, |t| 5e9 + 128.0 * MIB * t, 31, 1000);
        let e = w.estimate().unwrap();
        assert!((e.rate.bps - 128.0 * MIB).abs() < 1.0, "{e:?}");
        assert!((e.rate.high - e.rate.low).abs() < 1.0);
        assert!(e.spread < 1.0 && e.noise < 1.0 && e.swing == 0.0);
        assert!((e.max_step - 128.0 * MIB).abs() < 1.0);
        assert_eq!(e.n, 31);
        assert!((e.span_s - 30.0).abs() < 1e-9);
    }

    #[test]
    fn noise_and_outliers_do_not_move_the_rate_much() {
        // 10 MiB/s under ±200 MiB noise and a 20 GiB spike every 7th point.
        let f = |t: f64| {
            let i = t as u64;
            let spike = if i % 7 == 3 { 20e9 } else { 0.0 };
            40e9 + 10.0 * MIB * t + 200.0 * MIB * noise(i) + spike
        };
        let e = window_of(60, f, 61, 1000).estimate().unwrap();
        assert!(
            (e.rate.bps - 10.0 * MIB).abs() < 5.0 * MIB,
            "rate {} MiB/s",
            e.rate.bps / MIB
        );
        assert!(e.rate.low <= e.rate.bps && e.rate.bps <= e.rate.high);
        assert!(e.rate.low < 10.0 * MIB && e.rate.high > 10.0 * MIB);
    }

    #[test]
    fn a_sawtooth_is_flat_with_a_wide_spread() {
        // 2.4 s period, 26 GiB amplitude, sampled at 1 Hz.
        let f = |t: f64| {
            let p = (t % 2.4) / 2.4;
            let frac = if p < 0.7 { p / 0.7 } else { (1.0 - p) / 0.3 };
            50e9 + 26e9 * frac
        };
        let e = window_of(30, f, 31, 1000).estimate().unwrap();
        assert!(e.rate.low < 0.0 && e.rate.high > 0.0, "{e:?}");
        assert!(e.spread > 5e9, "spread {}", e.spread);
        assert!(e.swing > 15e9 && e.noise > 1e9, "{e:?}");
    }

    #[test]
    fn old_points_fall_out_and_fast_points_are_thinned() {
        let mut w = Window::new(Duration::from_secs(10));
        for i in 0..100u64 {
            w.push(i * 1000, i as f64);
        }
        assert_eq!(w.len(), 11);
        assert_eq!(w.last(), Some((99_000, 99.0)));
        // 1 kHz for 10 s never keeps more than MAX_POINTS.
        let mut w = Window::new(Duration::from_secs(10));
        for i in 0..10_000u64 {
            w.push(i, i as f64);
        }
        assert!(w.len() <= MAX_POINTS);
        assert_eq!(w.last(), Some((9_999, 9_999.0)));
        let e = w.estimate().unwrap();
        assert!((e.rate.bps - 1000.0).abs() < 1e-6, "{e:?}");
    }

    #[test]
    fn stale_and_non_finite_points_are_ignored() {
        let mut w = Window::new(Duration::from_secs(10));
        assert!(w.push(5_000, 1.0));
        assert!(!w.push(5_000, 2.0));
        assert!(!w.push(4_000, 2.0));
        assert!(!w.push(6_000, f64::NAN));
        assert_eq!(w.len(), 1);
        assert!(w.estimate().is_none());
        w.clear();
        assert!(w.is_empty());
    }

    #[test]
    fn median_and_quantile_edge_cases() {
        assert_eq!(median(&mut []), 0.0);
        assert_eq!(median(&mut [3.0]), 3.0);
        assert_eq!(median(&mut [4.0, 1.0]), 2.5);
        assert_eq!(median(&mut [5.0, 1.0, 3.0]), 3.0);
        assert_eq!(quantile(&mut [], 0.5), 0.0);
        assert_eq!(quantile(&mut [1.0, 2.0, 3.0, 4.0, 5.0], 0.25), 2.0);
        assert_eq!(quantile(&mut [1.0, 2.0, 3.0, 4.0, 5.0], 7.0), 5.0);
        assert_eq!(quartiles(&mut []), (0.0, 0.0));
        assert_eq!(quartiles(&mut [7.0]), (7.0, 7.0));
        assert_eq!(quartiles(&mut [5.0, 4.0, 3.0, 2.0, 1.0]), (2.0, 4.0));
        let mut v: Vec<f64> = (0..64).rev().map(f64::from).collect();
        assert_eq!(quartiles(&mut v), (16.0, 47.0));
        assert!(theil_incomplete(&[1.0], &[1.0]).is_none());
        assert!(theil_incomplete(&[1.0, 1.0], &[1.0, 5.0]).is_none());
        let r = theil_incomplete(&[0.0, 2.0], &[0.0, 4.0]).unwrap();
        assert_eq!(r, Rate::exact(2.0));
    }
}
