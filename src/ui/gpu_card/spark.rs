//! A GPU's history: sparklines of per-interval memory peaks and
//! utilisation, or charts of them with their scale on a taller card.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Sparkline, SparklineBar, Widget};

use super::GpuCard;
use crate::app::App;
use crate::history::Agg;
use crate::model::GpuSample;
use crate::model::units::{MIB, bytes_short};

/// Sparkline time buckets: five samples per cell (at a 1 s interval, a
/// 60-cell sparkline shows five minutes).
pub const SAMPLES_PER_CELL: u64 = 5;

/// The last `n` buckets up to `slot` of a per-GPU figure (gaps as `None`).
pub(super) fn series(
    app: &App,
    index: usize,
    slot: u64,
    n: usize,
    agg: Agg,
    f: impl Fn(&GpuSample) -> Option<u64>,
) -> Vec<SparklineBar> {
    let bucket = app.history().interval_ms() * SAMPLES_PER_CELL;
    app.history()
        .gpu_buckets(index, slot, n, bucket, agg, f)
        .into_iter()
        .map(SparklineBar::from)
        .collect()
}

pub(super) fn sparkline(
    data: Vec<SparklineBar>,
    max: u64,
    style: Style,
    area: Rect,
    buf: &mut Buffer,
) {
    Sparkline::default()
        .data(data)
        .max(max.max(1))
        .style(style)
        .absent_value_symbol(" ")
        .bar_set(symbols::bar::NINE_LEVELS)
        .render(area, buf);
}

impl GpuCard<'_> {
    /// Line 2, drawn into `area`: sparklines of per-interval peaks (fast
    /// lane) and utilisation, side by side; as charts with their scale
    /// when `area` has more than one row.
    pub(super) fn sparklines(&self, g: &GpuSample, slot: u64, area: Rect, buf: &mut Buffer) {
        if area.height > 1 {
            return self.charts(g, slot, area, buf);
        }
        let app = self.app;
        let t = app.theme();
        let i = self.index;
        let (x, y2, w) = (area.x, area.y, area.width);
        let half = w.saturating_sub(12) / 2;
        Line::from(Span::styled("mem ", t.label)).render(Rect::new(x, y2, 4, 1), buf);
        let total = g.mem.map_or(1, |m| m.total / MIB);
        let mem_data = series(app, i, slot, half as usize, Agg::Max, |g| {
            g.mem_peak.or(g.mem.map(|m| m.used)).map(|b| b / MIB)
        });
        sparkline(
            mem_data,
            total,
            t.spark_mem,
            Rect::new(x + 4, y2, half, 1),
            buf,
        );
        let ux = x + 4 + half + 2;
        Line::from(Span::styled("util ", t.label)).render(Rect::new(ux, y2, 5, 1), buf);
        let util_data = series(app, i, slot, half as usize, Agg::Mean, |g| {
            g.util_gpu.map(u64::from)
        });
        sparkline(
            util_data,
            100,
            t.spark_util,
            Rect::new(ux + 5, y2, half.min(w.saturating_sub(ux - x + 5)), 1),
            buf,
        );
    }

    /// The history as two charts `area.height` rows tall, side by side:
    /// memory (per-interval peaks, up to the GPU's total) and utilisation
    /// (up to 100%). The top of each scale is on its top row, at the left;
    /// the chart's name is on its bottom row.
    fn charts(&self, g: &GpuSample, slot: u64, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let t = app.theme();
        let i = self.index;
        let (x, w, h) = (area.x, area.width, area.height);
        let (top, bottom) = (area.y, area.bottom() - 1);
        // "39.4G " and "util " at most: the scales' widest labels.
        const MEM_W: u16 = 6;
        const UTIL_W: u16 = 5;
        let half = w.saturating_sub(MEM_W + 2 + UTIL_W + 1) / 2;
        let total = g.mem.map(|m| m.total);
        let scale = total.map_or_else(|| "N/A".to_string(), bytes_short);
        buf.set_stringn(x, top, &scale, MEM_W as usize - 1, t.dim);
        buf.set_stringn(x, bottom, "mem", MEM_W as usize, t.label);
        let mem_data = series(app, i, slot, half as usize, Agg::Max, |g| {
            g.mem_peak.or(g.mem.map(|m| m.used)).map(|b| b / MIB)
        });
        sparkline(
            mem_data,
            total.map_or(1, |b| b / MIB),
            t.spark_mem,
            Rect::new(x + MEM_W, top, half, h),
            buf,
        );
        let ux = x + MEM_W + half + 2;
        if ux + UTIL_W >= area.right() {
            return;
        }
        buf.set_stringn(ux, top, "100%", UTIL_W as usize - 1, t.dim);
        buf.set_stringn(ux, bottom, "util", UTIL_W as usize, t.label);
        let util_data = series(app, i, slot, half as usize, Agg::Mean, |g| {
            g.util_gpu.map(u64::from)
        });
        let uw = half.min(area.right().saturating_sub(ux + UTIL_W));
        sparkline(
            util_data,
            100,
            t.spark_util,
            Rect::new(ux + UTIL_W, top, uw, h),
            buf,
        );
    }
}
