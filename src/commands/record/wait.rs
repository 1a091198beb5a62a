//! How `record` waits while the recorder records: until a signal or
//! `--duration` ([`Waiter::wait`]), or for as long as a command runs
//! ([`Waiter::run_command`]).

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::child::{Job, Refused};
use super::status::Status;
use crate::model::{Event, EventKind, Millis, now_ms};
use crate::pipeline::Analyzed;
use crate::record::recorder::{Notes, Report};

/// The longest the command waits for the first snapshot to be written.
const START_WAIT: Duration = Duration::from_secs(10);
/// How often the command is looked at to see whether it has exited.
const POLL: Duration = Duration::from_millis(50);
/// How long the command has after the SIGTERM at `--duration` before
/// SIGKILL.
pub(super) const GRACE: Duration = Duration::from_secs(10);

/// How the command ended.
#[derive(Debug)]
pub(super) enum Ran {
    /// It ran and ended with this status, after this long.
    Exited {
        status: ExitStatus,
        took: Duration,
        pid: u32,
        shown: String,
    },
    /// It could not be started.
    Refused(Refused),
    /// vramwatch was stopped by this signal before the command started.
    NotStarted(Signal),
    /// Whether it still runs could not be told (it was killed).
    Lost(String),
}

/// The recorder's reports, the status they go to, and the signals that
/// stop `record`.
pub(super) struct Waiter<'a, W: Write> {
    reports: &'a mut mpsc::UnboundedReceiver<Report>,
    status: &'a mut Status<W>,
    /// Whether the recorder still reports (its thread holds the sender).
    open: bool,
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl<'a, W: Write> Waiter<'a, W> {
    /// Listens for SIGINT and SIGTERM from now on.
    pub(super) fn new(
        reports: &'a mut mpsc::UnboundedReceiver<Report>,
        status: &'a mut Status<W>,
    ) -> Result<Self> {
        Ok(Waiter {
            reports,
            status,
            open: true,
            int: signal(SignalKind::interrupt()).context("listening for SIGINT")?,
            term: signal(SignalKind::terminate()).context("listening for SIGTERM")?,
        })
    }

    fn report(&mut self, rep: Option<Report>) {
        match rep {
            Some(rep) => self.status.report(rep),
            None => self.open = false,
        }
    }

    /// Shows the recorder's progress until a signal or the deadline.
    pub(super) async fn wait(&mut self, duration: Option<Duration>) {
        let deadline = duration.map(|d| Instant::now() + d);
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = self.int.recv() => break,
                _ = self.term.recv() => break,
                _ = sleep_until(deadline), if deadline.is_some() => break,
                rep = self.reports.recv(), if self.open => self.report(rep),
                _ = tick.tick() => self.status.show(),
            }
        }
    }

    /// Starts `argv` once the first snapshot is written, waits while it
    /// runs (`duration` at most: then SIGTERM, and SIGKILL [`GRACE`]
    /// later), passes SIGINT and SIGTERM on to it, and once it has exited
    /// waits for one snapshot taken after that (`latest` is the
    /// pipeline's newest), at most two `interval`s and a second.
    pub(super) async fn run_command(
        &mut self,
        argv: &[OsString],
        duration: Option<Duration>,
        latest: watch::Receiver<Option<Arc<Analyzed>>>,
        interval: Duration,
        notes: &Notes,
    ) -> Ran {
        if let Some(sig) = self.first_snapshot().await {
            return Ran::NotStarted(sig);
        }
        let mut job = match Job::spawn(argv) {
            Ok(job) => job,
            Err(r) => return Ran::Refused(r),
        };
        notes.add(note(
            job.pid(),
            format!("command `{}` (pid {}) started", job.shown, job.pid()),
        ));
        let status = match self.supervise(&mut job, duration).await {
            Ok(s) => s,
            Err(e) => {
                job.kill();
                return Ran::Lost(format!("lost track of `{}`: {e}", job.shown));
            }
        };
        let took = job.started.elapsed();
        notes.add(note(
            job.pid(),
            format!(
                "command `{}` (pid {}) {} after {}",
                job.shown,
                job.pid(),
                super::child::describe(status),
                super::took_text(took)
            ),
        ));
        self.last_snapshot(latest, now_ms(), interval * 2 + Duration::from_secs(1))
            .await;
        Ran::Exited {
            status,
            took,
            pid: job.pid(),
            shown: job.shown,
        }
    }

    /// Waits until the first snapshot is written (or [`START_WAIT`]), so
    /// the recording holds the GPUs as they were before the command.
    /// Returns the signal that stopped the wait, if one did.
    async fn first_snapshot(&mut self) -> Option<Signal> {
        let timeout = tokio::time::sleep(START_WAIT);
        let mut timeout = std::pin::pin!(timeout);
        loop {
            tokio::select! {
                _ = self.int.recv() => return Some(Signal::SIGINT),
                _ = self.term.recv() => return Some(Signal::SIGTERM),
                _ = &mut timeout => {
                    self.status.say(&format!(
                        "warning: no snapshot written in {}; starting the command anyway",
                        humantime::format_duration(START_WAIT)
                    ));
                    return None;
                }
                rep = self.reports.recv(), if self.open => {
                    let wrote = matches!(rep, Some(Report::Wrote { .. }) | None);
                    self.report(rep);
                    if wrote {
                        return None;
                    }
                }
            }
        }
    }

    /// Waits for the command to exit, passing signals on to it.
    async fn supervise(
        &mut self,
        job: &mut Job,
        duration: Option<Duration>,
    ) -> std::io::Result<ExitStatus> {
        let mut deadline = duration.map(|d| Instant::now() + d);
        let mut kill_at: Option<Instant> = None;
        let mut poll = tokio::time::interval(POLL);
        loop {
            tokio::select! {
                _ = self.int.recv() => {
                    if job.in_foreground() {
                        // The terminal's Ctrl-C reached it as well.
                        self.say_waiting(job, "interrupted");
                    } else {
                        self.pass_on(job, Signal::SIGINT);
                    }
                }
                _ = self.term.recv() => self.pass_on(job, Signal::SIGTERM),
                _ = sleep_until(deadline), if deadline.is_some() => {
                    deadline = None;
                    kill_at = Some(Instant::now() + GRACE);
                    self.send(job, Signal::SIGTERM, &format!(
                        "--duration reached: sent SIGTERM to `{}` (pid {}); SIGKILL in {} if it still runs",
                        job.shown, job.pid(), humantime::format_duration(GRACE)
                    ));
                }
                _ = sleep_until(kill_at), if kill_at.is_some() => {
                    kill_at = None;
                    self.send(job, Signal::SIGKILL, &format!(
                        "`{}` (pid {}) still runs {} after SIGTERM: sent SIGKILL",
                        job.shown, job.pid(), humantime::format_duration(GRACE)
                    ));
                }
                rep = self.reports.recv(), if self.open => self.report(rep),
                _ = poll.tick() => {
                    if let Some(status) = job.try_wait()? {
                        return Ok(status);
                    }
                }
            }
        }
    }

    fn say_waiting(&mut self, job: &Job, why: &str) {
        self.status.say(&format!(
            "{why}: waiting for `{}` (pid {}) to exit",
            job.shown,
            job.pid()
        ));
    }

    fn pass_on(&mut self, job: &Job, sig: Signal) {
        let msg = format!(
            "{} passed on to `{}` (pid {}); waiting for it to exit",
            sig.as_str(),
            job.shown,
            job.pid()
        );
        self.send(job, sig, &msg);
    }

    fn send(&mut self, job: &Job, sig: Signal, msg: &str) {
        if !msg.is_empty() {
            self.status.say(msg);
        }
        if let Err(e) = job.signal(sig) {
            self.status.say(&format!(
                "warning: cannot send {} to `{}` (pid {}): {e}",
                sig.as_str(),
                job.shown,
                job.pid()
            ));
        }
    }

    /// Waits (at most `limit`) until the pipeline has a snapshot taken at
    /// or after `after_ms`: the GPUs once the command is gone.
    async fn last_snapshot(
        &mut self,
        mut latest: watch::Receiver<Option<Arc<Analyzed>>>,
        after_ms: Millis,
        limit: Duration,
    ) {
        let timeout = tokio::time::sleep(limit);
        let mut timeout = std::pin::pin!(timeout);
        loop {
            let taken = latest
                .borrow_and_update()
                .as_ref()
                .is_some_and(|a| a.snapshot.t_ms >= after_ms);
            if taken {
                return;
            }
            tokio::select! {
                _ = &mut timeout => return,
                _ = self.int.recv() => return,
                _ = self.term.recv() => return,
                changed = latest.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                rep = self.reports.recv(), if self.open => self.report(rep),
            }
        }
    }
}

/// An event of the command's, sanitised (its command line is the user's,
/// but may hold anything).
fn note(pid: u32, message: String) -> Event {
    Event {
        t_ms: now_ms(),
        kind: EventKind::Note,
        gpu: None,
        pid: Some(pid),
        message: crate::sanitize::clean(&message),
        after_oom: false,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
