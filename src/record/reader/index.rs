//! The index records: found from the end of the file back along their
//! chain (in time linear in the file: each record read at most once, a
//! bounded number of false starts), checked for structure, and each
//! block's first snapshot checked against its `t0` before anything is
//! built on them.

use super::check::{Kind, classify, when};
use super::scan::{Build, add_proc};
use super::text::{Lines, Step, Text, stopped};
use super::{Block, RecordedEvent, Recording, State};
use crate::record::RecordError;
use crate::record::format::{self, IndexRecord, IndexedEvent, IndexedProcess};
use crate::record::zst::{self, FRAME_MAGIC, INDEX_MAGIC, MAX_INDEX_FRAME, read_full_at};

/// How much is read at a time when looking for the last index record.
const CHUNK: u64 = 1 << 20;
/// Index-looking places tried, from the end, before giving up on the index.
const CANDIDATES: u32 = 16;
/// The shortest snapshot line (`{"type":"snapshot","seq":0,"t_ms":0}`):
/// bounds how many snapshots a block can hold.
const MIN_SNAPSHOT: u64 = 36;
/// Text read to find a block's first snapshot.
const PROBE: u64 = 4 << 20;

/// What decoding a block checks, from its index record.
#[derive(Debug)]
pub(super) struct Check {
    pub(super) lines: u64,
    pub(super) procs: Vec<IndexedProcess>,
    pub(super) events: Vec<IndexedEvent>,
}

/// An index record, where it is and its size.
type Found = (u64, u64, IndexRecord);

/// Index text allowed for a file of `len` bytes: vramwatch's records are
/// a small part of what they index.
fn index_budget(len: u64) -> u64 {
    len.saturating_mul(8) + (4 << 20)
}

impl Recording {
    /// The index records, first to last: empty when the file has none.
    /// `Err`: there are records, but they cannot be followed.
    pub(super) fn index_chain(&self) -> Result<Vec<Found>, String> {
        let Some(last) = self.last_index()? else {
            return Ok(Vec::new());
        };
        let (pos, size, mut json, rec) = last;
        let mut budget = index_budget(self.len);
        let mut chain = vec![(pos, size, rec)];
        loop {
            budget = budget
                .checked_sub(json)
                .ok_or_else(|| "its records are larger than the file they index".to_string())?;
            let (pos, offset, prev) = match chain.last() {
                Some((pos, _, rec)) => (*pos, rec.offset, rec.prev),
                None => break,
            };
            let Some(p) = prev else { break };
            if p >= offset || offset > pos {
                return Err(format!(
                    "the record at byte {pos} says its block starts at byte {offset}, after the record before it at byte {p}"
                ));
            }
            let (r, s, j) = self.record_at(p, offset).ok_or_else(|| {
                format!("no index record at byte {p}, where the record at byte {pos} points")
            })?;
            if p + s != offset {
                return Err(format!(
                    "the record at byte {p} ends at byte {}, but the block after it starts at byte {offset}",
                    p + s
                ));
            }
            if r.end != p {
                return Err(format!(
                    "the record at byte {p} says it is at byte {}",
                    r.end
                ));
            }
            json = j;
            chain.push((p, s, r));
        }
        chain.reverse();
        Ok(chain)
    }

    /// The last index record, searching back from the end. A record that is
    /// not where it says it is means the file was changed after it was
    /// written: then none is trusted.
    fn last_index(&self) -> Result<Option<(u64, u64, u64, IndexRecord)>, String> {
        let needle: &[u8] = if self.zstd {
            &INDEX_MAGIC
        } else {
            b"\n{\"type\":\"index\""
        };
        let mut end = self.len;
        let mut tried = 0;
        let mut failed: Option<u64> = None;
        while end > 0 {
            let start = end.saturating_sub(CHUNK);
            // Overlap so a needle across the chunk edge is found.
            let stop = (end + needle.len() as u64 - 1).min(self.len);
            let mut chunk = vec![0u8; (stop - start) as usize];
            let got = read_full_at(&self.file, &mut chunk, start).map_err(|e| e.to_string())?;
            chunk.truncate(got);
            let mut hay = &chunk[..];
            while let Some(i) = memchr::memmem::rfind(hay, needle) {
                hay = &hay[..i];
                let at = start + i as u64 + u64::from(!self.zstd);
                if !self.looks_like_index(at) {
                    continue;
                }
                tried += 1;
                match self.record_at(at, self.len) {
                    Some((rec, size, json)) => {
                        if rec.end != at {
                            return Err(format!(
                                "the last index record, at byte {at}, says it is at byte {}: the file was changed after it was written",
                                rec.end
                            ));
                        }
                        return Ok(Some((at, size, json, rec)));
                    }
                    None => {
                        failed.get_or_insert(at);
                    }
                }
                if tried >= CANDIDATES {
                    break;
                }
            }
            if tried >= CANDIDATES {
                break;
            }
            end = start;
        }
        match failed {
            Some(at) => Err(format!("the index record at byte {at} cannot be read")),
            None => Ok(None),
        }
    }

    /// Whether an index frame's header at `at` holds a zstd frame of a
    /// size that fits (`.zst`); always for plain files (the needle is the
    /// line's start).
    fn looks_like_index(&self, at: u64) -> bool {
        if !self.zstd {
            return true;
        }
        let mut head = [0u8; 12];
        let n = read_full_at(&self.file, &mut head, at).unwrap_or(0);
        n == 12
            && zst::index_frame_len(&head)
                .is_some_and(|len| len <= MAX_INDEX_FRAME && at + 8 + len <= self.len)
            && head[8..12] == FRAME_MAGIC
    }

    /// The index record at `pos`, if there is a valid one ending at or
    /// before `limit`, its size in the file and the size of its JSON.
    fn record_at(&self, pos: u64, limit: u64) -> Option<(IndexRecord, u64, u64)> {
        if self.zstd {
            let mut head = [0u8; 8];
            if read_full_at(&self.file, &mut head, pos).ok()? < 8 {
                return None;
            }
            let n = zst::index_frame_len(&head)?;
            if n > MAX_INDEX_FRAME || pos + 8 + n > limit {
                return None;
            }
            let mut payload = vec![0u8; n as usize];
            if read_full_at(&self.file, &mut payload, pos + 8).ok()? < payload.len() {
                return None;
            }
            let json = zst::index_payload(&payload).ok()?;
            let rec = format::read_index(&json).ok()?;
            Some((rec, 8 + n, json.len() as u64))
        } else {
            if pos > 0 {
                let mut b = [0u8; 1];
                if read_full_at(&self.file, &mut b, pos - 1).ok()? < 1 || b[0] != b'\n' {
                    return None;
                }
            }
            let room = limit.saturating_sub(pos).min(super::MAX_LINE as u64 + 1);
            let mut line = vec![0u8; room as usize];
            let got = read_full_at(&self.file, &mut line, pos).ok()?;
            line.truncate(got);
            let nl = memchr::memchr(b'\n', &line)?;
            let rec = format::read_index(&line[..nl]).ok()?;
            Some((rec, nl as u64 + 1, nl as u64))
        }
    }

    /// The state the index describes, checked: `Ok(Err(why))` when the
    /// index and the data disagree.
    pub(super) fn state_from_index(
        &self,
        chain: &[Found],
    ) -> Result<Result<State, String>, RecordError> {
        let mut b = Build::new(&self.name, self.zstd, self.len);
        let mut cursor = 0u64;
        let mut line = 1u64;
        // What the file could hold, at the fewest bytes per snapshot.
        let room = if self.zstd {
            self.len.saturating_mul(zst::MAX_RATIO) + zst::GUARD_FLOOR
        } else {
            self.len
        } / MIN_SNAPSHOT;
        for (k, (pos, size, rec)) in chain.iter().enumerate() {
            let count = rec.dt.len() as u64;
            let first = b.times.len() as u64;
            let wrong = if rec.block != k as u64 {
                Some(format!("record {k} says it is block {}", rec.block))
            } else if rec.offset != cursor {
                Some(format!(
                    "block {k} starts at byte {}, where the record before it ends at byte {cursor}",
                    rec.offset
                ))
            } else if rec.first != first || rec.first_line != line {
                Some(format!(
                    "block {k} starts at snapshot {} line {}, expected {first} and {line}",
                    rec.first, rec.first_line
                ))
            } else if count > rec.lines || first + count > room {
                Some(format!(
                    "block {k} lists {count} snapshots in {} lines: more than it can hold",
                    rec.lines
                ))
            } else if rec
                .procs
                .iter()
                .any(|p| p.at < first || p.at >= first + count)
                || rec
                    .events
                    .iter()
                    .any(|e| e.at < first || e.at >= first + count)
            {
                Some(format!(
                    "block {k} lists processes or events of snapshots outside it"
                ))
            } else if count > 0 {
                self.probe(rec)?
            } else {
                None
            };
            if let Some(why) = wrong {
                return Ok(Err(why));
            }
            b.blocks.push(Block {
                start: rec.offset,
                stop: rec.end,
                skip: 0,
                len: None,
                first_line: rec.first_line,
                first,
                count,
                check: Some(std::sync::Arc::new(Check {
                    lines: rec.lines,
                    procs: rec.procs.clone(),
                    events: rec.events.clone(),
                })),
            });
            let mut t = rec.t0 as i64;
            for (i, dt) in rec.dt.iter().enumerate() {
                if i > 0 {
                    t = t.saturating_add(*dt);
                }
                b.times.push(t.max(0) as u64);
            }
            for p in &rec.procs {
                add_proc(&mut b.procs, p.at, k, p.info.clone());
            }
            b.events.extend(rec.events.iter().map(|e| RecordedEvent {
                index: e.at as usize,
                event: e.event.clone(),
            }));
            line = rec
                .first_line
                .saturating_add(rec.lines)
                .saturating_add(u64::from(!self.zstd));
            cursor = pos + size;
        }
        if cursor < self.len {
            // What a crash left after the last block's record.
            b.scan(self, cursor, line)?;
        }
        Ok(Ok(self.finish(b, 0)))
    }

    /// Checks that a block starts where a block can (a line, a frame) and
    /// that its first snapshot is at the record's `t0`. `Some(why)` when
    /// not; `None` also when damaged data hides the first snapshot (the
    /// block's decoding will say).
    fn probe(&self, rec: &IndexRecord) -> Result<Option<String>, RecordError> {
        let io = |e| RecordError::io(&self.path, e);
        let mut head = [0u8; 4];
        let n = read_full_at(&self.file, &mut head, rec.offset).map_err(io)?;
        let starts = if self.zstd {
            n == 4 && head == FRAME_MAGIC
        } else if rec.offset == 0 {
            true
        } else {
            let mut b = [0u8; 1];
            read_full_at(&self.file, &mut b, rec.offset - 1).map_err(io)? == 1 && b[0] == b'\n'
        };
        if !starts {
            return Ok(Some(format!(
                "block {} does not start at byte {}, where its record says",
                rec.block, rec.offset
            )));
        }
        let src =
            Text::new(self.file.clone(), rec.offset, rec.end, self.zstd, 16 << 10).map_err(io)?;
        let mut lines = Lines::new(src, rec.first_line);
        loop {
            match lines.next().map_err(|e| stopped(&self.name, e))? {
                Step::Line { no, .. } => match classify(lines.line()) {
                    Ok(Kind::Snapshot { t_ms, .. }) => {
                        return Ok((t_ms != rec.t0).then(|| {
                            format!(
                                "block {} starts with a snapshot of {} (line {no}), but its record says {}",
                                rec.block,
                                when(t_ms),
                                when(rec.t0)
                            )
                        }));
                    }
                    Ok(_) => {}
                    Err(_) => return Ok(None),
                },
                _ => return Ok(None),
            }
            if lines.stats().text_bytes > PROBE {
                return Ok(None);
            }
        }
    }
}
