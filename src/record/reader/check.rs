//! Judging what was read: the header (with a precise reason when it is not
//! a header vramwatch can read), each line's kind, and the tally of what
//! was damaged ([`Damage`]), said the same way by every reader.

use std::fmt::Display;

use super::frames::Gap;
use crate::model::Millis;
use crate::record::format::{
    self, Header, LineError, LineType, MAX_SNAPSHOT_EVENTS, MAX_SNAPSHOT_PROCS,
};
use crate::record::reader::text::{Lines, MAX_LINE, Step, stopped};
use crate::record::{FORMAT, OLDEST_VERSION, RecordError, VERSION};

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

/// Reads line 1 and checks it is a header this vramwatch reads.
pub(crate) fn read_header(lines: &mut Lines, name: &str, len: u64) -> Result<Header, RecordError> {
    let not = |why: String| RecordError::NotARecording {
        path: name.to_owned(),
        why,
    };
    if len == 0 {
        return Err(not("the file is empty".into()));
    }
    loop {
        match lines.next().map_err(|e| stopped(name, e))? {
            Step::Line { .. } => return header(name, lines.line()),
            Step::Overlong { .. } => {
                return Err(not(format!(
                    "line 1 is longer than {} MiB, so it is no header",
                    MAX_LINE >> 20
                )));
            }
            Step::Gap { gap, .. } if gap.from == 0 => {
                return Err(not(format!(
                    "it starts like zstd data, but the frame at byte 0 cannot be decompressed: {}",
                    gap.why
                )));
            }
            Step::Gap { gap, .. } => {
                return Err(not(format!(
                    "its first line cannot be read: bytes {}–{} cannot be decompressed: {}",
                    gap.from, gap.to, gap.why
                )));
            }
            Step::Notice(_) => {}
            Step::Broken { .. } => {
                return Err(not(format!("line 1 (the header) cannot be read: {BROKEN}")));
            }
            Step::Cut { zeros: true, .. } => {
                return Err(not("it holds only zero bytes".into()));
            }
            Step::Cut { .. } => {
                if let Some(kind) = binary_kind(lines.line()) {
                    return Err(not(format!("it is {kind}")));
                }
                return Err(not(
                    "line 1 (the header) is incomplete: the file ends before its newline".into(),
                ));
            }
            Step::End => return Err(not("it holds no text".into())),
        }
    }
}

/// Well-known binary formats, to say what a file is instead.
fn binary_kind(text: &[u8]) -> Option<&'static str> {
    [
        (&[0x1F, 0x8B][..], "gzip-compressed"),
        (&[0xFD, b'7', b'z', b'X', b'Z', 0x00], "xz-compressed"),
        (b"BZh", "bzip2-compressed"),
        (b"PK\x03\x04", "a zip archive"),
        (b"\x7FELF", "an executable (ELF)"),
    ]
    .iter()
    .find(|(m, _)| text.starts_with(m))
    .map(|(_, k)| *k)
}

/// The raw text of a top-level `"version"` value in a header line.
fn raw_version(text: &[u8]) -> Option<String> {
    let i = memchr::memmem::find(text, b"\"version\"")?;
    let rest = &text[i + 9..];
    let rest = &rest[rest.iter().position(|&b| b == b':')? + 1..];
    let rest = rest.trim_ascii_start();
    let end = rest
        .iter()
        .position(|&b| b == b',' || b == b'}')
        .unwrap_or(rest.len());
    let v = String::from_utf8_lossy(&rest[..end.min(40)]);
    Some(crate::sanitize::clean(v.trim()))
}

/// Checks line 1.
fn header(name: &str, text: &[u8]) -> Result<Header, RecordError> {
    let not = |why: String| RecordError::NotARecording {
        path: name.to_owned(),
        why,
    };
    if let Some(kind) = binary_kind(text) {
        return Err(not(format!("it is {kind}")));
    }
    let v: serde_json::Value = serde_json::from_slice(text).map_err(|e| {
        not(format!(
            "line 1 is not JSON ({})",
            LineError::Json(e)
                .to_string()
                .trim_start_matches("not valid JSON: ")
        ))
    })?;
    if v.get("type").and_then(|t| t.as_str()) != Some("header")
        || v.get("format").and_then(|t| t.as_str()) != Some(FORMAT)
    {
        return Err(not(format!(
            "line 1 is not a header with \"format\": \"{FORMAT}\""
        )));
    }
    let raw = || raw_version(text).unwrap_or_else(|| "?".into());
    let found = match v.get("version") {
        None => return Err(not("the header has no \"version\"".into())),
        Some(serde_json::Value::Number(n)) => match n.as_u64() {
            Some(x) => x,
            None if n.as_i64().is_some() => {
                return Err(not(format!(
                    "the header's \"version\" is {}: format versions are whole numbers from 1",
                    raw()
                )));
            }
            None => {
                return Err(not(format!(
                    "the header's \"version\" is {}, which is not a format version (a whole number from 1)",
                    raw()
                )));
            }
        },
        Some(serde_json::Value::String(s)) => {
            return Err(not(format!(
                "the header's \"version\" is the string \"{}\", not a number (vramwatch writes \"version\": {VERSION})",
                crate::sanitize::clean_capped(s, 40)
            )));
        }
        Some(other) => {
            let what = match other {
                serde_json::Value::Null => "null",
                serde_json::Value::Bool(_) => "true or false",
                serde_json::Value::Array(_) => "a list",
                _ => "an object",
            };
            return Err(not(format!(
                "the header's \"version\" is {what}, not a format version number"
            )));
        }
    };
    if !(u64::from(OLDEST_VERSION)..=u64::from(VERSION)).contains(&found) {
        return Err(RecordError::Version {
            path: name.to_owned(),
            found,
            writer: crate::sanitize::clean_capped(
                v.get("vramwatch_version")
                    .and_then(|x| x.as_str())
                    .unwrap_or("?"),
                40,
            ),
            ours: env!("CARGO_PKG_VERSION"),
            advice: if found > u64::from(VERSION) {
                "it is newer: upgrade vramwatch to read it"
            } else {
                "it is older: read it with the vramwatch that wrote it"
            },
        });
    }
    let mut h: Header = serde_json::from_value(v).map_err(|e| RecordError::Line {
        path: name.to_owned(),
        line: 1,
        error: LineError::Json(e),
    })?;
    h.sanitize();
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(line: &str) -> String {
        header("h.jsonl", line.as_bytes()).unwrap_err().to_string()
    }

    #[test]
    fn versions_that_are_not_numbers_are_named() {
        let h = |v: &str| {
            format!(
                r#"{{"type":"header","format":"vramwatch-recording","version":{v},"vramwatch_version":"9"}}"#
            )
        };
        assert!(
            why(&h("\"1\"")).contains("the string \"1\""),
            "{}",
            why(&h("\"1\""))
        );
        assert!(why(&h("-1")).contains("is -1: format versions are whole numbers"));
        let big = why(&h("18446744073709551616"));
        assert!(
            big.contains("18446744073709551616, which is not a format version"),
            "{big}"
        );
        assert!(why(&h("1.5")).contains("is 1.5"));
        assert!(why(&h("null")).contains("is null"));
        assert!(why(&h("3")).contains("version 3"));
        assert!(why(&h("0")).contains("version 0"));
        let gz = header("h.jsonl", b"\x1f\x8b\x08\x00")
            .unwrap_err()
            .to_string();
        assert!(gz.contains("gzip"), "{gz}");
    }

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
