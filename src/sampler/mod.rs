//! The sampler: the first stage of the pipeline (docs/ARCHITECTURE.md).
//!
//! One async task owns the schedule ([`schedule`]); every probe call runs on
//! a thread of its own ([`workers`]: one per GPU for the fast and normal
//! lanes, one per GPU for the slow lane, one for host facts), so a slow call
//! on one GPU never delays another GPU's sample. Readings fold into an
//! [`assemble::Assembler`]; each normal round becomes one snapshot, which
//! goes through the host-facts thread and then out, **in order**: every
//! snapshot leaves with a `seq` greater than the one before, and
//! [`events::diff_events`] always compares a snapshot with the one just
//! before it. Process utilisation, the most expensive call, is read every
//! `proc_util_shown` (2 s) while it is on screen ([`OnScreen`]), else every
//! `proc_util` (5 s) ([`schedule::UtilCadence`]); host CPU % and RSS every
//! interval while on screen, else every `proc_util`.

pub(crate) mod assemble;
pub(crate) mod counting;
pub(crate) mod events;
pub(crate) mod schedule;
mod workers;

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::sync::mpsc::{SyncSender, TrySendError};
use std::time::Duration;

use tokio::sync::{mpsc, watch};

pub use assemble::{Assembler, Peaks, sample_once};
pub use events::{OOM_NEAR_FULL_PCT, OomCounts, diff_events};
pub(crate) use schedule::UtilCadence;
pub use schedule::{OnScreen, Schedule, wants_burst};

use crate::model::{Millis, Snapshot, SystemInfo, now_ms};
use crate::source::Source;
use workers::{Reply, Request, Worker, spawn_host, spawn_worker};

/// A running sampler. Dropping it stops the schedule: the snapshots already
/// assembled still come out (in order), then the stream ends; worker threads
/// end when their current call returns.
pub struct Sampler {
    pub system: Arc<SystemInfo>,
    pub schedule: Schedule,
    /// Set it while process utilisation or host facts are on screen: they
    /// are then read every `schedule.proc_util_shown` and every interval
    /// rather than every `schedule.proc_util`.
    pub on_screen: OnScreen,
    _stop: watch::Sender<bool>,
}

impl Sampler {
    /// Starts sampling `source` on `schedule`; must be called inside a tokio
    /// runtime. Every snapshot comes out on the returned stream, in order
    /// and none twice; the stream ends after the sampler is dropped.
    /// Process utilisation and host CPU % / RSS are read on the slow
    /// cadence until [`Sampler::on_screen`] says they are shown.
    pub fn spawn(
        source: Box<dyn Source>,
        schedule: Schedule,
    ) -> (Sampler, mpsc::UnboundedReceiver<Arc<Snapshot>>) {
        Sampler::spawn_with(source, schedule, OnScreen::default())
    }

    /// As [`Sampler::spawn`], with the flags that say whether process
    /// utilisation and host facts are on screen given by whoever shows them
    /// (a clone is kept as [`Sampler::on_screen`]).
    pub fn spawn_with(
        source: Box<dyn Source>,
        schedule: Schedule,
        on_screen: OnScreen,
    ) -> (Sampler, mpsc::UnboundedReceiver<Arc<Snapshot>>) {
        let system = source.system();
        let (out, stream) = mpsc::unbounded_channel();
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
        let host = HostStage::new(spawn_host(source.host_facts(), reply_tx));
        let run = Run {
            schedule,
            util: vec![schedule.proc_util_cadence(); n],
            // Host facts are cheap (a few `/proc` reads): every round on
            // screen.
            host_facts: UtilCadence::new(schedule.proc_util_every(), 1),
            wanted: on_screen.clone(),
            main,
            slow,
            host,
            asm: Assembler::new(n),
            out: Publisher::new(out),
            seq: 0,
            bursting: vec![false; n],
            preview: schedule.preview,
            preview_out: false,
        };
        tokio::spawn(run.run(reply_rx, stop_rx));
        (
            Sampler {
                system,
                schedule,
                on_screen,
                _stop: stop_tx,
            },
            stream,
        )
    }
}

/// Closed rounds not yet sent out (the one with the host thread included)
/// beyond which the oldest goes out without host facts.
const HOST_PENDING_MAX: usize = 2;

/// The host-facts stage, kept in order. One snapshot at a time is with the
/// host thread (with an un-enriched copy kept here); later rounds wait
/// behind it. When the host thread is late (more than
/// [`HOST_PENDING_MAX`] rounds not yet out), the oldest snapshot goes out
/// without host facts rather than late, and its enriched copy is dropped
/// when it comes back: newest wins, never out of order.
struct HostStage {
    /// Snapshots to enrich, each with whether its CPU % and RSS are to be
    /// read afresh (else the last reading is kept).
    tx: SyncSender<(Snapshot, bool)>,
    /// The snapshot with the host thread: its seq, and a copy without host
    /// facts (`None` once that copy has gone out).
    in_flight: Option<(u64, Option<Snapshot>)>,
    waiting: VecDeque<(Snapshot, bool)>,
    /// Snapshots that went out without host facts because the thread was late.
    pub(crate) late: u64,
}

impl HostStage {
    fn new(tx: SyncSender<(Snapshot, bool)>) -> HostStage {
        HostStage {
            tx,
            in_flight: None,
            waiting: VecDeque::new(),
            late: 0,
        }
    }

    /// A closed round: returns the snapshots that must go out now, in order.
    fn push(&mut self, snap: Snapshot, fresh: bool) -> Vec<Snapshot> {
        self.waiting.push_back((snap, fresh));
        self.pump()
    }

    /// The host thread's answer for `snap`.
    fn back(&mut self, snap: Snapshot) -> Vec<Snapshot> {
        let mut out = Vec::new();
        match self.in_flight.take() {
            // Its copy is still here: the enriched one goes out instead.
            Some((seq, Some(_))) if seq == snap.seq => out.push(snap),
            // Sent out without host facts already (late): drop it.
            Some((seq, None)) if seq == snap.seq => {}
            other => self.in_flight = other,
        }
        out.extend(self.pump());
        out
    }

    /// Sends the next snapshot to an idle host thread; lets a late one go.
    fn pump(&mut self) -> Vec<Snapshot> {
        let mut out = Vec::new();
        loop {
            if self.in_flight.is_none()
                && let Some((next, fresh)) = self.waiting.pop_front()
            {
                let copy = next.clone();
                let seq = next.seq;
                match self.tx.try_send((next, fresh)) {
                    Ok(()) => self.in_flight = Some((seq, Some(copy))),
                    // Busy or gone (it never is busy here: one at a time).
                    Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                        out.push(copy);
                        continue;
                    }
                }
            }
            let with_thread = self
                .in_flight
                .as_ref()
                .is_some_and(|(_, copy)| copy.is_some());
            if self.waiting.len() + usize::from(with_thread) <= HOST_PENDING_MAX {
                return out;
            }
            // Late: the oldest goes out as it is.
            self.late += 1;
            match self.in_flight.as_mut().and_then(|(_, copy)| copy.take()) {
                Some(copy) => out.push(copy),
                None => {
                    if let Some((late, fresh)) = self.waiting.pop_front() {
                        // Its fresh read is owed to the next one.
                        if let Some(next) = self.waiting.front_mut() {
                            next.1 |= fresh;
                        }
                        out.push(late);
                    }
                }
            }
        }
    }

    /// On stop: whatever is still here, in order, without host facts.
    fn drain(&mut self) -> Vec<Snapshot> {
        let mut out: Vec<Snapshot> = self
            .in_flight
            .take()
            .and_then(|(_, copy)| copy)
            .into_iter()
            .collect();
        out.extend(self.waiting.drain(..).map(|(s, _)| s));
        out
    }
}

/// The end of the sampler: events between consecutive snapshots, and never
/// a snapshot out of order (anything with `seq` ≤ the last one sent is
/// dropped).
struct Publisher {
    out: mpsc::UnboundedSender<Arc<Snapshot>>,
    prev: Option<Arc<Snapshot>>,
    /// What the processes' allocators have counted ([`diff_events`]).
    counts: OomCounts,
}

impl Publisher {
    fn new(out: mpsc::UnboundedSender<Arc<Snapshot>>) -> Publisher {
        Publisher {
            out,
            prev: None,
            counts: OomCounts::default(),
        }
    }

    /// Sends `snap` (with its events) unless it is older than the last one
    /// sent; returns it as sent. `Err` when nobody listens any more.
    fn send(&mut self, mut snap: Snapshot) -> Result<Option<Arc<Snapshot>>, ()> {
        if let Some(prev) = &self.prev {
            if snap.seq <= prev.seq {
                return Ok(None);
            }
            let mut ev = diff_events(prev, &snap, &mut self.counts);
            ev.append(&mut snap.events);
            snap.events = ev;
        }
        let snap = Arc::new(snap);
        self.prev = Some(snap.clone());
        self.out.send(snap.clone()).map_err(|_| ())?;
        Ok(Some(snap))
    }
}

struct Run {
    schedule: Schedule,
    /// Per GPU: when its process utilisation is next read.
    util: Vec<UtilCadence>,
    /// When host facts that change (CPU %, RSS) are next read: on the
    /// same cadence as process utilisation.
    host_facts: UtilCadence,
    /// Whether process utilisation and host facts are on screen.
    wanted: OnScreen,
    main: Vec<Worker>,
    slow: Vec<Worker>,
    host: HostStage,
    asm: Assembler,
    out: Publisher,
    seq: u64,
    /// GPUs whose fast lane runs at the burst period.
    bursting: Vec<bool>,
    /// The first round is still to be a preview ([`Schedule::preview`]).
    preview: bool,
    /// The preview round has just closed: the first full round starts now.
    preview_out: bool,
}

/// One normal (or preview) round in progress.
struct Round {
    t_ms: Millis,
    waiting: HashSet<usize>,
    deadline: tokio::time::Instant,
    preview: bool,
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
        let mut rounds = 0u64;
        let mut slow_rounds = 0u64;
        let mut round: Option<Round> = None;
        // Half the interval, but never more than 500 ms: a GPU that has not
        // answered by then is shown stale rather than holding up the others.
        let grace = (self.schedule.interval / 2).min(Duration::from_millis(500));
        loop {
            let deadline = round.as_ref().map(|r| r.deadline);
            let open = tokio::select! {
                biased;
                changed = stop.changed() => changed.is_ok() && !*stop.borrow(),
                reply = replies.recv() => match reply {
                    None => false,
                    Some(Reply::Slow(g, r)) => {
                        self.slow[g].answered();
                        self.asm.fold_slow(g, r);
                        true
                    }
                    Some(Reply::Normal(g, t, read, lag)) => {
                        let (r, peaks) = *read;
                        self.main[g].answered();
                        self.asm.fold_peaks(g, peaks);
                        self.asm.fold_normal_after(g, r, lag);
                        match round.as_mut() {
                            Some(cur) if cur.t_ms == t => {
                                cur.waiting.remove(&g);
                                match round.take_if(|r| r.waiting.is_empty()) {
                                    Some(r) => self.close_round(r),
                                    None => true,
                                }
                            }
                            _ => true,
                        }
                    }
                    Some(Reply::Host(snap)) => {
                        let ready = self.host.back(snap);
                        self.send(ready)
                    }
                },
                _ = normal.tick() => {
                    let mut open = true;
                    if let Some(r) = round.take() {
                        open = self.close_round(r);
                    }
                    let t = now_ms();
                    let preview = std::mem::take(&mut self.preview);
                    let waiting = if preview {
                        self.start_preview(t)
                    } else {
                        let asked = self.start_round(t, rounds);
                        rounds += 1;
                        asked
                    };
                    let deadline = tokio::time::Instant::now() + grace;
                    let r = Round { t_ms: t, waiting, deadline, preview };
                    if r.waiting.is_empty() {
                        open && self.close_round(r)
                    } else {
                        round = Some(r);
                        open
                    }
                }
                _ = slow.tick(), if self.schedule.slow.is_some() => {
                    let t = now_ms();
                    let due = self.schedule.slow_due(slow_rounds);
                    slow_rounds += 1;
                    for w in &mut self.slow {
                        w.offer(Request::Slow(t, due), 1);
                    }
                    true
                }
                _ = sleep_until(deadline), if deadline.is_some() => match round.take() {
                    Some(r) => self.close_round(r),
                    None => true,
                },
            };
            if !open {
                break;
            }
            if std::mem::take(&mut self.preview_out) {
                normal.reset_immediately();
            }
        }
        // Stopped: what was assembled still goes out, in order.
        let rest = self.host.drain();
        self.send(rest);
    }

    /// Asks every GPU for round `round`'s normal read (with process
    /// utilisation where it is due); returns the GPUs that were asked. A GPU
    /// still busy with an older normal read is not, and is shown stale.
    fn start_round(&mut self, t: Millis, round: u64) -> HashSet<usize> {
        let wanted = self.wanted.util();
        let mut waiting = HashSet::new();
        for (i, (w, util)) in self.main.iter_mut().zip(&mut self.util).enumerate() {
            let with_util = util.due(round, wanted);
            if w.offer(Request::Normal(t, with_util), 1) {
                waiting.insert(i);
                if with_util {
                    util.sent(round);
                }
            }
        }
        waiting
    }

    /// Asks every GPU for a preview read (memory and process lists); returns
    /// the GPUs that were asked.
    fn start_preview(&mut self, t: Millis) -> HashSet<usize> {
        let mut waiting = HashSet::new();
        for (i, w) in self.main.iter_mut().enumerate() {
            if w.offer(Request::Preview(t), 1) {
                waiting.insert(i);
            }
        }
        waiting
    }

    /// Assembles the round's snapshot and hands it to the host stage.
    /// Returns whether anybody still listens.
    fn close_round(&mut self, r: Round) -> bool {
        self.preview_out |= r.preview;
        let snap = self.asm.publish(self.seq, r.t_ms);
        // Not on a preview: CPU % is the CPU time between two fresh reads
        // over the wall time between them, and the full round's read comes
        // ~10 ms later (CPU % in 10 ms ticks over ~10 ms: 0 or 100 %).
        let fresh = !r.preview && self.host_facts.due(self.seq, self.wanted.host());
        if fresh {
            self.host_facts.sent(self.seq);
        }
        self.seq += 1;
        let ready = self.host.push(snap, fresh);
        self.send(ready)
    }

    /// Sends snapshots out in order and adjusts the fast lanes to them.
    fn send(&mut self, snaps: Vec<Snapshot>) -> bool {
        for snap in snaps {
            match self.out.send(snap) {
                Ok(Some(sent)) => self.adjust_bursts(&sent),
                Ok(None) => {}
                Err(()) => return false,
            }
        }
        true
    }

    /// Speeds the fast lane up on GPUs above the burst level, and back down
    /// once they are below it by the hysteresis ([`wants_burst`]).
    fn adjust_bursts(&mut self, snap: &Snapshot) {
        let (Some(fast), Some((level, burst))) = (self.schedule.fast, self.schedule.burst) else {
            return;
        };
        for g in &snap.gpus {
            let i = g.index as usize;
            let Some(on) = self.bursting.get(i).copied() else {
                continue;
            };
            let want = wants_burst(g, Some(level), on);
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
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
