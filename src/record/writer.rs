//! Appends snapshots to a recording.
//!
//! Crash safety: each snapshot's lines (its new process lines, the snapshot
//! line, its event lines) go to the file in one `write`, so a `kill -9`
//! loses only what was not written yet. A `.zst` file's compressor is
//! flushed at least every `flush_every` of recorded time (a `kill -9` loses
//! what it held), and at every block end. The file is fsynced every
//! `sync_every`. A failed write (disk full) is cut back off the file so no
//! torn line stays in the middle, and is reported as a [`RecordWarning`]:
//! the caller keeps monitoring and the writer tries again with the next
//! snapshot. A file removed or moved away while recording is noticed at the
//! next sync and replaced by a new one. Files rotate at `max_size`:
//! `run.jsonl` becomes `run.1.jsonl` (and `run.1.jsonl` becomes
//! `run.2.jsonl`, up to `keep`).
//!
//! Every `block_snapshots` snapshots the writer ends a block: a zstd frame
//! ends, and an index record (a line, or a skippable frame for `.zst`)
//! says where the block lies and what it holds, so a reader can open a
//! day-long file without decoding it.

mod block;
mod rotate;
mod snapshot;

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use thiserror::Error;

use super::format::{self, Header, ProcId, ProcessInfo};
use super::{RecordError, is_zstd_path};
use crate::model::Snapshot;
use block::Out;

/// How the writer behaves.
#[derive(Clone, Debug, PartialEq)]
pub struct WriterOptions {
    /// Rotate when a file reaches this many bytes (it may pass it by one
    /// snapshot).
    pub max_size: u64,
    /// Rotated files kept (`run.1.jsonl` ..= `run.<keep>.jsonl`); older ones
    /// are deleted, so a recording never takes more than
    /// `(keep + 1) * max_size` bytes.
    pub keep: u32,
    /// fsync this often (0 = after every snapshot).
    pub sync_every: Duration,
    /// zstd level for `.zst` files.
    pub level: i32,
    /// `.zst`: compressed data reaches the file once the snapshots held in
    /// the compressor span this long (by their timestamps), and at every
    /// block end, rotation and finish. Zero flushes every snapshot. Each
    /// flush costs ~60 bytes; a `kill -9` loses what was held.
    pub flush_every: Duration,
    /// Snapshots per block (per zstd frame and index record).
    pub block_snapshots: u32,
    /// Replace an existing file instead of refusing to start.
    pub overwrite: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            max_size: 1 << 30,
            keep: 4,
            sync_every: Duration::from_secs(5),
            level: 8,
            flush_every: Duration::from_secs(5),
            block_snapshots: 300,
            overwrite: false,
        }
    }
}

impl WriterOptions {
    /// The options the `[record]` config section sets; the rest default.
    pub fn from_config(rec: &crate::config::Record) -> WriterOptions {
        WriterOptions {
            max_size: rec.max_size,
            sync_every: rec.sync_every,
            ..WriterOptions::default()
        }
    }
}

/// Something that went wrong while recording that does not stop it.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum RecordWarning {
    #[error(
        "{path}: the disk is full: {count} snapshot(s) up to {seq} were not recorded (will keep trying)"
    )]
    DiskFull { path: String, seq: u64, count: u64 },
    #[error(
        "{path}: write failed ({reason}): {count} snapshot(s) up to {seq} were not recorded (will keep trying)"
    )]
    WriteFailed {
        path: String,
        seq: u64,
        count: u64,
        reason: String,
    },
    #[error("{path} was removed or moved away while recording; recording goes on in a new {path}")]
    Removed { path: String },
    #[error("{path}: cannot open ({reason}): snapshot {seq} was not recorded (will keep trying)")]
    CannotOpen {
        path: String,
        seq: u64,
        reason: String,
    },
}

/// What one [`Writer::write`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    Written,
    /// Written, then the file was full and rotated: the old one is now
    /// `previous`.
    Rotated {
        previous: PathBuf,
    },
    /// The snapshot may not have been written; recording goes on.
    Warning(RecordWarning),
}

/// Running totals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WriterStats {
    /// The file being written.
    pub path: PathBuf,
    /// Snapshots written (in every file).
    pub snapshots: u64,
    /// Size of the current file.
    pub bytes: u64,
    /// Bytes written to every file.
    pub total_bytes: u64,
    /// Snapshots lost to write failures.
    pub dropped: u64,
    /// Files started after the first (rotations and replaced files).
    pub rotations: u32,
    /// The most recent warning.
    pub last_warning: Option<RecordWarning>,
}

/// Writes snapshots to `path` (compressed when it ends in `.zst`).
pub struct Writer {
    path: PathBuf,
    compress: bool,
    opts: WriterOptions,
    header: Header,
    out: Option<Out>,
    /// Process strings already in the file, for the processes of the last
    /// snapshot.
    known: HashMap<ProcId, ProcessInfo>,
    last_sync: Instant,
    stats: WriterStats,
    /// Bytes of the files ended before the current one (rotated, or
    /// removed while recording): `stats.total_bytes` less the current.
    earlier_bytes: u64,
    finished: bool,
    /// Tests: fail writes (as a full disk would) once the file would pass
    /// this size.
    #[cfg(test)]
    pub(crate) fail_beyond: Option<u64>,
}

impl Writer {
    /// Creates the file and writes its header. Refuses an existing file
    /// unless `opts.overwrite`. The header says the format this writer
    /// writes, whatever `header` said (one read from an older file).
    pub fn create(
        path: &Path,
        mut header: Header,
        opts: WriterOptions,
    ) -> Result<Writer, RecordError> {
        header.format = format::FORMAT.into();
        header.version = format::VERSION;
        let mut w = Writer {
            path: path.to_owned(),
            compress: is_zstd_path(path),
            opts,
            header,
            out: None,
            known: HashMap::new(),
            last_sync: Instant::now(),
            stats: WriterStats {
                path: path.to_owned(),
                ..Default::default()
            },
            earlier_bytes: 0,
            finished: false,
            #[cfg(test)]
            fail_beyond: None,
        };
        if !w.opts.overwrite && path.exists() {
            return Err(RecordError::Exists {
                path: path.display().to_string(),
            });
        }
        w.out = Some(
            w.start_file(w.opts.overwrite)
                .map_err(|e| RecordError::io(path, e))?,
        );
        Ok(w)
    }

    pub fn stats(&self) -> &WriterStats {
        &self.stats
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file is compressed.
    pub fn compressed(&self) -> bool {
        self.compress
    }

    /// Appends one snapshot. Never fails: trouble is a warning, and the
    /// next call tries again.
    pub fn write(&mut self, snap: &Snapshot) -> WriteOutcome {
        if self.out.is_none() {
            match self.start_file(false) {
                Ok(out) => {
                    self.out = Some(out);
                    self.stats.rotations += 1;
                }
                Err(e) => {
                    return self.warn(RecordWarning::CannotOpen {
                        path: self.path.display().to_string(),
                        seq: snap.seq,
                        reason: e.to_string(),
                    });
                }
            }
        }
        if let Err(e) = self.append_snapshot(snap) {
            let limit = self.limit();
            let lost = self.out.as_mut().map_or(0, |out| {
                let lost = out.forget_held();
                // End the frame now, or before the next write.
                let _ = Self::close_lost_frame(out, limit);
                lost
            });
            self.stats.snapshots -= lost;
            let w = self.failure(snap.seq, lost + 1, &e);
            return self.warn(w);
        }
        self.stats.snapshots += 1;
        let mut outcome = WriteOutcome::Written;
        if self
            .out
            .as_ref()
            .is_some_and(|o| o.block.dt.len() as u64 >= self.opts.block_snapshots.max(1) as u64)
            && let Some(w) = self.close_block(snap.seq)
        {
            return self.warn(w);
        }
        if self.stats.bytes >= self.opts.max_size {
            match self.rotate() {
                Ok(previous) => outcome = WriteOutcome::Rotated { previous },
                Err(e) => {
                    let w = RecordWarning::CannotOpen {
                        path: self.path.display().to_string(),
                        seq: snap.seq,
                        reason: format!("rotating: {e}"),
                    };
                    self.stats.last_warning = Some(w.clone());
                    outcome = WriteOutcome::Warning(w);
                }
            }
        }
        if self.last_sync.elapsed() >= self.opts.sync_every
            && let Some(w) = self.sync_and_check()
        {
            outcome = self.warn(w);
        }
        outcome
    }

    fn warn(&mut self, w: RecordWarning) -> WriteOutcome {
        self.stats.last_warning = Some(w.clone());
        WriteOutcome::Warning(w)
    }

    #[cfg(test)]
    fn limit(&self) -> Option<u64> {
        self.fail_beyond
    }

    #[cfg(not(test))]
    fn limit(&self) -> Option<u64> {
        None
    }

    fn failure(&mut self, seq: u64, count: u64, e: &io::Error) -> RecordWarning {
        self.stats.dropped += count;
        // Process lines may not have reached the file: write them again.
        self.known.clear();
        let path = self.path.display().to_string();
        if e.kind() == io::ErrorKind::StorageFull || e.kind() == io::ErrorKind::QuotaExceeded {
            RecordWarning::DiskFull { path, seq, count }
        } else {
            RecordWarning::WriteFailed {
                path,
                seq,
                count,
                reason: e.to_string(),
            }
        }
    }

    /// Ends the last block, syncs and closes the file.
    pub fn finish(mut self) -> Result<WriterStats, RecordError> {
        self.finished = true;
        if let Some(mut out) = self.out.take() {
            Self::end_block(&mut out, self.limit()).map_err(|e| RecordError::io(&self.path, e))?;
            // A pipe or a device cannot be synced (EINVAL): only files.
            if out.file.metadata().is_ok_and(|m| m.is_file()) {
                out.file
                    .sync_all()
                    .map_err(|e| RecordError::io(&self.path, e))?;
            }
            self.tally(out.size);
        }
        Ok(self.stats.clone())
    }

    /// The sizes in `stats` from the current file's `size`: its own, and
    /// with the files before it (index records and frame ends included).
    fn tally(&mut self, size: u64) {
        self.stats.bytes = size;
        self.stats.total_bytes = self.earlier_bytes + size;
    }

    /// The current file ends (rotated, or removed while recording): its
    /// bytes count with the files before.
    fn ended(&mut self, out: &Out) {
        self.earlier_bytes += out.size;
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let limit = self.limit();
        if !self.finished
            && let Some(mut out) = self.out.take()
        {
            let _ = Self::end_block(&mut out, limit);
            let _ = out.file.sync_all();
        }
    }
}

#[cfg(test)]
mod tests;
