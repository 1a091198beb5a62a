//! The recording format, version 1 (docs/recording-format.md): the line
//! types and the columnar encoding of a snapshot.
//!
//! Every line is one JSON object whose first key is `"type"`. A snapshot
//! line stores its GPUs and processes as columns (an object of equally long
//! arrays), so keys are written once per line instead of once per row; a
//! process's strings (user, name, command, container) go in a `process`
//! line written when the process first appears or when they change, and
//! snapshot lines refer to it by `(gpu, pid, start_time)`.

use std::sync::Arc;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};

use crate::model::{
    Bar1, Event, GpuSample, GpuState, MemInfo, Millis, ProcKind, ProcSample, Snapshot, SystemInfo,
};

/// The value of the header's `format` key.
pub const FORMAT: &str = "vramwatch-recording";
/// The format version this build writes and reads. Adding a field or a line
/// type keeps the version; anything an older reader would misread bumps it.
pub const VERSION: u32 = 1;

/// Line 1 of every file (each rotated file has its own).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`] for files this build writes.
    pub version: u32,
    /// The vramwatch that wrote the file.
    pub vramwatch_version: String,
    pub host: String,
    /// When this file was started, unix ms.
    pub start_ms: Millis,
    /// The sampling interval the recorder asked for, ms.
    pub interval_ms: u64,
    /// 0 for the first file of a recording, +1 for each file rotation starts.
    #[serde(default)]
    pub part: u32,
    /// Static facts about the machine and its GPUs.
    pub system: SystemInfo,
}

impl Header {
    /// Removes escape sequences and control characters from every string
    /// (a file read back is text from outside).
    pub fn sanitize(&mut self) {
        clean(&mut self.host);
        clean(&mut self.vramwatch_version);
        let s = &mut self.system;
        clean(&mut s.host);
        clean(&mut s.source);
        for v in [
            &mut s.driver_version,
            &mut s.cuda_version,
            &mut s.nvml_version,
        ] {
            clean_opt(v);
        }
        for g in &mut s.gpus {
            clean(&mut g.name);
            clean(&mut g.uuid);
            clean(&mut g.pci_bus_id);
            clean_opt(&mut g.compute_capability);
        }
    }

    pub fn new(system: &SystemInfo, interval_ms: u64, start_ms: Millis) -> Header {
        Header {
            format: FORMAT.into(),
            version: VERSION,
            vramwatch_version: env!("CARGO_PKG_VERSION").into(),
            host: system.host.clone(),
            start_ms,
            interval_ms,
            part: 0,
            system: system.clone(),
        }
    }
}

/// A process's strings, written once per process (and again if they
/// change). The key is `(gpu, pid, start_time)`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessInfo {
    pub gpu: u32,
    pub pid: u32,
    #[serde(default)]
    pub start_time: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns_pid: Option<u32>,
}

/// What identifies a process line: GPU, PID, start time.
pub type ProcId = (u32, u32, u64);

impl ProcessInfo {
    pub fn of(p: &ProcSample) -> ProcessInfo {
        ProcessInfo {
            gpu: p.gpu,
            pid: p.pid,
            start_time: p.start_time,
            user: p.user.clone(),
            name: p.name.clone(),
            command: p.command.clone(),
            container: p.container.clone(),
            ns_pid: p.ns_pid,
        }
    }

    pub fn id(&self) -> ProcId {
        (self.gpu, self.pid, self.start_time)
    }

    /// Whether `p` carries exactly these strings.
    pub fn matches(&self, p: &ProcSample) -> bool {
        self.user == p.user
            && self.name == p.name
            && self.command == p.command
            && self.container == p.container
            && self.ns_pid == p.ns_pid
    }

    /// Removes escape sequences and control characters from the strings.
    pub fn sanitize(&mut self) {
        for v in [
            &mut self.user,
            &mut self.name,
            &mut self.command,
            &mut self.container,
        ] {
            if let Some(a) = v
                && needs_cleaning(a)
            {
                *a = crate::sanitize::clean(a).into();
            }
        }
    }

    fn fill(&self, p: &mut ProcSample) {
        p.user = self.user.clone();
        p.name = self.name.clone();
        p.command = self.command.clone();
        p.container = self.container.clone();
        p.ns_pid = self.ns_pid;
    }
}

/// Whether `s` holds what [`crate::sanitize::clean`] removes.
fn needs_cleaning(s: &str) -> bool {
    s.len() > crate::sanitize::MAX_COMMAND_CHARS
        || s.chars().any(|c| {
            c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
        })
}

fn clean(s: &mut String) {
    if needs_cleaning(s) {
        *s = crate::sanitize::clean(s);
    }
}

fn clean_opt(s: &mut Option<String>) {
    if let Some(s) = s {
        clean(s);
    }
}

/// Where to find one block of lines and what it holds: written after each
/// block (a line in `.jsonl`, a skippable zstd frame in `.jsonl.zst`) so a
/// reader can open a long file without decoding it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IndexRecord {
    /// Block number in this file, from 0.
    pub block: u64,
    /// Byte offset in the file where the block starts.
    pub offset: u64,
    /// Byte offset where it ends (where this record starts).
    pub end: u64,
    /// 1-based line number of the block's first line (in the decompressed
    /// text for `.zst`).
    pub first_line: u64,
    /// Lines in the block.
    pub lines: u64,
    /// Position in the file of the block's first snapshot (0-based).
    pub first: u64,
    /// Time of the block's first snapshot, unix ms.
    pub t0: Millis,
    /// Per snapshot: its time minus the previous one's (the first is 0).
    pub dt: Vec<i64>,
    /// Process lines of the block, each with the position of the snapshot
    /// it precedes.
    #[serde(default)]
    pub procs: Vec<IndexedProcess>,
    /// Event lines of the block with the position of their snapshot.
    #[serde(default)]
    pub events: Vec<IndexedEvent>,
    /// Byte offset of the previous block's record.
    pub prev: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexedProcess {
    pub at: u64,
    #[serde(flatten)]
    pub info: ProcessInfo,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexedEvent {
    pub at: u64,
    #[serde(flatten)]
    pub event: Event,
}

/// A line as `{"type": ty, ...body}`.
#[derive(Serialize)]
struct Tagged<'a, T: Serialize> {
    #[serde(rename = "type")]
    ty: &'static str,
    #[serde(flatten)]
    body: &'a T,
}

#[derive(Serialize)]
struct EventOut<'a> {
    seq: u64,
    #[serde(flatten)]
    event: &'a Event,
}

#[derive(Deserialize)]
pub(crate) struct EventIn {
    #[serde(default)]
    pub seq: Option<u64>,
    #[serde(flatten)]
    pub event: Event,
}

fn line<T: Serialize>(out: &mut Vec<u8>, ty: &'static str, body: &T) {
    // Serialising plain data into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, &Tagged { ty, body });
    out.push(b'\n');
}

pub fn write_header(out: &mut Vec<u8>, h: &Header) {
    line(out, "header", h);
}

pub fn write_process(out: &mut Vec<u8>, p: &ProcessInfo) {
    line(out, "process", p);
}

pub fn write_event(out: &mut Vec<u8>, seq: u64, e: &Event) {
    line(out, "event", &EventOut { seq, event: e });
}

pub fn write_index(out: &mut Vec<u8>, r: &IndexRecord) {
    line(out, "index", r);
}

/// The snapshot line (events and process strings go in lines of their own).
pub fn write_snapshot(out: &mut Vec<u8>, s: &Snapshot) {
    let _ = serde_json::to_writer(&mut *out, &SnapshotOut(s));
    out.push(b'\n');
}

// ---- columnar encoding ---------------------------------------------------

/// Host CPU % is stored to 0.1 %: it comes from 10 ms scheduler ticks, so
/// the digits a float carries beyond that are noise, and noise does not
/// compress (it was half of a crowded node's file). Reading gives the
/// rounded value back; rounding it again changes nothing.
pub fn cpu_precision(pct: f32) -> f32 {
    (pct * 10.0).round() / 10.0
}

/// One column: `f` of every row, as a JSON array.
struct Col<'a, T, F>(&'a [T], F);

impl<T, V: Serialize, F: Fn(&T) -> V> Serialize for Col<'_, T, F> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for row in self.0 {
            seq.serialize_element(&(self.1)(row))?;
        }
        seq.end()
    }
}

/// Writes a column that is always present.
macro_rules! col {
    ($map:ident, $rows:expr, $name:literal, $f:expr) => {
        $map.serialize_entry($name, &Col($rows, $f))?;
    };
}

/// Writes an optional column, leaving it out when every value is null.
macro_rules! opt_col {
    ($map:ident, $rows:expr, $name:literal, $f:expr) => {
        if $rows.iter().any(|r| ($f)(r).is_some()) {
            $map.serialize_entry($name, &Col($rows, $f))?;
        }
    };
}

struct SnapshotOut<'a>(&'a Snapshot);

impl Serialize for SnapshotOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("type", "snapshot")?;
        m.serialize_entry("seq", &self.0.seq)?;
        m.serialize_entry("t_ms", &self.0.t_ms)?;
        m.serialize_entry("gpus", &GpuCols(&self.0.gpus))?;
        m.serialize_entry("procs", &ProcCols(&self.0.procs))?;
        m.end()
    }
}

struct GpuCols<'a>(&'a [GpuSample]);

impl Serialize for GpuCols<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut m = s.serialize_map(None)?;
        if !r.is_empty() {
            col!(m, r, "index", |g: &GpuSample| g.index);
            col!(m, r, "state", |g: &GpuSample| g.state);
            opt_col!(m, r, "mem_used", |g: &GpuSample| g.mem.map(|x| x.used));
            opt_col!(m, r, "mem_reserved", |g: &GpuSample| g
                .mem
                .map(|x| x.reserved));
            opt_col!(m, r, "mem_free", |g: &GpuSample| g.mem.map(|x| x.free));
            opt_col!(m, r, "mem_total", |g: &GpuSample| g.mem.map(|x| x.total));
            opt_col!(m, r, "mem_peak", |g: &GpuSample| g.mem_peak);
            col!(m, r, "mem_reads", |g: &GpuSample| g.mem_reads);
            opt_col!(m, r, "bar1_used", |g: &GpuSample| g.bar1.map(|x| x.used));
            opt_col!(m, r, "bar1_total", |g: &GpuSample| g.bar1.map(|x| x.total));
            opt_col!(m, r, "util_gpu", |g: &GpuSample| g.util_gpu);
            opt_col!(m, r, "util_mem", |g: &GpuSample| g.util_mem);
            opt_col!(m, r, "temp_c", |g: &GpuSample| g.temp_c);
            opt_col!(m, r, "power_mw", |g: &GpuSample| g.power_mw);
            opt_col!(m, r, "power_limit_mw", |g: &GpuSample| g.power_limit_mw);
            opt_col!(m, r, "sm_clock_mhz", |g: &GpuSample| g.sm_clock_mhz);
            opt_col!(m, r, "mem_clock_mhz", |g: &GpuSample| g.mem_clock_mhz);
            opt_col!(m, r, "fan_pct", |g: &GpuSample| g.fan_pct);
            opt_col!(m, r, "pstate", |g: &GpuSample| g.pstate);
            opt_col!(m, r, "pcie_rx_kbs", |g: &GpuSample| g.pcie_rx_kbs);
            opt_col!(m, r, "pcie_tx_kbs", |g: &GpuSample| g.pcie_tx_kbs);
            opt_col!(m, r, "energy_mj", |g: &GpuSample| g.energy_mj);
            opt_col!(m, r, "ecc_volatile", |g: &GpuSample| g.ecc_volatile);
            col!(m, r, "lag_ms", |g: &GpuSample| g.lag_ms);
        }
        m.end()
    }
}

struct ProcCols<'a>(&'a [ProcSample]);

impl Serialize for ProcCols<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut m = s.serialize_map(None)?;
        if !r.is_empty() {
            col!(m, r, "gpu", |p: &ProcSample| p.gpu);
            col!(m, r, "pid", |p: &ProcSample| p.pid);
            col!(m, r, "start_time", |p: &ProcSample| p.start_time);
            col!(m, r, "kind", |p: &ProcSample| p.kind);
            opt_col!(m, r, "mem", |p: &ProcSample| p.mem);
            opt_col!(m, r, "mem_peak", |p: &ProcSample| p.mem_peak);
            opt_col!(m, r, "sm_util", |p: &ProcSample| p.sm_util);
            opt_col!(m, r, "mem_util", |p: &ProcSample| p.mem_util);
            opt_col!(m, r, "enc_util", |p: &ProcSample| p.enc_util);
            opt_col!(m, r, "dec_util", |p: &ProcSample| p.dec_util);
            opt_col!(m, r, "cpu_pct", |p: &ProcSample| p
                .cpu_pct
                .map(cpu_precision));
            opt_col!(m, r, "rss", |p: &ProcSample| p.rss);
            // PyTorch allocator figures, as the process published them.
            opt_col!(m, r, "torch", |p: &ProcSample| p.torch.clone());
        }
        m.end()
    }
}

// ---- decoding ------------------------------------------------------------

/// Only the type of a line, read without building the rest.
#[derive(Deserialize)]
struct LineHead {
    #[serde(rename = "type")]
    ty: Option<String>,
}

#[derive(Deserialize)]
struct SnapshotIn {
    seq: u64,
    t_ms: Millis,
    // Always written (`{}` when empty): a line without them is damaged.
    gpus: GpuColsIn,
    procs: ProcColsIn,
}

#[derive(Default, Deserialize)]
struct GpuColsIn {
    index: Option<Vec<u32>>,
    state: Option<Vec<GpuState>>,
    mem_used: Option<Vec<Option<u64>>>,
    mem_reserved: Option<Vec<Option<u64>>>,
    mem_free: Option<Vec<Option<u64>>>,
    mem_total: Option<Vec<Option<u64>>>,
    mem_peak: Option<Vec<Option<u64>>>,
    mem_reads: Option<Vec<u32>>,
    bar1_used: Option<Vec<Option<u64>>>,
    bar1_total: Option<Vec<Option<u64>>>,
    util_gpu: Option<Vec<Option<u32>>>,
    util_mem: Option<Vec<Option<u32>>>,
    temp_c: Option<Vec<Option<u32>>>,
    power_mw: Option<Vec<Option<u32>>>,
    power_limit_mw: Option<Vec<Option<u32>>>,
    sm_clock_mhz: Option<Vec<Option<u32>>>,
    mem_clock_mhz: Option<Vec<Option<u32>>>,
    fan_pct: Option<Vec<Option<u32>>>,
    pstate: Option<Vec<Option<u32>>>,
    pcie_rx_kbs: Option<Vec<Option<u32>>>,
    pcie_tx_kbs: Option<Vec<Option<u32>>>,
    energy_mj: Option<Vec<Option<u64>>>,
    ecc_volatile: Option<Vec<Option<u64>>>,
    lag_ms: Option<Vec<u32>>,
}

#[derive(Default, Deserialize)]
struct ProcColsIn {
    gpu: Option<Vec<u32>>,
    pid: Option<Vec<u32>>,
    start_time: Option<Vec<u64>>,
    kind: Option<Vec<ProcKind>>,
    mem: Option<Vec<Option<u64>>>,
    mem_peak: Option<Vec<Option<u64>>>,
    sm_util: Option<Vec<Option<u32>>>,
    mem_util: Option<Vec<Option<u32>>>,
    enc_util: Option<Vec<Option<u32>>>,
    dec_util: Option<Vec<Option<u32>>>,
    cpu_pct: Option<Vec<Option<f32>>>,
    rss: Option<Vec<Option<u64>>>,
    torch: Option<Vec<Option<crate::model::alloc::AllocStats>>>,
}

/// Why a line could not be decoded (the reader adds file and line).
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("{}", json_error(.0))]
    Json(serde_json::Error),
    #[error("the line has no \"type\" (every line of a recording names its type)")]
    NoType,
    #[error("the line's type \"{0}\" is one letter off \"{1}\": a damaged line")]
    DamagedType(String, &'static str),
    #[error("column `{table}.{column}` has {got} values where `{table}.{key}` has {want}")]
    Column {
        table: &'static str,
        column: &'static str,
        key: &'static str,
        got: usize,
        want: usize,
    },
}

/// A JSON error: the text is not JSON, or JSON that is not what the
/// format says (a key missing, a value of the wrong kind).
fn json_error(e: &serde_json::Error) -> String {
    if e.is_data() {
        format!("not as the recording format says: {}", json_message(e))
    } else {
        format!("not valid JSON: {}", json_message(e))
    }
}

/// serde_json's message with "at line 1 column N" (a line is one line
/// here) shortened to the column.
fn json_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) if e.line() > 0 => format!("{} (column {})", &s[..i], e.column()),
        _ => s,
    }
}

impl From<serde_json::Error> for LineError {
    fn from(e: serde_json::Error) -> Self {
        LineError::Json(e)
    }
}

/// Checks a column's length; a missing column is `n` defaults.
fn column<T: Default + Clone>(
    c: Option<Vec<T>>,
    n: usize,
    table: &'static str,
    column: &'static str,
    key: &'static str,
) -> Result<std::vec::IntoIter<T>, LineError> {
    match c {
        None => Ok(vec![T::default(); n].into_iter()),
        Some(v) if v.len() == n => Ok(v.into_iter()),
        Some(v) => Err(LineError::Column {
            table,
            column,
            key,
            got: v.len(),
            want: n,
        }),
    }
}

/// Decodes a snapshot line; `lookup` gives the strings of a process by
/// `(gpu, pid, start_time)` (from the process lines before it).
pub fn read_snapshot<'a>(
    text: &[u8],
    lookup: impl Fn(ProcId) -> Option<&'a ProcessInfo>,
) -> Result<Snapshot, LineError> {
    let s: SnapshotIn = serde_json::from_slice(text)?;
    Ok(Snapshot {
        seq: s.seq,
        t_ms: s.t_ms,
        gpus: gpus_from(s.gpus)?,
        procs: procs_from(s.procs, lookup)?,
        events: Vec::new(),
    })
}

macro_rules! columns {
    ($cols:ident, $n:expr, $table:literal, $key:literal; $($name:ident),*) => {
        $(let mut $name = column($cols.$name, $n, $table, stringify!($name), $key)?;)*
    };
}

fn gpus_from(c: GpuColsIn) -> Result<Vec<GpuSample>, LineError> {
    let index = c.index.unwrap_or_default();
    let n = index.len();
    columns!(c, n, "gpus", "index"; state, mem_used, mem_reserved, mem_free, mem_total,
        mem_peak, mem_reads, bar1_used, bar1_total, util_gpu, util_mem, temp_c, power_mw,
        power_limit_mw, sm_clock_mhz, mem_clock_mhz, fan_pct, pstate, pcie_rx_kbs,
        pcie_tx_kbs, energy_mj, ecc_volatile, lag_ms);
    let mut out = Vec::with_capacity(n);
    for index in index {
        // `column` made every iterator exactly `n` long.
        let mut next = || {
            (
                mem_used.next().flatten(),
                mem_reserved.next().flatten(),
                mem_free.next().flatten(),
                mem_total.next().flatten(),
            )
        };
        let mem = match next() {
            (Some(used), Some(reserved), Some(free), Some(total)) => Some(MemInfo {
                used,
                reserved,
                free,
                total,
            }),
            _ => None,
        };
        let bar1 = match (bar1_used.next().flatten(), bar1_total.next().flatten()) {
            (Some(used), Some(total)) => Some(Bar1 { used, total }),
            _ => None,
        };
        out.push(GpuSample {
            index,
            state: state.next().unwrap_or_default(),
            mem,
            mem_peak: mem_peak.next().flatten(),
            mem_reads: mem_reads.next().unwrap_or_default(),
            bar1,
            util_gpu: util_gpu.next().flatten(),
            util_mem: util_mem.next().flatten(),
            temp_c: temp_c.next().flatten(),
            power_mw: power_mw.next().flatten(),
            power_limit_mw: power_limit_mw.next().flatten(),
            sm_clock_mhz: sm_clock_mhz.next().flatten(),
            mem_clock_mhz: mem_clock_mhz.next().flatten(),
            fan_pct: fan_pct.next().flatten(),
            pstate: pstate.next().flatten(),
            pcie_rx_kbs: pcie_rx_kbs.next().flatten(),
            pcie_tx_kbs: pcie_tx_kbs.next().flatten(),
            energy_mj: energy_mj.next().flatten(),
            ecc_volatile: ecc_volatile.next().flatten(),
            lag_ms: lag_ms.next().unwrap_or_default(),
        });
    }
    Ok(out)
}

fn procs_from<'a>(
    c: ProcColsIn,
    lookup: impl Fn(ProcId) -> Option<&'a ProcessInfo>,
) -> Result<Vec<ProcSample>, LineError> {
    let pid = c.pid.unwrap_or_default();
    let n = pid.len();
    columns!(c, n, "procs", "pid"; gpu, start_time, kind, mem, mem_peak, sm_util, mem_util,
        enc_util, dec_util, cpu_pct, rss, torch);
    let mut out = Vec::with_capacity(n);
    for pid in pid {
        let mut p = ProcSample {
            pid,
            start_time: start_time.next().unwrap_or_default(),
            gpu: gpu.next().unwrap_or_default(),
            kind: kind.next().unwrap_or_default(),
            mem: mem.next().flatten(),
            mem_peak: mem_peak.next().flatten(),
            sm_util: sm_util.next().flatten(),
            mem_util: mem_util.next().flatten(),
            enc_util: enc_util.next().flatten(),
            dec_util: dec_util.next().flatten(),
            cpu_pct: cpu_pct.next().flatten(),
            rss: rss.next().flatten(),
            torch: torch.next().flatten().map(|mut t| {
                for v in [
                    &mut t.writer,
                    &mut t.torch_version,
                    &mut t.alloc_conf,
                    &mut t.cuda_visible_devices,
                ] {
                    clean_opt(v);
                }
                Arc::new(t)
            }),
            ..Default::default()
        };
        if let Some(info) = lookup((p.gpu, p.pid, p.start_time)) {
            info.fill(&mut p);
        }
        out.push(p);
    }
    Ok(out)
}

/// Reads a process line.
pub fn read_process(text: &[u8]) -> Result<ProcessInfo, LineError> {
    let mut p: ProcessInfo = serde_json::from_slice(text)?;
    p.sanitize();
    Ok(p)
}

/// Reads an event line.
pub fn read_event(text: &[u8]) -> Result<Event, LineError> {
    Ok(read_event_seq(text)?.1)
}

/// Reads an event line with the `seq` of its snapshot (absent in files
/// other tools wrote).
pub fn read_event_seq(text: &[u8]) -> Result<(Option<u64>, Event), LineError> {
    let mut e: EventIn = serde_json::from_slice(text)?;
    clean(&mut e.event.message);
    Ok((e.seq, e.event))
}

/// Reads an index record.
pub fn read_index(text: &[u8]) -> Result<IndexRecord, LineError> {
    let mut r: IndexRecord = serde_json::from_slice(text)?;
    for p in &mut r.procs {
        p.info.sanitize();
    }
    for e in &mut r.events {
        clean(&mut e.event.message);
    }
    Ok(r)
}

/// The type of a line: a fast check of the prefix every line we write has,
/// else a parse of the line (files rewritten by other tools).
pub fn line_type(text: &[u8]) -> Result<LineType, LineError> {
    for (prefix, t) in [
        (&br#"{"type":"snapshot""#[..], LineType::Snapshot),
        (br#"{"type":"process""#, LineType::Process),
        (br#"{"type":"event""#, LineType::Event),
        (br#"{"type":"index""#, LineType::Index),
        (br#"{"type":"header""#, LineType::Header),
    ] {
        if text.starts_with(prefix) {
            return Ok(t);
        }
    }
    let head: LineHead = serde_json::from_slice(text)?;
    Ok(match head.ty.as_deref() {
        Some("snapshot") => LineType::Snapshot,
        Some("process") => LineType::Process,
        Some("event") => LineType::Event,
        Some("index") => LineType::Index,
        Some("header") => LineType::Header,
        Some(t) => {
            // A type one letter off a known one is damage, not a newer
            // writer's new type.
            let known = ["snapshot", "process", "event", "index", "header"];
            if let Some(k) = known.iter().find(|k| strsim::levenshtein(t, k) == 1) {
                return Err(LineError::DamagedType(
                    crate::sanitize::clean_capped(t, 20),
                    k,
                ));
            }
            LineType::Other
        }
        None => return Err(LineError::NoType),
    })
}

/// The time of a snapshot line, without decoding its columns.
pub fn snapshot_time(text: &[u8]) -> Result<Millis, LineError> {
    Ok(snapshot_head(text)?.1)
}

/// The `seq` and time of a snapshot line, without decoding its columns
/// (the whole line is checked to be JSON).
pub fn snapshot_head(text: &[u8]) -> Result<(u64, Millis), LineError> {
    #[derive(Deserialize)]
    struct T {
        seq: u64,
        t_ms: Millis,
    }
    let t: T = serde_json::from_slice(text)?;
    Ok((t.seq, t.t_ms))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineType {
    Header,
    Snapshot,
    Process,
    Event,
    Index,
    /// A type this version does not know: skipped (a newer writer's).
    Other,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::sim::SimWorld;
    use std::collections::HashMap;

    const T0: u64 = 1_764_000_000_000;

    fn roundtrip(s: &Snapshot) -> Snapshot {
        let mut dict = HashMap::new();
        for p in &s.procs {
            let info = ProcessInfo::of(p);
            let mut text = Vec::new();
            write_process(&mut text, &info);
            let back = read_process(&text).unwrap();
            assert_eq!(back, info);
            dict.insert(info.id(), back);
        }
        let mut text = Vec::new();
        write_snapshot(&mut text, s);
        assert_eq!(text.iter().filter(|&&b| b == b'\n').count(), 1);
        read_snapshot(text.trim_ascii_end(), |id| dict.get(&id)).unwrap()
    }

    #[test]
    fn a_snapshot_survives_the_columns() {
        let w = SimWorld::new("demo", 3, T0).unwrap();
        let mut s = w.snapshot(9, T0 + 50_000, "me");
        s.gpus[1].state = GpuState::Lost;
        s.gpus[1].mem = None;
        s.gpus[2].bar1 = None;
        s.procs[0].cpu_pct = Some(12.3);
        s.procs[1].user = None;
        s.procs[1].ns_pid = Some(7);
        for p in &mut s.procs {
            p.cpu_pct = p.cpu_pct.map(cpu_precision);
        }
        assert_eq!(roundtrip(&s), s);
        let empty = Snapshot {
            seq: 1,
            t_ms: T0,
            ..Default::default()
        };
        assert_eq!(roundtrip(&empty), empty);
    }

    #[test]
    fn cpu_is_kept_to_a_tenth_and_rounding_is_stable() {
        for v in [0.0f32, 0.04, 0.05, 12.345_678, 99.95, 3199.99, 57.0] {
            let r = cpu_precision(v);
            assert!((r - v).abs() <= 0.05 + 1e-4, "{v} -> {r}");
            assert_eq!(cpu_precision(r), r);
            assert!(serde_json::to_string(&r).unwrap().len() <= 6, "{r}");
        }
    }

    #[test]
    fn all_null_columns_are_left_out() {
        let w = SimWorld::new("training", 1, T0).unwrap();
        let s = w.snapshot(0, T0 + 30_000, "me");
        let mut text = Vec::new();
        write_snapshot(&mut text, &s);
        let v: serde_json::Value = serde_json::from_slice(&text).unwrap();
        // The H200 has no fan.
        assert!(v["gpus"].get("fan_pct").is_none());
        assert!(v["gpus"].get("mem_used").is_some());
        assert_eq!(v["type"], "snapshot");
        assert!(text.starts_with(br#"{"type":"snapshot","seq":0,"t_ms":"#));
    }

    #[test]
    fn a_short_column_is_an_error_naming_it() {
        let text =
            br#"{"type":"snapshot","seq":1,"t_ms":5,"gpus":{"index":[0,1],"temp_c":[40]},"procs":{}}"#;
        let e = read_snapshot(text, |_| None).unwrap_err().to_string();
        assert!(e.contains("gpus.temp_c") && e.contains("1 values"), "{e}");
    }

    #[test]
    fn unknown_keys_are_ignored() {
        let text = br#"{"type":"snapshot","seq":1,"t_ms":5,"future":{"x":1},"gpus":{"index":[0],"temp_c":[40],"new_sensor":[3]},"procs":{}}"#;
        let s = read_snapshot(text, |_| None).unwrap();
        assert_eq!(s.gpus[0].temp_c, Some(40));
    }

    /// A field added to the model must be added to the format too: this
    /// lists every key serde writes for a sample and checks the recorder
    /// knows it.
    #[test]
    fn every_model_field_is_recorded() {
        let g = serde_json::to_value(GpuSample::default()).unwrap();
        let known_gpu = [
            "index",
            "state",
            "mem",
            "mem_peak",
            "mem_reads",
            "bar1",
            "util_gpu",
            "util_mem",
            "temp_c",
            "power_mw",
            "power_limit_mw",
            "sm_clock_mhz",
            "mem_clock_mhz",
            "fan_pct",
            "pstate",
            "pcie_rx_kbs",
            "pcie_tx_kbs",
            "energy_mj",
            "ecc_volatile",
            "lag_ms",
        ];
        let keys: Vec<&str> = g.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, known_gpu);
        let p = serde_json::to_value(ProcSample::default()).unwrap();
        let known_proc = [
            "pid",
            "start_time",
            "gpu",
            "kind",
            "mem",
            "mem_peak",
            "sm_util",
            "mem_util",
            "enc_util",
            "dec_util",
            "user",
            "name",
            "command",
            "container",
            "ns_pid",
            "cpu_pct",
            "rss",
        ];
        let keys: Vec<&str> = p.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, known_proc);
        let s = serde_json::to_value(Snapshot::default()).unwrap();
        let keys: Vec<&str> = s.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, ["seq", "t_ms", "gpus", "procs"]);
    }

    #[test]
    fn line_types_are_recognised() {
        assert_eq!(
            line_type(br#"{"type":"snapshot","seq":1}"#).unwrap(),
            LineType::Snapshot
        );
        assert_eq!(
            line_type(br#"{ "seq": 1, "type": "event" }"#).unwrap(),
            LineType::Event
        );
        assert_eq!(line_type(br#"{"type":"gizmo"}"#).unwrap(), LineType::Other);
        assert!(line_type(b"{\"type\":\"snap").is_err());
    }
}
