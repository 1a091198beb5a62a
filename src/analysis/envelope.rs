//! The GPU's "full in ~N s", built for what real training jobs look like at
//! the driver: memory climbs in allocator segments (a staircase, not a
//! line), transient peaks (an evaluation pass, an optimizer step, the top
//! of an `empty_cache()` sawtooth) ride on top of a slower baseline, and a
//! job starts with a *fill* (weights, optimizer state, a dataset) that is
//! nothing like the growth after it. The OOM comes when baseline plus the
//! next transient no longer fit.
//!
//! Per GPU, over the current *regime* (the samples since the last level
//! shift: a change of `used` by at least [`EnvelopeParams::shift_frac`] of
//! the GPU between two samples starts a new one, so a fill is not mistaken
//! for growth and the growth after it is measured on its own; when a rise
//! falls back to within a shift of where the old regime was within 30 s,
//! or a drop comes back at the next sample (within 1.5 s), the shift was a
//! transient, and the old regime goes on, a spike's top kept as a peak, a
//! dip dropped: `transient`):
//!
//! - **baseline**: the Theil–Sen line through `used` (pairs at least a
//!   quarter of the span apart, so a staircase's steps average out), its
//!   intercept at the 10th percentile (the troughs); the rate's range is
//!   Sen's 90 % interval, widened to at least one stair (below) over the
//!   span either side (with a few steps seen, when the next one comes is
//!   the uncertainty, and pairs straddling the same steps hide it);
//! - **excursion**: the largest amount by which a reading (fast-lane peaks
//!   included) rose above that line: the transient to expect again;
//! - **allocation**: the largest rise between two consecutive samples in
//!   the last three quarters of the regime (the first quarter may still
//!   hold the tail of the fill), spikes included: what the next allocation
//!   may ask for (over the newer half alone, an evaluation pass every 10 s
//!   left it between passes: `twentysecond/05`'s earliest end jumped from
//!   22 to 33 s 30 s before the OOM);
//! - **stair**: the largest rise of the regime's lower envelope (each
//!   reading replaced by the lowest from it on) in the newer half: a step
//!   of the growth that stays, not a transient that falls back. The rate's
//!   range is widened by one stair over the span either side;
//! - a regime whose largest step that stays (over the whole regime) makes
//!   at least `one_step_share` of its rise (its newest reading less its
//!   lowest) is one step, not a trend: no forecast (`fourteenth/07`, a
//!   steady vision job on an H100, took one 6 GiB segment and stayed flat;
//!   once the step left the newer half, Theil–Sen's line through it read
//!   as growth);
//! - room at the peaks = usable memory − (baseline now + excursion); the
//!   central estimate is room / rate; the earliest (room − allocation) /
//!   fast rate; the latest, the baseline alone reaching the top at the slow
//!   rate (the transient may not come again), plus the longest sampling
//!   gap.
//!
//! A forecast is **shown** when the growth is sustained and steady:
//! the regime is at least `min_regime` old; the slow end of the rate is
//! above zero and the rate at least `min_rate`; the growth is not a fill
//! (not faster than `max_fill` of the GPU per second: loading weights or a
//! data set copies at gigabytes a second and stops on its own, and a KV
//! cache or a warm-up fills at a gigabyte or two a second, while most leaks
//! and growing batches add megabytes to a few hundred megabytes a second);
//! it is not levelling off (`decelerating`; never said while a process on
//! the GPU is flagged as leaking); the central estimate reaches
//! at most `max_extrapolation` times the regime's length ahead; and the
//! candidate forecasts of the last `hold` all exist and agree (the moment
//! they predict moves by at most `max_slip` seconds per second, a second,
//! and `max_slip_rel` of the time still to go): growth speeding up (a
//! warm-up) or slowing down pulls or pushes the moment far more than a
//! sawtooth's next tooth does. A forecast gone for no longer than `hold`
//! comes back at once; on a GPU at risk (below) a candidate is shown
//! without waiting for `hold`.
//!
//! Separately, a GPU whose readings peaked at or above `at_risk_pct` of its
//! memory within the last `at_risk_window` is **at risk** whether or not
//! it grows: the caching allocator has taken nearly everything and the next
//! larger allocation may fail (the driver-level figure is saturated, so no
//! trend can be seen in it). Where the processes publish their allocator
//! figures, the analyzer then forecasts the same way from their demand
//! instead (`analysis::demand`); it does so too where a reading of at
//! least `cache_full_pct` gives no forecast of its own (the cache can hold
//! the figure flat below the at-risk level).

use std::collections::VecDeque;
use std::time::Duration;

use serde::Serialize;

use crate::analysis::forecast::Forecast;
use crate::analysis::slope::Rate;
use crate::model::{MemInfo, Millis};

/// The forecaster's parameters (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EnvelopeParams {
    /// The longest regime kept.
    pub window: Duration,
    /// A change of `used` between two samples of at least this share of
    /// the GPU's memory starts a new regime.
    pub shift_frac: f64,
    /// Youngest regime a forecast is made from.
    pub min_regime: Duration,
    /// Fewest samples in it.
    pub min_points: usize,
    /// Growth whose largest step that stays is at least this share of the
    /// regime's whole rise is one step, not a trend.
    pub one_step_share: f64,
    /// Slowest growth forecast, bytes/s.
    pub min_rate: f64,
    /// Fastest growth forecast, share of the GPU's memory per second; a
    /// leak flag faster is not shown either (0.011: at 0.015, set on 14
    /// runs, eight KV caches and three warm-ups of the corpus were
    /// forecast or flagged while they filled faster; 0.011 silences them
    /// for two checkpoints of 347, docs/analysis.md, session 36).
    pub max_fill: f64,
    /// How long candidates must have agreed before one is shown.
    pub hold: Duration,
    /// ... while a process on the GPU is flagged as leaking: two a second
    /// apart (see `Envelope::hold`).
    pub hold_leaking: Duration,
    /// How far (s/s) the predicted moment may move while held ... (0.4:
    /// over every set at 0.5, a warm-up whose segments grew, its moment
    /// 3.3 s nearer in 3 s, was shown and stopped short of the top,
    /// `twentyfifth/`; 0.33–0.45 score alike, 0.3 holds a checkpoint less.)
    pub max_slip: f64,
    /// ... plus this share of the time still to go.
    pub max_slip_rel: f64,
    /// The newer half of a regime's last three quarters (of its points)
    /// growing at less than this share of the older half's rate is a fill
    /// levelling off (no forecast) ...
    pub decel: f64,
    /// ... once the regime is this long (shorter halves are too noisy: a
    /// staircase's steps land unevenly).
    pub decel_after: Duration,
    /// The newer half growing at `decel` to under this share of the older
    /// half's rate (the ranges apart), not slowing further itself, with
    /// nothing fallen and the newer half `decel_after` long: the growth
    /// slowed for good, and the regime starts again at the newer half
    /// (`Envelope::slowed_for_good`).
    pub slowed: f64,
    /// The central estimate may reach at most this many times the
    /// regime's length ahead: a trend seen for 6 s says nothing about the
    /// next 15 minutes (a process creating its CUDA context climbs for a
    /// few seconds).
    pub max_extrapolation: f64,
    /// A baseline within this share of the GPU of the top is saturated:
    /// no forecast (the at-risk state says it).
    pub saturated_frac: f64,
    /// Peak share of memory (%) from which a GPU is at risk.
    pub at_risk_pct: f64,
    /// Over how long the peak is taken.
    pub at_risk_window: Duration,
    /// From this share of memory (%) read, where the driver's figure
    /// gives no forecast, the caching allocators may hold it flat while
    /// the tensors grow inside: the analyzer forecasts from the
    /// allocators' demand, as at risk (`analysis::demand`).
    pub cache_full_pct: f64,
}

impl Default for EnvelopeParams {
    fn default() -> Self {
        EnvelopeParams {
            window: Duration::from_secs(120),
            shift_frac: 0.10,
            min_regime: Duration::from_secs(3),
            min_points: 4,
            one_step_share: 0.85,
            min_rate: 1024.0 * 1024.0,
            max_fill: 0.011,
            hold: Duration::from_secs(3),
            hold_leaking: Duration::from_secs(1),
            max_slip: 0.4,
            max_slip_rel: 0.1,
            decel: 0.6,
            decel_after: Duration::from_secs(24),
            slowed: 0.8,
            max_extrapolation: 20.0,
            saturated_frac: 0.0025,
            at_risk_pct: 97.0,
            at_risk_window: Duration::from_secs(30),
            cache_full_pct: 85.0,
        }
    }
}

/// About how many points a regime keeps (pairs cost O(n²)): the window
/// over this is the points' spacing (see [`Envelope::observe`]).
const MAX_POINTS: usize = 120;

#[derive(Clone, Copy, Debug)]
struct Point {
    t: Millis,
    /// When the first sample folded into this point came (`t` is the
    /// last's).
    since: Millis,
    used: f64,
    /// Highest read since the previous sample (fast lane included).
    peak: f64,
}

/// What the forecaster says after a sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Outlook {
    /// The forecast shown, when growth is sustained and steady.
    pub forecast: Option<Forecast>,
    /// The growth of the current regime (since the last level shift),
    /// once it is `min_regime` old.
    pub rate: Option<Rate>,
    /// The highest share of memory read within `at_risk_window`, when it
    /// is at or above `at_risk_pct`.
    pub at_risk_pct: Option<f64>,
    /// Where a fill that is levelling off will level, bytes (no forecast
    /// is made for it: [`Envelope::levelling`]).
    pub levels_at: Option<f64>,
    /// This sample's candidate, shown or not (also when no forecast was
    /// wanted): the allocators' demand gives the driver's forecast its
    /// latest end through it.
    pub candidate: Option<Forecast>,
}

/// What the forecaster knows of the current regime (since the last level
/// shift): everything a level shift ends, and a transient brings back
/// whole ([`transient`]).
#[derive(Clone, Debug, Default)]
struct Regime {
    points: VecDeque<Point>,
    /// The candidates since they began without a break.
    held: VecDeque<Held>,
    /// A forecast is being shown.
    shown: bool,
    /// When a forecast was last shown.
    last_shown: Option<Millis>,
    /// The forecast shown at the last sample, if one was: it stands over
    /// one sample that gives none (see [`Envelope::observe`]).
    carry: Option<Forecast>,
    /// Whether `used` is still reaching new highs.
    rises: Rises,
}

/// The forecaster of one GPU.
#[derive(Clone, Debug, Default)]
pub(crate) struct Envelope {
    regime: Regime,
    /// (t, share of memory at the interval's peak), for the at-risk state.
    fullness: VecDeque<(Millis, f64)>,
    /// Why the last sample asked for a forecast gave no candidate (a
    /// diagnostic for traces).
    pub(crate) why: &'static str,
    /// The last candidate, shown or not (a diagnostic for traces).
    pub(crate) last: Option<Forecast>,
    /// The regime a level shift just ended, kept for a drop's next sample
    /// (at most `transient::TRANSIENT_MS` later) or up to
    /// `spike::SPIKE_MS` after a rise: back where the regime was (a drop
    /// within a shift, a rise within half of one: `spike::PendingRise`),
    /// the shift was a transient (an evaluation pass,
    /// another process's spike, a cache released and taken again), and the
    /// regime goes on as if it had not happened, a spike's top kept as the
    /// returning sample's peak.
    undo: Option<Box<transient::Undo>>,
    /// A process on this GPU is flagged as leaking ([`Envelope::set_leaking`]):
    /// its growth is then not a fill levelling off.
    leaking: bool,
}

impl Envelope {
    /// Feeds the sample at `t_ms`: memory `m` and the interval's peak of
    /// `used`. Samples not newer than the last are ignored. With `want`
    /// false the sample is kept and its candidate made (`Outlook::
    /// candidate`), but no forecast is held or shown.
    pub(crate) fn observe(
        &mut self,
        t_ms: Millis,
        m: MemInfo,
        peak: Option<u64>,
        gap_s: f64,
        p: &EnvelopeParams,
        want: bool,
    ) -> Outlook {
        if self.regime.points.back().is_some_and(|b| t_ms <= b.t) || m.total == 0 {
            return Outlook::default();
        }
        let used = m.used as f64;
        let total = m.total as f64;
        let mut pt = Point {
            t: t_ms,
            since: t_ms,
            used,
            peak: peak.map_or(used, |x| (x as f64).max(used)),
        };
        let shift = p.shift_frac * total;
        self.come_back(t_ms, used, shift, &mut pt);
        let change = self
            .regime
            .points
            .back()
            .map_or(0.0, |last| used - last.used);
        if change.abs() >= shift {
            // A level shift: what came before says nothing about now
            // (unless the next sample comes back: `transient`).
            self.set_aside(t_ms, change, &mut pt, p.min_regime.as_millis() as Millis);
        }
        // About `MAX_POINTS` points span the window: at a sub-second
        // interval a sample folds into the last point (its peak kept)
        // instead of adding one, while the time since that point's first
        // sample plus half the gap since its last is under `spacing`, so
        // the points stay about `spacing` apart (the regime's first point
        // is never folded into). The half gap keeps a reading's own
        // interval out of the fold: at 1 s (rounds 999-1001 ms apart, or a
        // late one followed by a short gap) and at 900 ms every reading is
        // a point; a whole-spacing rule had folded a third of the 1 s
        // readings into the one before (their `used` lost, a transient's
        // rise among them).
        let spacing = p.window.as_millis() as u64 / MAX_POINTS as u64;
        let several = self.regime.points.len() > 1;
        match self.regime.points.back_mut() {
            Some(last)
                if several
                    && t_ms.saturating_sub(last.since) + t_ms.saturating_sub(last.t) / 2
                        < spacing =>
            {
                last.peak = last.peak.max(pt.peak);
                last.used = pt.used;
                last.t = t_ms;
            }
            _ => self.regime.points.push_back(pt),
        }
        let keep = p.window.as_millis() as u64;
        while self
            .regime
            .points
            .front()
            .is_some_and(|f| t_ms.saturating_sub(f.t) > keep)
        {
            self.regime.points.pop_front();
        }
        // A new high is a rise of more than 0.1 % of the GPU (that the next
        // reading confirms: `Rises`).
        self.regime.rises.observe(t_ms, used, total / 1000.0);
        let at_risk_pct = self.fullness(t_ms, m.pct_full(pt.peak as u64), p);
        // Growth that slowed for good: the regime starts again where it
        // slowed. Unlike a level shift, its new highs, held candidates and
        // the forecast it shows go on (a shown forecast then moves to the
        // new pace at once; one that reaches over `max_extrapolation` ×
        // the shorter regime is withdrawn).
        // The halves are judged once, and again only after that.
        let mut halves = self.halves_now(t_ms, p);
        if let Some(from) = halves.as_ref().and_then(|h| self.slowed_for_good(h, p)) {
            self.regime.points.drain(..from);
            halves = self.halves_now(t_ms, p);
        }
        // The regime's rate, fitted once: shown, and the candidate's basis.
        let rate = self.regime_rate(t_ms, p);
        let candidate = self.candidate(t_ms, m, rate, halves.as_ref(), gap_s, p);
        self.last = candidate.ok();
        if !want {
            self.hold(None, false, p);
            self.regime.carry = None;
            return Outlook {
                at_risk_pct,
                candidate: self.last,
                ..Outlook::default()
            };
        }
        let mut levels_at = None;
        let one_step = matches!(candidate, Err(Refusal::OneStep));
        let candidate = match candidate {
            Ok(f) => {
                self.why = "";
                Some(f)
            }
            Err(Refusal::Decelerating {
                older,
                newer,
                span_s,
            }) => {
                self.why = "decelerating";
                levels_at = self.levelling(older, newer, span_s, m);
                None
            }
            Err(Refusal::Because(why)) => {
                self.why = why;
                None
            }
            Err(Refusal::OneStep) => {
                self.why = "one step";
                None
            }
        };
        let before = self.regime.carry.take();
        let mut forecast = self.hold(candidate, at_risk_pct.is_some(), p);
        if forecast.is_some() {
            self.regime.carry = forecast;
        } else if one_step {
            // A sample refused as one step right after a shown one (a
            // reading caught at a sawtooth's top is a step until the next
            // one comes back down): the forecast shown at the last sample
            // stands, its times counting from when it was made, unless its
            // latest end has passed. For one sample (made at most one and a
            // half gaps ago): the next refused one withdraws it.
            let one_sample = Duration::try_from_secs_f64(1.5 * gap_s).unwrap_or_default();
            forecast = before.filter(|f| f.stands_over(t_ms, one_sample));
            if forecast.is_some() {
                // Still shown: the next candidate is shown at once, at any
                // interval (the hold is not started over).
                self.regime.shown = true;
                self.regime.last_shown = Some(t_ms);
            }
        }
        // The shift's own sample: a transient or a new level, it cannot
        // tell yet; the forecast shown before stays until the next one.
        forecast = forecast.or(self.shown_while_shifting(t_ms));
        Outlook {
            forecast,
            rate,
            at_risk_pct,
            levels_at,
            candidate,
        }
    }

    /// Whether a process on this GPU is flagged as leaking now (set before
    /// each [`Envelope::observe`]): a GPU's growth with a leak in it does
    /// not level off, however much a cache filling beside the leak slows
    /// (a leak beneath a KV cache: `thirtyseventh/03`, flagged 39 s into
    /// its growth, was read as a fill levelling off, its level climbing
    /// from 86 to 136 GiB, until 69 s; `thirtythird/02`).
    pub(crate) fn set_leaking(&mut self, leaking: bool) {
        self.leaking = leaking;
    }

    /// Forgets the regime (a level shift, or the forecast's basis changed
    /// between the driver's reading and the allocators' demand).
    pub(crate) fn restart(&mut self) {
        self.regime = Regime::default();
        self.undo = None;
    }

    fn fullness(&mut self, t_ms: Millis, pct: f64, p: &EnvelopeParams) -> Option<f64> {
        self.fullness.push_back((t_ms, pct));
        let keep = p.at_risk_window.as_millis() as u64;
        while self
            .fullness
            .front()
            .is_some_and(|(t, _)| t_ms.saturating_sub(*t) > keep)
        {
            self.fullness.pop_front();
        }
        let top = self.fullness.iter().map(|(_, x)| *x).fold(0.0, f64::max);
        (top >= p.at_risk_pct).then_some(top)
    }
}

mod candidate;
mod decel;
mod fit;
mod hold;
mod rises;
#[cfg(test)]
mod tests;
mod transient;

use candidate::Refusal;
use fit::theil_sen;
use hold::Held;
pub(crate) use rises::{Confirm, Rises};
