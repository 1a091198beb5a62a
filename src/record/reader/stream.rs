//! [`Reader`]: a recording's snapshots from start to end, in memory that
//! does not grow with the file: one line at a time, the process strings of
//! the processes seen in the last [`KEEP_PROCS`] snapshots only (the writer
//! repeats a process line whenever a process comes back; the margin is for
//! a damaged snapshot that lost some), the snapshot being read and the one
//! before it.

use std::collections::HashMap;
use std::path::Path;

use super::check::{self, Crowd, Damage, Tally};
use super::header;
use super::text::{self, Lines, ReadStats, Step, Text, stopped};
use crate::model::Snapshot;
use crate::record::RecordError;
use crate::record::format::{self, Header, LineType, ProcId, ProcessInfo};

/// Snapshots a process's strings are kept after it was last listed.
const KEEP_PROCS: u64 = 64;

/// Reads a recording's snapshots in order, skipping and counting what is
/// damaged (see [`Reader::damage`]); the index is not used. An iterator of
/// snapshots: an `Err` is the end (the file cannot be read on: an I/O
/// error, or a decompression bomb).
pub struct Reader {
    lines: Lines,
    name: String,
    header: Header,
    zstd: bool,
    len: u64,
    /// Process strings, and the last snapshot that listed each.
    procs: HashMap<ProcId, (ProcessInfo, u64)>,
    pending: Option<Snapshot>,
    tally: Tally,
    warnings: Vec<String>,
    unknown: bool,
    joined: bool,
    snapshots: u64,
    /// Process and event lines kept since the last snapshot line.
    crowd: (Crowd, Crowd),
    error: Option<RecordError>,
    done: bool,
}

impl Reader {
    /// Opens `path` and reads its header.
    pub fn open(path: &Path) -> Result<Reader, RecordError> {
        let (file, len) = text::open_file(path)?;
        let name = crate::sanitize::path(path);
        let zstd = text::sniff(&file, len).map_err(|e| RecordError::io(path, e))?;
        let src = Text::new(file, 0, len, zstd, 128 << 10).map_err(|e| RecordError::io(path, e))?;
        let mut lines = Lines::new(src, 1);
        let header = header::read_header(&mut lines, &name, len)?;
        let mut warnings = Vec::new();
        if lines.bom {
            warnings.push(super::bom_warning(&name));
        }
        Ok(Reader {
            lines,
            tally: Tally::new(&name),
            name,
            header,
            zstd,
            len,
            procs: HashMap::new(),
            pending: None,
            warnings,
            unknown: false,
            joined: false,
            snapshots: 0,
            crowd: (Crowd::procs(), Crowd::events()),
            error: None,
            done: false,
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The file's name as messages show it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the file is zstd-compressed.
    pub fn compressed(&self) -> bool {
        self.zstd
    }

    /// Notices that lost nothing so far (a cut-off last line, lines of
    /// unknown types, a byte order mark).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// What was skipped so far.
    pub fn damage(&self) -> &Damage {
        &self.tally.damage
    }

    /// Snapshots given so far.
    pub fn snapshots(&self) -> u64 {
        self.snapshots
    }

    pub fn stats(&self) -> ReadStats {
        self.lines.stats()
    }

    /// After the last snapshot: an error saying what was skipped, when
    /// anything was (`what`: what was made of the snapshots, e.g. "report").
    ///
    /// A `.zst` file that ends inside its compressed data (cut short, not
    /// merely unclosed) is incomplete too.
    pub fn incomplete(&self, what: &'static str) -> Option<RecordError> {
        let cut = self.lines.cut_short().map(|line| (self.len, line));
        check::unread(&self.tally.damage, cut).map(|summary| RecordError::Incomplete {
            path: self.name.clone(),
            summary,
            what,
            read: self.snapshots,
        })
    }

    /// One line; a snapshot when the one before it is complete.
    fn step(&mut self) -> Result<Option<Snapshot>, RecordError> {
        match self.lines.next().map_err(|e| stopped(&self.name, e))? {
            Step::Line { no, .. } => {
                let before = self.tally.damage.lines;
                let s = self.line(no);
                if self.tally.damage.lines == before {
                    self.tally.good_line();
                }
                self.tally.give_up()?;
                Ok(s)
            }
            Step::Overlong { no } => {
                self.tally.overlong(no);
                self.tally.give_up()?;
                Ok(None)
            }
            Step::Broken { no } => {
                self.tally.bad_line(no, check::BROKEN);
                Ok(None)
            }
            Step::Gap { gap, cut } => {
                self.tally.gap(&gap, cut, self.len);
                Ok(None)
            }
            Step::Notice(s) => {
                self.warnings.push(format!("{}: {s}", self.name));
                Ok(None)
            }
            Step::Cut { no, zeros } => {
                if !zeros {
                    self.warnings.push(check::cut_off(&self.name, no));
                }
                Ok(None)
            }
            Step::End => {
                self.done = true;
                Ok(self.pending.take())
            }
        }
    }

    fn line(&mut self, no: u64) -> Option<Snapshot> {
        let text = self.lines.line();
        let ty = match format::line_type(text) {
            Ok(t) => t,
            Err(e) => {
                self.tally.bad_line(no, e);
                return None;
            }
        };
        match ty {
            LineType::Snapshot => {
                let procs = &self.procs;
                match format::read_snapshot(text, |id| procs.get(&id).map(|p| &p.0)) {
                    Ok(s) => {
                        self.tally.snapshot(s.seq);
                        self.snapshots += 1;
                        self.crowd.0.restart();
                        self.crowd.1.restart();
                        let now = self.snapshots;
                        for p in &s.procs {
                            if let Some(e) = self.procs.get_mut(&(p.gpu, p.pid, p.start_time)) {
                                e.1 = now;
                            }
                        }
                        // Forget processes gone for a while: one that comes
                        // back gets its line again.
                        if self.procs.len() > 2 * s.procs.len() + KEEP_PROCS as usize {
                            self.procs.retain(|_, e| e.1 + KEEP_PROCS >= now);
                        }
                        return self.pending.replace(s);
                    }
                    Err(e) => {
                        // Its events go with it.
                        self.tally.bad_line(no, e);
                        if let Some(p) = self.pending.take() {
                            return Some(p);
                        }
                    }
                }
            }
            LineType::Process if let Some(e) = self.crowd.0.full() => self.tally.bad_line(no, e),
            LineType::Process => match format::read_process(text) {
                Ok(p) => {
                    self.crowd.0.keep();
                    self.procs.insert(p.id(), (p, self.snapshots + 1));
                }
                Err(e) => self.tally.bad_line(no, e),
            },
            LineType::Event => match format::read_event_seq(text) {
                Ok((seq, e)) => {
                    if let Some(p) = self.pending.as_mut()
                        && seq.is_none_or(|s| s == p.seq)
                    {
                        match self.crowd.1.full() {
                            Some(damage) => self.tally.bad_line(no, damage),
                            None => {
                                self.crowd.1.keep();
                                p.events.push(e);
                            }
                        }
                    }
                }
                Err(e) => self.tally.bad_line(no, e),
            },
            LineType::Header | LineType::Index if check::valid_json(text).is_err() => {
                if let Err(e) = check::valid_json(text) {
                    self.tally.bad_line(no, e);
                }
            }
            LineType::Header => {
                if no > 1 && !std::mem::replace(&mut self.joined, true) {
                    self.warnings.push(format!(
                        "{}:{no}: another header (files joined together?): read on as one recording",
                        self.name
                    ));
                }
            }
            LineType::Index => {}
            LineType::Other => {
                if !std::mem::replace(&mut self.unknown, true) {
                    self.warnings.push(format!(
                        "{}: lines of a type this vramwatch does not know (from a newer version?) were skipped, the first at line {no}",
                        self.name
                    ));
                }
            }
        }
        None
    }
}

impl Iterator for Reader {
    type Item = Result<Snapshot, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            match self.step() {
                Ok(Some(s)) => return Some(Ok(s)),
                Ok(None) => {}
                Err(e) => {
                    self.done = true;
                    self.error = Some(e);
                }
            }
        }
        if let Some(p) = self.pending.take() {
            return Some(Ok(p));
        }
        self.error.take().map(Err)
    }
}
