//! The overlay: per matched GPU pair, memory used by both runs on one time
//! axis (aligned at each GPU's start, or by the clock), the GPU's capacity,
//! and each run's suspected OOMs, alerts, exits and lost GPUs as vertical
//! marks. Written by hand (the report's plotters helpers are private to
//! it); every string is cleaned and XML-escaped.

use std::fmt::Write as _;

use crate::model::units::GIB;
use crate::model::{EventKind, Millis};
use crate::sanitize::clean;

use super::stats::{GpuStats, RunStats};
use super::{Align, Comparison};

const WIDTH: f64 = 1200.0;
const PANEL_H: f64 = 340.0;
const LEFT: f64 = 70.0;
const LEGEND_W: f64 = 260.0;
const TOP: f64 = 40.0;
const PLOT_H: f64 = 250.0;
const NEW_COLOR: &str = "#1f77b4";
const OLD_COLOR: &str = "#8c8c8c";
/// Exits are marked while a run has at most this many on the GPU.
const MAX_EXIT_MARKS: usize = 60;

/// Text for an SVG document: cleaned of control characters and escaped.
pub(super) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in clean(s).chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

/// A round step that cuts `range` into about `n` parts: 1, 2 or 5 × 10^k.
fn step(range: f64, n: f64) -> f64 {
    let raw = (range / n).max(1e-9);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    mag * if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    }
}

fn mark_color(kind: EventKind) -> Option<&'static str> {
    match kind {
        EventKind::SuspectedOom => Some("#d62728"),
        EventKind::Alert => Some("#ff7f0e"),
        EventKind::GpuLost | EventKind::Xid => Some("#9467bd"),
        EventKind::ProcessExited => Some("#bbbbbb"),
        _ => None,
    }
}

fn mark_name(kind: EventKind) -> &'static str {
    match kind {
        EventKind::SuspectedOom => "suspected OOM",
        EventKind::Alert => "alert",
        EventKind::GpuLost | EventKind::Xid => "GPU lost / XID",
        _ => "process exit",
    }
}

/// One run's line on a panel: (seconds on the axis, GiB), and its marks.
struct Trace {
    points: Vec<(f64, f64)>,
    marks: Vec<(f64, EventKind)>,
}

fn trace(g: &GpuStats, zero: Millis) -> Trace {
    let x = |t: Millis| (t as f64 - zero as f64) / 1000.0;
    let exits = g
        .marks
        .iter()
        .filter(|m| m.1 == EventKind::ProcessExited)
        .count();
    Trace {
        points: g
            .series
            .points()
            .into_iter()
            .map(|(t, v)| (x(t), v as f64 / GIB as f64))
            .collect(),
        marks: g
            .marks
            .iter()
            .filter(|m| m.1 != EventKind::ProcessExited || exits <= MAX_EXIT_MARKS)
            .map(|&(t, k)| (x(t), k))
            .collect(),
    }
}

/// The whole document.
pub(super) fn svg(new: &RunStats, old: &RunStats, cmp: &Comparison, align: Align) -> String {
    let panels = cmp.gpus.len().max(1);
    let height = 30.0 + PANEL_H * panels as f64;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        o,
        r#"<text x="{LEFT}" y="20" font-size="15">{} (new) against {} (baseline)</text>"#,
        esc(&new.name),
        esc(&old.name)
    );
    if cmp.gpus.is_empty() {
        let _ = writeln!(
            o,
            r#"<text x="{LEFT}" y="80">No GPU of the new recording matched one of the baseline's.</text>"#
        );
    }
    let wall0 = new.first.min(old.first);
    for (i, d) in cmp.gpus.iter().enumerate() {
        let find = |r: &RunStats, idx: u32| r.gpus.iter().find(|g| g.index == idx).cloned();
        let (Some(gn), Some(go)) = (find(new, d.new.index), find(old, d.old.index)) else {
            continue;
        };
        let (zn, zo) = match align {
            Align::Start => (gn.origin(), go.origin()),
            Align::Wall => (wall0, wall0),
        };
        let top = 30.0 + PANEL_H * i as f64;
        let title = format!(
            "GPU {} {} (new) and GPU {} {} (baseline)",
            d.new.index, d.new.name, d.old.index, d.old.name
        );
        panel(
            &mut o,
            top,
            &title,
            [(&gn, trace(&gn, zn)), (&go, trace(&go, zo))],
            align,
        );
    }
    let _ = writeln!(o, "</svg>");
    o
}

fn panel(o: &mut String, top: f64, title: &str, runs: [(&GpuStats, Trace); 2], align: Align) {
    let plot_w = WIDTH - LEFT - LEGEND_W;
    let (y0, y1) = (top + TOP, top + TOP + PLOT_H);
    let xs = runs.iter().flat_map(|r| r.1.points.iter().map(|p| p.0));
    let (mut lo, mut hi) = xs.fold((0f64, 1f64), |(a, b), x| (a.min(x), b.max(x)));
    if hi - lo < 1.0 {
        hi = lo + 1.0;
    }
    let span = hi - lo;
    let (unit, div) = if span > 3.0 * 3600.0 {
        ("hours", 3600.0)
    } else if span > 180.0 {
        ("minutes", 60.0)
    } else {
        ("seconds", 1.0)
    };
    lo /= div;
    hi /= div;
    let totals: Vec<f64> = runs.iter().map(|r| r.0.total as f64 / GIB as f64).collect();
    let data_max = runs
        .iter()
        .flat_map(|r| r.1.points.iter().map(|p| p.1))
        .fold(0f64, f64::max);
    let y_max = (totals.iter().copied().fold(data_max, f64::max) * 1.04).max(0.001);
    let px = |x: f64| LEFT + (x / div - lo) / (hi - lo) * plot_w;
    let py = |v: f64| y1 - v / y_max * PLOT_H;
    let _ = writeln!(
        o,
        r#"<text x="{LEFT}" y="{}" font-size="14">{}</text>"#,
        top + 25.0,
        esc(title)
    );
    // Axes, grid and tick labels.
    let _ = writeln!(
        o,
        r##"<rect x="{LEFT}" y="{y0}" width="{plot_w}" height="{PLOT_H}" fill="none" stroke="#444"/>"##
    );
    let ys = step(y_max, 5.0);
    let mut v = 0.0;
    while v <= y_max {
        let y = py(v);
        let _ = writeln!(
            o,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            y + 4.0,
            trim(v)
        );
        v += ys;
    }
    let xs = step(hi - lo, 8.0);
    let mut x = (lo / xs).ceil() * xs;
    while x <= hi + 1e-9 {
        let p = px(x * div);
        let _ = writeln!(
            o,
            r##"<line x1="{p:.1}" y1="{y0}" x2="{p:.1}" y2="{y1}" stroke="#eee"/><text x="{p:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            y1 + 16.0,
            trim(x)
        );
        x += xs;
    }
    let since = match align {
        Align::Start => "since each GPU's first process",
        Align::Wall => "since the earlier recording's start",
    };
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{unit} {since}</text><text x="16" y="{:.1}" transform="rotate(-90 16 {:.1})" text-anchor="middle">GiB</text>"#,
        LEFT + plot_w / 2.0,
        y1 + 34.0,
        (y0 + y1) / 2.0,
        (y0 + y1) / 2.0
    );
    // Marks under the data: new solid, baseline dashed.
    let mut kinds: Vec<EventKind> = Vec::new();
    for ((_, tr), dash) in runs.iter().zip(["", r#" stroke-dasharray="5 3""#]) {
        for &(x, k) in &tr.marks {
            let Some(color) = mark_color(k) else { continue };
            let p = px(x);
            if !(LEFT..=LEFT + plot_w).contains(&p) {
                continue;
            }
            let w = if k == EventKind::SuspectedOom { 2 } else { 1 };
            let _ = writeln!(
                o,
                r#"<line x1="{p:.1}" y1="{y0}" x2="{p:.1}" y2="{y1}" stroke="{color}" stroke-width="{w}"{dash}/>"#
            );
            if !kinds.iter().any(|&q| mark_name(q) == mark_name(k)) {
                kinds.push(k);
            }
        }
    }
    // Capacity.
    let mut caps: Vec<f64> = totals.iter().copied().filter(|t| *t > 0.0).collect();
    caps.dedup_by(|a, b| (*a - *b).abs() < 1e-6);
    for c in &caps {
        let _ = writeln!(
            o,
            r#"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="black" stroke-dasharray="8 5"/>"#,
            LEFT + plot_w,
            y = py(*c)
        );
    }
    for ((_, tr), color) in runs.iter().rev().zip([OLD_COLOR, NEW_COLOR]) {
        let pts: Vec<String> = tr
            .points
            .iter()
            .map(|&(x, v)| format!("{:.1},{:.1}", px(x), py(v)))
            .collect();
        let _ = writeln!(
            o,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            pts.join(" ")
        );
    }
    // Legend.
    let lx = LEFT + plot_w + 16.0;
    let mut entries: Vec<(String, String)> = vec![
        (NEW_COLOR.into(), format!("new: GPU {}", runs[0].0.index)),
        (
            OLD_COLOR.into(),
            format!("baseline: GPU {}", runs[1].0.index),
        ),
    ];
    for c in &caps {
        entries.push(("black".into(), format!("capacity {c:.1} GiB")));
    }
    for k in kinds {
        if let Some(c) = mark_color(k) {
            entries.push((c.into(), format!("{} (baseline dashed)", mark_name(k))));
        }
    }
    for (n, (color, label)) in entries.iter().enumerate() {
        let y = y0 + 10.0 + 20.0 * n as f64;
        let _ = writeln!(
            o,
            r#"<line x1="{lx}" y1="{y}" x2="{:.1}" y2="{y}" stroke="{color}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 24.0,
            lx + 30.0,
            y + 4.0,
            esc(label)
        );
    }
}

/// A tick value without needless decimals.
fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_steps_are_round() {
        assert_eq!(esc("a<b>&\"c'\x1b[31m"), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(step(140.0, 5.0), 50.0);
        assert_eq!(step(47.0, 8.0), 10.0);
        assert_eq!(step(0.9, 5.0), 0.2);
        assert_eq!(trim(20.0), "20");
        assert_eq!(trim(0.25), "0.25");
    }
}
