//! The recorder: a consumer of the pipeline that writes every analysed
//! snapshot (its alerts among its events) to a recording, on a thread of
//! its own so that neither the screen nor the sampler ever waits on the
//! disk. `vramwatch record` and `r` in the dashboard both use it.
//!
//! It takes snapshots from a queue of its own ([`Hub::subscribe_all`]), not
//! from the dashboard: a slow frame cannot make it miss one. Should the
//! queue ever overflow (the disk stalls for longer than it holds), what was
//! missed is counted from the gaps in `seq` and reported.
//!
//! Writes that fail (a full disk, a file too large, a file that cannot be
//! opened again) are grouped into [`Outage`]s: each begins with the first
//! snapshot lost and ends when a snapshot reaches the file again. Every
//! outage is reported as it begins, as it goes on and as it ends, and the
//! [`Summary`] lists them all, so no loss goes unsaid.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use crate::model::{Event, Millis, Snapshot, now_ms};
use crate::pipeline::{Analyzed, GapCounter, Hub};
use crate::record::{
    Header, RecordError, RecordWarning, WriteOutcome, Writer, WriterOptions, WriterStats,
};

/// Analysed snapshots the recorder's queue holds while the disk is slow:
/// ten minutes at the default interval.
pub const QUEUE: usize = 600;

/// How often the writer thread looks whether it was asked to stop.
const STOP_POLL: Duration = Duration::from_millis(100);

/// What the writer thread reports as it goes.
#[derive(Clone, Debug, PartialEq)]
pub enum Report {
    /// A snapshot was written (or not: see `outage`); the totals so far.
    /// Sent before the write's [`Report::Warning`], if it had one.
    Wrote {
        stats: WriterStats,
        missed: u64,
        /// The write began, continued or ended an outage.
        outage: Option<Box<OutageNews>>,
    },
    /// The file reached its size limit and was moved to this path.
    Rotated(PathBuf),
    Warning(RecordWarning),
    /// Snapshots the recorder never received (its queue overflowed).
    Missed {
        count: u64,
        before_seq: u64,
    },
}

/// A stretch of failed writes: from the first snapshot lost until a
/// snapshot reaches the file again.
#[derive(Clone, Debug, PartialEq)]
pub struct Outage {
    /// 1 for the recording's first outage, 2 for the next, ...
    pub number: u32,
    /// When it began: the time of the snapshot whose write failed first.
    pub since_ms: Millis,
    /// The time of the last snapshot lost so far.
    pub last_ms: Millis,
    /// The first and last snapshot (`seq`) lost so far. (Snapshots held by
    /// the compressor are lost with a failed flush, so the first can come
    /// before the write that failed.)
    pub first_lost: u64,
    pub last_lost: u64,
    /// Snapshots lost in it so far.
    pub lost: u64,
    /// What went wrong first, and most recently.
    pub cause: RecordWarning,
    pub latest: RecordWarning,
    /// When a snapshot reached the file again: its time and `seq`. `None`
    /// while the outage lasts (or when the recording ended in it).
    pub ended: Option<(Millis, u64)>,
}

impl Outage {
    /// What went wrong, in a few words: "the disk is full".
    pub fn cause_text(&self) -> String {
        cause_text(&self.cause)
    }
}

/// What went wrong in a warning, without the path and counts.
pub fn cause_text(w: &RecordWarning) -> String {
    match w {
        RecordWarning::DiskFull { .. } => "the disk is full".into(),
        RecordWarning::WriteFailed { reason, .. } => format!("writing failed: {reason}"),
        RecordWarning::CannotOpen { reason, .. } => format!("the file cannot be opened: {reason}"),
        RecordWarning::Removed { .. } => "the file was removed or moved away".into(),
    }
}

/// What a write did to the outages.
#[derive(Clone, Debug, PartialEq)]
pub enum OutageNews {
    /// The write failed after others had succeeded.
    Began(Outage),
    /// The write failed again.
    GoesOn(Outage),
    /// The write reached the file after failures; `ended` is set.
    Ended(Outage),
}

/// How the recording ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub stats: WriterStats,
    /// Snapshots the pipeline made that never reached the recorder.
    pub missed: u64,
    /// Why the file could not be finished, if it could not.
    pub failed: Option<String>,
    /// Every outage, in order; the last has no end if the recording
    /// stopped during it.
    pub outages: Vec<Outage>,
}

impl Summary {
    /// Snapshots lost to failed writes, in every outage.
    pub fn lost(&self) -> u64 {
        self.outages.iter().map(|o| o.lost).sum()
    }
}

/// A recording in progress.
pub struct Recorder {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    notes: Notes,
    thread: std::thread::JoinHandle<Summary>,
}

/// Events from outside the pipeline (`record -- COMMAND`'s "command
/// started" and "command exited"), written with the next snapshot the
/// recorder writes. A note still pending when the recording ends is lost.
#[derive(Clone, Debug, Default)]
pub struct Notes(Arc<std::sync::Mutex<Vec<Event>>>);

impl Notes {
    /// Adds `e` to the next snapshot written.
    pub fn add(&self, e: Event) {
        if let Ok(mut v) = self.0.lock() {
            v.push(e);
        }
    }

    fn take(&self) -> Vec<Event> {
        self.0
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }
}

/// `<dir>/vramwatch-<host>-<YYYYmmdd-HHMMSS>.jsonl[.zst]`.
pub fn file_name(dir: &Path, host: &str, t_ms: u64, compress: bool) -> PathBuf {
    let when = chrono::DateTime::<chrono::Utc>::from_timestamp_millis(t_ms as i64)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y%m%d-%H%M%S")
                .to_string()
        })
        .unwrap_or_else(|| t_ms.to_string());
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!(
        "vramwatch-{host}-{when}.jsonl{}",
        if compress { ".zst" } else { "" }
    ))
}

impl Recorder {
    /// Creates `path` (and its directory) for the pipeline behind `hub`
    /// and starts writing from the next snapshot on.
    pub fn create(
        path: PathBuf,
        hub: &Hub,
        opts: WriterOptions,
        on_report: impl FnMut(Report) + Send + 'static,
    ) -> Result<Recorder, RecordError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| RecordError::io(dir, e))?;
        }
        let header = Header::new(
            &hub.system,
            hub.schedule.interval.as_millis() as u64,
            now_ms(),
        );
        let writer = Writer::create(&path, header, opts)?;
        Recorder::start(writer, hub, on_report)
    }

    /// Starts writing the pipeline's snapshots to `writer`.
    pub fn start(
        writer: Writer,
        hub: &Hub,
        on_report: impl FnMut(Report) + Send + 'static,
    ) -> Result<Recorder, RecordError> {
        let path = writer.path().to_owned();
        let queue = hub.subscribe_all(QUEUE);
        let stop = Arc::new(AtomicBool::new(false));
        let asked = stop.clone();
        let notes = Notes::default();
        let pending = notes.clone();
        let thread = std::thread::Builder::new()
            .name("vw-rec".into())
            .spawn(move || write_all(writer, queue, &asked, &pending, on_report))
            .map_err(|e| RecordError::io(&path, e))?;
        Ok(Recorder {
            path,
            stop,
            notes,
            thread,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where to add events of one's own to the recording.
    pub fn notes(&self) -> Notes {
        self.notes.clone()
    }

    /// Stops now (what is already queued is written), finishes the file
    /// and waits for that.
    pub fn stop(self) -> Summary {
        self.stop.store(true, Ordering::Relaxed);
        self.join()
    }

    /// Writes until the pipeline ends (stop it first), finishes the file
    /// and waits for that.
    pub fn finish(self) -> Summary {
        self.join()
    }

    fn join(self) -> Summary {
        self.thread.join().unwrap_or_else(|_| Summary {
            stats: WriterStats::default(),
            missed: 0,
            failed: Some("the writer thread panicked".into()),
            outages: Vec::new(),
        })
    }
}

/// The writer thread: every analysed snapshot, in order, until the queue
/// ends or a stop is asked for (then what is already queued is written);
/// then the file is finished.
fn write_all(
    mut writer: Writer,
    queue: std::sync::mpsc::Receiver<Arc<Analyzed>>,
    stop: &AtomicBool,
    notes: &Notes,
    mut on_report: impl FnMut(Report),
) -> Summary {
    let mut reporting = Reporting::default();
    let mut write = |a: Arc<Analyzed>| {
        let mut snap = a.recorded();
        let extra = notes.take();
        if !extra.is_empty() {
            Arc::make_mut(&mut snap).events.extend(extra);
        }
        reporting.write(&mut writer, &snap, &mut on_report);
    };
    loop {
        match queue.recv_timeout(STOP_POLL) {
            Ok(a) => write(a),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if stop.load(Ordering::Relaxed) {
            while let Ok(a) = queue.try_recv() {
                write(a);
            }
            break;
        }
    }
    let missed = reporting.gaps.missed;
    let outages = reporting.outages.into_list();
    let stats = writer.stats().clone();
    match writer.finish() {
        Ok(stats) => Summary {
            stats,
            missed,
            failed: None,
            outages,
        },
        Err(e) => Summary {
            stats,
            missed,
            failed: Some(e.to_string()),
            outages,
        },
    }
}

/// What the writer thread keeps to report: the gaps in `seq` and the
/// outages.
#[derive(Default)]
struct Reporting {
    gaps: GapCounter,
    outages: Outages,
}

impl Reporting {
    /// Writes one snapshot and reports what happened: snapshots missed
    /// before it, a rotation, the totals with any news of an outage, then
    /// the writer's warning.
    fn write(&mut self, writer: &mut Writer, snap: &Snapshot, on_report: &mut impl FnMut(Report)) {
        let seq = snap.seq;
        let missed = self.gaps.saw(seq);
        if missed > 0 {
            on_report(Report::Missed {
                count: missed,
                before_seq: seq,
            });
        }
        let before = writer.stats().clone();
        let outcome = writer.write(snap);
        let after = writer.stats();
        let warning = match outcome {
            WriteOutcome::Written => None,
            WriteOutcome::Rotated { previous } => {
                on_report(Report::Rotated(previous));
                None
            }
            WriteOutcome::Warning(w) => Some(w),
        };
        let outage = self
            .outages
            .after_write(seq, snap.t_ms, &before, after, warning.as_ref());
        on_report(Report::Wrote {
            stats: after.clone(),
            missed: self.gaps.missed,
            outage: outage.map(Box::new),
        });
        if let Some(w) = warning {
            on_report(Report::Warning(w));
        }
    }
}

/// The outages so far: the one going on, and those that ended.
#[derive(Default)]
struct Outages {
    current: Option<Outage>,
    past: Vec<Outage>,
}

impl Outages {
    /// Takes in one write of snapshot `seq` (taken at `t_ms`): the
    /// writer's totals before and after it and its warning. Snapshots were
    /// lost when the count of dropped ones grew, or when the file could
    /// not be opened for this one (the writer does not count those); the
    /// outage ends when data reaches the file again (a snapshot only held
    /// by the compressor does not end it: its flush may still fail).
    fn after_write(
        &mut self,
        seq: u64,
        t_ms: Millis,
        before: &WriterStats,
        after: &WriterStats,
        warning: Option<&RecordWarning>,
    ) -> Option<OutageNews> {
        let dropped = after.dropped.saturating_sub(before.dropped);
        let unopened = matches!(warning, Some(RecordWarning::CannotOpen { .. }))
            && dropped == 0
            && after.snapshots <= before.snapshots;
        let lost = dropped + u64::from(unopened);
        if lost > 0 {
            let w = warning
                .cloned()
                .unwrap_or_else(|| RecordWarning::WriteFailed {
                    path: after.path.display().to_string(),
                    seq,
                    count: lost,
                    reason: "no reason given".into(),
                });
            return Some(match self.current.as_mut() {
                Some(o) => {
                    o.lost += lost;
                    o.last_lost = seq;
                    o.last_ms = t_ms;
                    o.latest = w;
                    OutageNews::GoesOn(o.clone())
                }
                None => {
                    let o = Outage {
                        number: self.past.len() as u32 + 1,
                        since_ms: t_ms,
                        last_ms: t_ms,
                        first_lost: (seq + 1).saturating_sub(lost),
                        last_lost: seq,
                        lost,
                        cause: w.clone(),
                        latest: w,
                        ended: None,
                    };
                    self.current = Some(o.clone());
                    OutageNews::Began(o)
                }
            });
        }
        if after.total_bytes > before.total_bytes {
            let mut o = self.current.take()?;
            o.ended = Some((t_ms, seq));
            self.past.push(o.clone());
            return Some(OutageNews::Ended(o));
        }
        None
    }

    /// Every outage, the one going on (if any) last.
    fn into_list(self) -> Vec<Outage> {
        let mut all = self.past;
        all.extend(self.current);
        all
    }
}

#[cfg(test)]
mod tests;

/// The outages, as the writer thread reports them, against a writer whose
/// disk fills up and empties.
#[cfg(test)]
mod outage_tests;
