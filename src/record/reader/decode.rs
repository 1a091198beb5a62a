//! Decoding one block: its lines sorted out and, for a block an index
//! record describes, checked against what the record says it holds; the
//! last two decoded blocks kept.

use std::ops::Range;
use std::sync::Arc;

use super::block_text::{Cursor, Trouble};
use super::check::{Kind, classify};
use super::{Miss, Recording, State};
use crate::model::{Event, Millis};
use crate::record::RecordError;
use crate::record::format::{self, ProcessInfo};

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
    pub(super) cursor: Option<Cursor>,
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
}
