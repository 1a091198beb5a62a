//! Plain data that flows from a source to every consumer: no handles, no
//! locks. Bytes are `u64`, times are unix milliseconds, a missing or
//! unsupported reading is `None` (shown as `N/A`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub mod alloc;

/// Unix time in milliseconds.
pub type Millis = u64;

/// The wall clock now, in unix milliseconds (0 if the clock is before 1970).
pub fn now_ms() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as Millis)
        .unwrap_or(0)
}

/// A process identity: a PID alone is recycled, a PID with its start time is
/// not (start time in unix seconds; 0 when unknown).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProcessKey {
    pub pid: u32,
    pub start_time: u64,
}

/// A process on one GPU: the unit every table, series, metric and analysis
/// is keyed by (a process using two GPUs is two of these). Orders by GPU,
/// then PID, then start time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProcId {
    pub gpu: u32,
    pub key: ProcessKey,
}

impl ProcId {
    pub fn of(p: &ProcSample) -> ProcId {
        p.id()
    }
}

/// What does not change while the program runs: sent once, then referenced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemInfo {
    /// Host name of the machine the GPUs are in.
    pub host: String,
    /// Where the figures come from: `nvml`, `sim:<scenario>` or `replay:<file>`.
    pub source: String,
    pub driver_version: Option<String>,
    /// CUDA driver API version, e.g. `13.0`.
    pub cuda_version: Option<String>,
    pub nvml_version: Option<String>,
    pub gpus: Vec<DeviceInfo>,
}

/// Static facts about one GPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub index: u32,
    pub name: String,
    pub uuid: String,
    pub pci_bus_id: String,
    /// Total framebuffer memory in bytes.
    pub memory_total: u64,
    /// Number of fans; 0 for passively cooled boards (the H200).
    pub num_fans: u32,
    pub mig_enabled: Option<bool>,
    /// e.g. `9.0`.
    pub compute_capability: Option<String>,
}

/// One moment of the whole machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Sequence number, from 0, increasing by one per published snapshot.
    pub seq: u64,
    /// When the normal lane was read, unix ms.
    pub t_ms: Millis,
    pub gpus: Vec<GpuSample>,
    pub procs: Vec<ProcSample>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Event>,
}

/// Health of one GPU's readings in a snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuState {
    /// Read this interval.
    #[default]
    Ok,
    /// Its reader did not answer in time: values are from an earlier interval.
    Stale,
    /// Fell off the bus or answers only with errors (`GpuLost`/`Unknown`).
    Lost,
}

/// Framebuffer memory as NVML's `nvmlMemory_v2_t` reports it. NVML v1 "used"
/// equals `used + reserved` here; `reserved` is driver memory no process can
/// have.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemInfo {
    pub used: u64,
    pub reserved: u64,
    pub free: u64,
    pub total: u64,
}

impl MemInfo {
    /// Share of the total in use, counting reserved memory (what an
    /// allocation can no longer get), 0..=100.
    pub fn used_pct(&self) -> f64 {
        self.pct_full(self.used)
    }

    /// Share of the total that would be in use with `used` bytes used,
    /// counting reserved memory, 0..=100 (0 when the total is unknown): the
    /// one definition of "percent full".
    pub fn pct_full(&self, used: u64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        used.saturating_add(self.reserved) as f64 * 100.0 / self.total as f64
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bar1 {
    pub used: u64,
    pub total: u64,
}

/// One GPU at one moment. Fields are `None` where the device does not
/// support them or the read failed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuSample {
    pub index: u32,
    #[serde(default)]
    pub state: GpuState,
    pub mem: Option<MemInfo>,
    /// Highest `used` seen by any read (fast lane included) since the previous
    /// snapshot: short spikes a 1 s poll misses show up here.
    pub mem_peak: Option<u64>,
    /// How many memory reads fed `mem_peak`.
    #[serde(default)]
    pub mem_reads: u32,
    pub bar1: Option<Bar1>,
    pub util_gpu: Option<u32>,
    pub util_mem: Option<u32>,
    pub temp_c: Option<u32>,
    pub power_mw: Option<u32>,
    pub power_limit_mw: Option<u32>,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub fan_pct: Option<u32>,
    /// Performance state, 0 (fastest) ..= 15.
    pub pstate: Option<u32>,
    /// PCIe receive / transmit throughput in KB/s (slow lane).
    pub pcie_rx_kbs: Option<u32>,
    pub pcie_tx_kbs: Option<u32>,
    /// Energy since the driver loaded, in millijoules (slow lane).
    pub energy_mj: Option<u64>,
    /// Volatile uncorrected + corrected ECC errors (slow lane).
    pub ecc_volatile: Option<u64>,
    /// Encoder and decoder utilisation, percent (normal lane). These and
    /// the fields below came with issue 17: older recordings and
    /// snapshots lack them (`None`).
    #[serde(default)]
    pub enc_util: Option<u32>,
    #[serde(default)]
    pub dec_util: Option<u32>,
    /// Memory (HBM) temperature, °C (slow lane; NVML field
    /// `NVML_FI_DEV_MEMORY_TEMP`).
    #[serde(default)]
    pub mem_temp_c: Option<u32>,
    /// Volatile corrected (single-bit) ECC errors (slow lane).
    #[serde(default)]
    pub ecc_sbe_volatile: Option<u64>,
    /// Volatile uncorrected (double-bit) ECC errors (slow lane).
    #[serde(default)]
    pub ecc_dbe_volatile: Option<u64>,
    /// PCIe replays (retries) since the driver loaded (slow lane).
    #[serde(default)]
    pub pcie_replays: Option<u32>,
    /// Rows remapped for correctable / uncorrectable errors (slow lane).
    #[serde(default)]
    pub remapped_rows_cor: Option<u64>,
    #[serde(default)]
    pub remapped_rows_unc: Option<u64>,
    /// Whether a row remapping has failed (slow lane).
    #[serde(default)]
    pub row_remap_failure: Option<bool>,
    /// Milliseconds from the start of the round until this GPU's normal
    /// read returned: shows whether one GPU waited on another.
    #[serde(default)]
    pub lag_ms: u32,
}

impl GpuSample {
    /// Percent full at the highest read of the interval (fast-lane reads
    /// count), counting reserved memory; `None` without a memory reading.
    pub fn peak_pct_full(&self) -> Option<f64> {
        let m = self.mem?;
        Some(m.pct_full(self.mem_peak.unwrap_or(m.used).max(m.used)))
    }

    /// Device memory in use that no listed process accounts for (driver,
    /// contexts, processes in other containers, dead processes).
    pub fn unaccounted(&self, procs: &[ProcSample]) -> Option<u64> {
        let mem = self.mem?;
        let sum: u64 = procs
            .iter()
            .filter(|p| p.gpu == self.index)
            .filter_map(|p| p.mem)
            .sum();
        Some(mem.used.saturating_sub(sum))
    }
}

/// How a process uses the GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcKind {
    #[default]
    Compute,
    Graphics,
    /// Listed as both compute and graphics.
    Both,
}

impl ProcKind {
    pub fn letter(self) -> &'static str {
        match self {
            ProcKind::Compute => "C",
            ProcKind::Graphics => "G",
            ProcKind::Both => "C+G",
        }
    }

    pub fn merge(self, other: ProcKind) -> ProcKind {
        if self == other { self } else { ProcKind::Both }
    }
}

/// One process on one GPU (a process on two GPUs has two samples).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcSample {
    pub pid: u32,
    /// Unix seconds; 0 when unknown.
    #[serde(default)]
    pub start_time: u64,
    pub gpu: u32,
    #[serde(default)]
    pub kind: ProcKind,
    /// GPU memory in bytes; `None` when the driver does not say (no
    /// permission, or WDDM).
    pub mem: Option<u64>,
    /// Highest memory seen since the previous snapshot (fast lane included).
    pub mem_peak: Option<u64>,
    pub sm_util: Option<u32>,
    pub mem_util: Option<u32>,
    pub enc_util: Option<u32>,
    pub dec_util: Option<u32>,
    /// Host facts, sanitised; `None` where the process is not visible to us.
    pub user: Option<Arc<str>>,
    /// Short name (comm).
    pub name: Option<Arc<str>>,
    /// Full command line, sanitised, arguments joined by spaces.
    pub command: Option<Arc<str>>,
    /// Container id (short) or name, from `/proc/<pid>/cgroup`.
    pub container: Option<Arc<str>>,
    /// The PID inside its own PID namespace, when it differs.
    pub ns_pid: Option<u32>,
    /// The container's name from the runtime's local API (Docker's
    /// `Name`; in a Kubernetes pod, the container's name in the pod),
    /// sanitised; `None` when unknown.
    #[serde(default)]
    pub container_name: Option<Arc<str>>,
    /// The Kubernetes pod's name, where the runtime says it.
    #[serde(default)]
    pub pod: Option<Arc<str>>,
    /// The Kubernetes pod's namespace, where the runtime says it.
    #[serde(default)]
    pub namespace: Option<Arc<str>>,
    /// The Kubernetes pod's UID, from the kubepods cgroup path.
    #[serde(default)]
    pub pod_uid: Option<Arc<str>>,
    pub cpu_pct: Option<f32>,
    /// Host resident memory in bytes.
    pub rss: Option<u64>,
    /// The PyTorch caching allocator's figures for this GPU, when the
    /// process publishes them (`vramwatch_torch`); `devices` holds this
    /// GPU's entry only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch: Option<Arc<alloc::AllocStats>>,
}

impl ProcSample {
    pub fn key(&self) -> ProcessKey {
        ProcessKey {
            pid: self.pid,
            start_time: self.start_time,
        }
    }

    /// This process on this GPU.
    pub fn id(&self) -> ProcId {
        ProcId {
            gpu: self.gpu,
            key: self.key(),
        }
    }

    /// The best label for the process: its command, else its name, else "?".
    pub fn label(&self) -> &str {
        self.command
            .as_deref()
            .filter(|c| !c.is_empty())
            .or(self.name.as_deref())
            .unwrap_or("?")
    }
}

/// Something that happened between two snapshots.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub t_ms: Millis,
    pub kind: EventKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub message: String,
    /// A `process_exited` within [`AFTER_OOM_MS`] of an out-of-memory
    /// error the process's allocator counted: it exited because of that
    /// error (the suspected OOM). Absent (false) in recordings made before
    /// 2026-12-06.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub after_oom: bool,
}

/// A process that exits this soon (ms) after an out-of-memory error its
/// allocator counted exits because of it: that error was the suspected
/// OOM (`suspected_oom`), and the exit is a plain `process_exited`.
pub const AFTER_OOM_MS: Millis = 60_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    ProcessStarted,
    ProcessExited,
    /// A process exited while its GPU was within a few percent of full.
    SuspectedOom,
    ThresholdCrossed,
    Alert,
    GpuLost,
    Xid,
    /// Anything else the tool wants to say (recording started, ...).
    Note,
}

/// Human units: bytes are shown in binary units (MiB, GiB) like nvidia-smi.
pub mod units {
    pub const KIB: u64 = 1 << 10;
    pub const MIB: u64 = 1 << 20;
    pub const GIB: u64 = 1 << 30;

    /// `n` things in words: "1 alert", "2 alerts".
    pub fn plural(n: u64, one: &str, many: &str) -> String {
        format!("{n} {}", if n == 1 { one } else { many })
    }

    /// `1536 MiB` → "1.50G"; short forms for tables: at most three
    /// significant figures (five characters), the unit and precision
    /// chosen by the value as it will be printed (99.97 GiB is "100G",
    /// never "100.0G"; 1023.7 MiB is "1.00G", never "1024M").
    pub fn bytes_short(b: u64) -> String {
        let b = b as f64;
        let (g, m, k) = (b / GIB as f64, b / MIB as f64, b / KIB as f64);
        if g >= 99.95 {
            format!("{g:.0}G")
        } else if g >= 9.995 {
            format!("{g:.1}G")
        } else if m >= 999.5 {
            format!("{g:.2}G")
        } else if k >= 999.5 {
            format!("{m:.0}M")
        } else if b >= 999.5 {
            format!("{k:.0}K")
        } else {
            format!("{b:.0}B")
        }
    }

    /// Whole MiB as nvidia-smi prints them: rounded up (measured on an
    /// H200: 644,939,776 bytes reserved = 615.06 MiB is shown as 616).
    pub fn mib(b: u64) -> u64 {
        b.div_ceil(MIB)
    }

    /// A signed rate in bytes per second → "+130M/s", to two significant
    /// figures (a rate is an estimate; more digits only flicker).
    pub fn rate_short(bps: f64) -> String {
        let sign = if bps < 0.0 { "-" } else { "+" };
        let a = bps.abs();
        let (v, unit) = if a >= GIB as f64 {
            (a / GIB as f64, "G")
        } else if a >= MIB as f64 {
            (a / MIB as f64, "M")
        } else if a >= KIB as f64 {
            (a / KIB as f64, "K")
        } else {
            (a, "B")
        };
        // Two significant figures; a figure that rounds up to 1000 moves
        // to the next unit, so one rate never reads both "+1000M/s" and
        // "+1.0G/s".
        let round2 = |v: f64| {
            if v >= 10.0 {
                let scale = 10f64.powf(v.log10().floor() - 1.0);
                (v / scale).round() * scale
            } else {
                (v * 10.0).round() / 10.0
            }
        };
        let (v, unit) = match unit {
            "B" | "K" | "M" if round2(v) >= 1000.0 => (
                v / 1024.0,
                match unit {
                    "B" => "K",
                    "K" => "M",
                    _ => "G",
                },
            ),
            _ => (v, unit),
        };
        let v = if v >= 10.0 {
            format!("{:.0}", round2(v))
        } else if unit == "B" {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        };
        format!("{sign}{v}{unit}/s")
    }

    /// An age, coarser as it grows so it changes rarely: to the second
    /// under 10 s, to ten seconds under a minute, to the minute under an
    /// hour, then as `duration_short`: "7s", "40s", "12m", "3h05m", "2d04h". (Ticking every second,
    /// the column was a quarter of the bytes a dashboard wrote while its
    /// processes were under a minute old: H200, 7 processes, 120x40.)
    pub fn age_short(secs: u64) -> String {
        if (10..60).contains(&secs) {
            format!("{}s", secs / 10 * 10)
        } else if (60..3600).contains(&secs) {
            format!("{}m", secs / 60)
        } else {
            duration_short(secs)
        }
    }

    /// Seconds → "45s", "2m10s", "3h05m", "2d04h".
    pub fn duration_short(secs: u64) -> String {
        if secs < 60 {
            format!("{secs}s")
        } else if secs < 3600 {
            format!("{}m{:02}s", secs / 60, secs % 60)
        } else if secs < 86_400 {
            format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60)
        } else {
            format!("{}d{:02}h", secs / 86_400, (secs % 86_400) / 3600)
        }
    }
}

#[cfg(test)]
mod tests;
