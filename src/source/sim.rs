//! The simulator: deterministic, seeded GPU nodes whose memory moves like
//! real work (training sawtooth with an optimizer jump, a leak that runs
//! into OOM, an inference server's KV-cache plateau, short spikes only a fast
//! poll catches). Every figure is a pure function of (scenario, seed, time),
//! so tests are repeatable and the fast and normal lanes agree.

use std::sync::Arc;

mod live;
mod scenarios;
#[cfg(test)]
mod tests;
mod torch;

pub use live::SimSource;
use scenarios::{crowded, demo, idle, inference, leak, training};

use crate::model::units::{GIB, MIB};
use crate::model::{DeviceInfo, MemInfo, Millis, ProcKind, ProcSample, SystemInfo};
use crate::source::{
    FastReading, NormalReading, ProcMem, ProcUtil, ProcUtilRead, SlowReading, SourceError,
};

/// Names accepted by `--demo [SCENARIO]`.
pub const SCENARIOS: &[(&str, &str)] = &[
    (
        "demo",
        "4 GPUs: training, a leak that hits OOM, inference, spikes; every feature within two minutes",
    ),
    (
        "training",
        "1 GPU: data-parallel training, sawtooth per step, optimizer jump",
    ),
    (
        "leak",
        "1 GPU: a process that grows until CUDA OOM, exits, and is restarted",
    ),
    (
        "inference",
        "1 GPU: an inference server filling its KV cache to a plateau",
    ),
    ("idle", "2 GPUs: small idle processes, nothing moves"),
    ("crowded", "8 GPUs, 300 processes of many users"),
];

/// H200 figures as NVML reports them on the real board.
const H200_TOTAL: u64 = 143_771 * MIB;
const H200_RESERVED: u64 = 583 * MIB;
/// Memory the driver itself holds on an idle board (counted in `used`).
const DRIVER_BASE: u64 = 4 * MIB;
const POWER_LIMIT_MW: u32 = 700_000;
const OOM_MARGIN: u64 = 64 * MIB;

/// How a process's memory moves, in bytes, over seconds since it started.
#[derive(Clone, Debug)]
enum Shape {
    /// Holds a fixed block after a short load.
    Steady { bytes: u64 },
    /// Weights, then an optimizer jump, then a sawtooth of activations per
    /// step; an evaluation bump every `eval_every` seconds.
    Training {
        weights: u64,
        optimizer: u64,
        optimizer_at: f64,
        activations: u64,
        step_s: f64,
        eval_every: f64,
        eval_bytes: u64,
    },
    /// Grows by `rate` bytes/s in half-second steps from `base`.
    Leak { base: u64, rate: f64 },
    /// Loads weights, then fills a KV cache towards `kv` (time constant `tau`).
    Inference { weights: u64, kv: u64, tau: f64 },
    /// Holds `base`, and for `width` seconds every `every` seconds `spike` more.
    Spiky {
        base: u64,
        spike: u64,
        every: f64,
        width: f64,
    },
}

/// How busy a process keeps the SMs, percent.
#[derive(Clone, Copy, Debug)]
enum Busy {
    None,
    Training,
    Serving,
    Light(u32),
}

#[derive(Clone, Debug)]
struct SimProc {
    pid: u32,
    gpus: Vec<u32>,
    user: &'static str,
    command: String,
    container: Option<&'static str>,
    /// (namespace, pod, container name), as a Kubernetes node's kubelet
    /// links say them.
    pod: Option<(&'static str, &'static str, &'static str)>,
    kind: ProcKind,
    /// Seconds after the scenario starts.
    start: f64,
    /// Seconds after the scenario starts; `None` = runs on.
    end: Option<f64>,
    /// For a leak: restart this many seconds after the OOM, with a new PID.
    respawn: Option<f64>,
    shape: Shape,
    busy: Busy,
    cpu_pct: f32,
    rss: u64,
    /// Publishes PyTorch allocator figures (as `vramwatch_torch` would).
    torch: bool,
}

#[derive(Clone, Debug)]
struct SimGpu {
    /// Memory held by something no listed process accounts for.
    ghost: u64,
}

/// A scenario instance: the node, its processes, the seed, time zero.
#[derive(Debug)]
pub struct SimWorld {
    scenario: String,
    seed: u64,
    t0_ms: Millis,
    gpus: Vec<SimGpu>,
    procs: Vec<SimProc>,
    info: Arc<SystemInfo>,
}

/// One live instance of a process (a leak that restarts is several).
#[derive(Clone, Debug, PartialEq)]
struct Incarnation {
    proc_index: usize,
    pid: u32,
    /// Seconds after scenario start.
    born: f64,
}

impl SimWorld {
    /// Builds scenario `name` with `seed`, its clock starting at `t0_ms`.
    pub fn new(name: &str, seed: u64, t0_ms: Millis) -> Result<SimWorld, SourceError> {
        let (gpu_count, gpus, procs) = match name {
            "demo" => demo(),
            "training" => training(),
            "leak" => leak(),
            "inference" => inference(),
            "idle" => idle(),
            "crowded" => crowded(seed),
            _ => {
                return Err(SourceError::UnknownScenario {
                    name: name.to_owned(),
                    valid: SCENARIOS
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        };
        let devices = (0..gpu_count)
            .map(|i| DeviceInfo {
                index: i,
                name: "NVIDIA H200".into(),
                uuid: format!(
                    "GPU-{:08x}-{:04x}-{:04x}-sim0-{:012x}",
                    mix(seed, i as u64, 1) as u32,
                    mix(seed, i as u64, 2) as u16,
                    mix(seed, i as u64, 3) as u16,
                    mix(seed, i as u64, 4) & 0xffff_ffff_ffff
                ),
                pci_bus_id: format!("00000000:{:02X}:00.0", 0x18 + 0x10 * i),
                memory_total: H200_TOTAL,
                num_fans: 0,
                mig_enabled: Some(false),
                compute_capability: Some("9.0".into()),
            })
            .collect();
        let info = Arc::new(SystemInfo {
            host: "sim-node".into(),
            source: format!("sim:{name}"),
            driver_version: Some("sim".into()),
            cuda_version: Some("sim".into()),
            nvml_version: None,
            gpus: devices,
        });
        Ok(SimWorld {
            scenario: name.to_owned(),
            seed,
            t0_ms,
            gpus,
            procs,
            info,
        })
    }

    pub fn scenario(&self) -> &str {
        &self.scenario
    }

    pub fn info(&self) -> Arc<SystemInfo> {
        self.info.clone()
    }

    fn secs(&self, t_ms: Millis) -> f64 {
        t_ms.saturating_sub(self.t0_ms) as f64 / 1000.0
    }

    /// Memory of process `p` at `age` seconds after it was born.
    fn proc_mem(&self, p: &SimProc, pid: u32, age: f64, t: f64) -> u64 {
        let load = (age / 3.0).clamp(0.0, 1.0);
        let jitter =
            |scale: u64| (noise(self.seed, pid as u64, (t * 10.0) as u64) * scale as f64) as u64;
        let bytes = match &p.shape {
            Shape::Steady { bytes } => (*bytes as f64 * load) as u64,
            Shape::Training {
                weights,
                optimizer,
                optimizer_at,
                activations,
                step_s,
                eval_every,
                eval_bytes,
            } => {
                let mut m = (*weights as f64 * load) as u64;
                if age >= *optimizer_at {
                    m += optimizer;
                    m += (*activations as f64 * activation_share(age, *step_s)) as u64;
                    if age % eval_every < 4.0 && age > *eval_every {
                        m += eval_bytes;
                    }
                }
                m + jitter(64 * MIB)
            }
            Shape::Leak { base, rate } => {
                let grown = if age > 3.0 {
                    ((age - 3.0) * 2.0).floor() / 2.0 * rate
                } else {
                    0.0
                };
                (*base as f64 * load) as u64 + grown as u64
            }
            Shape::Inference { weights, kv, tau } => {
                let w = (*weights as f64 * (age / 6.0).clamp(0.0, 1.0)) as u64;
                let kv_age = (age - 6.0).max(0.0);
                let kv_now = (*kv as f64 * (1.0 - (-kv_age / tau).exp())) as u64;
                // The allocator grabs KV blocks in 2 MiB pages.
                w + kv_now / (2 * MIB) * (2 * MIB)
            }
            Shape::Spiky {
                base,
                spike,
                every,
                width,
            } => {
                let mut m = (*base as f64 * load) as u64;
                if age > *every && age % every < *width {
                    m += spike;
                }
                m
            }
        };
        // Drivers hand out memory in 2 MiB pages; a context costs ~500 MiB.
        (bytes + 500 * MIB) / (2 * MIB) * (2 * MIB)
    }

    fn proc_util(&self, p: &SimProc, pid: u32, age: f64, t: f64) -> u32 {
        let n = noise(self.seed, pid as u64 ^ 0x55, (t * 2.0) as u64);
        match p.busy {
            Busy::None => 0,
            Busy::Light(u) => (u as f64 * (0.5 + n)) as u32,
            Busy::Training => {
                if age < 3.0 {
                    5
                } else if let Shape::Training { step_s, .. } = p.shape {
                    // A data-loading stall at every step boundary.
                    if (age % step_s) / step_s > 0.9 {
                        40 + (n * 20.0) as u32
                    } else {
                        92 + (n * 8.0) as u32
                    }
                } else {
                    90
                }
            }
            Busy::Serving => {
                let wave = ((t / 17.0).sin() * 0.5 + 0.5) * 50.0;
                (15.0 + wave + n * 20.0) as u32
            }
        }
        .min(100)
    }

    /// Free memory on `gpu` for process `skip`'s growth: capacity minus
    /// everything else's largest footprint. Used to find when a leak OOMs.
    fn room_for(&self, gpu: u32, skip: usize) -> u64 {
        let others: u64 = self
            .procs
            .iter()
            .enumerate()
            .filter(|(i, p)| *i != skip && p.gpus.contains(&gpu))
            .map(|(_, p)| envelope(&p.shape) + 500 * MIB)
            .sum();
        H200_TOTAL
            .saturating_sub(
                H200_RESERVED + DRIVER_BASE + self.gpus[gpu as usize].ghost + OOM_MARGIN,
            )
            .saturating_sub(others)
    }

    /// The processes alive at `t` seconds.
    fn alive(&self, t: f64) -> Vec<Incarnation> {
        let mut out = Vec::new();
        for (i, p) in self.procs.iter().enumerate() {
            if t < p.start {
                continue;
            }
            if let (Shape::Leak { base, rate }, Some(respawn)) = (&p.shape, p.respawn) {
                let room = self.room_for(p.gpus[0], i);
                let grow = room.saturating_sub(*base + 500 * MIB) as f64;
                let life = 3.0 + (grow / rate * 2.0).ceil() / 2.0;
                let period = life + respawn;
                let cycle = ((t - p.start) / period).floor();
                let born = p.start + cycle * period;
                if t - born < life {
                    out.push(Incarnation {
                        proc_index: i,
                        pid: p.pid + cycle as u32 * 97,
                        born,
                    });
                }
                continue;
            }
            if p.end.is_some_and(|e| t >= e) {
                continue;
            }
            out.push(Incarnation {
                proc_index: i,
                pid: p.pid,
                born: p.start,
            });
        }
        out
    }

    fn procs_on(&self, gpu: u32, t: f64) -> Vec<(Incarnation, u64)> {
        self.alive(t)
            .into_iter()
            .filter(|inc| self.procs[inc.proc_index].gpus.contains(&gpu))
            .map(|inc| {
                let p = &self.procs[inc.proc_index];
                let m = self.proc_mem(p, inc.pid, t - inc.born, t);
                (inc, m)
            })
            .collect()
    }

    fn fast(&self, gpu: u32, t_ms: Millis) -> FastReading {
        let t = self.secs(t_ms);
        let procs = self.procs_on(gpu, t);
        let sum: u64 = procs.iter().map(|(_, m)| m).sum();
        let used =
            (DRIVER_BASE + self.gpus[gpu as usize].ghost + sum).min(H200_TOTAL - H200_RESERVED);
        FastReading {
            mem: Some(MemInfo {
                used,
                reserved: H200_RESERVED,
                free: H200_TOTAL - H200_RESERVED - used,
                total: H200_TOTAL,
            }),
            procs: procs
                .into_iter()
                .map(|(inc, m)| ProcMem {
                    pid: inc.pid,
                    kind: self.procs[inc.proc_index].kind,
                    mem: Some(m),
                })
                .collect(),
        }
    }

    fn gpu_util_at(&self, gpu: u32, t: f64) -> u32 {
        self.alive(t)
            .iter()
            .filter(|inc| self.procs[inc.proc_index].gpus.contains(&gpu))
            .map(|inc| self.proc_util(&self.procs[inc.proc_index], inc.pid, t - inc.born, t))
            .sum::<u32>()
            .min(100)
    }

    fn normal(&self, gpu: u32, t_ms: Millis, with_proc_util: bool) -> NormalReading {
        let t = self.secs(t_ms);
        let fast = self.fast(gpu, t_ms);
        let util = self.gpu_util_at(gpu, t);
        let temp = self.temp_c(gpu, t);
        let proc_util = if !with_proc_util {
            ProcUtilRead::NotAsked
        } else {
            ProcUtilRead::Samples(
                self.alive(t)
                    .iter()
                    .filter(|inc| self.procs[inc.proc_index].gpus.contains(&gpu))
                    .filter_map(|inc| {
                        let u =
                            self.proc_util(&self.procs[inc.proc_index], inc.pid, t - inc.born, t);
                        (u > 0).then_some(ProcUtil {
                            pid: inc.pid,
                            sm: Some(u),
                            mem: Some(u * 2 / 5),
                            enc: Some(0),
                            dec: Some(0),
                        })
                    })
                    .collect(),
            )
        };
        NormalReading {
            fast,
            bar1: Some(crate::model::Bar1 {
                used: 17 * MIB + self.procs_on(gpu, t).len() as u64 * 2 * MIB,
                total: 256 * GIB,
            }),
            util_gpu: Some(util),
            util_mem: Some(util * 2 / 5),
            temp_c: Some(temp as u32),
            power_mw: Some(self.power_mw(gpu, t)),
            power_limit_mw: Some(POWER_LIMIT_MW),
            sm_clock_mhz: Some(if util > 0 { 1980 } else { 345 }),
            mem_clock_mhz: Some(3201),
            fan_pct: None,
            pstate: Some(0),
            // The demo's jobs are compute: the video engines idle.
            enc_util: Some(0),
            dec_util: Some(0),
            proc_util,
        }
    }

    /// GPU temperature at `t` seconds: it follows the load of the last
    /// half minute.
    fn temp_c(&self, gpu: u32, t: f64) -> f64 {
        let recent = [0.0, 5.0, 10.0, 20.0, 30.0]
            .iter()
            .map(|d| self.gpu_util_at(gpu, (t - d).max(0.0)) as f64)
            .sum::<f64>()
            / 5.0;
        31.0 + recent * 0.42 + noise(self.seed, gpu as u64 ^ 0x77, t as u64)
    }

    /// Board power in milliwatts at `t` seconds.
    fn power_mw(&self, gpu: u32, t: f64) -> u32 {
        let util = self.gpu_util_at(gpu, t) as f64;
        let p = 78_000.0 + util * 5_900.0 + noise(self.seed, gpu as u64, t as u64) * 9_000.0;
        (p as u32).min(POWER_LIMIT_MW)
    }

    /// `meter` integrates power between slow reads (energy is a counter).
    fn slow(&self, gpu: u32, t_ms: Millis, meter: &mut EnergyMeter) -> SlowReading {
        let t = self.secs(t_ms);
        let util = self.gpu_util_at(gpu, t) as f64;
        let power = self.power_mw(gpu, t) as f64;
        let dt = (t - meter.last_s.unwrap_or(0.0)).max(0.0);
        meter.mj += power * dt;
        meter.last_s = Some(t);
        SlowReading {
            pcie_read: true,
            pcie_rx_kbs: Some((util * 2_100.0 + 300.0) as u32),
            pcie_tx_kbs: Some((util * 800.0 + 150.0) as u32),
            energy_read: true,
            energy_mj: Some(meter.mj as u64),
            ecc_volatile: Some(0),
            ecc_sbe_volatile: Some(0),
            ecc_dbe_volatile: Some(0),
            // HBM runs a few degrees warmer than the GPU under load.
            mem_temp_c: Some((self.temp_c(gpu, t) + 2.0 + util * 0.06) as u32),
            pcie_replays: Some(0),
            remapped_rows_cor: Some(0),
            remapped_rows_unc: Some(0),
            row_remap_failure: Some(false),
            xids: Vec::new(),
        }
    }

    /// Fills host facts for the processes that are ours.
    pub(crate) fn enrich(&self, t_ms: Millis, me: &str, procs: &mut [ProcSample]) {
        let t = self.secs(t_ms);
        let alive: std::collections::HashMap<u32, Incarnation> =
            self.alive(t).into_iter().map(|i| (i.pid, i)).collect();
        for s in procs.iter_mut() {
            let Some(inc) = alive.get(&s.pid) else {
                continue;
            };
            let p = &self.procs[inc.proc_index];
            let n = noise(self.seed, s.pid as u64 ^ 0x99, (t * 2.0) as u64) as f32;
            let user = if p.user == "$me" { me } else { p.user };
            s.start_time = self.t0_ms / 1000 + inc.born as u64;
            s.user = Some(user.into());
            s.name = Some(short_name(&p.command).into());
            s.command = Some(p.command.as_str().into());
            s.container = p.container.map(Into::into);
            if let Some((ns, pod, name)) = p.pod {
                s.namespace = Some(ns.into());
                s.pod = Some(pod.into());
                s.container_name = Some(name.into());
            }
            s.cpu_pct = Some(p.cpu_pct * (0.8 + 0.4 * n));
            s.rss = Some(p.rss);
            if p.torch {
                let high = self.proc_high_water(p, s.pid, t - inc.born, t);
                s.torch = self.torch_stats(s, high, t_ms, t - inc.born);
            }
        }
    }

    /// Every lane of GPU `g` at `t_ms`, as one probe would read them, for
    /// a whole-node snapshot without a sampler (`SimWorld::snapshot`, which
    /// the sampler defines since it assembles readings).
    pub fn readings(&self, g: u32, t_ms: Millis) -> (NormalReading, SlowReading) {
        (
            self.normal(g, t_ms, true),
            self.slow(g, t_ms, &mut EnergyMeter::default()),
        )
    }
}

/// Energy integrated by one probe between its slow reads.
#[derive(Debug, Default)]
struct EnergyMeter {
    last_s: Option<f64>,
    mj: f64,
}

/// `python /x/train.py --a` → "python".
fn short_name(command: &str) -> &str {
    let first = command.split_whitespace().next().unwrap_or("?");
    first.rsplit('/').next().unwrap_or(first)
}

/// Largest footprint a shape reaches (without the context).
fn envelope(s: &Shape) -> u64 {
    match s {
        Shape::Steady { bytes } => *bytes,
        Shape::Training {
            weights,
            optimizer,
            activations,
            eval_bytes,
            ..
        } => weights + optimizer + activations + eval_bytes + 64 * MIB,
        Shape::Leak { .. } => 0,
        Shape::Inference { weights, kv, .. } => weights + kv,
        Shape::Spiky { base, spike, .. } => base + spike,
    }
}

/// The share of a training step's activations held `age` seconds after
/// the process began: the forward pass builds them for 70 % of the step,
/// the backward pass frees them.
fn activation_share(age: f64, step_s: f64) -> f64 {
    let phase = (age % step_s) / step_s;
    if phase < 0.7 {
        phase / 0.7
    } else {
        (1.0 - phase) / 0.3
    }
}

/// splitmix64 of the three inputs: deterministic noise in [0, 1).
fn noise(seed: u64, a: u64, b: u64) -> f64 {
    (mix(seed, a, b) >> 11) as f64 / (1u64 << 53) as f64
}

fn mix(seed: u64, a: u64, b: u64) -> u64 {
    let mut z = seed
        .wrapping_add(a.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(b.wrapping_mul(0xD1B5_4A32_D192_ED03));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
