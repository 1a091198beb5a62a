//! The recording format, version 2 (docs/recording-format.md): the line
//! types and the columnar encoding of a snapshot. Version 1 files are read
//! too (they differ in one key of the index record: see [`IndexRecord`]).
//!
//! Every line is one JSON object whose first key is `"type"`. A snapshot
//! line stores its GPUs and processes as columns (an object of equally long
//! arrays), so keys are written once per line instead of once per row; a
//! process's strings (user, name, command, container) go in a `process`
//! line written when the process first appears or when they change, and
//! snapshot lines refer to it by `(gpu, pid, start_time)`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::model::{Event, Millis, ProcSample, Snapshot, SystemInfo};

mod columns;

pub use columns::cpu_precision;
pub(crate) use columns::{MAX_SNAPSHOT_EVENTS, MAX_SNAPSHOT_PROCS};

/// The value of the header's `format` key.
pub const FORMAT: &str = "vramwatch-recording";
/// The format version this build writes. Adding a field or a line type
/// keeps the version; anything an older reader would misread bumps it.
///
/// Version 2 renamed the index record's `procs` to `processes`: a key has
/// one shape in every line type (a snapshot's `procs` is an object of
/// columns, the index's was a list of objects, which DuckDB cannot read as
/// one column). A version 1 reader would take a version 2 index for one
/// that lists no process lines and decode snapshots without their strings,
/// hence the new version.
pub const VERSION: u32 = 2;
/// The oldest format version this build reads.
pub const OLDEST_VERSION: u32 = 1;

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
    /// The container's name and the Kubernetes pod's name, namespace and
    /// UID, where the host said them (added in version 2; absent before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_name: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<Arc<str>>,
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
            container_name: p.container_name.clone(),
            pod: p.pod.clone(),
            namespace: p.namespace.clone(),
            pod_uid: p.pod_uid.clone(),
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
            && self.container_name == p.container_name
            && self.pod == p.pod
            && self.namespace == p.namespace
            && self.pod_uid == p.pod_uid
    }

    /// Removes escape sequences and control characters from the strings.
    pub fn sanitize(&mut self) {
        for v in [
            &mut self.user,
            &mut self.name,
            &mut self.command,
            &mut self.container,
            &mut self.container_name,
            &mut self.pod,
            &mut self.namespace,
            &mut self.pod_uid,
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
        p.container_name = self.container_name.clone();
        p.pod = self.pod.clone();
        p.namespace = self.namespace.clone();
        p.pod_uid = self.pod_uid.clone();
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
    /// it precedes. `processes` in the file (version 1 wrote `procs`, which
    /// is read too).
    #[serde(default, rename = "processes", alias = "procs")]
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
    let _ = serde_json::to_writer(&mut *out, &columns::SnapshotOut(s));
    out.push(b'\n');
}

// ---- decoding ------------------------------------------------------------

/// Only the type of a line, read without building the rest.
#[derive(Deserialize)]
struct LineHead {
    #[serde(rename = "type")]
    ty: Option<String>,
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
    #[error("more than {max} {what} lines for one snapshot")]
    Crowded { what: &'static str, max: usize },
    #[error("holds {got} {what}; a snapshot holds at most {max}")]
    TooMany {
        what: &'static str,
        got: usize,
        max: usize,
    },
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

/// Decodes a snapshot line; `lookup` gives the strings of a process by
/// `(gpu, pid, start_time)` (from the process lines before it).
pub fn read_snapshot<'a>(
    text: &[u8],
    lookup: impl Fn(ProcId) -> Option<&'a ProcessInfo>,
) -> Result<Snapshot, LineError> {
    columns::decode(text, lookup)
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
mod tests;
