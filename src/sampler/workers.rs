//! The threads that call the source: one per GPU for the fast and normal
//! lanes, one per GPU for the slow lane, one for host facts. Each answers
//! requests from the sampler's schedule with replies on one channel.

use std::sync::mpsc::{self as std_mpsc, SyncSender};
use std::thread;
use std::time::Duration;

use tokio::sync::mpsc;

use super::assemble::Peaks;
use crate::model::{Millis, Snapshot, now_ms};
use crate::source::{GpuProbe, HostFacts, NormalReading, ProbeError, SlowDue, SlowReading};

pub(super) enum Request {
    Normal(Millis, bool),
    /// Memory and the process lists only, answered as a normal read with
    /// nothing else in it ([`super::Schedule::preview`]).
    Preview(Millis),
    Slow(Millis, SlowDue),
    /// Change (or stop, with `None`) the fast lane's period; the bool: read
    /// the process lists too (every other read), while bursting.
    FastPeriod(Option<Duration>, bool),
}

pub(super) enum Reply {
    Normal(
        usize,
        Millis,
        Box<(Result<NormalReading, ProbeError>, Peaks)>,
        u32,
    ),
    Slow(usize, Result<SlowReading, ProbeError>),
    Host(Snapshot),
}

/// A GPU's reader thread: answers normal and slow requests, and between
/// them reads the fast lane on its own timer, keeping the peaks.
pub(super) fn spawn_worker(
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
                    normal_reply(gpu, t, probe.normal(t, util), &mut peaks)
                }
                Some(Request::Preview(t)) => {
                    let r = probe.fast(t).map(NormalReading::preview);
                    normal_reply(gpu, t, r, &mut peaks)
                }
                Some(Request::Slow(t, due)) => Reply::Slow(gpu, probe.slow(t, due)),
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

/// A normal (or preview) read asked for at `t`, with the fast lane's peaks
/// since the last one and how late it is.
fn normal_reply(
    gpu: usize,
    t: Millis,
    r: Result<NormalReading, ProbeError>,
    peaks: &mut Peaks,
) -> Reply {
    let lag = now_ms().saturating_sub(t) as u32;
    Reply::Normal(gpu, t, Box::new((r, std::mem::take(peaks))), lag)
}

pub(super) fn spawn_host(
    mut facts: Box<dyn HostFacts>,
    out: mpsc::UnboundedSender<Reply>,
) -> SyncSender<(Snapshot, bool)> {
    let (tx, rx) = std_mpsc::sync_channel::<(Snapshot, bool)>(2);
    let _ = thread::Builder::new()
        .name("vw-host".into())
        .spawn(move || {
            while let Ok((mut snap, fresh)) = rx.recv() {
                facts.enrich(snap.t_ms, &mut snap.procs, fresh);
                if out.send(Reply::Host(snap)).is_err() {
                    break;
                }
            }
        });
    tx
}

/// A worker thread's request queue and how many requests it has not
/// answered yet.
pub(super) struct Worker {
    pub(super) tx: SyncSender<Request>,
    in_flight: u32,
}

impl Worker {
    pub(super) fn new(tx: SyncSender<Request>) -> Worker {
        Worker { tx, in_flight: 0 }
    }

    /// Sends `req` if fewer than `limit` requests are in flight.
    pub(super) fn offer(&mut self, req: Request, limit: u32) -> bool {
        if self.in_flight >= limit {
            return false;
        }
        let ok = self.tx.try_send(req).is_ok();
        if ok {
            self.in_flight += 1;
        }
        ok
    }

    pub(super) fn answered(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }
}
