//! Per-GPU and per-process statistics of one recording, from one pass over
//! its snapshots as they stream by ([`Collector`]). What is kept per GPU
//! and per process is bounded (histograms of at most [`GPU_CELLS`] /
//! [`PROC_CELLS`] buckets, 1000 drawing buckets, [`MAX_MARKS`] event
//! marks); only the number of distinct processes, at most [`MAX_PROCS`],
//! makes it grow.

use std::collections::HashMap;

use crate::model::alloc::AllocStats;
use crate::model::{EventKind, Millis, ProcId, ProcSample, Snapshot};
use crate::record::format::Header;

use super::series::{Buckets, MemStats};

/// Histogram buckets per GPU series (1 MiB each while they suffice:
/// 4096 distinct MiB values).
pub(crate) const GPU_CELLS: usize = 4096;
/// Histogram buckets per process series.
pub(crate) const PROC_CELLS: usize = 1024;
/// Event marks kept per GPU for drawing (the rest are counted).
pub(crate) const MAX_MARKS: usize = 500;
/// Processes followed; more are counted as untracked.
pub(crate) const MAX_PROCS: usize = 20_000;

/// Events counted for a GPU or a process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Events {
    pub(crate) ooms: u64,
    pub(crate) alerts: u64,
    pub(crate) exits: u64,
}

impl Events {
    fn count(&mut self, kind: EventKind) {
        match kind {
            EventKind::SuspectedOom => self.ooms += 1,
            EventKind::Alert => self.alerts += 1,
            EventKind::ProcessExited => self.exits += 1,
            _ => {}
        }
    }
}

/// One GPU of a recording. Its figures cover its *active span*: from the
/// first snapshot that lists a process on it to the first snapshot after
/// the last one that does (whose fast-lane peak still covers that
/// process); a GPU no process ever used is covered whole.
#[derive(Clone, Debug)]
pub(crate) struct GpuStats {
    pub(crate) index: u32,
    pub(crate) name: String,
    pub(crate) total: u64,
    /// The first snapshot with a process on it: time 0 of its figures.
    pub(crate) start: Option<Millis>,
    /// The first snapshot that lists the GPU.
    pub(crate) first: Millis,
    pub(crate) mem: MemStats,
    /// Before `start`, and since the active span ended (maybe for now).
    lead: MemStats,
    tail: MemStats,
    active: bool,
    pub(crate) series: Buckets,
    pub(crate) events: Events,
    /// Suspected OOMs, alerts, exits and lost GPUs: (time, kind).
    pub(crate) marks: Vec<(Millis, EventKind)>,
}

impl GpuStats {
    /// Time 0 of the GPU's run.
    pub(crate) fn origin(&self) -> Millis {
        self.start.unwrap_or(self.first)
    }

    pub(crate) fn in_use(&self) -> bool {
        self.start.is_some()
    }
}

/// What the PyTorch allocator said, at its highest.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct AllocPeak {
    pub(crate) allocated_peak: u64,
    pub(crate) reserved_peak: u64,
    /// Share of reserved memory in split free blocks, 0..=1.
    pub(crate) frag_peak: f64,
    pub(crate) ooms: u64,
    pub(crate) retries: u64,
}

impl AllocPeak {
    fn add(&mut self, a: &AllocStats) {
        for d in &a.devices {
            self.allocated_peak = self.allocated_peak.max(d.allocated_peak.max(d.allocated));
            self.reserved_peak = self.reserved_peak.max(d.reserved_peak.max(d.reserved));
            self.frag_peak = self.frag_peak.max(d.fragmentation().unwrap_or(0.0));
            self.ooms = self.ooms.max(d.num_ooms);
            self.retries = self.retries.max(d.num_alloc_retries);
        }
    }
}

/// One process on one GPU, over the snapshots that list it.
#[derive(Clone, Debug)]
pub(crate) struct ProcStats {
    pub(crate) id: ProcId,
    pub(crate) user: String,
    /// Its command line (else its name, else "?"), as the file gives it.
    pub(crate) command: String,
    pub(crate) first_seen: Millis,
    pub(crate) last_seen: Millis,
    pub(crate) mem: MemStats,
    pub(crate) alloc: Option<AllocPeak>,
    pub(crate) events: Events,
}

/// Everything one recording gives a comparison.
#[derive(Clone, Debug)]
pub(crate) struct RunStats {
    /// The file as messages show it.
    pub(crate) name: String,
    pub(crate) header: Header,
    pub(crate) first: Millis,
    pub(crate) last: Millis,
    pub(crate) snapshots: u64,
    pub(crate) gpus: Vec<GpuStats>,
    /// In order of first appearance.
    pub(crate) procs: Vec<ProcStats>,
    /// Processes beyond [`MAX_PROCS`], not followed.
    pub(crate) untracked: u64,
}

/// Builds a [`RunStats`] one snapshot at a time.
pub(crate) struct Collector {
    run: RunStats,
    procs: HashMap<ProcId, usize>,
    /// (gpu, pid) → the process last listed with them: where an event
    /// about a PID belongs (an exit comes after its last snapshot).
    by_pid: HashMap<(u32, u32), usize>,
    width: Millis,
}

impl Collector {
    pub(crate) fn new(name: &str, header: &Header) -> Collector {
        Collector {
            run: RunStats {
                name: name.to_owned(),
                header: header.clone(),
                first: 0,
                last: 0,
                snapshots: 0,
                gpus: Vec::new(),
                procs: Vec::new(),
                untracked: 0,
            },
            procs: HashMap::new(),
            by_pid: HashMap::new(),
            width: header.interval_ms.clamp(1, 3_600_000),
        }
    }

    pub(crate) fn add(&mut self, s: &Snapshot) {
        if self.run.snapshots == 0 {
            self.run.first = s.t_ms;
        }
        self.run.snapshots += 1;
        self.run.last = s.t_ms;
        for g in &s.gpus {
            let busy = s.procs.iter().any(|p| p.gpu == g.index);
            let i = self.gpu(g.index, s.t_ms);
            let gs = &mut self.run.gpus[i];
            let Some(m) = g.mem else { continue };
            gs.total = m.total;
            let peak = g.mem_peak.unwrap_or(m.used);
            gs.series.add(s.t_ms, peak.max(m.used));
            match (busy, gs.start.is_some(), gs.active) {
                (true, false, _) => {
                    gs.start = Some(s.t_ms);
                    gs.mem.add(s.t_ms, m.used, peak);
                }
                (true, true, _) => {
                    // Every stretch of a GPU's series shares its origin.
                    let fresh = MemStats::new(gs.first, GPU_CELLS);
                    let tail = std::mem::replace(&mut gs.tail, fresh);
                    gs.mem.merge(&tail);
                    gs.mem.add(s.t_ms, m.used, peak);
                }
                // The first snapshot after the last process: its fast-lane
                // peak still covers that process.
                (false, true, true) => gs.mem.add(s.t_ms, m.used, peak),
                (false, true, false) => gs.tail.add(s.t_ms, m.used, peak),
                (false, false, _) => gs.lead.add(s.t_ms, m.used, peak),
            }
            gs.active = busy;
        }
        for p in &s.procs {
            self.proc(p, s.t_ms);
        }
        for e in &s.events {
            if let Some(gpu) = e.gpu {
                let i = self.gpu(gpu, s.t_ms);
                let gs = &mut self.run.gpus[i];
                gs.events.count(e.kind);
                let drawn = matches!(
                    e.kind,
                    EventKind::SuspectedOom
                        | EventKind::Alert
                        | EventKind::ProcessExited
                        | EventKind::GpuLost
                        | EventKind::Xid
                );
                if drawn && gs.marks.len() < MAX_MARKS {
                    gs.marks.push((e.t_ms, e.kind));
                }
                if let Some(&j) = e.pid.and_then(|pid| self.by_pid.get(&(gpu, pid))) {
                    self.run.procs[j].events.count(e.kind);
                }
            }
        }
    }

    /// The position of GPU `index`, added (first seen at `t`) if new.
    fn gpu(&mut self, index: u32, t: Millis) -> usize {
        if let Some(i) = self.run.gpus.iter().position(|g| g.index == index) {
            return i;
        }
        let dev = self
            .run
            .header
            .system
            .gpus
            .iter()
            .find(|d| d.index == index);
        self.run.gpus.push(GpuStats {
            index,
            name: dev.map_or_else(|| "?".to_owned(), |d| d.name.clone()),
            total: dev.map_or(0, |d| d.memory_total),
            start: None,
            first: t,
            mem: MemStats::new(t, GPU_CELLS),
            lead: MemStats::new(t, GPU_CELLS),
            tail: MemStats::new(t, GPU_CELLS),
            active: false,
            series: Buckets::new(self.run.first, self.width),
            events: Events::default(),
            marks: Vec::new(),
        });
        self.run.gpus.len() - 1
    }

    fn proc(&mut self, p: &ProcSample, t: Millis) {
        let id = p.id();
        let i = match self.procs.get(&id) {
            Some(&i) => i,
            None if self.procs.len() >= MAX_PROCS => {
                self.run.untracked += 1;
                return;
            }
            None => {
                self.run.procs.push(ProcStats {
                    id,
                    user: String::new(),
                    command: String::new(),
                    first_seen: t,
                    last_seen: t,
                    mem: MemStats::new(t, PROC_CELLS),
                    alloc: None,
                    events: Events::default(),
                });
                let i = self.run.procs.len() - 1;
                self.procs.insert(id, i);
                i
            }
        };
        self.by_pid.insert((p.gpu, p.pid), i);
        let ps = &mut self.run.procs[i];
        ps.last_seen = t;
        if let Some(u) = p.user.as_deref()
            && ps.user != u
        {
            ps.user = u.to_owned();
        }
        if ps.command != p.label() && (p.command.is_some() || ps.command.is_empty()) {
            ps.command = p.label().to_owned();
        }
        if let Some(used) = p.mem.or(p.mem_peak) {
            ps.mem.add(t, used, p.mem_peak.unwrap_or(used));
        }
        if let Some(a) = &p.torch {
            ps.alloc.get_or_insert_with(AllocPeak::default).add(a);
        }
    }

    pub(crate) fn finish(mut self) -> RunStats {
        for g in &mut self.run.gpus {
            if g.start.is_none() {
                g.mem = std::mem::replace(&mut g.lead, MemStats::new(g.first, 2));
            }
            g.lead = MemStats::new(g.first, 2);
            g.tail = MemStats::new(g.first, 2);
        }
        self.run.gpus.sort_by_key(|g| g.index);
        self.run
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::units::MIB;
    use crate::model::{Event, GpuSample, MemInfo, SystemInfo};

    pub(crate) fn header() -> Header {
        Header::new(&SystemInfo::default(), 1000, 0)
    }

    pub(crate) fn gpu(index: u32, used_mib: u64) -> GpuSample {
        GpuSample {
            index,
            mem: Some(MemInfo {
                used: used_mib * MIB,
                reserved: 0,
                free: (1000 - used_mib) * MIB,
                total: 1000 * MIB,
            }),
            ..Default::default()
        }
    }

    pub(crate) fn proc(gpu: u32, pid: u32, mib: u64, cmd: &str) -> ProcSample {
        ProcSample {
            pid,
            gpu,
            start_time: 100,
            mem: Some(mib * MIB),
            user: Some("alice".into()),
            command: Some(cmd.into()),
            ..Default::default()
        }
    }

    fn snap(i: u64, gpus: Vec<GpuSample>, procs: Vec<ProcSample>) -> Snapshot {
        Snapshot {
            seq: i,
            t_ms: i * 1000,
            gpus,
            procs,
            events: Vec::new(),
        }
    }

    #[test]
    fn a_gpu_is_measured_over_its_active_span() {
        let mut c = Collector::new("x", &header());
        // Idle 10 MiB, then a process from t=2 s to t=4 s, then idle again.
        let used = [10, 10, 50, 70, 60, 10, 10, 10];
        for (i, &u) in used.iter().enumerate() {
            let procs = if (2..=4).contains(&i) {
                vec![proc(0, 7, u - 10, "python train.py")]
            } else {
                Vec::new()
            };
            let mut g = gpu(0, u);
            if i == 5 {
                // The exit's spike, seen by the fast lane.
                g.mem_peak = Some(90 * MIB);
            }
            c.add(&snap(i as u64, vec![g], procs));
        }
        let run = c.finish();
        let g = &run.gpus[0];
        assert_eq!(g.start, Some(2000));
        // 50, 70, 60 and the closing 10 (whose peak was 90).
        assert_eq!(g.mem.n, 4);
        assert_eq!(g.mem.peak, 90 * MIB);
        assert_eq!(g.mem.peak_at, 5000);
        assert_eq!(g.mem.mean(), Some(47.5 * MIB as f64));
        let p = &run.procs[0];
        assert_eq!(
            (p.mem.peak, p.mem.peak_at, p.first_seen),
            (60 * MIB, 3000, 2000)
        );
    }

    #[test]
    fn a_gpu_without_processes_is_measured_whole_and_events_find_their_process() {
        let mut c = Collector::new("x", &header());
        c.add(&snap(
            0,
            vec![gpu(0, 5), gpu(1, 0)],
            vec![proc(1, 9, 1, "a")],
        ));
        let mut s = snap(1, vec![gpu(0, 15), gpu(1, 0)], Vec::new());
        s.events.push(Event {
            t_ms: 1000,
            kind: EventKind::SuspectedOom,
            gpu: Some(1),
            pid: Some(9),
            message: String::new(),
            after_oom: false,
        });
        c.add(&s);
        let run = c.finish();
        assert!(!run.gpus[0].in_use());
        assert_eq!(run.gpus[0].mem.n, 2);
        assert_eq!(run.gpus[0].mem.peak, 15 * MIB);
        assert_eq!(run.gpus[1].events.ooms, 1);
        assert_eq!(run.procs[0].events.ooms, 1);
        assert_eq!(run.gpus[1].marks, vec![(1000, EventKind::SuspectedOom)]);
    }
}
