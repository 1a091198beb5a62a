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

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use thiserror::Error;

use super::format::{self, Header, IndexRecord, IndexedEvent, IndexedProcess, ProcId, ProcessInfo};
use super::zst::{self, LineCompressor};
use super::{RecordError, is_zstd_path, rotated_path};
use crate::model::{Millis, Snapshot};

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

/// The open file and where it stands.
struct Out {
    file: File,
    /// Bytes in the file that hold complete data (a failed write is cut
    /// back to this).
    size: u64,
    /// Lines so far (in the decompressed text for `.zst`).
    lines: u64,
    dev_ino: (u64, u64),
    /// Whether the file is zstd-compressed.
    compress: bool,
    /// `.zst`: the compressor of the frame in progress (`None`: the next
    /// group starts a frame).
    enc: Option<LineCompressor>,
    /// `.zst`: a frame has been started in the file and not ended. With no
    /// compressor (it was lost to a failed write) it must be ended by hand
    /// before anything else is written.
    frame_open: bool,
    /// Snapshots in this file.
    ordinal: u64,
    block: Block,
    prev_index: Option<u64>,
    /// `.zst`: snapshots compressed but not flushed to the file yet, and
    /// where things stood after the last flush (restored when a write
    /// fails and the held snapshots are lost).
    held: u64,
    flushed: Mark,
    /// `.zst`: time of the snapshot that was last flushed.
    flushed_t: Millis,
}

/// What was in the file after a flush.
#[derive(Clone, Copy, Default)]
struct Mark {
    size: u64,
    frame_open: bool,
    ordinal: u64,
    lines: u64,
    block_lines: u64,
    dt: usize,
    procs: usize,
    events: usize,
    last_t: Millis,
}

impl Out {
    fn mark(&mut self) {
        self.held = 0;
        self.flushed = Mark {
            size: self.size,
            frame_open: self.frame_open,
            ordinal: self.ordinal,
            lines: self.lines,
            block_lines: self.block.lines,
            dt: self.block.dt.len(),
            procs: self.block.procs.len(),
            events: self.block.events.len(),
            last_t: self.block.last_t,
        };
    }

    /// Forgets the snapshots held in a lost compressor, cutting the file
    /// back to the last flush (a block boundary); returns how many.
    fn forget_held(&mut self) -> u64 {
        let m = self.flushed;
        let n = self.held;
        if self.size != m.size {
            let _ = self.file.set_len(m.size);
            let _ = self.file.seek(SeekFrom::Start(m.size));
            self.size = m.size;
        }
        self.frame_open = m.frame_open;
        self.ordinal = m.ordinal;
        self.lines = m.lines;
        self.block.lines = m.block_lines;
        self.block.dt.truncate(m.dt);
        self.block.procs.truncate(m.procs);
        self.block.events.truncate(m.events);
        self.block.last_t = m.last_t;
        self.held = 0;
        n
    }
}

/// The block being written.
#[derive(Default)]
struct Block {
    number: u64,
    offset: u64,
    first_line: u64,
    lines: u64,
    first: u64,
    t0: Millis,
    last_t: Millis,
    dt: Vec<i64>,
    procs: Vec<IndexedProcess>,
    events: Vec<IndexedEvent>,
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

    /// Creates the file (failing if it exists unless `truncate`) and writes
    /// the header.
    fn start_file(&mut self, truncate: bool) -> io::Result<Out> {
        let mut oo = OpenOptions::new();
        oo.write(true);
        if truncate {
            oo.create(true).truncate(true);
        } else {
            oo.create_new(true);
        }
        let file = oo.open(&self.path)?;
        let meta = file.metadata()?;
        let mut out = Out {
            file,
            size: 0,
            lines: 0,
            dev_ino: (meta.dev(), meta.ino()),
            compress: self.compress,
            enc: None,
            frame_open: false,
            ordinal: 0,
            block: Block {
                first_line: 1,
                ..Default::default()
            },
            prev_index: None,
            held: 0,
            flushed: Mark::default(),
            flushed_t: 0,
        };
        self.header.start_ms = crate::model::now_ms();
        let mut text = Vec::new();
        format::write_header(&mut text, &self.header);
        let bytes = if self.compress {
            let mut enc = LineCompressor::new(self.opts.level)?;
            let b = enc.push(&text)?;
            out.enc = Some(enc);
            out.frame_open = true;
            b
        } else {
            text
        };
        out.file.write_all(&bytes)?;
        out.size = bytes.len() as u64;
        out.lines = 1;
        out.block.lines = 1;
        out.mark();
        self.known.clear();
        self.stats.bytes = out.size;
        self.stats.total_bytes += out.size;
        Ok(out)
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

    /// The lines of `snap` (new process lines, the snapshot, its events),
    /// written in one go.
    fn append_snapshot(&mut self, snap: &Snapshot) -> io::Result<()> {
        let limit = self.limit();
        let Some(out) = self.out.as_mut() else {
            return Err(io::Error::other("no file"));
        };
        Self::close_lost_frame(out, limit)?;
        let mut text = Vec::with_capacity(1024 + snap.procs.len() * 96);
        let mut lines = 0u64;
        let mut new_procs = Vec::new();
        let mut known = HashMap::with_capacity(snap.procs.len());
        let mut old = std::mem::take(&mut self.known);
        for p in &snap.procs {
            let id = (p.gpu, p.pid, p.start_time);
            let info = match old.remove(&id).filter(|i| i.matches(p)) {
                Some(i) => i,
                None => {
                    let i = ProcessInfo::of(p);
                    format::write_process(&mut text, &i);
                    lines += 1;
                    new_procs.push(IndexedProcess {
                        at: out.ordinal,
                        info: i.clone(),
                    });
                    i
                }
            };
            known.insert(id, info);
        }
        format::write_snapshot(&mut text, snap);
        lines += 1;
        for e in &snap.events {
            format::write_event(&mut text, snap.seq, e);
            lines += 1;
        }
        let flush = !self.compress
            || snap.t_ms.saturating_sub(out.flushed_t) >= self.opts.flush_every.as_millis() as u64;
        let bytes = if self.compress {
            let enc = match out.enc.as_mut() {
                Some(enc) => enc,
                None => out.enc.insert(LineCompressor::new(self.opts.level)?),
            };
            let r = if flush {
                enc.push(&text)
            } else {
                enc.feed(&text)
            };
            match r {
                Ok(b) => b,
                Err(e) => {
                    out.enc = None;
                    return Err(e);
                }
            }
        } else {
            text
        };
        if let Err(e) = Self::append(out, &bytes, limit) {
            // The compressor has moved on: the caller cuts the file back to
            // the last flush and ends the frame there.
            out.enc = None;
            return Err(e);
        }
        out.frame_open |= self.compress && !bytes.is_empty();
        self.known = known;
        out.lines += lines;
        let b = &mut out.block;
        b.lines += lines;
        if b.dt.is_empty() {
            b.t0 = snap.t_ms;
            b.dt.push(0);
        } else {
            b.dt.push(snap.t_ms as i64 - b.last_t as i64);
        }
        b.last_t = snap.t_ms;
        b.procs.extend(new_procs);
        b.events.extend(snap.events.iter().map(|e| IndexedEvent {
            at: out.ordinal,
            event: e.clone(),
        }));
        out.ordinal += 1;
        if flush {
            out.mark();
            out.flushed_t = snap.t_ms;
        } else {
            out.held += 1;
        }
        self.stats.bytes = out.size;
        self.stats.total_bytes += bytes.len() as u64;
        Ok(())
    }

    #[cfg(test)]
    fn limit(&self) -> Option<u64> {
        self.fail_beyond
    }

    #[cfg(not(test))]
    fn limit(&self) -> Option<u64> {
        None
    }

    /// Writes `bytes` at the end of the data; on failure cuts the file back
    /// so no partial line stays behind.
    fn append(out: &mut Out, bytes: &[u8], limit: Option<u64>) -> io::Result<()> {
        let r = match limit {
            Some(max) if out.size + bytes.len() as u64 > max => {
                // As a full disk does: part of it lands, then ENOSPC.
                let room = max.saturating_sub(out.size) as usize;
                let _ = out.file.write_all(&bytes[..room.min(bytes.len())]);
                Err(io::Error::from(io::ErrorKind::StorageFull))
            }
            _ => out.file.write_all(bytes),
        };
        match r {
            Ok(()) => {
                out.size += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                let _ = out.file.set_len(out.size);
                let _ = out.file.seek(SeekFrom::Start(out.size));
                Err(e)
            }
        }
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

    /// Ends the block; a failure that lost snapshots held for compression
    /// is counted and returned. (A failed index write leaves the block
    /// open: it is retried at the next block's end, covering both.)
    fn close_block(&mut self, seq: u64) -> Option<RecordWarning> {
        let limit = self.limit();
        let out = self.out.as_mut()?;
        let e = Self::end_block(out, limit).err()?;
        let lost = out.forget_held();
        if lost == 0 {
            return None;
        }
        self.stats.snapshots -= lost;
        Some(self.failure(seq, lost, &e))
    }

    /// Ends a frame whose compressor was lost to a failed write.
    fn close_lost_frame(out: &mut Out, limit: Option<u64>) -> io::Result<()> {
        if out.frame_open && out.enc.is_none() {
            Self::append(out, &zst::FRAME_END, limit)?;
            out.frame_open = false;
            out.mark();
        }
        Ok(())
    }

    /// Ends the block: ends the zstd frame and writes the index record.
    fn end_block(out: &mut Out, limit: Option<u64>) -> io::Result<()> {
        if let Some(enc) = out.enc.as_mut() {
            if out.held > 0 {
                // Flush first: if that fails the held snapshots are lost
                // (the caller counts them); if only the end fails, the
                // frame is ended by hand later and nothing is lost.
                let bytes = match enc.push(b"") {
                    Ok(b) => b,
                    Err(e) => {
                        out.enc = None;
                        return Err(e);
                    }
                };
                if let Err(e) = Self::append(out, &bytes, limit) {
                    out.enc = None;
                    return Err(e);
                }
                out.mark();
            }
            if let Some(enc) = out.enc.take() {
                let bytes = enc.end()?;
                Self::append(out, &bytes, limit)?;
                out.frame_open = false;
                out.mark();
            }
        }
        Self::close_lost_frame(out, limit)?;
        let compress = out.compress;
        let b = &out.block;
        let rec = IndexRecord {
            block: b.number,
            offset: b.offset,
            end: out.size,
            first_line: b.first_line,
            lines: b.lines,
            first: b.first,
            t0: b.t0,
            dt: b.dt.clone(),
            procs: b.procs.clone(),
            events: b.events.clone(),
            prev: out.prev_index,
        };
        let number = b.number;
        let mut json = Vec::new();
        format::write_index(&mut json, &rec);
        let at = out.size;
        if compress {
            let frame = zst::index_frame(json.trim_ascii_end())?;
            Self::append(out, &frame, limit)?;
        } else {
            Self::append(out, &json, limit)?;
            out.lines += 1;
        }
        out.prev_index = Some(at);
        out.block = Block {
            number: number + 1,
            offset: out.size,
            first_line: out.lines + 1,
            first: out.ordinal,
            ..Default::default()
        };
        out.mark();
        Ok(())
    }

    /// Ends the current file and starts a new one at the same path,
    /// shifting the older ones. Returns where the old file went.
    fn rotate(&mut self) -> io::Result<PathBuf> {
        let _ = self.close_block(0);
        if let Some(out) = self.out.take() {
            let _ = out.file.sync_all();
        }
        let keep = self.opts.keep.max(1);
        let _ = fs::remove_file(rotated_path(&self.path, keep));
        for n in (1..keep).rev() {
            let from = rotated_path(&self.path, n);
            if from.exists() {
                fs::rename(&from, rotated_path(&self.path, n + 1))?;
            }
        }
        let previous = rotated_path(&self.path, 1);
        fs::rename(&self.path, &previous)?;
        self.header.part += 1;
        let out = self.start_file(false)?;
        self.out = Some(out);
        self.stats.rotations += 1;
        self.last_sync = Instant::now();
        Ok(previous)
    }

    /// fsyncs, and notices a file removed or moved away (then ends it and
    /// starts a new one at the path).
    fn sync_and_check(&mut self) -> Option<RecordWarning> {
        self.last_sync = Instant::now();
        let out = self.out.as_mut()?;
        let _ = out.file.sync_data();
        let here = fs::metadata(&self.path).ok().map(|m| (m.dev(), m.ino()));
        if here == Some(out.dev_ino) {
            return None;
        }
        let _ = self.close_block(0);
        if let Some(out) = self.out.take() {
            let _ = out.file.sync_all();
        }
        self.header.part += 1;
        let path = self.path.display().to_string();
        match self.start_file(false) {
            Ok(out) => {
                self.out = Some(out);
                self.stats.rotations += 1;
            }
            Err(_) => {
                // Retried at the next write.
            }
        }
        Some(RecordWarning::Removed { path })
    }

    /// Ends the last block, syncs and closes the file.
    pub fn finish(mut self) -> Result<WriterStats, RecordError> {
        self.finished = true;
        if let Some(mut out) = self.out.take() {
            Self::end_block(&mut out, self.limit()).map_err(|e| RecordError::io(&self.path, e))?;
            out.file
                .sync_all()
                .map_err(|e| RecordError::io(&self.path, e))?;
            self.stats.bytes = out.size;
        }
        Ok(self.stats.clone())
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
mod tests {
    use super::*;
    use crate::record::Recording;
    use crate::record::format::cpu_precision;
    use crate::source::sim::SimWorld;

    const T0: u64 = 1_764_000_000_000;

    #[test]
    fn a_full_disk_is_a_warning_and_recording_resumes_when_space_returns() {
        let world = SimWorld::new("demo", 1, T0).unwrap();
        let snaps: Vec<Snapshot> = (0..40)
            .map(|i| world.snapshot(i, T0 + i * 1000, "me"))
            .collect();
        for (name, flush_s) in [
            ("full.jsonl", 0),
            ("full.jsonl.zst", 0),
            ("held.jsonl.zst", 5),
        ] {
            let d = tempfile::tempdir().unwrap();
            let path = d.path().join(name);
            let opts = WriterOptions {
                block_snapshots: 7,
                flush_every: Duration::from_secs(flush_s),
                ..WriterOptions::default()
            };
            let mut w = Writer::create(&path, Header::new(&world.info(), 1000, T0), opts).unwrap();
            for s in &snaps[..10] {
                assert_eq!(w.write(s), WriteOutcome::Written);
            }
            // Room for part of one more snapshot only.
            w.fail_beyond = Some(w.stats().bytes + 60);
            let mut dropped = Vec::new();
            for s in &snaps[10..20] {
                match w.write(s) {
                    WriteOutcome::Written => {}
                    WriteOutcome::Warning(RecordWarning::DiskFull { seq, count, .. }) => {
                        dropped.extend(seq + 1 - count..=seq)
                    }
                    other => panic!("{other:?}"),
                }
            }
            // With flushes every 5 s, the snapshots held since the flush at
            // 7 s (block end) are lost with the compressor too.
            let first_lost = if flush_s == 0 { 10 } else { 7 };
            assert_eq!(dropped, (first_lost..20).collect::<Vec<u64>>(), "{name}");
            assert_eq!(w.stats().dropped, dropped.len() as u64);
            assert_eq!(w.stats().snapshots, first_lost);
            w.fail_beyond = None;
            for s in &snaps[20..] {
                assert_eq!(w.write(s), WriteOutcome::Written);
            }
            w.finish().unwrap();
            let rec = Recording::open(&path).unwrap();
            assert!(rec.warnings().is_empty(), "{:?}", rec.warnings());
            let got: Vec<u64> = rec.iter().map(|s| s.unwrap().seq).collect();
            let want: Vec<u64> = (0..40).filter(|q| !dropped.contains(q)).collect();
            assert_eq!(got, want, "{name}");
            // Process strings are there after the gap.
            let mut last = snaps[39].clone();
            for p in &mut last.procs {
                p.cpu_pct = p.cpu_pct.map(cpu_precision);
            }
            assert_eq!(rec.get(rec.len() - 1).unwrap(), last);
        }
    }

    /// The disk fills at every kind of moment (in a snapshot, a flush, a
    /// frame end, an index record): the file always reads back, holding
    /// exactly the snapshots the writer did not report lost.
    #[test]
    fn a_disk_full_at_any_point_leaves_a_readable_file() {
        let world = SimWorld::new("demo", 2, T0).unwrap();
        let snaps: Vec<Snapshot> = (0..30)
            .map(|i| world.snapshot(i, T0 + i * 1000, "me"))
            .collect();
        for name in ["a.jsonl", "a.jsonl.zst"] {
            for flush_s in [0, 3] {
                for room in (0..6000).step_by(173) {
                    let d = tempfile::tempdir().unwrap();
                    let path = d.path().join(name);
                    let opts = WriterOptions {
                        block_snapshots: 4,
                        flush_every: Duration::from_secs(flush_s),
                        ..WriterOptions::default()
                    };
                    let mut w =
                        Writer::create(&path, Header::new(&world.info(), 1000, T0), opts).unwrap();
                    let mut dropped = Vec::new();
                    for (i, s) in snaps.iter().enumerate() {
                        if i == 5 {
                            w.fail_beyond = Some(w.stats().bytes + room);
                        }
                        if i == 20 {
                            w.fail_beyond = None;
                        }
                        if let WriteOutcome::Warning(RecordWarning::DiskFull {
                            seq, count, ..
                        }) = w.write(s)
                        {
                            dropped.extend(seq + 1 - count..=seq);
                        }
                    }
                    let written = w.stats().snapshots;
                    w.finish().unwrap();
                    let what = format!("{name} flush {flush_s}s room {room}");
                    let rec = Recording::open(&path).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(rec.warnings().is_empty(), "{what}: {:?}", rec.warnings());
                    let got: Vec<u64> = rec
                        .iter()
                        .map(|s| s.unwrap_or_else(|e| panic!("{what}: {e}")).seq)
                        .collect();
                    let want: Vec<u64> = (0..30).filter(|q| !dropped.contains(q)).collect();
                    assert_eq!(got, want, "{what}");
                    assert_eq!(written, got.len() as u64, "{what}");
                }
            }
        }
    }
}
