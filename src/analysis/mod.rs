//! Memory intelligence: peaks, growth rates, phases, leaks, OOM forecasts
//! and alerts, computed from the stream of snapshots (docs/analysis.md).
//!
//! [`Analyzer::observe`] takes one snapshot at a time and returns the alerts
//! it raised; the accessors give the current assessment of each GPU and
//! process. Everything is pure and bounded: per series a window of at most
//! 64 points and at most 128 leak buckets, whatever the sampling rate and
//! however long the run.

pub mod alerts;
pub mod allocator;
pub mod forecast;
pub mod hook;
pub mod leak;
pub mod peak;
pub mod phase;
pub mod scorecard;
pub mod series;
pub mod slope;
pub mod truth;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde::Serialize;

use crate::config::Config;
pub use alerts::{Alert, AlertKind, AlertLevels};
pub use forecast::{Forecast, Room};
pub use hook::{HookError, alert_env, run_hook};
pub use leak::{LeakFlag, LeakParams};
pub use peak::Peak;
pub use phase::{Phase, PhaseParams};
pub use slope::Rate;

use crate::model::{GpuState, MemInfo, Millis, ProcId, Snapshot};
use alerts::GpuAlerts;
use leak::{LeakChange, LeakDetector};
use series::Series;

/// Shortest window the growth rate is measured over.
pub const RATE_WINDOW: Duration = Duration::from_secs(30);
/// The rate window holds at least this many sampling intervals.
pub const RATE_WINDOW_INTERVALS: u32 = 8;

/// Everything the analysis needs from the configuration, plus the
/// estimators' own parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct AnalysisConfig {
    /// The sampling interval (the display interval).
    pub interval: Duration,
    /// Window of the robust growth rate.
    pub rate_window: Duration,
    pub phase: PhaseParams,
    pub leak: LeakParams,
    /// How long a forecast must hold steady before it is shown
    /// (`forecast::Steady`).
    pub forecast_sustain: Duration,
    pub levels: AlertLevels,
    pub bell: bool,
    pub command: Vec<String>,
    pub burst_level: Option<f64>,
    /// An exited process's assessment is kept this long.
    pub forget_after: Duration,
}

impl AnalysisConfig {
    /// From the validated configuration: `[thresholds]` memory, temperature
    /// and power; `[alerts]` forecast_below, leak_min_rate,
    /// leak_min_duration, bell, command, burst_level; `[sampling]` interval
    /// and exited_keep. The phase's growth threshold is a quarter of
    /// leak_min_rate; the rate window is 30 s or 8 intervals, whichever is
    /// longer, and a volatile series must be calm that long to leave; growth is sustained enough for a forecast when the forecast
    /// has held steady for leak_min_duration (as long as growth must last
    /// to be a leak).
    pub fn from_config(c: &Config) -> AnalysisConfig {
        let a = &c.alerts;
        let interval = c.sampling.interval;
        let rate_window = RATE_WINDOW.max(interval * RATE_WINDOW_INTERVALS);
        AnalysisConfig {
            interval,
            rate_window,
            phase: PhaseParams {
                grow_rate: (a.leak_min_rate / 4.0).max(1.0),
                calm: rate_window,
                ..PhaseParams::default()
            },
            leak: LeakParams {
                min_rate: a.leak_min_rate,
                min_duration: a.leak_min_duration,
                interval,
            },
            forecast_sustain: a.leak_min_duration,
            levels: AlertLevels::from_config(&c.thresholds, a),
            bell: a.bell,
            command: a.command.clone(),
            burst_level: a.burst_level,
            forget_after: c.sampling.exited_keep,
        }
    }
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        AnalysisConfig::from_config(&Config::default())
    }
}

/// What is known about one GPU now.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuAssessment {
    pub index: u32,
    /// The snapshot this is from.
    pub t_ms: Millis,
    pub state: GpuState,
    pub mem: Option<MemInfo>,
    /// Peak of `used` since the analysis started (fast-lane reads count).
    pub peak: Option<Peak>,
    /// Growth of `used` over the rate window.
    pub rate: Option<Rate>,
    pub phase: Phase,
    pub phase_since_ms: Millis,
    /// "Full in ~N s", when growth is sustained.
    pub forecast: Option<Forecast>,
    /// Live processes on it that are growing / flagged leaking.
    pub growing: u32,
    pub leaking: u32,
}

/// What is known about one process on one GPU now.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProcAssessment {
    pub id: ProcId,
    pub first_seen_ms: Millis,
    pub last_seen_ms: Millis,
    /// In the newest snapshot.
    pub alive: bool,
    pub mem: Option<u64>,
    pub peak: Option<Peak>,
    pub rate: Option<Rate>,
    pub phase: Phase,
    pub phase_since_ms: Millis,
    pub leak: Option<LeakFlag>,
    /// When, at its own growth, it would use up the GPU's free memory.
    pub forecast: Option<Forecast>,
}

/// The analysis as of one snapshot: every GPU's assessment and every
/// process's not yet forgotten. The pipeline sends one with each snapshot,
/// so every consumer (dashboard, recorder, exporter) reads the same figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Assessment {
    /// The snapshot it is of.
    pub t_ms: Millis,
    /// By GPU index.
    gpus: Vec<GpuAssessment>,
    procs: HashMap<ProcId, ProcAssessment>,
}

impl Assessment {
    pub fn gpu(&self, index: u32) -> Option<&GpuAssessment> {
        self.gpus.iter().find(|g| g.index == index)
    }

    /// Every GPU seen, by index.
    pub fn gpus(&self) -> impl Iterator<Item = &GpuAssessment> {
        self.gpus.iter()
    }

    pub fn process(&self, id: &ProcId) -> Option<&ProcAssessment> {
        self.procs.get(id)
    }

    /// Every process seen and not yet forgotten, in no particular order.
    pub fn processes(&self) -> impl Iterator<Item = &ProcAssessment> {
        self.procs.values()
    }
}

#[derive(Debug)]
struct GpuTrack {
    series: Series,
    alerts: GpuAlerts,
    steady: forecast::Steady,
    a: GpuAssessment,
}

impl GpuTrack {
    /// Free memory now, at the peaks and at the troughs (each recent
    /// reading raised by `rate_bps` for the time since it was read).
    fn room(&self, t: Millis, m: MemInfo, rate_bps: f64) -> Room {
        let used = m.used as f64;
        let free = m.free as f64;
        let top = self.series.peaks.envelope(t, rate_bps).unwrap_or(used);
        let floor = self.series.window.floor_at(t, rate_bps).unwrap_or(used);
        let at = |x: f64| x.clamp(0.0, u64::MAX as f64) as u64;
        Room::ordered(
            m.free,
            at(free - (top - used).max(0.0)),
            at(free + (used - floor).max(0.0)),
        )
    }
}

#[derive(Debug)]
struct ProcTrack {
    series: Series,
    leak: LeakDetector,
    /// The leak detector has had its first point (see `CONTEXT_STARTED`).
    leak_started: bool,
    steady: forecast::Steady,
    seen: u64,
    a: ProcAssessment,
}

impl ProcTrack {
    /// The growth it adds to its GPU: the short-window rate while growing,
    /// else the baseline rate while flagged leaking.
    fn growth(&self) -> Option<Rate> {
        match (self.series.phase.phase(), self.series.estimate) {
            (Phase::Growing, Some(e)) => Some(e.rate),
            _ => self.leak.flag().map(|f| f.rate),
        }
    }
}

/// Below this a process is still creating its CUDA context.
const CONTEXT_STARTED: u64 = 64 << 20;

/// The analysis of a snapshot stream.
#[derive(Debug)]
pub struct Analyzer {
    cfg: AnalysisConfig,
    gpus: BTreeMap<u32, GpuTrack>,
    procs: HashMap<ProcId, ProcTrack>,
    generation: u64,
}

impl Analyzer {
    pub fn new(cfg: &AnalysisConfig) -> Analyzer {
        Analyzer {
            cfg: cfg.clone(),
            gpus: BTreeMap::new(),
            procs: HashMap::new(),
            generation: 0,
        }
    }

    pub fn config(&self) -> &AnalysisConfig {
        &self.cfg
    }

    /// Forgets everything (a replay that seeks back).
    pub fn reset(&mut self) {
        self.gpus.clear();
        self.procs.clear();
    }

    pub fn gpu(&self, index: u32) -> Option<&GpuAssessment> {
        self.gpus.get(&index).map(|t| &t.a)
    }

    /// Every GPU seen, by index.
    pub fn gpus(&self) -> impl Iterator<Item = &GpuAssessment> {
        self.gpus.values().map(|t| &t.a)
    }

    pub fn process(&self, id: &ProcId) -> Option<&ProcAssessment> {
        self.procs.get(id).map(|t| &t.a)
    }

    /// Every process seen and not yet forgotten, in no particular order.
    pub fn processes(&self) -> impl Iterator<Item = &ProcAssessment> {
        self.procs.values().map(|t| &t.a)
    }

    /// A copy of the analysis as it stands, as of `t_ms` (the newest
    /// snapshot observed).
    pub fn assessment(&self, t_ms: Millis) -> Assessment {
        Assessment {
            t_ms,
            gpus: self.gpus.values().map(|t| t.a.clone()).collect(),
            procs: self.procs.iter().map(|(k, t)| (*k, t.a.clone())).collect(),
        }
    }

    /// Feeds one snapshot; returns the alerts it raised, ordered by GPU and
    /// kind. A snapshot older than the previous one updates peaks and
    /// alerts but not the rate windows.
    pub fn observe(&mut self, snap: &Snapshot) -> Vec<Alert> {
        let t = snap.t_ms;
        let cfg = &self.cfg;
        let mut out = Vec::new();

        for g in &snap.gpus {
            let tr = self.gpus.entry(g.index).or_insert_with(|| GpuTrack {
                series: Series::new(cfg.rate_window),
                alerts: GpuAlerts::default(),
                steady: forecast::Steady::default(),
                a: GpuAssessment {
                    index: g.index,
                    t_ms: t,
                    state: g.state,
                    mem: None,
                    peak: None,
                    rate: None,
                    phase: Phase::Unknown,
                    phase_since_ms: t,
                    forecast: None,
                    growing: 0,
                    leaking: 0,
                },
            });
            tr.a.t_ms = t;
            tr.a.state = g.state;
            let mem = g.mem.filter(|_| g.state != GpuState::Lost);
            tr.a.mem = mem;
            if let Some(m) = mem {
                tr.series.observe(t, Some(m.used), g.mem_peak, &cfg.phase);
            }
            tr.a.peak = tr.series.peak.peak();
            tr.a.rate = tr.series.estimate.map(|e| e.rate);
            tr.a.phase = tr.series.phase.phase();
            tr.a.phase_since_ms = tr.series.phase.since_ms();
        }

        self.generation += 1;
        let generation = self.generation;
        let mut leak_alerts = Vec::new();
        for sp in &snap.procs {
            let tr = self.procs.entry(sp.id()).or_insert_with(|| ProcTrack {
                series: Series::new(cfg.rate_window),
                leak: LeakDetector::new(&cfg.leak),
                leak_started: false,
                steady: forecast::Steady::default(),
                seen: generation,
                a: ProcAssessment {
                    id: sp.id(),
                    first_seen_ms: t,
                    last_seen_ms: t,
                    alive: true,
                    mem: None,
                    peak: None,
                    rate: None,
                    phase: Phase::Unknown,
                    phase_since_ms: t,
                    leak: None,
                    forecast: None,
                },
            });
            tr.seen = generation;
            tr.series.observe(t, sp.mem, sp.mem_peak, &cfg.phase);
            // A process NVML has just listed may not have its CUDA context
            // yet (a few MiB, then ~500 MiB a second later): that jump is
            // start-up, not growth, so the leak detector starts once the
            // process holds more than a bare context would begin with.
            if let Some(m) = sp.mem
                && (m >= CONTEXT_STARTED || tr.leak_started)
                && {
                    tr.leak_started = true;
                    true
                }
                && tr.leak.observe(t, m as f64) == Some(LeakChange::Raised)
                && let Some(f) = tr.leak.flag()
            {
                leak_alerts.push(alerts::leak_alert(t, sp, f));
            }
            let a = &mut tr.a;
            a.alive = true;
            a.last_seen_ms = a.last_seen_ms.max(t);
            a.mem = sp.mem;
            a.peak = tr.series.peak.peak();
            a.rate = tr.series.estimate.map(|e| e.rate);
            a.phase = tr.series.phase.phase();
            a.phase_since_ms = tr.series.phase.since_ms();
            a.leak = tr.leak.flag().copied();
        }

        // Exited processes stay listed for a while, then are forgotten.
        let forget = cfg.forget_after.as_millis() as u64;
        self.procs.retain(|_, tr| {
            if tr.seen != generation {
                tr.a.alive = false;
                tr.a.forecast = None;
                tr.steady = forecast::Steady::default();
            }
            t.saturating_sub(tr.a.last_seen_ms) <= forget
        });

        // Growth per GPU from its live processes.
        let hold = cfg.forecast_sustain.as_millis() as u64;
        let interval_ms = cfg.interval.as_millis() as u64;
        let interval_s = cfg.interval.as_secs_f64();
        // Per GPU: the growth of its processes (each widened by its
        // scatter) and their largest step.
        let mut growth: BTreeMap<u32, (Vec<Rate>, f64)> = BTreeMap::new();
        for g in self.gpus.values_mut() {
            g.a.growing = 0;
            g.a.leaking = 0;
        }
        for tr in self.procs.values() {
            let Some(g) = self.gpus.get_mut(&tr.a.id.gpu).filter(|_| tr.a.alive) else {
                continue;
            };
            g.a.growing += u32::from(tr.series.phase.phase() == Phase::Growing);
            g.a.leaking += u32::from(tr.leak.flag().is_some());
            if let Some(r) = tr.growth() {
                let e = growth.entry(tr.a.id.gpu).or_default();
                e.0.push(r.widen(tr.series.estimate.map_or(0.0, |e| e.scatter_rate())));
                e.1 = e.1.max(tr.series.estimate.map_or(0.0, |e| e.max_step));
            }
        }

        for g in &snap.gpus {
            let Some(tr) = self.gpus.get_mut(&g.index) else {
                continue;
            };
            let est = tr.series.estimate;
            let gpu_growing = tr.series.phase.phase() == Phase::Growing;
            let gpu_rate = est
                .filter(|_| gpu_growing)
                .map(|e| e.rate.widen(e.scatter_rate()));
            let (procs, proc_step) = match growth.get(&g.index) {
                Some((v, step)) => (forecast::sum_growth(v.iter().copied()), Some(*step)),
                None => (None, None),
            };
            // The allocation that fails is the next one of what grows: its
            // processes' largest step, else the GPU's own.
            let step = proc_step.unwrap_or_else(|| est.map_or(0.0, |e| e.max_step));
            let candidate = match tr.a.mem {
                Some(m) if gpu_growing || tr.a.leaking > 0 => forecast::combine(gpu_rate, procs)
                    .and_then(|r| {
                        let gap = est.map_or(interval_s, |e| e.max_gap_s.max(interval_s));
                        forecast::forecast(t, tr.room(t, m, r.bps), r, step, gap)
                    }),
                _ => None,
            };
            tr.a.forecast = tr.steady.update(candidate, hold, interval_ms);
            out.extend(tr.alerts.check(t, g, tr.a.forecast.as_ref(), &cfg.levels));
        }

        // Each growing process: when, at its own growth, it uses up what
        // its GPU has free.
        for tr in self.procs.values_mut() {
            let gpu = self.gpus.get(&tr.a.id.gpu).filter(|_| tr.a.alive);
            let candidate = match (gpu, gpu.and_then(|g| g.a.mem), tr.growth()) {
                (Some(g), Some(m), Some(r)) => {
                    let est = tr.series.estimate;
                    let r = r.widen(est.map_or(0.0, |e| e.scatter_rate()));
                    let step = est.map_or(0.0, |e| e.max_step);
                    let gap = est.map_or(interval_s, |e| e.max_gap_s.max(interval_s));
                    forecast::forecast(t, g.room(t, m, r.bps), r, step, gap)
                }
                _ => None,
            };
            tr.a.forecast = tr.steady.update(candidate, hold, interval_ms);
        }

        leak_alerts.sort_by_key(|a| (a.gpu, a.pid));
        out.extend(leak_alerts);
        out.extend(alerts::xid_alerts(&snap.events));
        out.sort_by_key(|a| (a.gpu, a.kind));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProcessKey;
    use crate::model::{GpuSample, ProcSample};

    #[test]
    fn config_maps_every_field() {
        let mut c = Config::default();
        c.alerts.leak_min_rate = 8.0 * 1024.0 * 1024.0;
        c.alerts.leak_min_duration = Duration::from_secs(40);
        c.alerts.forecast_below = Duration::from_secs(90);
        c.alerts.command = vec!["notify-send".into()];
        c.alerts.bell = true;
        c.thresholds.memory.crit = 97.0;
        c.sampling.interval = Duration::from_secs(10);
        let a = AnalysisConfig::from_config(&c);
        assert_eq!(a.leak.min_rate, 8.0 * 1024.0 * 1024.0);
        assert_eq!(a.leak.min_duration, Duration::from_secs(40));
        assert_eq!(a.leak.interval, Duration::from_secs(10));
        assert_eq!(a.phase.grow_rate, 2.0 * 1024.0 * 1024.0);
        assert_eq!(a.levels.forecast_below, Duration::from_secs(90));
        assert_eq!(a.levels.memory.crit, 97.0);
        assert_eq!(a.command, ["notify-send"]);
        assert!(a.bell);
        // 8 intervals of 10 s are longer than 30 s.
        assert_eq!(a.rate_window, Duration::from_secs(80));
        assert_eq!(AnalysisConfig::default().rate_window, RATE_WINDOW);
    }

    fn snap(t_s: u64, used: u64, procs: &[(u32, u64)]) -> Snapshot {
        let total = 100u64 << 30;
        Snapshot {
            seq: t_s,
            t_ms: 1_000_000 + t_s * 1000,
            gpus: vec![GpuSample {
                index: 0,
                mem: Some(MemInfo {
                    used,
                    reserved: 0,
                    free: total - used,
                    total,
                }),
                mem_peak: Some(used),
                ..Default::default()
            }],
            procs: procs
                .iter()
                .map(|&(pid, mem)| ProcSample {
                    pid,
                    start_time: 7,
                    gpu: 0,
                    mem: Some(mem),
                    mem_peak: Some(mem),
                    ..Default::default()
                })
                .collect(),
            events: Vec::new(),
        }
    }

    #[test]
    fn exited_processes_are_kept_then_forgotten() {
        let cfg = AnalysisConfig {
            forget_after: Duration::from_secs(5),
            ..Default::default()
        };
        let mut a = Analyzer::new(&cfg);
        a.observe(&snap(0, 1 << 30, &[(10, 1 << 30)]));
        let key = ProcessKey {
            pid: 10,
            start_time: 7,
        };
        let id = |gpu| ProcId { gpu, key };
        assert!(a.process(&id(0)).is_some_and(|p| p.alive));
        assert!(a.process(&id(1)).is_none());
        a.observe(&snap(1, 0, &[]));
        assert!(a.process(&id(0)).is_some_and(|p| !p.alive));
        a.observe(&snap(7, 0, &[]));
        assert!(a.process(&id(0)).is_none());
        assert_eq!(a.gpus().count(), 1);
    }

    #[test]
    fn a_gpu_missing_from_snapshots_keeps_sane_counts() {
        let mut a = Analyzer::new(&AnalysisConfig::default());
        let mut with_gpu1 = snap(0, 1 << 30, &[(10, 1 << 30)]);
        with_gpu1.gpus[0].index = 1;
        with_gpu1.procs[0].gpu = 1;
        a.observe(&with_gpu1);
        for s in 1..50u64 {
            let used = (1u64 << 30) + s * (1 << 30);
            let mut x = snap(s, used, &[(10, used)]);
            x.procs[0].gpu = 1;
            a.observe(&x);
        }
        // GPU 1 left the snapshots: its counts still describe one process.
        let g1 = a.gpu(1).unwrap();
        assert!(g1.growing <= 1 && g1.leaking <= 1, "{g1:?}");
    }

    #[test]
    fn a_growing_gpu_gets_a_forecast_and_one_alert() {
        let mut a = Analyzer::new(&AnalysisConfig::default());
        let mut fired = Vec::new();
        for s in 0..60u64 {
            let used = (10u64 << 30) + s * (1 << 30);
            for al in a.observe(&snap(s, used, &[(10, used)])) {
                fired.push((s, al.kind));
            }
        }
        let g = a.gpu(0).unwrap();
        assert_eq!(g.phase, Phase::Growing);
        assert_eq!(g.leaking, 1);
        assert_eq!(g.growing, 1);
        let f = g.forecast.unwrap();
        // 31 GiB free at 1 GiB/s.
        assert!((f.eta_s - 31.0).abs() < 1e-6, "{f:?}");
        let kinds: Vec<_> = fired.iter().map(|x| x.1).collect();
        // The leak after 20 s; the forecast once it has held for 20 s.
        assert_eq!(
            kinds,
            [AlertKind::Leak, AlertKind::ForecastFull],
            "{fired:?}"
        );
        let p = a
            .process(&ProcId {
                gpu: 0,
                key: ProcessKey {
                    pid: 10,
                    start_time: 7,
                },
            })
            .unwrap();
        assert!(p.leak.is_some());
        assert!(p.forecast.is_some());
        assert_eq!(
            p.peak.map(|k| k.bytes),
            Some((10u64 << 30) + 59 * (1 << 30))
        );
    }
}
