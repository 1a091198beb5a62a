//! The Prometheus text exposition format 0.0.4, written by hand: the label
//! sets change with every snapshot (processes come and go), which the
//! `prometheus` crate's registry of fixed metric vectors does not fit.
//!
//! Device metrics keep dcgm-exporter's default names, types, units and
//! labels (`gpu`, `UUID`, `pci_bus_id`, `device`, `modelName`, `Hostname`,
//! `DCGM_FI_DRIVER_VERSION`): memory in MiB, power in W, energy in mJ,
//! clocks in MHz. `vramwatch_*` metrics use base units (bytes, seconds) and
//! a label set without `modelName`, so that they pass `promtool check
//! metrics` cleanly; join them to the DCGM ones `on(Hostname, gpu)`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::config::Severity;
use crate::model::{EventKind, GpuSample, GpuState, ProcId, ProcSample, Snapshot, SystemInfo};
use crate::sanitize;

use super::Extra;
use super::window::Peaks;

/// What Prometheus (3 insists) expects of a 0.0.4 scrape.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Longest `command` label value, in characters (an ellipsis marks a cut).
pub const MAX_COMMAND_LABEL: usize = 64;

/// A sample value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
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
pub fn escape_label_value(out: &mut String, v: &str) {
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

/// A process's command as a label value: sanitised (no control characters
/// or escape sequences), cut to [`MAX_COMMAND_LABEL`] characters.
pub fn command_label(raw: &str) -> String {
    let clean = sanitize::clean_capped(raw, MAX_COMMAND_LABEL + 1);
    if clean.chars().count() > MAX_COMMAND_LABEL {
        let mut cut: String = clean.chars().take(MAX_COMMAND_LABEL - 1).collect();
        cut.push('…');
        cut
    } else {
        clean
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

/// One process on one GPU as exported: duplicates of `(gpu, pid)` merged.
#[derive(Clone, Debug)]
struct ProcRow {
    id: ProcId,
    labels: String,
    mem: Option<u64>,
    /// PyTorch allocator figures on this GPU, when published.
    torch: Option<crate::model::alloc::DeviceAlloc>,
}

/// Label sets of one snapshot, escaped once and shared by every family.
#[derive(Clone, Debug)]
pub struct Labels {
    /// Per GPU in snapshot order: `(index, dcgm labels, vramwatch labels)`.
    gpus: Vec<(u32, String, String)>,
    procs: Vec<ProcRow>,
    host: String,
}

impl Labels {
    pub fn new(system: &SystemInfo, snap: &Snapshot) -> Labels {
        let device = |i: u32| system.gpus.iter().find(|d| d.index == i);
        let gpus = snap
            .gpus
            .iter()
            .map(|g| {
                let d = device(g.index);
                let index = g.index.to_string();
                let dev = format!("nvidia{}", g.index);
                let uuid = d.map_or("", |d| d.uuid.as_str());
                let bus = d.map_or("", |d| d.pci_bus_id.as_str());
                let model = d.map_or("", |d| d.name.as_str());
                let mut dcgm = String::new();
                let mut pairs = vec![
                    ("gpu", index.as_str()),
                    ("UUID", uuid),
                    ("pci_bus_id", bus),
                    ("device", dev.as_str()),
                    ("modelName", model),
                    ("Hostname", system.host.as_str()),
                ];
                if let Some(v) = system.driver_version.as_deref() {
                    pairs.push(("DCGM_FI_DRIVER_VERSION", v));
                }
                labels(&mut dcgm, &pairs);
                let mut own = String::new();
                labels(
                    &mut own,
                    &[
                        ("gpu", index.as_str()),
                        ("UUID", uuid),
                        ("pci_bus_id", bus),
                        ("device", dev.as_str()),
                        ("Hostname", system.host.as_str()),
                    ],
                );
                (g.index, dcgm, own)
            })
            .collect();
        // One series per (gpu, pid): a PID listed twice on one GPU (MIG
        // instances) is one process whose memory adds up.
        let mut merged: BTreeMap<(u32, u32), (&ProcSample, Option<u64>)> = BTreeMap::new();
        for p in &snap.procs {
            merged
                .entry((p.gpu, p.pid))
                .and_modify(|(_, m)| *m = add(*m, p.mem))
                .or_insert((p, p.mem));
        }
        let procs = merged
            .into_values()
            .map(|(p, mem)| {
                let uuid = device(p.gpu).map_or("", |d| d.uuid.as_str());
                let mut l = String::new();
                labels(
                    &mut l,
                    &[
                        ("gpu", p.gpu.to_string().as_str()),
                        ("UUID", uuid),
                        ("Hostname", system.host.as_str()),
                        ("pid", p.pid.to_string().as_str()),
                        ("user", p.user.as_deref().unwrap_or("")),
                        ("command", command_label(p.label()).as_str()),
                        ("container", p.container.as_deref().unwrap_or("")),
                    ],
                );
                ProcRow {
                    id: p.id(),
                    labels: l,
                    mem,
                    torch: p.torch.as_ref().and_then(|t| t.devices.first().cloned()),
                }
            })
            .collect();
        let mut host = String::new();
        escape_label_value(&mut host, &system.host);
        Labels { gpus, procs, host }
    }

    fn proc_labels(&self, gpu: u32, pid: u32) -> Option<&str> {
        self.procs
            .binary_search_by_key(&(gpu, pid), |r| (r.id.gpu, r.id.key.pid))
            .ok()
            .map(|i| self.procs[i].labels.as_str())
    }
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.saturating_add(b)),
        (a, b) => a.or(b),
    }
}

/// Everything one scrape shows that depends only on the snapshot: rendered
/// once per snapshot, whoever asks.
pub struct Body<'a> {
    pub system: &'a SystemInfo,
    pub snap: &'a Snapshot,
    pub labels: &'a Labels,
    /// Last XID per GPU index seen by the exporter (0 = none), as
    /// dcgm-exporter's `DCGM_FI_DEV_XID_ERRORS` reports it.
    pub last_xid: &'a BTreeMap<u32, u64>,
    pub extra: Option<&'a Extra>,
}

fn mib(b: u64) -> Value {
    // Rounded up, as nvidia-smi and DCGM show MiB.
    Value::Int(crate::model::units::mib(b))
}

fn int(v: Option<u32>) -> Option<Value> {
    v.map(|v| Value::Int(v.into()))
}

/// How one per-GPU family reads its value from a sample.
type Reading = fn(&GpuSample) -> Option<Value>;

/// dcgm-exporter's default fields that NVML can give (XID aside), in its
/// order, with its types and HELP texts.
const DCGM_FIELDS: &[(&str, Kind, &str, Reading)] = &[
    (
        "DCGM_FI_DEV_SM_CLOCK",
        Kind::Gauge,
        "SM clock frequency (in MHz).",
        |g| int(g.sm_clock_mhz),
    ),
    (
        "DCGM_FI_DEV_MEM_CLOCK",
        Kind::Gauge,
        "Memory clock frequency (in MHz).",
        |g| int(g.mem_clock_mhz),
    ),
    (
        "DCGM_FI_DEV_GPU_TEMP",
        Kind::Gauge,
        "GPU temperature (in C).",
        |g| int(g.temp_c),
    ),
    (
        "DCGM_FI_DEV_POWER_USAGE",
        Kind::Gauge,
        "Power draw (in W).",
        |g| g.power_mw.map(|mw| Value::Float(f64::from(mw) / 1000.0)),
    ),
    (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        Kind::Counter,
        "Total energy consumption since boot (in mJ).",
        |g| g.energy_mj.map(Value::Int),
    ),
    (
        "DCGM_FI_DEV_GPU_UTIL",
        Kind::Gauge,
        "GPU utilization (in %).",
        |g| int(g.util_gpu),
    ),
    (
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        Kind::Gauge,
        "Memory utilization (in %).",
        |g| int(g.util_mem),
    ),
];

/// Memory, after the XID field, as dcgm-exporter orders them.
const DCGM_MEMORY: &[(&str, Kind, &str, Reading)] = &[
    (
        "DCGM_FI_DEV_FB_FREE",
        Kind::Gauge,
        "Framebuffer memory free (in MiB).",
        |g| g.mem.map(|m| mib(m.free)),
    ),
    (
        "DCGM_FI_DEV_FB_USED",
        Kind::Gauge,
        "Framebuffer memory used (in MiB).",
        |g| g.mem.map(|m| mib(m.used)),
    ),
    (
        "DCGM_FI_DEV_FB_RESERVED",
        Kind::Gauge,
        "Framebuffer memory reserved (in MiB).",
        |g| g.mem.map(|m| mib(m.reserved)),
    ),
    // Dashboard 12239 draws "GPU Utilization" from this profiling field,
    // which needs DCGM; NVML's utilisation is the nearest reading.
    (
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        Kind::Gauge,
        "Ratio of time the graphics engine is active (vramwatch: NVML GPU utilization / 100, not a DCGM profiling counter).",
        |g| g.util_gpu.map(|u| Value::Float(f64::from(u) / 100.0)),
    ),
];

/// vramwatch's own per-GPU memory families (base units).
const OWN_MEMORY: &[(&str, Kind, &str, Reading)] = &[
    (
        "vramwatch_gpu_memory_used_bytes",
        Kind::Gauge,
        "Device memory in use, bytes (NVML v2 `used`: reserved memory not included).",
        |g| g.mem.map(|m| Value::Int(m.used)),
    ),
    (
        "vramwatch_gpu_memory_reserved_bytes",
        Kind::Gauge,
        "Device memory the driver reserves and no process can have, bytes.",
        |g| g.mem.map(|m| Value::Int(m.reserved)),
    ),
    (
        "vramwatch_gpu_memory_total_bytes",
        Kind::Gauge,
        "Device memory in total, bytes.",
        |g| g.mem.map(|m| Value::Int(m.total)),
    ),
];

impl Body<'_> {
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(
            8 * 1024 * self.snap.gpus.len().max(1) + 256 * self.snap.procs.len(),
        );
        self.fields(&mut out, DCGM_FIELDS, true);
        let mut fam = Family::new(
            &mut out,
            "DCGM_FI_DEV_XID_ERRORS",
            Kind::Gauge,
            "Value of the last XID error encountered.",
        );
        for (g, (_, dcgm, _)) in self.snap.gpus.iter().zip(&self.labels.gpus) {
            let xid = self.last_xid.get(&g.index).copied().unwrap_or(0);
            fam.sample(dcgm, Value::Int(xid));
        }
        self.fields(&mut out, DCGM_MEMORY, true);
        self.fields(&mut out, OWN_MEMORY, false);
        self.gpus(&mut out);
        self.procs(&mut out);
        if let Some(x) = self.extra {
            self.extra(&mut out, x);
        }
        self.meta(&mut out);
        out
    }

    /// One family per entry of `table`, one sample per GPU that has a value.
    fn fields(
        &self,
        out: &mut String,
        table: &[(&'static str, Kind, &'static str, Reading)],
        dcgm: bool,
    ) {
        for &(name, kind, help, read) in table {
            let mut fam = Family::new(out, name, kind, help);
            for (g, (_, d, own)) in self.snap.gpus.iter().zip(&self.labels.gpus) {
                fam.maybe(if dcgm { d } else { own }, read(g));
            }
        }
    }

    fn gpus(&self, out: &mut String) {
        let (l, s) = (self.labels, self.snap);
        let mut fam = Family::new(
            out,
            "vramwatch_gpu_memory_unaccounted_bytes",
            Kind::Gauge,
            "Device memory in use that no listed process accounts for (driver, contexts, other containers), bytes.",
        );
        for (g, (_, _, own)) in s.gpus.iter().zip(&l.gpus) {
            fam.maybe(own, g.unaccounted(&s.procs).map(Value::Int));
        }
        let mut fam = Family::new(
            out,
            "vramwatch_gpu_state",
            Kind::Gauge,
            "Health of the GPU's readings: 1 for the current state (ok: read this interval, stale: reader late, values older; lost: off the bus).",
        );
        let mut buf = String::new();
        for (g, (_, _, own)) in s.gpus.iter().zip(&l.gpus) {
            for (name, st) in [
                ("ok", GpuState::Ok),
                ("stale", GpuState::Stale),
                ("lost", GpuState::Lost),
            ] {
                buf.clear();
                buf.push_str(own);
                let _ = write!(buf, ",state=\"{name}\"");
                fam.sample(&buf, Value::Int(u64::from(g.state == st)));
            }
        }
    }

    fn procs(&self, out: &mut String) {
        let mut fam = Family::new(
            out,
            "vramwatch_process_memory_bytes",
            Kind::Gauge,
            "GPU memory a process holds on one GPU, bytes.",
        );
        for r in &self.labels.procs {
            fam.maybe(&r.labels, r.mem.map(Value::Int));
        }
        // vramwatch_torch_*: processes that publish their allocator figures.
        if self.labels.procs.iter().all(|r| r.torch.is_none()) {
            return;
        }
        let values: Vec<_> = self
            .labels
            .procs
            .iter()
            .filter_map(|r| {
                Some((
                    r,
                    crate::export::torch_metrics::metric_values(r.torch.as_ref()?),
                ))
            })
            .collect();
        for (i, def) in crate::export::torch_metrics::METRICS.iter().enumerate() {
            let kind = if def.kind == "counter" {
                Kind::Counter
            } else {
                Kind::Gauge
            };
            let mut fam = Family::new(out, def.name, kind, def.help);
            for (r, v) in &values {
                fam.maybe(&r.labels, v[i].map(Value::Float));
            }
        }
    }

    fn extra(&self, out: &mut String, x: &Extra) {
        let l = self.labels;
        let gpu_labels = |i: u32| l.gpus.iter().find(|g| g.0 == i).map(|g| g.2.as_str());
        let mut fam = Family::new(
            out,
            "vramwatch_gpu_memory_growth_bytes_per_second",
            Kind::Gauge,
            "Trend of device memory in use, bytes per second (negative: shrinking).",
        );
        for g in &x.gpus {
            if let Some(lab) = gpu_labels(g.index) {
                fam.maybe(lab, g.growth_bps.map(Value::Float));
            }
        }
        let mut fam = Family::new(
            out,
            "vramwatch_gpu_memory_seconds_to_full",
            Kind::Gauge,
            "Forecast seconds until device memory is full at the current growth; absent when not growing.",
        );
        for g in &x.gpus {
            if let Some(lab) = gpu_labels(g.index) {
                fam.maybe(lab, g.seconds_to_full.map(Value::Float));
            }
        }
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
        let mut fam = Family::new(
            out,
            "vramwatch_alert_active",
            Kind::Gauge,
            "1 while one of vramwatch's own alert rules fires.",
        );
        let mut seen = std::collections::HashSet::new();
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
            let _ = write!(buf, ",Hostname=\"{}\"", l.host);
            fam.sample(&buf, Value::Int(u64::from(a.active)));
        }
    }

    fn meta(&self, out: &mut String) {
        let host = format!("Hostname=\"{}\"", self.labels.host);
        Family::new(
            out,
            "vramwatch_snapshot_seq",
            Kind::Gauge,
            "Sequence number of the snapshot this scrape shows.",
        )
        .sample(&host, Value::Int(self.snap.seq));
        Family::new(
            out,
            "vramwatch_snapshot_timestamp_seconds",
            Kind::Gauge,
            "When the snapshot this scrape shows was read, unix seconds.",
        )
        .sample(&host, Value::Float(self.snap.t_ms as f64 / 1000.0));
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
                ("Hostname", self.system.host.as_str()),
            ],
        );
        Family::new(
            out,
            "vramwatch_build_info",
            Kind::Gauge,
            "Always 1: the vramwatch version and where its figures come from.",
        )
        .sample(&l, Value::Int(1));
    }
}

/// The families that depend on who scrapes: peaks since that scraper's
/// previous scrape.
pub fn render_peaks(labels: &Labels, peaks: &Peaks) -> String {
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

/// The XID code an event reports (`XID 79 on GPU 0`), if it is one.
pub fn xid_of(kind: EventKind, message: &str) -> Option<u64> {
    if kind != EventKind::Xid {
        return None;
    }
    let rest = message.strip_prefix("XID ")?;
    let digits: &str = rest.split(|c: char| !c.is_ascii_digit()).next()?;
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::{AlertState, GpuExtra, ProcExtra};
    use crate::model::units::{GIB, MIB};
    use crate::model::{MemInfo, ProcessKey};
    use crate::source::sim::SimWorld;
    use std::sync::Arc;

    const T0: u64 = 1_764_000_000_000;

    fn demo() -> (Arc<SystemInfo>, Snapshot) {
        let w = SimWorld::new("demo", 1, T0).unwrap();
        (w.info(), w.snapshot(3, T0 + 30_000, "me"))
    }

    fn render(sys: &SystemInfo, snap: &Snapshot, extra: Option<&Extra>) -> String {
        let labels = Labels::new(sys, snap);
        let xid = BTreeMap::new();
        let mut text = Body {
            system: sys,
            snap,
            labels: &labels,
            last_xid: &xid,
            extra,
        }
        .render();
        text.push_str(&render_peaks(&labels, &Peaks::of(snap)));
        text
    }

    #[test]
    fn pytorch_allocator_figures_become_vramwatch_torch_metrics() {
        let (sys, snap) = demo();
        let text = render(&sys, &snap, None);
        let torch: Vec<_> = snap.procs.iter().filter(|p| p.torch.is_some()).collect();
        assert!(
            !torch.is_empty(),
            "the demo's training ranks publish figures"
        );
        let alloc = samples(&text, "vramwatch_torch_allocated_bytes");
        assert_eq!(alloc.len(), torch.len());
        for p in torch {
            let d = &p.torch.as_ref().unwrap().devices[0];
            let want = format!("pid=\"{}\"", p.pid);
            let (_, v) = alloc
                .iter()
                .find(|(s, _)| s.contains(&want))
                .expect("series per process");
            assert_eq!(v.parse::<f64>().unwrap(), d.allocated as f64);
        }
        assert!(text.contains("# TYPE vramwatch_torch_alloc_retries_total counter"));
        // No publisher, no family.
        let mut plain = snap.clone();
        for p in &mut plain.procs {
            p.torch = None;
        }
        assert!(!render(&sys, &plain, None).contains("vramwatch_torch_"));
    }

    /// `name{labels} value` lines whose name is `name` exactly.
    fn samples<'t>(text: &'t str, name: &str) -> Vec<(&'t str, &'t str)> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (series, value) = l.rsplit_once(' ')?;
                let n = series.split('{').next()?;
                (n == name).then_some((series, value))
            })
            .collect()
    }

    #[test]
    fn label_values_are_escaped() {
        let mut s = String::new();
        escape_label_value(&mut s, "a\\b\"c\nd é");
        assert_eq!(s, "a\\\\b\\\"c\\nd é");
        let mut h = String::new();
        escape_help(&mut h, "x\\y\nz \"q\"");
        assert_eq!(h, "x\\\\y\\nz \"q\"");
    }

    #[test]
    fn commands_are_sanitised_and_cut() {
        assert_eq!(command_label("python train.py"), "python train.py");
        assert_eq!(command_label("evil\x1b[2Jcmd\nnext"), "evilcmd next");
        let long = "x".repeat(200);
        let cut = command_label(&long);
        assert_eq!(cut.chars().count(), MAX_COMMAND_LABEL);
        assert!(cut.ends_with('…'));
        assert_eq!(command_label(&"y".repeat(64)), "y".repeat(64));
    }

    #[test]
    fn floats_are_written_as_prometheus_reads_them() {
        let w = |v| {
            let mut s = String::new();
            Value::Float(v).write(&mut s);
            s
        };
        assert_eq!(w(35.686), "35.686");
        assert_eq!(w(1.0), "1.0");
        assert_eq!(w(f64::INFINITY), "+Inf");
        assert_eq!(w(f64::NEG_INFINITY), "-Inf");
        assert_eq!(w(f64::NAN), "NaN");
        assert_eq!(w(1e300), "1e300");
    }

    #[test]
    fn device_metrics_use_dcgm_names_labels_and_units() {
        let (sys, snap) = demo();
        let text = render(&sys, &snap, None);
        let g0 = &snap.gpus[0];
        let d0 = &sys.gpus[0];
        let used = samples(&text, "DCGM_FI_DEV_FB_USED");
        assert_eq!(used.len(), 4);
        let want = format!(
            "DCGM_FI_DEV_FB_USED{{gpu=\"0\",UUID=\"{}\",pci_bus_id=\"{}\",device=\"nvidia0\",modelName=\"NVIDIA H200\",Hostname=\"sim-node\"",
            d0.uuid, d0.pci_bus_id
        );
        assert!(used[0].0.starts_with(&want), "{}", used[0].0);
        // MiB, whole, as DCGM reports them.
        let m = g0.mem.unwrap();
        assert_eq!(used[0].1, m.used.div_ceil(MIB).to_string());
        assert_eq!(
            samples(&text, "DCGM_FI_DEV_FB_RESERVED")[0].1,
            m.reserved.div_ceil(MIB).to_string()
        );
        assert_eq!(
            samples(&text, "DCGM_FI_DEV_FB_FREE")[0].1,
            m.free.div_ceil(MIB).to_string()
        );
        // Watts, not milliwatts; mJ stays mJ.
        let w: f64 = samples(&text, "DCGM_FI_DEV_POWER_USAGE")[0]
            .1
            .parse()
            .unwrap();
        assert_eq!(w, f64::from(g0.power_mw.unwrap()) / 1000.0);
        assert!(w > 1.0 && w < 1000.0, "{w} W");
        assert_eq!(
            samples(&text, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")[0].1,
            g0.energy_mj.unwrap().to_string()
        );
        assert!(text.contains("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"));
        assert!(text.contains("# TYPE DCGM_FI_DEV_FB_USED gauge\n"));
        assert!(text.contains("# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n"));
        for name in [
            "DCGM_FI_DEV_SM_CLOCK",
            "DCGM_FI_DEV_MEM_CLOCK",
            "DCGM_FI_DEV_GPU_TEMP",
            "DCGM_FI_DEV_GPU_UTIL",
            "DCGM_FI_DEV_MEM_COPY_UTIL",
            "DCGM_FI_DEV_XID_ERRORS",
        ] {
            assert_eq!(samples(&text, name).len(), 4, "{name}");
        }
        assert_eq!(
            samples(&text, "DCGM_FI_DEV_SM_CLOCK")[1].1,
            snap.gpus[1].sm_clock_mhz.unwrap().to_string()
        );
    }

    #[test]
    fn vramwatch_metrics_are_in_bytes_with_process_labels() {
        let (sys, snap) = demo();
        let text = render(&sys, &snap, None);
        let used = samples(&text, "vramwatch_gpu_memory_used_bytes");
        assert_eq!(used[0].1, snap.gpus[0].mem.unwrap().used.to_string());
        assert!(!used[0].0.contains("modelName"));
        let un = samples(&text, "vramwatch_gpu_memory_unaccounted_bytes");
        assert_eq!(
            un[2].1,
            snap.gpus[2].unaccounted(&snap.procs).unwrap().to_string()
        );
        let procs = samples(&text, "vramwatch_process_memory_bytes");
        let with_mem = snap.procs.iter().filter(|p| p.mem.is_some()).count();
        assert_eq!(procs.len(), with_mem);
        let p = snap.procs.iter().find(|p| p.mem.is_some()).unwrap();
        let line = procs
            .iter()
            .find(|(s, _)| {
                s.contains(&format!("pid=\"{}\"", p.pid))
                    && s.contains(&format!("gpu=\"{}\"", p.gpu))
            })
            .unwrap();
        assert_eq!(line.1, p.mem.unwrap().to_string());
        assert!(
            line.0
                .contains(&format!("user=\"{}\"", p.user.as_deref().unwrap()))
        );
        assert!(line.0.contains("command=\""));
        assert!(line.0.contains("container=\""));
        assert_eq!(
            samples(&text, "vramwatch_process_memory_peak_bytes").len(),
            snap.procs.iter().filter(|p| p.mem_peak.is_some()).count()
        );
        assert_eq!(
            samples(&text, "vramwatch_gpu_memory_peak_bytes")[0].1,
            snap.gpus[0].mem_peak.unwrap().to_string()
        );
        assert_eq!(samples(&text, "vramwatch_snapshot_seq")[0].1, "3");
        // One-hot state per GPU.
        let st = samples(&text, "vramwatch_gpu_state");
        assert_eq!(st.len(), 12);
        assert!(st[0].0.ends_with("state=\"ok\"}") && st[0].1 == "1");
    }

    #[test]
    fn hostile_process_strings_cannot_break_the_format() {
        let (sys, mut snap) = demo();
        snap.procs[0].command = Some("x\" } evil{a=\"1\"} 99\n# TYPE fake gauge\\".into());
        snap.procs[0].user = Some("us\"er\\".into());
        let text = render(&sys, &snap, None);
        for l in text.lines() {
            assert!(
                !l.starts_with("fake") && !l.starts_with("# TYPE fake"),
                "{l}"
            );
        }
        let line = samples(&text, "vramwatch_process_memory_bytes")
            .into_iter()
            .find(|(s, _)| s.contains("evil"))
            .unwrap();
        assert!(
            line.0
                .contains(r#"command="x\" } evil{a=\"1\"} 99 # TYPE fake gauge\\""#),
            "{}",
            line.0
        );
        assert!(line.0.contains(r#"user="us\"er\\""#));
    }

    #[test]
    fn duplicate_processes_on_a_gpu_become_one_series() {
        let (sys, mut snap) = demo();
        let mut dup = snap.procs[0].clone();
        dup.mem = Some(GIB);
        let first = snap.procs[0].mem.unwrap();
        snap.procs.push(dup);
        let text = render(&sys, &snap, None);
        let key = format!("pid=\"{}\"", snap.procs[0].pid);
        let gpu = format!("gpu=\"{}\"", snap.procs[0].gpu);
        let lines: Vec<_> = samples(&text, "vramwatch_process_memory_bytes")
            .into_iter()
            .filter(|(s, _)| s.contains(&key) && s.contains(&gpu))
            .collect();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].1, (first + GIB).to_string());
    }

    #[test]
    fn every_series_is_unique_and_families_are_contiguous() {
        let w = SimWorld::new("crowded", 3, T0).unwrap();
        let snap = w.snapshot(0, T0 + 60_000, "me");
        let text = render(&w.info(), &snap, None);
        let mut series = std::collections::HashSet::new();
        let mut families = Vec::new();
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix("# TYPE ") {
                families.push(rest.split(' ').next().unwrap().to_owned());
                continue;
            }
            if l.starts_with('#') {
                continue;
            }
            let (s, _) = l.rsplit_once(' ').unwrap();
            assert!(series.insert(s.to_owned()), "duplicate series {s}");
            let name = s.split('{').next().unwrap();
            assert_eq!(families.last().map(String::as_str), Some(name), "{l}");
        }
        let n = families.len();
        families.sort();
        families.dedup();
        assert_eq!(families.len(), n, "a family appears twice");
    }

    #[test]
    fn lost_gpus_drop_readings_but_keep_state_and_xid() {
        let (sys, mut snap) = demo();
        snap.gpus[1] = GpuSample {
            index: 1,
            state: GpuState::Lost,
            ..Default::default()
        };
        let labels = Labels::new(&sys, &snap);
        let xid = BTreeMap::from([(1, 79)]);
        let text = Body {
            system: &sys,
            snap: &snap,
            labels: &labels,
            last_xid: &xid,
            extra: None,
        }
        .render();
        assert_eq!(samples(&text, "DCGM_FI_DEV_FB_USED").len(), 3);
        let x = samples(&text, "DCGM_FI_DEV_XID_ERRORS");
        assert_eq!(x[1].1, "79");
        assert_eq!(x[0].1, "0");
        assert!(text.contains("gpu=\"1\",UUID") && text.contains("state=\"lost\"} 1"));
    }

    #[test]
    fn analysis_figures_show_when_fed() {
        let (sys, snap) = demo();
        assert!(!render(&sys, &snap, None).contains("seconds_to_full"));
        let p = &snap.procs[0];
        let extra = Extra {
            gpus: vec![
                GpuExtra {
                    index: 1,
                    growth_bps: Some(4.0 * MIB as f64),
                    seconds_to_full: Some(250.5),
                },
                GpuExtra {
                    index: 0,
                    growth_bps: Some(-1.5),
                    seconds_to_full: None,
                },
                // Not in the snapshot: ignored.
                GpuExtra {
                    index: 9,
                    growth_bps: Some(1.0),
                    seconds_to_full: Some(1.0),
                },
            ],
            procs: vec![ProcExtra {
                key: ProcessKey {
                    pid: p.pid,
                    start_time: p.start_time,
                },
                gpu: p.gpu,
                growth_bps: Some(1024.0),
                leak_suspected: true,
            }],
            alerts: vec![AlertState {
                name: "forecast".into(),
                gpu: Some(1),
                pid: None,
                severity: Severity::Critical,
                active: true,
            }],
        };
        let text = render(&sys, &snap, Some(&extra));
        let s2f = samples(&text, "vramwatch_gpu_memory_seconds_to_full");
        assert_eq!(s2f.len(), 1);
        assert!(s2f[0].0.contains("gpu=\"1\"") && s2f[0].1 == "250.5");
        let g = samples(&text, "vramwatch_gpu_memory_growth_bytes_per_second");
        assert_eq!(g.len(), 2);
        assert_eq!(g[1].1, "-1.5");
        let leak = samples(&text, "vramwatch_process_leak_suspected");
        assert_eq!(leak.len(), 1);
        assert!(leak[0].0.contains(&format!("pid=\"{}\"", p.pid)) && leak[0].1 == "1");
        let a = samples(&text, "vramwatch_alert_active");
        assert_eq!(
            a[0].0,
            "vramwatch_alert_active{alert=\"forecast\",severity=\"critical\",gpu=\"1\",pid=\"\",Hostname=\"sim-node\"}"
        );
    }

    #[test]
    fn xid_codes_are_read_from_events() {
        // The sampler's own wording, so a change there fails here.
        let mut a = crate::sampler::Assembler::new(1);
        a.fold_slow(
            0,
            Ok(crate::source::SlowReading {
                xids: vec![79],
                ..Default::default()
            }),
        );
        let s = a.publish(0, 0);
        let e = &s.events[0];
        assert_eq!(xid_of(e.kind, &e.message), Some(79));
        assert_eq!(xid_of(EventKind::Note, "XID 79 on GPU 0"), None);
        assert_eq!(xid_of(EventKind::Xid, "garbage"), None);
    }

    #[test]
    fn a_gpu_without_memory_readings_has_no_memory_series() {
        let (sys, mut snap) = demo();
        snap.gpus[3].mem = None;
        snap.gpus[3].mem_peak = None;
        let text = render(&sys, &snap, None);
        assert_eq!(samples(&text, "DCGM_FI_DEV_FB_FREE").len(), 3);
        assert_eq!(samples(&text, "vramwatch_gpu_memory_peak_bytes").len(), 3);
        let _ = MemInfo::default();
    }
}
