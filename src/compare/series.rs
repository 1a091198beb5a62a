//! Bounded streaming accumulators for one memory series: the 95th
//! percentile through a histogram ([`Hist`]), the growth rate through a
//! least-squares fit ([`Fit`]), and min/max time buckets for drawing
//! ([`Buckets`]), and [`MemStats`] made of them. None of them grows with
//! the number of samples.

use std::collections::BTreeMap;

use crate::model::Millis;
use crate::model::units::MIB;

/// A histogram of byte values in buckets of `width` bytes (1 MiB to
/// start with), each keeping its count and the largest value it holds.
/// When it holds more than `cap` buckets, neighbours merge and the width
/// doubles: memory is bounded by `cap`, and [`Hist::quantile`] is never
/// below the true quantile and less than [`Hist::width`] above it.
#[derive(Clone, Debug)]
pub(crate) struct Hist {
    width: u64,
    cap: usize,
    /// bucket → (count, largest value).
    cells: BTreeMap<u64, (u64, u64)>,
    n: u64,
}

impl Hist {
    pub(crate) fn new(cap: usize) -> Hist {
        Hist {
            width: MIB,
            cap: cap.max(2),
            cells: BTreeMap::new(),
            n: 0,
        }
    }

    /// The bucket width now: the most a quantile can be above the truth.
    pub(crate) fn width(&self) -> u64 {
        self.width
    }

    pub(crate) fn add(&mut self, v: u64) {
        self.put(v / self.width, 1, v);
        self.n += 1;
        while self.cells.len() > self.cap {
            self.widen();
        }
    }

    fn put(&mut self, bucket: u64, count: u64, max: u64) {
        let c = self.cells.entry(bucket).or_insert((0, 0));
        c.0 += count;
        c.1 = c.1.max(max);
    }

    fn widen(&mut self) {
        self.width = self.width.saturating_mul(2);
        for (b, (count, max)) in std::mem::take(&mut self.cells) {
            self.put(b / 2, count, max);
        }
    }

    /// Adds another histogram's values.
    pub(crate) fn merge(&mut self, other: &Hist) {
        while self.width < other.width {
            self.widen();
        }
        for (&b, &(count, max)) in &other.cells {
            // The other's bucket lies inside one of ours: our width is a
            // multiple of its (both are MiB times a power of two).
            let lo = b.saturating_mul(other.width);
            self.put(lo / self.width, count, max);
        }
        self.n += other.n;
        while self.cells.len() > self.cap {
            self.widen();
        }
    }

    /// The nearest-rank `q` quantile (0 < q ≤ 1): the largest value in the
    /// bucket that holds the sample of rank ⌈q·n⌉. `None` when empty.
    pub(crate) fn quantile(&self, q: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        // (Less a hair: 0.95 × 20 must be rank 19, not 20.)
        let rank = ((q * self.n as f64 - 1e-9).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for &(count, max) in self.cells.values() {
            seen += count;
            if seen >= rank {
                return Some(max);
            }
        }
        self.cells.values().next_back().map(|c| c.1)
    }
}

/// A least-squares line through (seconds, bytes): the growth rate. Sums
/// are kept relative to an origin so that they stay exact enough in f64.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Fit {
    n: f64,
    st: f64,
    sv: f64,
    stt: f64,
    stv: f64,
}

impl Fit {
    /// Adds `v` bytes at `t_s` seconds after the series' origin.
    pub(crate) fn add(&mut self, t_s: f64, v: f64) {
        self.n += 1.0;
        self.st += t_s;
        self.sv += v;
        self.stt += t_s * t_s;
        self.stv += t_s * v;
    }

    pub(crate) fn merge(&mut self, o: &Fit) {
        self.n += o.n;
        self.st += o.st;
        self.sv += o.sv;
        self.stt += o.stt;
        self.stv += o.stv;
    }

    /// Bytes per second; `None` with fewer than two distinct times.
    pub(crate) fn slope(&self) -> Option<f64> {
        let den = self.n * self.stt - self.st * self.st;
        if self.n < 2.0 || den.abs() < 1e-9 * self.n * self.n {
            return None;
        }
        Some((self.n * self.stv - self.st * self.sv) / den)
    }
}

/// Buckets per drawn series at most.
const BUCKETS: u64 = 1000;

/// Min and max of a series in time buckets from `t0`: at most [`BUCKETS`],
/// twice as wide whenever the series outgrows them (spikes survive).
#[derive(Clone, Debug)]
pub(crate) struct Buckets {
    t0: Millis,
    width: Millis,
    /// (bucket, min, max), by bucket.
    cells: Vec<(u64, u64, u64)>,
}

impl Buckets {
    pub(crate) fn new(t0: Millis, width: Millis) -> Buckets {
        Buckets {
            t0,
            width: width.max(1),
            cells: Vec::new(),
        }
    }

    pub(crate) fn add(&mut self, t: Millis, v: u64) {
        let mut i = t.saturating_sub(self.t0) / self.width;
        while i >= BUCKETS {
            self.width = self.width.saturating_mul(2);
            let old = std::mem::take(&mut self.cells);
            for (b, lo, hi) in old {
                self.put(b / 2, lo, hi);
            }
            i = t.saturating_sub(self.t0) / self.width;
        }
        self.put(i, v, v);
    }

    fn put(&mut self, i: u64, lo: u64, hi: u64) {
        match self.cells.last_mut() {
            Some(c) if c.0 == i => {
                c.1 = c.1.min(lo);
                c.2 = c.2.max(hi);
            }
            Some(c) if c.0 > i => {
                let at = self.cells.partition_point(|c| c.0 < i);
                match self.cells.get_mut(at) {
                    Some(c) if c.0 == i => {
                        c.1 = c.1.min(lo);
                        c.2 = c.2.max(hi);
                    }
                    _ => self.cells.insert(at, (i, lo, hi)),
                }
            }
            _ => self.cells.push((i, lo, hi)),
        }
    }

    /// (unix ms, bytes) points: each bucket's min then max, at its middle.
    pub(crate) fn points(&self) -> Vec<(Millis, u64)> {
        let mut out = Vec::with_capacity(2 * self.cells.len());
        for &(i, lo, hi) in &self.cells {
            let t = self.t0 + i * self.width + self.width / 2;
            out.push((t, lo));
            if hi != lo {
                out.push((t, hi));
            }
        }
        out
    }
}

/// Peak, mean, p95, time of the peak and growth of one memory series.
#[derive(Clone, Debug)]
pub(crate) struct MemStats {
    pub(crate) peak: u64,
    pub(crate) peak_at: Millis,
    pub(crate) n: u64,
    sum: f64,
    pub(crate) hist: Hist,
    fit: Fit,
    /// Time origin of the fit.
    origin: Millis,
}

impl MemStats {
    pub(crate) fn new(origin: Millis, cells: usize) -> MemStats {
        MemStats {
            peak: 0,
            peak_at: origin,
            n: 0,
            sum: 0.0,
            hist: Hist::new(cells),
            fit: Fit::default(),
            origin,
        }
    }

    /// A sample: `used` bytes at `t`, and the highest read since the
    /// sample before (`peak`, the fast lane's; counts for the peak only).
    pub(crate) fn add(&mut self, t: Millis, used: u64, peak: u64) {
        let peak = peak.max(used);
        if self.n == 0 || peak > self.peak {
            self.peak = peak;
            self.peak_at = t;
        }
        self.n += 1;
        self.sum += used as f64;
        self.hist.add(used);
        let dt = t as f64 / 1000.0 - self.origin as f64 / 1000.0;
        self.fit.add(dt, used as f64);
    }

    /// Adds a later stretch of the same series.
    pub(crate) fn merge(&mut self, o: &MemStats) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 || o.peak > self.peak {
            self.peak = o.peak;
            self.peak_at = o.peak_at;
        }
        self.n += o.n;
        self.sum += o.sum;
        self.hist.merge(&o.hist);
        // Same origin for every stretch of a series.
        self.fit.merge(&o.fit);
    }

    pub(crate) fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }

    pub(crate) fn p95(&self) -> Option<u64> {
        self.hist.quantile(0.95)
    }

    /// Least-squares slope of `used` over time, bytes per second.
    pub(crate) fn growth(&self) -> Option<f64> {
        self.fit.slope()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p95_is_exact_for_whole_mib_and_at_most_one_mib_high_otherwise() {
        let mut h = Hist::new(4096);
        for v in 1..=100u64 {
            h.add(v * MIB);
        }
        // Nearest rank: the 95th of 100 values.
        assert_eq!(h.quantile(0.95), Some(95 * MIB));
        assert_eq!(h.quantile(1.0), Some(100 * MIB));
        let mut h = Hist::new(4096);
        for v in 0..1000u64 {
            h.add(v * 1000 + 7);
        }
        let truth = 949 * 1000 + 7;
        let got = h.quantile(0.95).unwrap();
        assert!(got >= truth && got - truth < MIB, "{got} vs {truth}");
        assert_eq!(Hist::new(8).quantile(0.95), None);
    }

    #[test]
    fn a_full_histogram_widens_and_keeps_its_error_bound() {
        let mut h = Hist::new(64);
        let vals: Vec<u64> = (0..10_000u64).map(|i| (i * 7919) % 10_000 * MIB).collect();
        for &v in &vals {
            h.add(v);
        }
        assert!(h.cells.len() <= 64);
        assert!(h.width() > MIB);
        let mut sorted = vals.clone();
        sorted.sort_unstable();
        let truth = sorted[9499];
        let got = h.quantile(0.95).unwrap();
        assert!(got >= truth && got - truth < h.width(), "{got} vs {truth}");
        // Merging a finer histogram keeps the count and the bound.
        let mut fine = Hist::new(4096);
        fine.add(3 * MIB);
        h.merge(&fine);
        assert_eq!(h.n, 10_001);
    }

    #[test]
    fn the_fit_finds_the_slope() {
        let mut f = Fit::default();
        for t in 0..10 {
            f.add(t as f64, 100.0 + 5.0 * t as f64);
        }
        assert!((f.slope().unwrap() - 5.0).abs() < 1e-9);
        let mut one = Fit::default();
        one.add(1.0, 3.0);
        assert_eq!(one.slope(), None);
    }

    #[test]
    fn buckets_widen_and_keep_spikes() {
        let mut b = Buckets::new(0, 1000);
        for t in (0..5_000_000u64).step_by(1000) {
            b.add(t, if t == 1_234_000 { 99 } else { 1 });
        }
        assert!(b.cells.len() as u64 <= BUCKETS);
        assert!(b.points().iter().any(|p| p.1 == 99));
    }
}
