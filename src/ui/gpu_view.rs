//! One GPU in detail: its card, its processes, then larger charts of
//! memory (with the fast-lane peaks and the biggest processes),
//! utilisation, temperature, power and clocks, one unit per chart.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::app::App;
use crate::app::layout::CARD_HEIGHT;
use crate::app::rows::Row;
use crate::model::GpuSample;
use crate::model::units::{GIB, bytes_short};
use crate::ui::chart::{Series, TimeChart};
use crate::ui::gpu_card::GpuCard;

pub struct GpuView<'a> {
    pub app: &'a App,
    pub index: usize,
}

fn gpu_points(
    app: &App,
    index: usize,
    slot: u64,
    span: u64,
    f: impl Fn(&GpuSample) -> Option<f64>,
) -> Vec<(f64, Option<f64>)> {
    let now = app.history().time_at(slot).unwrap_or(0) as f64;
    let from = slot.saturating_sub(span).max(app.history().first_slot());
    (from..=slot)
        .map(|s| {
            let x = (app.history().time_at(s).unwrap_or(0) as f64 - now) / 1000.0;
            (x, app.history().gpu_at(index, s).and_then(&f))
        })
        .collect()
}

/// Seconds from the oldest slot of History within `span` slots before
/// `slot` to `slot` (the charts' x axis), 10 at least so that a chart
/// of the first seconds is not a few points across its width.
fn data_span_s(app: &App, slot: u64, span: u64) -> f64 {
    let h = app.history();
    let from = slot.saturating_sub(span).max(h.first_slot());
    let secs = match (h.time_at(from), h.time_at(slot)) {
        (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1000.0,
        _ => 0.0,
    };
    secs.max(10.0)
}

impl Widget for &GpuView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let t = app.theme();
        let i = self.index;
        let rows = app.gpu_rows(i);
        let procs_h = (rows.len() as u16 + 1).clamp(2, (area.height / 4).max(2));
        let [card_a, info_a, procs_a, grid_a] = Layout::vertical([
            Constraint::Length(CARD_HEIGHT),
            Constraint::Length(1),
            Constraint::Length(procs_h),
            Constraint::Min(4),
        ])
        .areas(area);
        GpuCard {
            app,
            index: i,
            selected: false,
        }
        .render(card_a, buf);
        if let Some(d) = app.system().gpus.get(i) {
            Line::from(vec![
                Span::styled(" uuid ", t.label),
                Span::raw(d.uuid.clone()),
                Span::styled("  compute capability ", t.label),
                Span::raw(d.compute_capability.clone().unwrap_or_else(|| "N/A".into())),
                Span::styled("  MIG ", t.label),
                Span::raw(match d.mig_enabled {
                    Some(true) => "on",
                    Some(false) => "off",
                    None => "N/A",
                }),
            ])
            .render(info_a, buf);
        }
        self.processes(&rows, procs_a, buf);
        self.charts(grid_a, buf);
    }
}

impl GpuView<'_> {
    /// The GPU's processes, biggest first, exited ones last.
    fn processes(&self, rows: &[Row], area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let t = app.theme();
        if area.height == 0 {
            return;
        }
        let head = format!(
            "{:>7} {:<9} {:>7} {:<14} {:>7} COMMAND",
            "PID", "USER", "GPU MEM", "TREND", "PEAK"
        );
        buf.set_stringn(
            area.x,
            area.y,
            head,
            area.width as usize,
            t.header.patch(t.label),
        );
        if rows.is_empty() {
            buf.set_stringn(
                area.x,
                area.y + 1,
                " no processes on this GPU",
                area.width as usize,
                t.dim,
            );
            return;
        }
        let fixed = 7 + 1 + 9 + 1 + 7 + 1 + 14 + 1 + 7 + 1;
        let cmd_w = (area.width as usize).saturating_sub(fixed);
        let labels: Vec<&str> = rows.iter().map(|r| r.series.facts.label()).collect();
        let cmds = crate::app::cmdline::abbreviate_among(&labels, &app.all_commands(), cmd_w);
        let body = area.height.saturating_sub(1) as usize;
        let (shown, more) = crate::ui::rows_shown(rows.len(), body);
        for (n, (r, cmd)) in rows.iter().zip(cmds).take(shown).enumerate() {
            let y = area.y + 1 + n as u16;
            let style = if r.exited {
                t.exited
            } else if app.is_mine(r.series) {
                t.text
            } else {
                t.other_user
            };
            let (trend, trend_style) = crate::ui::process_table::trend(app, r);
            let mem = r
                .mem()
                .or(r.last.and_then(|p| p.mem))
                .map_or("N/A".into(), bytes_short);
            let peak = r.peak.map_or(String::new(), |p| bytes_short(p.0));
            Line::from(vec![
                Span::styled(
                    format!(
                        "{:>7} {:<9.9} {:>7} ",
                        r.id().key.pid,
                        r.series.facts.user.as_deref().unwrap_or("?"),
                        mem
                    ),
                    style,
                ),
                Span::styled(
                    format!("{trend:<14.14} "),
                    if r.exited { style } else { trend_style },
                ),
                Span::styled(format!("{peak:>7} {cmd}"), style),
            ])
            .render(Rect::new(area.x, y, area.width, 1), buf);
        }
        if more > 0 {
            buf.set_stringn(
                area.x,
                area.y + 1 + shown as u16,
                format!(
                    " +{more} more: Esc, then / gpu:{} to list them all",
                    self.index
                ),
                area.width as usize,
                t.dim,
            );
        }
    }

    /// Memory (with the fast-lane peaks and the biggest processes),
    /// utilisation, temperature, power and clocks: one unit per chart. In
    /// a short area one row of four; else two rows with clocks.
    fn charts(&self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let t = app.theme();
        let i = self.index;
        let slot = app.slot().unwrap_or(0);
        let (mem_a, util_a, temp_a, power_a, clock_a) = if area.height >= 16 {
            let [top, bottom] =
                Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)])
                    .areas(area);
            let [m, u] =
                Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)])
                    .areas(top);
            let [tc, p, c] = Layout::horizontal([
                Constraint::Ratio(1, 3),
                Constraint::Ratio(1, 3),
                Constraint::Ratio(1, 3),
            ])
            .areas(bottom);
            (m, u, tc, p, Some(c))
        } else {
            let [m, u, tc, p] = Layout::horizontal([
                Constraint::Percentage(40),
                Constraint::Percentage(20),
                Constraint::Percentage(20),
                Constraint::Percentage(20),
            ])
            .areas(area);
            (m, u, tc, p, None)
        };
        let span = (mem_a.width as u64 * 2).max(60);
        let gib = |b: u64| b as f64 / GIB as f64;
        let mut mem_series = vec![
            Series {
                name: "used".into(),
                style: t.chart_a,
                points: gpu_points(app, i, slot, span, |g| g.mem.map(|m| gib(m.used))),
                dots: false,
            },
            Series {
                name: "peaks".into(),
                style: t.chart_b,
                points: gpu_points(app, i, slot, span, |g| match (g.mem_peak, g.mem) {
                    (Some(p), Some(m)) if p > m.used => Some(gib(p)),
                    _ => None,
                }),
                dots: true,
            },
        ];
        // The three biggest processes now, named so they differ.
        let mut procs: Vec<_> = app
            .history()
            .processes()
            .filter(|s| s.id.gpu as usize == i)
            .filter_map(|s| s.at(slot).and_then(|p| p.mem).map(|m| (m, s)))
            .collect();
        procs.sort_by_key(|p| std::cmp::Reverse(p.0));
        procs.truncate(3);
        let labels: Vec<&str> = procs.iter().map(|(_, s)| s.facts.label()).collect();
        let names = crate::app::cmdline::abbreviate_among(&labels, &app.all_commands(), 24);
        let styles = [t.chart_c, t.ok, t.spark_util];
        for (((_, s), style), name) in procs.iter().zip(styles).zip(names) {
            mem_series.push(Series {
                name: format!("{} {name}", s.id.key.pid),
                style,
                points: crate::ui::process_view::window_points(app, s, slot, span, |p| {
                    p.mem.map(gib)
                }),
                dots: false,
            });
        }
        let total = app
            .history()
            .gpu_at(i, slot)
            .and_then(|g| g.mem)
            .map(|m| gib(m.total));
        // The time axis spans the data there is, up to the window (as the
        // process view's): a minute of history is not drawn as a quarter
        // of a four-minute chart.
        let span_s = data_span_s(app, slot, span);
        let gl = |v: f64| format!("{v:.0}G");
        TimeChart {
            title: "memory GiB".into(),
            series: mem_series,
            span_s,
            y_max: total,
            y_label: &gl,
            theme: t,
        }
        .render(mem_a, buf);
        let pl = |v: f64| format!("{v:.0}%");
        TimeChart {
            title: "utilisation %".into(),
            series: vec![
                Series {
                    name: "SM".into(),
                    style: t.chart_a,
                    points: gpu_points(app, i, slot, span, |g| g.util_gpu.map(f64::from)),
                    dots: false,
                },
                Series {
                    name: "mem bw".into(),
                    style: t.chart_c,
                    points: gpu_points(app, i, slot, span, |g| g.util_mem.map(f64::from)),
                    dots: false,
                },
            ],
            span_s,
            y_max: Some(100.0),
            y_label: &pl,
            theme: t,
        }
        .render(util_a, buf);
        let cl = |v: f64| format!("{v:.0}°C");
        TimeChart {
            title: "temp °C".into(),
            series: vec![Series {
                name: "GPU".into(),
                style: t.chart_c,
                points: gpu_points(app, i, slot, span, |g| g.temp_c.map(f64::from)),
                dots: false,
            }],
            span_s,
            y_max: Some(100.0),
            y_label: &cl,
            theme: t,
        }
        .render(temp_a, buf);
        let limit_w = app
            .history()
            .gpu_at(i, slot)
            .and_then(|g| g.power_limit_mw)
            .map(|l| l as f64 / 1000.0);
        let wl = |v: f64| format!("{v:.0}W");
        TimeChart {
            title: "power W".into(),
            series: vec![Series {
                name: "draw".into(),
                style: t.chart_b,
                points: gpu_points(app, i, slot, span, |g| {
                    g.power_mw.map(|p| p as f64 / 1000.0)
                }),
                dots: false,
            }],
            span_s,
            y_max: limit_w,
            y_label: &wl,
            theme: t,
        }
        .render(power_a, buf);
        let Some(clock_a) = clock_a else {
            return;
        };
        let nl = |v: f64| format!("{v:.0}");
        TimeChart {
            title: "clocks MHz".into(),
            series: vec![
                Series {
                    name: "SM".into(),
                    style: t.chart_a,
                    points: gpu_points(app, i, slot, span, |g| g.sm_clock_mhz.map(f64::from)),
                    dots: false,
                },
                Series {
                    name: "memory".into(),
                    style: t.chart_c,
                    points: gpu_points(app, i, slot, span, |g| g.mem_clock_mhz.map(f64::from)),
                    dots: false,
                },
            ],
            span_s,
            y_max: None,
            y_label: &nl,
            theme: t,
        }
        .render(clock_a, buf);
    }
}
