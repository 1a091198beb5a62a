//! The Prometheus text exposition format 0.0.4, written by hand: the label
//! sets change with every snapshot (processes come and go), which the
//! `prometheus` crate's registry of fixed metric vectors does not fit.
//!
//! Device metrics keep dcgm-exporter's default names, types, units and
//! labels (`gpu`, `UUID`, `pci_bus_id`, `device`, `modelName`, the host
//! label, `DCGM_FI_DRIVER_VERSION`): memory in MiB, power in W, energy in
//! mJ, clocks in MHz. The host label is `Hostname` as dcgm-exporter's
//! releases write it, or what `[serve] hostname_label` says ([`Render`]).
//! `vramwatch_*` metrics use base units (bytes, seconds) and a label set
//! without `modelName`, so that they pass `promtool check metrics` cleanly;
//! join them to the DCGM ones `on(Hostname, gpu)`.
//!
//! A process's descriptive labels (user, command, container) are on one
//! `vramwatch_process_info` series per process; its figures carry only
//! `gpu`, the host label, `pid` and `start_time`, and at most
//! [`Render::max_process_series`] processes-on-a-GPU (those holding the
//! most memory) get series at all.
//!
//! This module holds what every family shares (the entry points, the label
//! sets of a snapshot, the writer); the families live by kind:
//! - `device`: dcgm-exporter's device families and vramwatch's per-GPU
//!   memory and state;
//! - `process`: per-process memory, `vramwatch_process_info`, the cap, and
//!   the labels of a process;
//! - `torch`: the `vramwatch_torch_*` allocator families;
//! - `analysis`: growth, forecast, leak and alert families from [`Extra`];
//! - `peaks`: the per-scraper peak families ([`render_peaks`]).

mod analysis;
mod device;
mod peaks;
mod process;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_process;
mod torch;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::model::{Snapshot, SystemInfo};

use super::Extra;
use process::ProcRow;

pub(crate) use device::xid_of;
pub(crate) use peaks::render_peaks;

/// What Prometheus (3 insists) expects of a 0.0.4 scrape.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The host label dcgm-exporter's releases write (its main branch has
/// `hostname`).
pub(crate) const DEFAULT_HOST_LABEL: &str = "Hostname";

/// Default of [`Render::max_process_series`].
pub(crate) const DEFAULT_MAX_PROCESS_SERIES: usize = 500;

/// How the page is written (`[serve]` options).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Render {
    /// Name of the label that carries the host name; a valid label name
    /// (`config` checks it).
    pub host_label: String,
    /// At most this many processes-on-a-GPU get series, those holding the
    /// most memory; the rest are counted in
    /// `vramwatch_process_series_dropped`.
    pub max_process_series: usize,
}

impl Default for Render {
    fn default() -> Self {
        Render {
            host_label: DEFAULT_HOST_LABEL.into(),
            max_process_series: DEFAULT_MAX_PROCESS_SERIES,
        }
    }
}

/// A sample value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Value {
    Int(u64),
    Float(f64),
}

impl Value {
    fn write(self, out: &mut String) {
        match self {
            Value::Int(v) => {
                let _ = write!(out, "{v}");
            }
            Value::Float(v) if v.is_nan() => out.push_str("NaN"),
            Value::Float(v) if v.is_infinite() => {
                out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" })
            }
            // Debug prints the shortest form that reads back exactly, with
            // an exponent for very large or small values (Go parses both).
            Value::Float(v) => {
                let _ = write!(out, "{v:?}");
            }
        }
    }
}

/// Appends `v` escaped for a label value: `\` → `\\`, `"` → `\"`, newline →
/// `\n`.
pub(crate) fn escape_label_value(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Appends `v` escaped for a HELP line: `\` → `\\`, newline → `\n`.
fn escape_help(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Appends `name="value"` pairs, comma-separated, values escaped.
fn labels(out: &mut String, pairs: &[(&str, &str)]) {
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(k);
        out.push_str("=\"");
        escape_label_value(out, v);
        out.push('"');
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Gauge,
    Counter,
}

/// Writes one metric family: HELP and TYPE once, then its samples. A family
/// without samples writes nothing.
struct Family<'o> {
    out: &'o mut String,
    name: &'static str,
    help: &'static str,
    kind: Kind,
    started: bool,
}

impl<'o> Family<'o> {
    fn new(out: &'o mut String, name: &'static str, kind: Kind, help: &'static str) -> Self {
        Family {
            out,
            name,
            help,
            kind,
            started: false,
        }
    }

    /// One sample; `labels` is an already escaped `a="b",c="d"` list.
    fn sample(&mut self, labels: &str, v: Value) {
        if !self.started {
            self.started = true;
            let _ = write!(self.out, "# HELP {} ", self.name);
            escape_help(self.out, self.help);
            let kind = match self.kind {
                Kind::Gauge => "gauge",
                Kind::Counter => "counter",
            };
            let _ = writeln!(self.out, "\n# TYPE {} {kind}", self.name);
        }
        self.out.push_str(self.name);
        if !labels.is_empty() {
            self.out.push('{');
            self.out.push_str(labels);
            self.out.push('}');
        }
        self.out.push(' ');
        v.write(self.out);
        self.out.push('\n');
    }

    fn maybe(&mut self, labels: &str, v: Option<Value>) {
        if let Some(v) = v {
            self.sample(labels, v);
        }
    }
}

/// Label sets of one snapshot, escaped once and shared by every family.
#[derive(Clone, Debug)]
pub(crate) struct Labels {
    /// Per GPU in snapshot order: `(index, dcgm labels, vramwatch labels)`.
    gpus: Vec<(u32, String, String)>,
    /// The processes-on-a-GPU that get series, sorted by `(gpu, pid)`.
    procs: Vec<ProcRow>,
    /// `vramwatch_process_info` label sets, one per process of `procs`.
    infos: Vec<String>,
    /// How many processes-on-a-GPU the cap left out.
    dropped: usize,
    /// `NAME="host"`: the host label, escaped.
    host: String,
}

impl Labels {
    pub(crate) fn new(system: &SystemInfo, snap: &Snapshot, render: &Render) -> Labels {
        let host_label = render.host_label.as_str();
        let gpus = snap
            .gpus
            .iter()
            .map(|g| device::gpu_labels(system, g.index, host_label))
            .collect();
        let procs = process::rows(system, snap, render);
        let mut host = String::new();
        labels(&mut host, &[(host_label, system.host.as_str())]);
        Labels {
            gpus,
            procs: procs.rows,
            infos: procs.infos,
            dropped: procs.dropped,
            host,
        }
    }

    /// The vramwatch label set of GPU `index`, if it is in the snapshot.
    fn gpu_labels(&self, index: u32) -> Option<&str> {
        self.gpus
            .iter()
            .find(|g| g.0 == index)
            .map(|g| g.2.as_str())
    }

    fn proc_labels(&self, gpu: u32, pid: u32) -> Option<&str> {
        self.procs
            .binary_search_by_key(&(gpu, pid), |r| (r.id.gpu, r.id.key.pid))
            .ok()
            .map(|i| self.procs[i].labels.as_str())
    }
}

/// Everything one scrape shows that depends only on the snapshot: rendered
/// once per snapshot, whoever asks.
pub(crate) struct Body<'a> {
    pub system: &'a SystemInfo,
    pub snap: &'a Snapshot,
    pub labels: &'a Labels,
    /// Last XID per GPU index seen by the exporter (0 = none), as
    /// dcgm-exporter's `DCGM_FI_DEV_XID_ERRORS` reports it.
    pub last_xid: &'a BTreeMap<u32, u64>,
    pub extra: Option<&'a Extra>,
}

impl Body<'_> {
    /// The families in a fixed order: dcgm-exporter's first (in its own
    /// order), then vramwatch's per GPU, per process, PyTorch, analysis and
    /// the snapshot's own.
    pub(crate) fn render(&self) -> String {
        let mut out = String::with_capacity(
            8 * 1024 * self.snap.gpus.len().max(1) + 256 * self.snap.procs.len(),
        );
        device::write(self, &mut out);
        process::write(self.labels, &mut out);
        torch::write(self.labels, &mut out);
        if let Some(x) = self.extra {
            analysis::write(self.labels, x, &mut out);
        }
        self.meta(&mut out);
        out
    }

    /// Which snapshot this is, and which vramwatch and driver wrote it.
    fn meta(&self, out: &mut String) {
        let host = self.labels.host.as_str();
        Family::new(
            out,
            "vramwatch_snapshot_seq",
            Kind::Gauge,
            "Sequence number of the snapshot this scrape shows.",
        )
        .sample(host, Value::Int(self.snap.seq));
        Family::new(
            out,
            "vramwatch_snapshot_timestamp_seconds",
            Kind::Gauge,
            "When the snapshot this scrape shows was read, unix seconds.",
        )
        .sample(host, Value::Float(self.snap.t_ms as f64 / 1000.0));
        let mut l = String::new();
        labels(
            &mut l,
            &[
                ("version", env!("CARGO_PKG_VERSION")),
                ("source", self.system.source.as_str()),
                (
                    "driver_version",
                    self.system.driver_version.as_deref().unwrap_or(""),
                ),
                (
                    "cuda_version",
                    self.system.cuda_version.as_deref().unwrap_or(""),
                ),
            ],
        );
        l.push(',');
        l.push_str(host);
        Family::new(
            out,
            "vramwatch_build_info",
            Kind::Gauge,
            "Always 1: the vramwatch version and where its figures come from.",
        )
        .sample(&l, Value::Int(1));
    }
}
