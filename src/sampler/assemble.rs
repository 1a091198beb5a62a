//! Readings become snapshots: the [`Assembler`] folds every lane's readings
//! into per-GPU state and makes a [`Snapshot`] of it per round. Pure: the
//! live sampler, `vramwatch snapshot` ([`sample_once`]) and the simulator's
//! whole-node snapshots share it.

use std::collections::{HashMap, HashSet};
use std::thread;
use std::time::Duration;

use crate::model::{Event, EventKind, GpuSample, GpuState, Millis, ProcSample, Snapshot, now_ms};
use crate::source::sim::SimWorld;
use crate::source::{
    FastReading, NormalReading, ProbeError, ProcUtil, ProcUtilRead, SlowDue, SlowReading, Source,
};

/// What is known about one GPU between two snapshots.
#[derive(Debug, Default)]
struct GpuSlot {
    normal: Option<NormalReading>,
    /// Memory from the newest read of any lane.
    fast: Option<FastReading>,
    slow: Option<SlowReading>,
    /// The last process utilisation read (kept, and shown as it is, until
    /// the next: it is read less often than memory).
    util: HashMap<u32, ProcUtil>,
    /// The processes listed when it was read: one of them without a sample
    /// was idle; one listed since is not known yet.
    util_listed: HashSet<u32>,
    util_supported: bool,
    lost: Option<String>,
    fresh: bool,
    /// Peaks of every memory read since the last snapshot.
    peaks: Peaks,
    xids: Vec<u64>,
    lag_ms: u32,
}

/// Folds lane readings into per-GPU state and makes snapshots of it. Pure:
/// the sampler, `vramwatch snapshot` and the simulator's tests share it.
#[derive(Debug)]
pub struct Assembler {
    gpus: Vec<GpuSlot>,
}

impl Assembler {
    pub fn new(gpu_count: usize) -> Assembler {
        Assembler {
            gpus: (0..gpu_count).map(|_| GpuSlot::default()).collect(),
        }
    }

    fn mark_lost(slot: &mut GpuSlot, e: ProbeError) {
        let ProbeError::Lost { reason, .. } = e;
        slot.lost = Some(reason);
        slot.fresh = true;
    }

    pub fn fold_fast(&mut self, gpu: usize, r: Result<FastReading, ProbeError>) {
        let Some(slot) = self.gpus.get_mut(gpu) else {
            return;
        };
        match r {
            Ok(f) => {
                slot.peaks.add_reading(&f);
                slot.fast = Some(f);
                slot.lost = None;
            }
            Err(e) => Self::mark_lost(slot, e),
        }
    }

    pub fn fold_normal(&mut self, gpu: usize, r: Result<NormalReading, ProbeError>) {
        self.fold_normal_after(gpu, r, 0);
    }

    /// As [`Assembler::fold_normal`], noting the read finished `lag_ms` after
    /// its round began.
    pub fn fold_normal_after(
        &mut self,
        gpu: usize,
        r: Result<NormalReading, ProbeError>,
        lag_ms: u32,
    ) {
        let Some(slot) = self.gpus.get_mut(gpu) else {
            return;
        };
        match r {
            Ok(mut n) => {
                slot.peaks.add_reading(&n.fast);
                match std::mem::take(&mut n.proc_util) {
                    ProcUtilRead::NotAsked => {}
                    ProcUtilRead::Unsupported => {
                        slot.util.clear();
                        slot.util_listed.clear();
                        slot.util_supported = false;
                    }
                    ProcUtilRead::Samples(v) => {
                        slot.util = v.into_iter().map(|u| (u.pid, u)).collect();
                        slot.util_listed = n.fast.procs.iter().map(|p| p.pid).collect();
                        slot.util_supported = true;
                    }
                }
                slot.fast = Some(n.fast.clone());
                slot.normal = Some(n);
                slot.lost = None;
                slot.fresh = true;
                slot.lag_ms = lag_ms;
            }
            Err(e) => Self::mark_lost(slot, e),
        }
    }

    pub fn fold_slow(&mut self, gpu: usize, r: Result<SlowReading, ProbeError>) {
        let Some(slot) = self.gpus.get_mut(gpu) else {
            return;
        };
        match r {
            Ok(mut s) => {
                slot.xids.append(&mut s.xids);
                if let Some(old) = &slot.slow {
                    // PCIe and energy are read less often: keep the last
                    // figures (the energy counter then steps every
                    // `energy_interval`, fine for a rate()).
                    if !s.pcie_read {
                        s.pcie_rx_kbs = old.pcie_rx_kbs;
                        s.pcie_tx_kbs = old.pcie_tx_kbs;
                    }
                    if !s.energy_read {
                        s.energy_mj = old.energy_mj;
                    }
                }
                slot.slow = Some(s);
            }
            Err(e) => Self::mark_lost(slot, e),
        }
    }

    /// The snapshot of what is known now; starts the next peak interval.
    pub fn publish(&mut self, seq: u64, t_ms: Millis) -> Snapshot {
        let mut gpus = Vec::with_capacity(self.gpus.len());
        let mut procs = Vec::new();
        let mut events = Vec::new();
        for (i, slot) in self.gpus.iter_mut().enumerate() {
            let index = i as u32;
            let state = if slot.lost.is_some() {
                GpuState::Lost
            } else if slot.fresh {
                GpuState::Ok
            } else {
                GpuState::Stale
            };
            let mut g = GpuSample {
                index,
                state,
                ..Default::default()
            };
            for xid in slot.xids.drain(..) {
                events.push(Event {
                    t_ms,
                    kind: EventKind::Xid,
                    gpu: Some(index),
                    pid: None,
                    message: format!("XID {xid} on GPU {index}"),
                    after_oom: false,
                });
            }
            if state != GpuState::Lost {
                if let Some(n) = &slot.normal {
                    g.bar1 = n.bar1;
                    g.util_gpu = n.util_gpu;
                    g.util_mem = n.util_mem;
                    g.temp_c = n.temp_c;
                    g.power_mw = n.power_mw;
                    g.power_limit_mw = n.power_limit_mw;
                    g.sm_clock_mhz = n.sm_clock_mhz;
                    g.mem_clock_mhz = n.mem_clock_mhz;
                    g.fan_pct = n.fan_pct;
                    g.pstate = n.pstate;
                    g.enc_util = n.enc_util;
                    g.dec_util = n.dec_util;
                }
                if let Some(s) = &slot.slow {
                    g.pcie_rx_kbs = s.pcie_rx_kbs;
                    g.pcie_tx_kbs = s.pcie_tx_kbs;
                    g.energy_mj = s.energy_mj;
                    g.ecc_volatile = s.ecc_volatile;
                    g.ecc_sbe_volatile = s.ecc_sbe_volatile;
                    g.ecc_dbe_volatile = s.ecc_dbe_volatile;
                    g.mem_temp_c = s.mem_temp_c;
                    g.pcie_replays = s.pcie_replays;
                    g.remapped_rows_cor = s.remapped_rows_cor;
                    g.remapped_rows_unc = s.remapped_rows_unc;
                    g.row_remap_failure = s.row_remap_failure;
                }
                if let Some(f) = &slot.fast {
                    g.mem = f.mem;
                    g.mem_peak = slot.peaks.used.or(f.mem.map(|m| m.used));
                    g.mem_reads = slot.peaks.reads;
                    for p in &f.procs {
                        let util = slot.util.get(&p.pid);
                        let idle =
                            (slot.util_supported && slot.util_listed.contains(&p.pid)).then_some(0);
                        procs.push(ProcSample {
                            pid: p.pid,
                            gpu: index,
                            kind: p.kind,
                            mem: p.mem,
                            mem_peak: slot.peaks.procs.get(&p.pid).copied().or(p.mem),
                            sm_util: util.and_then(|u| u.sm).or(idle),
                            mem_util: util.and_then(|u| u.mem).or(idle),
                            enc_util: util.and_then(|u| u.enc).or(idle),
                            dec_util: util.and_then(|u| u.dec).or(idle),
                            ..Default::default()
                        });
                    }
                }
                g.lag_ms = slot.lag_ms;
            }
            slot.fresh = false;
            slot.peaks = Peaks::default();
            gpus.push(g);
        }
        Snapshot {
            seq,
            t_ms,
            gpus,
            procs,
            events,
        }
    }
}

/// Fast-lane reads between two normal reads, kept by the GPU's own thread
/// and handed over with the normal read: the fast lane costs one thread
/// wake-up per read, nothing on the async side.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Peaks {
    pub used: Option<u64>,
    pub reads: u32,
    pub procs: HashMap<u32, u64>,
    pub lost: Option<String>,
}

impl Peaks {
    pub fn add(&mut self, r: &Result<FastReading, ProbeError>) {
        match r {
            Ok(f) => self.add_reading(f),
            Err(ProbeError::Lost { reason, .. }) => self.lost = Some(reason.clone()),
        }
    }

    /// Folds one memory read: device and per-process maxima, and the count.
    fn add_reading(&mut self, f: &FastReading) {
        if let Some(m) = f.mem {
            self.add_used(m.used, 1);
        }
        for p in &f.procs {
            if let Some(b) = p.mem {
                self.add_proc(p.pid, b);
            }
        }
    }

    fn add_used(&mut self, used: u64, reads: u32) {
        self.used = Some(self.used.map_or(used, |p| p.max(used)));
        self.reads += reads;
    }

    fn add_proc(&mut self, pid: u32, bytes: u64) {
        let e = self.procs.entry(pid).or_insert(bytes);
        *e = (*e).max(bytes);
    }
}

impl Assembler {
    /// Folds a worker's fast-lane peaks into the current interval.
    pub fn fold_peaks(&mut self, gpu: usize, p: Peaks) {
        let Some(slot) = self.gpus.get_mut(gpu) else {
            return;
        };
        match p.used {
            Some(u) => slot.peaks.add_used(u, p.reads),
            None => slot.peaks.reads += p.reads,
        }
        for (pid, b) in p.procs {
            slot.peaks.add_proc(pid, b);
        }
        if let Some(reason) = p.lost {
            slot.lost = Some(reason);
            slot.fresh = true;
        }
    }
}

/// Reads every lane of every GPU once, each GPU on its own thread, plus
/// host facts: what `vramwatch snapshot` prints. CPU % of the processes is
/// measured over at least `cpu_window`, which starts as soon as every GPU
/// has listed its processes and runs while the rest is read (PCIe
/// throughput alone samples the link for ~40 ms).
pub fn sample_once(source: &dyn Source, cpu_window: Duration) -> Snapshot {
    let n = source.system().gpus.len();
    let mut host = source.host_facts();
    let t = now_ms();
    let (listed, lists) = std::sync::mpsc::channel::<Vec<u32>>();
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let mut probe = source.probe(i);
            let listed = listed.clone();
            thread::spawn(move || {
                let first = probe.fast(t);
                let pids = first
                    .as_ref()
                    .map_or_else(|_| Vec::new(), |f| f.procs.iter().map(|p| p.pid).collect());
                let _ = listed.send(pids);
                drop(listed);
                let normal = probe.normal(t, true);
                let slow = probe.slow(t, SlowDue::ALL);
                (normal, slow)
            })
        })
        .collect();
    drop(listed);
    // Every GPU's list (a reader that died sends none: the channel closes).
    let pids: Vec<u32> = lists.iter().take(n).flatten().collect();
    // No process: no CPU % to measure, no window to wait for.
    let window = (!pids.is_empty() && host.prime(&pids)).then(std::time::Instant::now);
    let mut asm = Assembler::new(n);
    for (i, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok((normal, slow)) => {
                asm.fold_normal(i, normal);
                asm.fold_slow(i, slow);
            }
            Err(_) => asm.fold_normal(
                i,
                Err(ProbeError::Lost {
                    index: i as u32,
                    reason: "reader thread panicked".into(),
                }),
            ),
        }
    }
    let mut snap = asm.publish(0, t);
    if let Some(start) = window {
        thread::sleep(cpu_window.saturating_sub(start.elapsed()));
    }
    host.enrich(t, &mut snap.procs, true);
    snap
}

impl SimWorld {
    /// The snapshot of the whole simulated node at `t_ms` (every lane, host
    /// facts), for tests and benchmarks that need no sampler. Defined here
    /// rather than in `source::sim` because assembling readings is the
    /// sampler's job.
    pub fn snapshot(&self, seq: u64, t_ms: Millis, me: &str) -> Snapshot {
        let mut asm = Assembler::new(self.info().gpus.len());
        for g in 0..self.info().gpus.len() {
            let (normal, slow) = self.readings(g as u32, t_ms);
            asm.fold_normal(g, Ok(normal));
            asm.fold_slow(g, Ok(slow));
        }
        let mut snap = asm.publish(seq, t_ms);
        self.enrich(t_ms, me, &mut snap.procs);
        snap
    }

    /// `count` snapshots one `step_ms` apart from `t0_ms`, with the events
    /// between consecutive ones, as the sampler would send them.
    pub fn snapshots(&self, t0_ms: Millis, step_ms: u64, count: u64, me: &str) -> Vec<Snapshot> {
        let mut out: Vec<Snapshot> = Vec::with_capacity(count as usize);
        let mut counts = super::OomCounts::default();
        for i in 0..count {
            let mut s = self.snapshot(i, t0_ms + i * step_ms, me);
            if let Some(prev) = out.last() {
                let mut ev = super::diff_events(prev, &s, &mut counts);
                ev.append(&mut s.events);
                s.events = ev;
            }
            out.push(s);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::units::GIB;
    use crate::model::{MemInfo, ProcKind};
    use crate::source::ProcMem;

    fn fast(used: u64, procs: &[(u32, u64)]) -> FastReading {
        FastReading {
            mem: Some(MemInfo {
                used,
                reserved: 0,
                free: 100 * GIB - used,
                total: 100 * GIB,
            }),
            procs: procs
                .iter()
                .map(|&(pid, mem)| ProcMem {
                    pid,
                    kind: ProcKind::Compute,
                    mem: Some(mem),
                })
                .collect(),
        }
    }

    fn normal(used: u64, procs: &[(u32, u64)], util: ProcUtilRead) -> NormalReading {
        NormalReading {
            fast: fast(used, procs),
            util_gpu: Some(50),
            proc_util: util,
            ..Default::default()
        }
    }

    #[test]
    fn fast_reads_between_snapshots_feed_the_peak() {
        let mut a = Assembler::new(1);
        a.fold_fast(0, Ok(fast(10 * GIB, &[(1, 10 * GIB)])));
        a.fold_fast(0, Ok(fast(40 * GIB, &[(1, 40 * GIB)])));
        a.fold_normal(
            0,
            Ok(normal(12 * GIB, &[(1, 12 * GIB)], ProcUtilRead::NotAsked)),
        );
        let s = a.publish(0, 1000);
        assert_eq!(s.gpus[0].mem.unwrap().used, 12 * GIB);
        assert_eq!(s.gpus[0].mem_peak, Some(40 * GIB));
        assert_eq!(s.gpus[0].mem_reads, 3);
        assert_eq!(s.procs[0].mem_peak, Some(40 * GIB));
        // The next interval starts afresh.
        a.fold_normal(
            0,
            Ok(normal(11 * GIB, &[(1, 11 * GIB)], ProcUtilRead::NotAsked)),
        );
        let s = a.publish(1, 2000);
        assert_eq!(s.gpus[0].mem_peak, Some(11 * GIB));
        assert_eq!(s.procs[0].mem_peak, Some(11 * GIB));
    }

    #[test]
    fn process_utilisation_is_kept_between_reads_and_missing_means_idle() {
        let mut a = Assembler::new(1);
        let u = ProcUtil {
            pid: 1,
            sm: Some(80),
            mem: Some(20),
            enc: Some(0),
            dec: Some(0),
        };
        a.fold_normal(
            0,
            Ok(normal(
                GIB,
                &[(1, GIB), (2, GIB)],
                ProcUtilRead::Samples(vec![u]),
            )),
        );
        let s = a.publish(0, 0);
        assert_eq!(s.procs[0].sm_util, Some(80));
        assert_eq!(
            s.procs[1].sm_util,
            Some(0),
            "listed without a sample = idle"
        );
        a.fold_normal(
            0,
            Ok(normal(GIB, &[(1, GIB), (2, GIB)], ProcUtilRead::NotAsked)),
        );
        let s = a.publish(1, 1);
        assert_eq!(s.procs[0].sm_util, Some(80), "kept until the next read");
        assert_eq!(s.procs[1].sm_util, Some(0));
        a.fold_normal(0, Ok(normal(GIB, &[(1, GIB)], ProcUtilRead::Unsupported)));
        assert_eq!(a.publish(2, 2).procs[0].sm_util, None, "unsupported = N/A");
    }

    #[test]
    fn a_process_started_since_the_last_utilisation_read_is_not_called_idle() {
        let mut a = Assembler::new(1);
        let u = |pid, sm| ProcUtil {
            pid,
            sm: Some(sm),
            mem: Some(0),
            enc: Some(0),
            dec: Some(0),
        };
        a.fold_normal(
            0,
            Ok(normal(
                GIB,
                &[(1, GIB)],
                ProcUtilRead::Samples(vec![u(1, 40)]),
            )),
        );
        a.publish(0, 0);
        // PID 2 appears between two reads: unknown, not 0 %.
        a.fold_normal(
            0,
            Ok(normal(GIB, &[(1, GIB), (2, GIB)], ProcUtilRead::NotAsked)),
        );
        let s = a.publish(1, 1);
        assert_eq!(s.procs[0].sm_util, Some(40));
        assert_eq!(s.procs[1].sm_util, None);
        // The next read knows it.
        a.fold_normal(
            0,
            Ok(normal(
                GIB,
                &[(1, GIB), (2, GIB)],
                ProcUtilRead::Samples(vec![u(2, 70)]),
            )),
        );
        let s = a.publish(2, 2);
        assert_eq!(s.procs[0].sm_util, Some(0), "listed, no sample: idle");
        assert_eq!(s.procs[1].sm_util, Some(70));
    }

    fn slow(due: SlowDue, energy_mj: u64, rx: u32) -> SlowReading {
        SlowReading {
            pcie_read: due.pcie,
            pcie_rx_kbs: due.pcie.then_some(rx),
            pcie_tx_kbs: due.pcie.then_some(rx / 2),
            energy_read: due.energy,
            energy_mj: due.energy.then_some(energy_mj),
            ecc_volatile: Some(0),
            xids: Vec::new(),
            ..Default::default()
        }
    }

    #[test]
    fn energy_and_pcie_are_held_between_the_rounds_that_read_them() {
        let mut a = Assembler::new(1);
        let figures = |a: &mut Assembler, seq| {
            let g = a.publish(seq, seq).gpus[0].clone();
            (g.energy_mj, g.pcie_rx_kbs, g.ecc_volatile)
        };
        a.fold_slow(0, Ok(slow(SlowDue::ALL, 1_000, 800)));
        assert_eq!(figures(&mut a, 0), (Some(1_000), Some(800), Some(0)));
        // Neither due: both kept (the counter holds its last value).
        a.fold_slow(0, Ok(slow(SlowDue::default(), 9, 9)));
        assert_eq!(figures(&mut a, 1), (Some(1_000), Some(800), Some(0)));
        // Energy due alone: it moves, PCIe is kept.
        let energy = SlowDue {
            pcie: false,
            energy: true,
        };
        a.fold_slow(0, Ok(slow(energy, 31_000, 9)));
        assert_eq!(figures(&mut a, 2), (Some(31_000), Some(800), Some(0)));
        // PCIe due alone: it moves, energy is kept.
        let pcie = SlowDue {
            pcie: true,
            energy: false,
        };
        a.fold_slow(0, Ok(slow(pcie, 9, 1_200)));
        assert_eq!(figures(&mut a, 3), (Some(31_000), Some(1_200), Some(0)));
        // Read and not supported: N/A, not the old figure.
        let mut none = slow(SlowDue::ALL, 0, 0);
        none.energy_mj = None;
        a.fold_slow(0, Ok(none));
        assert_eq!(figures(&mut a, 4).0, None);
    }

    #[test]
    fn energy_is_not_read_before_it_is_due_on_a_fresh_gpu() {
        // A first read that skipped energy (not the sampler's way, which
        // reads all at first) has nothing to keep: N/A until it is read.
        let mut a = Assembler::new(1);
        a.fold_slow(0, Ok(slow(SlowDue::default(), 5, 5)));
        assert_eq!(a.publish(0, 0).gpus[0].energy_mj, None);
    }

    #[test]
    fn a_lost_gpu_is_marked_and_the_others_stay_live() {
        let mut a = Assembler::new(2);
        a.fold_normal(0, Ok(normal(GIB, &[], ProcUtilRead::NotAsked)));
        a.fold_normal(
            1,
            Err(ProbeError::Lost {
                index: 1,
                reason: "GpuLost".into(),
            }),
        );
        let s = a.publish(0, 0);
        assert_eq!(s.gpus[0].state, GpuState::Ok);
        assert_eq!(s.gpus[1].state, GpuState::Lost);
        assert_eq!(s.gpus[1].mem, None);
        // No read this round: stale, last values kept.
        let s = a.publish(1, 1);
        assert_eq!(s.gpus[0].state, GpuState::Stale);
        assert_eq!(s.gpus[0].mem.unwrap().used, GIB);
    }
}
