//! The forecast a regime gives at a sample before it is held, or why it
//! gives none (see the module above for the rules).

use super::fit::{persistent_step, step_share, theil_sen};
use super::{Envelope, EnvelopeParams, Point, decel};
use crate::analysis::forecast::{Forecast, MAX_HORIZON_S, Room};
use crate::analysis::slope::{Rate, quantile};
use crate::model::{MemInfo, Millis};

/// Where growth slows while a leak is flagged, the slowest pace the
/// forecast's range takes in, as a share of the regime's rate.
const SLOWING_FLOOR: f64 = 0.5;

impl Envelope {
    /// The Theil–Sen rate of the regime, once it is old enough.
    pub(super) fn regime_rate(&self, t: Millis, p: &EnvelopeParams) -> Option<Rate> {
        let first = self.regime.points.front()?;
        let span_s = t.saturating_sub(first.t) as f64 / 1000.0;
        if self.regime.points.len() < p.min_points || span_s < p.min_regime.as_secs_f64() {
            return None;
        }
        theil_sen(&self.regime.points, span_s / 4.0)
    }

    /// The forecast the current regime gives, before it is held (`halves`:
    /// its halves as judged at `t`, [`Envelope::halves_now`]).
    pub(super) fn candidate(
        &self,
        t: Millis,
        m: MemInfo,
        rate: Option<Rate>,
        halves: Option<&decel::Halves>,
        gap_s: f64,
        p: &EnvelopeParams,
    ) -> Result<Forecast, Refusal> {
        let n = self.regime.points.len();
        let first = self
            .regime
            .points
            .front()
            .ok_or(Refusal::Because("no points"))?;
        let span_s = t.saturating_sub(first.t) as f64 / 1000.0;
        if n < p.min_points || span_s < p.min_regime.as_secs_f64() {
            return Err(Refusal::Because("young regime"));
        }
        if !self.regime.rises.current(t) {
            return Err(Refusal::Because("no new high"));
        }
        let rate = rate.ok_or(Refusal::Because("few pairs"))?;
        let slowing = halves.and_then(|h| Self::deceleration(h, p));
        if let Some((older, newer, span_s)) = slowing
            && !self.leaking
        {
            return Err(Refusal::Decelerating {
                older,
                newer,
                span_s,
            });
        }
        let total = m.total as f64;
        if rate.low <= 0.0 {
            return Err(Refusal::Because("slow end <= 0"));
        }
        if rate.bps < p.min_rate {
            return Err(Refusal::Because("too slow"));
        }
        if rate.bps > p.max_fill * total {
            return Err(Refusal::Because("fill"));
        }
        // The baseline now: the line through the points, at `t`.
        let mut at_now: Vec<f64> = self
            .regime
            .points
            .iter()
            .map(|q| q.used + rate.bps * (t - q.t) as f64 / 1000.0)
            .collect();
        let base = quantile(&mut at_now, 0.1);
        let line = |q: &Point| base - rate.bps * (t - q.t) as f64 / 1000.0;
        let excursion = self
            .regime
            .points
            .iter()
            .map(|q| q.peak - line(q))
            .fold(0.0, f64::max);
        // Two step sizes, from the later part of the regime (the start may
        // hold the tail of the fill that began it, steps the growth after
        // it does not make):
        // - the allocation: the largest rise between two samples, spikes
        //   included, over the last three quarters: what the next
        //   allocation may ask for on top (a transient that recurs every
        //   10 s, an evaluation pass, stays in view);
        // - the stair: the largest rise of the baseline, where the baseline
        //   at a sample is the lowest reading from it on: a transient (an
        //   evaluation pass, a retry after the allocator freed its cache)
        //   that comes and goes is not a step of the growth; over the newer
        //   half.
        let skip = (n / 2).min(n.saturating_sub(p.min_points));
        let newer = || self.regime.points.iter().skip(skip).map(|q| q.used);
        let skip_alloc = (n / 4).min(n.saturating_sub(p.min_points));
        let later = || self.regime.points.iter().skip(skip_alloc).map(|q| q.used);
        let alloc = later()
            .zip(later().skip(1))
            .map(|(a, b)| b - a)
            .fold(0.0, f64::max);
        let stair = persistent_step(newer());
        // Growth that is mostly one step that stayed is a step, not a
        // trend, however long ago the step came (a steady job's allocator
        // taking one more segment; the newer half alone lost it).
        if step_share(self.regime.points.iter().map(|q| q.used)) >= p.one_step_share {
            return Err(Refusal::OneStep);
        }
        // A staircase's rate is known to about one stair over the span (when
        // the next one comes is anyone's guess): Sen's interval, made from
        // pairs that mostly straddle the same few stairs, can be narrower.
        let slack = stair / span_s.max(1e-3);
        let rate = Rate {
            low: rate.low.min(rate.bps - slack),
            high: rate.high.max(rate.bps + slack),
            ..rate
        };
        if rate.low <= 0.0 {
            return Err(Refusal::OneStep);
        }
        // In a regime too young for the levelling-off check (under
        // `decel_after`), the newer half's own rate, where it grows, is
        // inside the range: a regime that began with a process's start-up
        // (its context and weights arriving over a few seconds) reads
        // faster over the whole than the growth after it (the demo's leak
        // at +13 s: 680 MB/s over the whole, 537 MB/s since, its range
        // "49s–1m04s" for an OOM 74 s away).
        //
        // A fill slowing down while a process on the GPU is flagged as
        // leaking (a leak beneath a KV cache, `thirtyeighth/01`): once the
        // fill has levelled, only the leak's pace is left, as slow as the
        // newer half's or slower, so the range takes that in too; not
        // below half the regime's rate (a newer half near flat would
        // stretch the range's end to minutes for an OOM 30 s away).
        let newer_rate = self.young_newer_rate(skip, span_s, p).or_else(|| {
            slowing.map(|(_, newer, _)| Rate {
                bps: newer.bps.max(SLOWING_FLOOR * rate.bps),
                ..newer
            })
        });
        let rate = match newer_rate {
            Some(r) => Rate {
                low: rate.low.min(r.bps),
                high: rate.high.max(r.bps),
                ..rate
            },
            None => rate,
        };
        // What `used` can reach: everything but the driver's reserve.
        let usable = total - m.reserved as f64;
        let at = |x: f64| x.clamp(0.0, u64::MAX as f64) as u64;
        let to_base = usable - base;
        // Saturated: the allocator holds (nearly) everything and the driver
        // sees no more growth; that is the at-risk state, not a forecast.
        if to_base <= alloc.max(p.saturated_frac * total) {
            return Err(Refusal::Because("saturated"));
        }
        let to_peaks = to_base - excursion;
        let room = Room::ordered(m.free, at(to_peaks), at(to_base));
        let eta_s = to_peaks.max(0.0) / rate.bps;
        if !eta_s.is_finite() || eta_s > MAX_HORIZON_S {
            return Err(Refusal::Because("beyond horizon"));
        }
        if eta_s > p.max_extrapolation * span_s {
            return Err(Refusal::Because("too far ahead"));
        }
        let low_s = (to_peaks - alloc).max(0.0) / rate.high.max(rate.bps);
        let high_s = to_base.max(0.0) / rate.low + gap_s.max(0.0);
        Ok(Forecast {
            made_ms: t,
            room,
            rate,
            eta_s,
            low_s: low_s.min(eta_s),
            high_s: Some(high_s.max(eta_s)),
        })
    }
}

/// Why a sample gave no candidate forecast.
#[derive(Clone, Copy, Debug)]
pub(super) enum Refusal {
    /// A diagnostic for traces ("young regime", "fill", ...).
    Because(&'static str),
    /// The rate's range, widened by one stair over the span, reaches zero:
    /// the growth may be a single step (or the newest reading, caught at a
    /// sawtooth's top, is one until the next comes back down).
    OneStep,
    /// A fill slowing down: the older and newer halves' rates of the span
    /// judged (the regime's last three quarters, `span_s` long), from which
    /// [`Envelope::levelling`] says where it levels off.
    Decelerating {
        older: Rate,
        newer: Rate,
        span_s: f64,
    },
}
