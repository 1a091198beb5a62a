//! The SVG plot: memory used per GPU over the recording, up to and with a
//! line at each GPU's capacity, and memory of the top processes (named so
//! that they differ, `app::cmdline`); the recording's exits, suspected
//! OOMs and alerts are marked on both. Legends sit beside the plots, never
//! over a line.

use std::path::Path;

use anyhow::Result;
use plotters::prelude::*;

use crate::app::cmdline;
use crate::commands::export::rfc3339;
use crate::model::EventKind;
use crate::model::units::GIB;
#[cfg(test)]
use crate::record::Recording;

use super::summary::{Source, Summary};

/// The whole picture, and the strip at the right of each panel that holds
/// its legend.
const SIZE: (u32, u32) = (1200, 900);
const LEGEND_W: u32 = 320;
/// Characters of a legend label (the strip's width in 13 px sans-serif).
const LABEL_CHARS: usize = 42;
/// Exits are marked while there are at most this many (a busy node's
/// churn would hide the lines).
const MAX_EXIT_MARKS: usize = 60;

/// A drawing error in words: plotters' own wrapping taken off.
fn plot_err<E: std::fmt::Display>(out: &Path) -> impl Fn(E) -> anyhow::Error + '_ {
    move |e| {
        let s = e.to_string();
        let s = s
            .trim_start_matches("backend error: ")
            .trim_start_matches("Drawing backend error: ");
        anyhow::anyhow!("drawing {}: {s}", crate::sanitize::path(out))
    }
}

/// One chart of the SVG: named lines of GiB over time.
struct Panel {
    caption: String,
    /// The top of the y axis, GiB.
    y_max: f64,
    lines: Vec<(String, Vec<(f64, f64)>)>,
    /// Dashed horizontal lines: (label, GiB).
    limits: Vec<(String, f64)>,
}

/// The time axis both charts share.
struct TimeAxis {
    /// Seconds per axis unit.
    div: f64,
    max: f64,
    desc: String,
}

/// An event drawn as a vertical line: where (axis units) and what.
struct Mark {
    x: f64,
    kind: EventKind,
}

/// How an event kind is marked, if it is: colour and legend text.
fn mark_style(kind: EventKind) -> Option<(RGBColor, &'static str)> {
    match kind {
        EventKind::SuspectedOom => Some((RGBColor(214, 39, 40), "suspected OOM")),
        EventKind::Alert => Some((RGBColor(255, 127, 14), "alert")),
        EventKind::GpuLost | EventKind::Xid => Some((RGBColor(148, 103, 189), "GPU lost / XID")),
        EventKind::ProcessExited => Some((RGBColor(150, 150, 150), "process exit")),
        _ => None,
    }
}

/// A suspected OOM stands out; the rest stay behind the data.
fn mark_line(kind: EventKind, color: RGBColor) -> ShapeStyle {
    if kind == EventKind::SuspectedOom {
        color.stroke_width(2)
    } else {
        color.mix(0.5).stroke_width(1)
    }
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: Panel,
    x: &TimeAxis,
    marks: &[Mark],
    out: &Path,
) -> Result<()> {
    let err = plot_err(out);
    let (w, _) = area.dim_in_pixel();
    let (plot, legend) = area.split_horizontally(w.saturating_sub(LEGEND_W));
    let y_max = panel.y_max.max(0.001);
    let mut chart = ChartBuilder::on(&plot)
        .caption(panel.caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x.max, 0f64..y_max)
        .map_err(&err)?;
    chart
        .configure_mesh()
        .x_desc(x.desc.as_str())
        .y_desc("GiB")
        .draw()
        .map_err(&err)?;
    // Events first, under the data.
    for m in marks {
        if let Some((color, _)) = mark_style(m.kind) {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(m.x, 0.0), (m.x, y_max)],
                    mark_line(m.kind, color),
                )))
                .map_err(&err)?;
        }
    }
    for (_, v) in &panel.limits {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, *v), (x.max, *v)],
                8,
                5,
                BLACK.stroke_width(1),
            ))
            .map_err(&err)?;
    }
    let mut entries: Vec<(String, ShapeStyle, bool)> = Vec::new();
    for (i, (label, pts)) in panel.lines.into_iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts = pts.into_iter().map(|(t, v)| (t / x.div, v));
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(&err)?;
        entries.push((label, color.stroke_width(2), false));
    }
    for (label, _) in panel.limits {
        entries.push((label, BLACK.stroke_width(1), true));
    }
    let mut kinds: Vec<EventKind> = Vec::new();
    for m in marks {
        if mark_style(m.kind).is_some() && !kinds.contains(&m.kind) {
            kinds.push(m.kind);
        }
    }
    for k in kinds {
        if let Some((color, what)) = mark_style(k) {
            entries.push((what.to_owned(), mark_line(k, color), false));
        }
    }
    draw_legend(&legend, entries, out)
}

/// The legend in its own strip: a sample of each line and its label.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    entries: Vec<(String, ShapeStyle, bool)>,
    out: &Path,
) -> Result<()> {
    let err = plot_err(out);
    let (_, h) = area.dim_in_pixel();
    let step = 20i32;
    let fit = ((h as i32 - 60) / step).max(1) as usize;
    let (shown, more) = crate::ui::rows_shown(entries.len(), fit);
    let font = ("sans-serif", 13).into_font();
    for (n, (label, style, dashed)) in entries.into_iter().take(shown).enumerate() {
        let y = 50 + n as i32 * step;
        if dashed {
            for x0 in [4, 16] {
                area.draw(&PathElement::new(vec![(x0, y), (x0 + 8, y)], style))
                    .map_err(&err)?;
            }
        } else {
            area.draw(&PathElement::new(vec![(4, y), (28, y)], style))
                .map_err(&err)?;
        }
        let label = cmdline::cut(&label, LABEL_CHARS);
        area.draw(&Text::new(label, (34, y - 7), font.clone()))
            .map_err(&err)?;
    }
    if more > 0 {
        let y = 50 + shown as i32 * step;
        area.draw(&Text::new(format!("+{more} more"), (34, y - 7), font))
            .map_err(&err)?;
    }
    Ok(())
}

/// Two charts: memory used per GPU, and memory of the top processes.
pub(super) fn svg(out: &Path, rec: &impl Source, sum: &Summary) -> Result<()> {
    let span_s = (sum.last.saturating_sub(sum.first) as f64 / 1000.0).max(1.0);
    let (unit, div) = if span_s > 3.0 * 3600.0 {
        ("hours", 3600.0)
    } else if span_s > 180.0 {
        ("minutes", 60.0)
    } else {
        ("seconds", 1.0)
    };
    let x = TimeAxis {
        div,
        max: span_s / div,
        desc: format!("{unit} since {} UTC", rfc3339(sum.first)),
    };
    let gib = 1.0 / GIB as f64;
    let exits = sum
        .events
        .iter()
        .filter(|e| e.kind == EventKind::ProcessExited)
        .count();
    let marks: Vec<Mark> = sum
        .events
        .iter()
        .filter(|e| e.kind != EventKind::ProcessExited || exits <= MAX_EXIT_MARKS)
        .filter(|e| e.t_ms >= sum.first && e.t_ms <= sum.last)
        .map(|e| Mark {
            x: (e.t_ms - sum.first) as f64 / 1000.0 / div,
            kind: e.kind,
        })
        .collect();
    let err = plot_err(out);
    let root = SVGBackend::new(out, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let (top, bottom) = root.split_vertically(SIZE.1 / 2);

    // The y axis ends just above the largest GPU: its capacity line shows.
    let capacity = sum
        .gpus
        .iter()
        .map(|g| g.total.max(g.peak))
        .max()
        .unwrap_or(GIB) as f64
        * gib;
    let mut totals: Vec<u64> = sum
        .gpus
        .iter()
        .map(|g| g.total)
        .filter(|t| *t > 0)
        .collect();
    totals.sort_unstable();
    totals.dedup();
    let limits = totals
        .iter()
        .map(|t| {
            let gpus: Vec<String> = sum
                .gpus
                .iter()
                .filter(|g| g.total == *t)
                .map(|g| g.index.to_string())
                .collect();
            let whose = if totals.len() == 1 {
                String::new()
            } else {
                format!(" (GPU {})", gpus.join(", "))
            };
            (
                format!("capacity {:.1} GiB{whose}", *t as f64 * gib),
                *t as f64 * gib,
            )
        })
        .collect();
    let gpus = Panel {
        caption: format!("GPU memory used: {}", rec.header().host),
        y_max: capacity * 1.04,
        lines: sum
            .gpus
            .iter()
            .map(|g| (format!("GPU {}", g.index), g.series.points(gib)))
            .collect(),
        limits,
    };
    draw_panel(&top, gpus, &x, &marks, out)?;

    let labels: Vec<&str> = sum.procs.iter().map(|p| p.label.as_str()).collect();
    let short = cmdline::abbreviate_all(&labels, LABEL_CHARS - 16);
    let procs = Panel {
        caption: format!("Top {} processes by peak memory", sum.procs.len()),
        y_max: sum.procs.iter().map(|p| p.peak).max().unwrap_or(GIB) as f64 * gib * 1.1,
        lines: sum
            .procs
            .iter()
            .zip(short)
            .map(|(p, label)| {
                let name = match p.runs {
                    1 => format!("GPU {} PID {} {label}", p.gpu, p.pid),
                    n => format!("GPU {} {label} ({n} runs)", p.gpu),
                };
                (name, p.series.points(gib))
            })
            .collect(),
        limits: Vec::new(),
    };
    draw_panel(&bottom, procs, &x, &marks, out)?;
    root.present().map_err(&err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_h200_plot_has_capacity_events_and_distinct_labels() {
        let file = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/assets/h200-2gpu-10min.jsonl.zst"
        );
        let rec = Recording::open(Path::new(file)).unwrap();
        let th = crate::config::Config::default().thresholds;
        let sum = super::super::summary::collect(&rec, &th).unwrap();
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("h200.svg");
        svg(&out, &rec, &sum).unwrap();
        let drawn = std::fs::read_to_string(&out).unwrap();
        let texts: Vec<&str> = drawn
            .split("<text")
            .skip(1)
            .filter_map(|t| t.split_once('>').map(|x| x.1))
            .filter_map(|t| t.split("</text").next())
            .map(str::trim)
            .collect();
        assert!(texts.contains(&"capacity 140.4 GiB"), "a capacity line");
        assert!(texts.contains(&"alert"), "alerts marked and named");
        // The y axis stops just above the capacity (140 GiB), not at 200.
        assert!(texts.contains(&"140.0") && !texts.contains(&"160.0"));
        // Every process has its own name.
        let names: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| t.contains(" PID "))
            .collect();
        assert_eq!(names.len(), sum.procs.len(), "{names:?}");
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
    }
}
