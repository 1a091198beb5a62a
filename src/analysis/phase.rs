//! What a memory series is doing: stable, growing, shrinking or volatile
//! (a sawtooth or anything that swings), with hysteresis so the label does
//! not flicker.
//!
//! Hysteresis has two parts. Levels: a phase is entered at a threshold and
//! left only well below it (growing is entered at `grow_rate`, with a
//! confidence range above zero and significant against the reading noise,
//! and left below `grow_rate / 2`; volatile is entered at a residual spread
//! of `volatile_level` and left below a third of it).
//! Time: a new phase must be seen for `confirm` before it is taken (the
//! first one too; leaving volatile takes `calm`, a window's length), and
//! the current one is kept for at least `dwell`.

use std::time::Duration;

use serde::Serialize;

use crate::analysis::slope::Estimate;
use crate::model::Millis;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Too few points yet.
    #[default]
    Unknown,
    Stable,
    Growing,
    Shrinking,
    /// Swings around its trend: a training sawtooth, bursts of allocations.
    Volatile,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Unknown => "unknown",
            Phase::Stable => "stable",
            Phase::Growing => "growing",
            Phase::Shrinking => "shrinking",
            Phase::Volatile => "volatile",
        }
    }

    /// One character for a narrow trend column.
    pub fn symbol(self) -> &'static str {
        match self {
            Phase::Unknown => "?",
            Phase::Stable => "─",
            Phase::Growing => "▲",
            Phase::Shrinking => "▼",
            Phase::Volatile => "≋",
        }
    }
}

/// Growth must be this many standard errors (from the reading noise) away
/// from zero to count.
pub const SIGNIFICANCE: f64 = 5.0;

/// A volatile series stays volatile down to this share of the level it
/// entered at. The spread of one 30-point window wanders by a quarter
/// either way; a 3:1 band keeps noise near the level from flipping the
/// phase.
pub const VOLATILE_LEAVE: f64 = 1.0 / 3.0;

/// The held noise estimate halves every this many window spans.
pub const NOISE_HOLD_SPANS: f64 = 4.0;

/// Fewest points in the window before a phase is given (the noise of
/// fewer point-to-point changes is not worth much).
pub const PHASE_MIN_POINTS: usize = 10;

/// The thresholds of the classifier.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhaseParams {
    /// Bytes/s from which a series is growing (or, negated, shrinking).
    pub grow_rate: f64,
    /// Residual spread (bytes) from which a series is volatile ...
    pub volatile_abs: f64,
    /// ... or this share of its level, whichever is larger.
    pub volatile_rel: f64,
    /// A new phase must hold this long before it is taken.
    pub confirm: Duration,
    /// A phase is kept at least this long.
    pub dwell: Duration,
    /// A volatile series must look calm this long (instead of `confirm`)
    /// before it is called anything else: one window's spread wanders, and
    /// a sawtooth has calm stretches.
    pub calm: Duration,
}

impl Default for PhaseParams {
    fn default() -> Self {
        PhaseParams {
            grow_rate: 1024.0 * 1024.0,
            volatile_abs: 256.0 * 1024.0 * 1024.0,
            volatile_rel: 0.02,
            confirm: Duration::from_secs(2),
            dwell: Duration::from_secs(5),
            calm: Duration::from_secs(30),
        }
    }
}

/// The phase of one series, updated once per point.
#[derive(Clone, Debug, Default)]
pub struct PhaseTracker {
    phase: Phase,
    since_ms: Millis,
    /// A different phase seen, and since when.
    candidate: Option<(Phase, Millis)>,
    /// The reading noise, held: the largest recent estimate, halving every
    /// [`NOISE_HOLD_SPANS`] window spans. One window's estimate of the noise can be low by half
    /// by chance, and noise taken for growth is the flicker this prevents.
    noise: f64,
    noise_t: Option<Millis>,
}

impl PhaseTracker {
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// When the current phase was entered.
    pub fn since_ms(&self) -> Millis {
        self.since_ms
    }

    /// What the estimate alone says, given the current phase (the level
    /// hysteresis).
    ///
    /// Volatile: residual spread and swing (the smaller of the largest
    /// fall and largest rise) both at least `max(volatile_abs,
    /// volatile_rel × level)`, a third of that ([`VOLATILE_LEAVE`]) to
    /// stay. Growing: rate at least
    /// `grow_rate`, its confidence range above zero, and at least
    /// [`SIGNIFICANCE`] standard errors from zero, the standard error
    /// coming from the reading noise (held over recent windows by
    /// [`PhaseTracker::update`]) and the number of points; to stay, half
    /// the rate and half the significance. Shrinking likewise.
    pub fn classify(current: Phase, e: &Estimate, p: &PhaseParams) -> Phase {
        Self::classify_with_noise(current, e, e.noise, p)
    }

    /// As [`PhaseTracker::classify`], with the reading noise given.
    pub fn classify_with_noise(current: Phase, e: &Estimate, noise: f64, p: &PhaseParams) -> Phase {
        let vol_level = p.volatile_abs.max(p.volatile_rel * e.level.abs());
        let vol_level = if current == Phase::Volatile {
            vol_level * VOLATILE_LEAVE
        } else {
            vol_level
        };
        if e.spread >= vol_level && e.swing >= vol_level {
            return Phase::Volatile;
        }
        let r = e.rate;
        // Standard error of the median of m = n/2 pair slopes, each over
        // about half the span: 1.25 × √2 × noise / (span/2) / √m, times
        // (1 + 4/m) as an allowance for the noise itself being estimated
        // from few points.
        let pairs = (e.n / 2).max(1) as f64;
        let se = 1.25 * 2.0 * std::f64::consts::SQRT_2 * noise
            / (e.span_s.max(1e-3) * pairs.sqrt())
            * (1.0 + 4.0 / pairs);
        let sig = |k: f64| r.bps != 0.0 && r.bps.abs() >= k * se;
        match current {
            Phase::Growing if r.bps >= p.grow_rate / 2.0 && sig(SIGNIFICANCE / 2.0) => {
                Phase::Growing
            }
            Phase::Shrinking if r.bps <= -p.grow_rate / 2.0 && sig(SIGNIFICANCE / 2.0) => {
                Phase::Shrinking
            }
            _ if r.bps >= p.grow_rate && r.low > 0.0 && sig(SIGNIFICANCE) => Phase::Growing,
            _ if r.bps <= -p.grow_rate && r.high < 0.0 && sig(SIGNIFICANCE) => Phase::Shrinking,
            _ => Phase::Stable,
        }
    }

    /// Feeds the estimate made at `t_ms` (`None`: too few points) and
    /// returns the phase.
    pub fn update(&mut self, t_ms: Millis, e: Option<&Estimate>, p: &PhaseParams) -> Phase {
        let Some(e) = e.filter(|e| e.n >= PHASE_MIN_POINTS) else {
            return self.phase;
        };
        let decay = match self.noise_t {
            Some(t0) if t_ms > t0 && e.span_s > 0.0 => {
                0.5f64.powf((t_ms - t0) as f64 / 1000.0 / (NOISE_HOLD_SPANS * e.span_s))
            }
            _ => 1.0,
        };
        // Two estimates of the reading noise: from point-to-point changes,
        // and from the residual spread (IQR / 1.349 is σ for normal noise).
        // Either can come out low by chance, so the larger is taken, but
        // the spread may lift the estimate at most to twice the first: a
        // kink from flat to growing has a wide spread around one line and
        // no point-to-point noise at all.
        let now = e.noise.max((e.spread / 1.349).min(2.0 * e.noise));
        self.noise = now.max(self.noise * decay);
        self.noise_t = Some(t_ms);
        let raw = Self::classify_with_noise(self.phase, e, self.noise, p);
        if raw == self.phase {
            self.candidate = None;
            return self.phase;
        }
        let since = match self.candidate {
            Some((c, since)) if c == raw => since,
            _ => {
                self.candidate = Some((raw, t_ms));
                t_ms
            }
        };
        let confirm = if self.phase == Phase::Volatile {
            p.calm.max(p.confirm)
        } else {
            p.confirm
        };
        let confirmed = t_ms.saturating_sub(since) >= confirm.as_millis() as u64;
        let dwelt = self.phase == Phase::Unknown
            || t_ms.saturating_sub(self.since_ms) >= p.dwell.as_millis() as u64;
        if confirmed && dwelt {
            self.phase = raw;
            self.since_ms = t_ms;
            self.candidate = None;
        }
        self.phase
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::slope::Window;

    const MIB: f64 = 1024.0 * 1024.0;

    fn noise(i: u64) -> f64 {
        let mut z = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(99);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    /// Runs `f(t)` at 1 Hz for `secs` and returns the phase after each
    /// point.
    fn run(secs: u64, f: impl Fn(f64) -> f64) -> Vec<Phase> {
        let p = PhaseParams::default();
        let mut w = Window::new(Duration::from_secs(30));
        let mut ph = PhaseTracker::default();
        (0..secs)
            .map(|i| {
                let t = 5_000 + i * 1000;
                w.push(t, f(i as f64));
                ph.update(t, w.estimate().as_ref(), &p)
            })
            .collect()
    }

    fn changes(v: &[Phase]) -> usize {
        v.windows(2).filter(|w| w[0] != w[1]).count()
    }

    #[test]
    fn noisy_plateau_is_stable_and_never_flickers() {
        // ±64 MiB of noise on 40 GiB for an hour.
        let v = run(3600, |t| 40e9 + 64.0 * MIB * noise(t as u64));
        assert_eq!(v[0], Phase::Unknown);
        let known: Vec<_> = v.iter().copied().filter(|p| *p != Phase::Unknown).collect();
        let flips: Vec<_> = v
            .windows(2)
            .enumerate()
            .filter(|(_, w)| w[0] != w[1])
            .map(|(i, w)| (i, w[1]))
            .collect();
        assert!(known.iter().all(|p| *p == Phase::Stable), "{flips:?}");
    }

    #[test]
    fn noisy_growth_is_growing_and_stays_so() {
        let v = run(600, |t| {
            10e9 + 20.0 * MIB * t + 64.0 * MIB * noise(t as u64)
        });
        // After the window has filled, it is growing for good (a short
        // window may first call it stable: too few points to be sure).
        assert!(v[30..].iter().all(|p| *p == Phase::Growing));
        assert!(changes(&v) <= 3);
    }

    #[test]
    fn decline_is_shrinking() {
        let v = run(120, |t| 80e9 - 50.0 * MIB * t);
        assert!(v[12..].iter().all(|p| *p == Phase::Shrinking), "{v:?}");
    }

    #[test]
    fn sawtooth_is_volatile_and_stays_so() {
        let v = run(600, |t| {
            let p = (t % 2.4) / 2.4;
            let frac = if p < 0.7 { p / 0.7 } else { (1.0 - p) / 0.3 };
            50e9 + 26e9 * frac + 64.0 * MIB * noise(t as u64)
        });
        assert!(v[12..].iter().all(|p| *p == Phase::Volatile), "{v:?}");
    }

    #[test]
    fn growth_that_hovers_at_the_threshold_does_not_flicker() {
        // The rate wanders between 0.6 and 1.4 × grow_rate: once growing it
        // never drops below half, so it stays growing.
        let v = run(900, |t| {
            5e9 + MIB * (t + 37.0 * 0.4 * (1.0 - (t / 37.0).cos()))
        });
        assert!(changes(&v[5..]) <= 2, "{} changes", changes(&v));
    }

    #[test]
    fn a_new_phase_waits_for_confirm_and_dwell() {
        let p = PhaseParams::default();
        let mut w = Window::new(Duration::from_secs(30));
        let mut ph = PhaseTracker::default();
        let mut flips = Vec::new();
        // Flat for 40 s, then a steep climb.
        for i in 0..80u64 {
            let t = i * 1000;
            let v = if i < 40 {
                1e9
            } else {
                1e9 + 500.0 * MIB * (i - 40) as f64
            };
            w.push(t, v);
            let before = ph.phase();
            let now = ph.update(t, w.estimate().as_ref(), &p);
            if now != before {
                flips.push((i, now));
            }
        }
        // 10 points at 9 s, confirmed 2 s later.
        assert_eq!(flips[0], (11, Phase::Stable));
        let (at, ph) = flips[1];
        assert_eq!(ph, Phase::Growing);
        // Half the pairs of the 30 s window straddle the kink from ~49 s;
        // confirmed 2 s later. A kink is not volatile.
        assert!((45..=58).contains(&at), "growing at {at}");
        assert_eq!(flips.len(), 2, "{flips:?}");
    }
}
