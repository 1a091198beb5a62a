//! The open file's bookkeeping: where the data ends, the block being
//! written and where things stood at the last flush; appending bytes
//! with a cut-back on failure, and ending frames and blocks (the index
//! record).

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};

use super::{RecordWarning, Writer};
use crate::model::Millis;
use crate::record::format::{self, IndexRecord, IndexedEvent, IndexedProcess};
use crate::record::zst::{self, LineCompressor};

/// The open file and where it stands.
pub(super) struct Out {
    pub(super) file: File,
    /// Bytes in the file that hold complete data (a failed write is cut
    /// back to this).
    pub(super) size: u64,
    /// Lines so far (in the decompressed text for `.zst`).
    pub(super) lines: u64,
    pub(super) dev_ino: (u64, u64),
    /// Whether the file is zstd-compressed.
    pub(super) compress: bool,
    /// `.zst`: the compressor of the frame in progress (`None`: the next
    /// group starts a frame).
    pub(super) enc: Option<LineCompressor>,
    /// `.zst`: a frame has been started in the file and not ended. With no
    /// compressor (it was lost to a failed write) it must be ended by hand
    /// before anything else is written.
    pub(super) frame_open: bool,
    /// Snapshots in this file.
    pub(super) ordinal: u64,
    pub(super) block: Block,
    pub(super) prev_index: Option<u64>,
    /// `.zst`: snapshots compressed but not flushed to the file yet, and
    /// where things stood after the last flush (restored when a write
    /// fails and the held snapshots are lost).
    pub(super) held: u64,
    pub(super) flushed: Mark,
    /// `.zst`: time of the snapshot that was last flushed.
    pub(super) flushed_t: Millis,
}

/// What was in the file after a flush.
#[derive(Clone, Copy, Default)]
pub(super) struct Mark {
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
    pub(super) fn mark(&mut self) {
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
    pub(super) fn forget_held(&mut self) -> u64 {
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
pub(super) struct Block {
    pub(super) number: u64,
    pub(super) offset: u64,
    pub(super) first_line: u64,
    pub(super) lines: u64,
    pub(super) first: u64,
    pub(super) t0: Millis,
    pub(super) last_t: Millis,
    pub(super) dt: Vec<i64>,
    pub(super) procs: Vec<IndexedProcess>,
    pub(super) events: Vec<IndexedEvent>,
}

impl Writer {
    /// Writes `bytes` at the end of the data; on failure cuts the file back
    /// so no partial line stays behind.
    pub(super) fn append(out: &mut Out, bytes: &[u8], limit: Option<u64>) -> io::Result<()> {
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

    /// Ends the block; a failure that lost snapshots held for compression
    /// is counted and returned. (A failed index write leaves the block
    /// open: it is retried at the next block's end, covering both.)
    pub(super) fn close_block(&mut self, seq: u64) -> Option<RecordWarning> {
        let limit = self.limit();
        let out = self.out.as_mut()?;
        let ended = Self::end_block(out, limit);
        let size = out.size;
        self.tally(size);
        let e = ended.err()?;
        let lost = self.out.as_mut()?.forget_held();
        if lost == 0 {
            return None;
        }
        self.stats.snapshots -= lost;
        Some(self.failure(seq, lost, &e))
    }

    /// Ends a frame whose compressor was lost to a failed write.
    pub(super) fn close_lost_frame(out: &mut Out, limit: Option<u64>) -> io::Result<()> {
        if out.frame_open && out.enc.is_none() {
            Self::append(out, &zst::FRAME_END, limit)?;
            out.frame_open = false;
            out.mark();
        }
        Ok(())
    }

    /// Ends the block: ends the zstd frame and writes the index record.
    pub(super) fn end_block(out: &mut Out, limit: Option<u64>) -> io::Result<()> {
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
}
