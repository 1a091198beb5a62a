//! What the analyzer keeps per GPU ([`GpuTrack`]) and per process
//! ([`ProcTrack`]) between snapshots: each piece of state has one owner
//! here, and `Analyzer::observe` moves it on, one snapshot at a time.

use std::collections::VecDeque;

use super::rise::BeforeRise;
use crate::analysis::alerts::GpuAlerts;
use crate::analysis::demand::ProcDemand;
use crate::analysis::envelope::{Envelope, Rises};
use crate::analysis::forecast::{self, Room};
use crate::analysis::leak::LeakDetector;
use crate::analysis::levelling::Levelling;
#[cfg(doc)]
use crate::analysis::levelling::beyond_cache;
use crate::analysis::series::Series;
use crate::analysis::spike::PendingRise;
use crate::analysis::tensors::TensorLeak;
use crate::analysis::{AnalysisConfig, GpuAssessment, Phase, ProcAssessment, Rate};
use crate::model::{GpuSample, MemInfo, Millis, ProcSample};

#[derive(Clone, Debug)]
pub(super) struct GpuTrack {
    pub(super) series: Series,
    pub(super) envelope: Envelope,
    pub(super) alerts: GpuAlerts,
    pub(super) a: GpuAssessment,
    /// This snapshot's demand less the driver's reading, from the
    /// allocator figures of its processes (`demand`), if any.
    pub(super) demand: Option<f64>,
    /// The forecaster over that demand: its candidate every snapshot, a
    /// forecast shown only where the driver's view is saturated (at risk,
    /// or read at `cache_full_pct` or more with no forecast of its own).
    pub(super) demand_envelope: Envelope,
    /// The demand's candidates since they began without a break: when
    /// each was made and its latest moment (unix ms), for
    /// [`steady_latest`].
    pub(super) demand_latest: VecDeque<(Millis, Millis)>,
    /// When a forecast was last shown for it.
    pub(super) forecast_last_ms: Option<Millis>,
    /// Its driver's figure saturated at the last snapshot (`tensors`).
    pub(super) saturated: bool,
    /// When it last grew only by fills levelling off, and by how much more.
    pub(super) levelled: Option<(Millis, f64)>,
    /// When one of its processes was last seen gone, and when the earliest
    /// of those gone then was first seen.
    pub(super) exit: Option<(Millis, Millis)>,
}

impl GpuTrack {
    pub(super) fn new(g: &GpuSample, t: Millis, cfg: &AnalysisConfig) -> GpuTrack {
        GpuTrack {
            series: Series::new(cfg.rate_window),
            envelope: Envelope::default(),
            alerts: GpuAlerts::default(),
            demand: None,
            demand_envelope: Envelope::default(),
            demand_latest: VecDeque::new(),
            forecast_last_ms: None,
            saturated: false,
            exit: None,
            levelled: None,
            a: GpuAssessment {
                index: g.index,
                t_ms: t,
                state: g.state,
                mem: None,
                peak: None,
                rate: None,
                phase: Phase::Unknown,
                phase_since_ms: t,
                forecast: None,
                at_risk_pct: None,
                levels_at: None,
                growing: 0,
                leaking: 0,
            },
        }
    }

    /// Free memory now, at the peaks and at the troughs (each recent
    /// reading raised by `rate_bps` for the time since it was read).
    pub(super) fn room(&self, t: Millis, m: MemInfo, rate_bps: f64) -> Room {
        let used = m.used as f64;
        let free = m.free as f64;
        let top = self.series.peaks.envelope(t, rate_bps).unwrap_or(used);
        let floor = self.series.window.floor_at(t, rate_bps).unwrap_or(used);
        let at = |x: f64| x.clamp(0.0, u64::MAX as f64) as u64;
        Room::ordered(
            m.free,
            at(free - (top - used).max(0.0)),
            at(free + (used - floor).max(0.0)),
        )
    }
}

#[derive(Clone, Debug)]
pub(super) struct ProcTrack {
    pub(super) series: Series,
    pub(super) leak: LeakDetector,
    /// The leak detector has had its first point (see `CONTEXT_STARTED`).
    pub(super) leak_started: bool,
    /// The leak alert for the current flag has been raised.
    pub(super) leak_alerted: bool,
    /// Whether its memory still reaches new highs.
    pub(super) rises: Rises,
    /// The memory of the previous sample (a level shift restarts the leak
    /// detector).
    pub(super) last_mem: Option<u64>,
    pub(super) steady: forecast::Steady,
    pub(super) seen: u64,
    /// What its allocator figures said (for its GPU's demand).
    pub(super) demand: ProcDemand,
    /// Its tensors' own leak detector (from its allocator figures).
    pub(super) tensors: TensorLeak,
    /// Its leak detectors as they were before a rise by a level shift,
    /// back if it falls back (an evaluation pass: [`BeforeRise`]).
    pub(super) before_rise: Option<Box<PendingRise<BeforeRise>>>,
    /// When its memory last shifted level.
    pub(super) shifted_ms: Option<Millis>,
    /// Its tensors, to tell a fill that levels off (kept over level shifts).
    pub(super) fill: Levelling,
    /// While its tensors are a fill levelling off: how much more the
    /// driver will see it take (bytes, [`beyond_cache`]).
    pub(super) levelling: Option<f64>,
    pub(super) a: ProcAssessment,
}

impl ProcTrack {
    pub(super) fn new(
        sp: &ProcSample,
        t: Millis,
        generation: u64,
        cfg: &AnalysisConfig,
    ) -> ProcTrack {
        ProcTrack {
            series: Series::new(cfg.rate_window),
            leak: LeakDetector::new(&cfg.leak),
            leak_started: false,
            leak_alerted: false,
            rises: Rises::default(),
            last_mem: None,
            steady: forecast::Steady::default(),
            seen: generation,
            demand: ProcDemand::default(),
            tensors: TensorLeak::new(&cfg.leak),
            before_rise: None,
            shifted_ms: None,
            fill: Levelling::default(),
            levelling: None,
            a: ProcAssessment {
                id: sp.id(),
                first_seen_ms: t,
                last_seen_ms: t,
                alive: true,
                mem: None,
                peak: None,
                rate: None,
                phase: Phase::Unknown,
                phase_since_ms: t,
                leak: None,
                forecast: None,
            },
        }
    }

    /// The growth it adds to its GPU: the short-window rate while growing,
    /// else the baseline rate while flagged leaking.
    pub(super) fn growth(&self) -> Option<Rate> {
        if self.levelling.is_some() {
            return None;
        }
        match (self.series.phase.phase(), self.series.estimate) {
            (Phase::Growing, Some(e)) => Some(e.rate),
            _ => self.leak.flag().map(|f| f.rate),
        }
    }
}
