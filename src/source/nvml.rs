//! Real GPUs through NVML (nvml-wrapper loads `libnvidia-ml.so.1` at run
//! time). One `Nvml` lives for the whole program; each probe holds its own
//! device handle and its own cache of fields the device does not support,
//! so an unsupported call is made once, not every interval.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, PcieUtilCounter, PerformanceState, TemperatureSensor,
};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::ProcessInfo;
use nvml_wrapper::{Device, EventSet, Nvml};

use crate::model::{Bar1, DeviceInfo, MemInfo, Millis, ProcKind, SystemInfo};
use crate::source::{
    FastReading, GpuProbe, HostFacts, NormalReading, ProbeError, ProcMem, ProcUtilRead, SlowDue,
    SlowReading, Source, SourceError,
};

mod costs;
mod fields;
mod util;
pub(crate) use costs::{Spacing, call_costs, spaced_costs};
pub(crate) use util::{FIRST_READ_WINDOW_US, UtilCursor, device_idle, latest_utilisation};

/// The library NVML is loaded from.
pub(crate) const NVML_LIB: &str = "libnvidia-ml.so.1";

static NVML: OnceLock<Nvml> = OnceLock::new();

/// Environment variable naming another NVML library file to load.
pub(crate) const NVML_LIB_ENV: &str = "VRAMWATCH_NVML_LIB";

/// Loads NVML once for the life of the program (from `$VRAMWATCH_NVML_LIB`
/// when set).
fn nvml() -> Result<&'static Nvml, SourceError> {
    if let Some(n) = NVML.get() {
        return Ok(n);
    }
    let n = match std::env::var_os(NVML_LIB_ENV) {
        Some(path) => Nvml::builder()
            .lib_path(&path)
            .init()
            .map_err(|e| match init_error(e) {
                SourceError::NoLibrary { detail, .. } => SourceError::NoLibrary {
                    lib: path.to_string_lossy().into_owned(),
                    detail,
                },
                other => other,
            })?,
        None => Nvml::init().map_err(init_error)?,
    };
    Ok(NVML.get_or_init(|| n))
}

/// Turns an init failure into what the user should do about it.
pub(crate) fn init_error(e: NvmlError) -> SourceError {
    match e {
        NvmlError::LibloadingError(d) => SourceError::NoLibrary {
            lib: NVML_LIB.into(),
            detail: d.to_string(),
        },
        NvmlError::LibraryNotFound => SourceError::NoLibrary {
            lib: NVML_LIB.into(),
            detail: "not found".into(),
        },
        NvmlError::DriverNotLoaded => SourceError::NoDriver {
            detail: "NVML: driver not loaded".into(),
        },
        NvmlError::NoPermission => SourceError::NoPermission {
            detail: "NVML: insufficient permissions".into(),
        },
        other => SourceError::Other(other.to_string()),
    }
}

/// What a failed call means for the field and the device.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Never ask again on this device: show N/A.
    Unsupported,
    /// The GPU is gone (`GpuLost`, `Unknown`): mark it lost.
    Lost,
    /// A transient failure: N/A this time, ask again next time.
    Missing,
}

/// Classifies an NVML error (pure, unit-tested).
pub(crate) fn classify(e: &NvmlError) -> Outcome {
    match e {
        // The H200 answers the fan call with InvalidArg, not NotSupported.
        NvmlError::NotSupported
        | NvmlError::InvalidArg
        | NvmlError::FunctionNotFound
        | NvmlError::FailedToLoadSymbol(_)
        | NvmlError::NoPermission => Outcome::Unsupported,
        NvmlError::GpuLost | NvmlError::Unknown | NvmlError::ResetRequired => Outcome::Lost,
        _ => Outcome::Missing,
    }
}

/// Merges the compute and graphics lists by PID. A PID in both lists is
/// one process of kind `Both`; its memory is the larger of the two figures
/// (the driver reports the same context in both lists).
pub(crate) fn merge_processes(compute: &[ProcessInfo], graphics: &[ProcessInfo]) -> Vec<ProcMem> {
    let mut out: Vec<ProcMem> = Vec::with_capacity(compute.len() + graphics.len());
    let mut at: HashMap<u32, usize> = HashMap::new();
    let lists = [(compute, ProcKind::Compute), (graphics, ProcKind::Graphics)];
    for (list, kind) in lists {
        for p in list {
            let mem = match p.used_gpu_memory {
                UsedGpuMemory::Used(b) => Some(b),
                UsedGpuMemory::Unavailable => None,
            };
            match at.get(&p.pid) {
                Some(&i) => {
                    let e = &mut out[i];
                    e.kind = e.kind.merge(kind);
                    e.mem = match (e.mem, mem) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        (a, b) => a.or(b),
                    };
                }
                None => {
                    at.insert(p.pid, out.len());
                    out.push(ProcMem {
                        pid: p.pid,
                        kind,
                        mem,
                    });
                }
            }
        }
    }
    out
}

/// `13000` → "13.0".
pub(crate) fn cuda_version(v: i32) -> String {
    format!(
        "{}.{}",
        nvml_wrapper::cuda_driver_version_major(v),
        nvml_wrapper::cuda_driver_version_minor(v)
    )
}

fn pstate_number(p: PerformanceState) -> Option<u32> {
    use PerformanceState::*;
    Some(match p {
        Zero => 0,
        One => 1,
        Two => 2,
        Three => 3,
        Four => 4,
        Five => 5,
        Six => 6,
        Seven => 7,
        Eight => 8,
        Nine => 9,
        Ten => 10,
        Eleven => 11,
        Twelve => 12,
        Thirteen => 13,
        Fourteen => 14,
        Fifteen => 15,
        Unknown => return None,
    })
}

/// Real GPUs.
pub(crate) struct NvmlSource {
    nvml: &'static Nvml,
    info: Arc<SystemInfo>,
}

impl NvmlSource {
    /// Loads NVML and reads the static facts of every GPU.
    pub(crate) fn open() -> Result<NvmlSource, SourceError> {
        let nvml = nvml()?;
        let count = nvml.device_count().map_err(init_error)?;
        if count == 0 {
            return Err(SourceError::NoGpu);
        }
        let mut gpus = Vec::with_capacity(count as usize);
        for i in 0..count {
            let d = nvml.device_by_index(i).map_err(init_error)?;
            gpus.push(DeviceInfo {
                index: i,
                name: d.name().unwrap_or_else(|_| "NVIDIA GPU".into()),
                uuid: d.uuid().unwrap_or_default(),
                pci_bus_id: d.pci_info().map(|p| p.bus_id).unwrap_or_default(),
                memory_total: d.memory_info().map(|m| m.total).unwrap_or(0),
                num_fans: d.num_fans().unwrap_or(0),
                mig_enabled: d.mig_mode().ok().map(|m| m.current == 1),
                compute_capability: d
                    .cuda_compute_capability()
                    .ok()
                    .map(|c| format!("{}.{}", c.major, c.minor)),
            });
        }
        let info = SystemInfo {
            host: crate::source::host::hostname(),
            source: "nvml".into(),
            driver_version: nvml.sys_driver_version().ok(),
            cuda_version: nvml.sys_cuda_driver_version().ok().map(cuda_version),
            nvml_version: nvml.sys_nvml_version().ok(),
            gpus,
        };
        Ok(NvmlSource {
            nvml,
            info: Arc::new(info),
        })
    }
}

impl Source for NvmlSource {
    fn system(&self) -> Arc<SystemInfo> {
        self.info.clone()
    }

    fn probe(&self, index: usize) -> Box<dyn GpuProbe> {
        Box::new(NvmlProbe {
            nvml: self.nvml,
            dev: self.nvml.device_by_index(index as u32).ok(),
            index: index as u32,
            num_fans: self.info.gpus.get(index).map_or(0, |g| g.num_fans),
            unsupported: 0,
            util: UtilCursor::default(),
            events: None,
            normal_reads: 0,
            bar1: None,
        })
    }

    fn host_facts(&self) -> Box<dyn HostFacts> {
        Box::new(crate::source::host::ProcHost::new(
            self.info.gpus.iter().map(|g| g.uuid.clone()).collect(),
        ))
    }
}

/// Fields whose `NotSupported` is remembered per probe.
#[derive(Clone, Copy)]
#[repr(u32)]
enum Field {
    Mem = 1 << 0,
    Compute = 1 << 1,
    Graphics = 1 << 2,
    Bar1 = 1 << 3,
    Util = 1 << 4,
    Temp = 1 << 5,
    Power = 1 << 6,
    PowerLimit = 1 << 7,
    SmClock = 1 << 8,
    MemClock = 1 << 9,
    Fan = 1 << 10,
    Pstate = 1 << 11,
    ProcUtil = 1 << 12,
    PcieRx = 1 << 13,
    PcieTx = 1 << 14,
    Energy = 1 << 15,
    /// Volatile corrected ECC errors.
    Ecc = 1 << 16,
    Xid = 1 << 17,
    Enc = 1 << 18,
    Dec = 1 << 19,
    /// Volatile uncorrected ECC errors.
    EccDbe = 1 << 20,
    PcieReplay = 1 << 21,
    // Asked through the field-values query (`fields.rs`).
    MemTemp = 1 << 22,
    RemapCor = 1 << 23,
    RemapUnc = 1 << 24,
    RemapFailure = 1 << 25,
}

enum Events {
    Registered(EventSet<'static>),
    Unavailable,
}

struct NvmlProbe {
    nvml: &'static Nvml,
    dev: Option<Device<'static>>,
    index: u32,
    num_fans: u32,
    unsupported: u32,
    util: UtilCursor,
    events: Option<Events>,
    normal_reads: u64,
    bar1: Option<nvml_wrapper::struct_wrappers::device::BAR1MemoryInfo>,
}

impl NvmlProbe {
    fn lost(&self, reason: impl Into<String>) -> ProbeError {
        ProbeError::Lost {
            index: self.index,
            reason: reason.into(),
        }
    }

    fn device(&mut self) -> Result<&Device<'static>, ProbeError> {
        if self.dev.is_none() {
            self.dev = self.nvml.device_by_index(self.index).ok();
        }
        match &self.dev {
            Some(d) => Ok(d),
            None => Err(self.lost("no device handle")),
        }
    }

    /// One call, with its `NotSupported` cached and `GpuLost` surfaced.
    fn read<T>(
        &mut self,
        field: Field,
        call: impl FnOnce(&Device<'static>) -> Result<T, NvmlError>,
    ) -> Result<Option<T>, ProbeError> {
        let bit = field as u32;
        if self.unsupported & bit != 0 {
            return Ok(None);
        }
        let dev = self.device()?;
        match call(dev) {
            Ok(v) => Ok(Some(v)),
            Err(e) => match classify(&e) {
                Outcome::Unsupported => {
                    self.unsupported |= bit;
                    Ok(None)
                }
                Outcome::Lost => Err(self.lost(e.to_string())),
                Outcome::Missing => Ok(None),
            },
        }
    }

    /// Reads the processes' utilisation (at `now`, for the cursor; the
    /// device `idle` now, as far as its own utilisation says).
    fn proc_util(&mut self, now: Instant, idle: bool) -> Result<ProcUtilRead, ProbeError> {
        let since = self.util.since;
        let r = self.read(Field::ProcUtil, |d| {
            match d.process_utilization_stats(since) {
                // No samples since `since`: nobody used the SMs.
                Err(NvmlError::NotFound) => Ok(Vec::new()),
                other => other,
            }
        })?;
        Ok(match r {
            None => ProcUtilRead::Unsupported,
            Some(samples) => {
                // A first read returns what the driver buffered: only its
                // last two seconds are now, and nothing on an idle device.
                let first = since.is_none();
                let (latest, ts) =
                    latest_utilisation(&samples, first.then_some(FIRST_READ_WINDOW_US));
                self.util.read(ts, now);
                ProcUtilRead::Samples(if first && idle { Vec::new() } else { latest })
            }
        })
    }

    fn poll_xids(&mut self) -> Vec<u64> {
        if self.unsupported & Field::Xid as u32 != 0 {
            return Vec::new();
        }
        if self.events.is_none() {
            let ev = self
                .dev
                .as_ref()
                .and_then(|d| {
                    let set = self.nvml.create_event_set().ok()?;
                    d.register_events(
                        nvml_wrapper::bitmasks::event::EventTypes::CRITICAL_XID_ERROR,
                        set,
                    )
                    .ok()
                })
                .map_or(Events::Unavailable, Events::Registered);
            self.events = Some(ev);
        }
        let mut out = Vec::new();
        match &self.events {
            Some(Events::Registered(set)) => {
                // Timeout 0: take what is queued, never wait.
                while let Ok(ev) = set.wait(0) {
                    if let Some(nvml_wrapper::enums::event::XidError::Value(x)) = ev.event_data {
                        out.push(x);
                    }
                    if out.len() > 64 {
                        break;
                    }
                }
            }
            _ => self.unsupported |= Field::Xid as u32,
        }
        out
    }
}

impl NvmlProbe {
    /// Device memory (NVML's v2 struct).
    fn mem_info(&mut self) -> Result<Option<MemInfo>, ProbeError> {
        Ok(self
            .read(Field::Mem, |d| d.memory_info())?
            .map(|m| MemInfo {
                used: m.used,
                reserved: m.reserved,
                free: m.free,
                total: m.total,
            }))
    }

    /// BAR1 (~200 µs a call) changes rarely: read every tenth normal read.
    fn bar1_every_tenth(
        &mut self,
    ) -> Result<Option<nvml_wrapper::struct_wrappers::device::BAR1MemoryInfo>, ProbeError> {
        self.normal_reads += 1;
        if self.normal_reads % 10 == 1 || self.bar1.is_none() {
            self.bar1 = self.read(Field::Bar1, |d| d.bar1_memory_info())?;
        }
        Ok(self.bar1.clone())
    }
}

impl GpuProbe for NvmlProbe {
    fn memory(&mut self, _t_ms: Millis) -> Result<FastReading, ProbeError> {
        Ok(FastReading {
            mem: self.mem_info()?,
            procs: Vec::new(),
        })
    }

    fn fast(&mut self, _t_ms: Millis) -> Result<FastReading, ProbeError> {
        let mem = self.mem_info()?;
        let compute = self
            .read(Field::Compute, |d| d.running_compute_processes())?
            .unwrap_or_default();
        let graphics = self
            .read(Field::Graphics, |d| d.running_graphics_processes())?
            .unwrap_or_default();
        Ok(FastReading {
            mem,
            procs: merge_processes(&compute, &graphics),
        })
    }

    fn normal(&mut self, t_ms: Millis, with_proc_util: bool) -> Result<NormalReading, ProbeError> {
        let fast = self.fast(t_ms)?;
        let util = self.read(Field::Util, |d| d.utilization_rates())?;
        let fan = if self.num_fans > 0 {
            self.read(Field::Fan, |d| d.fan_speed(0))?
        } else {
            None
        };
        let enc_util = self
            .read(Field::Enc, |d| d.encoder_utilization())?
            .map(|u| u.utilization);
        let dec_util = self
            .read(Field::Dec, |d| d.decoder_utilization())?
            .map(|u| u.utilization);
        let proc_util = if with_proc_util {
            let now = Instant::now();
            let idle = device_idle(util.as_ref().map(|u| (u.gpu, u.memory)), enc_util, dec_util);
            if self.util.skip(idle, now) {
                // Nothing ran: every process's share is 0, and the read
                // (~2 ms of CPU, the dearest of the normal lane) is skipped.
                ProcUtilRead::Samples(Vec::new())
            } else {
                self.proc_util(now, idle)?
            }
        } else {
            ProcUtilRead::NotAsked
        };
        Ok(NormalReading {
            fast,
            bar1: self.bar1_every_tenth()?.map(|b| Bar1 {
                used: b.used,
                total: b.total,
            }),
            util_gpu: util.as_ref().map(|u| u.gpu),
            util_mem: util.as_ref().map(|u| u.memory),
            temp_c: self.read(Field::Temp, |d| d.temperature(TemperatureSensor::Gpu))?,
            power_mw: self.read(Field::Power, |d| d.power_usage())?,
            power_limit_mw: self.read(Field::PowerLimit, |d| d.enforced_power_limit())?,
            sm_clock_mhz: self.read(Field::SmClock, |d| d.clock_info(Clock::SM))?,
            mem_clock_mhz: self.read(Field::MemClock, |d| d.clock_info(Clock::Memory))?,
            fan_pct: fan,
            pstate: self
                .read(Field::Pstate, |d| d.performance_state())?
                .and_then(pstate_number),
            enc_util,
            dec_util,
            proc_util,
        })
    }

    fn slow(&mut self, _t_ms: Millis, due: SlowDue) -> Result<SlowReading, ProbeError> {
        // Corrected errors are DCGM's single-bit (SBE), uncorrected its
        // double-bit (DBE) ones.
        let sbe = self.read(Field::Ecc, |d| {
            d.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile)
        })?;
        let dbe = self.read(Field::EccDbe, |d| {
            d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile)
        })?;
        let ecc = match (sbe, dbe) {
            (Some(c), Some(u)) => Some(c + u),
            (c, u) => c.or(u),
        };
        let pcie_replays = self.read(Field::PcieReplay, |d| d.pcie_replay_counter())?;
        let fv = self.field_values()?;
        let (pcie_rx_kbs, pcie_tx_kbs) = if due.pcie {
            (
                self.read(Field::PcieRx, |d| {
                    d.pcie_throughput(PcieUtilCounter::Receive)
                })?,
                self.read(Field::PcieTx, |d| d.pcie_throughput(PcieUtilCounter::Send))?,
            )
        } else {
            (None, None)
        };
        Ok(SlowReading {
            pcie_read: due.pcie,
            pcie_rx_kbs,
            pcie_tx_kbs,
            energy_read: due.energy,
            // The dearest call there is (~5.5 ms of CPU on an H200): read
            // every `[sampling] energy_interval` only.
            energy_mj: if due.energy {
                self.read(Field::Energy, |d| d.total_energy_consumption())?
            } else {
                None
            },
            ecc_volatile: ecc,
            ecc_sbe_volatile: sbe,
            ecc_dbe_volatile: dbe,
            mem_temp_c: fv.mem_temp_c,
            pcie_replays,
            remapped_rows_cor: fv.remapped_rows_cor,
            remapped_rows_unc: fv.remapped_rows_unc,
            row_remap_failure: fv.row_remap_failure,
            xids: self.poll_xids(),
        })
    }
}

#[cfg(test)]
mod tests;
