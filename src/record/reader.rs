//! Reads a recording back.
//!
//! [`Recording::open`] reads the header and the index records (following
//! their chain back from the end of the file), and decodes only what the
//! index does not cover: the block a crash left without its record, or the
//! whole file when there is no usable index (a file rewritten by another
//! tool). Snapshots are decoded on demand by [`Recording::get`], a block at
//! a time, the last two blocks kept; times, process strings and events are
//! kept in memory for the whole file.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::format::{self, Header, IndexRecord, LineError, LineType, ProcId, ProcessInfo};
use super::zst;
use super::{FORMAT, RecordError, VERSION};
use crate::model::{Event, Millis, Snapshot, SystemInfo};

/// An event and the position of the snapshot it came with.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedEvent {
    pub index: usize,
    pub event: Event,
}

/// Where a block of lines lies in the file.
#[derive(Clone, Debug)]
struct BlockRef {
    offset: u64,
    end: u64,
    first_line: u64,
    first: u64,
    count: u64,
    /// The file's last block: its last line may be cut off.
    last: bool,
}

/// A block decoded: its text and where each snapshot's lines are.
struct Decoded {
    block: usize,
    text: Vec<u8>,
    snaps: Vec<Loc>,
}

struct Loc {
    line: u64,
    range: Range<usize>,
    events: Vec<(u64, Range<usize>)>,
}

/// A recording opened for reading. `get` takes `&self`: it is shared
/// between threads behind an `Arc`.
pub struct Recording {
    path: PathBuf,
    file: File,
    zstd: bool,
    /// File size when opened.
    len: u64,
    header: Header,
    system: Arc<SystemInfo>,
    blocks: Vec<BlockRef>,
    times: Vec<Millis>,
    procs: HashMap<ProcId, Vec<(u64, ProcessInfo)>>,
    events: Vec<RecordedEvent>,
    warnings: Vec<String>,
    cache: Mutex<Vec<Arc<Decoded>>>,
}

/// Snapshots per block when a file without an index is split up.
const SCAN_BLOCK: u64 = 600;
/// Longest header line accepted.
const MAX_HEADER: u64 = 16 << 20;
/// How much is read at a time when looking for the last index record.
const CHUNK: u64 = 1 << 20;

impl Recording {
    /// Opens a recording (`.jsonl` or zstd-compressed, told apart by its
    /// first bytes).
    pub fn open(path: &Path) -> Result<Recording, RecordError> {
        let file = File::open(path).map_err(|e| RecordError::io(path, e))?;
        let len = file.metadata().map_err(|e| RecordError::io(path, e))?.len();
        let name = path.display().to_string();
        if len == 0 {
            return Err(RecordError::NotARecording {
                path: name,
                why: "the file is empty".into(),
            });
        }
        let mut magic = [0u8; 4];
        let zstd =
            len >= 4 && file.read_exact_at(&mut magic, 0).is_ok() && magic == zst::FRAME_MAGIC;
        let header = read_header(&file, path, zstd)?;
        let mut rec = Recording {
            path: path.to_owned(),
            file,
            zstd,
            len,
            system: Arc::new(header.system.clone()),
            header,
            blocks: Vec::new(),
            times: Vec::new(),
            procs: HashMap::new(),
            events: Vec::new(),
            warnings: Vec::new(),
            cache: Mutex::new(Vec::new()),
        };
        let chain = match rec.index_chain(len) {
            Ok(c) => c,
            Err(why) => {
                rec.warnings.push(format!(
                    "{name}: the index is damaged ({why}); read the whole file instead"
                ));
                Vec::new()
            }
        };
        if let Err(why) = rec.build(&chain, len)? {
            rec.warnings.push(format!(
                "{name}: the index does not match the data ({why}); read the whole file instead"
            ));
            rec.build(&[], len)?
                .map_err(|why| RecordError::NotARecording { path: name, why })?;
        }
        Ok(rec)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn system(&self) -> Arc<SystemInfo> {
        self.system.clone()
    }

    /// Whether the file is zstd-compressed.
    pub fn compressed(&self) -> bool {
        self.zstd
    }

    /// Number of snapshots.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// The time of every snapshot, unix ms, without decoding any.
    pub fn times(&self) -> &[Millis] {
        &self.times
    }

    /// The position of the last snapshot at or before `t_ms` (0 when all
    /// are later).
    pub fn position_at(&self, t_ms: Millis) -> usize {
        self.times.partition_point(|&t| t <= t_ms).saturating_sub(1)
    }

    /// Every event, in order, with the position of its snapshot.
    pub fn events(&self) -> &[RecordedEvent] {
        &self.events
    }

    /// Every process in the file, with its strings as last recorded.
    pub fn processes(&self) -> impl Iterator<Item = &ProcessInfo> {
        self.procs.values().filter_map(|v| v.last().map(|(_, p)| p))
    }

    /// What was skipped or repaired while opening (a cut-off last line, a
    /// damaged index, lines of unknown types).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Snapshot `i` (0-based), with its events and its processes' strings.
    pub fn get(&self, i: usize) -> Result<Snapshot, RecordError> {
        if i >= self.len() {
            return Err(RecordError::OutOfRange {
                path: self.name(),
                index: i,
                len: self.len(),
            });
        }
        let b = self
            .blocks
            .partition_point(|r| r.first + r.count <= i as u64);
        let d = self.decoded(b)?;
        let first = self.blocks[b].first as usize;
        let Some(loc) = d.snaps.get(i - first) else {
            return Err(RecordError::OutOfRange {
                path: self.name(),
                index: i,
                len: self.len(),
            });
        };
        let mut snap =
            format::read_snapshot(&d.text[loc.range.clone()], |id| self.lookup(id, i as u64))
                .map_err(|e| self.line_error(loc.line, e))?;
        for (line, r) in &loc.events {
            let e =
                format::read_event(&d.text[r.clone()]).map_err(|e| self.line_error(*line, e))?;
            snap.events.push(e);
        }
        Ok(snap)
    }

    /// Every snapshot in order.
    pub fn iter(&self) -> impl Iterator<Item = Result<Snapshot, RecordError>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    fn name(&self) -> String {
        self.path.display().to_string()
    }

    fn line_error(&self, line: u64, error: LineError) -> RecordError {
        RecordError::Line {
            path: self.name(),
            line,
            error,
        }
    }

    fn lookup(&self, id: ProcId, at: u64) -> Option<&ProcessInfo> {
        self.procs
            .get(&id)?
            .iter()
            .rev()
            .find(|(from, _)| *from <= at)
            .map(|(_, p)| p)
    }

    fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>, RecordError> {
        let mut buf = vec![0u8; len as usize];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| RecordError::io(&self.path, e))?;
        Ok(buf)
    }

    fn cache(&self) -> MutexGuard<'_, Vec<Arc<Decoded>>> {
        // A panic while decoding leaves nothing half-built in the cache.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn decoded(&self, b: usize) -> Result<Arc<Decoded>, RecordError> {
        let mut cache = self.cache();
        if let Some(d) = cache.iter().find(|d| d.block == b) {
            return Ok(d.clone());
        }
        let d = Arc::new(self.decode(b)?);
        if cache.len() >= 2 {
            cache.remove(0);
        }
        cache.push(d.clone());
        Ok(d)
    }

    /// The text of a block: read, decompressed.
    fn block_text(&self, r: &BlockRef) -> Result<Vec<u8>, RecordError> {
        let raw = self.read_at(r.offset, r.end - r.offset)?;
        let mut text = if self.zstd {
            let (text, _complete) = zst::decompress(&raw).map_err(|e| RecordError::Corrupt {
                path: self.name(),
                offset: r.offset,
                why: e.to_string(),
            })?;
            text
        } else {
            raw
        };
        if r.last {
            strip_zeros(&mut text);
        }
        Ok(text)
    }

    fn decode(&self, b: usize) -> Result<Decoded, RecordError> {
        let r = &self.blocks[b];
        let text = self.block_text(r)?;
        let mut snaps: Vec<Loc> = Vec::with_capacity(r.count as usize);
        for (line, (start, body, complete)) in (r.first_line..).zip(lines(&text)) {
            if !complete {
                if r.last {
                    break;
                }
                return Err(self.line_error(line, cut_off()));
            }
            let range = start..start + body.len();
            match format::line_type(body).map_err(|e| self.line_error(line, e))? {
                LineType::Snapshot => snaps.push(Loc {
                    line,
                    range,
                    events: Vec::new(),
                }),
                LineType::Event => {
                    if let Some(s) = snaps.last_mut() {
                        s.events.push((line, range));
                    }
                }
                _ => {}
            }
        }
        if snaps.len() as u64 != r.count {
            return Err(RecordError::Corrupt {
                path: self.name(),
                offset: r.offset,
                why: format!(
                    "the block holds {} snapshots where {} were indexed (did the file change since it was opened?)",
                    snaps.len(),
                    r.count
                ),
            });
        }
        Ok(Decoded {
            block: b,
            text,
            snaps,
        })
    }

    // ---- opening -----------------------------------------------------------

    /// The index records, first to last, with where each lies and its size.
    fn index_chain(&self, len: u64) -> Result<Vec<(u64, u64, IndexRecord)>, String> {
        let Some((mut pos, mut size, mut rec)) = self.last_index(len)? else {
            return Ok(Vec::new());
        };
        let mut chain = Vec::new();
        loop {
            let prev = rec.prev;
            chain.push((pos, size, rec));
            let Some(p) = prev else { break };
            if p >= pos {
                return Err(format!("record at byte {pos} points forward to {p}"));
            }
            let (r, s) = self
                .record_at(p)
                .ok_or_else(|| format!("no index record at byte {p}"))?;
            if r.end != p {
                return Err(format!("record at byte {p} says it is at {}", r.end));
            }
            (pos, size, rec) = (p, s, r);
        }
        chain.reverse();
        Ok(chain)
    }

    /// The index record at `pos`, if there is a valid one, and its size.
    fn record_at(&self, pos: u64) -> Option<(IndexRecord, u64)> {
        if self.zstd {
            let head = self.read_at(pos, 8).ok()?;
            let n = zst::index_frame_len(&head)?;
            if pos + 8 + n > self.len {
                return None;
            }
            let payload = self.read_at(pos + 8, n).ok()?;
            let json = zst::index_payload(&payload).ok()?;
            let rec = format::read_index(&json).ok()?;
            Some((rec, 8 + n))
        } else {
            let line = self.line_at(pos)?;
            let rec = format::read_index(&line).ok()?;
            Some((rec, line.len() as u64 + 1))
        }
    }

    /// The complete line starting at `pos` (without its newline).
    fn line_at(&self, pos: u64) -> Option<Vec<u8>> {
        let mut f = &self.file;
        f.seek(SeekFrom::Start(pos)).ok()?;
        let mut line = Vec::new();
        BufReader::with_capacity(64 << 10, f)
            .read_until(b'\n', &mut line)
            .ok()?;
        line.pop_if(|b| *b == b'\n')?;
        Some(line)
    }

    /// Finds the last index record, searching back from the end. A record
    /// that is not where it says it is means the file was changed after it
    /// was written: then no record is trusted.
    fn last_index(&self, len: u64) -> Result<Option<(u64, u64, IndexRecord)>, String> {
        let needle: &[u8] = if self.zstd {
            &zst::INDEX_MAGIC
        } else {
            b"\n{\"type\":\"index\""
        };
        let mut end = len;
        while end > 0 {
            let start = end.saturating_sub(CHUNK);
            // Overlap so a needle across the chunk edge is found.
            let stop = (end + needle.len() as u64 - 1).min(len);
            let chunk = self
                .read_at(start, stop - start)
                .map_err(|e| e.to_string())?;
            let mut hay = &chunk[..];
            while let Some(i) = memchr::memmem::rfind(hay, needle) {
                let at = start + i as u64 + if self.zstd { 0 } else { 1 };
                if let Some((rec, size)) = self.record_at(at) {
                    if rec.end != at {
                        return Err(format!(
                            "the record at byte {at} says it is at byte {}: the file was changed after it was written",
                            rec.end
                        ));
                    }
                    return Ok(Some((at, size, rec)));
                }
                hay = &hay[..i];
            }
            end = start;
        }
        Ok(None)
    }

    /// Fills blocks, times, processes and events from the index chain, and
    /// scans what it does not cover. `Ok(Err(why))`: the index and the data
    /// disagree.
    fn build(
        &mut self,
        chain: &[(u64, u64, IndexRecord)],
        len: u64,
    ) -> Result<Result<(), String>, RecordError> {
        self.blocks.clear();
        self.times.clear();
        self.procs.clear();
        self.events.clear();
        let mut cursor = 0u64;
        let mut line = 1u64;
        for (pos, size, rec) in chain {
            if rec.offset < cursor || rec.offset > rec.end || rec.end != *pos {
                return Ok(Err(format!("block {} at byte {}", rec.block, rec.offset)));
            }
            if rec.offset > cursor {
                line = self.scan(cursor, rec.offset, line, false)?;
            }
            if rec.first != self.times.len() as u64 || rec.first_line != line {
                return Ok(Err(format!(
                    "block {} starts at snapshot {} line {}, expected {} and {}",
                    rec.block,
                    rec.first,
                    rec.first_line,
                    self.times.len(),
                    line
                )));
            }
            self.blocks.push(BlockRef {
                offset: rec.offset,
                end: rec.end,
                first_line: rec.first_line,
                first: rec.first,
                count: rec.dt.len() as u64,
                last: false,
            });
            let mut t = rec.t0 as i64;
            for (i, dt) in rec.dt.iter().enumerate() {
                if i > 0 {
                    t = t.saturating_add(*dt);
                }
                self.times.push(t.max(0) as Millis);
            }
            for p in &rec.procs {
                self.add_proc(p.at, p.info.clone());
            }
            self.events.extend(rec.events.iter().map(|e| RecordedEvent {
                index: e.at as usize,
                event: e.event.clone(),
            }));
            line = rec
                .first_line
                .saturating_add(rec.lines)
                .saturating_add(u64::from(!self.zstd));
            cursor = pos + size;
        }
        if cursor < len {
            self.scan(cursor, len, line, true)?;
        }
        if let Some(b) = self.blocks.last_mut()
            && b.end == len
        {
            b.last = true;
        }
        Ok(Ok(()))
    }

    fn add_proc(&mut self, at: u64, info: ProcessInfo) {
        let v = self.procs.entry(info.id()).or_default();
        if v.last().is_some_and(|(_, p)| *p == info) {
            return;
        }
        v.push((at, info));
    }

    /// Reads lines in `[start, end)` that no index record covers, adding
    /// blocks, times, processes and events. Returns the next line number.
    fn scan(
        &mut self,
        start: u64,
        end: u64,
        first_line: u64,
        last: bool,
    ) -> Result<u64, RecordError> {
        if self.zstd {
            self.scan_zstd(start, end, first_line, last)
        } else {
            self.scan_plain(start, end, first_line, last)
        }
    }

    fn scan_plain(
        &mut self,
        start: u64,
        end: u64,
        mut line: u64,
        last: bool,
    ) -> Result<u64, RecordError> {
        let mut f = self
            .file
            .try_clone()
            .map_err(|e| RecordError::io(&self.path, e))?;
        f.seek(SeekFrom::Start(start))
            .map_err(|e| RecordError::io(&self.path, e))?;
        let mut input = BufReader::with_capacity(1 << 20, f.take(end - start));
        let mut block = self.open_block(start, line);
        let mut pos = start;
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let n = input
                .read_until(b'\n', &mut buf)
                .map_err(|e| RecordError::io(&self.path, e))?;
            if n == 0 {
                break;
            }
            if buf.last() != Some(&b'\n') {
                // The last line of the region has no newline.
                if !last {
                    return Err(self.line_error(line, cut_off()));
                }
                self.warn_cut_off(line, &buf);
                break;
            }
            let body = &buf[..n - 1];
            let ty = format::line_type(body).map_err(|e| self.line_error(line, e))?;
            // Long runs without an index are split into blocks, each
            // starting with a snapshot's lines.
            if block.count >= SCAN_BLOCK && matches!(ty, LineType::Snapshot | LineType::Process) {
                block.end = pos;
                let done = std::mem::replace(&mut block, self.open_block(pos, line));
                self.blocks.push(done);
            }
            self.take_line(line, body)?;
            block.count += u64::from(ty == LineType::Snapshot);
            pos += n as u64;
            line += 1;
        }
        block.end = end;
        if block.count > 0 {
            self.blocks.push(block);
        }
        Ok(line)
    }

    /// As `scan_plain`, a zstd frame at a time; a block is one frame, or
    /// several when a line runs on from one into the next.
    fn scan_zstd(
        &mut self,
        start: u64,
        end: u64,
        mut line: u64,
        last: bool,
    ) -> Result<u64, RecordError> {
        let raw = self.read_at(start, end - start)?;
        let mut pos = 0usize;
        let mut block = self.open_block(start, line);
        let mut text = Vec::new();
        while pos < raw.len() {
            let rest = &raw[pos..];
            let frame_len = match zstd::zstd_safe::find_frame_compressed_size(rest) {
                Ok(n) => n,
                // A cut-off last frame.
                Err(_) if last => rest.len(),
                Err(_) => {
                    return Err(RecordError::Corrupt {
                        path: self.name(),
                        offset: start + pos as u64,
                        why: "not a complete zstd frame".into(),
                    });
                }
            };
            let (t, _) = zst::decompress(&rest[..frame_len]).map_err(|e| RecordError::Corrupt {
                path: self.name(),
                offset: start + pos as u64,
                why: e.to_string(),
            })?;
            text.extend_from_slice(&t);
            pos += frame_len;
            let at_end = pos >= raw.len();
            if !at_end && !text.is_empty() && text.last() != Some(&b'\n') {
                continue;
            }
            if at_end && last {
                strip_zeros(&mut text);
            }
            line = self.take_text(&text, line, &mut block, last && at_end)?;
            text.clear();
            block.end = start + pos as u64;
            if block.count > 0 {
                let next = self.open_block(block.end, line);
                let done = std::mem::replace(&mut block, next);
                self.blocks.push(done);
            } else {
                block = self.open_block(block.end, line);
            }
        }
        Ok(line)
    }

    /// Takes the lines of decompressed `text` into `block`.
    fn take_text(
        &mut self,
        text: &[u8],
        mut line: u64,
        block: &mut BlockRef,
        last: bool,
    ) -> Result<u64, RecordError> {
        for (_, body, complete) in lines(text) {
            if !complete {
                if !last {
                    return Err(self.line_error(line, cut_off()));
                }
                self.warn_cut_off(line, body);
                break;
            }
            if self.take_line(line, body)? == LineType::Snapshot {
                block.count += 1;
            }
            line += 1;
        }
        Ok(line)
    }

    fn open_block(&self, offset: u64, line: u64) -> BlockRef {
        BlockRef {
            offset,
            end: offset,
            first_line: line,
            first: self.times.len() as u64,
            count: 0,
            last: false,
        }
    }

    fn warn_cut_off(&mut self, line: u64, body: &[u8]) {
        if body.iter().all(|&b| b == 0) {
            return;
        }
        self.warnings.push(format!(
            "{}:{line}: the last line is cut off (the recorder was stopped while writing it): skipped",
            self.name()
        ));
    }

    /// Takes one complete line found by a scan.
    fn take_line(&mut self, line: u64, body: &[u8]) -> Result<LineType, RecordError> {
        let ty = format::line_type(body).map_err(|e| self.line_error(line, e))?;
        let at = self.times.len() as u64;
        match ty {
            LineType::Snapshot => {
                let t = format::snapshot_time(body).map_err(|e| self.line_error(line, e))?;
                self.times.push(t);
            }
            LineType::Process => {
                let p = format::read_process(body).map_err(|e| self.line_error(line, e))?;
                self.add_proc(at, p);
            }
            LineType::Event => {
                let e = format::read_event(body).map_err(|e| self.line_error(line, e))?;
                self.events.push(RecordedEvent {
                    index: at.saturating_sub(1) as usize,
                    event: e,
                });
            }
            LineType::Header | LineType::Index => {}
            LineType::Other => {
                let msg = format!(
                    "{}: lines of a type this vramwatch does not know (from a newer version?) were skipped, the first at line {line}",
                    self.name()
                );
                if !self.warnings.iter().any(|w| w.contains("does not know")) {
                    self.warnings.push(msg);
                }
            }
        }
        Ok(ty)
    }
}

fn cut_off() -> LineError {
    LineError::Json(serde::de::Error::custom(
        "the line is cut off (no newline) in the middle of the file",
    ))
}

/// Removes zero bytes at the end (a filesystem's leftovers after a crash).
fn strip_zeros(text: &mut Vec<u8>) {
    while text.last() == Some(&0) {
        text.pop();
    }
}

/// The lines of `text`: (offset, line without its newline, whether it had
/// one).
fn lines(text: &[u8]) -> impl Iterator<Item = (usize, &[u8], bool)> {
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= text.len() {
            return None;
        }
        let start = pos;
        match memchr::memchr(b'\n', &text[pos..]) {
            Some(i) => {
                pos += i + 1;
                Some((start, &text[start..start + i], true))
            }
            None => {
                pos = text.len();
                Some((start, &text[start..], false))
            }
        }
    })
}

/// Reads and checks line 1.
fn read_header(file: &File, path: &Path, zstd: bool) -> Result<Header, RecordError> {
    let name = path.display().to_string();
    let mut first = Vec::new();
    let r = if zstd {
        zstd::stream::read::Decoder::new(file).and_then(|d| {
            BufReader::new(d)
                .take(MAX_HEADER)
                .read_until(b'\n', &mut first)
        })
    } else {
        BufReader::new(file)
            .take(MAX_HEADER)
            .read_until(b'\n', &mut first)
    };
    if let Err(e) = r
        && first.is_empty()
    {
        return Err(RecordError::NotARecording {
            path: name,
            why: format!("its first line cannot be read ({e})"),
        });
    }
    if first.pop() != Some(b'\n') {
        return Err(RecordError::NotARecording {
            path: name,
            why: "line 1 (the header) is incomplete".into(),
        });
    }
    let not = |why: String| RecordError::NotARecording {
        path: name.clone(),
        why,
    };
    let v: serde_json::Value =
        serde_json::from_slice(&first).map_err(|e| not(format!("line 1 is not JSON ({e})")))?;
    if v.get("type").and_then(|t| t.as_str()) != Some("header")
        || v.get("format").and_then(|t| t.as_str()) != Some(FORMAT)
    {
        return Err(not(format!(
            "line 1 is not a header with \"format\": \"{FORMAT}\""
        )));
    }
    let found = v
        .get("version")
        .and_then(|x| x.as_u64())
        .ok_or_else(|| not("the header has no version number".into()))?;
    if found != VERSION as u64 {
        return Err(RecordError::Version {
            path: name,
            found,
            writer: v
                .get("vramwatch_version")
                .and_then(|x| x.as_str())
                .unwrap_or("?")
                .to_owned(),
            ours: env!("CARGO_PKG_VERSION"),
            advice: if found > VERSION as u64 {
                "it is newer: upgrade vramwatch to read it"
            } else {
                "it is older: read it with the vramwatch that wrote it"
            },
        });
    }
    serde_json::from_value(v).map_err(|e| RecordError::Line {
        path: name,
        line: 1,
        error: LineError::Json(e),
    })
}
