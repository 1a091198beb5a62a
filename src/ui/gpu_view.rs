//! One GPU in detail: its card, then larger charts of memory (with the
//! fast-lane peaks and the biggest processes), utilisation, temperature and
//! power, and clocks.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::app::App;
use crate::app::layout::CARD_HEIGHT;
use crate::model::GpuSample;
use crate::model::units::GIB;
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

impl Widget for &GpuView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let t = app.theme();
        let i = self.index;
        let [card_a, info_a, grid_a] = Layout::vertical([
            Constraint::Length(CARD_HEIGHT),
            Constraint::Length(1),
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
        let slot = app.slot().unwrap_or(0);
        let [top, bottom] =
            Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)])
                .areas(grid_a);
        let [mem_a, util_a] =
            Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(top);
        let [heat_a, clock_a] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                .areas(bottom);
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
                name: "peak/interval".into(),
                style: t.chart_b,
                points: gpu_points(app, i, slot, span, |g| match (g.mem_peak, g.mem) {
                    (Some(p), Some(m)) if p > m.used => Some(gib(p)),
                    _ => None,
                }),
                dots: true,
            },
        ];
        // The three biggest processes now.
        let mut procs: Vec<_> = app
            .history()
            .processes()
            .filter(|s| s.id.gpu as usize == i)
            .filter_map(|s| s.at(slot).and_then(|p| p.mem).map(|m| (m, s)))
            .collect();
        procs.sort_by_key(|p| std::cmp::Reverse(p.0));
        let styles = [t.chart_c, t.ok, t.spark_util];
        for ((_, s), style) in procs.iter().take(3).zip(styles) {
            mem_series.push(Series {
                name: format!(
                    "{} {}",
                    s.id.key.pid,
                    s.facts.name.as_deref().unwrap_or("?")
                ),
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
        let span_s = (span * app.history().interval_ms()) as f64 / 1000.0;
        let gl = |v: f64| format!("{v:.0}G");
        TimeChart {
            title: "memory".into(),
            series: mem_series,
            span_s,
            y_max: total,
            y_label: &gl,
            theme: t,
        }
        .render(mem_a, buf);
        let pl = |v: f64| format!("{v:.0}%");
        TimeChart {
            title: "utilisation".into(),
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
        let limit_w = app
            .history()
            .gpu_at(i, slot)
            .and_then(|g| g.power_limit_mw)
            .map(|l| l as f64 / 1000.0);
        let nl = |v: f64| format!("{v:.0}");
        TimeChart {
            title: "temperature °C · power W".into(),
            series: vec![
                Series {
                    name: "°C".into(),
                    style: t.chart_c,
                    points: gpu_points(app, i, slot, span, |g| g.temp_c.map(f64::from)),
                    dots: false,
                },
                Series {
                    name: "W".into(),
                    style: t.chart_b,
                    points: gpu_points(app, i, slot, span, |g| {
                        g.power_mw.map(|p| p as f64 / 1000.0)
                    }),
                    dots: false,
                },
            ],
            span_s,
            y_max: limit_w.map(|l| l.max(100.0)),
            y_label: &nl,
            theme: t,
        }
        .render(heat_a, buf);
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
