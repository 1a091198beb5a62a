//! The analysis families: growth and forecast per GPU, growth and leak flag
//! per process, and the state of vramwatch's alert rules, from the
//! [`Extra`] whoever runs the analysis sends. A figure for a GPU or
//! process that is not in the snapshot is left out: it would have no
//! labels to join on.

use std::collections::HashSet;

use crate::config::Severity;
use crate::export::{Extra, GpuExtra};
use crate::sanitize;

use super::{Family, Kind, Labels, Value, labels};

/// Every analysis family, in this order.
pub(super) fn write(l: &Labels, x: &Extra, out: &mut String) {
    gpu_growth(l, x, out);
    seconds_to_full(l, x, out);
    forecast_bounds(l, x, out);
    at_risk(l, x, out);
    proc_growth(l, x, out);
    leak(l, x, out);
    alerts(l, x, out);
}

fn gpu_growth(l: &Labels, x: &Extra, out: &mut String) {
    let mut fam = Family::new(
        out,
        "vramwatch_gpu_memory_growth_bytes_per_second",
        Kind::Gauge,
        "Trend of device memory in use, bytes per second (negative: shrinking).",
    );
    for g in &x.gpus {
        if let Some(lab) = l.gpu_labels(g.index) {
            fam.maybe(lab, g.growth_bps.map(Value::Float));
        }
    }
}

fn seconds_to_full(l: &Labels, x: &Extra, out: &mut String) {
    let mut fam = Family::new(
        out,
        "vramwatch_gpu_memory_seconds_to_full",
        Kind::Gauge,
        "Forecast seconds until device memory is full at the current growth; absent when not growing.",
    );
    for g in &x.gpus {
        if let Some(lab) = l.gpu_labels(g.index) {
            fam.maybe(lab, g.seconds_to_full.map(Value::Float));
        }
    }
}

/// The forecast's range: `vramwatch_gpu_memory_seconds_to_full_low` (the
/// earliest the GPU can be full) and `_high` (the latest; absent when the
/// growth may stop first).
fn forecast_bounds(l: &Labels, x: &Extra, out: &mut String) {
    type Bound = (&'static str, &'static str, fn(&GpuExtra) -> Option<f64>);
    let bounds: [Bound; 2] = [
        (
            "vramwatch_gpu_memory_seconds_to_full_low",
            "Earliest end of the forecast: seconds until device memory may be full; absent when not forecast.",
            |g| g.seconds_to_full_low,
        ),
        (
            "vramwatch_gpu_memory_seconds_to_full_high",
            "Latest end of the forecast: seconds until device memory is full at the slowest growth seen; absent when not forecast or when growth may stop first.",
            |g| g.seconds_to_full_high,
        ),
    ];
    for (name, help, get) in bounds {
        let mut fam = Family::new(out, name, Kind::Gauge, help);
        for g in &x.gpus {
            if let Some(lab) = l.gpu_labels(g.index) {
                fam.maybe(lab, get(g).map(Value::Float));
            }
        }
    }
}

fn at_risk(l: &Labels, x: &Extra, out: &mut String) {
    let mut fam = Family::new(
        out,
        "vramwatch_gpu_memory_at_risk_ratio",
        Kind::Gauge,
        "Highest share of device memory read recently while it is so close to full that the next larger allocation may fail; absent otherwise.",
    );
    for g in &x.gpus {
        if let Some(lab) = l.gpu_labels(g.index) {
            fam.maybe(lab, g.at_risk_ratio.map(Value::Float));
        }
    }
}

fn proc_growth(l: &Labels, x: &Extra, out: &mut String) {
    let mut fam = Family::new(
        out,
        "vramwatch_process_memory_growth_bytes_per_second",
        Kind::Gauge,
        "Trend of a process's GPU memory, bytes per second.",
    );
    for p in &x.procs {
        if let Some(lab) = l.proc_labels(p.gpu, p.key.pid) {
            fam.maybe(lab, p.growth_bps.map(Value::Float));
        }
    }
}

fn leak(l: &Labels, x: &Extra, out: &mut String) {
    let mut fam = Family::new(
        out,
        "vramwatch_process_leak_suspected",
        Kind::Gauge,
        "1 when a process's GPU memory has grown steadily for long enough to look like a leak.",
    );
    for p in &x.procs {
        if let Some(lab) = l.proc_labels(p.gpu, p.key.pid) {
            fam.sample(lab, Value::Int(u64::from(p.leak_suspected)));
        }
    }
}

/// One sample per rule, severity, GPU and PID: the first state given wins,
/// as a second sample of one series would break the scrape.
fn alerts(l: &Labels, x: &Extra, out: &mut String) {
    let mut fam = Family::new(
        out,
        "vramwatch_alert_active",
        Kind::Gauge,
        "1 while one of vramwatch's own alert rules fires.",
    );
    let mut seen = HashSet::new();
    let mut buf = String::new();
    for a in &x.alerts {
        let severity = match a.severity {
            Severity::Normal => "normal",
            Severity::Warn => "warn",
            Severity::Critical => "critical",
        };
        let gpu = a.gpu.map(|g| g.to_string()).unwrap_or_default();
        let pid = a.pid.map(|p| p.to_string()).unwrap_or_default();
        if !seen.insert((a.name.as_str(), severity, a.gpu, a.pid)) {
            continue;
        }
        buf.clear();
        labels(
            &mut buf,
            &[
                ("alert", sanitize::clean_capped(&a.name, 64).as_str()),
                ("severity", severity),
                ("gpu", &gpu),
                ("pid", &pid),
            ],
        );
        buf.push(',');
        buf.push_str(&l.host);
        fam.sample(&buf, Value::Int(u64::from(a.active)));
    }
}
