//! Judging what was read: each line's kind, and the tally of what was
//! damaged ([`Damage`]), said the same way by every reader (the header is
//! judged in `header`).

use std::fmt::Display;

use super::frames::Gap;
use crate::model::Millis;
use crate::record::RecordError;
use crate::record::format::{self, LineError, LineType, MAX_SNAPSHOT_EVENTS, MAX_SNAPSHOT_PROCS};
use crate::record::reader::text::MAX_LINE;

/// Why a line that ends where its zstd frame ends was skipped.
pub(crate) const BROKEN: &str = "the line stops where its zstd frame ends, and the next frame starts a new line: its end was lost";

/// Places of damage listed by name; beyond them damage is only counted.
const LISTED: usize = 10;
/// Damaged lines in a row after which a file is given up on: it is not a
/// recording (this bounds the time spent on one made of junk).
pub const MAX_BAD_RUN: u64 = 100_000;

/// What a reader had to skip. Empty when everything in the file was read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Damage {
    /// Lines skipped: not JSON, not a line of the format, longer than
    /// [`MAX_LINE`](super::MAX_LINE), or cut short by undecodable data.
    pub lines: u64,
    /// Stretches of `.zst` data that could not be decoded, and their bytes.
    pub gaps: u64,
    pub gap_bytes: u64,
    /// Snapshots known to be lost: the gaps in `seq` where damage was.
    pub lost_snapshots: u64,
    /// Snapshots listed by the index that could not be read back.
    pub unreadable: u64,
    /// What was skipped and where (file:line, or byte offsets), the first
    /// ten places.
    pub places: Vec<String>,
}

impl Damage {
    pub fn is_empty(&self) -> bool {
        self.lines == 0 && self.gaps == 0 && self.lost_snapshots == 0 && self.unreadable == 0
    }

    pub(crate) fn note(&mut self, place: String) {
        if self.places.len() < LISTED {
            self.places.push(place);
        }
    }

    /// What was skipped in all, as a clause ("2 damaged lines skipped, 3
    /// snapshots lost").
    pub fn summary(&self) -> String {
        let s = |n: u64| if n == 1 { "" } else { "s" };
        let mut parts = Vec::new();
        if self.lines > 0 {
            parts.push(format!(
                "{} damaged line{} skipped",
                self.lines,
                s(self.lines)
            ));
        }
        if self.gaps > 0 {
            parts.push(format!(
                "{} stretch{} of compressed data ({} bytes) undecodable",
                self.gaps,
                if self.gaps == 1 { "" } else { "es" },
                self.gap_bytes
            ));
        }
        if self.lost_snapshots > 0 {
            parts.push(format!(
                "{} snapshot{} lost",
                self.lost_snapshots,
                s(self.lost_snapshots)
            ));
        }
        if self.unreadable > 0 {
            parts.push(format!(
                "{} indexed snapshot{} unreadable",
                self.unreadable,
                s(self.unreadable)
            ));
        }
        if parts.is_empty() {
            "nothing skipped".into()
        } else {
            parts.join(", ")
        }
    }

    /// The places, then the count of those not listed.
    pub fn lines_for_people(&self) -> Vec<String> {
        let mut out = self.places.clone();
        let counted = self.lines + self.gaps;
        if counted > self.places.len() as u64 && self.places.len() >= LISTED {
            out.push(format!(
                "... and more: {} in all ({})",
                counted,
                self.summary()
            ));
        }
        out
    }
}

/// What a reader could not read, as the clause of an
/// [`Incomplete`](RecordError::Incomplete) error: the damage, and where
/// the file ends inside compressed data (`cut`: `(file length, last whole
/// line)`, from [`super::text::Lines::cut_short`]); `None` when everything
/// in the file was read.
pub(crate) fn unread(damage: &Damage, cut: Option<(u64, u64)>) -> Option<String> {
    let cut = cut.map(|(len, line)| {
        format!(
            "cut short at byte {len}, inside its compressed data (a copy stopped part way, `head -c`, a power cut?): what followed line {line} is lost"
        )
    });
    match (damage.is_empty(), cut) {
        (true, None) => None,
        (true, Some(c)) => Some(c),
        (false, None) => Some(damage.summary()),
        (false, Some(c)) => Some(format!("{}, {c}", damage.summary())),
    }
}

/// Counts damage as a linear read meets it, and the snapshots lost to it
/// (the jump in `seq` across the damage).
pub(crate) struct Tally {
    name: String,
    pub(crate) damage: Damage,
    last_seq: Option<u64>,
    hurt: bool,
    /// Damaged lines in a row, and the first of them.
    run: u64,
    run_from: u64,
}

impl Tally {
    pub(crate) fn new(name: &str) -> Tally {
        Tally {
            name: name.to_owned(),
            damage: Damage::default(),
            last_seq: None,
            hurt: false,
            run: 0,
            run_from: 0,
        }
    }

    pub(crate) fn bad_line(&mut self, no: u64, why: impl Display) {
        self.damage.lines += 1;
        self.hurt = true;
        if self.run == 0 {
            self.run_from = no;
        }
        self.run += 1;
        if self.damage.places.len() < LISTED {
            let place = format!("{}:{no}: {why}: skipped", self.name);
            self.damage.note(place);
        }
    }

    /// A line read whole: the run of damaged lines ends.
    pub(crate) fn good_line(&mut self) {
        self.run = 0;
    }

    /// Too many damaged lines in a row: the reading stops here.
    pub(crate) fn give_up(&self) -> Result<(), RecordError> {
        if self.run < MAX_BAD_RUN {
            return Ok(());
        }
        Err(RecordError::TooDamaged {
            path: self.name.clone(),
            line: self.run_from,
            lines: self.run,
        })
    }

    pub(crate) fn overlong(&mut self, no: u64) {
        self.bad_line(
            no,
            format_args!("the line is longer than {} MiB", MAX_LINE >> 20),
        );
    }

    pub(crate) fn gap(&mut self, g: &Gap, cut: Option<u64>, stop: u64) {
        self.damage.gaps += 1;
        self.damage.gap_bytes += g.to - g.from;
        self.hurt = true;
        if cut.is_some() {
            self.damage.lines += 1;
        }
        let place = gap_words(&self.name, g, cut, stop);
        self.damage.note(place);
    }

    /// A snapshot read: after damage, the jump in `seq` is what was lost.
    pub(crate) fn snapshot(&mut self, seq: u64) {
        if std::mem::take(&mut self.hurt)
            && let Some(last) = self.last_seq
            && seq > last + 1
        {
            let n = seq - last - 1;
            self.damage.lost_snapshots += n;
            let place = if n == 1 {
                format!("{}: snapshot seq {} is missing there", self.name, last + 1)
            } else {
                format!(
                    "{}: snapshots seq {}–{} ({n}) are missing there",
                    self.name,
                    last + 1,
                    seq - 1
                )
            };
            self.damage.note(place);
        }
        self.last_seq = Some(seq);
    }
}

/// A gap as a sentence: where, why, what it cost.
/// Lines of one kind kept since the last snapshot line, both readers'
/// per-snapshot limit on them: past `max`, a hostile file's flood between
/// two snapshots is skipped as damage, not kept (docs/recording-format.md).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Crowd {
    what: &'static str,
    max: usize,
    kept: usize,
}

impl Crowd {
    /// Process lines: at most `MAX_SNAPSHOT_PROCS` a snapshot.
    pub(crate) const fn procs() -> Crowd {
        Crowd {
            what: "process",
            max: MAX_SNAPSHOT_PROCS,
            kept: 0,
        }
    }

    /// Event lines: at most `MAX_SNAPSHOT_EVENTS` a snapshot.
    pub(crate) const fn events() -> Crowd {
        Crowd {
            what: "event",
            max: MAX_SNAPSHOT_EVENTS,
            kept: 0,
        }
    }

    /// The damage a line of this kind is, once `max` are kept.
    pub(crate) fn full(&self) -> Option<LineError> {
        (self.kept >= self.max).then_some(LineError::Crowded {
            what: self.what,
            max: self.max,
        })
    }

    /// One more line kept.
    pub(crate) fn keep(&mut self) {
        self.kept += 1;
    }

    /// A snapshot line: counting starts again.
    pub(crate) fn restart(&mut self) {
        self.kept = 0;
    }
}

pub(crate) fn gap_words(name: &str, g: &Gap, cut: Option<u64>, stop: u64) -> String {
    let mut s = if g.decoded > 0 {
        format!(
            "{name}: the zstd frame at byte {} breaks off after {} bytes of text: {}",
            g.from, g.decoded, g.why
        )
    } else {
        format!(
            "{name}: bytes {}–{} cannot be decompressed: {}",
            g.from, g.to, g.why
        )
    };
    if g.to >= stop {
        s.push_str("; nothing after them could be read");
    } else {
        s.push_str(&format!("; reading goes on at byte {}", g.to));
    }
    if let Some(no) = cut {
        s.push_str(&format!(" (line {no} is cut short by it: skipped)"));
    }
    s
}

/// A time as people read it: RFC 3339, UTC, to the millisecond (a time
/// beyond the year 9999, which only damage makes, as milliseconds).
pub fn when(t_ms: Millis) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let t = std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_millis(t_ms));
    match t.map(|t| write!(s, "{}", humantime::format_rfc3339_millis(t))) {
        Some(Ok(())) => s,
        _ => format!("{t_ms} ms after 1970"),
    }
}

/// The warning for a cut-off last line.
pub(crate) fn cut_off(name: &str, no: u64) -> String {
    format!(
        "{name}:{no}: the last line is cut off (the recorder was stopped while writing it): skipped"
    )
}

/// A line as the readers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Snapshot { seq: u64, t_ms: Millis },
    Process,
    Event,
    Index,
    Header,
    Other,
}

/// What a line is: decided the same way when a file is scanned and when a
/// block of it is decoded, so both count the same snapshots.
pub(crate) fn classify(text: &[u8]) -> Result<Kind, LineError> {
    Ok(match format::line_type(text)? {
        LineType::Snapshot => {
            let (seq, t_ms) = format::snapshot_head(text)?;
            Kind::Snapshot { seq, t_ms }
        }
        LineType::Process => Kind::Process,
        LineType::Event => Kind::Event,
        LineType::Index => {
            valid_json(text)?;
            Kind::Index
        }
        LineType::Header => {
            valid_json(text)?;
            Kind::Header
        }
        LineType::Other => Kind::Other,
    })
}

/// Checks a line known by its start only is JSON (one that is not would
/// hide what follows it, as two lines joined).
pub(crate) fn valid_json(text: &[u8]) -> Result<(), LineError> {
    serde_json::from_slice::<serde::de::IgnoredAny>(text)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damage_sums_up() {
        let mut t = Tally::new("f.jsonl");
        t.snapshot(1);
        t.bad_line(7, "not valid JSON");
        t.snapshot(4);
        assert_eq!(t.damage.lines, 1);
        assert_eq!(t.damage.lost_snapshots, 2);
        assert_eq!(
            t.damage.summary(),
            "1 damaged line skipped, 2 snapshots lost"
        );
        assert!(t.damage.places[0].starts_with("f.jsonl:7: not valid JSON"));
        assert!(
            t.damage.places[1].contains("seq 2–3 (2)"),
            "{:?}",
            t.damage.places
        );
    }
}
