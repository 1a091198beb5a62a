//! The allocators' demand: what the GPU would hold if PyTorch's caching
//! allocators held no idle cache, from the figures the processes publish
//! (`vramwatch_torch`, `model::alloc`). The caching allocator keeps what it
//! reserved, so the driver sees a staircase of segments that stops at the
//! top long before the job runs out; what the tensors need is what decides
//! when it does. Where the driver's figure is saturated (the GPU at risk)
//! the forecast is made from this instead; elsewhere its latest end moves
//! the driver's forecast's out (the allocator frees its cache and retries
//! before it fails).
//!
//! Per process: its tensors' peak (`allocated_peak`) less what the driver
//! says it holds inside its allocator (its memory less the least it ever
//! held outside: the CUDA context and other libraries). For one process
//! that is its tensors' peak plus its context, a smooth line where the
//! driver showed a staircase stuck at the top.
//!
//! The peak is a high-water mark (since the start or the last
//! `reset_peak_memory_stats()`): it moves only when a transient beats every
//! one before it. Where the transients are rare and the tensors between
//! them grow (`eval_spike/cached`: an evaluation pass every 13 s over a
//! leak), the demand is a staircase too, and the forecaster refuses it
//! ("no new high", then "decelerating": `tenth/01`'s last 26 s). Tried
//! (2026-12-05) and not kept: the tensors now as the baseline with the
//! high-water mark's rises as transients (79 of 122 checkpoints held over
//! every set instead of 95: a growing batch's tensors between steps stay
//! flat while its peaks climb), the high-water mark only where it moved
//! (88), and the tensors now plus the largest transient of the window (74:
//! the tensors read at a random moment of a step swing by the step's
//! activations).
//!
//! The first process to run out is the one with the least slack, so a
//! GPU's demand is its reading plus the largest of each figure over its
//! processes.

use std::collections::VecDeque;

use super::envelope::Envelope;
use super::{AnalysisConfig, Forecast};
use crate::model::{MemInfo, Millis, ProcSample};

/// What the analyzer remembers of one process's allocator figures.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ProcDemand {
    /// The least memory it held outside its allocator's cache (its CUDA
    /// context and other libraries).
    outside: Option<u64>,
}

impl ProcDemand {
    /// What process `sp`, holding `mem` by the driver, adds to its GPU's
    /// demand beyond that reading (negative: its cache holds more than its
    /// tensors ever needed at once). `None` without fresh figures.
    pub(crate) fn observe(&mut self, sp: &ProcSample, mem: u64, t: Millis) -> Option<f64> {
        let d = sp.torch.as_deref()?.fresh(t)?;
        // The file and the driver are read at different moments: a file
        // that still shows more reserved than the driver now sees (the
        // cache was just released) says nothing about what lies outside it.
        if d.reserved <= mem {
            let out = mem - d.reserved;
            self.outside = Some(self.outside.map_or(out, |o| o.min(out)));
        }
        let held = mem.saturating_sub(self.outside?);
        Some(d.allocated_peak as f64 - held as f64)
    }
}

/// What the GPU's demand (its reading `m` plus `delta`), fed to its own
/// regime every snapshot, says: the forecast to show when `want` (the GPU
/// is at risk, or read at `cache_full_pct` with no forecast of the
/// driver's own: where the driver's view is saturated — the caching
/// allocators hold nearly everything, and the driver's figure stops at the
/// top while the tensors still grow — the allocators' figures tell the
/// trend; its earliest end is "now": at risk, the next larger allocation
/// may fail at once), and the latest end of this sample's candidate,
/// wanted or not (see [`latest_from_demand`]).
pub(crate) fn demand_forecast(
    env: &mut Envelope,
    t: Millis,
    m: MemInfo,
    delta: f64,
    gap: f64,
    cfg: &AnalysisConfig,
    want: bool,
) -> (Option<Forecast>, Option<f64>) {
    let usable = m.total.saturating_sub(m.reserved);
    let used = (m.used as f64 + delta).clamp(0.0, usable as f64) as u64;
    let basis = MemInfo {
        used,
        free: usable - used,
        ..m
    };
    let o = env.observe(t, basis, None, gap, &cfg.envelope, want);
    let shown = o.forecast.filter(|_| want);
    (
        shown.map(|f| Forecast { low_s: 0.0, ..f }),
        o.candidate.and_then(|c| c.high_s),
    )
}

/// The demand's latest end (seconds from `t`) once its candidates have
/// come without a break for `hold`, as [`Envelope`] holds a forecast: the
/// earliest of the latest moments (unix ms) they gave since, kept in
/// `seen`. A single candidate's latest end jumps with its rate's slow end
/// (seen: 89 → 206 → 83 s on three samples of `fresh/06`), and that would
/// show as a range that flickers.
pub(crate) fn steady_latest(
    seen: &mut VecDeque<(Millis, Millis)>,
    t: Millis,
    latest: Option<f64>,
    hold: std::time::Duration,
) -> Option<f64> {
    let Some(l) = latest else {
        seen.clear();
        return None;
    };
    let hold = hold.as_millis() as u64;
    seen.push_back((t, t.saturating_add((l * 1000.0) as u64)));
    while seen.len() > 1 && t.saturating_sub(seen[1].0) >= hold {
        seen.pop_front();
    }
    if t.saturating_sub(seen.front()?.0) < hold {
        return None;
    }
    let earliest = seen.iter().map(|(_, at)| *at).min()?;
    Some(earliest.saturating_sub(t) as f64 / 1000.0)
}

/// The driver's forecast `f` with its latest end moved out to the
/// demand's (`latest`, seconds), where that is later. The driver's figure
/// reaching the top is the earliest the job can run out: the caching
/// allocator then frees its cache and retries, and the job runs out when
/// its tensors no longer fit — in `grad_accum` (corpus `fresh/04`) 12 s
/// after the driver's figure first touched the top.
pub(crate) fn latest_from_demand(f: Forecast, latest: Option<f64>, t: Millis) -> Forecast {
    // `latest` counts from `t`; the forecast's times from when it was made
    // (a sample or two earlier when it stands over one that gave none).
    let since = t.saturating_sub(f.made_ms) as f64 / 1000.0;
    Forecast {
        high_s: f.high_s.map(|h| latest.map_or(h, |l| h.max(l + since))),
        ..f
    }
}

/// The demand's forecast `d`, shown at risk, with its latest end moved out
/// to the driver's forecast `v`'s where that is later (open where either
/// is): the allocators' peaks say the next larger allocation may fail now;
/// the allocator frees its cache and retries first, and the driver's trend
/// says how long that can go on (`twentysecond/05`: the demand's "0s
/// (0s–3s)" 12 s before the OOM that the driver's range held). Compared as
/// unix times: either may have been made a sample before the other.
pub(crate) fn demand_reaching_to(d: Forecast, v: &Forecast) -> Forecast {
    let high_s = match (d.range_ms().1, v.range_ms().1) {
        (Some(a), Some(b)) => Some(a.max(b).saturating_sub(d.made_ms) as f64 / 1000.0),
        _ => None,
    };
    Forecast { high_s, ..d }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::forecast::Room;
    use crate::analysis::slope::Rate;

    fn forecast(made_ms: Millis, high_s: Option<f64>) -> Forecast {
        Forecast {
            made_ms,
            room: Room::flat(0),
            rate: Rate {
                bps: 1.0,
                low: 1.0,
                high: 1.0,
            },
            eta_s: 0.0,
            low_s: 0.0,
            high_s,
        }
    }

    #[test]
    fn the_demand_at_risk_reaches_to_the_driver_s_latest_end_in_unix_time() {
        // The demand's made now, ending in 3 s; the driver's made a second
        // before, ending 40 s after it was made: 39 s from now.
        let d = forecast(10_000, Some(3.0));
        let v = forecast(9_000, Some(40.0));
        assert_eq!(demand_reaching_to(d, &v).high_s, Some(39.0));
        // A driver's range that ends sooner leaves the demand's as it is.
        let v = forecast(9_000, Some(2.0));
        assert_eq!(demand_reaching_to(d, &v).high_s, Some(3.0));
        // Either open: open.
        assert_eq!(demand_reaching_to(d, &forecast(9_000, None)).high_s, None);
        assert_eq!(demand_reaching_to(forecast(10_000, None), &v).high_s, None);
    }
}
