//! Inside the PyTorch caching allocator, for processes that opt in with
//! `vramwatch_torch.start()` (the Python package in `python/`).
//!
//! NVML sees what a process has reserved from the driver. PyTorch's caching
//! allocator keeps freed blocks for reuse, so that figure is the allocator's
//! *reserved* memory, not what tensors use (*allocated*); the gap, and the
//! part of it split into pieces too small to reuse (*fragmentation*), is the
//! story behind most `CUDA out of memory` reports. The Python side writes the
//! allocator's figures twice a second to `<dir>/<pid>.json`; this module
//! reads them back for the processes vramwatch sees on a GPU, and draws plain
//! advice from them. The format and the rules are in docs/pytorch.md.
//!
//! Only files we can trust are read: the directory must be ours and closed
//! to others (mode 0700), the file ours, regular, at most
//! [`MAX_FILE_BYTES`], and its PID and start time those of the process it is
//! asked for. Anything else is ignored with a note ([`TorchAllocReader::notes`]),
//! never printed and never a crash.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::model::units::{GIB, MIB, bytes_short};
use crate::model::{Millis, ProcessKey};
use crate::sanitize;

/// The file format version this reader understands. Fields may be added
/// within a version (a reader ignores fields it does not know); a change
/// that breaks readers bumps it, and files of other versions are ignored.
pub const SCHEMA_VERSION: u32 = 1;

/// Larger files are ignored: a real one is under 2 KiB per device.
pub const MAX_FILE_BYTES: u64 = 64 * 1024;

/// Devices kept from one file (more are ignored).
pub const MAX_DEVICES: usize = 64;

/// The start time in the file may differ from vramwatch's by this many
/// seconds: both are `starttime / CLK_TCK + btime`, but `btime` is derived
/// from the wall clock and moves by a second when NTP steps it between the
/// two reads. A different process with the same PID within one second is
/// not a realistic case.
pub const START_TIME_SLACK_S: u64 = 1;

/// A file not rewritten for this many publish intervals (and at least
/// [`STALE_MIN_MS`]) is stale: its process is stuck or its publisher died.
pub const STALE_INTERVALS: u64 = 5;
pub const STALE_MIN_MS: u64 = 5_000;

/// Notes kept (the oldest are dropped).
pub const MAX_NOTES: usize = 64;

/// Where the Python side writes, in the order it prefers them:
/// `$XDG_RUNTIME_DIR/vramwatch`, `/run/user/<uid>/vramwatch` (the usual
/// runtime dir, for a vramwatch started without the variable), and
/// `/tmp/vramwatch-<uid>` (its fallback).
pub fn default_dirs(uid: u32) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(base) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
        && base.is_absolute()
    {
        dirs.push(base.join("vramwatch"));
    }
    let run_user = PathBuf::from(format!("/run/user/{uid}/vramwatch"));
    if !dirs.contains(&run_user) {
        dirs.push(run_user);
    }
    dirs.push(PathBuf::from(format!("/tmp/vramwatch-{uid}")));
    dirs
}

/// The effective user id of this process.
pub fn effective_uid() -> u32 {
    nix::unistd::Uid::effective().as_raw()
}

/// One file: what a PyTorch process said about its allocator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AllocStats {
    pub schema: u32,
    pub pid: u32,
    /// Unix seconds, as vramwatch computes it (see docs/pytorch.md); `None`
    /// where the writer could not read /proc.
    pub start_time: Option<u64>,
    /// When it was written, unix ms.
    pub t_ms: Millis,
    /// Publishes so far (0 for the first).
    #[serde(default)]
    pub seq: u64,
    #[serde(default)]
    pub interval_ms: u64,
    /// e.g. `vramwatch_torch 0.1.0`.
    #[serde(default)]
    pub writer: Option<String>,
    #[serde(default)]
    pub torch_version: Option<String>,
    /// False until the program's first CUDA call: then `devices` is empty.
    #[serde(default)]
    pub cuda_initialized: bool,
    /// The process's `PYTORCH_CUDA_ALLOC_CONF` (else `PYTORCH_ALLOC_CONF`).
    #[serde(default)]
    pub alloc_conf: Option<String>,
    #[serde(default)]
    pub cuda_visible_devices: Option<String>,
    /// What the previous publish cost the process, µs.
    #[serde(default)]
    pub publish_us: Option<u64>,
    /// What the last largest-free-block probe cost, µs.
    #[serde(default)]
    pub snapshot_us: Option<u64>,
    /// Devices the program has used (PyTorch's indices).
    #[serde(default)]
    pub devices: Vec<DeviceAlloc>,
    /// Why the figures could not be read this time, if they could not.
    #[serde(default)]
    pub error: Option<String>,
}

/// The allocator on one device. Bytes unless named otherwise; peaks are
/// since the process started or since its last
/// `torch.cuda.reset_peak_memory_stats()`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceAlloc {
    /// PyTorch's device index (after `CUDA_VISIBLE_DEVICES`; not NVML's).
    pub index: u32,
    /// The device UUID as PyTorch gives it, to match NVML's.
    #[serde(default)]
    pub uuid: Option<String>,
    /// Held by tensors.
    pub allocated: u64,
    /// Held by the allocator from the driver (what NVML counts, less the
    /// CUDA context and non-PyTorch allocations).
    pub reserved: u64,
    /// Allocated plus blocks freed but still in use by a stream.
    #[serde(default)]
    pub active: u64,
    /// Free blocks inside segments that are partly in use: reserved, free,
    /// and not releasable.
    #[serde(default)]
    pub inactive_split: u64,
    #[serde(default)]
    pub allocated_peak: u64,
    #[serde(default)]
    pub reserved_peak: u64,
    #[serde(default)]
    pub active_peak: u64,
    #[serde(default)]
    pub inactive_split_peak: u64,
    /// Times a cudaMalloc failed, the allocator freed its cache and retried.
    #[serde(default)]
    pub num_alloc_retries: u64,
    /// Out-of-memory errors raised (and perhaps caught by the program).
    #[serde(default)]
    pub num_ooms: u64,
    /// The largest free cached block, from `torch.cuda.memory_snapshot()`;
    /// `None` when not probed.
    #[serde(default)]
    pub largest_free: Option<u64>,
    /// When `largest_free` was probed (it is refreshed less often).
    #[serde(default)]
    pub largest_free_t_ms: Option<Millis>,
}

impl DeviceAlloc {
    /// Reserved but not held by tensors: the cache.
    pub fn cached_free(&self) -> u64 {
        self.reserved.saturating_sub(self.allocated)
    }

    /// Share of reserved memory in split free blocks, 0..=1; `None` when
    /// nothing is reserved.
    pub fn fragmentation(&self) -> Option<f64> {
        (self.reserved > 0).then(|| (self.inactive_split as f64 / self.reserved as f64).min(1.0))
    }

    /// What `torch.cuda.empty_cache()` could hand back: free segments with
    /// nothing in use (reserved less active less split free blocks).
    pub fn releasable(&self) -> u64 {
        self.reserved
            .saturating_sub(self.active.max(self.allocated))
            .saturating_sub(self.inactive_split)
    }

    /// NVML's figure for the process less what the allocator reserved: the
    /// CUDA context and what other libraries take with their own cudaMalloc
    /// (NCCL's buffers, for one).
    pub fn outside_allocator(&self, nvml_bytes: u64) -> u64 {
        nvml_bytes.saturating_sub(self.reserved)
    }

    /// The compact "alloc/resv" figure for a table, e.g. `3.20G/5.00G`.
    pub fn short_label(&self) -> String {
        format!(
            "{}/{}",
            bytes_short(self.allocated),
            bytes_short(self.reserved)
        )
    }
}

impl AllocStats {
    /// The device NVML knows by `gpu_uuid` (`GPU-…` or `MIG-…`). PyTorch's
    /// indices are not NVML's (`CUDA_VISIBLE_DEVICES`, `CUDA_DEVICE_ORDER`),
    /// so devices are matched by UUID; a file with one device and no UUID
    /// (an old PyTorch) gives that device.
    pub fn device_for(&self, gpu_uuid: &str) -> Option<&DeviceAlloc> {
        let want = normalise_uuid(gpu_uuid);
        if let Some(d) = self
            .devices
            .iter()
            .find(|d| d.uuid.as_deref().map(normalise_uuid).as_deref() == Some(want.as_str()))
        {
            return Some(d);
        }
        match self.devices.as_slice() {
            [only] if only.uuid.is_none() => Some(only),
            _ => None,
        }
    }

    /// Milliseconds since the file was written (0 if it is from the future).
    pub fn age_ms(&self, now_ms: Millis) -> u64 {
        now_ms.saturating_sub(self.t_ms)
    }

    /// Not rewritten for [`STALE_INTERVALS`] intervals (at least
    /// [`STALE_MIN_MS`]): the figures may be old.
    pub fn is_stale(&self, now_ms: Millis) -> bool {
        let limit = (self.interval_ms.saturating_mul(STALE_INTERVALS)).max(STALE_MIN_MS);
        self.age_ms(now_ms) > limit
    }

    /// Whether `PYTORCH_CUDA_ALLOC_CONF` turns expandable segments on.
    pub fn expandable_segments(&self) -> bool {
        self.alloc_conf.as_deref().is_some_and(|conf| {
            conf.split(',').any(|opt| {
                let mut kv = opt.splitn(2, ':');
                let key = kv.next().unwrap_or("").trim();
                let value = kv.next().unwrap_or("").trim();
                key == "expandable_segments" && value.eq_ignore_ascii_case("true")
            })
        })
    }

    /// Cleans what came from the file before it reaches a screen: strings
    /// lose control characters and are capped, the device list is capped.
    fn sanitised(mut self) -> AllocStats {
        let clean = |s: &mut Option<String>, cap| {
            if let Some(v) = s.as_mut() {
                *v = sanitize::clean_capped(v, cap);
            }
        };
        clean(&mut self.writer, 64);
        clean(&mut self.torch_version, 64);
        clean(&mut self.alloc_conf, 256);
        clean(&mut self.cuda_visible_devices, 256);
        clean(&mut self.error, 256);
        self.devices.truncate(MAX_DEVICES);
        for d in &mut self.devices {
            clean(&mut d.uuid, 64);
        }
        self
    }
}

/// `GPU-8d3c…`, `8d3c…` and `8D3C…` are the same device.
fn normalise_uuid(uuid: &str) -> String {
    let lower = uuid.trim().to_ascii_lowercase();
    lower
        .strip_prefix("gpu-")
        .or_else(|| lower.strip_prefix("mig-"))
        .unwrap_or(&lower)
        .to_owned()
}

/// Why a file was not used.
#[derive(Debug, Error)]
pub enum ReadError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: directory is {why}; it must be ours with mode 0700")]
    UnsafeDir { path: PathBuf, why: String },
    #[error("{path}: owned by uid {owner}, not by us (uid {ours})")]
    NotOurs {
        path: PathBuf,
        owner: u32,
        ours: u32,
    },
    #[error("{path}: not a regular file")]
    NotRegular { path: PathBuf },
    #[error("{path}: {len} bytes, more than the {max} allowed", max = MAX_FILE_BYTES)]
    TooLarge { path: PathBuf, len: u64 },
    #[error("{path}: line {line}, column {column}: {message}")]
    Malformed {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: schema {found}, this vramwatch reads schema {SCHEMA_VERSION}")]
    Schema { path: PathBuf, found: u32 },
    #[error("{path}: written by PID {found}, not by PID {want}")]
    WrongPid {
        path: PathBuf,
        found: u32,
        want: u32,
    },
    #[error(
        "{path}: start time {} is not the process's ({want}): left by an earlier process with PID {pid}",
        found.map_or_else(|| "missing".to_owned(), |t| t.to_string())
    )]
    WrongStartTime {
        path: PathBuf,
        found: Option<u64>,
        want: u64,
        pid: u32,
    },
    #[error("{path}: the start time of PID {pid} is unknown, so the file cannot be matched")]
    UnknownStartTime { path: PathBuf, pid: u32 },
}

/// Parses a file's text. Unknown fields are ignored (fields a later writer
/// adds within the schema).
pub fn parse(text: &str) -> Result<AllocStats, serde_json::Error> {
    serde_json::from_str::<AllocStats>(text).map(AllocStats::sanitised)
}

/// Checks that `dir` is a directory owned by `uid` with no group or other
/// permissions, without following a symlink.
pub fn check_dir(dir: &Path, uid: u32) -> Result<(), ReadError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|source| ReadError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let unsafe_dir = |why: String| ReadError::UnsafeDir {
        path: dir.to_owned(),
        why,
    };
    if !meta.file_type().is_dir() {
        return Err(unsafe_dir("not a directory".into()));
    }
    if meta.uid() != uid {
        return Err(unsafe_dir(format!("owned by uid {}", meta.uid())));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(unsafe_dir(format!("mode {:03o}", meta.mode() & 0o777)));
    }
    Ok(())
}

/// Reads and checks one file for the process `key`: owned by `uid`, a
/// regular file (a symlink or a FIFO is refused without blocking), at most
/// [`MAX_FILE_BYTES`], well-formed, of [`SCHEMA_VERSION`], written by
/// `key.pid` with `key.start_time` (within [`START_TIME_SLACK_S`]). The
/// directory is not checked here: see [`check_dir`].
pub fn read_file(path: &Path, key: ProcessKey, uid: u32) -> Result<AllocStats, ReadError> {
    let io = |source| ReadError::Io {
        path: path.to_owned(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let text = read_checked(&file, path, uid)?;
    let stats = parse(&text).map_err(|e| ReadError::Malformed {
        path: path.to_owned(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    if stats.schema != SCHEMA_VERSION {
        return Err(ReadError::Schema {
            path: path.to_owned(),
            found: stats.schema,
        });
    }
    if stats.pid != key.pid {
        return Err(ReadError::WrongPid {
            path: path.to_owned(),
            found: stats.pid,
            want: key.pid,
        });
    }
    if key.start_time == 0 {
        return Err(ReadError::UnknownStartTime {
            path: path.to_owned(),
            pid: key.pid,
        });
    }
    let same_start = stats
        .start_time
        .is_some_and(|t| t.abs_diff(key.start_time) <= START_TIME_SLACK_S);
    if !same_start {
        return Err(ReadError::WrongStartTime {
            path: path.to_owned(),
            found: stats.start_time,
            want: key.start_time,
            pid: key.pid,
        });
    }
    Ok(stats)
}

/// The text of an open file, after checking what it is through the open
/// handle (no race with a rename between the check and the read).
fn read_checked(file: &File, path: &Path, uid: u32) -> Result<String, ReadError> {
    let meta = file.metadata().map_err(|source| ReadError::Io {
        path: path.to_owned(),
        source,
    })?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular {
            path: path.to_owned(),
        });
    }
    if meta.uid() != uid {
        return Err(ReadError::NotOurs {
            path: path.to_owned(),
            owner: meta.uid(),
            ours: uid,
        });
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(ReadError::TooLarge {
            path: path.to_owned(),
            len: meta.len(),
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // One byte over the limit tells a file that grew since the check.
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ReadError::Io {
            path: path.to_owned(),
            source,
        })?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ReadError::TooLarge {
            path: path.to_owned(),
            len: bytes.len() as u64,
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line_start = good.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        ReadError::Malformed {
            path: path.to_owned(),
            line: good.iter().filter(|b| **b == b'\n').count() + 1,
            column: good.len() - line_start + 1,
            message: "not UTF-8".into(),
        }
    })
}

/// What identifies one version of a file: an atomic replace gives a new
/// inode, a rewrite in place a new mtime or length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Version {
    ino: u64,
    mtime: Option<SystemTime>,
    len: u64,
}

#[derive(Debug)]
struct Entry {
    key: ProcessKey,
    path: PathBuf,
    version: Version,
    stats: Option<Arc<AllocStats>>,
}

/// Reads the files of the processes vramwatch sees, once per interval,
/// re-reading a file only when it changed.
#[derive(Debug)]
pub struct TorchAllocReader {
    dirs: Vec<PathBuf>,
    uid: u32,
    entries: HashMap<u32, Entry>,
    notes: Vec<String>,
    /// Directory notes already given (a bad directory is said once).
    dir_noted: HashMap<PathBuf, String>,
    parses: u64,
}

impl Default for TorchAllocReader {
    fn default() -> Self {
        Self::new()
    }
}

impl TorchAllocReader {
    /// Reads the default directories ([`default_dirs`]) as this user.
    pub fn new() -> TorchAllocReader {
        let uid = effective_uid();
        TorchAllocReader::with_dirs(default_dirs(uid), uid)
    }

    /// Reads `dirs`, in order (the first holding a file for a PID wins),
    /// trusting only files and directories owned by `uid`.
    pub fn with_dirs(dirs: Vec<PathBuf>, uid: u32) -> TorchAllocReader {
        TorchAllocReader {
            dirs,
            uid,
            entries: HashMap::new(),
            notes: Vec::new(),
            dir_noted: HashMap::new(),
            parses: 0,
        }
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Brings the figures of these processes up to date (the processes in
    /// this interval's snapshot) and forgets every other process. Costs one
    /// `stat` per process and directory, and a read only for files that
    /// changed.
    pub fn update(&mut self, keys: &[ProcessKey]) {
        let dirs: Vec<PathBuf> = self
            .dirs
            .clone()
            .into_iter()
            .filter(|d| self.dir_usable(d))
            .collect();
        self.entries
            .retain(|pid, e| keys.iter().any(|k| k.pid == *pid && *k == e.key));
        // A process on two GPUs comes twice.
        let mut seen = std::collections::HashSet::new();
        for key in keys {
            if seen.insert(*key) {
                self.update_one(&dirs, *key);
            }
        }
    }

    /// The latest figures of a process, if it publishes them and they
    /// passed every check.
    pub fn get(&self, key: ProcessKey) -> Option<&Arc<AllocStats>> {
        self.entries
            .get(&key.pid)
            .filter(|e| e.key == key)
            .and_then(|e| e.stats.as_ref())
    }

    /// Why files were ignored, oldest first (at most [`MAX_NOTES`]). For a
    /// debug view or a log file: never print these while the TUI runs.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// Files parsed so far (a file that did not change is not parsed again).
    pub fn parses(&self) -> u64 {
        self.parses
    }

    fn note(&mut self, text: String) {
        if self.notes.len() >= MAX_NOTES {
            self.notes.remove(0);
        }
        self.notes.push(text);
    }

    /// A directory that is missing is simply unused; one that exists but is
    /// not safe is noted once (again if the reason changes).
    fn dir_usable(&mut self, dir: &Path) -> bool {
        match check_dir(dir, self.uid) {
            Ok(()) => {
                self.dir_noted.remove(dir);
                true
            }
            Err(ReadError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                false
            }
            Err(e) => {
                let text = e.to_string();
                if self.dir_noted.get(dir) != Some(&text) {
                    self.dir_noted.insert(dir.to_owned(), text.clone());
                    self.note(format!("ignored {text}"));
                }
                false
            }
        }
    }

    fn update_one(&mut self, dirs: &[PathBuf], key: ProcessKey) {
        let found = dirs.iter().find_map(|d| {
            let path = d.join(format!("{}.json", key.pid));
            let meta = std::fs::symlink_metadata(&path).ok()?;
            Some((path, meta))
        });
        let Some((path, meta)) = found else {
            self.entries.remove(&key.pid);
            return;
        };
        let version = Version {
            ino: meta.ino(),
            mtime: meta.modified().ok(),
            len: meta.len(),
        };
        if let Some(e) = self.entries.get(&key.pid)
            && e.key == key
            && e.path == path
            && e.version == version
        {
            return;
        }
        self.parses += 1;
        let stats = match read_file(&path, key, self.uid) {
            Ok(s) => Some(Arc::new(s)),
            Err(e) => {
                self.note(format!("ignored {e}"));
                None
            }
        };
        self.entries.insert(
            key.pid,
            Entry {
                key,
                path,
                version,
                stats,
            },
        );
    }
}

/// One-off read of a process's figures from the default directories, as
/// this user. For a long-running view use [`TorchAllocReader`].
pub fn read_for(pid: u32, start_time: u64) -> Option<AllocStats> {
    let mut reader = TorchAllocReader::new();
    let key = ProcessKey { pid, start_time };
    reader.update(&[key]);
    reader.get(key).map(|s| (**s).clone())
}

/// Thresholds of [`advice`]; docs/pytorch.md explains each.
pub mod thresholds {
    use super::{GIB, MIB};

    /// Retries from this many on count as "many".
    pub const RETRIES_MANY: u64 = 3;
    /// Split free blocks from this share of reserved memory on count as
    /// high fragmentation.
    pub const FRAGMENTATION_HIGH: f64 = 0.25;
    /// No fragmentation advice for a process reserving less than this.
    pub const RESERVED_MIN: u64 = 256 * MIB;
    /// Memory `empty_cache()` could free is worth mentioning to a process
    /// sharing its GPU from this much on...
    pub const RELEASABLE_MIN: u64 = GIB;
    /// ...and this share of its reserved memory.
    pub const RELEASABLE_SHARE: f64 = 0.25;
    /// After an OOM: tensors at their peak used less than this share of the
    /// reserved peak means the cache, not the tensors, held the memory.
    pub const OOM_TENSOR_SHARE: f64 = 0.8;
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// Plain advice from a process's figures. `others_on_gpu`: other processes
/// use the same GPU (then memory the cache holds is memory they cannot
/// have). One line per finding, most pressing first; empty when all is well.
pub fn advice(stats: &AllocStats, others_on_gpu: bool) -> Vec<String> {
    use thresholds::*;
    let mut out = Vec::new();
    if let Some(err) = &stats.error {
        out.push(format!("The publisher could not read the allocator: {err}"));
    }
    let expandable = stats.expandable_segments();
    let many = stats.devices.len() > 1;
    for d in &stats.devices {
        let prefix = if many {
            format!("cuda:{}: ", d.index)
        } else {
            String::new()
        };
        let mut say = |text: String| out.push(format!("{prefix}{text}"));
        let frag = d.fragmentation().unwrap_or(0.0);
        let fragmented = frag >= FRAGMENTATION_HIGH && d.reserved >= RESERVED_MIN;

        if d.num_ooms > 0 {
            let cache_held = (d.allocated_peak as f64) < OOM_TENSOR_SHARE * d.reserved_peak as f64;
            let what = if cache_held && !expandable {
                format!(
                    "the cache held {} tensors did not use: fragmentation; set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                    bytes_short(d.reserved_peak.saturating_sub(d.allocated_peak))
                )
            } else {
                "the tensors themselves needed it: lower the peak (smaller batches, activation checkpointing, mixed precision)".into()
            };
            say(format!(
                "{} out-of-memory error{}: peak allocated {} vs peak reserved {}; {what}.",
                d.num_ooms,
                if d.num_ooms == 1 { "" } else { "s" },
                bytes_short(d.allocated_peak),
                bytes_short(d.reserved_peak),
            ));
        }

        if d.num_alloc_retries >= RETRIES_MANY && fragmented && !expandable {
            say(format!(
                "{} allocator retries with {} of reserved memory in split blocks: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (at start) so segments grow instead of splitting.",
                d.num_alloc_retries,
                pct(frag)
            ));
        } else if d.num_alloc_retries >= RETRIES_MANY && expandable {
            say(format!(
                "{} allocator retries with expandable segments already on: the process runs at the edge of memory (peak reserved {}); lower the peak.",
                d.num_alloc_retries,
                bytes_short(d.reserved_peak)
            ));
        } else if d.num_alloc_retries > 0 {
            say(format!(
                "{} allocator retr{}: each one flushed the cache and synchronised the device; the process is near its memory limit (peak reserved {}).",
                d.num_alloc_retries,
                if d.num_alloc_retries == 1 { "y" } else { "ies" },
                bytes_short(d.reserved_peak)
            ));
        } else if fragmented {
            let largest = d
                .largest_free
                .map(|b| format!(" (largest free block {})", bytes_short(b)))
                .unwrap_or_default();
            say(format!(
                "{} of reserved memory ({}) is in split blocks too small to reuse{largest}; no retries yet.",
                pct(frag),
                bytes_short(d.inactive_split)
            ));
        }

        let releasable = d.releasable();
        if others_on_gpu
            && releasable >= RELEASABLE_MIN
            && releasable as f64 >= RELEASABLE_SHARE * d.reserved as f64
        {
            say(format!(
                "{} cached but unused while other processes share this GPU: torch.cuda.empty_cache() at a phase boundary (after evaluation, between epochs) hands it back.",
                bytes_short(releasable)
            ));
        }
    }
    out
}

/// A Prometheus metric for each device's figures: name, type, help.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricDef {
    pub name: &'static str,
    /// `gauge` or `counter`.
    pub kind: &'static str,
    pub help: &'static str,
}

/// The `vramwatch_torch_*` metrics, in the order [`metric_values`] gives
/// their values. Labels (gpu, pid, ...) are the exporter's to add.
pub const METRICS: [MetricDef; 10] = [
    MetricDef {
        name: "vramwatch_torch_allocated_bytes",
        kind: "gauge",
        help: "Memory held by PyTorch tensors.",
    },
    MetricDef {
        name: "vramwatch_torch_reserved_bytes",
        kind: "gauge",
        help: "Memory the PyTorch caching allocator holds from the driver.",
    },
    MetricDef {
        name: "vramwatch_torch_active_bytes",
        kind: "gauge",
        help: "Allocated memory plus blocks freed but still in use by a stream.",
    },
    MetricDef {
        name: "vramwatch_torch_inactive_split_bytes",
        kind: "gauge",
        help: "Free blocks inside partly used segments (fragmentation).",
    },
    MetricDef {
        name: "vramwatch_torch_allocated_peak_bytes",
        kind: "gauge",
        help: "Peak of allocated memory since start or the last reset.",
    },
    MetricDef {
        name: "vramwatch_torch_reserved_peak_bytes",
        kind: "gauge",
        help: "Peak of reserved memory since start or the last reset.",
    },
    MetricDef {
        name: "vramwatch_torch_fragmentation_ratio",
        kind: "gauge",
        help: "Inactive split bytes over reserved bytes.",
    },
    MetricDef {
        name: "vramwatch_torch_largest_free_block_bytes",
        kind: "gauge",
        help: "Largest free block in the cache (probed less often).",
    },
    MetricDef {
        name: "vramwatch_torch_alloc_retries_total",
        kind: "counter",
        help: "cudaMalloc failures after which the allocator flushed its cache and retried.",
    },
    MetricDef {
        name: "vramwatch_torch_ooms_total",
        kind: "counter",
        help: "Out-of-memory errors the allocator raised.",
    },
];

/// The values of [`METRICS`] for one device, in the same order; `None`
/// where there is no figure (no largest-free probe, nothing reserved).
pub fn metric_values(d: &DeviceAlloc) -> [Option<f64>; 10] {
    [
        Some(d.allocated as f64),
        Some(d.reserved as f64),
        Some(d.active as f64),
        Some(d.inactive_split as f64),
        Some(d.allocated_peak as f64),
        Some(d.reserved_peak as f64),
        d.fragmentation(),
        d.largest_free.map(|b| b as f64),
        Some(d.num_alloc_retries as f64),
        Some(d.num_ooms as f64),
    ]
}

#[cfg(test)]
mod tests {
    use super::thresholds::*;
    use super::*;

    fn dev(allocated: u64, reserved: u64) -> DeviceAlloc {
        DeviceAlloc {
            allocated,
            reserved,
            active: allocated,
            allocated_peak: allocated,
            reserved_peak: reserved,
            ..Default::default()
        }
    }

    fn stats(devices: Vec<DeviceAlloc>) -> AllocStats {
        AllocStats {
            schema: 1,
            pid: 1,
            start_time: Some(1),
            devices,
            ..Default::default()
        }
    }

    #[test]
    fn derived_figures() {
        let mut d = dev(6 * GIB, 10 * GIB);
        d.active = 7 * GIB;
        d.inactive_split = GIB;
        assert_eq!(d.cached_free(), 4 * GIB);
        assert_eq!(d.fragmentation(), Some(0.1));
        // 10 reserved - 7 active - 1 split = 2 in whole free segments.
        assert_eq!(d.releasable(), 2 * GIB);
        assert_eq!(d.outside_allocator(10 * GIB + 600 * MIB), 600 * MIB);
        assert_eq!(d.outside_allocator(9 * GIB), 0);
        assert_eq!(d.short_label(), "6.00G/10.0G");
        // Nothing reserved: no fragmentation figure; nonsense never underflows.
        assert_eq!(dev(0, 0).fragmentation(), None);
        let odd = DeviceAlloc {
            allocated: 5,
            reserved: 3,
            inactive_split: 9,
            ..Default::default()
        };
        assert_eq!(odd.cached_free(), 0);
        assert_eq!(odd.releasable(), 0);
        assert_eq!(odd.fragmentation(), Some(1.0));
    }

    #[test]
    fn expandable_segments_is_read_from_the_conf() {
        let with = |conf: Option<&str>| AllocStats {
            alloc_conf: conf.map(Into::into),
            ..Default::default()
        };
        assert!(with(Some("expandable_segments:True")).expandable_segments());
        assert!(
            with(Some("max_split_size_mb:128, expandable_segments:true")).expandable_segments()
        );
        assert!(!with(Some("expandable_segments:False")).expandable_segments());
        assert!(!with(Some("max_split_size_mb:128")).expandable_segments());
        assert!(!with(None).expandable_segments());
    }

    #[test]
    fn devices_match_by_uuid_whatever_the_prefix_or_case() {
        let mut a = dev(1, 2);
        a.index = 0;
        a.uuid = Some("8d3c0f2e-1111-2222-3333-444455556666".into());
        let mut b = dev(3, 4);
        b.index = 1;
        b.uuid = Some("GPU-AAAA0000-1111-2222-3333-444455556666".into());
        let s = stats(vec![a, b]);
        let hit = |u: &str| s.device_for(u).map(|d| d.index);
        assert_eq!(hit("GPU-8d3c0f2e-1111-2222-3333-444455556666"), Some(0));
        assert_eq!(hit("gpu-aaaa0000-1111-2222-3333-444455556666"), Some(1));
        assert_eq!(hit("GPU-ffffffff-1111-2222-3333-444455556666"), None);
        // One device without a UUID: it is the one.
        let s = stats(vec![dev(1, 2)]);
        assert!(s.device_for("GPU-anything").is_some());
        let s = stats(vec![dev(1, 2), dev(3, 4)]);
        assert!(s.device_for("GPU-anything").is_none());
    }

    #[test]
    fn staleness_counts_intervals_with_a_floor() {
        let s = AllocStats {
            t_ms: 100_000,
            interval_ms: 500,
            ..Default::default()
        };
        assert!(!s.is_stale(100_000 + STALE_MIN_MS));
        assert!(s.is_stale(100_000 + STALE_MIN_MS + 1));
        let slow = AllocStats {
            t_ms: 100_000,
            interval_ms: 10_000,
            ..Default::default()
        };
        assert!(!slow.is_stale(100_000 + 49_000));
        assert!(slow.is_stale(100_000 + 51_000));
        assert_eq!(s.age_ms(50), 0);
    }

    #[test]
    fn parse_cleans_strings_from_the_file() {
        let s = parse(
            r#"{"schema":1,"pid":2,"start_time":3,"t_ms":4,"alloc_conf":"\u001b[31mexpandable_segments:True\u0007","devices":[{"index":0,"allocated":1,"reserved":2,"uuid":"\u001b]0;x\u0007GPU-1"}]}"#,
        )
        .unwrap();
        assert_eq!(s.alloc_conf.as_deref(), Some("expandable_segments:True"));
        assert_eq!(s.devices[0].uuid.as_deref(), Some("GPU-1"));
    }

    #[test]
    fn a_calm_process_gets_no_advice() {
        assert!(advice(&stats(vec![dev(6 * GIB, 7 * GIB)]), true).is_empty());
        assert!(advice(&stats(vec![]), true).is_empty());
    }

    #[test]
    fn many_retries_and_fragmentation_suggest_expandable_segments() {
        let mut d = dev(20 * GIB, 40 * GIB);
        d.inactive_split = 12 * GIB;
        d.num_alloc_retries = RETRIES_MANY;
        let a = advice(&stats(vec![d.clone()]), false);
        assert_eq!(a.len(), 1, "{a:?}");
        assert!(a[0].contains("expandable_segments:True"), "{a:?}");
        assert!(a[0].contains("30%"), "{a:?}");
        // Already on: a different message.
        let mut s = stats(vec![d.clone()]);
        s.alloc_conf = Some("expandable_segments:True".into());
        let a = advice(&s, false);
        assert!(a[0].contains("already on"), "{a:?}");
        assert!(!a[0].contains("set PYTORCH_CUDA_ALLOC_CONF"), "{a:?}");
        // Low fragmentation: retries, but no expandable advice.
        d.inactive_split = GIB;
        let a = advice(&stats(vec![d.clone()]), false);
        assert!(a[0].contains("near its memory limit"), "{a:?}");
        assert!(!a[0].contains("expandable"), "{a:?}");
        // A single retry is said as one.
        d.num_alloc_retries = 1;
        assert!(advice(&stats(vec![d]), false)[0].starts_with("1 allocator retry:"));
    }

    #[test]
    fn fragmentation_without_retries_is_reported_with_the_largest_block() {
        let mut d = dev(2 * GIB, 4 * GIB);
        d.inactive_split = 2 * GIB;
        d.largest_free = Some(18 * MIB);
        let a = advice(&stats(vec![d.clone()]), false);
        assert_eq!(a.len(), 1, "{a:?}");
        assert!(
            a[0].contains("50%") && a[0].contains("largest free block 18M"),
            "{a:?}"
        );
        // Too small a process to bother.
        let mut small = dev(10 * MIB, 100 * MIB);
        small.inactive_split = 60 * MIB;
        assert!(advice(&stats(vec![small]), false).is_empty());
    }

    #[test]
    fn releasable_cache_on_a_shared_gpu_suggests_empty_cache() {
        let d = dev(4 * GIB, 10 * GIB);
        let a = advice(&stats(vec![d.clone()]), true);
        assert_eq!(a.len(), 1, "{a:?}");
        assert!(
            a[0].contains("empty_cache()") && a[0].contains("6.00G"),
            "{a:?}"
        );
        // Alone on the GPU: nobody else wants it.
        assert!(advice(&stats(vec![d]), false).is_empty());
        // Cached but split: empty_cache() could not free it.
        let mut split = dev(4 * GIB, 10 * GIB);
        split.inactive_split = 5 * GIB + GIB / 2;
        let a = advice(&stats(vec![split]), true);
        assert!(a.iter().all(|l| !l.contains("empty_cache")), "{a:?}");
        // Under the floor.
        assert!(advice(&stats(vec![dev(100 * MIB, 900 * MIB)]), true).is_empty());
    }

    #[test]
    fn ooms_compare_peak_allocated_with_peak_reserved() {
        let mut d = dev(10 * GIB, 40 * GIB);
        d.allocated_peak = 20 * GIB;
        d.reserved_peak = 40 * GIB;
        d.num_ooms = 2;
        let a = advice(&stats(vec![d.clone()]), false);
        assert!(
            a[0].starts_with("2 out-of-memory errors: peak allocated 20.0G vs peak reserved 40.0G"),
            "{a:?}"
        );
        assert!(
            a[0].contains("cache held 20.0G") && a[0].contains("expandable_segments"),
            "{a:?}"
        );
        d.allocated_peak = 39 * GIB;
        d.num_ooms = 1;
        let a = advice(&stats(vec![d]), false);
        assert!(a[0].starts_with("1 out-of-memory error:"), "{a:?}");
        assert!(a[0].contains("tensors themselves"), "{a:?}");
    }

    #[test]
    fn several_devices_are_named_and_errors_said() {
        let mut a = dev(GIB, 2 * GIB);
        a.index = 0;
        a.num_alloc_retries = 1;
        let mut b = dev(GIB, 2 * GIB);
        b.index = 3;
        b.num_ooms = 1;
        let mut s = stats(vec![a, b]);
        s.error = Some("RuntimeError: boom".into());
        let lines = advice(&s, false);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].contains("could not read the allocator: RuntimeError: boom"));
        assert!(lines[1].starts_with("cuda:0: 1 allocator retry"));
        assert!(lines[2].starts_with("cuda:3: 1 out-of-memory error"));
    }

    #[test]
    fn metric_values_line_up_with_their_names() {
        let mut d = dev(3, 4);
        d.inactive_split = 1;
        d.num_alloc_retries = 7;
        d.num_ooms = 2;
        let v = metric_values(&d);
        let by_name = |n: &str| v[METRICS.iter().position(|m| m.name == n).unwrap()];
        assert_eq!(by_name("vramwatch_torch_allocated_bytes"), Some(3.0));
        assert_eq!(by_name("vramwatch_torch_reserved_bytes"), Some(4.0));
        assert_eq!(by_name("vramwatch_torch_fragmentation_ratio"), Some(0.25));
        assert_eq!(by_name("vramwatch_torch_largest_free_block_bytes"), None);
        assert_eq!(by_name("vramwatch_torch_alloc_retries_total"), Some(7.0));
        assert_eq!(by_name("vramwatch_torch_ooms_total"), Some(2.0));
        for m in METRICS {
            assert!(m.name.starts_with("vramwatch_torch_"));
            assert_eq!(
                m.name.ends_with("_total"),
                m.kind == "counter",
                "{}",
                m.name
            );
        }
    }

    #[test]
    fn default_dirs_cover_the_python_sides_choices() {
        let dirs = default_dirs(1234);
        assert!(dirs.contains(&PathBuf::from("/run/user/1234/vramwatch")));
        assert_eq!(dirs.last(), Some(&PathBuf::from("/tmp/vramwatch-1234")));
    }
}
