//! The text report: the recording and host, a table per GPU, the time
//! above each threshold, the top processes and the events.

use std::fmt::Write as _;

use crate::commands::export::rfc3339;
use crate::config::{Level, Thresholds};
use crate::model::units::{bytes_short, duration_short};
use crate::model::{Event, EventKind, Millis};
use crate::record::format::Header;
use crate::sanitize::clean;

use super::summary::Summary;

/// Events listed one by one; the rest are counted.
const EVENTS_LISTED: usize = 20;

/// The time of day (UTC), with the date when the recording spans more
/// than one day.
fn clock(t: Millis, dated: bool) -> String {
    let s = rfc3339(t);
    let r = if dated { 5..19 } else { 11..19 };
    s.get(r).unwrap_or("?").replace('T', " ")
}

/// Width of an `AT` column: what [`clock`] writes.
fn at_width(dated: bool) -> usize {
    if dated { 14 } else { 8 }
}

fn pct_of(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.0}%", part as f64 * 100.0 / whole as f64)
    }
}

fn above(ms: u64, span: u64) -> String {
    if ms == 0 {
        "-".into()
    } else {
        // To the nearest second, and never "0s" for a time that was there.
        format!(
            "{} ({})",
            duration_short((ms.saturating_add(500) / 1000).max(1)),
            pct_of(ms, span)
        )
    }
}

fn level(l: &Level) -> (String, String) {
    (format!("{}", l.warn), format!("{}", l.crit))
}

/// The whole report, sections separated by a blank line. Every string from
/// the recording is cleaned of escape sequences here too.
pub(super) fn text(name: &str, h: &Header, sum: &Summary, th: &Thresholds) -> String {
    let mut o = String::new();
    let span = sum
        .last
        .saturating_sub(sum.first)
        .saturating_add(h.interval_ms);
    let dated = rfc3339(sum.first).get(..10) != rfc3339(sum.last).get(..10);
    source(&mut o, name, h);
    if sum.snapshots == 0 {
        let _ = writeln!(o, "Time       no snapshots");
        return o;
    }
    let _ = writeln!(
        o,
        "Time       {} to {} (UTC): {}, {} snapshots every {}",
        rfc3339(sum.first),
        rfc3339(sum.last),
        duration_short(span / 1000),
        sum.snapshots,
        humantime::format_duration(std::time::Duration::from_millis(h.interval_ms))
    );
    let _ = writeln!(o);
    gpus(&mut o, h, sum, dated);
    let _ = writeln!(o);
    thresholds(&mut o, sum, th, span);
    let _ = writeln!(o);
    procs(&mut o, sum, dated);
    let _ = writeln!(o);
    events(&mut o, sum, dated);
    o
}

/// Which file, and the host and program that recorded it.
fn source(o: &mut String, name: &str, h: &Header) {
    let sys = &h.system;
    let _ = writeln!(o, "Recording  {}", clean(name));
    let _ = writeln!(
        o,
        "Host       {} ({}), driver {}, CUDA {}; recorded by vramwatch {}",
        clean(&h.host),
        clean(&sys.source),
        clean(sys.driver_version.as_deref().unwrap_or("N/A")),
        clean(sys.cuda_version.as_deref().unwrap_or("N/A")),
        clean(&h.vramwatch_version)
    );
}

/// A line per GPU: peak memory and when, mean memory, utilisation.
fn gpus(o: &mut String, h: &Header, sum: &Summary, dated: bool) {
    let sys = &h.system;
    let at = at_width(dated);
    let _ = writeln!(
        o,
        "GPU  NAME              MEMORY PEAK       {:>at$}    MEMORY MEAN   UTIL PEAK  UTIL MEAN",
        "AT"
    );
    for g in &sum.gpus {
        let name = sys
            .gpus
            .iter()
            .find(|d| d.index == g.index)
            .map_or("?", |d| d.name.as_str());
        let name: String = clean(name).chars().take(16).collect();
        let mean = if g.used_n > 0 {
            g.used_sum / g.used_n as f64
        } else {
            0.0
        };
        let util_mean = (g.util_n > 0).then(|| g.util_sum / g.util_n as f64);
        let _ = writeln!(
            o,
            "{:>3}  {:<16}  {:>7} {:>6}   {:>at$}  {:>7} {:<6} {:>9}  {:>9}",
            g.index,
            name,
            bytes_short(g.peak),
            format!("({:.0}%)", g.peak_pct),
            clock(g.peak_at, dated),
            bytes_short(mean as u64),
            format!("({})", pct_of(mean as u64, g.total)),
            g.util_peak.map_or("N/A".into(), |u| format!("{u}%")),
            util_mean.map_or("N/A".into(), |u| format!("{u:.0}%")),
        );
    }
}

/// A line per GPU: time at or above each warn and critical level, and its
/// share of the recording's `span` (ms).
fn thresholds(o: &mut String, sum: &Summary, th: &Thresholds, span: u64) {
    let (mw, mc) = level(&th.memory);
    let (tw, tc) = level(&th.temperature);
    let (pw, pc) = level(&th.power);
    let (uw, uc) = level(&th.utilization);
    let _ = writeln!(
        o,
        "Time at or above the thresholds (memory % of total, temperature °C, power % of limit, utilisation %):"
    );
    let heads = [
        format!("MEM≥{mw}%"),
        format!("MEM≥{mc}%"),
        format!("TEMP≥{tw}"),
        format!("TEMP≥{tc}"),
        format!("POWER≥{pw}%"),
        format!("POWER≥{pc}%"),
        format!("UTIL≥{uw}%"),
        format!("UTIL≥{uc}%"),
    ];
    let _ = write!(o, "GPU");
    for hd in &heads {
        let _ = write!(o, "  {hd:>13}");
    }
    let _ = writeln!(o);
    for g in &sum.gpus {
        let _ = write!(o, "{:>3}", g.index);
        for a in [g.mem, g.temp, g.power, g.util] {
            let _ = write!(
                o,
                "  {:>13}  {:>13}",
                above(a.warn, span),
                above(a.crit, span)
            );
        }
        let _ = writeln!(o);
    }
}

/// The top processes by peak memory, a restarted job as one.
fn procs(o: &mut String, sum: &Summary, dated: bool) {
    if sum.procs.is_empty() {
        let _ = writeln!(o, "No process used GPU memory.");
        return;
    }
    let at = at_width(dated);
    let _ = writeln!(o, "Top processes by peak memory:");
    let _ = writeln!(
        o,
        "   PEAK  {:<at$}  GPU      PID  USER          COMMAND",
        "AT"
    );
    for p in &sum.procs {
        let user: String = clean(&p.user).chars().take(12).collect();
        let label = crate::app::cmdline::cut(&clean(&p.label), 80);
        let _ = writeln!(
            o,
            "{:>7}  {:>at$}  {:>3}  {:>7}  {:<12}  {}{}",
            bytes_short(p.peak),
            clock(p.peak_at, dated),
            p.gpu,
            p.pid,
            user,
            label,
            match p.runs {
                1 => String::new(),
                n => format!("  (ran {n} times: the peak run's PID)"),
            }
        );
    }
}

/// How many events of each kind, then up to [`EVENTS_LISTED`] of them in
/// time order.
fn events(o: &mut String, sum: &Summary, dated: bool) {
    let total = sum.events_total();
    if total == 0 {
        let _ = writeln!(o, "No events.");
        return;
    }
    let summary: Vec<String> = sum
        .event_counts
        .iter()
        .map(|(k, n)| kind_count(*k, *n as usize))
        .collect();
    let _ = writeln!(o, "Events ({total}): {}", summary.join(", "));
    // Suspected OOMs first: they are why people open a recording.
    let mut listed: Vec<&Event> = sum
        .events
        .iter()
        .filter(|e| e.kind == EventKind::SuspectedOom)
        .chain(
            sum.events
                .iter()
                .filter(|e| e.kind != EventKind::SuspectedOom),
        )
        .take(EVENTS_LISTED)
        .collect();
    listed.sort_by_key(|e| e.t_ms);
    for e in &listed {
        let _ = writeln!(o, "  {}  {}", clock(e.t_ms, dated), clean(&e.message));
    }
    if total > listed.len() as u64 {
        let _ = writeln!(
            o,
            "  ... and {} more (`jq 'select(.type == \"event\")' FILE` lists them all)",
            total - listed.len() as u64
        );
    }
}

/// `n` events of kind `k` in words: "1 alert", "2 alerts".
fn kind_count(k: EventKind, n: usize) -> String {
    use crate::model::units::plural;
    let (one, many) = match k {
        EventKind::ProcessStarted => ("process started", "processes started"),
        EventKind::ProcessExited => ("process exited", "processes exited"),
        EventKind::SuspectedOom => ("suspected OOM", "suspected OOMs"),
        EventKind::ThresholdCrossed => ("threshold crossed", "thresholds crossed"),
        EventKind::Alert => ("alert", "alerts"),
        EventKind::GpuLost => ("GPU lost", "GPUs lost"),
        EventKind::Xid => ("XID", "XIDs"),
        EventKind::Note => ("note", "notes"),
    };
    plural(n as u64, one, many)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_counts_agree_with_their_number() {
        assert_eq!(kind_count(EventKind::Alert, 1), "1 alert");
        assert_eq!(kind_count(EventKind::Alert, 2), "2 alerts");
        assert_eq!(kind_count(EventKind::Note, 4), "4 notes");
        assert_eq!(
            kind_count(EventKind::ProcessStarted, 3),
            "3 processes started"
        );
        assert_eq!(kind_count(EventKind::SuspectedOom, 1), "1 suspected OOM");
    }

    #[test]
    fn time_above_a_level_is_rounded_and_never_zero() {
        // 0.7 s of a 10 s recording read "0s (7%)".
        assert_eq!(above(700, 10_000), "1s (7%)");
        assert_eq!(above(1_499, 10_000), "1s (15%)");
        assert_eq!(above(1_500, 10_000), "2s (15%)");
        assert_eq!(above(0, 10_000), "-");
    }
}
