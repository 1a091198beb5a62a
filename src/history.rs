//! Bounded history: one slot per snapshot, oldest evicted first. Per GPU
//! the whole sample is kept; per process a compact point per slot plus its
//! static facts once. Every process gets history from the moment it is
//! first seen; an exited process stays (marked exited) for `exited_keep`.
//! Missing samples (the sampler stalled, the machine slept) become gap
//! slots, so charts show a break instead of a false line. Pure: no I/O.

use std::collections::{HashMap, VecDeque};

pub use crate::model::ProcId;
use crate::model::{GpuSample, Millis, Snapshot};

mod gpu;
mod process;
mod slots;
mod snapshot;

pub use gpu::Agg;
pub use process::{ProcFacts, ProcPoint, ProcSeries};

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
                    torch: p.torch.clone(),
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
                // The same publish as the last point's: one copy (a
                // recording read back gives each snapshot its own).
                let mut point = point;
                if let (Some(new), Some(Some(last))) = (&point.torch, series.points.back())
                    && let Some(old) = &last.torch
                    && (old.seq, old.t_ms) == (new.seq, new.t_ms)
                {
                    point.torch = Some(old.clone());
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
}

#[cfg(test)]
mod tests;
