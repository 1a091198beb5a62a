//! The drill-down into one host: a line per GPU (memory bar, in use of
//! total, sparklines of the last ten minutes, utilisation, temperature,
//! power, growth, forecast), then its process table.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Sparkline, SparklineBar, Widget};

use super::{bar, graded, put, scrape_cell};
use crate::fleet::app::{FleetApp, Table};
use crate::fleet::layout::detail_split;
use crate::fleet::model::{GpuRow, Host};
use crate::model::units::{MIB, bytes_short, duration_short, rate_short};

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
    for (i, g) in d
        .gpus
        .iter()
        .enumerate()
        .take(top.height.saturating_sub(2) as usize)
    {
        gpu_line(
            app,
            g,
            Rect::new(top.x, top.y + 1 + i as u16, top.width, 1),
            buf,
        );
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
        let (s, st) = scrape_cell(&h.scrape, t);
        spans.push(Span::styled(" · ", t.dim));
        spans.push(Span::styled(s, st));
        if let (Some(u), Some(tot)) = (h.used_bytes, h.total_bytes) {
            spans.push(Span::styled(
                format!(" · {} / {}", bytes_short(u), bytes_short(tot)),
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

fn gpu_line(app: &FleetApp, g: &GpuRow, r: Rect, buf: &mut Buffer) {
    let t = app.theme();
    let th = &app.config().thresholds;
    let name = g.model.strip_prefix("NVIDIA ").unwrap_or(&g.model);
    let mut spans = vec![Span::styled(
        format!(" {:>2} {:<6.6} ", g.gpu, name),
        t.title,
    )];
    let pct = g.in_use_pct();
    let sev = th.memory.grade(pct.unwrap_or(0.0));
    let bar_w = (r.width / 6).clamp(8, 30);
    match (g.total_bytes(), g.used_bytes) {
        (Some(total), Some(used)) => {
            let in_use = used + g.reserved_bytes.unwrap_or(0);
            spans.extend(bar(in_use, total, bar_w, sev, t));
            spans.push(Span::raw(format!(
                " {:>6}/{:<5}",
                bytes_short(in_use),
                bytes_short(total)
            )));
            let (p, st) = graded(format!("{:>3.0}%", pct.unwrap_or(0.0)), sev, t);
            spans.push(Span::styled(p, st));
        }
        _ => spans.push(Span::styled(
            format!("{:<w$}", "N/A", w = bar_w as usize + 17),
            t.dim,
        )),
    }
    let used: u16 = spans.iter().map(|s| s.width() as u16).sum();
    Line::from(spans).render(r, buf);
    let mut x = r.x + used + 1;
    let tail = tail(app, g);
    let tail_w: u16 = tail.iter().map(|s| s.width() as u16).sum();
    let room = r.right().saturating_sub(x + tail_w + 1);
    if room >= 14 {
        let w = (room / 2 - 1).min(40);
        spark(&g.mem_history, t.spark_mem, Rect::new(x, r.y, w, 1), buf);
        x += w + 1;
        spark(&g.util_history, t.spark_util, Rect::new(x, r.y, w, 1), buf);
        x += w + 1;
    }
    if x < r.right() {
        Line::from(tail).render(Rect::new(x, r.y, r.right() - x, 1), buf);
    }
}

/// Utilisation, temperature, power, then growth and forecast.
fn tail(app: &FleetApp, g: &GpuRow) -> Vec<Span<'static>> {
    let t = app.theme();
    let th = &app.config().thresholds;
    let mut out = Vec::new();
    let mut push = |text: String, st: Style| {
        out.push(Span::raw(" "));
        out.push(Span::styled(text, st));
    };
    match g.util_pct {
        Some(u) => {
            let (s, st) = graded(format!("{u:>3.0}%"), th.utilization.grade(u), t);
            push(s, st);
        }
        None => push(" N/A".into(), t.dim),
    }
    if let Some(c) = g.temp_c {
        let (s, st) = graded(format!("{c:.0}°C"), th.temperature.grade(c), t);
        push(s, st);
    }
    if let Some(p) = g.power_w {
        push(format!("{p:.0}W"), t.text);
    }
    if let Some(r) = g.growth_bps.filter(|r| r.abs() >= MIB as f64) {
        push(rate_short(r), if r > 0.0 { t.warn } else { t.ok });
    }
    if let Some(s) = g.full_in_s {
        push(
            format!("full~{}", duration_short(s.max(0.0).round() as u64)),
            t.crit,
        );
    }
    out
}
