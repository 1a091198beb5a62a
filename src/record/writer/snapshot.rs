//! One snapshot's lines: the process lines of processes new or changed
//! since the last snapshot, the snapshot line and its event lines,
//! compressed for `.zst`, written in one go and noted in the block.

use std::collections::HashMap;
use std::io;

use super::Writer;
use crate::model::Snapshot;
use crate::record::format::{self, IndexedEvent, IndexedProcess, ProcessInfo};
use crate::record::zst::LineCompressor;

impl Writer {
    /// The lines of `snap` (new process lines, the snapshot, its events),
    /// written in one go.
    pub(super) fn append_snapshot(&mut self, snap: &Snapshot) -> io::Result<()> {
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
        let size = out.size;
        self.tally(size);
        Ok(())
    }
}
