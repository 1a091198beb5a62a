//! The analysis of a snapshot stream, one snapshot at a time: each GPU's
//! series, peak, phase and forecast ([`crate::analysis::envelope`]), each
//! process's series, leak flag and own forecast, and the alerts that
//! follow. Bounded: per series a window of at most 64 points (the
//! envelope 120) and at most 128 leak buckets, whatever the run's length.

use std::collections::{BTreeMap, HashMap};

use super::alerts::{self, Alert};
use super::demand::{demand_forecast, demand_reaching_to, latest_from_demand, steady_latest};
use super::forecast;
use super::leak::LeakChange;
use super::{AnalysisConfig, Assessment, GpuAssessment, Phase, ProcAssessment};
use crate::model::{GpuState, Millis, ProcId, Snapshot};

/// Below this a process is still creating its CUDA context.
const CONTEXT_STARTED: u64 = 64 << 20;

/// The analysis of a snapshot stream.
#[derive(Clone, Debug)]
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

    /// The GPU forecaster's last candidate and why it gave none (traces).
    #[cfg(test)]
    pub(crate) fn envelope_state(
        &self,
        index: u32,
    ) -> Option<(Option<super::Forecast>, &'static str)> {
        self.gpus
            .get(&index)
            .map(|t| (t.envelope.last, t.envelope.why))
    }

    /// The allocators' demand of GPU `index` (bytes over the driver's
    /// reading) and its forecaster's last candidate and refusal, as
    /// [`Analyzer::envelope_state`] (a diagnostic for traces).
    #[cfg(test)]
    pub(crate) fn demand_state(
        &self,
        index: u32,
    ) -> Option<(Option<f64>, Option<super::Forecast>, &'static str)> {
        self.gpus
            .get(&index)
            .map(|t| (t.demand, t.demand_envelope.last, t.demand_envelope.why))
    }

    /// When a forecast was last shown for GPU `index` (a forecast that
    /// comes back soon after is the same episode: `pipeline::notes`).
    pub fn forecast_last_shown(&self, index: u32) -> Option<Millis> {
        self.gpus.get(&index).and_then(|t| t.forecast_last_ms)
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
        self.observe_gpus(snap, t);
        let mut leak_alerts = self.observe_procs(snap, t);
        self.forget_exited(snap, t);
        self.count_processes();
        let mut out = self.forecast_gpus(snap, t);
        self.forecast_procs(t);
        leak_alerts.sort_by_key(|a| (a.gpu, a.pid));
        out.extend(leak_alerts);
        out.extend(alerts::xid_alerts(&snap.events));
        out.sort_by_key(|a| (a.gpu, a.kind));
        out
    }

    /// Each GPU's series, peak and phase.
    fn observe_gpus(&mut self, snap: &Snapshot, t: Millis) {
        let cfg = &self.cfg;
        for g in &snap.gpus {
            let tr = self
                .gpus
                .entry(g.index)
                .or_insert_with(|| GpuTrack::new(g, t, cfg));
            tr.a.t_ms = t;
            tr.a.state = g.state;
            tr.demand = None;
            let mem = g.mem.filter(|_| g.state != GpuState::Lost);
            tr.a.mem = mem;
            if let Some(m) = mem {
                // A fall to well below everything the window holds is
                // memory given back for good (a process gone: an OOM), not
                // a tooth of a sawtooth: the trend starts again from the
                // new level, as the forecast's regime does, rather than
                // reading "growing" for as long as the growth before it
                // stays in the window.
                // (Not for a reading older than the window's newest: that
                // one leaves the window as it is.)
                let shift = cfg.envelope.shift_frac * m.total as f64;
                if m.total > 0
                    && tr.series.window.last().is_some_and(|(l, _)| t > l)
                    && let Some(lo) = tr.series.window.floor_at(t, 0.0)
                    && (m.used as f64) < lo - shift
                {
                    tr.series.restart_trend();
                }
                tr.series.observe(t, Some(m.used), g.mem_peak, &cfg.phase);
            }
            tr.a.peak = tr.series.peak.peak();
            tr.a.rate = tr.series.estimate.map(|e| e.rate);
            tr.a.phase = tr.series.phase.phase();
            tr.a.phase_since_ms = tr.series.phase.since_ms();
        }
    }

    /// Each process's series, phase and leak flag; returns the leak alerts.
    fn observe_procs(&mut self, snap: &Snapshot, t: Millis) -> Vec<Alert> {
        self.generation += 1;
        let generation = self.generation;
        let cfg = &self.cfg;
        let mut out = Vec::new();
        for sp in &snap.procs {
            let total = snap
                .gpus
                .iter()
                .find(|g| g.index == sp.gpu)
                .and_then(|g| g.mem)
                .map_or(0, |m| m.total);
            let tr = self
                .procs
                .entry(sp.id())
                .or_insert_with(|| ProcTrack::new(sp, t, generation, cfg));
            tr.seen = generation;
            // Its GPU's driver figure saturated at the last sample.
            let saturated = self.gpus.get(&sp.gpu).is_some_and(|g| g.saturated);
            // A rise by more than this is a new high (driver and tensors).
            let tol = total as f64 / 1000.0;
            if let Some(m) = sp.mem {
                tr.level_shift(t, m, total, cfg);
                tr.last_mem = Some(m);
                tr.rises.observe(t, m as f64, tol);
                if cfg.allocator_demand
                    && let Some(d) = tr.demand.observe(sp, m, t)
                    && let Some(g) = self.gpus.get_mut(&sp.gpu)
                {
                    g.demand = Some(g.demand.map_or(d, |x| x.max(d)));
                }
            }
            tr.series.observe(t, sp.mem, sp.mem_peak, &cfg.phase);
            // A process NVML has just listed may not have its CUDA context
            // yet (a few MiB, then ~500 MiB a second later): that jump is
            // start-up, not growth, so the leak detector starts once the
            // process holds more than a bare context would begin with.
            let mut cleared = false;
            if let Some(m) = sp.mem
                && (m >= CONTEXT_STARTED || tr.leak_started)
            {
                tr.leak_started = true;
                cleared |= tr.leak.observe(t, m as f64) == Some(LeakChange::Cleared);
            }
            cleared |= tr.tensors.observe(sp, t, tol) == Some(LeakChange::Cleared);
            // Judged afresh at each sample but over a pause in the
            // tensors' growth (held over any sample that did not say so,
            // it took a real leak's flag away: `fifteenth/02`).
            tr.levelling = tr.fill.observe(sp, t).and_then(|(tensors, idle)| {
                Some(beyond_cache(tr.fill.level_now(total)?, tensors, idle))
            });
            // Growth faster than a fill's is loading, not a leak: by the
            // flag's own rate or by the last ten seconds'.
            let fill = cfg.envelope.max_fill * total as f64;
            let recent = tr.series.window.recent_rate(10_000).unwrap_or(0.0);
            // And a leak still grows: memory that has levelled off (a
            // warm-up, a cache that is full) is not leaking now. The
            // driver's flag first, where shown (and alerted) since its
            // raise or raised afresh now (`flag_to_show`); else, where the
            // GPU is at risk, the tensors' (a cache holding nearly the
            // whole GPU hides them from the driver), whose raise is what
            // counts: hidden by design until then, and checked afresh
            // there, `fifth/05` (an `empty_cache()` sawtooth) was never
            // flagged and two leaks beneath a KV cache 5-7 s later.
            let flag = tr
                .leak
                .flag_to_show(&tr.rises, t, tr.leak_alerted)
                .copied()
                .or_else(|| tr.tensors.flag(t).filter(|_| saturated))
                .filter(|f| total == 0 || f.rate.bps.max(recent) <= fill)
                // Nor are tensors levelling off (a cache filling up).
                .filter(|_| tr.levelling.is_none() && !tr.fill.steady_level_holds(t));
            // One alert per flag: another once both have cleared.
            if cleared && flag.is_none() {
                tr.leak_alerted = false;
            }
            if let Some(f) = &flag
                && !tr.leak_alerted
            {
                tr.leak_alerted = true;
                out.push(alerts::leak_alert(t, sp, f));
            }
            let a = &mut tr.a;
            a.alive = true;
            a.last_seen_ms = a.last_seen_ms.max(t);
            a.mem = sp.mem;
            a.peak = tr.series.peak.peak();
            a.rate = tr.series.estimate.map(|e| e.rate);
            a.phase = tr.series.phase.phase();
            a.phase_since_ms = tr.series.phase.since_ms();
            // Over a rise that may yet fall back (an evaluation pass), the
            // flag from before it stays shown (not alerted again).
            a.leak = flag.or_else(|| {
                tr.before_rise
                    .as_ref()
                    .and_then(|r| r.before.leak.flag().copied())
            });
        }
        out
    }

    /// Exited processes stay listed for a while, then are forgotten.
    fn forget_exited(&mut self, snap: &Snapshot, t: Millis) {
        let forget = self.cfg.forget_after.as_millis() as u64;
        let generation = self.generation;
        let gpus = &mut self.gpus;
        self.procs.retain(|_, tr| {
            if tr.seen != generation {
                // Gone from its GPU: its PID is not listed there at all (a
                // round without host facts lists it with start time 0).
                // Looked for once, when it stops being seen: exited
                // processes stay unseen until they are forgotten.
                let id = tr.a.id;
                let listed = || {
                    snap.procs
                        .iter()
                        .any(|p| p.gpu == id.gpu && p.pid == id.key.pid)
                };
                if tr.a.alive
                    && !listed()
                    && let Some(g) = gpus.get_mut(&id.gpu)
                {
                    let first = tr.a.first_seen_ms;
                    g.exit = Some(match g.exit {
                        Some((at, f)) if at == t => (t, f.min(first)),
                        _ => (t, first),
                    });
                }
                tr.a.alive = false;
                tr.a.forecast = None;
                tr.steady = forecast::Steady::default();
            }
            t.saturating_sub(tr.a.last_seen_ms) <= forget
        });
    }

    /// How many live processes of each GPU grow or leak.
    fn count_processes(&mut self) {
        for g in self.gpus.values_mut() {
            g.a.growing = 0;
            g.a.leaking = 0;
        }
        for tr in self.procs.values().filter(|tr| tr.a.alive) {
            if let Some(g) = self.gpus.get_mut(&tr.a.id.gpu) {
                g.a.growing += u32::from(tr.series.phase.phase() == Phase::Growing);
                g.a.leaking += u32::from(tr.a.leak.is_some());
            }
        }
    }

    /// Each GPU's forecast and at-risk state, and its alerts.
    fn forecast_gpus(&mut self, snap: &Snapshot, t: Millis) -> Vec<Alert> {
        let levelling = self.levelling_gpus(t);
        let tensors_growing = self.tensors_growing_gpus(t);
        let cfg = &self.cfg;
        let gap = cfg.interval.as_secs_f64();
        let mut out = Vec::new();
        for g in &snap.gpus {
            let Some(tr) = self.gpus.get_mut(&g.index) else {
                continue;
            };
            let gap = tr.series.estimate.map_or(gap, |e| e.max_gap_s.max(gap));
            // A process gone (an OOM): a fall now is not a spike's end.
            let gone_first = tr.exit.filter(|(at, _)| *at == t).map(|(_, first)| first);
            let gone = gone_first.is_some();
            if let Some(first) = gone_first {
                tr.envelope.process_gone(first);
                tr.demand_envelope.process_gone(first);
            }
            // At risk, or as full as `cache_full_pct` with no forecast of
            // the driver's own (its figure held flat by the caching
            // allocators while the tensors grow inside: `fifteenth/04` at
            // 95.6 % of an H100, `eighteenth/01` at 88 %), the driver's
            // view is saturated: its processes' tensors are looked at.
            let mut saturated = false;
            let (forecast, outlook) = match tr.a.mem {
                Some(m) => {
                    // Both envelopes, the driver's and the allocators',
                    // know whether a leak is flagged on the GPU.
                    let leaking = tr.a.leaking > 0;
                    tr.envelope.set_leaking(leaking);
                    tr.demand_envelope.set_leaking(leaking);
                    let o = tr
                        .envelope
                        .observe(t, m, g.mem_peak, gap, &cfg.envelope, true);
                    saturated = o.at_risk_pct.is_some()
                        || (o.forecast.is_none()
                            && m.pct_full(m.used) >= cfg.envelope.cache_full_pct);
                    // Saturated, from the allocators' figures if the
                    // processes publish them: `demand_forecast`.
                    let (demand, latest) = tr.demand.map_or((None, None), |d| {
                        let want = saturated;
                        demand_forecast(&mut tr.demand_envelope, t, m, d, gap, cfg, want)
                    });
                    if tr.demand.is_none() {
                        tr.demand_envelope.restart();
                    }
                    let latest = steady_latest(&mut tr.demand_latest, t, latest, cfg.envelope.hold);
                    let driver = o.forecast.map(|f| latest_from_demand(f, latest, t));
                    let forecast = match (demand, driver) {
                        (Some(d), Some(v)) => Some(demand_reaching_to(d, &v)),
                        (d, v) => d.or(v),
                    };
                    (forecast, o)
                }
                None => (None, Default::default()),
            };
            // The forecast shown at the last sample is carried while the
            // GPU is saturated (at risk, or as above) and gives none, from
            // now to its latest end (`Forecast::carried_forward`); not over
            // a level shift (the regime too young for a rate: an OOM's
            // process gone), nor once one of its processes has gone (one
            // too small to shift the level may have been the one that ran
            // out). While a process on it is flagged as leaking it is
            // carried over a level shift too: the leak goes on beneath its
            // allocator's new segment, which took room and gave none back,
            // while the new regime is too young for a forecast, or its
            // rate's slow end is at zero between two steps
            // (`thirtyfifth/01`: none for 26 s after an 8.4 GiB segment,
            // T−30 s among them). So too while a process's tensors there
            // still grow, flagged or not (`tensors_growing_gpus`: a leak
            // beneath a KV cache is flagged a minute or more after its
            // growth began, and its segments restart the regime before).
            let carry = !gone
                && ((saturated && outlook.rate.is_some())
                    || tr.a.leaking > 0
                    || tensors_growing.contains(&g.index));
            let held =
                tr.a.forecast
                    .filter(|_| carry)
                    .and_then(|p| p.carried_forward(t, cfg.interval));
            let mut forecast = forecast.or(held);
            if outlook.at_risk_pct.is_some()
                && !gone
                && let (Some(f), Some(b)) = (forecast.as_mut(), tr.a.forecast)
            {
                *f = f.joined_with(&b);
            }
            // Growing only by fills levelling off (below the top, all
            // together; not at risk): no "full in", where it levels instead.
            // A level said over the top ([`BELOW_FRAC`]) counts as none
            // said, so the last said below it stands for its hold: a fit
            // over a second of flat tensors can reach far
            // (`twentyfourth/01`, 50 s after its start: its tensors, flat
            // for 2 s at 39.1 GiB, were to level at 71.0 GiB for one
            // sample, between 45.8 and 51.9, on an 80 GB GPU; and "full
            // in ~1m24s" was shown for that second). A leak
            // beneath a fill climbs past the top and stays there, and its
            // forecast comes back a hold later.
            let mem = tr.a.mem;
            let below = move |more: f64| {
                mem.map(|m| (m.used as f64 + more, m.total as f64))
                    .filter(|(to, total)| *to < BELOW_FRAC * total)
                    .map(|(to, _)| to)
            };
            let said = levelling
                .get(&g.index)
                .copied()
                .filter(|more| below(*more).is_some());
            let fills = tr.fills(t, said).filter(|_| outlook.at_risk_pct.is_none());
            let fills_to = fills.and_then(below);
            if fills_to.is_some() {
                forecast = None;
            }
            tr.saturated = saturated;
            tr.a.forecast = forecast;
            if forecast.is_some() {
                tr.forecast_last_ms = Some(t);
            }
            tr.a.at_risk_pct = outlook.at_risk_pct;
            // The regime's rate is the GPU's growth: the rate window would
            // still hold a fill that ended seconds ago.
            if let Some(r) = outlook.rate {
                tr.a.rate = Some(r);
                // The phase comes from the 30 s window, which may still
                // hold the growth before a level shift (an OOM's process
                // gone): "growing" at the regime's +0 B/s since is no
                // trend, so it is not known yet.
                let contrary = match tr.a.phase {
                    Phase::Growing => r.bps <= 0.0,
                    Phase::Shrinking => r.bps >= 0.0,
                    _ => false,
                };
                if contrary {
                    tr.a.phase = Phase::Unknown;
                }
            }
            // Where a growing GPU's fill levels off (its phase settled
            // above); not while a forecast (the demand's, at risk) is
            // shown, nor for memory that swings.
            tr.a.levels_at = outlook
                .levels_at
                .or(fills_to)
                .filter(|_| forecast.is_none() && tr.a.phase == Phase::Growing)
                .map(|b| b as u64);
            out.extend(tr.alerts.check(t, g, tr.a.forecast.as_ref(), &cfg.levels));
        }
        out
    }

    /// Each growing process: when, at its own growth, it uses up what its
    /// GPU has free.
    fn forecast_procs(&mut self, t: Millis) {
        let hold = self.cfg.forecast_sustain.as_millis() as u64;
        let interval_ms = self.cfg.interval.as_millis() as u64;
        let interval_s = self.cfg.interval.as_secs_f64();
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
    }
}

mod levels;
mod rise;
mod tracks;
use crate::analysis::levelling::{BELOW_FRAC, beyond_cache};
use tracks::{GpuTrack, ProcTrack};
