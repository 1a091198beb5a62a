//! Recording from the dashboard (`r`): a writer thread fed through a
//! channel, so the screen never waits on the disk; stopping drops the
//! channel and the thread finishes the file on its own.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

use crate::analysis::{AnalysisConfig, Analyzer};
use crate::model::{Snapshot, SystemInfo};
use crate::record::{Header, RecordError, WriteOutcome, Writer, WriterOptions};

/// What the writer thread has done so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Progress {
    pub bytes: u64,
    pub snapshots: u64,
    /// The newest warning not yet shown.
    pub warning: Option<String>,
    /// The file could not be finished (after stop).
    pub failed: Option<String>,
}

/// A recording in progress.
pub struct Background {
    pub path: PathBuf,
    tx: Sender<Arc<Snapshot>>,
    progress: Arc<Mutex<Progress>>,
    thread: std::thread::JoinHandle<()>,
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

impl Background {
    /// Creates the file (and its directory) and starts the writer thread.
    pub fn start(
        path: PathBuf,
        system: &SystemInfo,
        interval_ms: u64,
        start_ms: u64,
        opts: WriterOptions,
        analysis: AnalysisConfig,
    ) -> Result<Background, RecordError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| RecordError::io(dir, e))?;
        }
        let writer = Writer::create(&path, Header::new(system, interval_ms, start_ms), opts)?;
        let (tx, rx) = mpsc::channel::<Arc<Snapshot>>();
        let progress = Arc::new(Mutex::new(Progress::default()));
        let shared = progress.clone();
        let thread = std::thread::Builder::new()
            .name("vw-rec".into())
            .spawn(move || {
                let mut writer = writer;
                let mut analyzer = Analyzer::new(&analysis);
                for s in rx {
                    let alerts = analyzer.observe(&s);
                    let s = if alerts.is_empty() {
                        s
                    } else {
                        let mut with = (*s).clone();
                        with.events.extend(alerts.iter().map(|a| a.to_event()));
                        Arc::new(with)
                    };
                    let warning = match writer.write(&s) {
                        WriteOutcome::Warning(w) => Some(w.to_string()),
                        _ => None,
                    };
                    if let Ok(mut p) = shared.lock() {
                        p.bytes = writer.stats().total_bytes;
                        p.snapshots = writer.stats().snapshots;
                        if warning.is_some() {
                            p.warning = warning;
                        }
                    }
                }
                let finished = writer.finish();
                if let (Err(e), Ok(mut p)) = (finished, shared.lock()) {
                    p.failed = Some(e.to_string());
                }
            })
            .map_err(|e| RecordError::io(&path, e))?;
        Ok(Background {
            path,
            tx,
            progress,
            thread,
        })
    }

    /// Hands a snapshot to the writer thread (never blocks).
    pub fn feed(&self, snap: &Arc<Snapshot>) {
        let _ = self.tx.send(snap.clone());
    }

    /// Bytes written so far and a warning not yet shown, if any.
    pub fn poll(&self) -> (u64, Option<String>) {
        match self.progress.lock() {
            Ok(mut p) => (p.bytes, p.warning.take()),
            Err(_) => (0, None),
        }
    }

    /// Stops without waiting: the thread writes what it has, finishes the
    /// file and exits.
    pub fn stop(self) -> PathBuf {
        self.path
    }

    /// Stops and waits until the file is finished (before the program
    /// exits). Returns why it could not be finished, if it could not.
    pub fn finish(self) -> Option<String> {
        drop(self.tx);
        let _ = self.thread.join();
        self.progress.lock().ok().and_then(|p| p.failed.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Recording;
    use crate::source::sim::SimWorld;

    #[test]
    fn a_background_recording_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let t0 = 1_795_953_600_000;
        let w = SimWorld::new("demo", 1, t0).unwrap();
        let path = file_name(dir.path(), "sim node/1", t0, true);
        assert!(path.to_string_lossy().contains("vramwatch-sim_node_1-"));
        let rec = Background::start(
            path.clone(),
            &w.info(),
            1000,
            t0,
            WriterOptions::default(),
            AnalysisConfig::default(),
        )
        .unwrap();
        for i in 0..20 {
            rec.feed(&Arc::new(w.snapshot(i, t0 + i * 1000, "me")));
        }
        let path = rec.path.clone();
        assert_eq!(rec.finish(), None);
        // Finished: it reads back whole.
        let mut tries = 0;
        let back = loop {
            match Recording::open(&path) {
                Ok(r) if r.len() == 20 => break r,
                _ if tries < 100 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                other => panic!("recording not finished: {:?}", other.map(|r| r.len())),
            }
        };
        assert_eq!(back.get(19).unwrap().t_ms, t0 + 19_000);
    }
}
