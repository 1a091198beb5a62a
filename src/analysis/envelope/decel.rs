//! Whether a regime's growth is slowing down like a fill approaching a
//! plateau, and where that fill levels off (see [`Envelope::deceleration`]).

use std::collections::VecDeque;

use super::{Confirm, Envelope, EnvelopeParams, Point, theil_sen};
use crate::analysis::levelling::still_to_come;
use crate::analysis::slope::Rate;
use crate::model::{MemInfo, Millis};

/// A level closer than this share of the GPU to the memory in use now is
/// not worth saying.
const LEVEL_MIN: f64 = 0.02;

/// The older and newer halves of a regime's last three quarters.
pub(super) struct Halves {
    older: Rate,
    newer: Rate,
    /// The span they cover, s.
    span_s: f64,
    /// The newer half's first point (its index in the regime's points)
    /// where the growth slowed to a new pace: see
    /// [`Envelope::slowed_for_good`], which adds the clock's condition.
    slowed_from: Option<usize>,
}

impl Envelope {
    /// Whether the newer half of the regime's last three quarters grows at
    /// less than `decel` of the older half's rate, surely so (the newer
    /// half's range all below the older's): a cache filling towards a
    /// plateau, not a leak. Only judged once the regime spans
    /// `decel_after`. The regime's first quarter (of its points) is left
    /// out: it may hold
    /// the tail of the fill that began it or a warm-up (growth that slows
    /// once and then holds, where a plateau's keeps slowing). Falls are
    /// taken out first: memory given back (`empty_cache()`, or the
    /// allocator freeing its cache to retry a failed allocation) and taken
    /// again is not growth slowing down, while a plateau never falls; each
    /// reading is taken as the lower of it and the one before, so one
    /// caught at a tooth's top does not count its fall as growth.
    /// Returns the older and newer halves' rates, and the span they cover,
    /// when it is.
    ///
    /// The halves are judged once a sample ([`Envelope::halves_now`]); this
    /// reads them.
    pub(super) fn deceleration(h: &Halves, p: &EnvelopeParams) -> Option<(Rate, Rate, f64)> {
        (h.newer.bps < p.decel * h.older.bps).then_some((h.older, h.newer, h.span_s))
    }

    /// Where the regime's growth slowed for good without levelling off:
    /// the index (in the regime's points) of the newer half's first point,
    /// where the newer half grows surely slower than the older (as
    /// [`Envelope::deceleration`] judges them) at `decel` to `slowed` of
    /// its rate, does not slow further itself (its own newer half's range
    /// not all below its older half's; taken as not slowing where either
    /// has too few pairs to fit), and nothing at all fell since the first
    /// quarter (a sawtooth's teeth or a retry's freed cache make halves
    /// that differ by chance); and only where the newer half spans
    /// `decel_after` by the clock (a transient taken out leaves a hole in
    /// the points, and the halves are split by count), so the regime that starts
    /// again can itself be judged for levelling off at once (without this,
    /// the `crowded` simulation's GPU 1, its processes starting over 30 s
    /// and their caches then filling, was forecast full 30 s in). What came
    /// before says nothing about the growth now, as before a level shift:
    /// a leak beneath a KV cache grows the cache's pace and then, once it
    /// has filled, the leak's alone (`thirtythird/02`: 1.1 GiB/s over the
    /// regime, ~0.75 after; the whole regime's rate ended every range
    /// before the OOM).
    ///
    /// [`Envelope::halves_now`] judges the rates, the fall and the newer
    /// half's own halves (only where the rates are in the band); this
    /// adds the clock.
    pub(super) fn slowed_for_good(&self, h: &Halves, p: &EnvelopeParams) -> Option<usize> {
        let from_ix = h.slowed_from?;
        let last = self.regime.points.back()?.t;
        let from = self.regime.points.get(from_ix)?.t;
        let judged = last.saturating_sub(from) as f64 / 1000.0 >= p.decel_after.as_secs_f64();
        judged.then_some(from_ix)
    }

    /// The halves of the regime's last three quarters at `t` (see
    /// [`Envelope::deceleration`]), where the older grows and the newer's
    /// range is all below the older's: judged once a sample, for both the
    /// levelling-off check and [`Envelope::slowed_for_good`].
    pub(super) fn halves_now(&self, t: Millis, p: &EnvelopeParams) -> Option<Halves> {
        let span_s = t.saturating_sub(self.regime.points.front()?.t) as f64 / 1000.0;
        if span_s < p.decel_after.as_secs_f64() {
            return None;
        }
        let last = self.regime.points.back()?.t;
        let skip = self.regime.points.len() / 4;
        let judged = self.regime.points.iter().skip(skip);
        let first = judged.clone().next()?.t;
        let span_s = last.saturating_sub(first) as f64 / 1000.0;
        let mut fallen = 0.0;
        let mut confirm = Confirm::default();
        let mut prev: Option<f64> = None;
        let rises: VecDeque<Point> = judged
            .map(|q| {
                // Each reading as the lower of it and the one before (one at
                // a tooth's top would add its whole fall).
                let used = confirm.next(q.used);
                fallen += prev.map_or(0.0, |v| (v - used).max(0.0));
                prev = Some(used);
                Point {
                    used: used + fallen,
                    ..*q
                }
            })
            .collect();
        let mid = rises.len() / 2;
        let older: VecDeque<Point> = rises.iter().take(mid + 1).copied().collect();
        let newer: VecDeque<Point> = rises.iter().skip(mid).copied().collect();
        let a = theil_sen(&older, span_s / 8.0)?;
        let b = theil_sen(&newer, span_s / 8.0)?;
        if !(a.bps > 0.0 && b.high < a.low) {
            return None;
        }
        // Slowed to a new pace: in the band, nothing fell, and the newer
        // half not slowing further (its own halves, judged as the
        // regime's are; taken as not slowing where either has too few
        // pairs to fit). Its own halves are fitted only in the band.
        let in_band = b.bps >= p.decel * a.bps && b.bps < p.slowed * a.bps && fallen <= 0.0;
        let steady = || {
            let n = newer.len() / 2;
            let c: VecDeque<Point> = newer.iter().take(n + 1).copied().collect();
            let d: VecDeque<Point> = newer.iter().skip(n).copied().collect();
            match (theil_sen(&c, span_s / 16.0), theil_sen(&d, span_s / 16.0)) {
                (Some(c), Some(d)) => d.high >= c.low,
                _ => true,
            }
        };
        Some(Halves {
            older: a,
            newer: b,
            span_s,
            slowed_from: (in_band && steady()).then_some(skip + mid),
        })
    }

    /// Where a decelerating fill levels off, bytes: taken as an approach to
    /// a plateau, `used = P − A·e^(−t/τ)`, whose rate falls from the older
    /// half's `a` to the newer half's `b` over half the span judged `h`
    /// (`span_s / 2`, see [`Envelope::deceleration`]): τ = h / ln(a/b), the
    /// rate now `b·√(b/a)` (a quarter of the span after the newer half's
    /// middle), and what is left to come `rate now × τ`.
    /// `None` unless decelerating and still growing, when the plateau
    /// would not fit on the GPU (that is no plateau), or when it is within
    /// [`LEVEL_MIN`] of the GPU of where the memory is now (it has levelled
    /// off already).
    pub(super) fn levelling(&self, a: Rate, b: Rate, span_s: f64, m: MemInfo) -> Option<f64> {
        let last = self.regime.points.back()?;
        if b.bps <= 0.0 {
            return None;
        }
        // From the rate a quarter span after b's, at the same slowing.
        let q = b.bps / a.bps;
        let plateau = last.used + q.sqrt() * still_to_come(a.bps, b.bps, span_s / 2.0);
        let usable = m.total.saturating_sub(m.reserved) as f64;
        let ahead = plateau - last.used >= LEVEL_MIN * m.total as f64;
        (plateau.is_finite() && plateau < usable && ahead).then_some(plateau)
    }

    /// The Theil–Sen rate of the regime's points from `skip` on (its newer
    /// half), where it grows, while the regime (`span_s` long) is too young
    /// for [`Envelope::deceleration`] to judge: then the range of the
    /// forecast's rate takes it in (see `Envelope::candidate`).
    pub(super) fn young_newer_rate(
        &self,
        skip: usize,
        span_s: f64,
        p: &EnvelopeParams,
    ) -> Option<Rate> {
        if span_s >= p.decel_after.as_secs_f64() {
            return None;
        }
        let pts: VecDeque<Point> = self.regime.points.iter().skip(skip).copied().collect();
        let span = pts.back()?.t.saturating_sub(pts.front()?.t) as f64 / 1000.0;
        theil_sen(&pts, span / 4.0).filter(|r| r.bps > 0.0)
    }
}

#[cfg(test)]
mod tests;
