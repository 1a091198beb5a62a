//! The SVG plot: memory used per GPU over the recording, and memory of the
//! top processes, from the summary's buckets.

use std::path::Path;

use anyhow::Result;
use plotters::prelude::*;

use crate::commands::export::rfc3339;
use crate::model::units::GIB;
use crate::record::Recording;

use super::summary::Summary;

/// Room above the highest line for the legend.
const HEADROOM: f64 = 1.5;

fn plot_err<E: std::fmt::Debug>(out: &Path) -> impl Fn(E) -> anyhow::Error + '_ {
    move |e| anyhow::anyhow!("drawing {}: {e:?}", out.display())
}

/// One chart of the SVG: named lines of GiB over time.
struct Panel {
    caption: String,
    /// Highest value any line reaches, GiB (the axis adds headroom).
    y_max: f64,
    legend_at: SeriesLabelPosition,
    lines: Vec<(String, Vec<(f64, f64)>)>,
}

/// The time axis both charts share.
struct TimeAxis {
    /// Seconds per axis unit.
    div: f64,
    max: f64,
    desc: String,
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: Panel,
    x: &TimeAxis,
    out: &Path,
) -> Result<()> {
    let err = plot_err(out);
    let mut chart = ChartBuilder::on(area)
        .caption(panel.caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x.max, 0f64..panel.y_max.max(0.001) * HEADROOM)
        .map_err(&err)?;
    chart
        .configure_mesh()
        .x_desc(x.desc.as_str())
        .y_desc("GiB")
        .draw()
        .map_err(&err)?;
    let any = !panel.lines.is_empty();
    for (i, (label, pts)) in panel.lines.into_iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts = pts.into_iter().map(|(t, v)| (t / x.div, v));
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(1)))
            .map_err(&err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
    }
    if any {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(panel.legend_at)
            .draw()
            .map_err(&err)?;
    }
    Ok(())
}

/// Two charts: memory used per GPU, and memory of the top processes.
pub(super) fn svg(out: &Path, rec: &Recording, sum: &Summary) -> Result<()> {
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
    let err = plot_err(out);
    let root = SVGBackend::new(out, (1200, 900)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let (top, bottom) = root.split_vertically(450);

    let gpus = Panel {
        caption: format!("GPU memory used: {}", rec.header().host),
        y_max: sum
            .gpus
            .iter()
            .map(|g| g.total.max(g.peak))
            .max()
            .unwrap_or(GIB) as f64
            * gib,
        legend_at: SeriesLabelPosition::UpperRight,
        lines: sum
            .gpus
            .iter()
            .map(|g| (format!("GPU {}", g.index), g.series.points(gib)))
            .collect(),
    };
    draw_panel(&top, gpus, &x, out)?;

    let procs = Panel {
        caption: format!("Top {} processes by peak memory", sum.procs.len()),
        y_max: sum.procs.iter().map(|p| p.peak).max().unwrap_or(GIB) as f64 * gib,
        legend_at: SeriesLabelPosition::UpperLeft,
        lines: sum
            .procs
            .iter()
            .map(|p| {
                let label: String = p.label.chars().take(40).collect();
                let name = match p.runs {
                    1 => format!("GPU {} PID {} {label}", p.gpu, p.pid),
                    n => format!("GPU {} {label} ({n} runs)", p.gpu),
                };
                (name, p.series.points(gib))
            })
            .collect(),
    };
    draw_panel(&bottom, procs, &x, out)?;
    root.present().map_err(&err)?;
    Ok(())
}
