//! Drill-down into one process on one GPU: facts, its memory over time
//! with the peak marked, growth, phase, forecast, and its host figures.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use crate::analysis::LeakSeen;
use crate::app::App;
use crate::history::{ProcId, ProcPoint, ProcSeries};
use crate::model::units::{GIB, bytes_short, duration_short, rate_short};
use crate::ui::chart::{Series, TimeChart};

pub struct ProcessView<'a> {
    pub app: &'a App,
    pub id: ProcId,
}

/// (seconds before `slot`, value) for every slot of the window.
pub(crate) fn window_points(
    app: &App,
    s: &ProcSeries,
    slot: u64,
    span_slots: u64,
    f: impl Fn(&ProcPoint) -> Option<f64>,
) -> Vec<(f64, Option<f64>)> {
    let now = app.history().time_at(slot).unwrap_or(0) as f64;
    let from = slot.saturating_sub(span_slots).max(s.first_slot());
    (from..=slot)
        .map(|sl| {
            let x = (app.history().time_at(sl).unwrap_or(0) as f64 - now) / 1000.0;
            (x, s.at(sl).and_then(&f))
        })
        .collect()
}

impl Widget for &ProcessView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let Some(s) = app.history().process(&self.id) else {
            Paragraph::new(Span::styled(
                " this process is no longer in history (Esc to go back)",
                app.theme().dim,
            ))
            .render(area, buf);
            return;
        };
        let slot = app.slot().unwrap_or(0);
        let p = s.at(slot).or_else(|| s.at(s.last_slot));
        let block = self.block(s.at(slot).is_some());
        let inner = block.inner(area);
        block.render(area, buf);
        let torch = s.torch.is_some();
        let alloc = torch.then(|| {
            crate::ui::allocator::AllocatorFigures::new(
                app,
                s,
                slot,
                p.and_then(|p| p.mem),
                inner.width,
            )
        });
        let alloc_h = alloc.as_ref().map_or(0, |a| a.height());
        let [facts_a, charts_a, stats_a, alloc_a] = Layout::vertical([
            Constraint::Length(4),
            Constraint::Min(6),
            Constraint::Length(2),
            Constraint::Length(alloc_h),
        ])
        .areas(inner);
        let [chart_a, alloc_chart_a] = if torch {
            Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)])
                .areas(charts_a)
        } else {
            [charts_a, Rect::default()]
        };
        Paragraph::new(self.facts(s, facts_a.width))
            .wrap(Wrap { trim: false })
            .render(facts_a, buf);
        self.memory_chart(s, slot, chart_a, buf);
        let alive = s.at(slot).is_some();
        let figures = if alive {
            self.memory_figures(s, p)
        } else {
            self.exit_figures(s)
        };
        Paragraph::new(vec![figures, self.host_figures(p)]).render(stats_a, buf);
        if let Some(alloc) = &alloc {
            (&crate::ui::allocator::AllocatorChart {
                app,
                series: s,
                slot,
            })
                .render(alloc_chart_a, buf);
            alloc.render(alloc_a, buf);
        }
    }
}

impl ProcessView<'_> {
    /// The border: PID and GPU on the left, running or exited on the right.
    fn block(&self, alive: bool) -> Block<'static> {
        let t = self.app.theme();
        let state = if alive {
            Span::styled(" running ", t.ok)
        } else {
            Span::styled(" exited ", t.exited)
        };
        Block::default()
            .borders(Borders::ALL)
            .border_style(t.border)
            .title(Line::from(vec![
                Span::styled(format!(" PID {} ", self.id.key.pid), t.title),
                Span::styled(format!("on GPU {} ", self.id.gpu), t.text),
            ]))
            .title(Line::from(state).right_aligned())
    }

    /// The facts: user, type, container, start, working directory, command.
    fn facts(&self, s: &ProcSeries, width: u16) -> Vec<Line<'static>> {
        let app = self.app;
        let t = app.theme();
        let f = &s.facts;
        let start_ms = if self.id.key.start_time > 0 {
            self.id.key.start_time * 1000
        } else {
            s.first_seen_ms
        };
        let age = app.shown_ms().saturating_sub(start_ms) / 1000;
        // Label and value stay together when the line wraps.
        let fact = |label: &'static str, value: String| {
            vec![Span::styled(label, t.label), Span::raw(value)]
        };
        let mut l1 = vec![
            fact("user ", f.user.as_deref().unwrap_or("?").to_string()),
            fact("  type ", f.kind.letter().to_string()),
            fact(
                "  container ",
                match (f.container_name.as_deref(), f.container.as_deref()) {
                    (Some(name), Some(id)) if name != id => format!("{name} ({id})"),
                    (name, id) => name.or(id).unwrap_or("-").to_string(),
                },
            ),
        ];
        if let Some(pod) = f.pod_label() {
            l1.push(fact("  pod ", pod.to_string()));
        }
        if let Some(ns) = f.ns_pid {
            l1.push(fact("  PID in container ", ns.to_string()));
        }
        l1.push(fact(
            "  started ",
            format!(
                "{} ({} ago)",
                app.clock().hms(start_ms),
                duration_short(age)
            ),
        ));
        let cwd = if app.detail().id == Some(self.id) {
            app.detail()
                .cwd
                .clone()
                .unwrap_or_else(|| "(not readable)".into())
        } else {
            "…".into()
        };
        let mut lines = crate::ui::flow(l1, usize::from(width));
        lines.extend([
            Line::from(vec![Span::styled("cwd ", t.label), Span::raw(cwd)]),
            Line::from(vec![
                Span::styled("command ", t.label),
                Span::raw(
                    f.command
                        .as_deref()
                        .or(f.name.as_deref())
                        .unwrap_or("?")
                        .to_string(),
                ),
            ]),
        ]);
        lines
    }

    /// Memory over time, the fast lane's peaks and the highest peak marked.
    fn memory_chart(&self, s: &ProcSeries, slot: u64, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let t = app.theme();
        let span_slots = (area.width as u64 * 2).max(60);
        let gib = |b: u64| b as f64 / GIB as f64;
        let mem = window_points(app, s, slot, span_slots, |p| p.mem.map(gib));
        let peaks = window_points(app, s, slot, span_slots, |p| {
            // Only where the fast lane saw more than the interval's read.
            match (p.mem_peak, p.mem) {
                (Some(pk), Some(m)) if pk > m => Some(gib(pk)),
                _ => None,
            }
        });
        let span_s = mem.first().map_or(60.0, |p| -p.0).max(10.0);
        let mut series = vec![
            Series {
                name: "memory".into(),
                style: t.chart_a,
                points: mem,
                dots: false,
            },
            Series {
                name: "fast-lane peaks".into(),
                style: t.chart_b,
                points: peaks,
                dots: true,
            },
        ];
        if let Some((pk, at)) = app.proc_peak(s) {
            let now = app.history().time_at(slot).unwrap_or(0);
            let x = (at as f64 - now as f64) / 1000.0;
            if x >= -span_s && x <= 0.0 {
                series.push(Series {
                    name: format!("peak {}", bytes_short(pk)),
                    style: t.peak_mark,
                    points: vec![(x, Some(gib(pk)))],
                    dots: true,
                });
            }
        }
        let label = |v: f64| format!("{v:.1}G");
        TimeChart {
            title: "GPU memory".into(),
            series,
            span_s,
            y_max: None,
            y_label: &label,
            theme: t,
        }
        .render(area, buf);
    }

    /// Memory now and at its peak, then the analysis: growth, phase, leak,
    /// forecast.
    fn memory_figures(&self, s: &ProcSeries, p: Option<&ProcPoint>) -> Line<'static> {
        let app = self.app;
        let t = app.theme();
        let mut l1 = vec![
            Span::styled("now ", t.label),
            Span::raw(p.and_then(|p| p.mem).map_or("N/A".into(), bytes_short)),
        ];
        if let Some((pk, at)) = app.proc_peak(s) {
            l1.push(Span::styled("  peak ", t.label));
            l1.push(Span::styled(bytes_short(pk), t.peak_mark));
            l1.push(Span::styled(format!(" @{}", app.clock().hms(at)), t.dim));
        }
        if let Some(ins) = app.proc_insight(&self.id) {
            if ins.phase == crate::analysis::Phase::Unknown {
                l1.push(Span::styled("  trend ", t.label));
                l1.push(Span::styled("warming up (too few samples yet)", t.dim));
                return Line::from(l1);
            }
            l1.push(Span::styled("  trend ", t.label));
            l1.push(Span::raw(crate::ui::trend_words(ins.phase, ins.rate_bps)));
            match ins.leak.map(|f| f.seen_in) {
                Some(LeakSeen::Memory) => l1.push(Span::styled("  LEAK suspected", t.crit)),
                Some(LeakSeen::Tensors) => {
                    // Their rate: the growth above is the driver's figure's.
                    let rate = rate_short(ins.shown_rate());
                    l1.push(Span::styled(
                        format!("  LEAK suspected in its tensors {rate}"),
                        t.crit,
                    ));
                }
                None => {}
            }
            if let Some(eta) = ins.full_in {
                l1.push(Span::styled("  fills the GPU in ", t.label));
                l1.push(Span::styled(eta.describe(), t.crit));
            }
        }
        Line::from(l1)
    }

    /// An exited process as what it is: when it went, how full its GPU
    /// was then, its peak and last reading (no growth: it has none now).
    fn exit_figures(&self, s: &ProcSeries) -> Line<'static> {
        use crate::model::EventKind;
        let app = self.app;
        let t = app.theme();
        let (pid, gpu) = (self.id.key.pid, self.id.gpu);
        // The exit as the events have it; else the last time it was seen.
        let exit = app.events().iter().rev().find(|e| {
            matches!(e.kind, EventKind::ProcessExited | EventKind::SuspectedOom)
                && e.pid == Some(pid)
                && e.gpu == Some(gpu)
                && e.t_ms >= s.last_seen_ms
        });
        let when = exit.map_or(s.last_seen_ms, |e| e.t_ms);
        let full = app
            .history()
            .gpu_at(gpu as usize, s.last_slot)
            .and_then(|g| g.mem)
            .map(|m| m.used_pct());
        let mut l = vec![
            Span::styled("exited ", t.exited),
            Span::raw(app.clock().hms(when)),
        ];
        if let Some(pct) = full {
            l.push(Span::raw(format!(" with GPU {gpu} at {pct:.0}% full")));
        }
        if exit.is_some_and(|e| e.kind == EventKind::SuspectedOom) {
            l.push(Span::styled(" (suspected OOM)", t.crit));
        } else if exit.is_some_and(|e| e.after_oom) {
            l.push(Span::styled(" after running out of memory", t.crit));
        }
        if let Some((pk, at)) = app.proc_peak(s) {
            l.push(Span::styled("  peak ", t.label));
            l.push(Span::styled(bytes_short(pk), t.peak_mark));
            l.push(Span::styled(format!(" @{}", app.clock().hms(at)), t.dim));
        }
        if let Some(m) = s.at(s.last_slot).and_then(|p| p.mem) {
            l.push(Span::styled("  last ", t.label));
            l.push(Span::raw(bytes_short(m)));
        }
        Line::from(l)
    }

    /// Utilisation on the GPU and figures on the host.
    fn host_figures(&self, p: Option<&ProcPoint>) -> Line<'static> {
        let t = self.app.theme();
        let pct = |v: Option<u32>| v.map_or("N/A".into(), |v| format!("{v}%"));
        Line::from(vec![
            Span::styled("SM ", t.label),
            Span::raw(pct(p.and_then(|p| p.sm_util))),
            Span::styled("  MEM BW ", t.label),
            Span::raw(pct(p.and_then(|p| p.mem_util))),
            Span::styled("  ENC ", t.label),
            Span::raw(pct(p.and_then(|p| p.enc_util))),
            Span::styled("  DEC ", t.label),
            Span::raw(pct(p.and_then(|p| p.dec_util))),
            Span::styled("  host CPU ", t.label),
            Span::raw(
                p.and_then(|p| p.cpu_pct)
                    .map_or("N/A".into(), |c| format!("{c:.0}%")),
            ),
            Span::styled("  RSS ", t.label),
            Span::raw(p.and_then(|p| p.rss).map_or("N/A".into(), bytes_short)),
        ])
    }
}
