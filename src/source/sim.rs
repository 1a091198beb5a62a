//! The simulator: deterministic, seeded GPU nodes whose memory moves like
//! real work (training sawtooth with an optimizer jump, a leak that runs
//! into OOM, an inference server's KV-cache plateau, short spikes only a fast
//! poll catches). Every figure is a pure function of (scenario, seed, time),
//! so tests are repeatable and the fast and normal lanes agree.

use std::sync::Arc;

use crate::model::alloc::{AllocStats, DeviceAlloc};
use crate::model::units::{GIB, MIB};
use crate::model::{DeviceInfo, MemInfo, Millis, ProcKind, ProcSample, SystemInfo};
use crate::source::{
    FastReading, GpuProbe, HostFacts, NormalReading, ProbeError, ProcMem, ProcUtil, ProcUtilRead,
    SlowDue, SlowReading, Source, SourceError,
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
                    let phase = (age % step_s) / step_s;
                    // Forward pass builds activations for 70% of the step,
                    // the backward pass frees them.
                    let frac = if phase < 0.7 {
                        phase / 0.7
                    } else {
                        (1.0 - phase) / 0.3
                    };
                    m += (*activations as f64 * frac) as u64;
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
                s.torch = self.torch_stats(s, t_ms, t - inc.born);
            }
        }
    }

    /// Allocator figures for a simulated PyTorch process: the context and
    /// 12 MiB of other libraries outside the cache, tensors at 70–90 % of
    /// the cache, a fragmenting cache, a retry every 40 s.
    fn torch_stats(&self, s: &ProcSample, t_ms: Millis, age: f64) -> Option<Arc<AllocStats>> {
        let mem = s.mem?;
        let reserved = mem.saturating_sub(512 * MIB);
        let phase = noise(self.seed, s.pid as u64 ^ 0x7a, (age * 2.0) as u64);
        let allocated = (reserved as f64 * (0.70 + 0.2 * phase)) as u64 / (2 * MIB) * (2 * MIB);
        let uuid = self.info.gpus.get(s.gpu as usize).map(|g| g.uuid.clone());
        Some(Arc::new(AllocStats {
            schema: 1,
            pid: s.pid,
            start_time: Some(s.start_time),
            t_ms,
            seq: (age * 2.0) as u64,
            interval_ms: 500,
            writer: Some("sim".into()),
            torch_version: Some("sim".into()),
            cuda_initialized: true,
            devices: vec![DeviceAlloc {
                index: 0,
                uuid,
                allocated,
                reserved,
                active: allocated,
                inactive_split: reserved / 100 * 27,
                allocated_peak: reserved / 100 * 93,
                reserved_peak: reserved.max(mem.saturating_sub(512 * MIB)),
                num_alloc_retries: (age / 40.0) as u64,
                largest_free: Some((reserved - allocated) / 5),
                ..Default::default()
            }],
            ..Default::default()
        }))
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

/// The simulator as a live source: probes read the world at the time they
/// are asked.
pub struct SimSource {
    world: Arc<SimWorld>,
    me: String,
}

impl SimSource {
    /// `me` is the user name given to the processes "you" own.
    pub fn new(world: SimWorld, me: String) -> SimSource {
        SimSource {
            world: Arc::new(world),
            me,
        }
    }
}

impl Source for SimSource {
    fn system(&self) -> Arc<SystemInfo> {
        self.world.info.clone()
    }

    fn probe(&self, index: usize) -> Box<dyn GpuProbe> {
        Box::new(SimProbe {
            world: self.world.clone(),
            gpu: index as u32,
            meter: EnergyMeter::default(),
        })
    }

    fn host_facts(&self) -> Box<dyn HostFacts> {
        Box::new(SimHost {
            world: self.world.clone(),
            me: self.me.clone(),
            held: Default::default(),
        })
    }
}

struct SimProbe {
    world: Arc<SimWorld>,
    gpu: u32,
    meter: EnergyMeter,
}

impl GpuProbe for SimProbe {
    fn fast(&mut self, t_ms: Millis) -> Result<FastReading, ProbeError> {
        Ok(self.world.fast(self.gpu, t_ms))
    }

    fn normal(&mut self, t_ms: Millis, with_proc_util: bool) -> Result<NormalReading, ProbeError> {
        Ok(self.world.normal(self.gpu, t_ms, with_proc_util))
    }

    fn slow(&mut self, t_ms: Millis, due: SlowDue) -> Result<SlowReading, ProbeError> {
        // The meter integrates power at every read; the counter is only
        // reported when due, as NVML's is.
        let mut r = self.world.slow(self.gpu, t_ms, &mut self.meter);
        if !due.pcie {
            (r.pcie_read, r.pcie_rx_kbs, r.pcie_tx_kbs) = (false, None, None);
        }
        if !due.energy {
            (r.energy_read, r.energy_mj) = (false, None);
        }
        Ok(r)
    }
}

struct SimHost {
    world: Arc<SimWorld>,
    me: String,
    /// CPU % and RSS of each process at its last fresh read.
    held: std::collections::HashMap<(u32, u64), (Option<f32>, Option<u64>)>,
}

impl HostFacts for SimHost {
    fn enrich(&mut self, t_ms: Millis, procs: &mut [ProcSample], fresh: bool) {
        self.world.enrich(t_ms, &self.me, procs);
        let mut held = std::collections::HashMap::with_capacity(procs.len());
        for p in procs.iter_mut() {
            let key = (p.pid, p.start_time);
            match self.held.get(&key) {
                Some(&(cpu, rss)) if !fresh => (p.cpu_pct, p.rss) = (cpu, rss),
                _ => {}
            }
            held.insert(key, (p.cpu_pct, p.rss));
        }
        self.held = held;
    }
}

// ---- scenarios -----------------------------------------------------------

type Built = (u32, Vec<SimGpu>, Vec<SimProc>);

fn gpus(n: usize) -> Vec<SimGpu> {
    vec![SimGpu { ghost: 0 }; n]
}

fn proc(
    pid: u32,
    gpu: u32,
    user: &'static str,
    command: &str,
    shape: Shape,
    busy: Busy,
) -> SimProc {
    SimProc {
        pid,
        gpus: vec![gpu],
        user,
        command: command.to_owned(),
        container: None,
        pod: None,
        kind: ProcKind::Compute,
        start: 0.0,
        end: None,
        respawn: None,
        shape,
        busy,
        cpu_pct: 100.0,
        rss: 3 * GIB,
        torch: false,
    }
}

fn training_shape(scale: u64) -> Shape {
    Shape::Training {
        weights: 28 * GIB / scale,
        optimizer: 22 * GIB / scale,
        optimizer_at: 15.0,
        activations: 26 * GIB / scale,
        step_s: 2.4,
        eval_every: 45.0,
        eval_bytes: 6 * GIB / scale,
    }
}

fn demo() -> Built {
    let mut g = gpus(4);
    // Something in another container holds memory on GPU 2.
    g[2].ghost = 2 * GIB;
    let mut p = Vec::new();
    // GPU 0 and 3: one DDP training job, two ranks.
    for (rank, gpu) in [(0u32, 0u32), (1, 3)] {
        let mut t = proc(
            48_211 + rank,
            gpu,
            "$me",
            &format!("python train.py --model llama-8b --ddp --rank {rank} --batch 16 --lr 3e-4"),
            training_shape(1),
            Busy::Training,
        );
        t.cpu_pct = 160.0;
        t.rss = 11 * GIB;
        t.torch = true;
        p.push(t);
    }
    // GPU 1: a steady job and a leak that runs into OOM and is restarted.
    let mut steady = proc(
        31_877,
        1,
        "alice",
        "python finetune.py --config configs/sft.yaml",
        Shape::Steady { bytes: 96 * GIB },
        Busy::Light(55),
    );
    steady.container = Some("7f3c2a91d0be");
    p.push(steady);
    let mut leaky = proc(
        52_090,
        1,
        "$me",
        "python eval_loop.py --cache-outputs",
        Shape::Leak {
            base: 3 * GIB,
            rate: 512.0 * MIB as f64,
        },
        Busy::Light(25),
    );
    leaky.start = 4.0;
    leaky.respawn = Some(12.0);
    leaky.cpu_pct = 95.0;
    p.push(leaky);
    // GPU 2: an inference server filling its KV cache, and a notebook.
    let mut serve = proc(
        20_310,
        2,
        "svc-infer",
        "vllm serve meta-llama/Llama-3.1-70B --gpu-memory-utilization 0.85",
        Shape::Inference {
            weights: 70 * GIB,
            kv: 44 * GIB,
            tau: 14.0,
        },
        Busy::Serving,
    );
    serve.container = Some("c41d9e0f5a27");
    serve.pod = Some(("inference", "llm-serve-0", "vllm"));
    serve.cpu_pct = 45.0;
    serve.rss = 24 * GIB;
    p.push(serve);
    let mut nb = proc(
        27_415,
        2,
        "bob",
        "/opt/conda/bin/python -m ipykernel_launcher -f kernel-3f1a.json",
        Shape::Steady { bytes: 5 * GIB },
        Busy::None,
    );
    nb.cpu_pct = 0.5;
    p.push(nb);
    // GPU 3: short spikes that a 1 s poll mostly misses.
    let mut spiky = proc(
        39_004,
        3,
        "bob",
        "python bench_attention.py --seq 32768",
        Shape::Spiky {
            base: 2 * GIB,
            spike: 30 * GIB,
            every: 17.0,
            width: 0.35,
        },
        Busy::Light(30),
    );
    spiky.start = 2.0;
    p.push(spiky);
    // A display server holds a little graphics memory on GPU 0.
    let mut xorg = proc(
        1_822,
        0,
        "root",
        "/usr/lib/xorg/Xorg :0 -nolisten tcp",
        Shape::Steady { bytes: 20 * MIB },
        Busy::None,
    );
    xorg.kind = ProcKind::Graphics;
    xorg.cpu_pct = 0.3;
    xorg.rss = 90 * MIB;
    p.push(xorg);
    // A short job that starts and finishes within the first two minutes.
    let mut short = proc(
        55_120,
        3,
        "alice",
        "python export_onnx.py --fp16",
        Shape::Steady { bytes: 9 * GIB },
        Busy::Light(60),
    );
    short.start = 20.0;
    short.end = Some(75.0);
    p.push(short);
    (4, g, p)
}

fn training() -> Built {
    let mut t = proc(
        48_211,
        0,
        "$me",
        "python train.py --model llama-8b --batch 16 --lr 3e-4",
        training_shape(1),
        Busy::Training,
    );
    t.cpu_pct = 160.0;
    t.rss = 11 * GIB;
    t.torch = true;
    (1, gpus(1), vec![t])
}

fn leak() -> Built {
    let mut l = proc(
        52_090,
        0,
        "$me",
        "python eval_loop.py --cache-outputs",
        Shape::Leak {
            base: 3 * GIB,
            rate: 1024.0 * MIB as f64,
        },
        Busy::Light(25),
    );
    l.respawn = Some(15.0);
    let idle = proc(
        27_415,
        0,
        "bob",
        "python -m http.server-gpu-warm",
        Shape::Steady { bytes: GIB },
        Busy::None,
    );
    (1, gpus(1), vec![l, idle])
}

fn inference() -> Built {
    let mut s = proc(
        20_310,
        0,
        "svc-infer",
        "vllm serve meta-llama/Llama-3.1-70B --gpu-memory-utilization 0.85",
        Shape::Inference {
            weights: 70 * GIB,
            kv: 44 * GIB,
            tau: 14.0,
        },
        Busy::Serving,
    );
    s.container = Some("c41d9e0f5a27");
    (1, gpus(1), vec![s])
}

fn idle() -> Built {
    let p = vec![
        proc(
            27_415,
            0,
            "bob",
            "/opt/conda/bin/python -m ipykernel_launcher",
            Shape::Steady { bytes: 300 * MIB },
            Busy::None,
        ),
        proc(
            27_999,
            1,
            "$me",
            "python -c import torch; torch.zeros(1).cuda(); input()",
            Shape::Steady { bytes: 2 * MIB },
            Busy::None,
        ),
    ];
    (2, gpus(2), p)
}

fn crowded(seed: u64) -> Built {
    const USERS: [&str; 8] = [
        "$me",
        "alice",
        "bob",
        "carol",
        "dave",
        "erin",
        "svc-infer",
        "frank",
    ];
    const CONTAINERS: [Option<&str>; 4] = [None, Some("7f3c2a91d0be"), Some("c41d9e0f5a27"), None];
    let mut p = Vec::with_capacity(300);
    for i in 0..300u32 {
        let r = |k: u64| noise(seed, i as u64, k);
        let gpu = i % 8;
        // ~37 processes per GPU averaging ~3.2 GiB keeps every board below full.
        let size = ((512 * MIB) as f64 + r(1) * 4.0 * GIB as f64) as u64;
        let (shape, busy, cmd) = match (r(2) * 10.0) as u32 {
            0..=3 => (
                Shape::Steady { bytes: size },
                Busy::Light((r(3) * 20.0) as u32),
                format!("python worker.py --shard {i}"),
            ),
            4..=5 => (
                training_shape(24),
                Busy::Light(8),
                format!(
                    "python train.py --exp sweep-{i} --lr {:.0e}",
                    1e-4 * (1.0 + r(4) * 9.0)
                ),
            ),
            6..=7 => (
                Shape::Inference {
                    weights: size / 2,
                    kv: size / 2,
                    tau: 20.0 + r(5) * 60.0,
                },
                Busy::Light(6),
                format!("python serve.py --port {}", 8000 + i),
            ),
            8 => (
                Shape::Spiky {
                    base: size / 4,
                    spike: size / 2,
                    every: 10.0 + r(6) * 30.0,
                    width: 0.5,
                },
                Busy::Light(4),
                format!("python bench.py --case {i}"),
            ),
            _ => (
                Shape::Steady { bytes: 64 * MIB },
                Busy::None,
                format!("python -m ipykernel_launcher -f kernel-{i:04}.json"),
            ),
        };
        let mut sp = proc(
            10_000 + i * 37,
            gpu,
            USERS[(r(7) * USERS.len() as f64) as usize % USERS.len()],
            &cmd,
            shape,
            busy,
        );
        sp.container = CONTAINERS[(r(8) * 4.0) as usize % 4];
        sp.start = (r(9) * 30.0).floor();
        sp.cpu_pct = (r(10) * 120.0) as f32;
        sp.rss = (256.0 * MIB as f64 + r(11) * 6.0 * GIB as f64) as u64;
        p.push(sp);
    }
    (8, gpus(8), p)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: Millis = 1_764_000_000_000;

    fn world(name: &str) -> SimWorld {
        SimWorld::new(name, 7, T0).expect("scenario exists")
    }

    fn at(s: f64) -> Millis {
        T0 + (s * 1000.0) as u64
    }

    fn used(w: &SimWorld, gpu: u32, s: f64) -> u64 {
        w.fast(gpu, at(s)).mem.map(|m| m.used).unwrap_or(0)
    }

    fn pid_mem(w: &SimWorld, gpu: u32, s: f64, pid: u32) -> Option<u64> {
        w.fast(gpu, at(s))
            .procs
            .iter()
            .find(|p| p.pid == pid)
            .and_then(|p| p.mem)
    }

    #[test]
    fn same_seed_same_numbers_other_seed_other_numbers() {
        let a = SimWorld::new("crowded", 1, T0).unwrap();
        let b = SimWorld::new("crowded", 1, T0).unwrap();
        let c = SimWorld::new("crowded", 2, T0).unwrap();
        for s in [0.0, 1.5, 33.3, 600.0] {
            assert_eq!(a.snapshot(0, at(s), "me"), b.snapshot(0, at(s), "me"));
        }
        assert_ne!(a.snapshot(0, at(60.0), "me"), c.snapshot(0, at(60.0), "me"));
    }

    #[test]
    fn the_probe_reads_pcie_and_energy_only_when_due_as_nvml_does() {
        let src = SimSource::new(world("demo"), "me".into());
        let mut p = src.probe(0);
        let all = p.slow(at(10.0), SlowDue::ALL).unwrap();
        assert!(all.pcie_read && all.energy_read);
        assert!(all.pcie_rx_kbs.is_some() && all.energy_mj.is_some());
        let none = p.slow(at(15.0), SlowDue::default()).unwrap();
        assert!(!none.pcie_read && !none.energy_read);
        assert_eq!((none.pcie_rx_kbs, none.energy_mj), (None, None));
        assert_eq!(none.ecc_volatile, Some(0), "ECC every round");
        assert_eq!(
            (
                none.ecc_sbe_volatile,
                none.ecc_dbe_volatile,
                none.pcie_replays
            ),
            (Some(0), Some(0), Some(0)),
            "counters every round"
        );
        assert_eq!(
            (
                none.remapped_rows_cor,
                none.remapped_rows_unc,
                none.row_remap_failure
            ),
            (Some(0), Some(0), Some(false))
        );
        let mem_temp = none.mem_temp_c.unwrap();
        assert!((30..=95).contains(&mem_temp), "{mem_temp} °C");
        let energy = SlowDue {
            pcie: false,
            energy: true,
        };
        let later = p.slow(at(20.0), energy).unwrap();
        assert_eq!(later.pcie_rx_kbs, None);
        // The counter kept counting while it was not read.
        assert!(later.energy_mj > all.energy_mj, "{later:?} {all:?}");
    }

    #[test]
    fn unknown_scenario_names_the_valid_ones() {
        let e = SimWorld::new("nope", 1, T0).unwrap_err().to_string();
        assert!(
            e.contains("`nope`") && e.contains("training") && e.contains("crowded"),
            "{e}"
        );
    }

    #[test]
    fn crowded_is_eight_gpus_and_three_hundred_processes() {
        let w = world("crowded");
        let snap = w.snapshot(0, at(60.0), "me");
        assert_eq!(snap.gpus.len(), 8);
        assert_eq!(snap.procs.len(), 300);
        for g in &snap.gpus {
            let m = g.mem.unwrap();
            assert!(m.used + m.reserved <= m.total, "gpu {} over full", g.index);
        }
    }

    #[test]
    fn training_is_a_sawtooth_with_an_optimizer_jump() {
        let w = world("training");
        let before = pid_mem(&w, 0, 12.0, 48_211).unwrap();
        let after = pid_mem(&w, 0, 16.0, 48_211).unwrap();
        assert!(
            after > before + 15 * GIB,
            "optimizer jump: {before} -> {after}"
        );
        // Within one 2.4 s step memory rises then falls back.
        let samples: Vec<u64> = (0..24)
            .map(|i| pid_mem(&w, 0, 24.0 + i as f64 * 0.1, 48_211).unwrap())
            .collect();
        let max = *samples.iter().max().unwrap();
        let min = *samples.iter().min().unwrap();
        assert!(max - min > 20 * GIB, "sawtooth amplitude {}", max - min);
    }

    #[test]
    fn leak_grows_until_oom_then_exits_and_restarts_with_new_pid() {
        let w = world("leak");
        let m10 = pid_mem(&w, 0, 10.0, 52_090).unwrap();
        let m20 = pid_mem(&w, 0, 20.0, 52_090).unwrap();
        let rate = (m20 - m10) as f64 / 10.0;
        assert!((rate - GIB as f64).abs() < 0.05 * GIB as f64, "rate {rate}");
        // Find the exit; the GPU is nearly full just before it.
        let mut t = 20.0;
        while pid_mem(&w, 0, t, 52_090).is_some() {
            t += 0.1;
            assert!(t < 400.0, "leak never ended");
        }
        let last = t - 0.1;
        let m = w.fast(0, at(last)).mem.unwrap();
        assert!(m.free < 2 * GIB, "free before OOM {}", m.free);
        // Restarted later with another PID.
        let later = w.fast(0, at(t + 20.0));
        assert!(later.procs.iter().any(|p| p.pid == 52_090 + 97));
    }

    #[test]
    fn inference_reaches_a_plateau() {
        let w = world("inference");
        let a = used(&w, 0, 120.0);
        let b = used(&w, 0, 180.0);
        assert!(a > 100 * GIB);
        assert!(b.abs_diff(a) < 64 * MIB, "plateau moved {a} -> {b}");
    }

    #[test]
    fn idle_does_not_move() {
        let w = world("idle");
        assert_eq!(used(&w, 0, 10.0), used(&w, 0, 500.0));
        assert_eq!(w.normal(0, at(100.0), true).util_gpu, Some(0));
    }

    #[test]
    fn demo_spikes_are_short() {
        let w = world("demo");
        // Spike at 17 s after a 2 s start: 19.0 ..= 19.35 s.
        let base = pid_mem(&w, 3, 18.5, 39_004).unwrap();
        let spike = pid_mem(&w, 3, 19.1, 39_004).unwrap();
        let after = pid_mem(&w, 3, 19.6, 39_004).unwrap();
        assert!(spike > base + 25 * GIB);
        assert_eq!(base, after);
    }

    #[test]
    fn demo_has_other_users_containers_graphics_and_unaccounted_memory() {
        let w = world("demo");
        let snap = w.snapshot(0, at(30.0), "me");
        let users: std::collections::BTreeSet<_> =
            snap.procs.iter().filter_map(|p| p.user.clone()).collect();
        assert!(users.contains("me") && users.contains("alice"));
        assert!(snap.procs.iter().any(|p| p.container.is_some()));
        assert!(snap.procs.iter().any(|p| p.kind == ProcKind::Graphics));
        let g2 = &snap.gpus[2];
        assert!(g2.unaccounted(&snap.procs).unwrap() >= 2 * GIB);
    }
}
