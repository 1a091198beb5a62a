//! A process's tensors levelling off ([`Levelling`]): a cache that fills
//! towards a plateau (an inference server's KV or prefix cache) slows down
//! as it fills; a leak keeps the same pace.
//!
//! At the driver the two look alike for tens of seconds: the caching
//! allocator takes memory in segments of gigabytes, and the new prompts'
//! entries arrive as tensors of random sizes. The tensors themselves
//! (`allocated`, from the figures PyTorch's caching allocator publishes)
//! show the slowing sooner: `leak_keep`'s grow in near-identical steps
//! (2.5, 2.3, 2.5, 2.3 GiB every 5 s), a KV cache's steps shrink (8.0, 7.1,
//! 7.3, 6.0, …). A quadratic fitted to the tensors since the fill began
//! gives its rate at the start and now; where the rate now is well under
//! the start's and the level the fill would reach (an approach to a
//! plateau at those rates) is well below the GPU's memory, the fill is
//! levelling off: no leak flag, and no "full in" for its GPU while every
//! growing process there is such a fill.
//!
//! The fill's start is found in the points themselves (no process says
//! when its growth began): the last reading that rose many times faster
//! than the last ten seconds' pace (weights or a warm-up arriving, which a
//! leak's slower growth follows: taken into the fit, that fast start
//! would read as a slowing on every leak), or fell (memory given back);
//! and after the flat points that begin it (a process idle before it
//! fills: taken in, they read as a fill that sped up).
//!
//! Measured over every corpus set at the moments each false alarm came
//! (docs/analysis-history.md, "Seventeenth session").

use std::collections::VecDeque;

use crate::model::{Millis, ProcSample};

/// How far back the points go (ms).
const KEEP_MS: Millis = 120_000;
/// The pace the fill's start is measured against: the slower of the last
/// this many ms and the last half of it (a warm-up that ended seconds ago
/// left out of the pace).
const RECENT_MS: Millis = 10_000;
/// A reading that rose this many times faster than the recent pace (and
/// by at least [`FAST_JUMP_FRAC`] of the GPU) starts the fill after it.
const FAST: f64 = 5.0;
/// The least rise of a reading, as a share of the GPU, that counts as fast:
/// weights, a warm-up or a leak's step arrive gigabytes at a time; a cache's
/// new entries in bursts of a request's blocks (`kv_plateau`: 0.25–0.75 GiB,
/// under 1 % of an H100). From 0.35 %, each of those bursts started the
/// fill anew once its pace had slowed, so a fill levelling off was never
/// seen as one (`twentieth/04`). Over every set, 1.5 % to 3 % score the
/// same (one false alarm fewer, no checkpoint changed).
const FAST_JUMP_FRAC: f64 = 0.02;
/// A reading within this share of the GPU of the one before is flat.
const JUMP_FRAC: f64 = 0.0035;
/// A fall of a reading by this share of the GPU starts the fill after it.
const DROP_FRAC: f64 = 0.007;
/// The fill must have lasted this long (ms) ...
const MIN_SPAN_MS: Millis = 15_000;
/// ... over at least this many points ...
const MIN_POINTS: usize = 8;
/// ... and risen by this share of the GPU.
const MIN_RISE_FRAC: f64 = 0.015;
/// Levelling off: the rate now under this share of the rate at the start.
const SLOWER: f64 = 0.75;
/// A fill this long (ms) is judged over its last half too: where that
/// slows, by its own fit; where not, at its own pace for the whole fill's
/// time constant ([`at_own_pace`]). (From 30 s, two more false alarms,
/// when the last half had to slow on its own: the last half of a 40 s KV
/// cache fill, at τ 25–30 s and with entries of random sizes, did not
/// slow enough.)
const HALVES_MS: Millis = 45_000;
/// A level found is kept this long (ms) over a pause in the tensors'
/// growth.
const PAUSE_HOLD_MS: Millis = 15_000;
/// A level found at a new point within this share of the GPU's memory of
/// the one found at the point before it (at most [`STEADY_HOLD_MS`]
/// earlier) is a steady level: the fit has settled. (A leak whose pace an
/// evaluation pass interrupted can read as a fill levelling off for a few
/// seconds, but the level found then climbs with it: `twentyfifth/07`'s
/// went 62.7, 63.4, 64.3, 65.8, 68.5 GiB in 4 s, steady only at its
/// first step, 0.7 GiB on an 80 GB GPU; a KV cache's stays: `twentyfirst/01`'s
/// 52.6, 52.3, 52.0, 52.4, 52.2.) Over every set, 0.75 % to 1.5 % score
/// the same; 0.5 % quietens one KV cache fewer, 2 % loses a leak's flag.
const STEADY_FRAC: f64 = 0.01;
/// A steady level holds the leak flag back this long (ms) after it was
/// found (by the sample's clock: figures that stop coming do not stretch
/// it). 15 to 30 s score the same over every set; 10 s quietens one KV
/// cache fewer.
const STEADY_HOLD_MS: Millis = 15_000;
/// And the level it would stop at under this share of the GPU's memory
/// (room left: a fill that would level at the top is no plateau); for a
/// GPU, the level of all its fills together.
pub(crate) const BELOW_FRAC: f64 = 0.90;

/// How much more the driver will see a fill take, bytes: what its tensors
/// have still to add to reach `level` from `tensors`, less what its
/// caching allocator already holds idle beyond them (`idle`: reserved less
/// allocated). The cache is taken as reusable (PyTorch frees it and
/// retries before an allocation fails); where it is fragmented the
/// allocator takes new segments anyway, and the driver's figure goes on
/// up a step or two (`twentyfourth/01`: 67.4 GiB said, 71.65 GiB reached).
pub(crate) fn beyond_cache(level: f64, tensors: f64, idle: f64) -> f64 {
    (level - tensors - idle).max(0.0)
}

/// The tensors of one process, to tell a fill that levels off.
#[derive(Clone, Debug, Default)]
pub(crate) struct Levelling {
    /// (t, allocated bytes), oldest first.
    points: VecDeque<(Millis, f64)>,
    /// The last level [`Levelling::level_now`] found, and when.
    said: Option<(Millis, f64)>,
    /// The last level found within a share of the GPU of the one before.
    steady: Option<(Millis, f64)>,
}

impl Levelling {
    /// Feeds `sp`'s allocator figures at `t`, when fresh; returns what its
    /// tensors hold and what its cache holds beyond them (bytes), `None`
    /// without fresh figures.
    pub(crate) fn observe(&mut self, sp: &ProcSample, t: Millis) -> Option<(f64, f64)> {
        let stats = sp.torch.as_deref()?;
        let d = stats.fresh(t)?;
        self.push(stats.t_ms.min(t), d.allocated);
        Some((
            d.allocated as f64,
            d.reserved.saturating_sub(d.allocated) as f64,
        ))
    }

    /// The tensors held `allocated` bytes at `t` (a publish's own time;
    /// one not newer than the last is ignored).
    pub(crate) fn push(&mut self, t: Millis, allocated: u64) {
        if self.points.back().is_some_and(|(b, _)| t <= *b) {
            return;
        }
        self.points.push_back((t, allocated as f64));
        while self
            .points
            .front()
            .is_some_and(|(f, _)| t.saturating_sub(*f) > KEEP_MS)
        {
            self.points.pop_front();
        }
    }

    /// As [`Levelling::level`], and through a pause: where the tensors
    /// have not grown for the last seconds (a cache between new entries)
    /// and still hold less than the level found within [`PAUSE_HOLD_MS`],
    /// that level. (Judged afresh, a pause has no pace and no fit: the
    /// GPU's "levels ~X" gave way to "full in" at every pause longer than
    /// its hold, `twentythird/01`.)
    pub(crate) fn level_now(&mut self, total: u64) -> Option<f64> {
        let &(now, last) = self.points.back()?;
        if let Some(level) = self.level(total) {
            // Steady: found again at a newer point (a publish read twice
            // finds the same level twice), not long after.
            if let Some((at, was)) = self.said
                && at < now
                && now - at <= STEADY_HOLD_MS
                && (level - was).abs() <= STEADY_FRAC * total as f64
            {
                self.steady = Some((now, level));
            }
            self.said = Some((now, level));
            return Some(level);
        }
        let (at, level) = self.said?;
        let (_, before) = self.held_at(now.saturating_sub(RECENT_MS / 2));
        let paused = last - before <= JUMP_FRAC * total as f64;
        (paused && now.saturating_sub(at) <= PAUSE_HOLD_MS && last < level).then_some(level)
    }

    /// How much the tensors rose (bytes) over the last `within` ms before
    /// `t` (the sample's time), from the reading that held when that
    /// began; `None` where the last reading is older than `within`.
    pub(crate) fn rose_within(&self, t: Millis, within: Millis) -> Option<f64> {
        let &(now, last) = self.points.back()?;
        if t.saturating_sub(now) > within {
            return None;
        }
        let (_, before) = self.held_at(t.saturating_sub(within));
        Some(last - before)
    }

    /// The reading that held at `at` (the last not after it; the first,
    /// where all are after it), as (t, bytes). Only with points.
    fn held_at(&self, at: Millis) -> (Millis, f64) {
        let i = self.points.partition_point(|(t, _)| *t <= at);
        self.points[i.saturating_sub(1)]
    }

    /// Whether a steady level (found within [`STEADY_FRAC`] of the one
    /// before it) was found within [`STEADY_HOLD_MS`] before `t` (the
    /// sample's time) and the tensors still hold less than it, whether or
    /// not they grow now. (A later level that is not steady leaves it
    /// standing: in `twentyfirst/01` the levels found jumped 54.4 → 59.5
    /// GiB as a burst of entries came, and the tensors stayed under the
    /// steady 52 GiB.) The
    /// leak flag waits while this holds: a cache's entries come in bursts
    /// of random sizes, and the fit over the last points finds a level at
    /// one sample and none at the next (`twentyfirst/01`: none for 4 s of
    /// 15 from 38 s on, and its leak flag came in such a gap, 51 s after
    /// its start). The GPU's forecast does not wait: held so, it hid a
    /// leak beneath a cache for an extra minute (`twentysecond/03`).
    pub(crate) fn steady_level_holds(&self, t: Millis) -> bool {
        let (Some(&(_, last)), Some((at, level))) = (self.points.back(), self.steady) else {
            return false;
        };
        t.saturating_sub(at) <= STEADY_HOLD_MS && last < level
    }

    /// Where the tensors would level off (bytes), if they are a fill that
    /// is levelling off below the memory of a GPU of `total` bytes, as of
    /// the last point.
    pub(crate) fn level(&self, total: u64) -> Option<f64> {
        let total = total as f64;
        let &(now, last) = self.points.back()?;
        if total <= 0.0 {
            return None;
        }
        // The pace of the last ten seconds, or of the last five if slower;
        // each from the reading that held when it began (the figures come
        // every half second, or not for seconds while the program is
        // busy: `twentieth/04`'s did not for 6 s, and the pace of the two
        // points left was none).
        let pace = |within: Millis| {
            let from = now.saturating_sub(within);
            let (t0, v0) = self.held_at(from);
            let t0 = t0.max(from);
            (now > t0).then(|| (last - v0) / (now - t0) as f64)
        };
        let (ten, five) = (pace(RECENT_MS)?, pace(RECENT_MS / 2)?);
        let pace = ten.min(five);
        if pace <= 0.0 {
            return None;
        }
        // The fill's start: after the last fast rise or fall ...
        let mut start = 0;
        let pairs = self.points.iter().zip(self.points.iter().skip(1));
        for (i, (&(ta, va), &(tb, vb))) in pairs.enumerate() {
            let rise = vb - va;
            let fast =
                rise > FAST_JUMP_FRAC * total && rise / (tb - ta).max(1) as f64 > FAST * pace;
            if fast || rise < -DROP_FRAC * total {
                start = i + 1;
            }
        }
        // Nor is a stretch where nothing grew, before the fill: a process
        // idle for seconds (nothing allocated yet, or waiting), then
        // filling. Taken in, those flat points read as a fill that sped
        // up, and hide its slowing (`eighth/01`: a KV cache after 5 s of
        // nothing, never levelling off). The fill begins at the end of the
        // first rise out of them (when in that interval it began is not
        // known).
        let base = self.points[start].1;
        let flat = self
            .points
            .iter()
            .skip(start)
            .take_while(|(_, v)| (v - base).abs() <= JUMP_FRAC * total)
            .count();
        if flat >= 2 {
            start += flat;
        }
        if start >= self.points.len() {
            return None;
        }
        let fill: Vec<(f64, f64)> = self
            .points
            .iter()
            .skip(start)
            .map(|&(t, v)| ((t - self.points[start].0) as f64 / 1000.0, v))
            .collect();
        let &(span_s, last) = fill.last()?;
        if fill.len() < MIN_POINTS
            || span_s * 1000.0 < MIN_SPAN_MS as f64
            || last - fill[0].1 < MIN_RISE_FRAC * total
        {
            return None;
        }
        // Levelling off over the whole fill; and, once it is long enough
        // to halve, where its last half says too, the higher of the two: a
        // leak beneath a fill keeps its pace after the fill has slowed, so
        // its last half slows less (or not at all) and would go higher. A
        // last half that does not slow on its own is taken at its own
        // pace for the whole fill's time constant (`at_own_pace`).
        let whole = Slowing::of(&fill)?;
        let mut level = whole.level(last);
        let half = fill.partition_point(|&(t, _)| t < span_s / 2.0);
        if span_s * 1000.0 >= HALVES_MS as f64 && fill.len() - half >= MIN_POINTS {
            let later = &fill[half..];
            let own = match Slowing::of(later) {
                Some(s) => Some(s.level(last)),
                None => at_own_pace(whole, later, last),
            };
            level = level.max(own?);
        }
        (level < BELOW_FRAC * total).then_some(level)
    }
}

/// A fill's fitted rate (a quadratic through its points, s and bytes) at
/// its first point and its last, where it slows: the rate at the last is
/// under [`SLOWER`] of the first's (and the fit curves down).
#[derive(Clone, Copy, Debug)]
struct Slowing {
    /// The rate at the first point and at the last, B/s.
    then: f64,
    now: f64,
    /// Between them, s.
    span_s: f64,
}

impl Slowing {
    fn of(fill: &[(f64, f64)]) -> Option<Slowing> {
        let &(t0, _) = fill.first()?;
        let &(t1, _) = fill.last()?;
        let (_, c1, c2) = quadratic(fill)?;
        let (then, now) = (c1 + 2.0 * c2 * t0, c1 + 2.0 * c2 * t1);
        (c2 < 0.0 && then > 0.0 && now < SLOWER * then).then_some(Slowing {
            then,
            now,
            span_s: t1 - t0,
        })
    }

    /// Where the fill, now at `last` bytes, would level off, taken as an
    /// approach to a plateau.
    fn level(self, last: f64) -> f64 {
        last + still_to_come(self.then, self.now, self.span_s)
    }
}

/// Where a fill's last half (`later`, the points from the middle of the
/// fill on, the last at `last` bytes) that does not slow on its own would
/// level, the whole fill slowing as `whole` says: at the last half's own
/// pace (the slope of its line) for the whole fill's time constant (the
/// level a fill at that pace, slowing as the whole has, would reach).
/// `None` where the whole fill's rate now is not positive, or where the
/// last half's pace is not positive or not under [`SLOWER`] of the whole
/// fill's start rate (a leak after a faster start keeps near its start's
/// pace, and its level would climb with it: unit test
/// `growth_that_slowed_once_and_keeps_its_pace_is_not_levelling_off`). A
/// last half that speeds up is taken so too (its
/// level climbs with it): a cache's last half can, by chance, and the
/// corpus's did (`thirtyfirst/01`'s fit curves up; requiring it not to
/// gave that false alarm back).
///
/// A cache whose entries arrive in bursts of random sizes can hold one
/// pace for the 25–30 s of its last half while the whole fill has halved
/// its pace: `thirtyfirst/01`'s tensors grew 0.42 GiB/s from 42 to 62 s
/// of its growth (0.71 GiB/s at 23 s) and levelled at 50 GiB of an 80 GB
/// GPU, but with no level known from 57 s its leak flag came 66 s and
/// "full in" 74 s after its start. A leak beneath a cache keeps its pace
/// too, and its level climbs with what it holds until it is over the top
/// ([`BELOW_FRAC`]).
fn at_own_pace(whole: Slowing, later: &[(f64, f64)], last: f64) -> Option<f64> {
    let pace = slope(later)?;
    if whole.now <= 0.0 || pace <= 0.0 || pace >= SLOWER * whole.then {
        return None;
    }
    Some(last + pace * time_constant(whole.then, whole.now, whole.span_s))
}

/// The slope of the least-squares line through `pts` (x, y), or `None`
/// when the x are all alike.
fn slope(pts: &[(f64, f64)]) -> Option<f64> {
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// What an approach to a plateau, `P − A·e^(−t/τ)`, has still to add
/// (bytes) when its rate fell from `then` to `now` (B/s, `then` > `now`)
/// over `dt_s`: the rate falls by `e^(−dt/τ)`, and what is left is the rate
/// now × τ. Nothing once the rate is not positive.
pub(crate) fn still_to_come(then: f64, now: f64, dt_s: f64) -> f64 {
    if now <= 0.0 {
        return 0.0;
    }
    now * time_constant(then, now, dt_s)
}

/// The time constant τ (s) of an approach to a plateau whose rate fell
/// from `then` to `now` (B/s, both positive, `then` > `now`) over `dt_s`:
/// `dt / ln(then / now)`.
fn time_constant(then: f64, now: f64, dt_s: f64) -> f64 {
    dt_s / (then / now).ln()
}

/// Least squares `y = c0 + c1·x + c2·x²` over `pts` (x, y), or `None` when
/// the x are too few or too alike.
fn quadratic(pts: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let n = pts.len() as f64;
    // Centred on the mean x, for a well-conditioned system.
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let (mut s1, mut s2, mut s3, mut s4) = (0.0, 0.0, 0.0, 0.0);
    let (mut t0, mut t1, mut t2) = (0.0, 0.0, 0.0);
    for &(x, y) in pts {
        let u = x - mx;
        s1 += u;
        s2 += u * u;
        s3 += u * u * u;
        s4 += u * u * u * u;
        t0 += y;
        t1 += u * y;
        t2 += u * u * y;
    }
    // Normal equations for (a, b, c) in y = a + b·u + c·u².
    let m = [[n, s1, s2], [s1, s2, s3], [s2, s3, s4]];
    let r = [t0, t1, t2];
    let det = det3(&m);
    if det.abs() < 1e-9 * s4.max(1.0) * n {
        return None;
    }
    let col = |k: usize| {
        let mut a = m;
        for (row, v) in a.iter_mut().zip(r) {
            row[k] = v;
        }
        det3(&a) / det
    };
    let (a, b, c) = (col(0), col(1), col(2));
    // Back to x: a + b(x − mx) + c(x − mx)².
    Some((a - b * mx + c * mx * mx, b - 2.0 * c * mx, c))
}

fn det3(m: &[[f64; 3]; 3]) -> f64 {
    m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
        - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
        + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
}

#[cfg(test)]
mod tests;
