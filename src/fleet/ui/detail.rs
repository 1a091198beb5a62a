//! The drill-down into one host: column titles, then a line per GPU
//! (memory bar, in use of total, growth, sparklines of the last ten
//! minutes, utilisation, temperature, power, forecast) with every cell at a
//! fixed column, then its process table.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Sparkline, SparklineBar, Widget};

use super::{bar, graded, memory_text, put, scrape_cell};
use crate::analysis::Eta;
use crate::fleet::app::{FleetApp, Table};
use crate::fleet::layout::{detail_split, gpu_columns};
use crate::fleet::model::{GpuRow, Host};
use crate::fleet::table::{GPU_MEMORY_TEXT, GpuCol};
use crate::model::units::{MIB, duration_short, rate_short};

pub(super) fn render(app: &FleetApp, area: Rect, buf: &mut Buffer) {
    let t = app.theme();
    let Some(name) = app.open_host() else {
        return;
    };
    let host = app.hosts().iter().find(|h| h.name == name);
    let detail = app.detail();
    let gpus = detail.map_or(1, |d| d.gpus.len());
    let (top, procs) = detail_split(area, gpus);
    title(app, name, host, Rect::new(top.x, top.y, top.width, 1), buf);
    let Some(d) = detail else {
        put(
            buf,
            (area.x, area.y + 1),
            area.width,
            &format!(" loading {name} …"),
            false,
            t.dim,
        );
        return;
    };
    if d.gpus.is_empty() {
        put(
            buf,
            (area.x, area.y + 1),
            area.width,
            " no GPU figures from this host now (its targets are down or stale)",
            false,
            t.dim,
        );
    }
    let cols = gpu_columns(top.width);
    if !d.gpus.is_empty() {
        let r = Rect::new(top.x, top.y + 1, top.width, 1);
        gpu_titles(app, &cols, d.history_s, r, buf);
    }
    for (i, g) in d
        .gpus
        .iter()
        .enumerate()
        .take(top.height.saturating_sub(3) as usize)
    {
        let r = Rect::new(top.x, top.y + 2 + i as u16, top.width, 1);
        gpu_line(app, g, &cols, r, buf);
    }
    let rule = Rect::new(top.x, top.bottom().saturating_sub(1), top.width, 1);
    Block::default()
        .borders(Borders::TOP)
        .border_style(t.border)
        .render(rule, buf);
    if host.is_some_and(|h| !h.process_data) {
        put(
            buf,
            (procs.x, procs.y),
            procs.width,
            " no process data: this host exports dcgm-exporter's device figures only (run `vramwatch serve` there for processes)",
            false,
            t.dim,
        );
        return;
    }
    let rows = app.detail_rows();
    super::procs::table(app, procs, &rows, Table::Detail, buf);
}

/// " hosts › node-a  4 GPUs · 127.0.0.1:9401 · up 1s".
fn title(app: &FleetApp, name: &str, host: Option<&Host>, r: Rect, buf: &mut Buffer) {
    let t = app.theme();
    let mut spans = vec![
        Span::styled(format!(" {} › ", app.tab().name()), t.dim),
        Span::styled(name.to_owned(), t.accent.patch(t.title)),
    ];
    if let Some(h) = host {
        spans.push(Span::styled(format!("  {} GPUs · ", h.gpus), t.dim));
        spans.push(Span::raw(h.instances.join(", ")));
        let (s, st) = scrape_cell(&app.scrape_shown(h), t);
        spans.push(Span::styled(" · ", t.dim));
        spans.push(Span::styled(s, st));
        if let (Some(u), Some(tot)) = (h.used_bytes, h.total_bytes) {
            spans.push(Span::styled(
                format!(" · {}", memory_text(u, tot, false)),
                t.text,
            ));
        }
    }
    Line::from(spans).render(r, buf);
}

/// `points` squeezed (or kept) into `n` cells: the highest of each bucket.
fn buckets(points: &[Option<f64>], n: usize) -> Vec<SparklineBar> {
    if n == 0 || points.is_empty() {
        return Vec::new();
    }
    let per = points.len().div_ceil(n).max(1);
    points
        .chunks(per)
        .map(|c| {
            let m = c
                .iter()
                .flatten()
                .fold(None::<f64>, |a, v| Some(a.map_or(*v, |a| a.max(*v))));
            SparklineBar::from(m.map(|v| v.clamp(0.0, 100.0).round() as u64))
        })
        .collect()
}

fn spark(points: &[Option<f64>], style: Style, r: Rect, buf: &mut Buffer) {
    Sparkline::default()
        .data(buckets(points, r.width as usize))
        .max(100)
        .style(style)
        .absent_value_symbol(" ")
        .bar_set(symbols::bar::NINE_LEVELS)
        .render(r, buf);
}

/// The GPU lines' column titles; the sparklines' name the span they
/// cover ("MEM 10m").
fn gpu_titles(app: &FleetApp, cols: &[(GpuCol, u16)], span_s: u64, r: Rect, buf: &mut Buffer) {
    let span = match span_s {
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s => duration_short(s),
    };
    let named: Vec<(String, u16, bool)> = cols
        .iter()
        .map(|&(c, w)| {
            let title = match c {
                GpuCol::MemHistory | GpuCol::UtilHistory if span_s > 0 => {
                    format!("{} {span}", c.spec().title)
                }
                _ => c.spec().title.to_owned(),
            };
            (title, w, c.spec().right)
        })
        .collect();
    let t = app.theme();
    let style = t.header.patch(t.label);
    let mut x = r.x;
    for (title, w, right) in named {
        put(buf, (x, r.y), w, &title, right, style);
        x += w + 1;
    }
}

/// One GPU: every cell at its column, whatever its value.
fn gpu_line(app: &FleetApp, g: &GpuRow, cols: &[(GpuCol, u16)], r: Rect, buf: &mut Buffer) {
    let mut x = r.x;
    for &(c, w) in cols {
        if x >= r.right() {
            break;
        }
        let w = w.min(r.right() - x);
        let cell = Rect::new(x, r.y, w, 1);
        let t = app.theme();
        match c {
            GpuCol::Memory => memory(app, g, cell, buf),
            GpuCol::MemHistory => spark(&g.mem_history, t.spark_mem, cell, buf),
            GpuCol::UtilHistory => spark(&g.util_history, t.spark_util, cell, buf),
            _ => {
                let (text, st) = gpu_cell(app, g, c);
                put(buf, (x, r.y), w, &text, c.spec().right, st);
            }
        }
        x += w + 1;
    }
}

/// The bar, " 82.5G / 140G" and " 59%▲": a fixed width whatever the
/// figures.
fn memory(app: &FleetApp, g: &GpuRow, r: Rect, buf: &mut Buffer) {
    let t = app.theme();
    let (Some(total), Some(used)) = (g.total_bytes(), g.used_bytes) else {
        put(buf, (r.x, r.y), r.width, "N/A", false, t.dim);
        return;
    };
    let pct = g.in_use_pct().unwrap_or(0.0);
    let sev = app.config().thresholds.memory.grade(pct);
    let in_use = used + g.reserved_bytes.unwrap_or(0);
    let bar_w = r.width.saturating_sub(GPU_MEMORY_TEXT);
    let mut spans = bar(in_use, total, bar_w, sev, t);
    spans.push(Span::styled(
        format!(" {}", memory_text(in_use, total, true)),
        t.text,
    ));
    let (p, st) = graded(format!(" {pct:>3.0}%"), sev, t);
    spans.push(Span::styled(p, st));
    Line::from(spans).render(r, buf);
}

/// Every cell but the memory and the sparklines.
fn gpu_cell(app: &FleetApp, g: &GpuRow, c: GpuCol) -> (String, Style) {
    let t = app.theme();
    let th = &app.config().thresholds;
    let blank = || (String::new(), t.text);
    match c {
        GpuCol::Gpu => (g.gpu.to_string(), t.title),
        GpuCol::Model => (
            g.model
                .strip_prefix("NVIDIA ")
                .unwrap_or(&g.model)
                .to_owned(),
            t.title,
        ),
        GpuCol::Growth => match g.growth_bps {
            Some(r) if r.abs() >= MIB as f64 => {
                (rate_short(r), if r > 0.0 { t.warn } else { t.ok })
            }
            Some(_) => ("─".into(), t.dim),
            None => blank(),
        },
        GpuCol::Util => match g.util_pct {
            Some(u) => graded(format!("{u:.0}%"), th.utilization.grade(u), t),
            None => ("N/A ".into(), t.dim),
        },
        GpuCol::Temp => match g.temp_c {
            Some(c) => graded(format!("{c:.0}°C"), th.temperature.grade(c), t),
            None => blank(),
        },
        GpuCol::Power => match g.power_w {
            Some(p) => (format!("{p:.0}W"), t.text),
            None => blank(),
        },
        // As the dashboard says it ("~2m10s"; at risk, "≤44s").
        GpuCol::FullIn => match g.full_in_s {
            Some(s) => {
                let eta = Eta {
                    low_s: 0.0,
                    eta_s: s.max(0.0),
                    high_s: g.full_in_high_s.map(|h| h.max(0.0)),
                };
                (eta.describe_short(), t.crit)
            }
            None => blank(),
        },
        GpuCol::Memory | GpuCol::MemHistory | GpuCol::UtilHistory => blank(),
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::fleet::app::FleetSettings;
    use crate::model::units::GIB;

    fn app() -> FleetApp {
        FleetApp::new(FleetSettings::for_tests())
    }

    fn gpu(n: u32, growth: Option<f64>) -> GpuRow {
        GpuRow {
            gpu: n,
            model: "NVIDIA H200".into(),
            used_bytes: Some(80 * GIB),
            free_bytes: Some(60 * GIB),
            util_pct: Some(if n == 0 { 100.0 } else { 5.0 }),
            temp_c: Some(60.0),
            power_w: Some(450.0),
            growth_bps: growth,
            mem_history: vec![Some(50.0); 30],
            util_history: vec![Some(20.0); 30],
            ..Default::default()
        }
    }

    fn line(app: &FleetApp, g: &GpuRow, width: u16) -> String {
        let area = Rect::new(0, 0, width, 1);
        let mut buf = Buffer::empty(area);
        gpu_line(app, g, &gpu_columns(width), area, &mut buf);
        (0..width).map(|x| buf[(x, 0)].symbol()).collect()
    }

    #[test]
    fn gpu_cells_keep_their_columns_whatever_the_figures() {
        let app = app();
        for width in [80, 120, 140] {
            let grows = line(&app, &gpu(0, Some(500.0 * MIB as f64)), width);
            let still = line(&app, &gpu(1, Some(0.0)), width);
            let unknown = line(&app, &gpu(2, None), width);
            assert!(still.contains('─'), "{still}");
            let at = |s: &str, pat: &str| s.find(pat).map(|b| s[..b].chars().count());
            let col = at(&grows, "°C");
            assert!(col.is_some(), "{grows}");
            assert_eq!(at(&still, "°C"), col, "\n{grows}\n{still}");
            assert_eq!(at(&unknown, "°C"), col, "\n{grows}\n{unknown}");
            assert_eq!(at(&still, "450W"), at(&grows, "450W"));
            // The growth's "─" is right-aligned where the rate ends.
            let end = |s: &str, pat: &str| at(s, pat).map(|c| c + pat.chars().count());
            assert_eq!(end(&still, "─"), end(&grows, "M/s"), "\n{grows}\n{still}");
        }
    }
}
