//! Peaks over a scrape interval. Each snapshot carries the highest memory
//! any read saw since the previous snapshot (fast lane included); a scraper
//! that comes every 15 s wants the highest since *its* previous scrape. The
//! ring keeps every snapshot's peaks for a while, and [`Scrapers`] remembers
//! which snapshot each scraper (by address) saw last, so two Prometheus
//! servers scraping the same node each get their own, complete window.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use crate::model::{Millis, ProcId, Snapshot};

/// The peaks of one snapshot.
#[derive(Clone, Debug, PartialEq)]
struct Entry {
    seq: u64,
    t_ms: Millis,
    /// By GPU index.
    gpus: Vec<(u32, u64)>,
    procs: Vec<(ProcId, u64)>,
}

impl Entry {
    fn of(snap: &Snapshot) -> Entry {
        Entry {
            seq: snap.seq,
            t_ms: snap.t_ms,
            gpus: snap
                .gpus
                .iter()
                .filter_map(|g| g.mem_peak.map(|p| (g.index, p)))
                .collect(),
            procs: snap
                .procs
                .iter()
                .filter_map(|p| p.mem_peak.map(|m| (p.id(), m)))
                .collect(),
        }
    }
}

/// Highest memory per GPU and per process over a window of snapshots.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Peaks {
    pub gpus: HashMap<u32, u64>,
    pub procs: HashMap<ProcId, u64>,
}

impl Peaks {
    /// The peaks of `snap` alone.
    pub(crate) fn of(snap: &Snapshot) -> Peaks {
        let mut p = Peaks::default();
        p.fold(&Entry::of(snap), true);
        p
    }

    /// Raises the peaks with an entry's; `insert` also adds GPUs and
    /// processes not seen yet (only the newest snapshot's may enter, so that
    /// exited processes do not come back).
    fn fold(&mut self, e: &Entry, insert: bool) {
        for &(g, v) in &e.gpus {
            match self.gpus.get_mut(&g) {
                Some(cur) => *cur = (*cur).max(v),
                None if insert => {
                    self.gpus.insert(g, v);
                }
                None => {}
            }
        }
        for &(id, v) in &e.procs {
            match self.procs.get_mut(&id) {
                Some(cur) => *cur = (*cur).max(v),
                None if insert => {
                    self.procs.insert(id, v);
                }
                None => {}
            }
        }
    }
}

/// The peaks of recent snapshots, oldest first.
#[derive(Debug)]
pub(crate) struct PeakRing {
    entries: VecDeque<Entry>,
    keep_ms: u64,
    max_entries: usize,
}

impl PeakRing {
    /// Keeps snapshots from the last `keep_ms` milliseconds, at most
    /// `max_entries` of them.
    pub(crate) fn new(keep_ms: u64, max_entries: usize) -> PeakRing {
        PeakRing {
            entries: VecDeque::new(),
            keep_ms,
            max_entries: max_entries.max(1),
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Adds a snapshot. A sequence number that goes back (a restarted
    /// sampler) starts the ring afresh.
    pub(crate) fn push(&mut self, snap: &Snapshot) {
        if let Some(last) = self.entries.back() {
            if snap.seq == last.seq {
                return;
            }
            if snap.seq < last.seq {
                self.entries.clear();
            }
        }
        self.entries.push_back(Entry::of(snap));
        let oldest = snap.t_ms.saturating_sub(self.keep_ms);
        while self.entries.len() > self.max_entries
            || self.entries.front().is_some_and(|e| e.t_ms < oldest)
        {
            self.entries.pop_front();
        }
    }

    /// Highest values over the snapshots after `after` up to and including
    /// `upto` (`upto`'s own peaks always count). Only GPUs and processes in
    /// `upto` are reported. With `after` older than the ring, the whole ring
    /// counts.
    pub(crate) fn peaks(&self, after: Option<u64>, upto: &Snapshot) -> Peaks {
        let mut p = Peaks::of(upto);
        let Some(after) = after else { return p };
        for e in self
            .entries
            .iter()
            .filter(|e| e.seq > after && e.seq <= upto.seq)
        {
            p.fold(e, false);
        }
        p
    }
}

/// The last snapshot each scraper saw, by address; at most `cap` scrapers
/// (the one gone longest is forgotten first).
#[derive(Debug)]
pub(crate) struct Scrapers {
    last: HashMap<IpAddr, (u64, u64)>,
    cap: usize,
    tick: u64,
}

impl Scrapers {
    pub(crate) fn new(cap: usize) -> Scrapers {
        Scrapers {
            last: HashMap::new(),
            cap: cap.max(1),
            tick: 0,
        }
    }

    /// Records that `who` scrapes snapshot `seq` now and returns the snapshot
    /// it saw the time before (`None` the first time).
    pub(crate) fn scrape(&mut self, who: IpAddr, seq: u64) -> Option<u64> {
        self.tick += 1;
        let tick = self.tick;
        if let Some(entry) = self.last.get_mut(&who) {
            let before = entry.0;
            // Two requests in flight at once may finish out of order.
            entry.0 = entry.0.max(seq);
            entry.1 = tick;
            return Some(before);
        }
        if self.last.len() >= self.cap
            && let Some(oldest) = self.last.iter().min_by_key(|(_, v)| v.1).map(|(k, _)| *k)
        {
            self.last.remove(&oldest);
        }
        self.last.insert(who, (seq, tick));
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProcessKey;

    fn pid(gpu: u32, pid: u32, start_time: u64) -> ProcId {
        ProcId {
            gpu,
            key: ProcessKey { pid, start_time },
        }
    }
    use crate::model::{GpuSample, ProcSample};

    fn snap(seq: u64, gpu_peak: u64, procs: &[(u32, u64)]) -> Snapshot {
        Snapshot {
            seq,
            t_ms: 1000 * seq,
            gpus: vec![GpuSample {
                index: 0,
                mem_peak: Some(gpu_peak),
                ..Default::default()
            }],
            procs: procs
                .iter()
                .map(|&(pid, peak)| ProcSample {
                    pid,
                    start_time: 7,
                    gpu: 0,
                    mem_peak: Some(peak),
                    ..Default::default()
                })
                .collect(),
            events: vec![],
        }
    }

    #[test]
    fn the_window_runs_from_the_previous_scrape_to_now() {
        let mut ring = PeakRing::new(600_000, 100);
        let snaps = [
            snap(0, 10, &[(1, 5)]),
            snap(1, 90, &[(1, 50)]),
            snap(2, 20, &[(1, 6)]),
            snap(3, 30, &[(1, 7)]),
        ];
        for s in &snaps {
            ring.push(s);
        }
        // Scraped at 0, now at 3: the spike at 1 counts.
        let p = ring.peaks(Some(0), &snaps[3]);
        assert_eq!(p.gpus[&0], 90);
        assert_eq!(p.procs[&pid(0, 1, 7)], 50);
        // Scraped at 1 already: only 2 and 3.
        let p = ring.peaks(Some(1), &snaps[3]);
        assert_eq!(p.gpus[&0], 30);
        // First scrape: the snapshot's own peak.
        assert_eq!(ring.peaks(None, &snaps[3]).gpus[&0], 30);
        // Scraped the same snapshot again.
        assert_eq!(ring.peaks(Some(3), &snaps[3]).gpus[&0], 30);
    }

    #[test]
    fn processes_that_exited_do_not_come_back() {
        let mut ring = PeakRing::new(600_000, 100);
        let a = snap(0, 10, &[(1, 5), (2, 99)]);
        let b = snap(1, 10, &[(1, 6)]);
        ring.push(&a);
        ring.push(&b);
        let p = ring.peaks(Some(0), &b);
        assert_eq!(p.procs.len(), 1);
        // A recycled PID (new start time) is another process.
        let mut c = snap(2, 10, &[(2, 1)]);
        c.procs[0].start_time = 8;
        ring.push(&c);
        let p = ring.peaks(Some(0), &c);
        assert_eq!(p.procs[&pid(0, 2, 8)], 1);
    }

    #[test]
    fn the_ring_forgets_old_snapshots_and_restarts_on_a_new_sampler() {
        let mut ring = PeakRing::new(2_500, 100);
        for s in 0..10 {
            ring.push(&snap(s, s * 10, &[]));
        }
        // t = 9 s: keeps 6.5 s onwards (7, 8, 9).
        assert_eq!(ring.len(), 3);
        // An ancient previous scrape: the whole ring counts, no more.
        assert_eq!(ring.peaks(Some(0), &snap(9, 90, &[])).gpus[&0], 90);
        let mut small = PeakRing::new(u64::MAX, 2);
        for s in 0..5 {
            small.push(&snap(s, 0, &[]));
        }
        assert_eq!(small.len(), 2);
        small.push(&snap(0, 0, &[]));
        assert_eq!(small.len(), 1, "sequence went back: start afresh");
    }

    #[test]
    fn each_scraper_has_its_own_window() {
        let mut s = Scrapers::new(2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let c: IpAddr = "10.0.0.3".parse().unwrap();
        assert_eq!(s.scrape(a, 5), None);
        assert_eq!(s.scrape(b, 7), None);
        assert_eq!(s.scrape(a, 9), Some(5));
        // Out of order: never moves back.
        assert_eq!(s.scrape(a, 8), Some(9));
        assert_eq!(s.scrape(a, 10), Some(9));
        // Full: b (seen longest ago) is forgotten.
        assert_eq!(s.scrape(c, 10), None);
        assert_eq!(s.scrape(b, 11), None);
    }
}
