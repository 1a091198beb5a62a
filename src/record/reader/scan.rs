//! The linear scan that splits a file into blocks (the whole file when it
//! has no usable index, the part after its last index record otherwise).
//! Decoding one block, checking it against what the index or the scan
//! said it holds, is in `decode`; reading its text again, in `block_text`.

use std::collections::HashMap;

use super::check::{Crowd, Kind, Tally, classify, cut_off};
use super::frames::Origin;
use super::text::{Lines, Step, Text, stopped};
use super::{Block, ProcLine, RecordedEvent, Recording};
use crate::model::Millis;
use crate::record::RecordError;
use crate::record::format::{self, ProcId, ProcessInfo};

/// Snapshots per block when a scan splits a file up.
const SCAN_BLOCK: u64 = 600;
/// Text per block when a scan splits a file up.
const BLOCK_BYTES: u64 = 8 << 20;
/// Text decoded at a time.
pub(super) const PIECE: usize = 128 << 10;

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
    /// The file ends inside compressed data after this line
    /// ([`Lines::cut_short`]).
    pub(super) cut_short: Option<u64>,
    open: Option<Open>,
    /// `seq` of the last snapshot of the open block (its events follow).
    event_seq: Option<u64>,
    /// Process and event lines kept since the last snapshot line.
    crowd: (Crowd, Crowd),
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
            cut_short: None,
            open: None,
            event_seq: None,
            crowd: (Crowd::procs(), Crowd::events()),
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
                    self.cut_short = lines.cut_short();
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
                self.crowd.0.restart();
                self.crowd.1.restart();
            }
            Kind::Process if let Some(e) = self.crowd.0.full() => self.tally.bad_line(no, e),
            Kind::Process => match format::read_process(text) {
                Ok(p) => {
                    self.crowd.0.keep();
                    add_proc(&mut self.procs, here, usize::MAX, p);
                }
                Err(e) => self.tally.bad_line(no, e),
            },
            Kind::Event if let Some(e) = self.crowd.1.full() => self.tally.bad_line(no, e),
            Kind::Event => match format::read_event_seq(text) {
                Ok((seq, event)) => {
                    if let Some(last) = self.event_seq
                        && seq.is_none_or(|s| s == last)
                    {
                        self.crowd.1.keep();
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
