//! The summary of a recording, from one pass over its snapshots: per GPU
//! the peak and mean memory and utilisation and the time above each
//! threshold, per process its peak, and memory over time in buckets for the
//! SVG.

use std::collections::HashMap;

use anyhow::Result;

use crate::config::{Level, Thresholds};
use crate::model::{GpuSample, Millis, Snapshot};
use crate::record::Recording;

/// Processes listed (and drawn) by peak memory.
const TOP: usize = 8;
/// Points per series in the SVG (each bucket keeps its minimum and maximum,
/// so spikes survive).
const BUCKETS: usize = 1000;

/// Min and max of a value in equal time buckets over the recording.
#[derive(Clone, Debug)]
pub(super) struct Buckets {
    t0: Millis,
    span: Millis,
    min: Vec<f64>,
    max: Vec<f64>,
}

impl Buckets {
    fn new(t0: Millis, t1: Millis, n: usize) -> Buckets {
        Buckets {
            t0,
            span: (t1 - t0).max(1),
            min: vec![f64::NAN; n],
            max: vec![f64::NAN; n],
        }
    }

    fn add(&mut self, t: Millis, v: f64) {
        let n = self.min.len();
        let i = ((t.saturating_sub(self.t0) as u128 * n as u128 / self.span as u128) as usize)
            .min(n - 1);
        if self.min[i].is_nan() || v < self.min[i] {
            self.min[i] = v;
        }
        if self.max[i].is_nan() || v > self.max[i] {
            self.max[i] = v;
        }
    }

    /// Adds another series' buckets (same times).
    fn merge(&mut self, other: &Buckets) {
        for i in 0..self.min.len().min(other.min.len()) {
            if !other.min[i].is_nan() && (self.min[i].is_nan() || other.min[i] < self.min[i]) {
                self.min[i] = other.min[i];
            }
            if !other.max[i].is_nan() && (self.max[i].is_nan() || other.max[i] > self.max[i]) {
                self.max[i] = other.max[i];
            }
        }
    }

    /// (seconds since start, value) pairs: each bucket's min then max.
    pub(super) fn points(&self, scale: f64) -> Vec<(f64, f64)> {
        let n = self.min.len();
        let mut out = Vec::with_capacity(2 * n);
        for i in 0..n {
            if self.min[i].is_nan() {
                continue;
            }
            let t = (i as f64 + 0.5) * self.span as f64 / n as f64 / 1000.0;
            out.push((t, self.min[i] * scale));
            if self.max[i] != self.min[i] {
                out.push((t, self.max[i] * scale));
            }
        }
        out
    }
}

/// Time a figure spent at or above a threshold's warn and crit levels, ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Above {
    pub(super) warn: u64,
    pub(super) crit: u64,
}

impl Above {
    fn add(&mut self, level: &Level, v: Option<f64>, dt: u64) {
        let Some(v) = v else { return };
        if v >= level.warn {
            self.warn += dt;
        }
        if v >= level.crit {
            self.crit += dt;
        }
    }
}

#[derive(Clone, Debug)]
pub(super) struct GpuStats {
    pub(super) index: u32,
    pub(super) total: u64,
    pub(super) peak: u64,
    pub(super) peak_pct: f64,
    pub(super) peak_at: Millis,
    pub(super) used_sum: f64,
    pub(super) used_n: u64,
    pub(super) util_peak: Option<u32>,
    pub(super) util_sum: f64,
    pub(super) util_n: u64,
    pub(super) mem: Above,
    pub(super) temp: Above,
    pub(super) power: Above,
    pub(super) util: Above,
    pub(super) series: Buckets,
}

impl GpuStats {
    fn new(index: u32, t: Millis, series: Buckets) -> GpuStats {
        GpuStats {
            index,
            total: 0,
            peak: 0,
            peak_pct: 0.0,
            peak_at: t,
            used_sum: 0.0,
            used_n: 0,
            util_peak: None,
            util_sum: 0.0,
            util_n: 0,
            mem: Above::default(),
            temp: Above::default(),
            power: Above::default(),
            util: Above::default(),
            series,
        }
    }

    /// Adds the GPU's sample `g` of the snapshot at `t`, which lasted `dt`
    /// ms.
    fn add(&mut self, g: &GpuSample, t: Millis, dt: u64, th: &Thresholds) {
        if let Some(m) = g.mem {
            // The fast lane's peak counts: it is what an allocation hit.
            let peak = g.mem_peak.unwrap_or(m.used).max(m.used);
            if peak > self.peak || self.used_n == 0 {
                self.peak = peak;
                self.peak_at = t;
                self.peak_pct = (peak + m.reserved) as f64 * 100.0 / m.total.max(1) as f64;
            }
            self.total = m.total;
            self.used_sum += m.used as f64;
            self.used_n += 1;
            self.series.add(t, m.used as f64);
        }
        if let Some(u) = g.util_gpu {
            self.util_peak = Some(self.util_peak.map_or(u, |p| p.max(u)));
            self.util_sum += u as f64;
            self.util_n += 1;
        }
        self.mem.add(&th.memory, g.mem.map(|m| m.used_pct()), dt);
        self.temp.add(&th.temperature, g.temp_c.map(f64::from), dt);
        let power_pct = match (g.power_mw, g.power_limit_mw) {
            (Some(p), Some(l)) if l > 0 => Some(p as f64 * 100.0 / l as f64),
            _ => None,
        };
        self.power.add(&th.power, power_pct, dt);
        self.util
            .add(&th.utilization, g.util_gpu.map(f64::from), dt);
    }
}

#[derive(Clone, Debug)]
pub(super) struct ProcStats {
    pub(super) gpu: u32,
    pub(super) pid: u32,
    pub(super) peak: u64,
    pub(super) peak_at: Millis,
    pub(super) user: String,
    pub(super) label: String,
    /// Processes (PIDs) merged into this one: the same command restarted.
    pub(super) runs: usize,
    pub(super) series: Buckets,
}

/// Everything the report says, from one pass over the snapshots.
#[derive(Debug)]
pub(super) struct Summary {
    pub(super) first: Millis,
    pub(super) last: Millis,
    pub(super) snapshots: usize,
    pub(super) gpus: Vec<GpuStats>,
    pub(super) procs: Vec<ProcStats>,
    pub(super) events: Vec<crate::model::Event>,
}

impl Summary {
    fn new(first: Millis, last: Millis) -> Summary {
        Summary {
            first,
            last,
            snapshots: 0,
            gpus: Vec::new(),
            procs: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Adds snapshot `s`, which lasted `dt` ms (until the next one).
    fn add(
        &mut self,
        s: &Snapshot,
        dt: u64,
        th: &Thresholds,
        procs: &mut HashMap<(u32, u32, u64), ProcStats>,
    ) {
        self.snapshots += 1;
        self.events.extend(s.events.iter().cloned());
        for g in &s.gpus {
            self.gpu(g.index, s.t_ms).add(g, s.t_ms, dt, th);
        }
        for p in &s.procs {
            let Some(mem) = p.mem_peak.or(p.mem) else {
                continue;
            };
            let e = procs
                .entry((p.gpu, p.pid, p.start_time))
                .or_insert_with(|| ProcStats {
                    gpu: p.gpu,
                    pid: p.pid,
                    peak: 0,
                    peak_at: s.t_ms,
                    user: String::new(),
                    label: String::new(),
                    runs: 1,
                    series: Buckets::new(self.first, self.last, BUCKETS),
                });
            if mem > e.peak {
                e.peak = mem;
                e.peak_at = s.t_ms;
            }
            e.user = p.user.as_deref().unwrap_or("?").to_owned();
            e.label = p.label().to_owned();
            e.series.add(s.t_ms, p.mem.unwrap_or(mem) as f64);
        }
    }

    /// The figures of GPU `index`, new (first seen at `t`) if need be.
    fn gpu(&mut self, index: u32, t: Millis) -> &mut GpuStats {
        let i = match self.gpus.iter().position(|x| x.index == index) {
            Some(i) => i,
            None => {
                self.gpus.push(GpuStats::new(
                    index,
                    t,
                    Buckets::new(self.first, self.last, BUCKETS),
                ));
                self.gpus.len() - 1
            }
        };
        &mut self.gpus[i]
    }

    /// Ranks the processes. Processes with the same command, user and GPU
    /// (a job restarted after each OOM) count as one, shown with the PID of
    /// its highest peak.
    fn finish(&mut self, procs: HashMap<(u32, u32, u64), ProcStats>) {
        let mut v: Vec<ProcStats> = procs.into_values().collect();
        v.sort_by(|a, b| {
            b.peak
                .cmp(&a.peak)
                .then(a.peak_at.cmp(&b.peak_at))
                .then(a.pid.cmp(&b.pid))
        });
        let mut jobs: Vec<ProcStats> = Vec::new();
        for p in v {
            match jobs
                .iter_mut()
                .find(|j| j.gpu == p.gpu && j.user == p.user && j.label == p.label)
            {
                Some(j) => {
                    j.runs += 1;
                    j.series.merge(&p.series);
                }
                None => jobs.push(p),
            }
        }
        jobs.truncate(TOP);
        self.procs = jobs;
        self.gpus.sort_by_key(|g| g.index);
    }
}

/// One pass over the recording.
pub(super) fn collect(rec: &Recording, th: &Thresholds) -> Result<Summary> {
    let times = rec.times();
    let first = times.first().copied().unwrap_or(0);
    let last = times.last().copied().unwrap_or(first);
    let interval = rec.header().interval_ms.max(1);
    let mut sum = Summary::new(first, last);
    let mut procs = HashMap::new();
    for (i, s) in rec.iter().enumerate() {
        let s = s?;
        // A gap (the recorder was stopped) counts as two intervals at most.
        let dt = times
            .get(i + 1)
            .map_or(interval, |&n| n.saturating_sub(s.t_ms).min(2 * interval));
        sum.add(&s, dt, th, &mut procs);
    }
    sum.finish(procs);
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::units::GIB;
    use crate::model::{MemInfo, ProcSample};

    const T0: Millis = 1_764_000_000_000;

    fn snap(i: u64, used_gib: u64, temp: u32, proc_gib: u64) -> Snapshot {
        Snapshot {
            seq: i,
            t_ms: T0 + i * 1000,
            gpus: vec![GpuSample {
                index: 0,
                mem: Some(MemInfo {
                    used: used_gib * GIB,
                    reserved: 0,
                    free: (100 - used_gib) * GIB,
                    total: 100 * GIB,
                }),
                temp_c: Some(temp),
                util_gpu: Some(50),
                power_mw: Some(500_000),
                power_limit_mw: Some(1_000_000),
                ..Default::default()
            }],
            procs: vec![ProcSample {
                pid: 7,
                gpu: 0,
                mem: Some(proc_gib * GIB),
                command: Some("python train.py".into()),
                ..Default::default()
            }],
            events: Vec::new(),
        }
    }

    #[test]
    fn peaks_means_and_time_above_thresholds_come_from_the_samples() {
        let th = Thresholds::default();
        let snaps = [
            snap(0, 10, 40, 5),
            snap(1, 85, 85, 60),
            snap(2, 96, 91, 70),
            snap(3, 50, 40, 20),
        ];
        let mut sum = Summary::new(T0, T0 + 3000);
        let mut procs = HashMap::new();
        for s in &snaps {
            sum.add(s, 1000, &th, &mut procs);
        }
        sum.finish(procs);
        let g = &sum.gpus[0];
        assert_eq!(g.peak, 96 * GIB);
        assert_eq!(g.peak_at, T0 + 2000);
        assert_eq!(
            g.used_sum / g.used_n as f64,
            (10 + 85 + 96 + 50) as f64 / 4.0 * GIB as f64
        );
        // Memory ≥ 80 %: two samples; ≥ 95 %: one. Temperature ≥ 80: two, ≥ 90: one.
        assert_eq!(
            g.mem,
            Above {
                warn: 2000,
                crit: 1000
            }
        );
        assert_eq!(
            g.temp,
            Above {
                warn: 2000,
                crit: 1000
            }
        );
        // Power at 50 % of the limit, utilisation 50 %: never above.
        assert_eq!(g.power, Above::default());
        assert_eq!(g.util, Above::default());
        assert_eq!(sum.procs[0].peak, 70 * GIB);
        assert_eq!(sum.procs[0].peak_at, T0 + 2000);
    }

    #[test]
    fn buckets_keep_spikes() {
        let mut b = Buckets::new(0, 10_000, 10);
        for t in 0..10_000u64 {
            b.add(t, if t == 4_321 { 100.0 } else { 1.0 });
        }
        let pts = b.points(1.0);
        assert!(pts.iter().any(|&(_, v)| v == 100.0));
        assert!(pts.len() <= 20);
    }
}
