//! Reads a recording back, in memory bounded whatever the file holds.
//!
//! Both readers stand on one linear reading of the text (`text::Lines`):
//! regular files only, lines of at most [`MAX_LINE`] bytes, `.zst` frames
//! decoded a piece at a time with a guard against decompression bombs,
//! and damage — a line that is not one of the format, `.zst` data that
//! does not decode — skipped and counted ([`Damage`]), never a reason to
//! give up on the rest of the file.
//!
//! - [`Reader`] streams the snapshots from start to end holding only the
//!   processes of the last snapshot: `report` and `export`.
//! - [`Recording`] opens a file for random access (`replay`): through its
//!   index when there is one, and the index is a hint, never the truth.
//!   Opening checks its structure (each block starting where the record
//!   before it ended, line and snapshot counts running on) and the first
//!   snapshot of every block against its `t0`; decoding a block checks
//!   every snapshot's time, its lines, processes and events. On any
//!   mismatch the whole file is read instead, and a warning says why.
//!   Without an index the whole file is read when opening. Snapshots are
//!   decoded on demand, a block at a time, the last two kept.

mod block_text;
mod check;
mod decode;
mod frames;
mod header;
mod index;
mod scan;
mod stream;
mod text;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use super::RecordError;
use super::format::{self, Header, ProcId, ProcessInfo};
use crate::model::{Event, Millis, Snapshot, SystemInfo};

pub use check::{Damage, MAX_BAD_RUN, when};
pub use stream::Reader;
pub use text::{MAX_LINE, ReadStats};

use decode::{Cache, Decoded};

/// An event and the position of the snapshot it came with.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedEvent {
    pub index: usize,
    pub event: Event,
}

/// Where a block of lines lies and what it holds.
#[derive(Clone, Debug)]
struct Block {
    /// Where decoding starts: a frame's first byte (`.zst`), the block's
    /// first byte (plain).
    start: u64,
    /// Where its data may end: its index record, or the end of the file.
    stop: u64,
    /// Text skipped from `start`, and the block's text (`None`: all up to
    /// `stop`).
    skip: u64,
    len: Option<u64>,
    first_line: u64,
    /// Position of its first snapshot, and how many it holds.
    first: u64,
    count: u64,
    /// From the index: what decoding the block checks.
    check: Option<Arc<index::Check>>,
}

/// A process line, from the snapshot at position `at` on.
#[derive(Clone, Debug)]
struct ProcLine {
    at: u64,
    /// The index block it came from (`usize::MAX`: read from the data).
    block: usize,
    info: ProcessInfo,
}

/// What opening found: replaced whole when the index proves wrong.
struct State {
    generation: u64,
    blocks: Vec<Block>,
    times: Arc<[Millis]>,
    procs: HashMap<ProcId, Vec<ProcLine>>,
    events: Arc<[RecordedEvent]>,
    /// Index blocks whose data has been checked.
    checked: Mutex<Vec<bool>>,
}

/// What reading found wrong so far.
#[derive(Default)]
struct Notes {
    /// Notices that lost nothing: a repaired or ignored index, a cut-off
    /// last line, lines of unknown types.
    warnings: Vec<String>,
    damage: Damage,
    /// The file ends inside compressed data after this line
    /// ([`text::Lines::cut_short`]).
    cut_short: Option<u64>,
    /// (generation, block or snapshot) already counted.
    counted: std::collections::HashSet<(u64, u64)>,
}

/// Why a snapshot could not be given.
enum Miss {
    /// The index does not match the data: read the file instead.
    Index(String),
    Fail(RecordError),
}

impl From<RecordError> for Miss {
    fn from(e: RecordError) -> Self {
        Miss::Fail(e)
    }
}

/// A recording opened for reading. `get` takes `&self`: it is shared
/// between threads behind an `Arc`.
pub struct Recording {
    path: PathBuf,
    name: String,
    file: Arc<File>,
    zstd: bool,
    /// File size when opened.
    len: u64,
    header: Header,
    system: Arc<SystemInfo>,
    state: RwLock<Arc<State>>,
    notes: Mutex<Notes>,
    cache: Mutex<Cache>,
}

impl Recording {
    /// Opens a recording (`.jsonl` or zstd-compressed, told apart by its
    /// first bytes): the header, then the index (checked) or, without a
    /// usable one, the whole file.
    pub fn open(path: &Path) -> Result<Recording, RecordError> {
        let (file, len) = text::open_file(path)?;
        let name = crate::sanitize::path(path);
        let zstd = text::sniff(&file, len).map_err(|e| RecordError::io(path, e))?;
        let src = text::Text::new(file.clone(), 0, len, zstd, 64 << 10)
            .map_err(|e| RecordError::io(path, e))?;
        let mut lines = text::Lines::new(src, 1);
        let header = header::read_header(&mut lines, &name, len)?;
        let mut notes = Notes::default();
        if lines.bom {
            notes.warnings.push(bom_warning(&name));
        }
        let rec = Recording {
            path: path.to_owned(),
            name,
            file,
            zstd,
            len,
            system: Arc::new(header.system.clone()),
            header,
            state: RwLock::new(Arc::new(State::empty(0))),
            notes: Mutex::new(notes),
            cache: Mutex::new(Cache::default()),
        };
        let state = match rec.index_chain() {
            Ok(chain) if chain.is_empty() => rec.scan_all(0)?,
            Ok(chain) => match rec.state_from_index(&chain)? {
                Ok(st) => st,
                Err(why) => {
                    rec.warn(format!(
                        "{}: the index does not match the data ({why}): read the whole file instead",
                        rec.name
                    ));
                    rec.scan_all(0)?
                }
            },
            Err(why) => {
                rec.warn(format!(
                    "{}: the index is damaged ({why}): read the whole file instead",
                    rec.name
                ));
                rec.scan_all(0)?
            }
        };
        *rec.state.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(state);
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
        self.state().times.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The time of every snapshot, unix ms, without decoding any.
    pub fn times(&self) -> Arc<[Millis]> {
        self.state().times.clone()
    }

    /// The position of the last snapshot at or before `t_ms` (0 when all
    /// are later).
    pub fn position_at(&self, t_ms: Millis) -> usize {
        self.state()
            .times
            .partition_point(|&t| t <= t_ms)
            .saturating_sub(1)
    }

    /// Every event, with the position of its snapshot (from the index for
    /// blocks not decoded yet).
    pub fn events(&self) -> Arc<[RecordedEvent]> {
        self.state().events.clone()
    }

    /// Every process in the file, with its strings as last recorded.
    pub fn processes(&self) -> Vec<ProcessInfo> {
        self.state()
            .procs
            .values()
            .filter_map(|v| v.last().map(|p| p.info.clone()))
            .collect()
    }

    /// What was skipped or repaired so far: notices (a damaged index read
    /// around, a cut-off last line, lines of unknown types) and the places
    /// of damage ([`Recording::damage`]).
    pub fn warnings(&self) -> Vec<String> {
        let n = self.notes();
        let mut out = n.warnings.clone();
        out.extend(n.damage.lines_for_people());
        out
    }

    /// The damage met so far: when opening, and in the blocks decoded
    /// since.
    pub fn damage(&self) -> Damage {
        self.notes().damage.clone()
    }

    /// An error saying what was skipped, when anything was (`what`: what
    /// the output is, e.g. "replay").
    ///
    /// A `.zst` file that ends inside its compressed data (cut short, not
    /// merely unclosed) is incomplete too.
    pub fn incomplete(&self, what: &'static str) -> Option<RecordError> {
        let (damage, cut) = {
            let n = self.notes();
            (n.damage.clone(), n.cut_short.map(|line| (self.len, line)))
        };
        check::unread(&damage, cut).map(|summary| RecordError::Incomplete {
            path: self.name.clone(),
            summary,
            what,
            read: (self.len() as u64).saturating_sub(damage.unreadable),
        })
    }

    /// Where a `.zst` file ends inside its compressed data, as a warning
    /// naming the file (see [`Recording::incomplete`]); `None` when it does
    /// not.
    pub fn cut_short(&self) -> Option<String> {
        let line = self.notes().cut_short?;
        let cut = check::unread(&Damage::default(), Some((self.len, line)))?;
        Some(format!("{}: {cut}", self.name))
    }

    /// Snapshot `i` (0-based), with its events and its processes' strings.
    pub fn get(&self, i: usize) -> Result<Snapshot, RecordError> {
        for _ in 0..3 {
            let st = self.state();
            if i >= st.times.len() {
                return Err(RecordError::OutOfRange {
                    path: self.name.clone(),
                    index: i,
                    len: st.times.len(),
                });
            }
            match self.get_in(&st, i) {
                Ok(s) => return Ok(s),
                Err(Miss::Fail(e)) => return Err(e),
                Err(Miss::Index(why)) => self.fall_back(&st, &why)?,
            }
        }
        Err(RecordError::Corrupt {
            path: self.name.clone(),
            offset: 0,
            why: "the file keeps changing while it is read".into(),
        })
    }

    /// Every snapshot in order.
    pub fn iter(&self) -> impl Iterator<Item = Result<Snapshot, RecordError>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    fn state(&self) -> Arc<State> {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn notes(&self) -> MutexGuard<'_, Notes> {
        self.notes.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn cache(&self) -> MutexGuard<'_, Cache> {
        // A panic while decoding leaves nothing half-built in the cache.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn warn(&self, w: String) {
        let mut n = self.notes();
        if !n.warnings.contains(&w) {
            n.warnings.push(w);
        }
    }

    fn get_in(&self, st: &State, i: usize) -> Result<Snapshot, Miss> {
        let b = st.blocks.partition_point(|r| r.first + r.count <= i as u64);
        let Some(blk) = st.blocks.get(b) else {
            return Err(Miss::Fail(RecordError::OutOfRange {
                path: self.name.clone(),
                index: i,
                len: st.times.len(),
            }));
        };
        let d = self.decoded(st, b)?;
        let Some(Some(loc)) = d.snaps.get(i - blk.first as usize) else {
            return Err(Miss::Fail(RecordError::Unreadable {
                path: self.name.clone(),
                index: i,
                why: d.why.clone(),
            }));
        };
        let strings = |id: ProcId| lookup(st, id, i as u64).map(|p| &p.info);
        let mut snap = match format::read_snapshot(&d.text[loc.range.clone()], strings) {
            Ok(s) => s,
            Err(error) => {
                let e = RecordError::Line {
                    path: self.name.clone(),
                    line: loc.line,
                    error,
                };
                self.count_unreadable(st.generation, i, &e);
                return Err(Miss::Fail(e));
            }
        };
        snap.events = loc.events.clone();
        // The strings come from process lines before: an index's copies
        // are checked against their block's data first.
        let from: Vec<usize> = snap
            .procs
            .iter()
            .filter_map(|p| lookup(st, (p.gpu, p.pid, p.start_time), i as u64))
            .map(|p| p.block)
            .filter(|&k| k != b && k != usize::MAX)
            .collect();
        for k in from {
            if !st.is_checked(k) {
                self.decoded(st, k)?;
            }
        }
        Ok(snap)
    }

    /// Counts a snapshot that could not be decoded, once.
    fn count_unreadable(&self, generation: u64, i: usize, e: &RecordError) {
        let mut n = self.notes();
        if n.counted.insert((generation, u64::MAX - i as u64)) {
            n.damage.unreadable += 1;
            n.damage.note(e.to_string());
        }
    }

    fn decoded(&self, st: &State, b: usize) -> Result<Arc<Decoded>, Miss> {
        let mut cache = self.cache();
        if let Some(d) = cache.find(st.generation, b) {
            return Ok(d);
        }
        let d = Arc::new(self.decode(st, b, &mut cache)?);
        st.set_checked(b);
        cache.keep(d.clone());
        Ok(d)
    }

    /// Reads the whole file instead of the index that proved wrong.
    fn fall_back(&self, used: &State, why: &str) -> Result<(), RecordError> {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        if state.generation != used.generation {
            return Ok(());
        }
        {
            let mut n = self.notes();
            n.damage = Damage::default();
        }
        self.warn(format!(
            "{}: the index does not match the data ({why}): read the whole file instead",
            self.name
        ));
        let fresh = self.scan_all(used.generation + 1)?;
        *state = Arc::new(fresh);
        self.cache().clear();
        Ok(())
    }

    /// The whole file read linearly.
    fn scan_all(&self, generation: u64) -> Result<State, RecordError> {
        let mut b = scan::Build::new(&self.name, self.zstd, self.len);
        b.scan(self, 0, 1)?;
        Ok(self.finish(b, generation))
    }

    /// The state from what a scan (and an index) found; its warnings and
    /// damage into the notes.
    fn finish(&self, b: scan::Build, generation: u64) -> State {
        let mut n = self.notes();
        for w in b.warnings {
            if !n.warnings.contains(&w) {
                n.warnings.push(w);
            }
        }
        n.cut_short = b.cut_short;
        let d = b.tally.damage;
        n.damage.lines += d.lines;
        n.damage.gaps += d.gaps;
        n.damage.gap_bytes += d.gap_bytes;
        n.damage.lost_snapshots += d.lost_snapshots;
        for p in d.places {
            n.damage.note(p);
        }
        let count = b.blocks.len();
        State {
            generation,
            blocks: b.blocks,
            times: b.times.into(),
            procs: b.procs,
            events: b.events.into(),
            checked: Mutex::new(vec![false; count]),
        }
    }
}

impl State {
    fn empty(generation: u64) -> State {
        State {
            generation,
            blocks: Vec::new(),
            times: Arc::new([]),
            procs: HashMap::new(),
            events: Arc::new([]),
            checked: Mutex::new(Vec::new()),
        }
    }

    fn is_checked(&self, b: usize) -> bool {
        self.checked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(b)
            .copied()
            .unwrap_or(true)
    }

    fn set_checked(&self, b: usize) {
        if let Some(c) = self
            .checked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(b)
        {
            *c = true;
        }
    }
}

/// The process line in force at snapshot `at`.
fn lookup(st: &State, id: ProcId, at: u64) -> Option<&ProcLine> {
    st.procs.get(&id)?.iter().rev().find(|p| p.at <= at)
}

fn bom_warning(name: &str) -> String {
    format!(
        "{name} starts with a UTF-8 byte order mark (bytes EF BB BF), which JSON Lines does not use: ignored"
    )
}
