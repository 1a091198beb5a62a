//! Memory intelligence: peaks, growth rates, phases, leaks, OOM forecasts
//! and alerts, computed from the stream of snapshots (docs/analysis.md).
//!
//! [`Analyzer::observe`] takes one snapshot at a time and returns the alerts
//! it raised; the accessors give the current assessment of each GPU and
//! process. Everything is pure and bounded: per series a window of at most
//! 64 points and at most 128 leak buckets, whatever the sampling rate and
//! however long the run.

pub mod alerts;
pub mod allocator;
pub(crate) mod demand;
pub(crate) mod envelope;
mod eta;
pub(crate) mod forecast;
pub(crate) mod hook;
pub mod leak;
pub(crate) mod levelling;
pub(crate) mod peak;
pub mod phase;
pub mod scorecard;
pub(crate) mod series;
pub mod slope;
pub(crate) mod spike;
pub(crate) mod tensors;
pub mod truth;

use std::collections::HashMap;
use std::time::Duration;

use serde::Serialize;

use crate::config::Config;
pub use alerts::{Alert, AlertKind, AlertLevels};
pub use eta::Eta;
pub use forecast::{Forecast, Room};
pub use hook::{HookError, alert_env, run_hook};
pub use leak::{LeakFlag, LeakParams, LeakSeen};
pub use peak::Peak;
pub use phase::{Phase, PhaseParams};
pub use slope::Rate;

use crate::model::{GpuState, MemInfo, Millis, ProcId};

/// Shortest window the growth rate is measured over.
pub const RATE_WINDOW: Duration = Duration::from_secs(30);
/// The rate window holds at least this many sampling intervals.
pub const RATE_WINDOW_INTERVALS: u32 = 8;

/// Everything the analysis needs from the configuration, plus the
/// estimators' own parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct AnalysisConfig {
    /// The sampling interval (the display interval).
    pub interval: Duration,
    /// Window of the robust growth rate.
    pub rate_window: Duration,
    pub phase: PhaseParams,
    pub leak: LeakParams,
    /// How long a forecast must hold steady before it is shown
    /// (`forecast::Steady`).
    pub forecast_sustain: Duration,
    pub levels: AlertLevels,
    pub bell: bool,
    pub command: Vec<String>,
    pub burst_level: Option<f64>,
    /// An exited process's assessment is kept this long.
    pub forget_after: Duration,
    /// The GPU forecaster's parameters.
    pub envelope: envelope::EnvelopeParams,
    /// Forecast a GPU from its processes' allocator figures where they
    /// publish them (the demand the caching allocator hides from the
    /// driver; docs/analysis.md), else from the driver's reading alone.
    pub allocator_demand: bool,
}

impl AnalysisConfig {
    /// From the validated configuration: `[thresholds]` memory, temperature
    /// and power; `[alerts]` forecast_below, leak_min_rate,
    /// leak_min_duration, bell, command, burst_level; `[sampling]` interval
    /// and exited_keep. The phase's growth threshold is a quarter of
    /// leak_min_rate; the rate window is 30 s or 8 intervals, whichever is
    /// longer, and a volatile series must be calm that long to leave; growth is sustained enough for a forecast when the forecast
    /// has held steady for leak_min_duration (as long as growth must last
    /// to be a leak).
    pub fn from_config(c: &Config) -> AnalysisConfig {
        let a = &c.alerts;
        let interval = c.sampling.interval;
        let rate_window = RATE_WINDOW.max(interval * RATE_WINDOW_INTERVALS);
        AnalysisConfig {
            interval,
            rate_window,
            phase: PhaseParams {
                grow_rate: (a.leak_min_rate / 4.0).max(1.0),
                calm: rate_window,
                ..PhaseParams::default()
            },
            leak: LeakParams {
                min_rate: a.leak_min_rate,
                min_duration: a.leak_min_duration,
                interval,
            },
            forecast_sustain: a.leak_min_duration,
            levels: AlertLevels::from_config(&c.thresholds, a),
            bell: a.bell,
            command: a.command.clone(),
            burst_level: a.burst_level,
            forget_after: c.sampling.exited_keep,
            envelope: envelope::EnvelopeParams::default(),
            allocator_demand: true,
        }
    }
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        AnalysisConfig::from_config(&Config::default())
    }
}

/// What is known about one GPU now.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuAssessment {
    pub index: u32,
    /// The snapshot this is from.
    pub t_ms: Millis,
    pub state: GpuState,
    pub mem: Option<MemInfo>,
    /// Peak of `used` since the analysis started (fast-lane reads count).
    pub peak: Option<Peak>,
    /// Growth of `used` over the rate window.
    pub rate: Option<Rate>,
    pub phase: Phase,
    pub phase_since_ms: Millis,
    /// "Full in ~N s", when growth is sustained (see `envelope`).
    pub forecast: Option<Forecast>,
    /// The highest share of its memory read recently (%), when that is so
    /// close to full that the next larger allocation may fail.
    pub at_risk_pct: Option<f64>,
    /// Where memory that is filling ever more slowly (a cache filling
    /// towards a plateau) will level off, bytes; no forecast is made then.
    pub levels_at: Option<u64>,
    /// Live processes on it that are growing / flagged leaking.
    pub growing: u32,
    pub leaking: u32,
}

/// What is known about one process on one GPU now.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProcAssessment {
    pub id: ProcId,
    pub first_seen_ms: Millis,
    pub last_seen_ms: Millis,
    /// In the newest snapshot.
    pub alive: bool,
    pub mem: Option<u64>,
    pub peak: Option<Peak>,
    pub rate: Option<Rate>,
    pub phase: Phase,
    pub phase_since_ms: Millis,
    pub leak: Option<LeakFlag>,
    /// When, at its own growth, it would use up the GPU's free memory.
    pub forecast: Option<Forecast>,
}

/// The analysis as of one snapshot: every GPU's assessment and every
/// process's not yet forgotten. The pipeline sends one with each snapshot,
/// so every consumer (dashboard, recorder, exporter) reads the same figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Assessment {
    /// The snapshot it is of.
    pub t_ms: Millis,
    /// By GPU index.
    gpus: Vec<GpuAssessment>,
    procs: HashMap<ProcId, ProcAssessment>,
}

impl Assessment {
    pub fn gpu(&self, index: u32) -> Option<&GpuAssessment> {
        self.gpus.iter().find(|g| g.index == index)
    }

    /// Every GPU seen, by index.
    pub fn gpus(&self) -> impl Iterator<Item = &GpuAssessment> {
        self.gpus.iter()
    }

    pub fn process(&self, id: &ProcId) -> Option<&ProcAssessment> {
        self.procs.get(id)
    }

    /// Every process seen and not yet forgotten, in no particular order.
    pub fn processes(&self) -> impl Iterator<Item = &ProcAssessment> {
        self.procs.values()
    }
}

mod analyzer;
pub use analyzer::Analyzer;

#[cfg(test)]
mod tests;
