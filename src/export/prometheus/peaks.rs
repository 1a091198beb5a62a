//! The families that depend on who scrapes: the peaks since that scraper's
//! previous scrape (`export::window` keeps them).

use crate::export::window::Peaks;

use super::{Family, Kind, Labels, Value};

/// The families that depend on who scrapes: peaks since that scraper's
/// previous scrape.
pub(crate) fn render_peaks(labels: &Labels, peaks: &Peaks) -> String {
    let mut out = String::with_capacity(256 * (labels.gpus.len() + labels.procs.len()));
    let mut fam = Family::new(
        &mut out,
        "vramwatch_gpu_memory_peak_bytes",
        Kind::Gauge,
        "Highest device memory in use seen by any read (fast lane included) since this scraper's previous scrape, bytes.",
    );
    for (index, _, own) in &labels.gpus {
        fam.maybe(own, peaks.gpus.get(index).copied().map(Value::Int));
    }
    let mut fam = Family::new(
        &mut out,
        "vramwatch_process_memory_peak_bytes",
        Kind::Gauge,
        "Highest GPU memory of a process seen by any read since this scraper's previous scrape, bytes.",
    );
    for r in &labels.procs {
        fam.maybe(&r.labels, peaks.procs.get(&r.id).copied().map(Value::Int));
    }
    out
}
