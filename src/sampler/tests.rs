//! The live sampler, and its host stage's ordering.

use std::time::Duration;

use super::counting::CountingSource;
use super::*;
use crate::model::{EventKind, GpuState, ProcSample};
use crate::source::select::Selected;
use crate::source::sim::{SimSource, SimWorld};
use crate::source::{GpuProbe, HostFacts, Source};

fn quick_schedule() -> Schedule {
    Schedule {
        interval: Duration::from_millis(200),
        fast: Some(Duration::from_millis(20)),
        slow: Some(Duration::from_millis(400)),
        proc_util: Duration::from_millis(200),
        proc_util_shown: Duration::from_millis(200),
        burst: None,
        preview: false,
        pcie: Some(Duration::from_millis(400)),
        energy: Some(Duration::from_millis(400)),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_live_sampler_publishes_snapshots_with_fast_lane_reads() {
    let world = SimWorld::new("demo", 1, now_ms()).unwrap();
    let source = SimSource::new(world, "me".into());
    let (_sampler, mut rx) = Sampler::spawn(Box::new(source), quick_schedule());
    let mut last = None;
    for _ in 0..4 {
        let s = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("a snapshot within 5 s")
            .expect("stream open");
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

/// Rounds of 50 ms, nothing but the normal lane, process utilisation and
/// host facts every fifth round while nobody looks, every round on screen.
fn every_fifth_round() -> Schedule {
    Schedule {
        interval: Duration::from_millis(50),
        fast: None,
        slow: None,
        pcie: None,
        energy: None,
        proc_util: Duration::from_millis(250),
        proc_util_shown: Duration::from_millis(50),
        burst: None,
        preview: false,
    }
}

#[tokio::test(flavor = "current_thread")]
async fn process_utilisation_is_read_every_round_only_while_it_is_on_screen() {
    let world = SimWorld::new("demo", 5, now_ms()).unwrap();
    let source = CountingSource::new(Box::new(SimSource::new(world, "me".into())));
    let reads = source.reads();
    let gpus = source.system().gpus.len();
    let (sampler, mut rx) = Sampler::spawn(Box::new(source), every_fifth_round());
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("a snapshot within 10 s")
            .expect("stream open")
    };
    let per_gpu = |reads: &counting::UtilReads| (0..gpus).map(|g| reads.of(g)).collect::<Vec<_>>();
    // Hidden (as record and serve): rounds 0, 5, 10, 15 of 20 (one more
    // round may have started when the 20th snapshot arrives; a GPU late
    // under load misses a round). The bounds allow for both.
    for _ in 0..20 {
        next().await;
    }
    for (g, n) in per_gpu(&reads).into_iter().enumerate() {
        assert!(
            (3..=5).contains(&n),
            "GPU {g}: {n} reads in 20 hidden rounds"
        );
    }
    // On screen: the next round reads it, and every round after.
    let before = per_gpu(&reads);
    sampler.on_screen.set_util(true);
    next().await;
    next().await;
    for (g, n) in per_gpu(&reads).into_iter().enumerate() {
        assert!(
            n > before[g],
            "GPU {g}: not read in the round after it was shown"
        );
    }
    let before = per_gpu(&reads);
    for _ in 0..20 {
        next().await;
    }
    for (g, n) in per_gpu(&reads).into_iter().enumerate() {
        let shown = n - before[g];
        assert!(
            (16..=21).contains(&shown),
            "GPU {g}: {shown} reads in 20 shown rounds"
        );
    }
    // Hidden again: back to every fifth round.
    sampler.on_screen.set_util(false);
    next().await;
    let before = per_gpu(&reads);
    for _ in 0..20 {
        next().await;
    }
    for (g, n) in per_gpu(&reads).into_iter().enumerate() {
        let hidden = n - before[g];
        assert!(
            (3..=5).contains(&hidden),
            "GPU {g}: {hidden} reads in 20 hidden rounds"
        );
    }
    assert_eq!(reads.total(), per_gpu(&reads).iter().sum::<u64>());
}

/// A source whose host facts are slow on every `every`-th call, and note
/// per call whether it was a fresh read.
struct SlowHost {
    inner: SimSource,
    every: u32,
    delay: Duration,
    log: Arc<std::sync::Mutex<Vec<(Millis, bool)>>>,
}

impl SlowHost {
    fn new(world: SimWorld, every: u32, delay: Duration) -> SlowHost {
        SlowHost {
            inner: SimSource::new(world, "me".into()),
            every,
            delay,
            log: Arc::default(),
        }
    }
}

struct SlowFacts {
    inner: Box<dyn HostFacts>,
    calls: u32,
    every: u32,
    delay: Duration,
    log: Arc<std::sync::Mutex<Vec<(Millis, bool)>>>,
}

impl HostFacts for SlowFacts {
    fn enrich(&mut self, t_ms: Millis, procs: &mut [ProcSample], fresh: bool) {
        self.calls += 1;
        self.log.lock().unwrap().push((t_ms, fresh));
        if self.calls.is_multiple_of(self.every) {
            std::thread::sleep(self.delay);
        }
        self.inner.enrich(t_ms, procs, fresh);
    }
}

impl Source for SlowHost {
    fn system(&self) -> Arc<SystemInfo> {
        self.inner.system()
    }
    fn probe(&self, index: usize) -> Box<dyn GpuProbe> {
        self.inner.probe(index)
    }
    fn host_facts(&self) -> Box<dyn HostFacts> {
        Box::new(SlowFacts {
            inner: self.inner.host_facts(),
            calls: 0,
            every: self.every,
            delay: self.delay,
            log: self.log.clone(),
        })
    }
}

/// The events a snapshot must carry, by kind, GPU and PID, given the one
/// before it.
fn diff_keys(prev: &Snapshot, next: &Snapshot) -> Vec<(EventKind, Option<u32>, Option<u32>)> {
    let mut v: Vec<_> = diff_events(prev, next, &mut OomCounts::default())
        .into_iter()
        .map(|e| (e.kind, e.gpu, e.pid))
        .collect();
    v.sort_by_key(|k| (format!("{:?}", k.0), k.1, k.2));
    v
}

#[tokio::test(flavor = "current_thread")]
async fn a_slow_host_stage_never_reorders_snapshots_nor_invents_events() {
    // Host facts take 2.5 intervals on every fourth round: rounds pile up
    // behind it. What comes out must still be in order, each snapshot's
    // events those of the one just before it.
    let world = SimWorld::new("demo", 3, now_ms()).unwrap();
    let source = SlowHost::new(world, 4, Duration::from_millis(125));
    let schedule = Schedule {
        interval: Duration::from_millis(50),
        fast: None,
        slow: None,
        pcie: None,
        energy: None,
        proc_util: Duration::from_millis(50),
        proc_util_shown: Duration::from_millis(50),
        burst: None,
        preview: false,
    };
    let (sampler, mut rx) = Sampler::spawn(Box::new(source), schedule);
    let mut got: Vec<Arc<Snapshot>> = Vec::new();
    while got.len() < 60 {
        let s = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("a snapshot within 10 s")
            .expect("stream open");
        got.push(s);
    }
    drop(sampler);
    // Drain what was assembled before the stop.
    while let Some(s) = rx.recv().await {
        got.push(s);
    }
    let mut without_facts = 0;
    for w in got.windows(2) {
        assert!(
            w[1].seq > w[0].seq,
            "out of order: {} after {}",
            w[1].seq,
            w[0].seq
        );
        let carried: Vec<_> = {
            let mut v: Vec<_> = w[1]
                .events
                .iter()
                .filter(|e| {
                    matches!(
                        e.kind,
                        EventKind::ProcessStarted
                            | EventKind::ProcessExited
                            | EventKind::SuspectedOom
                    )
                })
                .map(|e| (e.kind, e.gpu, e.pid))
                .collect();
            v.sort_by_key(|k| (format!("{:?}", k.0), k.1, k.2));
            v
        };
        assert_eq!(carried, diff_keys(&w[0], &w[1]), "seq {}", w[1].seq);
        without_facts += usize::from(w[1].procs.iter().any(|p| p.user.is_none()));
    }
    // The slow rounds were real: some snapshots went out without host facts
    // rather than late, and most had them.
    assert!(without_facts > 0, "the host stage was never late");
    assert!(
        without_facts < got.len() / 2,
        "{without_facts} of {}",
        got.len()
    );
    // No process is reported started twice in a row without an exit.
    let started = got
        .iter()
        .flat_map(|s| s.events.iter())
        .filter(|e| e.kind == EventKind::ProcessStarted)
        .count();
    let exited = got
        .iter()
        .flat_map(|s| s.events.iter())
        .filter(|e| matches!(e.kind, EventKind::ProcessExited | EventKind::SuspectedOom))
        .count();
    assert!(
        started <= exited + got[0].procs.len() + 8,
        "{started} starts, {exited} exits"
    );
}

fn snap(seq: u64) -> Snapshot {
    Snapshot {
        seq,
        t_ms: 1000 + seq,
        ..Default::default()
    }
}

#[test]
fn the_host_stage_lets_a_late_snapshot_go_without_facts_in_order() {
    let (tx, rx) = std::sync::mpsc::sync_channel(2);
    let mut h = HostStage::new(tx);
    let seqs = |v: Vec<Snapshot>| v.iter().map(|s| s.seq).collect::<Vec<_>>();
    // 0 goes to the host thread; 1 waits behind it.
    assert_eq!(seqs(h.push(snap(0), true)), Vec::<u64>::new());
    assert_eq!(rx.try_recv().unwrap().0.seq, 0);
    // 1 is due a fresh read of CPU % and RSS; 2 and 3 are not.
    assert_eq!(seqs(h.push(snap(1), true)), Vec::<u64>::new());
    // 2 arrives while 0 is still out: 0 goes without facts.
    assert_eq!(seqs(h.push(snap(2), false)), vec![0]);
    assert_eq!(h.late, 1);
    // 3 arrives: 0 is still with the thread, so 1 goes as it is.
    assert_eq!(seqs(h.push(snap(3), false)), vec![1]);
    // 0 comes back: dropped (already out), and 2 goes to the thread, with
    // the fresh read 1 never got.
    assert_eq!(seqs(h.back(snap(0))), Vec::<u64>::new());
    let (two, fresh) = rx.try_recv().unwrap();
    assert_eq!((two.seq, fresh), (2, true));
    // 2 comes back enriched: it goes out; 3 goes to the thread.
    let mut two = snap(2);
    two.procs.push(ProcSample::default());
    let out = h.back(two);
    assert_eq!(seqs(out.clone()), vec![2]);
    assert_eq!(out[0].procs.len(), 1, "the enriched copy went out");
    let (three, fresh) = rx.try_recv().unwrap();
    assert_eq!((three.seq, fresh), (3, false));
    // Stop: 3's copy goes out.
    assert_eq!(seqs(h.drain()), vec![3]);
}

#[test]
fn the_publisher_drops_anything_not_newer_than_the_last() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut p = Publisher::new(tx);
    assert!(p.send(snap(5)).unwrap().is_some());
    assert!(p.send(snap(5)).unwrap().is_none());
    assert!(p.send(snap(4)).unwrap().is_none());
    assert!(p.send(snap(6)).unwrap().is_some());
    assert_eq!(rx.try_recv().unwrap().seq, 5);
    assert_eq!(rx.try_recv().unwrap().seq, 6);
    assert!(rx.try_recv().is_err());
}

#[tokio::test(flavor = "current_thread")]
async fn host_facts_are_read_afresh_every_round_only_while_they_are_on_screen() {
    let world = SimWorld::new("demo", 5, now_ms()).unwrap();
    // Never slow: only the log of (t_ms, fresh) per call is wanted.
    let source = SlowHost::new(world, u32::MAX, Duration::ZERO);
    let log = source.log.clone();
    let (sampler, mut rx) = Sampler::spawn(Box::new(source), every_fifth_round());
    let mut got: Vec<Arc<Snapshot>> = Vec::new();
    let mut take = async |n: usize, got: &mut Vec<Arc<Snapshot>>| {
        for _ in 0..n {
            let s = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .expect("a snapshot within 10 s")
                .expect("stream open");
            got.push(s);
        }
    };
    let calls = || log.lock().unwrap().len();
    // The gaps between fresh reads among the calls from `from` (a round
    // whose snapshot went out late passes its fresh read to the next, so
    // a gap may be 4 or 6 under load; 5 otherwise).
    let gaps = |from: usize| {
        let log = log.lock().unwrap();
        let fresh: Vec<usize> = (from..log.len()).filter(|&i| log[i].1).collect();
        fresh.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>()
    };
    // Hidden (as record and serve): every fifth round, the first included.
    take(20, &mut got).await;
    assert!(log.lock().unwrap()[0].1, "the first round reads them");
    let g = gaps(0);
    assert!(g.len() >= 2, "{g:?}");
    assert!(g.iter().all(|d| (4..=6).contains(d)), "{g:?}");
    // Between fresh reads a process keeps its CPU %: compare each snapshot
    // enriched without a fresh read with the one enriched just before it.
    {
        let log = log.lock().unwrap();
        let by_t = |t: Millis| {
            got.iter()
                .find(|s| s.t_ms == t && s.procs.iter().any(|p| p.user.is_some()))
        };
        let mut compared = 0;
        for w in log.windows(2) {
            let ((t0, _), (t1, fresh)) = (w[0], w[1]);
            let (Some(a), Some(b), false) = (by_t(t0), by_t(t1), fresh) else {
                continue;
            };
            for p in &b.procs {
                if let Some(q) = a.procs.iter().find(|q| q.pid == p.pid && q.gpu == p.gpu) {
                    assert_eq!(p.cpu_pct, q.cpu_pct, "PID {} between fresh reads", p.pid);
                    compared += 1;
                }
            }
        }
        assert!(compared > 0, "nothing compared");
    }
    // On screen: once the rounds already closed are out, every round reads
    // them.
    sampler.on_screen.set_host(true);
    take(3, &mut got).await;
    let from = calls();
    take(10, &mut got).await;
    let log_now = log.lock().unwrap().clone();
    assert!(
        log_now[from..].iter().all(|(_, fresh)| *fresh),
        "{:?}",
        &log_now[from..]
    );
    // Process utilisation on screen says nothing about host facts.
    sampler.on_screen.set_host(false);
    sampler.on_screen.set_util(true);
    take(3, &mut got).await;
    let from = calls();
    take(20, &mut got).await;
    let g = gaps(from);
    assert!(g.len() >= 2, "{g:?}");
    assert!(g.iter().all(|d| (4..=6).contains(d)), "{g:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_preview_comes_first_and_the_full_read_right_after_it() {
    let world = SimWorld::new("demo", 1, now_ms()).unwrap();
    // Never slow: the log of (t_ms, fresh) per host-facts call is wanted.
    let source = SlowHost::new(world, u32::MAX, Duration::ZERO);
    let log = source.log.clone();
    // A 30 s interval: without the preview's restart the second snapshot
    // would come 30 s after the first.
    let schedule = Schedule {
        interval: Duration::from_secs(30),
        preview: true,
        ..quick_schedule()
    };
    let (_sampler, mut rx) = Sampler::spawn(Box::new(source), schedule);
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("a snapshot within 10 s")
            .expect("stream open")
    };
    let first = next().await;
    assert_eq!(first.seq, 0);
    assert!(first.gpus.iter().all(|g| g.mem.is_some()), "memory read");
    assert!(!first.procs.is_empty(), "process lists read");
    assert!(
        first
            .gpus
            .iter()
            .all(|g| g.util_gpu.is_none() && g.power_mw.is_none()),
        "nothing but memory and processes in the preview"
    );
    assert!(first.procs.iter().all(|p| p.sm_util.is_none()));
    let full = next().await;
    assert_eq!(full.seq, 1);
    assert!(
        full.t_ms - first.t_ms < 30_000,
        "the full read waited an interval"
    );
    assert!(
        full.gpus
            .iter()
            .all(|g| g.util_gpu.is_some() && g.power_mw.is_some())
    );
    assert!(
        full.procs.iter().any(|p| p.sm_util.is_some()),
        "process utilisation in the first full read"
    );
    // Host CPU % and RSS are read afresh with the full read, not the
    // preview ~10 ms before it (a CPU % over 10 ms would be noise).
    let fresh: Vec<bool> = log.lock().unwrap().iter().map(|&(_, f)| f).collect();
    assert_eq!(fresh[..2], [false, true], "{fresh:?}");
}

/// A simulated source of four GPUs (the `demo` world).
fn demo_source() -> Box<dyn Source> {
    let world = SimWorld::new("demo", 1, 1_764_000_000_000).unwrap();
    Box::new(SimSource::new(world, "me".into()))
}

/// `--gpu` through the sampler: a chosen subset is numbered from zero and
/// keeps each GPU's processes and host facts.
#[test]
fn the_selected_source_numbers_its_gpus_from_zero() {
    let inner = demo_source();
    let all = inner.system();
    let t = 1_764_000_030_000;
    let whole = sample_once(inner.as_ref(), std::time::Duration::ZERO);
    let s = Selected::new(inner, vec![2, 1]);
    let sys = s.system();
    assert_eq!(sys.gpus.len(), 2);
    assert_eq!((sys.gpus[0].index, sys.gpus[1].index), (0, 1));
    assert_eq!(sys.gpus[0].uuid, all.gpus[2].uuid);
    assert_eq!(sys.gpus[1].pci_bus_id, all.gpus[1].pci_bus_id);
    assert_eq!(sys.host, all.host);
    let snap = sample_once(&s, std::time::Duration::ZERO);
    assert_eq!(snap.gpus.len(), 2);
    assert_eq!(snap.gpus[0].mem.unwrap().total, all.gpus[2].memory_total);
    // The processes of GPU 2 are shown on GPU 0, with their host facts.
    let on = |snap: &Snapshot, gpu: u32| -> Vec<u32> {
        snap.procs
            .iter()
            .filter(|p| p.gpu == gpu)
            .map(|p| p.pid)
            .collect()
    };
    assert_eq!(on(&snap, 0), on(&whole, 2));
    assert!(snap.procs.iter().all(|p| p.user.is_some()));
    let mut probe = s.probe(5);
    assert!(probe.fast(t).is_err());
    // Host facts are asked about the inner GPU: the simulated PyTorch
    // figures carry the UUID of the GPU the process is shown on.
    let s = Selected::new(demo_source(), vec![3, 0]);
    let snap = sample_once(&s, std::time::Duration::ZERO);
    let torch: Vec<_> = snap.procs.iter().filter(|p| p.torch.is_some()).collect();
    assert_eq!(torch.len(), 2);
    for p in torch {
        let uuid = p.torch.as_ref().unwrap().devices[0].uuid.clone().unwrap();
        assert_eq!(uuid, s.system().gpus[p.gpu as usize].uuid, "{}", p.pid);
    }
}
