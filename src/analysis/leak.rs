//! The leak flag: a process whose memory *baseline* keeps rising, window
//! after window, for at least `leak_min_duration` at `leak_min_rate` or
//! faster.
//!
//! The series is cut into buckets of `leak_min_duration / 4` on a grid that
//! starts one sampling interval (plus a tenth, for jitter) before the first
//! sample: the growth began after the last sample that did not show the
//! process. A bucket's
//! *baseline* is its minimum: a training sawtooth's troughs, a leak's
//! oldest value. When a bucket closes, spans of the last k = 4, 8, 16, 32,
//! 64 buckets are tested; each span is split into 4 consecutive windows whose
//! baselines are the minima of their buckets. A span shows a leak when
//!
//! 1. the Theil slope of the bucket baselines is at least `leak_min_rate`;
//! 2. every window's baseline rises over the one before by at least a
//!    quarter of `leak_min_rate` × the time between them, and by at least a
//!    third of the series' volatility `v` (the median in-bucket range left
//!    after removing the trend): a sawtooth of amplitude A moves sampled
//!    troughs by less than A, so three rises of A/3 each cannot come from
//!    sampling alone, while a single jump (an optimizer allocating its
//!    state) rises in one window only;
//! 3. the growth does not decelerate: the last rise is at least 70 % of the
//!    first, and the span's rate at least 70 % of the rate over the three
//!    spans' worth of buckets before it (or as much as there is): a KV
//!    cache filling towards a plateau slows down, a leak does not. With
//!    4-bucket spans this tells a fill with a time constant up to ~110 s
//!    from a leak (once ~80 s of the fill are seen). A *jump* (a rise between
//!    windows larger than the others together: weights or optimizer state
//!    allocated at once, or loaded over a few seconds) is not growth. In the
//!    first rise it is set aside: the rate is taken from the second window
//!    on and, over the time those three windows cover (a bucket a gap left
//!    out included), must add up to `min_rate` × `min_duration`, and the
//!    last rise must be at least the one before (a fill slowing down at any
//!    pace fails). In a later rise the span waits
//!    for the next one. So a leak that starts with a jump is flagged
//!    `leak_min_duration` after the jump where its rises hold steady and it
//!    grows at 4/3 of `min_rate` or more; otherwise after the next bucket
//!    that does not hold the jump, as without this rule;
//! 4. the baseline reaches a new high: above every bucket baseline before
//!    the span (a slow sawtooth whose ramps outlast `leak_min_duration`
//!    climbs back to where it was; a leak does not). The first ramp of such
//!    a sawtooth cannot be told from a leak and is flagged.
//!
//! Small spans flag a clean leak after `leak_min_duration`; large spans let
//! a slow climb under a big sawtooth accumulate enough rise to stand out.
//! The flag clears (hysteresis) when the baseline rate over the span that
//! raised it falls below half of `leak_min_rate`.

use std::collections::VecDeque;
use std::time::Duration;

use serde::Serialize;

use crate::analysis::envelope::Rises;
use crate::analysis::slope::{MAX_POINTS, Rate, median, theil_incomplete};
use crate::model::Millis;

/// Windows a tested span is split into.
const WINDOWS: usize = 4;
/// Span lengths tested, in buckets.
const SPANS: [usize; 5] = [4, 8, 16, 32, 64];
/// Buckets kept: the longest span and the one before it.
const MAX_BUCKETS: usize = 2 * 64;
/// The growth may slow to this share and still count as a leak.
const DECEL: f64 = 0.7;
/// After a jump in a span's first rise (rule 3), the last rise must be at
/// least this share of the one before it: with three windows seen after
/// the jump, growth that slows at all is taken for a fill (weights, then a
/// cache). 0.9 let the simulator's inference servers with time constants
/// over ~47 s through (e^(-5/47) ≈ 0.9), 0.85 over ~31 s. The price: where
/// sampling jitter makes a steady leak's last rise the smaller one, the
/// flag waits for the next span, 5 s later, as it did before jumps were
/// set aside.
const DECEL_AFTER_JUMP: f64 = 1.0;
/// Growth over a span is compared with the growth over up to this many
/// spans' worth of buckets before it.
const PRIOR_SPANS: usize = 3;
/// Each window must rise by this share of `min_rate` × its length.
const RISE_FLOOR: f64 = 0.25;

/// A process whose memory (or tensors) has reached no new high for three
/// times the usual gap between its highs, and for at least this long, is
/// not leaking now: its flag is not shown (`Rises::current_within`; the
/// forecaster's floor is `Rises::STALE_MIN`, 10 s). A KV cache whose
/// segments came a second apart, then stopped, was flagged 8 s into the
/// pause (`thirtyseventh/05`); 5 s delayed one leak's flag
/// (`twentyfifth/06`), and 6–7 s changed nothing else on the corpus. The
/// tensors' flag took the same floor later (session 30), with no figure
/// on the corpus moved.
const LEAK_STALE_MIN: Duration = Duration::from_secs(7);

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeakParams {
    /// Bytes/s.
    pub min_rate: f64,
    pub min_duration: Duration,
    /// The sampling interval: how long before its first sample a series may
    /// have begun.
    pub interval: Duration,
}

impl Default for LeakParams {
    fn default() -> Self {
        LeakParams {
            min_rate: 4.0 * 1024.0 * 1024.0,
            min_duration: Duration::from_secs(20),
            interval: Duration::from_secs(1),
        }
    }
}

/// A raised leak flag.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LeakFlag {
    /// When the flag was raised.
    pub since_ms: Millis,
    /// Where the span that raised it began (the growth is at least this old).
    pub onset_ms: Millis,
    /// Growth of the baseline, bytes/s, over the span (updated while raised).
    pub rate: Rate,
    /// Which figure of the process grew.
    pub seen_in: LeakSeen,
}

/// Which figure of a process a leak flag was raised on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LeakSeen {
    /// Its memory as the driver counts it.
    Memory,
    /// Its tensors, from the figures its PyTorch allocator publishes (the
    /// driver's figure is the allocator's cache, which may hide them).
    Tensors,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeakChange {
    Raised,
    Cleared,
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    index: u64,
    t_first: Millis,
    t_last: Millis,
    min: f64,
    t_min: Millis,
    max: f64,
}

impl Bucket {
    fn new(index: u64, t: Millis, v: f64) -> Bucket {
        Bucket {
            index,
            t_first: t,
            t_last: t,
            min: v,
            t_min: t,
            max: v,
        }
    }

    fn add(&mut self, t: Millis, v: f64) {
        self.t_last = t;
        if v < self.min {
            self.min = v;
            self.t_min = t;
        }
        self.max = self.max.max(v);
    }
}

/// The leak detector of one series.
#[derive(Clone, Debug)]
pub struct LeakDetector {
    p: LeakParams,
    bucket_ms: u64,
    onset_ms: Option<Millis>,
    last_t: Option<Millis>,
    open: Option<Bucket>,
    closed: VecDeque<Bucket>,
    flag: Option<LeakFlag>,
    /// Buckets in the span that raised the flag.
    flag_k: usize,
}

impl LeakDetector {
    pub fn new(p: &LeakParams) -> LeakDetector {
        let min_ms = (p.min_duration.as_millis() as u64).max(4);
        LeakDetector {
            p: *p,
            bucket_ms: min_ms.div_ceil(WINDOWS as u64),
            onset_ms: None,
            last_t: None,
            open: None,
            closed: VecDeque::with_capacity(MAX_BUCKETS),
            flag: None,
            flag_k: SPANS[0],
        }
    }

    pub fn flag(&self) -> Option<&LeakFlag> {
        self.flag.as_ref()
    }

    /// The flag, while the series it was raised on (`rises`, fed the same
    /// readings) still reaches new highs at `t` ([`LEAK_STALE_MIN`]): the
    /// one rule for the driver's figure and the tensors'.
    pub(crate) fn flag_while_rising(&self, rises: &Rises, t: Millis) -> Option<&LeakFlag> {
        self.flag()
            .filter(|_| rises.current_within(t, LEAK_STALE_MIN))
    }

    /// The flag as [`LeakDetector::flag_while_rising`], to show at `t`:
    /// one not shown since it was raised (`shown` false) and raised before
    /// `t` only where the buckets closed by `t` would raise it afresh. A
    /// raised flag clears only below half of `min_rate`, so a KV cache
    /// flagged in the first, straight seconds of its fill stays flagged
    /// while it slows; hidden meanwhile (no new high, tensors levelling
    /// off), it came out 5–24 s after its raise on a later segment, on
    /// evidence the fill had since outgrown (`thirteenth/04`,
    /// `thirtyninth/02`, `twentyninth/01`: false alarms, session 34). A
    /// flag once shown stays as before (hidden and shown again as its
    /// staircase rises).
    pub(crate) fn flag_to_show(&self, rises: &Rises, t: Millis, shown: bool) -> Option<&LeakFlag> {
        self.flag_while_rising(rises, t)
            .filter(|f| shown || f.since_ms >= t || self.raises_afresh(t))
    }

    /// Whether the buckets closed by `now` would raise the flag afresh.
    fn raises_afresh(&self, now: Millis) -> bool {
        SPANS
            .iter()
            .take_while(|&&k| k <= self.closed.len())
            .any(|&k| self.test_span(k, now).is_some())
    }

    /// Feeds one point. Points not newer than the last, or not finite, are
    /// ignored; a gap longer than `min_duration` starts the history afresh
    /// (and clears a raised flag: nothing is known about the gap).
    pub fn observe(&mut self, t_ms: Millis, v: f64) -> Option<LeakChange> {
        if !v.is_finite() || self.last_t.is_some_and(|l| t_ms <= l) {
            return None;
        }
        let mut change = None;
        if let Some(last) = self.last_t
            && t_ms - last > self.p.min_duration.as_millis() as u64
        {
            self.closed.clear();
            self.open = None;
            self.onset_ms = None;
            if self.flag.take().is_some() {
                change = Some(LeakChange::Cleared);
            }
        }
        self.last_t = Some(t_ms);
        // The series began after the previous sample, which did not show it:
        // at most one interval (and a tenth for sampling jitter) before now.
        let back = self.p.interval.as_millis() as u64 * 11 / 10;
        let onset = *self
            .onset_ms
            .get_or_insert_with(|| t_ms.saturating_sub(back));
        let index = (t_ms - onset) / self.bucket_ms;
        match &mut self.open {
            Some(b) if b.index == index => b.add(t_ms, v),
            slot => {
                if let Some(done) = slot.replace(Bucket::new(index, t_ms, v)) {
                    if self.closed.len() == MAX_BUCKETS {
                        self.closed.pop_front();
                    }
                    self.closed.push_back(done);
                    change = self.evaluate(t_ms).or(change);
                }
            }
        }
        change
    }

    fn evaluate(&mut self, now: Millis) -> Option<LeakChange> {
        if let Some(flag) = &mut self.flag {
            // Over the latest span of the length that raised it. A jump set
            // aside when it was raised has left a 4-bucket span by now; a
            // longer one may still hold it in one Theil pair of several,
            // which the median outvotes.
            let n = self.closed.len();
            let r = baseline_rate(&self.closed, n - self.flag_k.min(n), n);
            match r {
                Some(r) if r.bps >= self.p.min_rate / 2.0 => {
                    flag.rate = r;
                    None
                }
                _ => {
                    self.flag = None;
                    Some(LeakChange::Cleared)
                }
            }
        } else {
            for k in SPANS {
                if k > self.closed.len() {
                    break;
                }
                if let Some(f) = self.test_span(k, now) {
                    self.flag = Some(f);
                    self.flag_k = k;
                    return Some(LeakChange::Raised);
                }
            }
            None
        }
    }

    /// The baseline (minimum, and when) of each of the `WINDOWS` windows of
    /// the `k` buckets from `start`.
    fn window_baselines(&self, start: usize, k: usize) -> Option<[(f64, Millis); WINDOWS]> {
        let per = k / WINDOWS;
        let mut m = [(0.0f64, 0 as Millis); WINDOWS];
        for (j, slot) in m.iter_mut().enumerate() {
            let b = self
                .closed
                .range(start + j * per..start + (j + 1) * per)
                .min_by(|a, b| a.min.total_cmp(&b.min))?;
            *slot = (b.min, b.t_min);
        }
        Some(m)
    }

    /// The time the closed buckets from `from` on cover, gaps included
    /// (a bucket with no sample in it is not in `closed`).
    fn covered_ms(&self, from: usize) -> u64 {
        match (self.closed.get(from), self.closed.back()) {
            (Some(first), Some(last)) => (last.index + 1 - first.index) * self.bucket_ms,
            _ => 0,
        }
    }

    /// Whether the last `k` closed buckets show a leak (module doc).
    fn test_span(&self, k: usize, now: Millis) -> Option<LeakFlag> {
        let n = self.closed.len();
        let start = n - k;
        let onset = self.onset_ms?;
        if self.covered_ms(start) < self.p.min_duration.as_millis() as u64 {
            return None;
        }
        let per = k / WINDOWS;
        let m = self.window_baselines(start, k)?;
        let rises: [f64; WINDOWS - 1] = std::array::from_fn(|j| m[j + 1].0 - m[j].0);
        // Cheap necessary conditions first: most series fail here.
        if !rises.iter().all(|&r| r > 0.0) {
            return None;
        }
        // A leak reaches new highs; a slow sawtooth climbs back to where it
        // was before.
        let earlier_high = self
            .closed
            .range(..start)
            .map(|b| b.min)
            .fold(f64::NEG_INFINITY, f64::max);
        if m[WINDOWS - 1].0 <= earlier_high {
            return None;
        }
        // A jump in the first rise is set aside; after a jump in a later
        // rise the growth cannot be judged yet (too few rises after it): a
        // later span will hold it first.
        let jump = match jump_at(&rises) {
            Some(0) => true,
            Some(_) => return None,
            None => false,
        };
        let from = if jump { start + per } else { start };
        let rate = baseline_rate(&self.closed, from, n)?;
        // After a jump, growth is seen for three windows of four: it must
        // still add up to what `min_duration` at `min_rate` would (the
        // simulator's inference servers grow ~4-6 MiB/s after their
        // weights), which asks 4/3 of `min_rate` of a 4-bucket span.
        let seen_s = self.covered_ms(from) as f64 / 1000.0;
        let need = self.p.min_rate * self.p.min_duration.as_secs_f64();
        if rate.bps < self.p.min_rate || rate.bps * seen_s < need {
            return None;
        }
        // Volatility: the in-bucket range not explained by the trend.
        let mut ranges = [0.0f64; MAX_POINTS];
        for (i, b) in self.closed.range(start..).enumerate() {
            let dur = (b.t_last - b.t_first) as f64 / 1000.0;
            ranges[i] = ((b.max - b.min) - rate.bps.max(0.0) * dur).max(0.0);
        }
        let v = median(&mut ranges[..k]);
        for (j, &rise) in rises.iter().enumerate() {
            let dt = m[j + 1].1.saturating_sub(m[j].1) as f64 / 1000.0;
            let need = (RISE_FLOOR * self.p.min_rate * dt).max(v / (WINDOWS - 1) as f64);
            if rise < need {
                return None;
            }
        }
        let (earliest, decel) = if jump {
            (rises[1], DECEL_AFTER_JUMP)
        } else {
            (rises[0], DECEL)
        };
        if rises[WINDOWS - 2] < decel * earliest {
            return None;
        }
        // The time before: up to three spans' worth, as much as there is.
        let before = (PRIOR_SPANS * k).min(start);
        if before >= 2
            && let Some(prev) = baseline_rate(&self.closed, start - before, start)
            && rate.bps < DECEL * prev.bps
        {
            return None;
        }
        Some(LeakFlag {
            since_ms: now,
            onset_ms: onset + self.closed[from].index * self.bucket_ms,
            rate,
            seen_in: LeakSeen::Memory,
        })
    }
}

/// Which rise between a span's windows is a jump (weights or optimizer
/// state allocated at once, or loaded over a few seconds): one that rises
/// more than all the others together. A jump is not growth (rule 3).
fn jump_at(rises: &[f64; WINDOWS - 1]) -> Option<usize> {
    let total: f64 = rises.iter().sum();
    let (j, &r) = rises.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1))?;
    (r > total - r).then_some(j)
}

/// Theil slope of the baselines of the buckets from `start` up to `end`.
fn baseline_rate(b: &VecDeque<Bucket>, start: usize, end: usize) -> Option<Rate> {
    let k = end.saturating_sub(start).min(MAX_POINTS);
    let t0 = b.get(start)?.t_min;
    let mut ts = [0.0f64; MAX_POINTS];
    let mut vs = [0.0f64; MAX_POINTS];
    for (i, x) in b.range(start..start + k).enumerate() {
        ts[i] = x.t_min.saturating_sub(t0) as f64 / 1000.0;
        vs[i] = x.min;
    }
    // Bucket minima are strictly ordered in time: one per bucket.
    theil_incomplete(&ts[..k], &vs[..k])
}

#[cfg(test)]
mod tests;
