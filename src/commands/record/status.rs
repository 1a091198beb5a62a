//! What `record` says on standard error while it records: the status line,
//! the recorder's news (outages, rotations, warnings), and the summary it
//! ends with.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::app::Clock;
use crate::model::Millis;
use crate::model::units::{bytes_short, duration_short, plural};
use crate::record::WriterStats;
use crate::record::recorder::{Outage, OutageNews, Report, Summary, cause_text};

/// How often a status line is printed when stderr is not a terminal.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// The line `record` ends with: what was written, and every snapshot that
/// was not, by outage.
pub(super) fn summary_line(summary: &Summary, path: &Path, took: Duration, clock: Clock) -> String {
    let stats = &summary.stats;
    let mut line = format!(
        "wrote {} ({}) to {} in {}",
        snapshots(stats.snapshots),
        bytes_short(stats.total_bytes),
        path.display(),
        duration_short(took.as_secs()),
    );
    if stats.rotations > 0 {
        line.push_str(&format!("; {} more files from rotation", stats.rotations));
    }
    let outages = &summary.outages;
    if !outages.is_empty() {
        let listed: Vec<String> = outages
            .iter()
            .take(OUTAGES_LISTED)
            .map(|o| {
                let until = match o.ended {
                    Some((t, _)) => format!("\u{2013}{}", clock.hms(t)),
                    None => " to the end".into(),
                };
                format!(
                    "{}{until} ({} lost: {})",
                    clock.hms(o.since_ms),
                    o.lost,
                    o.cause_text()
                )
            })
            .collect();
        let more = outages.len().saturating_sub(OUTAGES_LISTED);
        line.push_str(&format!(
            "; {} not recorded in {}: {}{}",
            snapshots(summary.lost()),
            plural(outages.len() as u64, "outage", "outages"),
            listed.join(", "),
            if more > 0 {
                format!(" and {more} more (see the warnings above)")
            } else {
                String::new()
            }
        ));
    }
    if summary.missed > 0 {
        line.push_str(&format!(
            "; {} missed (the writer fell behind)",
            snapshots(summary.missed)
        ));
    }
    line
}

/// Outages named one by one in the summary line.
const OUTAGES_LISTED: usize = 3;

fn snapshots(n: u64) -> String {
    plural(n, "snapshot", "snapshots")
}

/// `seq 12` or `seq 12–40`.
fn seqs(first: u64, last: u64) -> String {
    if first == last {
        format!("seq {first}")
    } else {
        format!("seq {first}\u{2013}{last}")
    }
}

/// The status line (rewritten in place on a terminal, a plain line every
/// minute otherwise) and the recorder's news, written to `out` (stderr).
///
/// Every outage is told as it begins, at once, however recent the last
/// warning; while it goes on, a reminder at most once a minute (of the
/// snapshots' time); and when it ends, how long it lasted and what it
/// lost. Other warnings of one kind are said at most once a minute.
pub(super) struct Status<W: Write> {
    path: PathBuf,
    tty: bool,
    started: Instant,
    clock: Clock,
    out: W,
    stats: WriterStats,
    last_log: Instant,
    last_warning: Option<(String, Instant)>,
    /// The outage going on, and when (snapshot time) it was last told.
    outage: Option<Outage>,
    outage_told_ms: Millis,
    /// Snapshots lost in the outages that ended.
    lost_before: u64,
    on_line: bool,
}

impl<W: Write> Status<W> {
    pub(super) fn new(
        path: PathBuf,
        tty: bool,
        started: Instant,
        clock: Clock,
        out: W,
    ) -> Status<W> {
        Status {
            path,
            tty,
            started,
            clock,
            out,
            stats: WriterStats::default(),
            last_log: Instant::now(),
            last_warning: None,
            outage: None,
            outage_told_ms: 0,
            lost_before: 0,
            on_line: false,
        }
    }

    /// Snapshots lost so far, in every outage.
    fn lost(&self) -> u64 {
        self.lost_before + self.outage.as_ref().map_or(0, |o| o.lost)
    }

    fn line(&self) -> String {
        let s = &self.stats;
        let lost = self.lost();
        format!(
            "● REC {}  {} snapshots  {}  {}{}",
            self.path.display(),
            s.snapshots,
            bytes_short(s.bytes),
            duration_short(self.started.elapsed().as_secs()),
            if lost > 0 {
                format!("  {lost} not recorded")
            } else {
                String::new()
            }
        )
    }

    pub(super) fn show(&mut self) {
        if self.tty {
            let line = self.line();
            let _ = write!(self.out, "\r\x1b[K{line}");
            let _ = self.out.flush();
            self.on_line = true;
        } else if self.last_log.elapsed() >= LOG_EVERY {
            self.last_log = Instant::now();
            let line = self.line();
            let _ = writeln!(self.out, "vramwatch: {line}");
        }
    }

    pub(super) fn clear_line(&mut self) {
        if self.on_line {
            let _ = write!(self.out, "\r\x1b[K");
            self.on_line = false;
        }
    }

    /// A message on a line of its own.
    pub(super) fn say(&mut self, msg: &str) {
        self.clear_line();
        let _ = writeln!(self.out, "vramwatch: {msg}");
    }

    pub(super) fn report(&mut self, r: Report) {
        match r {
            Report::Wrote { stats, outage, .. } => {
                self.stats = stats;
                if let Some(news) = outage {
                    self.outage_news(*news);
                }
            }
            Report::Missed { count, before_seq } => self.say(&format!(
                "warning: {} before seq {before_seq} never reached the recorder (its queue was full)",
                snapshots(count)
            )),
            Report::Rotated(previous) => {
                self.say(&format!(
                    "{} reached the size limit: moved to {}, continuing in a new file",
                    self.path.display(),
                    previous.display()
                ));
            }
            // The outage's own news says it (`Wrote` comes first).
            Report::Warning(w) if self.outage.as_ref().is_some_and(|o| o.latest == w) => {}
            Report::Warning(w) => {
                // The same trouble every second is said once a minute.
                let kind = format!("{:?}", std::mem::discriminant(&w));
                let repeat = self
                    .last_warning
                    .as_ref()
                    .is_some_and(|(k, at)| *k == kind && at.elapsed() < LOG_EVERY);
                if !repeat {
                    self.last_warning = Some((kind, Instant::now()));
                    self.say(&format!("warning: {w}"));
                }
            }
        }
    }

    fn outage_news(&mut self, news: OutageNews) {
        let path = self.path.display().to_string();
        match news {
            OutageNews::Began(o) => {
                let msg = format!(
                    "warning: {path}: outage {} began at {}: {}: {} not recorded ({}); will keep trying with every snapshot",
                    o.number,
                    self.clock.hms(o.since_ms),
                    o.cause_text(),
                    snapshots(o.lost),
                    seqs(o.first_lost, o.last_lost),
                );
                self.say(&msg);
                self.outage_told_ms = o.since_ms;
                self.outage = Some(o);
            }
            OutageNews::GoesOn(o) => {
                if o.last_ms.saturating_sub(self.outage_told_ms) >= LOG_EVERY.as_millis() as u64 {
                    let latest = cause_text(&o.latest);
                    let msg = format!(
                        "warning: {path}: outage {} goes on since {} ({}): {latest}: {} not recorded so far; will keep trying",
                        o.number,
                        self.clock.hms(o.since_ms),
                        duration_short(o.last_ms.saturating_sub(o.since_ms) / 1000),
                        snapshots(o.lost),
                    );
                    self.say(&msg);
                    self.outage_told_ms = o.last_ms;
                }
                self.outage = Some(o);
            }
            OutageNews::Ended(o) => {
                let (t, seq) = o.ended.unwrap_or((o.last_ms, o.last_lost + 1));
                let msg = format!(
                    "{path}: outage {} ended at {}: recording again from seq {seq} after {}; {} lost ({}: {})",
                    o.number,
                    self.clock.hms(t),
                    duration_short(t.saturating_sub(o.since_ms) / 1000),
                    snapshots(o.lost),
                    seqs(o.first_lost, o.last_lost),
                    o.cause_text(),
                );
                self.say(&msg);
                self.lost_before += o.lost;
                self.outage = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RecordWarning;

    /// 2025-11-24 16:00:00 UTC.
    const T0: Millis = 1_764_000_000_000;

    fn full(seq: u64) -> RecordWarning {
        RecordWarning::DiskFull {
            path: "/r/x.jsonl".into(),
            seq,
            count: 1,
        }
    }

    /// Outage `number` from second `from` of the recording, `lost`
    /// snapshots (one a second) so far.
    fn outage(number: u32, from: u64, lost: u64) -> Outage {
        let last = from + lost - 1;
        Outage {
            number,
            since_ms: T0 + from * 1000,
            last_ms: T0 + last * 1000,
            first_lost: from,
            last_lost: last,
            lost,
            cause: full(from),
            latest: full(last),
            ended: None,
        }
    }

    fn status() -> Status<Vec<u8>> {
        Status::new(
            PathBuf::from("/r/x.jsonl"),
            false,
            Instant::now(),
            Clock::Utc,
            Vec::new(),
        )
    }

    /// The lines said since the last call.
    fn said(s: &mut Status<Vec<u8>>) -> Vec<String> {
        let text = String::from_utf8_lossy(&s.out).into_owned();
        s.out.clear();
        text.lines().map(str::to_owned).collect()
    }

    /// One failed write, as the recorder reports it: its news, then the
    /// writer's warning.
    fn failed_write(s: &mut Status<Vec<u8>>, news: OutageNews) {
        let latest = match &news {
            OutageNews::Began(o) | OutageNews::GoesOn(o) | OutageNews::Ended(o) => o.latest.clone(),
        };
        s.report(Report::Wrote {
            stats: WriterStats::default(),
            missed: 0,
            outage: Some(Box::new(news)),
        });
        s.report(Report::Warning(latest));
    }

    #[test]
    fn every_outage_is_told_as_it_begins_goes_on_and_ends() {
        let mut s = status();
        failed_write(&mut s, OutageNews::Began(outage(1, 20, 1)));
        assert_eq!(
            said(&mut s),
            [
                "vramwatch: warning: /r/x.jsonl: outage 1 began at 16:00:20: the disk is full: 1 snapshot not recorded (seq 20); will keep trying with every snapshot"
            ]
        );
        // Within the minute: nothing more, not even the writer's warnings.
        for lost in 2..=60 {
            failed_write(&mut s, OutageNews::GoesOn(outage(1, 20, lost)));
        }
        assert_eq!(said(&mut s), Vec::<String>::new());
        failed_write(&mut s, OutageNews::GoesOn(outage(1, 20, 61)));
        assert_eq!(
            said(&mut s),
            [
                "vramwatch: warning: /r/x.jsonl: outage 1 goes on since 16:00:20 (1m00s): the disk is full: 61 snapshots not recorded so far; will keep trying"
            ]
        );
        let mut o = outage(1, 20, 70);
        o.ended = Some((T0 + 90_000, 90));
        s.report(Report::Wrote {
            stats: WriterStats::default(),
            missed: 0,
            outage: Some(Box::new(OutageNews::Ended(o))),
        });
        assert_eq!(
            said(&mut s),
            [
                "vramwatch: /r/x.jsonl: outage 1 ended at 16:01:30: recording again from seq 90 after 1m10s; 70 snapshots lost (seq 20\u{2013}89: the disk is full)"
            ]
        );
        // A new outage five seconds later is told at once.
        failed_write(&mut s, OutageNews::Began(outage(2, 95, 1)));
        assert_eq!(
            said(&mut s),
            [
                "vramwatch: warning: /r/x.jsonl: outage 2 began at 16:01:35: the disk is full: 1 snapshot not recorded (seq 95); will keep trying with every snapshot"
            ]
        );
        assert_eq!(s.lost(), 71);
        assert!(s.line().ends_with("  71 not recorded"), "{}", s.line());
    }

    #[test]
    fn other_warnings_are_said_once_a_minute() {
        let mut s = status();
        let removed = RecordWarning::Removed {
            path: "/r/x.jsonl".into(),
        };
        s.report(Report::Warning(removed.clone()));
        s.report(Report::Warning(removed));
        assert_eq!(
            said(&mut s),
            [
                "vramwatch: warning: /r/x.jsonl was removed or moved away while recording; recording goes on in a new /r/x.jsonl"
            ]
        );
    }

    #[test]
    fn the_summary_gives_the_losses_by_outage() {
        let mut first = outage(1, 20, 35);
        first.ended = Some((T0 + 55_000, 55));
        let summary = Summary {
            stats: WriterStats {
                snapshots: 67,
                total_bytes: 3 << 20,
                ..WriterStats::default()
            },
            missed: 0,
            failed: None,
            outages: vec![first, outage(2, 100, 298)],
        };
        let path = Path::new("/r/x.jsonl");
        assert_eq!(
            summary_line(&summary, path, Duration::from_secs(400), Clock::Utc),
            "wrote 67 snapshots (3M) to /r/x.jsonl in 6m40s; 333 snapshots not recorded in 2 outages: 16:00:20\u{2013}16:00:55 (35 lost: the disk is full), 16:01:40 to the end (298 lost: the disk is full)"
        );
        let quiet = Summary {
            outages: Vec::new(),
            ..summary
        };
        assert_eq!(
            summary_line(&quiet, path, Duration::from_secs(5), Clock::Utc),
            "wrote 67 snapshots (3M) to /r/x.jsonl in 5s"
        );
    }
}
