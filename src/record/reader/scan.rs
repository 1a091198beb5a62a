//! The linear scan that splits a file into blocks (the whole file when it
//! has no usable index, the part after its last index record otherwise),
//! and decoding one block, checking it against what the index or the scan
//! said it holds.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use super::check::{Kind, Tally, classify, cut_off, gap_words};
use super::frames::{Origin, Piece};
use super::text::{Lines, Step, Text, stopped};
use super::{Block, Miss, ProcLine, RecordedEvent, Recording, State};
use crate::model::{Event, Millis};
use crate::record::RecordError;
use crate::record::format::{self, ProcId, ProcessInfo};
use crate::record::zst::read_full_at;

/// Snapshots per block when a scan splits a file up.
const SCAN_BLOCK: u64 = 600;
/// Text per block when a scan splits a file up.
const BLOCK_BYTES: u64 = 8 << 20;
/// The most text a block described by an index may hold.
pub(super) const MAX_BLOCK_TEXT: u64 = 64 << 20;
/// Text decoded at a time.
const PIECE: usize = 128 << 10;

/// Data of a block that could not be decoded: what and how many bytes.
type Trouble = (String, u64);

/// What a scan collects.
pub(super) struct Build {
    name: String,
    zstd: bool,
    len: u64,
    pub(super) blocks: Vec<Block>,
    pub(super) times: Vec<Millis>,
    pub(super) procs: HashMap<ProcId, Vec<ProcLine>>,
    pub(super) events: Vec<RecordedEvent>,
    pub(super) tally: Tally,
    pub(super) warnings: Vec<String>,
    open: Option<Open>,
    /// `seq` of the last snapshot of the open block (its events follow).
    event_seq: Option<u64>,
    unknown: bool,
    joined: bool,
}

/// The block being collected.
struct Open {
    start: u64,
    skip: u64,
    at: u64,
    end: u64,
    first_line: u64,
    first: u64,
    count: u64,
}

pub(super) fn add_proc(
    procs: &mut HashMap<ProcId, Vec<ProcLine>>,
    at: u64,
    block: usize,
    info: ProcessInfo,
) {
    let v = procs.entry(info.id()).or_default();
    if v.last().is_some_and(|p| p.info == info) {
        return;
    }
    v.push(ProcLine { at, block, info });
}

impl Build {
    pub(super) fn new(name: &str, zstd: bool, len: u64) -> Build {
        Build {
            name: name.to_owned(),
            zstd,
            len,
            blocks: Vec::new(),
            times: Vec::new(),
            procs: HashMap::new(),
            events: Vec::new(),
            tally: Tally::new(name),
            warnings: Vec::new(),
            open: None,
            event_seq: None,
            unknown: false,
            joined: false,
        }
    }

    /// Reads the file from byte `from` (a frame boundary for `.zst`) to
    /// its end, numbering lines from `first_no`.
    pub(super) fn scan(
        &mut self,
        rec: &Recording,
        from: u64,
        first_no: u64,
    ) -> Result<(), RecordError> {
        let src = Text::new(rec.file.clone(), from, self.len, self.zstd, PIECE)
            .map_err(|e| RecordError::io(&rec.path, e))?;
        let mut lines = Lines::new(src, first_no);
        loop {
            match lines.next().map_err(|e| stopped(&self.name, e))? {
                Step::Line {
                    no,
                    at,
                    origin,
                    end,
                } => {
                    let before = self.tally.damage.lines;
                    self.line(&lines, no, at, origin, end);
                    if self.tally.damage.lines == before {
                        self.tally.good_line();
                    }
                    self.tally.give_up()?;
                }
                Step::Overlong { no } => {
                    self.close();
                    self.tally.overlong(no);
                    self.tally.give_up()?;
                }
                Step::Broken { no } => {
                    self.close();
                    self.tally.bad_line(no, super::check::BROKEN);
                }
                Step::Gap { gap, cut } => {
                    self.close();
                    self.tally.gap(&gap, cut, self.len);
                }
                Step::Notice(s) => self.warnings.push(format!("{}: {s}", self.name)),
                Step::Cut { no, zeros } => {
                    self.close();
                    if !zeros {
                        self.warnings.push(cut_off(&self.name, no));
                    }
                }
                Step::End => {
                    self.close();
                    return Ok(());
                }
            }
        }
    }

    fn line(&mut self, lines: &Lines, no: u64, at: u64, origin: Origin, end: u64) {
        let text = lines.line();
        let kind = match classify(text) {
            Ok(k) => k,
            Err(e) => {
                self.extend(no, at, origin, end);
                self.tally.bad_line(no, e);
                return;
            }
        };
        if matches!(kind, Kind::Snapshot { .. } | Kind::Process)
            && self
                .open
                .as_ref()
                .is_some_and(|o| o.count >= SCAN_BLOCK || o.end - o.at >= BLOCK_BYTES)
        {
            self.close();
        }
        self.extend(no, at, origin, end);
        let here = self.times.len() as u64;
        match kind {
            Kind::Snapshot { seq, t_ms } => {
                self.times.push(t_ms);
                if let Some(o) = &mut self.open {
                    o.count += 1;
                }
                self.tally.snapshot(seq);
                self.event_seq = Some(seq);
            }
            Kind::Process => match format::read_process(text) {
                Ok(p) => add_proc(&mut self.procs, here, usize::MAX, p),
                Err(e) => self.tally.bad_line(no, e),
            },
            Kind::Event => match format::read_event_seq(text) {
                Ok((seq, event)) => {
                    if let Some(last) = self.event_seq
                        && seq.is_none_or(|s| s == last)
                    {
                        self.events.push(RecordedEvent {
                            index: self.times.len() - 1,
                            event,
                        });
                    }
                }
                Err(e) => self.tally.bad_line(no, e),
            },
            Kind::Header => {
                if no > 1 && !std::mem::replace(&mut self.joined, true) {
                    self.warnings.push(format!(
                        "{}:{no}: another header (files joined together?): read on as one recording",
                        self.name
                    ));
                }
            }
            Kind::Index => {}
            Kind::Other => {
                if !std::mem::replace(&mut self.unknown, true) {
                    self.warnings.push(format!(
                        "{}: lines of a type this vramwatch does not know (from a newer version?) were skipped, the first at line {no}",
                        self.name
                    ));
                }
            }
        }
    }

    fn extend(&mut self, no: u64, at: u64, origin: Origin, end: u64) {
        match &mut self.open {
            Some(o) => o.end = end,
            None => {
                let (start, skip) = if self.zstd {
                    (origin.frame, at - origin.frame_text)
                } else {
                    (at, 0)
                };
                self.open = Some(Open {
                    start,
                    skip,
                    at,
                    end,
                    first_line: no,
                    first: self.times.len() as u64,
                    count: 0,
                });
            }
        }
    }

    fn close(&mut self) {
        self.event_seq = None;
        if let Some(o) = self.open.take()
            && o.count > 0
        {
            self.blocks.push(Block {
                start: o.start,
                stop: self.len,
                skip: o.skip,
                len: Some(o.end - o.at),
                first_line: o.first_line,
                first: o.first,
                count: o.count,
                check: None,
            });
        }
    }
}

/// Where a snapshot is in a decoded block, and its events.
pub(super) struct Loc {
    pub(super) line: u64,
    pub(super) range: Range<usize>,
    pub(super) events: Vec<Event>,
}

/// A block decoded: its text and where each snapshot's line is (`None`:
/// the index lists a snapshot the data has lost; `why` says how).
pub(super) struct Decoded {
    generation: u64,
    block: usize,
    pub(super) text: Vec<u8>,
    pub(super) snaps: Vec<Option<Loc>>,
    pub(super) why: String,
}

/// Decoded blocks (the last two) and where the last scanned block's
/// decoding stopped (the next one in the same frame goes on from there).
#[derive(Default)]
pub(super) struct Cache {
    blocks: Vec<Arc<Decoded>>,
    cursor: Option<Cursor>,
}

struct Cursor {
    generation: u64,
    start: u64,
    /// Text offset (from `start`) of the next byte.
    made: u64,
    text: Text,
    /// The piece being read: its text offset, position, length.
    piece: Option<(u64, usize, usize)>,
}

impl Cache {
    pub(super) fn find(&self, generation: u64, b: usize) -> Option<Arc<Decoded>> {
        self.blocks
            .iter()
            .find(|d| d.generation == generation && d.block == b)
            .cloned()
    }

    pub(super) fn keep(&mut self, d: Arc<Decoded>) {
        if self.blocks.len() >= 2 {
            self.blocks.remove(0);
        }
        self.blocks.push(d);
    }

    pub(super) fn clear(&mut self) {
        self.blocks.clear();
        self.cursor = None;
    }
}

/// A block's lines, sorted.
#[derive(Default)]
struct Parsed {
    found: Vec<Found>,
    damaged: Vec<String>,
    lines: u64,
    /// Process lines, with the block ordinal of the snapshot they precede.
    procs: Vec<(u64, ProcessInfo)>,
}

struct Found {
    t_ms: Millis,
    loc: Loc,
    seq: u64,
}

fn parse(name: &str, text: &[u8], first_line: u64, procs: bool) -> Parsed {
    let mut p = Parsed::default();
    let mut pos = 0;
    let mut no = first_line;
    while pos < text.len() {
        let (body, next, complete) = match memchr::memchr(b'\n', &text[pos..]) {
            Some(i) => (&text[pos..pos + i], pos + i + 1, true),
            None => (&text[pos..], text.len(), false),
        };
        let range = pos..pos + body.len();
        pos = next;
        p.lines += 1;
        let line = no;
        no += 1;
        if !complete {
            p.damaged
                .push(format!("{name}:{line}: the line is cut off: skipped"));
            break;
        }
        match classify(body) {
            Err(e) => p.damaged.push(format!("{name}:{line}: {e}: skipped")),
            Ok(Kind::Snapshot { seq, t_ms }) => p.found.push(Found {
                t_ms,
                seq,
                loc: Loc {
                    line,
                    range,
                    events: Vec::new(),
                },
            }),
            Ok(Kind::Event) => match format::read_event_seq(body) {
                Ok((seq, e)) => {
                    if let Some(f) = p.found.last_mut()
                        && seq.is_none_or(|s| s == f.seq)
                    {
                        f.loc.events.push(e);
                    }
                }
                Err(e) => p.damaged.push(format!("{name}:{line}: {e}: skipped")),
            },
            Ok(Kind::Process) if procs => match format::read_process(body) {
                Ok(info) => p.procs.push((p.found.len() as u64, info)),
                Err(e) => p.damaged.push(format!("{name}:{line}: {e}: skipped")),
            },
            Ok(_) => {}
        }
    }
    p
}

impl Recording {
    pub(super) fn decode(&self, st: &State, b: usize, cache: &mut Cache) -> Result<Decoded, Miss> {
        let blk = &st.blocks[b];
        let (text, trouble) = match blk.len {
            Some(len) => (self.range_text(st.generation, blk, len, cache)?, None),
            None => self.index_text(blk, b)?,
        };
        let parsed = parse(&self.name, &text, blk.first_line, blk.check.is_some());
        let (snaps, why) = match &blk.check {
            None => {
                if parsed.found.len() as u64 != blk.count {
                    return Err(Miss::Fail(RecordError::Corrupt {
                        path: self.name.clone(),
                        offset: blk.start,
                        why: format!(
                            "the block from line {} holds {} snapshots where {} were there when the file was opened: did it change since?",
                            blk.first_line,
                            parsed.found.len(),
                            blk.count
                        ),
                    }));
                }
                let snaps = parsed.found.into_iter().map(|f| Some(f.loc)).collect();
                (snaps, String::new())
            }
            Some(c) => self.check_block(st, b, c, parsed, trouble)?,
        };
        Ok(Decoded {
            generation: st.generation,
            block: b,
            text,
            snaps,
            why,
        })
    }

    /// Matches a block's data with what its index record says: every
    /// snapshot the data holds must be listed, at its time, in order; a
    /// listed snapshot may be missing only where the data is damaged.
    /// Without damage the lines, process lines and events must be the
    /// record's too.
    fn check_block(
        &self,
        st: &State,
        b: usize,
        c: &super::index::Check,
        parsed: Parsed,
        trouble: Option<Trouble>,
    ) -> Result<(Vec<Option<Loc>>, String), Miss> {
        let blk = &st.blocks[b];
        let first = blk.first as usize;
        let times = &st.times[first..first + blk.count as usize];
        let hurt = !parsed.damaged.is_empty() || trouble.is_some();
        let mut map: Vec<Option<usize>> = vec![None; times.len()];
        let mut pos = 0;
        for (j, f) in parsed.found.iter().enumerate() {
            let Some(k) = times[pos..].iter().position(|&t| t == f.t_ms) else {
                return Err(Miss::Index(format!(
                    "line {} holds a snapshot of {} that the record of block {b} does not list there",
                    f.loc.line,
                    super::check::when(f.t_ms)
                )));
            };
            if k > 0 && !hurt {
                return Err(Miss::Index(format!(
                    "the record of block {b} lists {k} snapshot(s) before line {} that are not there",
                    f.loc.line
                )));
            }
            map[pos + k] = Some(j);
            pos += k + 1;
        }
        let missing = times.len() - parsed.found.len();
        if !hurt && missing > 0 {
            return Err(Miss::Index(format!(
                "block {b} holds {} snapshots where its record lists {}",
                parsed.found.len(),
                times.len()
            )));
        }
        if trouble.is_none() && missing > parsed.damaged.len() {
            return Err(Miss::Index(format!(
                "block {b} holds {} snapshots and {} damaged lines where its record lists {} snapshots",
                parsed.found.len(),
                parsed.damaged.len(),
                times.len()
            )));
        }
        if !hurt {
            if parsed.lines != c.lines {
                return Err(Miss::Index(format!(
                    "block {b} has {} lines where its record says {}",
                    parsed.lines, c.lines
                )));
            }
            let procs: Vec<(u64, &ProcessInfo)> = parsed
                .procs
                .iter()
                .map(|(k, p)| (blk.first + k, p))
                .collect();
            let listed: Vec<(u64, &ProcessInfo)> =
                c.procs.iter().map(|p| (p.at, &p.info)).collect();
            if procs != listed {
                return Err(Miss::Index(format!(
                    "the process lines of block {b} are not those its record lists"
                )));
            }
            let events: Vec<(u64, &Event)> = parsed
                .found
                .iter()
                .enumerate()
                .flat_map(|(k, f)| f.loc.events.iter().map(move |e| (blk.first + k as u64, e)))
                .collect();
            let listed: Vec<(u64, &Event)> = c.events.iter().map(|e| (e.at, &e.event)).collect();
            if events != listed {
                return Err(Miss::Index(format!(
                    "the events of block {b} are not those its record lists"
                )));
            }
        }
        let why = trouble
            .as_ref()
            .map(|t| t.0.clone())
            .or_else(|| parsed.damaged.first().cloned())
            .unwrap_or_default();
        if hurt {
            let mut n = self.notes();
            if n.counted.insert((st.generation, b as u64)) {
                n.damage.lines += parsed.damaged.len() as u64;
                n.damage.unreadable += missing as u64;
                if let Some((_, bytes)) = &trouble {
                    n.damage.gaps += 1;
                    n.damage.gap_bytes += bytes;
                }
                for p in parsed.damaged.iter().chain(trouble.as_ref().map(|t| &t.0)) {
                    n.damage.note(p.clone());
                }
            }
        }
        let mut found: Vec<Option<Loc>> = parsed.found.into_iter().map(|f| Some(f.loc)).collect();
        let snaps = map
            .into_iter()
            .map(|j| j.and_then(|j| found[j].take()))
            .collect();
        Ok((snaps, why))
    }

    /// The text of a block an index record describes: all of `[start,
    /// stop)`, decoded; a gap inside ends it (and is said).
    fn index_text(&self, blk: &Block, b: usize) -> Result<(Vec<u8>, Option<Trouble>), Miss> {
        let n = blk.stop - blk.start;
        let too_big = |n: u64| {
            Miss::Index(format!(
                "block {b} would hold {n} bytes of text, more than the {} MiB a block may",
                MAX_BLOCK_TEXT >> 20
            ))
        };
        if !self.zstd {
            if n > MAX_BLOCK_TEXT {
                return Err(too_big(n));
            }
            let mut buf = vec![0u8; n as usize];
            let got = read_full_at(&self.file, &mut buf, blk.start)
                .map_err(|e| RecordError::io(&self.path, e))?;
            if got < buf.len() {
                return Err(Miss::Fail(self.shorter()));
            }
            return Ok((buf, None));
        }
        let mut t = Text::new(self.file.clone(), blk.start, blk.stop, true, PIECE)
            .map_err(|e| RecordError::io(&self.path, e))?;
        let mut out = Vec::new();
        loop {
            match t.next().map_err(|e| stopped(&self.name, e))? {
                Piece::Text { len, .. } => {
                    out.extend_from_slice(&t.data()[..len]);
                    if out.len() as u64 > MAX_BLOCK_TEXT {
                        return Err(too_big(out.len() as u64));
                    }
                }
                Piece::Gap(g) => {
                    let words = gap_words(&self.name, &g, None, self.len);
                    return Ok((out, Some((words, g.to - g.from))));
                }
                Piece::Notice(_) => {}
                Piece::End { cut: true } => {
                    return Err(Miss::Index(format!(
                        "the data of block {b} does not end where its record starts, at byte {}",
                        blk.stop
                    )));
                }
                Piece::End { cut: false } => return Ok((out, None)),
            }
        }
    }

    fn shorter(&self) -> RecordError {
        RecordError::Corrupt {
            path: self.name.clone(),
            offset: self.len,
            why: "the file became shorter since it was opened".into(),
        }
    }

    /// `len` bytes of text from `skip` after `blk.start`: read again where
    /// a scan found them (going on from the last block's decoding when it
    /// stopped before them in the same frame).
    fn range_text(
        &self,
        generation: u64,
        blk: &Block,
        len: u64,
        cache: &mut Cache,
    ) -> Result<Vec<u8>, Miss> {
        if !self.zstd {
            let mut buf = vec![0u8; len as usize];
            let got = read_full_at(&self.file, &mut buf, blk.start)
                .map_err(|e| RecordError::io(&self.path, e))?;
            if got < buf.len() {
                return Err(Miss::Fail(self.shorter()));
            }
            return Ok(buf);
        }
        let mut cur = match cache.cursor.take() {
            Some(c) if c.generation == generation && c.start == blk.start && c.made <= blk.skip => {
                c
            }
            _ => Cursor {
                generation,
                start: blk.start,
                made: 0,
                text: Text::new(self.file.clone(), blk.start, self.len, true, PIECE)
                    .map_err(|e| RecordError::io(&self.path, e))?,
                piece: None,
            },
        };
        let mut out = Vec::with_capacity(len as usize);
        while (out.len() as u64) < len {
            if let Some((at, pos, plen)) = cur.piece
                && pos < plen
            {
                let data = &cur.text.data()[pos..plen];
                let here = at + pos as u64;
                let take = if here < blk.skip {
                    (blk.skip - here).min(data.len() as u64) as usize
                } else {
                    let n = (len - out.len() as u64).min(data.len() as u64) as usize;
                    out.extend_from_slice(&data[..n]);
                    n
                };
                cur.piece = Some((at, pos + take, plen));
                continue;
            }
            match cur.text.next().map_err(|e| stopped(&self.name, e))? {
                Piece::Text { at, len, .. } => cur.piece = Some((at, 0, len)),
                Piece::Notice(_) => {}
                Piece::Gap(_) | Piece::End { .. } => {
                    return Err(Miss::Fail(RecordError::Corrupt {
                        path: self.name.clone(),
                        offset: blk.start,
                        why: format!(
                            "the text of the block from line {} cannot be read again: did the file change since it was opened?",
                            blk.first_line
                        ),
                    }));
                }
            }
        }
        cur.made = blk.skip + len;
        cache.cursor = Some(cur);
        Ok(out)
    }
}
