//! The sampler: one async task owns the schedule; every probe call runs on a
//! thread of its own (one per GPU for the fast and normal lanes, one per GPU
//! for the slow lane, one for host facts), so a slow call on one GPU never
//! delays another GPU's sample. Readings fold into an [`Assembler`]; each
//! normal round publishes one `Arc<Snapshot>` to any number of consumers.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::mpsc::{self as std_mpsc, SyncSender, TrySendError};
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{broadcast, mpsc, watch};

use crate::model::{
    Event, EventKind, GpuSample, GpuState, Millis, ProcSample, ProcessKey, Snapshot, SystemInfo,
};
use crate::source::{
    FastReading, GpuProbe, HostFacts, NormalReading, ProbeError, ProcUtil, ProcUtilRead,
    SlowReading, Source,
};

/// A GPU within this share of full when a process exits makes that exit a
/// suspected OOM.
pub const OOM_NEAR_FULL_PCT: f64 = 95.0;

/// When each lane runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    /// Display interval: the normal lane, one snapshot per interval.
    pub interval: Duration,
    /// Fast lane (memory only); `None` turns it off.
    pub fast: Option<Duration>,
    /// Slow lane (energy, ECC, XID, and PCIe when due); `None` turns it off.
    pub slow: Option<Duration>,
    /// PCIe throughput period (whole slow-lane periods); `None` = off.
    pub pcie: Option<Duration>,
    /// Process utilisation period (rounded to whole intervals).
    pub proc_util: Duration,
    /// Burst sampling: from this memory % the fast lane runs at this period.
    pub burst: Option<(f64, Duration)>,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            interval: Duration::from_secs(1),
            fast: Some(Duration::from_millis(100)),
            slow: Some(Duration::from_secs(5)),
            pcie: Some(Duration::from_secs(30)),
            proc_util: Duration::from_secs(1),
            burst: Some((90.0, Duration::from_millis(50))),
        }
    }
}

impl Schedule {
    /// Slow rounds between two PCIe reads (`None`: never).
    fn pcie_every(&self) -> Option<u64> {
        let (pcie, slow) = (self.pcie?, self.slow?);
        Some(((pcie.as_millis() / slow.as_millis().max(1)) as u64).max(1))
    }

    /// Normal rounds between two process-utilisation reads (at least 1).
    fn proc_util_every(&self) -> u64 {
        let n = self.proc_util.as_millis() / self.interval.as_millis().max(1);
        (n as u64).max(1)
    }
}

pub fn now_ms() -> Millis {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as Millis)
        .unwrap_or(0)
}

// ---- assembling readings into snapshots ----------------------------------

/// What is known about one GPU between two snapshots.
#[derive(Debug, Default)]
struct GpuSlot {
    normal: Option<NormalReading>,
    /// Memory from the newest read of any lane.
    fast: Option<FastReading>,
    slow: Option<SlowReading>,
    util: HashMap<u32, ProcUtil>,
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
                        slot.util_supported = false;
                    }
                    ProcUtilRead::Samples(v) => {
                        slot.util = v.into_iter().map(|u| (u.pid, u)).collect();
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
                if !s.pcie_read
                    && let Some(old) = &slot.slow
                {
                    // PCIe is read less often: keep the last figures.
                    s.pcie_rx_kbs = old.pcie_rx_kbs;
                    s.pcie_tx_kbs = old.pcie_tx_kbs;
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
                }
                if let Some(s) = &slot.slow {
                    g.pcie_rx_kbs = s.pcie_rx_kbs;
                    g.pcie_tx_kbs = s.pcie_tx_kbs;
                    g.energy_mj = s.energy_mj;
                    g.ecc_volatile = s.ecc_volatile;
                }
                if let Some(f) = &slot.fast {
                    g.mem = f.mem;
                    g.mem_peak = slot.peaks.used.or(f.mem.map(|m| m.used));
                    g.mem_reads = slot.peaks.reads;
                    for p in &f.procs {
                        let util = slot.util.get(&p.pid);
                        let idle = slot.util_supported.then_some(0);
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

/// Events that follow from two consecutive snapshots: processes that came
/// and went (an exit on a nearly full GPU is a suspected OOM), GPUs lost.
pub fn diff_events(prev: &Snapshot, next: &Snapshot) -> Vec<Event> {
    let key = |p: &ProcSample| (p.gpu, p.key());
    let before: HashSet<(u32, ProcessKey)> = prev.procs.iter().map(key).collect();
    let after: HashSet<(u32, ProcessKey)> = next.procs.iter().map(key).collect();
    let mut out = Vec::new();
    for p in &next.procs {
        if !before.contains(&key(p)) {
            out.push(Event {
                t_ms: next.t_ms,
                kind: EventKind::ProcessStarted,
                gpu: Some(p.gpu),
                pid: Some(p.pid),
                message: format!("PID {} started on GPU {}: {}", p.pid, p.gpu, p.label()),
            });
        }
    }
    for p in &prev.procs {
        if after.contains(&key(p)) {
            continue;
        }
        let full = prev
            .gpus
            .iter()
            .find(|g| g.index == p.gpu)
            .and_then(|g| {
                let m = g.mem?;
                let peak = g.mem_peak.unwrap_or(m.used).max(m.used);
                Some((peak + m.reserved) as f64 * 100.0 / m.total.max(1) as f64)
            })
            .unwrap_or(0.0);
        let (kind, message) = if full >= OOM_NEAR_FULL_PCT {
            (
                EventKind::SuspectedOom,
                format!(
                    "PID {} exited on GPU {} at {:.0}% full (suspected OOM): {}",
                    p.pid,
                    p.gpu,
                    full,
                    p.label()
                ),
            )
        } else {
            (
                EventKind::ProcessExited,
                format!("PID {} exited on GPU {}: {}", p.pid, p.gpu, p.label()),
            )
        };
        out.push(Event {
            t_ms: next.t_ms,
            kind,
            gpu: Some(p.gpu),
            pid: Some(p.pid),
            message,
        });
    }
    for g in &next.gpus {
        let was_lost = prev
            .gpus
            .iter()
            .any(|o| o.index == g.index && o.state == GpuState::Lost);
        if g.state == GpuState::Lost && !was_lost {
            out.push(Event {
                t_ms: next.t_ms,
                kind: EventKind::GpuLost,
                gpu: Some(g.index),
                pid: None,
                message: format!("GPU {} is lost", g.index),
            });
        }
    }
    out
}

// ---- the live sampler ---------------------------------------------------

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

enum Request {
    Normal(Millis, bool),
    Slow(Millis, bool),
    /// Change (or stop, with `None`) the fast lane's period; the bool: read
    /// the process lists too (every other read), while bursting.
    FastPeriod(Option<Duration>, bool),
}

enum Reply {
    Normal(
        usize,
        Millis,
        Box<(Result<NormalReading, ProbeError>, Peaks)>,
        u32,
    ),
    Slow(usize, Result<SlowReading, ProbeError>),
    Host(Snapshot),
}

/// A running sampler. Dropping it stops the schedule; worker threads end
/// when their current call returns.
pub struct Sampler {
    pub system: Arc<SystemInfo>,
    pub schedule: Schedule,
    tx: broadcast::Sender<Arc<Snapshot>>,
    latest: watch::Receiver<Option<Arc<Snapshot>>>,
    _stop: watch::Sender<bool>,
}

impl Sampler {
    /// Starts sampling `source` on `schedule`. Must be called inside a tokio
    /// runtime.
    pub fn spawn(source: Box<dyn Source>, schedule: Schedule) -> Sampler {
        let system = source.system();
        // Small: the channel keeps its last values alive, and a consumer
        // that falls behind skips to the newest anyway.
        let (tx, _) = broadcast::channel(8);
        let (latest_tx, latest) = watch::channel(None);
        let (stop_tx, stop_rx) = watch::channel(false);
        let (reply_tx, reply_rx) = mpsc::unbounded_channel();
        let n = system.gpus.len();
        let main: Vec<_> = (0..n)
            .map(|i| {
                let w = spawn_worker(
                    format!("vw-gpu{i}"),
                    i,
                    source.probe(i),
                    reply_tx.clone(),
                    schedule.fast,
                );
                Worker::new(w)
            })
            .collect();
        let slow: Vec<_> = if schedule.slow.is_some() {
            (0..n)
                .map(|i| {
                    let w = spawn_worker(
                        format!("vw-gpu{i}-slow"),
                        i,
                        source.probe(i),
                        reply_tx.clone(),
                        None,
                    );
                    Worker::new(w)
                })
                .collect()
        } else {
            Vec::new()
        };
        let host = spawn_host(source.host_facts(), reply_tx);
        let run = Run {
            schedule,
            main,
            slow,
            host,
            asm: Assembler::new(n),
            tx: tx.clone(),
            latest: latest_tx,
            prev: None,
            seq: 0,
            bursting: vec![false; n],
        };
        tokio::spawn(run.run(reply_rx, stop_rx));
        Sampler {
            system,
            schedule,
            tx,
            latest,
            _stop: stop_tx,
        }
    }

    /// Every snapshot from now on (a slow consumer sees `Lagged`).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Snapshot>> {
        self.tx.subscribe()
    }

    /// The newest snapshot, for consumers that only want the latest.
    pub fn latest(&self) -> watch::Receiver<Option<Arc<Snapshot>>> {
        self.latest.clone()
    }
}

/// A GPU's reader thread: answers normal and slow requests, and between
/// them reads the fast lane on its own timer, keeping the peaks.
fn spawn_worker(
    name: String,
    gpu: usize,
    mut probe: Box<dyn GpuProbe>,
    out: mpsc::UnboundedSender<Reply>,
    fast: Option<Duration>,
) -> SyncSender<Request> {
    use std::sync::mpsc::RecvTimeoutError;
    use std::time::Instant;
    let (tx, rx) = std_mpsc::sync_channel::<Request>(4);
    // If the thread cannot start, `rx` is dropped with the closure: every
    // request then fails and the GPU shows as stale instead of a crash.
    let _ = thread::Builder::new().name(name).spawn(move || {
        let mut fast = fast;
        let mut with_procs = false;
        let mut ticks = 0u64;
        let mut peaks = Peaks::default();
        let mut next = Instant::now();
        loop {
            let req = match fast {
                Some(period) => {
                    let wait = next.saturating_duration_since(Instant::now());
                    match rx.recv_timeout(wait) {
                        Ok(r) => Some(r),
                        Err(RecvTimeoutError::Timeout) => {
                            ticks += 1;
                            let r = if with_procs && ticks.is_multiple_of(2) {
                                probe.fast(now_ms())
                            } else {
                                probe.memory(now_ms())
                            };
                            peaks.add(&r);
                            next += period;
                            let now = Instant::now();
                            if next < now {
                                // Fell behind (a slow call): skip, don't burst.
                                next = now + period;
                            }
                            None
                        }
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
                None => match rx.recv() {
                    Ok(r) => Some(r),
                    Err(_) => break,
                },
            };
            let reply = match req {
                None => continue,
                Some(Request::Normal(t, util)) => {
                    let r = probe.normal(t, util);
                    let lag = now_ms().saturating_sub(t) as u32;
                    Reply::Normal(gpu, t, Box::new((r, std::mem::take(&mut peaks))), lag)
                }
                Some(Request::Slow(t, pcie)) => Reply::Slow(gpu, probe.slow(t, pcie)),
                Some(Request::FastPeriod(p, procs)) => {
                    fast = p;
                    with_procs = procs;
                    next = Instant::now() + p.unwrap_or_default();
                    continue;
                }
            };
            if out.send(reply).is_err() {
                break;
            }
        }
    });
    tx
}

fn spawn_host(
    mut facts: Box<dyn HostFacts>,
    out: mpsc::UnboundedSender<Reply>,
) -> SyncSender<Snapshot> {
    let (tx, rx) = std_mpsc::sync_channel::<Snapshot>(2);
    let _ = thread::Builder::new()
        .name("vw-host".into())
        .spawn(move || {
            while let Ok(mut snap) = rx.recv() {
                facts.enrich(snap.t_ms, &mut snap.procs);
                if out.send(Reply::Host(snap)).is_err() {
                    break;
                }
            }
        });
    tx
}

/// A worker thread's request queue and how many requests it has not
/// answered yet.
struct Worker {
    tx: SyncSender<Request>,
    in_flight: u32,
}

impl Worker {
    fn new(tx: SyncSender<Request>) -> Worker {
        Worker { tx, in_flight: 0 }
    }

    /// Sends `req` if fewer than `limit` requests are in flight.
    fn offer(&mut self, req: Request, limit: u32) -> bool {
        if self.in_flight >= limit {
            return false;
        }
        let ok = self.tx.try_send(req).is_ok();
        if ok {
            self.in_flight += 1;
        }
        ok
    }

    fn answered(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }
}

struct Run {
    schedule: Schedule,
    main: Vec<Worker>,
    slow: Vec<Worker>,
    host: SyncSender<Snapshot>,
    asm: Assembler,
    tx: broadcast::Sender<Arc<Snapshot>>,
    latest: watch::Sender<Option<Arc<Snapshot>>>,
    prev: Option<Arc<Snapshot>>,
    seq: u64,
    /// GPUs whose fast lane runs at the burst period.
    bursting: Vec<bool>,
}

/// One normal round in progress.
struct Round {
    t_ms: Millis,
    waiting: HashSet<usize>,
    deadline: tokio::time::Instant,
}

impl Run {
    async fn run(
        mut self,
        mut replies: mpsc::UnboundedReceiver<Reply>,
        mut stop: watch::Receiver<bool>,
    ) {
        use tokio::time::{MissedTickBehavior, interval};
        let mut normal = interval(self.schedule.interval);
        normal.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let slow_period = self.schedule.slow.unwrap_or(Duration::from_secs(3600));
        let mut slow = interval(slow_period);
        slow.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let util_every = self.schedule.proc_util_every();
        let pcie_every = self.schedule.pcie_every();
        let mut rounds = 0u64;
        let mut slow_rounds = 0u64;
        let mut round: Option<Round> = None;
        // Half the interval, but never more than 500 ms: a GPU that has not
        // answered by then is shown stale rather than holding up the others.
        let grace = (self.schedule.interval / 2).min(Duration::from_millis(500));
        loop {
            let deadline = round.as_ref().map(|r| r.deadline);
            tokio::select! {
                biased;
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() { break; }
                }
                reply = replies.recv() => {
                    let Some(reply) = reply else { break };
                    match reply {
                        Reply::Slow(g, r) => {
                            self.slow[g].answered();
                            self.asm.fold_slow(g, r);
                        }
                        Reply::Normal(g, t, read, lag) => {
                            let (r, peaks) = *read;
                            self.main[g].answered();
                            self.asm.fold_peaks(g, peaks);
                            self.asm.fold_normal_after(g, r, lag);
                            if let Some(cur) = round.as_mut()
                                && cur.t_ms == t
                            {
                                cur.waiting.remove(&g);
                                if cur.waiting.is_empty()
                                    && let Some(r) = round.take()
                                {
                                    self.close_round(r);
                                }
                            }
                        }
                        Reply::Host(snap) => self.publish(snap),
                    }
                }
                _ = normal.tick() => {
                    if let Some(r) = round.take() {
                        self.close_round(r);
                    }
                    let t = now_ms();
                    let with_util = rounds.is_multiple_of(util_every);
                    rounds += 1;
                    let mut waiting = HashSet::new();
                    for (i, w) in self.main.iter_mut().enumerate() {
                        // A GPU still busy with an older normal read is
                        // shown stale.
                        if w.offer(Request::Normal(t, with_util), 1) {
                            waiting.insert(i);
                        }
                    }
                    let r = Round { t_ms: t, waiting, deadline: tokio::time::Instant::now() + grace };
                    if r.waiting.is_empty() {
                        self.close_round(r);
                    } else {
                        round = Some(r);
                    }
                }
                _ = slow.tick(), if self.schedule.slow.is_some() => {
                    let t = now_ms();
                    let pcie = pcie_every.is_some_and(|n| slow_rounds.is_multiple_of(n));
                    slow_rounds += 1;
                    for w in &mut self.slow {
                        w.offer(Request::Slow(t, pcie), 1);
                    }
                }
                _ = sleep_until(deadline), if deadline.is_some() => {
                    if let Some(r) = round.take() {
                        self.close_round(r);
                    }
                }
            }
        }
    }

    /// Assembles the round's snapshot and hands it to the host thread.
    fn close_round(&mut self, r: Round) {
        let snap = self.asm.publish(self.seq, r.t_ms);
        self.seq += 1;
        if let Err(TrySendError::Full(snap) | TrySendError::Disconnected(snap)) =
            self.host.try_send(snap)
        {
            // Host facts are late: publish without them rather than wait.
            self.publish(snap);
        }
    }

    /// Speeds the fast lane up on GPUs above the burst level, and back down
    /// once they are 2 points below it.
    fn adjust_bursts(&mut self, snap: &Snapshot) {
        let (Some(fast), Some((level, burst))) = (self.schedule.fast, self.schedule.burst) else {
            return;
        };
        for g in &snap.gpus {
            let i = g.index as usize;
            let Some(pct) = g.mem.map(|m| {
                let peak = g.mem_peak.unwrap_or(m.used).max(m.used);
                (peak + m.reserved) as f64 * 100.0 / m.total.max(1) as f64
            }) else {
                continue;
            };
            let Some(on) = self.bursting.get(i).copied() else {
                continue;
            };
            let want = if on { pct >= level - 2.0 } else { pct >= level };
            if want != on
                && let Some(w) = self.main.get(i)
                && w.tx
                    .try_send(Request::FastPeriod(
                        Some(if want { burst } else { fast }),
                        want,
                    ))
                    .is_ok()
            {
                self.bursting[i] = want;
            }
        }
    }

    fn publish(&mut self, mut snap: Snapshot) {
        if let Some(prev) = &self.prev {
            let mut ev = diff_events(prev, &snap);
            ev.append(&mut snap.events);
            snap.events = ev;
        }
        self.adjust_bursts(&snap);
        let snap = Arc::new(snap);
        self.prev = Some(snap.clone());
        let _ = self.tx.send(snap.clone());
        let _ = self.latest.send(Some(snap));
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Reads every lane of every GPU once, each GPU on its own thread, plus
/// host facts: what `vramwatch snapshot` prints. CPU % of the processes is
/// measured over at least `cpu_window`.
pub fn sample_once(source: &dyn Source, cpu_window: Duration) -> Snapshot {
    let n = source.system().gpus.len();
    let mut host = source.host_facts();
    let t = now_ms();
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let mut probe = source.probe(i);
            thread::spawn(move || {
                let first = probe.fast(t);
                let normal = probe.normal(t, true);
                let slow = probe.slow(t, true);
                (first, normal, slow)
            })
        })
        .collect();
    let mut asm = Assembler::new(n);
    let mut pids = Vec::new();
    for (i, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok((first, normal, slow)) => {
                if let Ok(f) = &first {
                    pids.extend(f.procs.iter().map(|p| p.pid));
                }
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
    if host.prime(&pids) {
        thread::sleep(cpu_window);
    }
    host.enrich(t, &mut snap.procs);
    snap
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
        a.fold_normal(0, Ok(normal(GIB, &[(1, GIB)], ProcUtilRead::NotAsked)));
        assert_eq!(a.publish(1, 1).procs[0].sm_util, Some(80));
        a.fold_normal(0, Ok(normal(GIB, &[(1, GIB)], ProcUtilRead::Unsupported)));
        assert_eq!(a.publish(2, 2).procs[0].sm_util, None, "unsupported = N/A");
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

    #[test]
    fn exits_near_full_are_suspected_ooms() {
        let snap = |procs: Vec<ProcSample>, used: u64, peak: u64| Snapshot {
            t_ms: 5,
            gpus: vec![GpuSample {
                index: 0,
                mem: Some(MemInfo {
                    used,
                    reserved: GIB,
                    free: 0,
                    total: 100 * GIB,
                }),
                mem_peak: Some(peak),
                ..Default::default()
            }],
            procs,
            ..Default::default()
        };
        let p = |pid| ProcSample {
            pid,
            start_time: 7,
            ..Default::default()
        };
        let a = snap(vec![p(1), p(2)], 80 * GIB, 98 * GIB);
        let b = snap(vec![p(2), p(3)], 10 * GIB, 10 * GIB);
        let ev = diff_events(&a, &b);
        let kinds: Vec<_> = ev.iter().map(|e| (e.kind, e.pid)).collect();
        assert_eq!(
            kinds,
            vec![
                (EventKind::ProcessStarted, Some(3)),
                (EventKind::SuspectedOom, Some(1))
            ]
        );
        // Far from full: a plain exit.
        let a = snap(vec![p(1)], 50 * GIB, 50 * GIB);
        let ev = diff_events(&a, &snap(vec![], 0, 0));
        assert_eq!(ev[0].kind, EventKind::ProcessExited);
        // A recycled PID is a new process.
        let mut q = p(2);
        q.start_time = 8;
        let ev = diff_events(&snap(vec![p(2)], 0, 0), &snap(vec![q], 0, 0));
        assert_eq!(ev.len(), 2);
    }

    #[test]
    fn schedule_rounds_process_utilisation_to_whole_intervals() {
        let s = Schedule {
            proc_util: Duration::from_millis(2500),
            ..Default::default()
        };
        assert_eq!(s.proc_util_every(), 2);
        let s = Schedule {
            proc_util: Duration::from_millis(10),
            ..Default::default()
        };
        assert_eq!(s.proc_util_every(), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_live_sampler_publishes_snapshots_with_fast_lane_reads() {
        let world = crate::source::sim::SimWorld::new("demo", 1, now_ms()).unwrap();
        let source = crate::source::sim::SimSource::new(world, "me".into());
        let schedule = Schedule {
            interval: Duration::from_millis(200),
            fast: Some(Duration::from_millis(20)),
            slow: Some(Duration::from_millis(400)),
            proc_util: Duration::from_millis(200),
            burst: None,
            pcie: Some(Duration::from_millis(400)),
        };
        let sampler = Sampler::spawn(Box::new(source), schedule);
        let mut rx = sampler.subscribe();
        let mut last = None;
        for _ in 0..4 {
            let s = tokio::time::timeout(Duration::from_secs(5), rx.recv())
                .await
                .expect("a snapshot within 5 s")
                .expect("channel open");
            last = Some(s);
        }
        let s = last.unwrap();
        assert_eq!(s.gpus.len(), 4);
        assert!(s.seq >= 3);
        assert!(s.gpus.iter().all(|g| g.state == GpuState::Ok));
        assert!(
            s.gpus[0].mem_reads >= 2,
            "fast lane fed {} reads",
            s.gpus[0].mem_reads
        );
        assert!(
            s.procs.iter().all(|p| p.user.is_some()),
            "host facts filled"
        );
    }
}
