//! The recorder: a consumer of the pipeline that writes every analysed
//! snapshot (its alerts among its events) to a recording, on a thread of
//! its own so that neither the screen nor the sampler ever waits on the
//! disk. `vramwatch record` and `r` in the dashboard both use it.
//!
//! It takes snapshots from a queue of its own ([`Hub::subscribe_all`]), not
//! from the dashboard: a slow frame cannot make it miss one. Should the
//! queue ever overflow (the disk stalls for longer than it holds), what was
//! missed is counted from the gaps in `seq` and reported.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use crate::model::now_ms;
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
    /// A snapshot was written (or not: see `dropped`); the totals so far.
    Wrote {
        stats: WriterStats,
        missed: u64,
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

/// How the recording ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub stats: WriterStats,
    /// Snapshots the pipeline made that never reached the recorder.
    pub missed: u64,
    /// Why the file could not be finished, if it could not.
    pub failed: Option<String>,
}

/// A recording in progress.
pub struct Recorder {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Summary>,
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
        let thread = std::thread::Builder::new()
            .name("vw-rec".into())
            .spawn(move || write_all(writer, queue, &asked, on_report))
            .map_err(|e| RecordError::io(&path, e))?;
        Ok(Recorder { path, stop, thread })
    }

    pub fn path(&self) -> &Path {
        &self.path
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
    mut on_report: impl FnMut(Report),
) -> Summary {
    let mut gaps = GapCounter::default();
    let mut write = |a: Arc<Analyzed>| {
        let missed = gaps.saw(a.seq());
        if missed > 0 {
            on_report(Report::Missed {
                count: missed,
                before_seq: a.seq(),
            });
        }
        match writer.write(&a.recorded()) {
            WriteOutcome::Written => {}
            WriteOutcome::Rotated { previous } => on_report(Report::Rotated(previous)),
            WriteOutcome::Warning(w) => on_report(Report::Warning(w)),
        }
        on_report(Report::Wrote {
            stats: writer.stats().clone(),
            missed: gaps.missed,
        });
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
    let missed = gaps.missed;
    let stats = writer.stats().clone();
    match writer.finish() {
        Ok(stats) => Summary {
            stats,
            missed,
            failed: None,
        },
        Err(e) => Summary {
            stats,
            missed,
            failed: Some(e.to_string()),
        },
    }
}

#[cfg(test)]
mod tests;
