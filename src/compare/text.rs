//! The comparison for people: the two recordings, a table per matched GPU
//! and per matched process (baseline, new, change, % change), what matched
//! nothing on each side, and the gate. Memory in the report's short binary
//! units (`140G`, `512M`); every string from a recording is cleaned.

use std::fmt::Write as _;

use crate::app::cmdline::cut;
use crate::model::units::{bytes_short, duration_short, rate_short};
use crate::record::when;
use crate::sanitize::clean;

use super::diff::{GpuRef, ProcRef, Row, Unit};
use super::gpu_match::GpuBasis;
use super::stats::RunStats;
use super::{Comparison, GpuDiff, ProcDiff};

/// Characters of a command line shown.
const COMMAND_CHARS: usize = 110;

/// The whole comparison, sections separated by a blank line.
pub(super) fn text(new: &RunStats, old: &RunStats, cmp: &Comparison) -> String {
    let mut o = String::new();
    run(&mut o, "New", new);
    run(&mut o, "Baseline", old);
    for g in &cmp.gpus {
        let _ = writeln!(o);
        gpu(&mut o, g);
    }
    for p in &cmp.procs {
        let _ = writeln!(o);
        process(&mut o, p);
    }
    let _ = writeln!(o);
    unmatched(&mut o, "new recording", &cmp.gpus_only.0, &cmp.procs_only.0);
    unmatched(&mut o, "baseline", &cmp.gpus_only.1, &cmp.procs_only.1);
    if !cmp.elsewhere.is_empty() {
        let pairs: Vec<String> = cmp
            .elsewhere
            .iter()
            .map(|(a, b)| format!("new GPU {a} ↔ baseline GPU {b}"))
            .collect();
        let _ = writeln!(
            o,
            "Note: matched processes ran on GPUs not compared with each other ({}): --match-gpu model pairs GPUs by the processes they share.",
            pairs.join(", ")
        );
    }
    if let Some(g) = &cmp.gate {
        let verdict = if g.passed { "passed" } else { "FAILED" };
        let _ = writeln!(o, "Gate ({} checked): {verdict}: {}", g.checked, g.reason);
    }
    o
}

/// Which file, when and how long.
fn run(o: &mut String, label: &str, r: &RunStats) {
    let span = r.last.saturating_sub(r.first) + r.header.interval_ms;
    let _ = writeln!(o, "{label:<10} {}", clean(&r.name));
    let _ = writeln!(
        o,
        "{:<10} {}, from {} UTC: {}, {} snapshots every {}",
        "",
        clean(&r.header.host),
        when(r.first).get(..19).unwrap_or("?").replace('T', " "),
        duration_short(span / 1000),
        r.snapshots,
        humantime::format_duration(std::time::Duration::from_millis(r.header.interval_ms))
    );
}

fn gpu_label(g: &GpuRef) -> String {
    format!("GPU {} {}", g.index, cut(&clean(&g.name), 24))
}

fn gpu(o: &mut String, g: &GpuDiff) {
    let why = match g.basis {
        GpuBasis::Index => "same index",
        GpuBasis::OnlyInUse => "the only GPU in use on each side",
        GpuBasis::Processes => "the processes they share",
        GpuBasis::Model => "model",
        GpuBasis::Given => "--match-gpu",
    };
    let _ = writeln!(
        o,
        "{} against baseline {} (matched by {why}):",
        gpu_label(&g.new),
        gpu_label(&g.old)
    );
    table(o, &g.rows);
}

fn proc_line(p: &ProcRef) -> String {
    format!(
        "PID {} on GPU {}, {}: {}",
        p.pid,
        p.gpu,
        cut(&clean(&p.user), 16),
        cut(&clean(&p.command), COMMAND_CHARS)
    )
}

fn process(o: &mut String, p: &ProcDiff) {
    let why = match p.basis {
        super::matching::ProcBasis::Command => "command line",
        super::matching::ProcBasis::Program => "program",
    };
    let _ = writeln!(
        o,
        "Process {} (matched by {why}):",
        cut(&clean(&p.new.program), 60)
    );
    let _ = writeln!(o, "  new       {}", proc_line(&p.new));
    let _ = writeln!(o, "  baseline  {}", proc_line(&p.old));
    table(o, &p.rows);
    if !p.alloc.is_empty() {
        let _ = writeln!(o, "  PyTorch allocator:");
        for r in &p.alloc {
            row(o, r);
        }
    }
}

fn table(o: &mut String, rows: &[Row]) {
    let _ = writeln!(
        o,
        "  {:<20} {:>10} {:>10} {:>10} {:>8}",
        "FIGURE", "BASELINE", "NEW", "CHANGE", "%"
    );
    for r in rows {
        row(o, r);
    }
}

fn row(o: &mut String, r: &Row) {
    let pct = r
        .change_pct()
        .map_or_else(|| "-".to_owned(), |p| format!("{p:+.1}%"));
    let _ = writeln!(
        o,
        "  {:<20} {:>10} {:>10} {:>10} {:>8}",
        r.label,
        value(r.unit, r.old),
        value(r.unit, r.new),
        change(r.unit, r.change()),
        pct
    );
}

/// A figure in its unit; `N/A` when missing.
pub(super) fn value(unit: Unit, v: Option<f64>) -> String {
    let Some(v) = v else {
        return "N/A".to_owned();
    };
    match unit {
        Unit::Bytes => bytes_short(v.max(0.0).round() as u64),
        Unit::Seconds => duration_short(v.max(0.0).round() as u64),
        Unit::BytesPerSecond => rate_short(v),
        Unit::Count => format!("{v:.0}"),
        Unit::Ratio => format!("{:.1}%", v * 100.0),
    }
}

/// A change, signed; `-` when either side is missing.
pub(super) fn change(unit: Unit, d: Option<f64>) -> String {
    let Some(d) = d else {
        return "-".to_owned();
    };
    let sign = if d < 0.0 { "-" } else { "+" };
    let a = d.abs();
    match unit {
        Unit::Bytes => format!("{sign}{}", bytes_short(a.round() as u64)),
        Unit::Seconds => format!("{sign}{}", duration_short(a.round() as u64)),
        Unit::BytesPerSecond => rate_short(d),
        Unit::Count => format!("{d:+.0}"),
        Unit::Ratio => format!("{:+.1}pt", d * 100.0),
    }
}

fn unmatched(o: &mut String, side: &str, gpus: &[GpuRef], procs: &[ProcRef]) {
    if gpus.is_empty() && procs.is_empty() {
        let _ = writeln!(o, "Only in the {side}: nothing.");
        return;
    }
    let _ = writeln!(o, "Only in the {side}:");
    for g in gpus {
        let _ = writeln!(o, "  {}, peak {}", gpu_label(g), bytes_short(g.peak));
    }
    for p in procs {
        let _ = writeln!(o, "  peak {:>6}  {}", bytes_short(p.peak), proc_line(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::units::{GIB, MIB};

    #[test]
    fn figures_read_in_the_reports_units() {
        assert_eq!(value(Unit::Bytes, Some(140.0 * GIB as f64)), "140G");
        assert_eq!(change(Unit::Bytes, Some(-512.0 * MIB as f64)), "-512M");
        assert_eq!(change(Unit::Bytes, Some(0.0)), "+0B");
        assert_eq!(value(Unit::Seconds, Some(130.4)), "2m10s");
        assert_eq!(change(Unit::Seconds, Some(-22.0)), "-22s");
        assert_eq!(
            value(Unit::BytesPerSecond, Some(2.0 * GIB as f64)),
            "+2.0G/s"
        );
        assert_eq!(value(Unit::Ratio, Some(0.125)), "12.5%");
        assert_eq!(change(Unit::Ratio, Some(0.05)), "+5.0pt");
        assert_eq!(change(Unit::Count, Some(1.0)), "+1");
        assert_eq!(value(Unit::Count, None), "N/A");
        assert_eq!(change(Unit::Count, None), "-");
    }
}
