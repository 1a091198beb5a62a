//! Bounded history: one slot per snapshot, oldest evicted first. Per GPU
//! the whole sample is kept; per process a compact point per slot plus its
//! static facts once. Every process gets history from the moment it is
//! first seen; an exited process stays (marked exited) for `exited_keep`.
//! Missing samples (the sampler stalled, the machine slept) become gap
//! slots, so charts show a break instead of a false line. Pure: no I/O.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

pub use crate::model::ProcId;
use crate::model::{GpuSample, Millis, ProcKind, ProcSample, Snapshot};

/// How a time bucket sums up its samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agg {
    Max,
    Mean,
}

/// What changes per slot for a process.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcPoint {
    pub mem: Option<u64>,
    pub mem_peak: Option<u64>,
    pub sm_util: Option<u32>,
    pub mem_util: Option<u32>,
    pub enc_util: Option<u32>,
    pub dec_util: Option<u32>,
    pub cpu_pct: Option<f32>,
    pub rss: Option<u64>,
    /// PyTorch allocator: bytes held by tensors, and reserved from the driver.
    pub torch_allocated: Option<u64>,
    pub torch_reserved: Option<u64>,
}

/// What does not change for a process.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcFacts {
    pub kind: ProcKind,
    pub user: Option<Arc<str>>,
    pub name: Option<Arc<str>>,
    pub command: Option<Arc<str>>,
    pub container: Option<Arc<str>>,
    pub ns_pid: Option<u32>,
    /// The container's name, and its Kubernetes pod and namespace, where a
    /// local source says them (they may arrive some rounds after the
    /// process: the lookup is off the sampler's path).
    pub container_name: Option<Arc<str>>,
    pub pod: Option<Arc<str>>,
    pub namespace: Option<Arc<str>>,
}

impl ProcFacts {
    /// The container as the table shows it: its name, else its id.
    pub fn container_label(&self) -> Option<&str> {
        self.container_name.as_deref().or(self.container.as_deref())
    }

    /// `namespace/pod`, or the pod alone, where known.
    pub fn pod_label(&self) -> Option<String> {
        let pod = self.pod.as_deref()?;
        Some(match self.namespace.as_deref() {
            Some(ns) => format!("{ns}/{pod}"),
            None => pod.to_string(),
        })
    }

    /// The facts of a process first listed as `p`.
    fn of(p: &ProcSample) -> ProcFacts {
        ProcFacts {
            kind: p.kind,
            user: p.user.clone(),
            name: p.name.clone(),
            command: p.command.clone(),
            container: p.container.clone(),
            ns_pid: p.ns_pid,
            container_name: p.container_name.clone(),
            pod: p.pod.clone(),
            namespace: p.namespace.clone(),
        }
    }

    /// Takes from `p` what is still missing: host facts can arrive a round
    /// late, container and pod names
    /// rounds later (their lookup is off the sampler's path). The kind is
    /// always the latest.
    fn fill_missing(&mut self, p: &ProcSample) {
        if self.command.is_none() && p.command.is_some() {
            self.user = p.user.clone();
            self.name = p.name.clone();
            self.command = p.command.clone();
            self.container = p.container.clone();
            self.ns_pid = p.ns_pid;
        }
        if self.container_name.is_none() && p.container_name.is_some() {
            self.container_name = p.container_name.clone();
        }
        if self.pod.is_none() && p.pod.is_some() {
            self.pod = p.pod.clone();
            self.namespace = p.namespace.clone();
        }
        self.kind = p.kind;
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

/// One process's series: slot `first_slot + i` is `points[i]`.
#[derive(Clone, Debug)]
pub struct ProcSeries {
    pub id: ProcId,
    pub facts: ProcFacts,
    first_slot: u64,
    points: VecDeque<Option<ProcPoint>>,
    /// Last slot the process was listed in.
    pub last_slot: u64,
    /// When it was first and last seen.
    pub first_seen_ms: Millis,
    pub last_seen_ms: Millis,
    /// Highest memory ever seen (fast lane included), and when.
    pub peak: Option<(u64, Millis)>,
    /// The newest PyTorch allocator figures, if the process publishes them.
    pub torch: Option<Arc<crate::model::alloc::AllocStats>>,
}

impl ProcSeries {
    /// The point at global slot `slot`, if the process was listed then.
    pub fn at(&self, slot: u64) -> Option<&ProcPoint> {
        let i = slot.checked_sub(self.first_slot)?;
        self.points.get(i as usize)?.as_ref()
    }

    /// (slot, point) pairs from `from` (inclusive) to the newest.
    pub fn iter_from(&self, from: u64) -> impl Iterator<Item = (u64, Option<&ProcPoint>)> {
        let skip = from.saturating_sub(self.first_slot) as usize;
        let first = self.first_slot;
        self.points
            .iter()
            .enumerate()
            .skip(skip)
            .map(move |(i, p)| (first + i as u64, p.as_ref()))
    }

    pub fn first_slot(&self) -> u64 {
        self.first_slot
    }
}

/// Everything kept, oldest first.
#[derive(Debug)]
pub struct History {
    cap: usize,
    interval_ms: u64,
    exited_keep_ms: u64,
    /// Global number of the oldest slot.
    first_slot: u64,
    /// Time of each slot; a gap slot carries the time it should have had.
    times: VecDeque<Millis>,
    /// Whether the slot is a gap (no snapshot).
    gaps: VecDeque<bool>,
    /// Per GPU (by index), per slot.
    gpus: Vec<VecDeque<Option<GpuSample>>>,
    procs: HashMap<ProcId, ProcSeries>,
    /// Highest memory per GPU since start, and when.
    gpu_peaks: Vec<Option<(u64, Millis)>>,
}

impl History {
    /// Keeps `cap` slots (at least 2) at `interval_ms` apiece.
    pub fn new(cap: usize, interval_ms: u64, exited_keep_ms: u64) -> History {
        History {
            cap: cap.max(2),
            interval_ms: interval_ms.max(1),
            exited_keep_ms,
            first_slot: 0,
            times: VecDeque::new(),
            gaps: VecDeque::new(),
            gpus: Vec::new(),
            procs: HashMap::new(),
            gpu_peaks: Vec::new(),
        }
    }

    /// An empty History with the same settings.
    pub fn cleared(&self) -> History {
        History::new(self.cap, self.interval_ms, self.exited_keep_ms)
    }

    pub fn capacity(&self) -> usize {
        self.cap
    }

    pub fn interval_ms(&self) -> u64 {
        self.interval_ms
    }

    pub fn len(&self) -> usize {
        self.times.len()
    }

    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// Global number of the oldest slot kept.
    pub fn first_slot(&self) -> u64 {
        self.first_slot
    }

    /// Global number of the newest slot, if any.
    pub fn last_slot(&self) -> Option<u64> {
        (!self.times.is_empty()).then(|| self.first_slot + self.times.len() as u64 - 1)
    }

    pub fn time_at(&self, slot: u64) -> Option<Millis> {
        let i = slot.checked_sub(self.first_slot)?;
        self.times.get(i as usize).copied()
    }

    pub fn is_gap(&self, slot: u64) -> bool {
        slot.checked_sub(self.first_slot)
            .and_then(|i| self.gaps.get(i as usize).copied())
            .unwrap_or(true)
    }

    /// The newest slot at or before `t_ms`.
    pub fn slot_at_time(&self, t_ms: Millis) -> Option<u64> {
        let i = self.times.partition_point(|&t| t <= t_ms);
        (i > 0).then(|| self.first_slot + i as u64 - 1)
    }

    pub fn gpu_count(&self) -> usize {
        self.gpus.len()
    }

    /// GPU `index`'s sample at `slot` (None in a gap or before it existed).
    pub fn gpu_at(&self, index: usize, slot: u64) -> Option<&GpuSample> {
        let i = slot.checked_sub(self.first_slot)?;
        self.gpus.get(index)?.get(i as usize)?.as_ref()
    }

    /// GPU `index`'s samples from the oldest slot kept to the newest.
    pub fn gpu_series(&self, index: usize) -> impl Iterator<Item = Option<&GpuSample>> {
        self.gpus
            .get(index)
            .into_iter()
            .flat_map(|s| s.iter().map(Option::as_ref))
    }

    /// Highest memory ever seen on GPU `index` (fast lane included), and when.
    pub fn gpu_peak(&self, index: usize) -> Option<(u64, Millis)> {
        self.gpu_peaks.get(index).copied().flatten()
    }

    /// The highest memory on GPU `index` as of `slot`: since start at the
    /// newest slot, else over the slots kept up to `slot` (nothing read
    /// after `slot` counts: a paused or replayed screen shows no peak from
    /// its future).
    pub fn gpu_peak_at(&self, index: usize, slot: u64) -> Option<(u64, Millis)> {
        if self.last_slot().is_none_or(|last| slot >= last) {
            return self.gpu_peak(index);
        }
        let series = self.gpus.get(index)?;
        let upto = slot.checked_sub(self.first_slot)? as usize;
        series
            .iter()
            .zip(&self.times)
            .take(upto + 1)
            .filter_map(|(g, &t)| {
                let g = g.as_ref()?;
                let m = g.mem?;
                Some((g.mem_peak.unwrap_or(m.used).max(m.used), t))
            })
            .fold(None, |best: Option<(u64, Millis)>, (v, t)| match best {
                Some((b, _)) if b >= v => best,
                _ => Some((v, t)),
            })
    }

    /// A process's highest memory as of `slot` (see [`History::gpu_peak_at`]).
    pub fn proc_peak_at(&self, s: &ProcSeries, slot: u64) -> Option<(u64, Millis)> {
        if slot >= s.last_slot {
            return s.peak;
        }
        let from = s.first_slot.max(self.first_slot);
        s.iter_from(from)
            .take_while(|(sl, _)| *sl <= slot)
            .filter_map(|(sl, p)| {
                let p = p?;
                let m = p.mem_peak.or(p.mem)?.max(p.mem.unwrap_or(0));
                Some((m, self.time_at(sl)?))
            })
            .fold(None, |best: Option<(u64, Millis)>, (v, t)| match best {
                Some((b, _)) if b >= v => best,
                _ => Some((v, t)),
            })
    }

    pub fn process(&self, id: &ProcId) -> Option<&ProcSeries> {
        self.procs.get(id)
    }

    pub fn processes(&self) -> impl Iterator<Item = &ProcSeries> {
        self.procs.values()
    }

    /// Processes listed at `slot`, plus those that exited at most
    /// `exited_keep` before it (returned with `exited = true`).
    pub fn processes_at(&self, slot: u64) -> Vec<(&ProcSeries, bool)> {
        self.listed_at(slot).collect()
    }

    /// [`History::processes_at`] without collecting them (to count them
    /// each frame without allocating).
    pub fn listed_at(&self, slot: u64) -> impl Iterator<Item = (&ProcSeries, bool)> {
        let t = self.time_at(slot).unwrap_or(0);
        self.procs.values().filter_map(move |s| {
            if s.first_slot > slot {
                return None;
            }
            if s.at(slot).is_some() {
                return Some((s, false));
            }
            let exited =
                s.last_slot < slot && t.saturating_sub(s.last_seen_ms) <= self.exited_keep_ms;
            exited.then_some((s, true))
        })
    }

    /// Adds a snapshot as the newest slot (after gap slots if samples were
    /// missed), evicting the oldest beyond capacity.
    pub fn push(&mut self, snap: &Snapshot) {
        if let Some(&last) = self.times.back() {
            if snap.t_ms <= last {
                // Time went backwards (clock change): start a fresh slot anyway.
            } else {
                let missed = (snap.t_ms - last) / self.interval_ms;
                // More than 2.5 intervals apart: the missing ones are gaps.
                if (snap.t_ms - last) * 2 > self.interval_ms * 5 {
                    let n = (missed.saturating_sub(1) as usize).min(self.cap);
                    for k in 1..=n {
                        self.push_slot(last + k as u64 * self.interval_ms, None);
                    }
                }
            }
        }
        self.push_slot(snap.t_ms, Some(snap));
    }

    fn push_slot(&mut self, t_ms: Millis, snap: Option<&Snapshot>) {
        let slot = self.first_slot + self.times.len() as u64;
        self.times.push_back(t_ms);
        self.gaps.push_back(snap.is_none());
        if let Some(s) = snap {
            let n = s
                .gpus
                .iter()
                .map(|g| g.index as usize + 1)
                .max()
                .unwrap_or(0);
            while self.gpus.len() < n {
                // A GPU that appears late has no earlier slots.
                let mut v = VecDeque::with_capacity(self.cap);
                v.resize(self.times.len() - 1, None);
                self.gpus.push(v);
                self.gpu_peaks.push(None);
            }
        }
        for (i, series) in self.gpus.iter_mut().enumerate() {
            let g = snap.and_then(|s| s.gpus.iter().find(|g| g.index as usize == i));
            if let Some(g) = g
                && let Some(m) = g.mem
            {
                let peak = g.mem_peak.unwrap_or(m.used).max(m.used);
                if self.gpu_peaks[i].is_none_or(|(p, _)| peak > p) {
                    self.gpu_peaks[i] = Some((peak, t_ms));
                }
            }
            series.push_back(g.cloned());
        }
        if let Some(s) = snap {
            for p in &s.procs {
                let id = ProcId::of(p);
                let point = ProcPoint {
                    mem: p.mem,
                    mem_peak: p.mem_peak,
                    sm_util: p.sm_util,
                    mem_util: p.mem_util,
                    enc_util: p.enc_util,
                    dec_util: p.dec_util,
                    cpu_pct: p.cpu_pct,
                    rss: p.rss,
                    torch_allocated: p
                        .torch
                        .as_ref()
                        .and_then(|t| t.devices.first())
                        .map(|d| d.allocated),
                    torch_reserved: p
                        .torch
                        .as_ref()
                        .and_then(|t| t.devices.first())
                        .map(|d| d.reserved),
                };
                let series = self.procs.entry(id).or_insert_with(|| ProcSeries {
                    id,
                    facts: ProcFacts::of(p),
                    first_slot: slot,
                    points: VecDeque::new(),
                    last_slot: slot,
                    first_seen_ms: t_ms,
                    last_seen_ms: t_ms,
                    peak: None,
                    torch: None,
                });
                if p.torch.is_some() {
                    series.torch = p.torch.clone();
                }
                series.facts.fill_missing(p);
                // Pad the slots it was not listed in since last time.
                let want = (slot - series.first_slot) as usize;
                while series.points.len() < want {
                    series.points.push_back(None);
                }
                series.points.push_back(Some(point));
                series.last_slot = slot;
                series.last_seen_ms = t_ms;
                if let Some(m) = p.mem_peak.or(p.mem) {
                    let m = m.max(p.mem.unwrap_or(0));
                    if series.peak.is_none_or(|(pk, _)| m > pk) {
                        series.peak = Some((m, t_ms));
                    }
                }
            }
        }
        while self.times.len() > self.cap {
            self.evict();
        }
        // A process is forgotten once its last point leaves the window
        // (scrubbing back still shows exited processes until then).
        let oldest = self.first_slot;
        self.procs.retain(|_, s| s.last_slot >= oldest);
    }

    fn evict(&mut self) {
        self.times.pop_front();
        self.gaps.pop_front();
        for g in &mut self.gpus {
            g.pop_front();
        }
        self.first_slot += 1;
        let first = self.first_slot;
        for s in self.procs.values_mut() {
            while s.first_slot < first {
                s.points.pop_front();
                s.first_slot += 1;
            }
        }
    }

    /// GPU `index`'s figure `f` in `n` time buckets of `bucket_ms`, aligned
    /// to the clock, ending with the bucket that holds `upto` (still
    /// filling). Each bucket is the max (or mean) of its samples; `None`
    /// where it has none. Sparklines drawn this way shift once per bucket,
    /// not once per sample, which keeps terminal output small.
    pub fn gpu_buckets(
        &self,
        index: usize,
        upto: u64,
        n: usize,
        bucket_ms: u64,
        agg: Agg,
        f: impl Fn(&GpuSample) -> Option<u64>,
    ) -> Vec<Option<u64>> {
        let bucket_ms = bucket_ms.max(1);
        let mut out: Vec<Option<u64>> = vec![None; n];
        let Some(t_end) = self.time_at(upto) else {
            return out;
        };
        if n == 0 {
            return out;
        }
        let last = t_end / bucket_ms;
        let first = last.saturating_sub(n as u64 - 1);
        let mut sums = vec![(0u128, 0u64); n];
        let mut slot = upto;
        while let Some(t) = self.time_at(slot) {
            let b = t / bucket_ms;
            if b < first {
                break;
            }
            if b <= last
                && let Some(v) = self.gpu_at(index, slot).and_then(&f)
            {
                let i = (b - first) as usize + (n - (last - first + 1) as usize);
                out[i] = Some(out[i].map_or(v, |o| o.max(v)));
                sums[i].0 += v as u128;
                sums[i].1 += 1;
            }
            if slot == self.first_slot {
                break;
            }
            slot -= 1;
        }
        if agg == Agg::Mean {
            for (o, (sum, count)) in out.iter_mut().zip(sums) {
                if count > 0 {
                    *o = Some((sum / count as u128) as u64);
                }
            }
        }
        out
    }

    /// Rebuilds the snapshot at `slot` from what was kept (for pause and
    /// replay): GPUs as sampled, processes from their series and facts.
    pub fn snapshot_at(&self, slot: u64) -> Option<Snapshot> {
        if self.is_gap(slot) {
            return None;
        }
        let t_ms = self.time_at(slot)?;
        let gpus = (0..self.gpus.len())
            .filter_map(|i| self.gpu_at(i, slot).cloned())
            .collect();
        let mut procs: Vec<ProcSample> = self
            .procs
            .values()
            .filter_map(|s| {
                let p = s.at(slot)?;
                Some(ProcSample {
                    pid: s.id.key.pid,
                    start_time: s.id.key.start_time,
                    gpu: s.id.gpu,
                    kind: s.facts.kind,
                    mem: p.mem,
                    mem_peak: p.mem_peak,
                    sm_util: p.sm_util,
                    mem_util: p.mem_util,
                    enc_util: p.enc_util,
                    dec_util: p.dec_util,
                    user: s.facts.user.clone(),
                    name: s.facts.name.clone(),
                    command: s.facts.command.clone(),
                    container: s.facts.container.clone(),
                    ns_pid: s.facts.ns_pid,
                    cpu_pct: p.cpu_pct,
                    rss: p.rss,
                    torch: p.torch_reserved.and(s.torch.clone()),
                    container_name: s.facts.container_name.clone(),
                    pod: s.facts.pod.clone(),
                    namespace: s.facts.namespace.clone(),
                    // The pod UID is not kept in history.
                    ..Default::default()
                })
            })
            .collect();
        procs.sort_by_key(|p| (p.gpu, p.pid));
        Some(Snapshot {
            seq: slot,
            t_ms,
            gpus,
            procs,
            events: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MemInfo;
    use crate::model::ProcessKey;

    fn snap(t_ms: Millis, used: u64, procs: &[(u32, u64)]) -> Snapshot {
        Snapshot {
            seq: 0,
            t_ms,
            gpus: vec![GpuSample {
                index: 0,
                mem: Some(MemInfo {
                    used,
                    reserved: 0,
                    free: 1000 - used,
                    total: 1000,
                }),
                mem_peak: Some(used),
                ..Default::default()
            }],
            procs: procs
                .iter()
                .map(|&(pid, mem)| ProcSample {
                    pid,
                    start_time: 1,
                    gpu: 0,
                    mem: Some(mem),
                    mem_peak: Some(mem),
                    command: Some(format!("cmd {pid}").into()),
                    ..Default::default()
                })
                .collect(),
            events: Vec::new(),
        }
    }

    fn id(pid: u32) -> ProcId {
        ProcId {
            gpu: 0,
            key: ProcessKey { pid, start_time: 1 },
        }
    }

    #[test]
    fn capacity_bounds_every_series() {
        let mut h = History::new(5, 1000, 60_000);
        for i in 0..12u64 {
            h.push(&snap(i * 1000, i * 10, &[(7, i)]));
        }
        assert_eq!(h.len(), 5);
        assert_eq!(h.first_slot(), 7);
        assert_eq!(h.last_slot(), Some(11));
        assert_eq!(h.gpu_series(0).count(), 5);
        let s = h.process(&id(7)).unwrap();
        assert_eq!(s.iter_from(0).count(), 5);
        assert_eq!(s.at(7).unwrap().mem, Some(7));
        assert!(s.at(6).is_none(), "evicted");
    }

    #[test]
    fn missing_samples_become_gaps() {
        let mut h = History::new(100, 1000, 60_000);
        h.push(&snap(0, 10, &[]));
        h.push(&snap(1000, 10, &[]));
        // Three intervals missed.
        h.push(&snap(5000, 10, &[]));
        assert_eq!(h.len(), 6);
        assert!(!h.is_gap(1));
        assert!(h.is_gap(2) && h.is_gap(3) && h.is_gap(4));
        assert!(!h.is_gap(5));
        assert_eq!(h.gpu_at(0, 3), None);
        assert_eq!(h.time_at(3), Some(3000));
        assert!(h.snapshot_at(3).is_none());
        // Jitter under 2.5 intervals is not a gap.
        h.push(&snap(7400, 10, &[]));
        assert_eq!(h.len(), 7);
    }

    #[test]
    fn processes_get_history_from_first_sight_and_exited_ones_linger() {
        let mut h = History::new(100, 1000, 3000);
        h.push(&snap(0, 10, &[(1, 5)]));
        h.push(&snap(1000, 10, &[(1, 6), (2, 9)]));
        h.push(&snap(2000, 10, &[(2, 9)]));
        let s2 = h.process(&id(2)).unwrap();
        assert_eq!(s2.first_slot(), 1);
        assert_eq!(s2.at(0), None);
        let at2 = h.processes_at(2);
        let exited: Vec<_> = at2
            .iter()
            .filter(|(_, e)| *e)
            .map(|(s, _)| s.id.key.pid)
            .collect();
        assert_eq!(exited, vec![1]);
        // Past exited_keep it is gone from the table ...
        for i in 3..8 {
            h.push(&snap(i * 1000, 10, &[(2, 9)]));
        }
        assert!(h.processes_at(7).iter().all(|(s, _)| s.id.key.pid == 2));
        // ... but scrubbing back still finds it, until it leaves the window.
        assert!(h.processes_at(1).iter().any(|(s, _)| s.id.key.pid == 1));
        let mut small = History::new(3, 1000, 1000);
        small.push(&snap(0, 10, &[(1, 5)]));
        for i in 1..5 {
            small.push(&snap(i * 1000, 10, &[]));
        }
        assert!(
            small.process(&id(1)).is_none(),
            "evicted with its last point"
        );
    }

    #[test]
    fn a_process_that_comes_back_has_a_gap_in_its_series() {
        let mut h = History::new(100, 1000, 60_000);
        h.push(&snap(0, 10, &[(1, 5)]));
        h.push(&snap(1000, 10, &[]));
        h.push(&snap(2000, 10, &[(1, 7)]));
        let s = h.process(&id(1)).unwrap();
        let mems: Vec<_> = s.iter_from(0).map(|(_, p)| p.and_then(|p| p.mem)).collect();
        assert_eq!(mems, vec![Some(5), None, Some(7)]);
    }

    #[test]
    fn peaks_as_of_a_slot_ignore_what_came_after() {
        let mut h = History::new(100, 1000, 60_000);
        for (i, used) in [100u64, 900, 300, 950, 200].into_iter().enumerate() {
            h.push(&snap(i as u64 * 1000, used, &[(1, used)]));
        }
        let p = h.process(&id(1)).unwrap().clone();
        assert_eq!(
            h.gpu_peak_at(0, 4),
            Some((950, 3000)),
            "the newest: since start"
        );
        assert_eq!(
            h.gpu_peak_at(0, 2),
            Some((900, 1000)),
            "not the 950 read later"
        );
        assert_eq!(h.gpu_peak_at(0, 0), Some((100, 0)));
        assert_eq!(h.proc_peak_at(&p, 2), Some((900, 1000)));
        assert_eq!(h.proc_peak_at(&p, 4), Some((950, 3000)));
    }

    #[test]
    fn peaks_remember_the_highest_and_when() {
        let mut h = History::new(100, 1000, 60_000);
        let mut a = snap(0, 10, &[(1, 5)]);
        a.gpus[0].mem_peak = Some(900);
        a.procs[0].mem_peak = Some(800);
        h.push(&a);
        h.push(&snap(1000, 20, &[(1, 6)]));
        assert_eq!(h.gpu_peak(0), Some((900, 0)));
        assert_eq!(h.process(&id(1)).unwrap().peak, Some((800, 0)));
    }

    #[test]
    fn buckets_are_clock_aligned_max_or_mean() {
        let mut h = History::new(100, 1000, 60_000);
        for i in 0..12u64 {
            h.push(&snap(i * 1000, i * 10, &[]));
        }
        let used = |g: &GpuSample| g.mem.map(|m| m.used);
        // 5 s buckets: [0..4] [5..9] [10..11 filling].
        let b = h.gpu_buckets(0, 11, 4, 5000, Agg::Max, used);
        assert_eq!(b, vec![None, Some(40), Some(90), Some(110)]);
        let b = h.gpu_buckets(0, 11, 3, 5000, Agg::Mean, used);
        assert_eq!(b, vec![Some(20), Some(70), Some(105)]);
        // Up to an earlier slot (paused).
        let b = h.gpu_buckets(0, 4, 2, 5000, Agg::Max, used);
        assert_eq!(b, vec![None, Some(40)]);
        assert!(
            h.gpu_buckets(0, 99, 3, 5000, Agg::Max, used)
                .iter()
                .all(Option::is_none)
        );
        assert!(h.gpu_buckets(0, 11, 0, 5000, Agg::Max, used).is_empty());
    }

    #[test]
    fn snapshots_are_rebuilt_from_history() {
        let mut h = History::new(100, 1000, 60_000);
        let a = snap(0, 10, &[(1, 5), (2, 6)]);
        h.push(&a);
        h.push(&snap(1000, 20, &[(2, 7)]));
        let back = h.snapshot_at(0).unwrap();
        assert_eq!(back.gpus, a.gpus);
        assert_eq!(back.procs.len(), 2);
        assert_eq!(back.procs[1].command.as_deref(), Some("cmd 2"));
        assert_eq!(h.slot_at_time(1500), Some(1));
        assert_eq!(h.slot_at_time(0), Some(0));
    }
}
