//! The summary of a recording, from one pass over its snapshots as they
//! stream by: per GPU the peak and mean memory and utilisation and the time
//! above each threshold, per process its peak, memory over time in buckets
//! for the SVG, and the events. Memory does not grow with the recording's
//! length: the buckets widen as it goes on, a process keeps only the
//! buckets it was seen in, events are counted and the first of each kind
//! kept.

use std::collections::HashMap;

use anyhow::Result;

use crate::config::{Level, Thresholds};
use crate::model::{Event, EventKind, GpuSample, Millis, Snapshot};
use crate::record::format::Header;
use crate::record::{Reader, RecordError, Recording};

/// Processes listed (and drawn) by peak memory.
const TOP: usize = 8;
/// Buckets per series in the SVG at most (each keeps its minimum and
/// maximum, so spikes survive).
const BUCKETS: u64 = 1000;
/// Events kept of each kind (the rest are counted).
const KEEP_EVENTS: usize = 1000;
/// Processes followed at once: beyond this, those gone with the lowest
/// peaks are dropped (they cannot reach the top).
const MAX_PROCS: usize = 4096;

/// What a summary is made of: a recording's header and snapshots in order.
pub(super) trait Source {
    fn header(&self) -> &Header;
}

impl Source for Recording {
    fn header(&self) -> &Header {
        Recording::header(self)
    }
}

impl Source for Reader {
    fn header(&self) -> &Header {
        Reader::header(self)
    }
}

/// Min and max of a value in time buckets from the start of the recording:
/// at most [`BUCKETS`], each twice as wide whenever the recording outgrows
/// them; only the buckets that hold a value are kept.
#[derive(Clone, Debug)]
pub(super) struct Buckets {
    t0: Millis,
    width: Millis,
    /// (bucket, min, max), by bucket.
    cells: Vec<(u64, f64, f64)>,
}

impl Buckets {
    fn new(t0: Millis, width: Millis) -> Buckets {
        Buckets {
            t0,
            width: width.max(1),
            cells: Vec::new(),
        }
    }

    fn add(&mut self, t: Millis, v: f64) {
        let mut i = t.saturating_sub(self.t0) / self.width;
        while i >= BUCKETS {
            self.widen();
            i = t.saturating_sub(self.t0) / self.width;
        }
        self.put(i, v, v);
    }

    fn put(&mut self, i: u64, lo: f64, hi: f64) {
        let at = match self.cells.last() {
            Some(&(last, _, _)) if last < i => self.cells.len(),
            _ => self.cells.partition_point(|c| c.0 < i),
        };
        match self.cells.get_mut(at) {
            Some(c) if c.0 == i => {
                c.1 = c.1.min(lo);
                c.2 = c.2.max(hi);
            }
            _ => self.cells.insert(at, (i, lo, hi)),
        }
    }

    /// Buckets twice as wide: neighbours merge.
    fn widen(&mut self) {
        self.width = self.width.saturating_mul(2);
        let old = std::mem::take(&mut self.cells);
        for (i, lo, hi) in old {
            self.put(i / 2, lo, hi);
        }
    }

    /// Adds another series' buckets.
    fn merge(&mut self, other: &Buckets) {
        let mut o = other.clone();
        while o.width < self.width {
            o.widen();
        }
        while self.width < o.width {
            self.widen();
        }
        for &(i, lo, hi) in &o.cells {
            self.put(i, lo, hi);
        }
    }

    /// (seconds since start, value) pairs: each bucket's min then max.
    pub(super) fn points(&self, scale: f64) -> Vec<(f64, f64)> {
        let mut out = Vec::with_capacity(2 * self.cells.len());
        for &(i, lo, hi) in &self.cells {
            let t = (i as f64 + 0.5) * self.width as f64 / 1000.0;
            out.push((t, lo * scale));
            if hi != lo {
                out.push((t, hi * scale));
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
                self.peak_pct =
                    peak.saturating_add(m.reserved) as f64 * 100.0 / m.total.max(1) as f64;
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
    /// The snapshot it was last seen in.
    seen: usize,
}

/// Everything the report says, from one pass over the snapshots.
#[derive(Debug)]
pub(super) struct Summary {
    pub(super) first: Millis,
    pub(super) last: Millis,
    pub(super) snapshots: usize,
    pub(super) gpus: Vec<GpuStats>,
    pub(super) procs: Vec<ProcStats>,
    /// The first [`KEEP_EVENTS`] events of each kind, in order.
    pub(super) events: Vec<Event>,
    /// Events of each kind, in the order the kinds first came.
    pub(super) event_counts: Vec<(EventKind, u64)>,
    /// Bucket width to start with: the interval.
    width: Millis,
}

impl Summary {
    fn new(first: Millis, interval: Millis) -> Summary {
        Summary {
            first,
            last: first,
            snapshots: 0,
            gpus: Vec::new(),
            procs: Vec::new(),
            events: Vec::new(),
            event_counts: Vec::new(),
            width: interval.max(1),
        }
    }

    /// Events in all.
    pub(super) fn events_total(&self) -> u64 {
        self.event_counts.iter().map(|(_, n)| n).sum()
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
        self.last = s.t_ms;
        for e in &s.events {
            let n = match self.event_counts.iter_mut().find(|(k, _)| *k == e.kind) {
                Some((_, n)) => n,
                None => {
                    self.event_counts.push((e.kind, 0));
                    let last = self.event_counts.len() - 1;
                    &mut self.event_counts[last].1
                }
            };
            *n += 1;
            if *n <= KEEP_EVENTS as u64 {
                self.events.push(e.clone());
            }
        }
        for g in &s.gpus {
            self.gpu(g.index, s.t_ms).add(g, s.t_ms, dt, th);
        }
        let (first, width, seen) = (self.first, self.width, self.snapshots);
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
                    series: Buckets::new(first, width),
                    seen,
                });
            if mem > e.peak {
                e.peak = mem;
                e.peak_at = s.t_ms;
            }
            e.seen = seen;
            let user = p.user.as_deref().unwrap_or("?");
            if e.user != user {
                e.user = user.to_owned();
            }
            if e.label != p.label() {
                e.label = p.label().to_owned();
            }
            e.series.add(s.t_ms, p.mem.unwrap_or(mem) as f64);
        }
        if procs.len() > MAX_PROCS {
            prune(procs, seen);
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
                    Buckets::new(self.first, self.width),
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

/// Drops the processes gone with the lowest peaks, keeping half of
/// [`MAX_PROCS`] besides those of the snapshot `seen`: a dropped one can
/// no longer reach the top.
fn prune(procs: &mut HashMap<(u32, u32, u64), ProcStats>, seen: usize) {
    let mut gone: Vec<u64> = procs
        .values()
        .filter(|p| p.seen != seen)
        .map(|p| p.peak)
        .collect();
    let keep = MAX_PROCS / 2;
    if gone.len() <= keep {
        return;
    }
    gone.sort_unstable_by(|a, b| b.cmp(a));
    let floor = gone[keep];
    procs.retain(|_, p| p.seen == seen || p.peak > floor);
}

/// What a summary is made of: the snapshots of a recording, in order, and
/// its interval.
pub(super) trait IntoSnapshots {
    fn interval_ms(&self) -> u64;
    fn into_snapshots(self) -> impl Iterator<Item = Result<Snapshot, RecordError>>;
}

impl IntoSnapshots for &Recording {
    fn interval_ms(&self) -> u64 {
        self.header().interval_ms
    }

    fn into_snapshots(self) -> impl Iterator<Item = Result<Snapshot, RecordError>> {
        self.iter()
    }
}

impl IntoSnapshots for &mut Reader {
    fn interval_ms(&self) -> u64 {
        self.header().interval_ms
    }

    fn into_snapshots(self) -> impl Iterator<Item = Result<Snapshot, RecordError>> {
        self
    }
}

/// One pass over the recording, as it streams by.
pub(super) fn collect(src: impl IntoSnapshots, th: &Thresholds) -> Result<Summary> {
    let interval = src.interval_ms().clamp(1, 3_600_000);
    let mut sum: Option<Summary> = None;
    let mut procs = HashMap::new();
    let mut prev: Option<Snapshot> = None;
    for s in src.into_snapshots() {
        let s = s?;
        let sum = sum.get_or_insert_with(|| Summary::new(s.t_ms, interval));
        if let Some(p) = prev.take() {
            // A gap (the recorder was stopped) counts as two intervals at
            // most.
            let dt = s.t_ms.saturating_sub(p.t_ms).min(2 * interval);
            sum.add(&p, dt, th, &mut procs);
        }
        prev = Some(s);
    }
    let mut sum = sum.unwrap_or_else(|| Summary::new(0, interval));
    if let Some(p) = prev {
        sum.add(&p, interval, th, &mut procs);
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
        let mut sum = Summary::new(T0, 1000);
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
    fn buckets_keep_spikes_and_widen_as_the_recording_goes_on() {
        let mut b = Buckets::new(0, 1000);
        for t in (0..10_000_000u64).step_by(1000) {
            b.add(t, if t == 4_321_000 { 100.0 } else { 1.0 });
        }
        let pts = b.points(1.0);
        assert!(pts.iter().any(|&(_, v)| v == 100.0));
        assert!(b.cells.len() as u64 <= BUCKETS && b.cells.len() >= 500);
        assert!(pts.len() <= 2 * BUCKETS as usize);
        // The last point is near the end (seconds).
        let last = pts.last().unwrap().0;
        assert!((9_000.0..=10_500.0).contains(&last), "{last}");
        // A series seen only briefly keeps few buckets, and merges into a
        // wider one.
        let mut short = Buckets::new(0, 1000);
        short.add(5_000_000, 7.0);
        assert_eq!(short.cells.len(), 1);
        b.merge(&short);
        assert!(b.points(1.0).iter().any(|&(_, v)| v == 7.0));
    }

    #[test]
    fn events_are_counted_and_the_first_of_each_kind_kept() {
        let th = Thresholds::default();
        let mut sum = Summary::new(T0, 1000);
        let mut procs = HashMap::new();
        for i in 0..(KEEP_EVENTS as u64 + 50) {
            let mut s = snap(i, 10, 40, 5);
            s.events.push(Event {
                t_ms: s.t_ms,
                kind: EventKind::ProcessExited,
                gpu: Some(0),
                pid: Some(7),
                message: "x".into(),
                after_oom: false,
            });
            sum.add(&s, 1000, &th, &mut procs);
        }
        assert_eq!(sum.events.len(), KEEP_EVENTS);
        assert_eq!(sum.events_total(), KEEP_EVENTS as u64 + 50);
    }
}
