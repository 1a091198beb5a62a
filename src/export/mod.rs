//! The exporter: the sampler's snapshots as Prometheus metrics, JSON and a
//! health check over HTTP (`vramwatch serve`, or `--serve ADDR` beside the
//! dashboard or `record`).
//!
//! - [`prometheus`] writes the text exposition format 0.0.4: device metrics
//!   under dcgm-exporter's default names, units and labels and
//!   `vramwatch_*` metrics
//!   dcgm-exporter lacks (per-process memory, unaccounted memory, peaks,
//!   analysis figures).
//! - [`window`] keeps the peaks between two scrapes of the same scraper.
//! - [`http`] is the server: its own runtime thread, bounded requests,
//!   timeouts, one render per snapshot however many scrapers ask.
//!
//! Analysis figures (growth rates, forecasts, leak flags, alert states) are
//! not computed here: whoever has them sends an [`Extra`] through the
//! `watch` channel given in [`http::ServeOptions::extra`], and the next
//! scrape shows them.

pub(crate) mod analysis;
pub mod http;
pub(crate) mod prometheus;
pub(crate) mod snapshot_json;
pub(crate) mod torch_metrics;
pub(crate) mod window;

pub use http::{Limits, ServeError, ServeOptions, Server, bind, serve};

use crate::config::Severity;
use crate::model::ProcessKey;

/// Figures the analysis computes from history, fed to the exporter as they
/// change. Each part is optional: what is absent is not exported.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extra {
    pub gpus: Vec<GpuExtra>,
    pub procs: Vec<ProcExtra>,
    pub alerts: Vec<AlertState>,
}

/// Analysis of one GPU's memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuExtra {
    /// GPU index, as in [`crate::model::GpuSample::index`].
    pub index: u32,
    /// Robust slope of memory in use, bytes per second (negative: shrinking).
    pub growth_bps: Option<f64>,
    /// Seconds until the GPU is full at the current growth; `None` when it is
    /// not growing (nothing is exported then).
    pub seconds_to_full: Option<f64>,
    /// The forecast's earliest and latest ends, seconds (`high` is `None`
    /// when the growth may stop before the GPU is full).
    pub seconds_to_full_low: Option<f64>,
    pub seconds_to_full_high: Option<f64>,
    /// The highest share of its memory read recently, 0..=1, while the GPU
    /// is at risk (peaks at the top); `None` otherwise.
    pub at_risk_ratio: Option<f64>,
}

/// Analysis of one process on one GPU. Exported only while the process is
/// in the snapshot, with the same labels as its memory.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcExtra {
    pub key: ProcessKey,
    pub gpu: u32,
    /// Bytes per second.
    pub growth_bps: Option<f64>,
    /// Growing steadily for long enough to look like a leak.
    pub leak_suspected: bool,
}

/// The state of one alert rule of the program (not a Prometheus alert).
#[derive(Clone, Debug, PartialEq)]
pub struct AlertState {
    /// Short rule name, e.g. `memory`, `temperature`, `forecast`, `leak`.
    pub name: String,
    pub gpu: Option<u32>,
    pub pid: Option<u32>,
    pub severity: Severity,
    /// Firing now.
    pub active: bool,
}
