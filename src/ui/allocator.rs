//! The PyTorch allocator part of the drill-down: allocated vs reserved over
//! time, the cache's figures, and advice drawn from them.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::analysis::allocator::advice;
use crate::app::App;
use crate::history::ProcSeries;
use crate::model::units::{GIB, bytes_short};
use crate::ui::chart::{Series, TimeChart};
use crate::ui::process_view::window_points;

/// Allocated and reserved over the last `span` slots, as a chart.
pub struct AllocatorChart<'a> {
    pub app: &'a App,
    pub series: &'a ProcSeries,
    pub slot: u64,
}

impl Widget for &AllocatorChart<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let t = app.theme();
        let span = (area.width as u64 * 2).max(60);
        let gib = |b: u64| b as f64 / GIB as f64;
        let reserved = window_points(app, self.series, self.slot, span, |p| {
            p.torch_reserved().map(gib)
        });
        let allocated = window_points(app, self.series, self.slot, span, |p| {
            p.torch_allocated().map(gib)
        });
        let span_s = reserved.first().map_or(60.0, |p| -p.0).max(10.0);
        let label = |v: f64| format!("{v:.1}G");
        TimeChart {
            title: "PyTorch allocator".into(),
            series: vec![
                Series {
                    name: "reserved".into(),
                    style: t.chart_c,
                    points: reserved,
                    dots: false,
                },
                Series {
                    name: "allocated".into(),
                    style: t.chart_a,
                    points: allocated,
                    dots: false,
                },
            ],
            span_s,
            y_max: None,
            y_label: &label,
            theme: t,
        }
        .render(area, buf);
    }
}

/// Whether other processes share the process's GPU at `slot`.
fn shared_gpu(app: &App, s: &ProcSeries, slot: u64) -> bool {
    app.history()
        .processes()
        .any(|o| o.id != s.id && o.id.gpu == s.id.gpu && o.at(slot).is_some())
}

/// A label and its value: one group, never split across lines.
fn pair(
    label: &str,
    value: Span<'static>,
    t: &crate::theme::Theme,
    first: bool,
) -> Vec<Span<'static>> {
    let gap = if first { "" } else { "  " };
    vec![Span::styled(format!("{gap}{label} "), t.label), value]
}

/// The figures and advice as paragraphs of unbreakable groups (empty when
/// the process publishes none).
fn paragraphs(
    app: &App,
    s: &ProcSeries,
    slot: u64,
    nvml_bytes: Option<u64>,
) -> Vec<Vec<Vec<Span<'static>>>> {
    let t = app.theme();
    let Some(stats) = s.torch.as_deref() else {
        return Vec::new();
    };
    let Some(d) = stats.devices.first() else {
        return vec![vec![vec![Span::styled(
            "PyTorch allocator: the process has not used this GPU yet",
            t.dim,
        )]]];
    };
    let age = app.now_ms().saturating_sub(stats.t_ms) as f64 / 1000.0;
    let fresh = if stats.is_stale(app.now_ms()) {
        Span::styled(format!("  (stale: {age:.0}s old)"), t.warn)
    } else {
        Span::styled(format!("  (read {age:.1}s ago)"), t.dim)
    };
    let raw = |s: String| Span::raw(s);
    let figures = vec![
        pair("allocated", raw(bytes_short(d.allocated)), t, true),
        pair("reserved", raw(bytes_short(d.reserved)), t, false),
        pair("cached free", raw(bytes_short(d.cached_free())), t, false),
        pair("releasable", raw(bytes_short(d.releasable())), t, false),
        pair(
            "fragmentation",
            raw(d
                .fragmentation()
                .map_or("N/A".into(), |f| format!("{:.0}%", f * 100.0))),
            t,
            false,
        ),
        pair(
            "largest free block",
            raw(d.largest_free.map_or("N/A".into(), bytes_short)),
            t,
            false,
        ),
        vec![fresh],
    ];
    let counts = vec![
        pair(
            "retries",
            Span::styled(
                d.num_alloc_retries.to_string(),
                if d.num_alloc_retries > 0 {
                    t.warn
                } else {
                    t.text
                },
            ),
            t,
            true,
        ),
        pair(
            "OOMs",
            Span::styled(
                d.num_ooms.to_string(),
                if d.num_ooms > 0 { t.crit } else { t.text },
            ),
            t,
            false,
        ),
        pair(
            "peak allocated",
            raw(bytes_short(d.allocated_peak)),
            t,
            false,
        ),
        pair("peak reserved", raw(bytes_short(d.reserved_peak)), t, false),
        pair(
            "outside the allocator",
            raw(nvml_bytes.map_or("N/A".into(), |b| bytes_short(d.outside_allocator(b)))),
            t,
            false,
        ),
        pair(
            "PYTORCH_CUDA_ALLOC_CONF",
            raw(stats.alloc_conf.clone().unwrap_or_else(|| "(unset)".into())),
            t,
            false,
        ),
    ];
    let mut out = vec![figures, counts];
    for a in advice(stats, shared_gpu(app, s, slot)) {
        // Advice is prose: it wraps between words, "advice" with the first.
        let mut words = a.split(' ').map(|w| vec![Span::raw(format!(" {w}"))]);
        let mut first = vec![Span::styled("advice", t.warn)];
        if let Some(w) = words.next() {
            first.extend(w);
        }
        out.push(std::iter::once(first).chain(words).collect());
    }
    out
}

/// The figures as lines flowed to the width they are drawn at: a value
/// stays with its label. Made once per frame: the layout asks their
/// height, then they are drawn.
pub struct AllocatorFigures(Vec<Line<'static>>);

impl AllocatorFigures {
    pub fn new(app: &App, s: &ProcSeries, slot: u64, nvml_bytes: Option<u64>, width: u16) -> Self {
        let lines = paragraphs(app, s, slot, nvml_bytes)
            .into_iter()
            .flat_map(|p| crate::ui::flow(p, width as usize))
            .collect();
        AllocatorFigures(lines)
    }

    /// Rows to give it: one per line, at most 10.
    pub fn height(&self) -> u16 {
        (self.0.len() as u16).clamp(2, 10)
    }
}

impl Widget for &AllocatorFigures {
    fn render(self, area: Rect, buf: &mut Buffer) {
        Paragraph::new(self.0.clone()).render(area, buf);
    }
}
