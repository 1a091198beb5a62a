//! GPU cards: a bordered card per GPU (memory bar with used, reserved and
//! peak; sparklines of per-interval memory peaks and utilisation; readings;
//! growth and forecast), or one line per GPU when there are many.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Sparkline, SparklineBar, Widget};

use crate::analysis::Phase;
use crate::app::{App, Pane};
use crate::config::Severity;
use crate::history::Agg;
use crate::model::units::{MIB, bytes_short, duration_short, rate_short};
use crate::model::{GpuSample, GpuState, MemInfo};
use crate::theme::Theme;

/// One GPU at the slot on screen.
pub struct GpuCard<'a> {
    pub app: &'a App,
    pub index: usize,
    pub selected: bool,
}

/// Memory nobody accounts for on GPU `index` at `slot`.
pub fn unaccounted(app: &App, index: usize, slot: u64, g: &GpuSample) -> Option<u64> {
    let used = g.mem?.used;
    let sum: u64 = app
        .history()
        .processes()
        .filter(|s| s.id.gpu as usize == index)
        .filter_map(|s| s.at(slot).and_then(|p| p.mem))
        .sum();
    Some(used.saturating_sub(sum))
}

/// Memory % in use (used + reserved) and its severity.
pub fn memory_level(app: &App, g: &GpuSample) -> Option<(f64, Severity)> {
    let pct = g.mem?.used_pct();
    Some((pct, app.config().thresholds.memory.grade(pct)))
}

fn power_level(app: &App, g: &GpuSample) -> Option<(f64, Severity)> {
    let (p, l) = (g.power_mw?, g.power_limit_mw?);
    let pct = p as f64 * 100.0 / l.max(1) as f64;
    Some((pct, app.config().thresholds.power.grade(pct)))
}

/// A value with its severity: a one-cell mark (blank when normal, so a
/// change of level does not shift the rest of the line), then the text.
fn value(text: String, sev: Severity, t: &Theme) -> Vec<Span<'static>> {
    let mark = match Theme::mark(sev) {
        "" => " ",
        m => m,
    };
    vec![
        Span::styled(mark.to_string(), t.level(sev)),
        Span::styled(text, t.level(sev)),
    ]
}

/// "used{sep}total" at fixed widths (a changing figure does not move its
/// neighbours), then the graded percentage.
fn used_of_total(app: &App, g: &GpuSample, m: MemInfo, sep: &str) -> Vec<Span<'static>> {
    let (pct, sev) = memory_level(app, g).unwrap_or((0.0, Severity::Normal));
    let mut out = vec![Span::raw(format!(
        " {:>6}{sep}{:<5}",
        bytes_short(m.used),
        bytes_short(m.total)
    ))];
    out.extend(value(format!("{pct:>3.0}%"), sev, app.theme()));
    out
}

/// The memory bar: used █, reserved ▒, free ░, the peak since start ┃.
pub fn memory_bar(app: &App, g: &GpuSample, peak: Option<u64>, width: u16) -> Vec<Span<'static>> {
    let t = app.theme();
    let Some(m) = g.mem else {
        return vec![Span::styled("N/A".to_string(), t.dim)];
    };
    let w = width as u64;
    let total = m.total.max(1);
    let cells = |b: u64| ((b as u128 * w as u128 + total as u128 / 2) / total as u128) as u64;
    let used = cells(m.used).min(w);
    let resv = cells(m.reserved).min(w - used);
    let free = w - used - resv;
    let sev = memory_level(app, g).map_or(Severity::Normal, |l| l.1);
    let used_style = if sev == Severity::Normal {
        t.mem_used
    } else {
        t.level(sev)
    };
    let mut chars: Vec<(char, Style)> = Vec::with_capacity(w as usize);
    chars.extend(std::iter::repeat_n(('█', used_style), used as usize));
    chars.extend(std::iter::repeat_n(('▒', t.mem_reserved), resv as usize));
    chars.extend(std::iter::repeat_n(('░', t.mem_free), free as usize));
    if let Some(p) = peak {
        let at = cells(p).min(w.saturating_sub(1)) as usize;
        if at >= used as usize && at < chars.len() {
            chars[at] = ('┃', t.peak_mark);
        }
    }
    // Merge runs of one style into spans.
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut run = String::new();
    let mut style = None;
    for (c, s) in chars {
        if style != Some(s) && !run.is_empty() {
            spans.push(Span::styled(
                std::mem::take(&mut run),
                style.unwrap_or_default(),
            ));
        }
        style = Some(s);
        run.push(c);
    }
    if !run.is_empty() {
        spans.push(Span::styled(run, style.unwrap_or_default()));
    }
    spans
}

/// Sparkline time buckets: five samples per cell (at a 1 s interval, a
/// 60-cell sparkline shows five minutes).
pub const SAMPLES_PER_CELL: u64 = 5;

/// The last `n` buckets up to `slot` of a per-GPU figure (gaps as `None`).
fn series(
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

fn sparkline(data: Vec<SparklineBar>, max: u64, style: Style, area: Rect, buf: &mut Buffer) {
    Sparkline::default()
        .data(data)
        .max(max.max(1))
        .style(style)
        .absent_value_symbol(" ")
        .bar_set(symbols::bar::NINE_LEVELS)
        .render(area, buf);
}

fn short_name(name: &str) -> &str {
    name.strip_prefix("NVIDIA ").unwrap_or(name)
}

impl Widget for &GpuCard<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let slot = app.slot().unwrap_or(0);
        let g = app.history().gpu_at(self.index, slot);
        let block = self.block(g);
        let inner = block.inner(area);
        block.render(area, buf);
        let Some(g) = g.filter(|g| g.state != GpuState::Lost) else {
            Line::from(Span::styled(
                " no readings: the GPU is lost or not yet sampled",
                app.theme().crit,
            ))
            .render(inner, buf);
            return;
        };
        // One line each, as many as fit, in this order.
        let row = |n: u16| Rect::new(inner.x, inner.y + n, inner.width, 1);
        Line::from(self.memory_line(g, slot, inner.width)).render(row(0), buf);
        if inner.height < 2 {
            return;
        }
        self.sparklines(g, slot, row(1), buf);
        if inner.height < 3 {
            return;
        }
        Line::from(self.readings_line(g)).render(row(2), buf);
        if inner.height < 4 {
            return;
        }
        Line::from(self.trend_line(g, slot)).render(row(3), buf);
    }
}

impl GpuCard<'_> {
    /// The border, with the GPU's number, name and state on the left and
    /// its P-state and bus id on the right.
    fn block(&self, g: Option<&GpuSample>) -> Block<'static> {
        let app = self.app;
        let t = app.theme();
        let i = self.index;
        let info = app.system().gpus.get(i);
        let name = info.map_or("GPU", |d| d.name.as_str());
        let border = if self.selected && app.nav().focus == Pane::Gpus {
            t.focus_border
        } else {
            t.border
        };
        let mut title = vec![
            Span::styled(format!(" GPU {i} "), t.title),
            Span::styled(format!("{name} "), t.text),
        ];
        if let Some(g) = g
            && g.state != GpuState::Ok
        {
            let (txt, st) = match g.state {
                GpuState::Lost => (" LOST ", t.crit),
                _ => (" stale ", t.warn),
            };
            title.push(Span::styled(txt, st));
        }
        let right = g
            .map(|g| {
                let mut s = String::new();
                if let Some(p) = g.pstate {
                    s.push_str(&format!(" P{p}"));
                }
                if let Some(d) = info {
                    s.push_str(&format!(" {} ", d.pci_bus_id));
                }
                s
            })
            .unwrap_or_default();
        Block::default()
            .borders(Borders::ALL)
            .border_style(border)
            .title(Line::from(title))
            .title(Line::from(Span::styled(right, t.dim)).right_aligned())
    }

    /// Line 1: the memory bar, used of total, reserved, unaccounted, peak.
    fn memory_line(&self, g: &GpuSample, slot: u64, w: u16) -> Vec<Span<'static>> {
        let app = self.app;
        let t = app.theme();
        let peak = app.gpu_peak(self.index);
        let mut l1: Vec<Span> = vec![Span::styled("MEM ", t.label)];
        let bar_w = (w / 3).clamp(10, 60);
        l1.extend(memory_bar(app, g, peak.map(|p| p.0), bar_w));
        if let Some(m) = g.mem {
            l1.extend(used_of_total(app, g, m, " / "));
            l1.push(Span::styled("  resv ", t.dim));
            l1.push(Span::raw(format!("{:>5}", bytes_short(m.reserved))));
            if let Some(u) = unaccounted(app, self.index, slot, g) {
                l1.push(Span::styled("  unaccounted ", t.dim));
                l1.push(Span::raw(format!("{:>5}", bytes_short(u))));
            }
            // The time of the peak is in the GPU view: here it would change
            // with every new peak and cost bytes on every redraw.
            if let Some((p, _)) = peak {
                l1.push(Span::styled("  peak ", t.dim));
                l1.push(Span::styled(format!("{:>5}", bytes_short(p)), t.peak_mark));
            }
        }
        l1
    }

    /// Line 2, drawn into `row`: sparklines of per-interval peaks (fast
    /// lane) and utilisation, side by side.
    fn sparklines(&self, g: &GpuSample, slot: u64, row: Rect, buf: &mut Buffer) {
        let app = self.app;
        let t = app.theme();
        let i = self.index;
        let (x, y2, w) = (row.x, row.y, row.width);
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

    /// Line 3: utilisation, memory bandwidth, temperature, power, clocks
    /// and fan. Fixed widths: a changing figure does not move its
    /// neighbours (each move would rewrite the rest of the line on the
    /// terminal).
    fn readings_line(&self, g: &GpuSample) -> Vec<Span<'static>> {
        let app = self.app;
        let t = app.theme();
        let th = &app.config().thresholds;
        let mut l3: Vec<Span> = vec![Span::styled("UTIL", t.label)];
        let na = |w: usize| Span::styled(format!(" {:>w$}", "N/A"), t.dim);
        match g.util_gpu {
            Some(u) => l3.extend(value(format!("{u:>3}%"), th.utilization.grade(u as f64), t)),
            None => l3.push(na(4)),
        }
        l3.push(Span::styled("  MEM BW ", t.label));
        l3.push(Span::raw(
            g.util_mem.map_or(" N/A".into(), |u| format!("{u:>3}%")),
        ));
        l3.push(Span::styled("  TEMP", t.label));
        match g.temp_c {
            Some(c) => l3.extend(value(
                format!("{c:>3}°C"),
                th.temperature.grade(c as f64),
                t,
            )),
            None => l3.push(na(5)),
        }
        l3.push(Span::styled("  POWER", t.label));
        match (g.power_mw, power_level(app, g)) {
            (Some(p), Some((_, sev))) => {
                l3.extend(value(format!("{:>4}", p / 1000), sev, t));
                l3.push(Span::raw(format!(
                    " / {} W",
                    g.power_limit_mw.unwrap_or(0) / 1000
                )));
            }
            (Some(p), None) => l3.push(Span::raw(format!(" {:>4} W", p / 1000))),
            _ => l3.push(na(4)),
        }
        l3.push(Span::styled("  SM ", t.label));
        l3.push(Span::raw(
            g.sm_clock_mhz
                .map_or(" N/A".into(), |c| format!("{c:>4} MHz")),
        ));
        l3.push(Span::styled("  MEM ", t.label));
        l3.push(Span::raw(
            g.mem_clock_mhz
                .map_or(" N/A".into(), |c| format!("{c:>4} MHz")),
        ));
        if app
            .system()
            .gpus
            .get(self.index)
            .is_some_and(|d| d.num_fans > 0)
        {
            l3.push(Span::styled("  FAN ", t.label));
            l3.push(Span::raw(
                g.fan_pct.map_or("N/A".into(), |f| format!("{f}%")),
            ));
        }
        l3
    }

    /// Line 4: where memory is going (processes, trend, forecast), then the
    /// slow lane (PCIe, BAR1, ECC).
    fn trend_line(&self, g: &GpuSample, slot: u64) -> Vec<Span<'static>> {
        let app = self.app;
        let t = app.theme();
        let i = self.index;
        let mut l4: Vec<Span> = Vec::new();
        let procs = app
            .history()
            .processes()
            .filter(|s| s.id.gpu as usize == i && s.at(slot).is_some())
            .count();
        l4.push(Span::styled("procs ", t.label));
        l4.push(Span::raw(procs.to_string()));
        if let Some(ins) = app.gpu_insight(i) {
            l4.push(Span::styled("  trend ", t.label));
            let trend = match ins.phase {
                Phase::Growing | Phase::Shrinking => {
                    format!("{} {}", ins.phase.name(), rate_short(ins.rate_bps))
                }
                p => p.name().to_owned(),
            };
            l4.push(Span::styled(
                trend,
                if ins.phase == Phase::Growing {
                    t.warn
                } else {
                    t.text
                },
            ));
            if let Some(eta) = ins.full_in {
                let sev = if eta.surely_within(app.config().alerts.forecast_below.as_secs_f64()) {
                    Severity::Critical
                } else {
                    Severity::Warn
                };
                l4.push(Span::styled("  full in ", t.label));
                l4.extend(value(eta.describe(), sev, t));
            }
            if let Some(pct) = ins.at_risk_pct {
                l4.push(Span::styled("  ", t.label));
                l4.extend(value(
                    format!("at risk (peaks {pct:.0}%)"),
                    Severity::Critical,
                    t,
                ));
            }
        }
        l4.extend(slow_lane(g, t));
        l4
    }
}

/// PCIe throughput, BAR1 and volatile ECC errors, where known.
fn slow_lane(g: &GpuSample, t: &Theme) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    if let (Some(rx), Some(tx)) = (g.pcie_rx_kbs, g.pcie_tx_kbs) {
        out.push(Span::styled("  PCIe ", t.label));
        out.push(Span::raw(format!(
            "↓{} ↑{}/s",
            bytes_short(rx as u64 * 1024),
            bytes_short(tx as u64 * 1024)
        )));
    }
    if let Some(b) = g.bar1 {
        out.push(Span::styled("  BAR1 ", t.label));
        out.push(Span::raw(format!(
            "{}/{}",
            bytes_short(b.used),
            bytes_short(b.total)
        )));
    }
    if let Some(e) = g.ecc_volatile
        && e > 0
    {
        out.push(Span::styled(format!("  ECC {e}"), t.crit));
    }
    out
}

/// One line per GPU, for many GPUs or short terminals.
pub struct GpuLine<'a> {
    pub app: &'a App,
    pub index: usize,
    pub selected: bool,
}

impl Widget for &GpuLine<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let t = app.theme();
        let i = self.index;
        let slot = app.slot().unwrap_or(0);
        let name = app
            .system()
            .gpus
            .get(i)
            .map_or("GPU", |d| short_name(&d.name));
        let sel = self.selected && app.nav().focus == Pane::Gpus;
        let mut spans = vec![Span::styled(
            format!("{}{i:>2} {:<6.6} ", if sel { "▸" } else { " " }, name),
            if sel { t.accent } else { t.title },
        )];
        let Some(g) = app
            .history()
            .gpu_at(i, slot)
            .filter(|g| g.state != GpuState::Lost)
        else {
            spans.push(Span::styled("LOST: no readings", t.crit));
            Line::from(spans).render(area, buf);
            return;
        };
        let w = area.width;
        let bar_w = (w / 5).clamp(8, 40);
        spans.extend(memory_bar(app, g, app.gpu_peak(i).map(|p| p.0), bar_w));
        if let Some(m) = g.mem {
            spans.extend(used_of_total(app, g, m, "/"));
        }
        let used: usize = spans.iter().map(|s| s.width()).sum();
        let rest = w.saturating_sub(used as u16);
        let tail_w = 34u16;
        let spark_w = rest.saturating_sub(tail_w + 2).min(30);
        let mut x = area.x + used as u16;
        Line::from(spans).render(area, buf);
        if spark_w >= 6 {
            x += 1;
            let total = g.mem.map_or(1, |m| m.total / MIB);
            let data = series(app, i, slot, spark_w as usize, Agg::Max, |g| {
                g.mem_peak.or(g.mem.map(|m| m.used)).map(|b| b / MIB)
            });
            sparkline(
                data,
                total,
                t.spark_mem,
                Rect::new(x, area.y, spark_w, 1),
                buf,
            );
            x += spark_w + 1;
        }
        if x < area.x + area.width {
            Line::from(line_tail(app, i, g))
                .render(Rect::new(x, area.y, area.x + area.width - x, 1), buf);
        }
    }
}

/// The end of a GPU line: utilisation, temperature, power, then the trend
/// when memory moves by at least 1 MiB/s and the forecast.
fn line_tail(app: &App, i: usize, g: &GpuSample) -> Vec<Span<'static>> {
    let t = app.theme();
    let th = &app.config().thresholds;
    let mut tail: Vec<Span> = vec![Span::raw(" ")];
    match g.util_gpu {
        Some(u) => tail.extend(value(format!("{u:>3}%"), th.utilization.grade(u as f64), t)),
        None => tail.push(Span::styled(" N/A", t.dim)),
    }
    if let Some(c) = g.temp_c {
        tail.push(Span::raw(" "));
        tail.extend(value(format!("{c}°C"), th.temperature.grade(c as f64), t));
    }
    if let (Some(p), Some((_, sev))) = (g.power_mw, power_level(app, g)) {
        tail.push(Span::raw(" "));
        tail.extend(value(format!("{}W", p / 1000), sev, t));
    }
    if let Some(ins) = app.gpu_insight(i) {
        if matches!(ins.phase, Phase::Growing | Phase::Shrinking)
            && ins.rate_bps.abs() >= MIB as f64
        {
            tail.push(Span::styled(
                format!(" {}", rate_short(ins.rate_bps)),
                t.warn,
            ));
        }
        if let Some(eta) = ins.full_in {
            tail.push(Span::styled(
                format!(" full~{}", duration_short(eta.eta_s.round() as u64)),
                t.crit,
            ));
        } else if ins.at_risk_pct.is_some() {
            tail.push(Span::styled(" at risk", t.crit));
        }
    }
    tail
}
