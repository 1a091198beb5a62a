//! Where figures come from. A live [`Source`] (NVML or the simulator) hands
//! out one [`GpuProbe`] per GPU and lane group; the sampler drives the
//! probes from its own threads on a schedule of lanes (see `sampler`).
//! Replay does not probe: it reads whole snapshots back from a file.

pub mod host;
pub(crate) mod nvml;
pub mod select;
pub mod sim;
pub mod torch;

use std::sync::Arc;

use thiserror::Error;

use crate::model::{Bar1, MemInfo, Millis, ProcKind, SystemInfo};

/// Memory of one process on one GPU, as a probe reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcMem {
    pub pid: u32,
    pub kind: ProcKind,
    pub mem: Option<u64>,
}

/// Per-process utilisation, percent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcUtil {
    pub pid: u32,
    pub sm: Option<u32>,
    pub mem: Option<u32>,
    pub enc: Option<u32>,
    pub dec: Option<u32>,
}

/// What a fast-lane read returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FastReading {
    pub mem: Option<MemInfo>,
    pub procs: Vec<ProcMem>,
}

/// What a normal-lane read returns (the fast-lane part included, so a
/// snapshot's memory is as fresh as its utilisation).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NormalReading {
    pub fast: FastReading,
    pub bar1: Option<Bar1>,
    pub util_gpu: Option<u32>,
    pub util_mem: Option<u32>,
    pub temp_c: Option<u32>,
    pub power_mw: Option<u32>,
    pub power_limit_mw: Option<u32>,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub fan_pct: Option<u32>,
    pub pstate: Option<u32>,
    /// Encoder and decoder utilisation, percent.
    pub enc_util: Option<u32>,
    pub dec_util: Option<u32>,
    pub proc_util: ProcUtilRead,
}

impl NormalReading {
    /// A reading of memory and the process lists only: every other figure
    /// is not read yet ([`crate::sampler::Schedule::preview`]).
    pub fn preview(fast: FastReading) -> NormalReading {
        NormalReading {
            fast,
            ..NormalReading::default()
        }
    }
}

/// Process utilisation is the expensive call: it is read only every few
/// normal reads, and some boards do not support it.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum ProcUtilRead {
    /// Not asked for this time: keep the last figures.
    #[default]
    NotAsked,
    /// The device does not support it (shown as N/A).
    Unsupported,
    /// Samples since the last read; a listed process without a sample was idle.
    Samples(Vec<ProcUtil>),
}

/// What a slow-lane read returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlowReading {
    /// Whether PCIe throughput was read this time.
    pub pcie_read: bool,
    pub pcie_rx_kbs: Option<u32>,
    pub pcie_tx_kbs: Option<u32>,
    /// Whether the energy counter was read this time.
    pub energy_read: bool,
    pub energy_mj: Option<u64>,
    pub ecc_volatile: Option<u64>,
    /// Volatile corrected (single-bit) and uncorrected (double-bit) ECC
    /// errors; `ecc_volatile` is their sum.
    pub ecc_sbe_volatile: Option<u64>,
    pub ecc_dbe_volatile: Option<u64>,
    /// Memory temperature, °C.
    pub mem_temp_c: Option<u32>,
    /// PCIe replays since the driver loaded.
    pub pcie_replays: Option<u32>,
    /// Rows remapped for correctable / uncorrectable errors, and whether a
    /// remapping failed.
    pub remapped_rows_cor: Option<u64>,
    pub remapped_rows_unc: Option<u64>,
    pub row_remap_failure: Option<bool>,
    /// XID errors seen since the last read (NVML events where supported).
    pub xids: Vec<u64>,
}

/// What a slow-lane read includes beyond ECC and XID: the dearer figures,
/// each read on its own, longer period (`[sampling] pcie_interval`,
/// `energy_interval`). The sampler's first slow round reads everything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlowDue {
    /// PCIe throughput (20 ms of sampling per direction).
    pub pcie: bool,
    /// The total energy counter (~5.5 ms of CPU per read on an H200).
    pub energy: bool,
}

impl SlowDue {
    /// Every figure of the slow lane.
    pub const ALL: SlowDue = SlowDue {
        pcie: true,
        energy: true,
    };
}

/// A probe's failure that is not a missing field (those are `None`).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ProbeError {
    #[error("GPU {index} is lost: {reason}")]
    Lost { index: u32, reason: String },
}

/// Reads one GPU. Each probe is used from one thread only; a source hands
/// out several probes for the same GPU (one per lane thread).
pub trait GpuProbe: Send {
    fn fast(&mut self, t_ms: Millis) -> Result<FastReading, ProbeError>;
    /// Device memory only (no process lists): the fast lane's usual read.
    /// On an H200 the process lists cost ~20× the memory call when polled
    /// at 10 Hz, so they are read with the normal lane, and in the fast lane
    /// only while a GPU is near full (burst).
    fn memory(&mut self, t_ms: Millis) -> Result<FastReading, ProbeError> {
        self.fast(t_ms)
    }
    fn normal(&mut self, t_ms: Millis, with_proc_util: bool) -> Result<NormalReading, ProbeError>;
    /// ECC, XID, memory temperature, PCIe replays and remapped rows, plus
    /// the figures `due` names (PCIe throughput, energy).
    fn slow(&mut self, t_ms: Millis, due: SlowDue) -> Result<SlowReading, ProbeError>;
}

/// Host facts for GPU processes come from /proc for real sources; a
/// simulated source makes its own up.
pub trait HostFacts: Send {
    /// Fills user, command, container, CPU and RSS for these processes.
    /// CPU % and RSS are read afresh when `fresh` (CPU % then covers the
    /// time since the last fresh read), else the last reading of each
    /// process is kept (`None` for one not read yet): the sampler reads
    /// them only as often as they are shown.
    fn enrich(&mut self, t_ms: Millis, procs: &mut [crate::model::ProcSample], fresh: bool);

    /// Starts CPU accounting for these PIDs, so that the next `enrich` can
    /// report CPU %. Returns whether a second call needs time in between.
    fn prime(&mut self, _pids: &[u32]) -> bool {
        false
    }
}

/// A live source of GPU figures.
pub trait Source: Send {
    fn system(&self) -> Arc<SystemInfo>;
    /// A new probe for GPU `index` (0-based position in `system().gpus`).
    fn probe(&self, index: usize) -> Box<dyn GpuProbe>;
    /// Who answers host questions for this source's processes.
    fn host_facts(&self) -> Box<dyn HostFacts>;
}

/// Errors opening a source, each with what to do about it.
#[derive(Debug, Error)]
pub enum SourceError {
    #[error(
        "cannot load the NVIDIA management library ({lib}): {detail}. Is the NVIDIA driver installed? Try `vramwatch --demo` to see the dashboard on simulated GPUs"
    )]
    NoLibrary { lib: String, detail: String },
    #[error(
        "the NVIDIA driver is not loaded ({detail}). Try `vramwatch --demo` to see the dashboard on simulated GPUs"
    )]
    NoDriver { detail: String },
    #[error(
        "no permission to query the GPUs through NVML ({detail}): check access to /dev/nvidia*, or try `vramwatch --demo`"
    )]
    NoPermission { detail: String },
    #[error("NVML found no GPU. Try `vramwatch --demo` to see the dashboard on simulated GPUs")]
    NoGpu,
    #[error("NVML failed: {0}")]
    Other(String),
    #[error("unknown demo scenario `{name}`: choose one of {valid}")]
    UnknownScenario { name: String, valid: String },
    /// `--gpu` or `CUDA_VISIBLE_DEVICES` names no GPU of this machine.
    #[error("{0}")]
    Selection(String),
}

impl SourceError {
    /// Whether the command line (or the environment it was given) is at
    /// fault, rather than the driver or the machine.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            SourceError::UnknownScenario { .. } | SourceError::Selection(_)
        )
    }
}

/// Opens the simulator when `demo` names a scenario, NVML otherwise.
/// `me` owns the simulated processes marked as the user's own; the
/// simulated scenario starts `ahead_s` seconds before now.
pub fn open(
    demo: Option<&str>,
    seed: u64,
    me: &str,
    ahead_s: u64,
) -> Result<Box<dyn Source>, SourceError> {
    match demo {
        Some(name) => {
            let t0 = crate::model::now_ms().saturating_sub(ahead_s * 1000);
            let world = sim::SimWorld::new(name, seed, t0)?;
            Ok(Box::new(sim::SimSource::new(world, me.to_owned())))
        }
        None => Ok(Box::new(nvml::NvmlSource::open()?)),
    }
}
