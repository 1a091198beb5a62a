//! GPU cards, as big as the terminal allows (`app::layout::card_style`): a
//! bordered card per GPU (memory bar with used, reserved and peak;
//! sparklines of per-interval memory peaks and utilisation; readings;
//! growth and forecast), with the GPU's top processes beside it on wide
//! terminals; two labelled lines per GPU; or one line when space is short.
//! Every figure has its label, and a line that does not fit drops its
//! least important figures whole.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Sparkline, SparklineBar, Widget};

use crate::analysis::Phase;
use crate::app::{App, GpuInsight, Pane};
use crate::config::Severity;
use crate::history::Agg;
use crate::model::units::{MIB, bytes_short, rate_short};
use crate::model::{GpuSample, GpuState, MemInfo};
use crate::theme::Theme;
use crate::ui::{fit, width_of};

mod lines;
pub use lines::{GpuLine, GpuTwoLine, TopProcesses};

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
        // One line each, as many as fit, in this order; the charts get
        // the rows a taller card has beyond four (`layout::overview_for`).
        let row = |n: u16| Rect::new(inner.x, inner.y + n, inner.width, 1);
        let w = inner.width as usize;
        Line::from(self.memory_line(g, slot, w)).render(row(0), buf);
        if inner.height < 2 {
            return;
        }
        let chart_h = inner.height.saturating_sub(3).max(1);
        let charts = Rect::new(inner.x, inner.y + 1, inner.width, chart_h);
        self.sparklines(g, slot, charts, buf);
        let next = 1 + chart_h;
        if inner.height < next + 1 {
            return;
        }
        Line::from(fit(self.readings(g), w)).render(row(next), buf);
        if inner.height < next + 2 {
            return;
        }
        Line::from(fit(self.trend(g, slot), w)).render(row(next + 1), buf);
    }
}

/// A memory bar between fixed text: the bar gets what the text leaves
/// (`min..=max` cells); when even `min` does not fit, the least important
/// groups after it go first.
fn with_bar(
    app: &App,
    g: &GpuSample,
    before: Vec<Span<'static>>,
    mut after: Vec<(u8, Vec<Span<'static>>)>,
    (min, max): (usize, usize),
    width: usize,
) -> (Vec<Span<'static>>, usize) {
    let fixed = |a: &[(u8, Vec<Span>)]| {
        width_of(&before) + a.iter().map(|(_, s)| width_of(s)).sum::<usize>()
    };
    while fixed(&after) + min > width && after.len() > 1 {
        let Some(i) = (0..after.len()).min_by_key(|i| (after[*i].0, std::cmp::Reverse(*i))) else {
            break;
        };
        after.remove(i);
    }
    let bar_w = width
        .saturating_sub(fixed(&after))
        .clamp(min.min(width), max.max(min));
    let peak = app.gpu_peak(i_of(g));
    let mut out = before;
    out.extend(memory_bar(app, g, peak.map(|p| p.0), bar_w as u16));
    out.extend(after.into_iter().flat_map(|(_, s)| s));
    let used = width_of(&out);
    (out, used)
}

fn i_of(g: &GpuSample) -> usize {
    g.index as usize
}

/// " 39%" after a label, marked and coloured by level.
fn mem_pct(app: &App, g: &GpuSample) -> Vec<Span<'static>> {
    let (pct, sev) = memory_level(app, g).unwrap_or((0.0, Severity::Normal));
    value(format!("{pct:>3.0}%"), sev, app.theme())
}

fn util_pct(app: &App, g: &GpuSample) -> Vec<Span<'static>> {
    let t = app.theme();
    match g.util_gpu {
        Some(u) => value(
            format!("{u:>3}%"),
            app.config().thresholds.utilization.grade(u as f64),
            t,
        ),
        None => vec![Span::styled(" N/A".to_string(), t.dim)],
    }
}

fn temp(app: &App, g: &GpuSample) -> Option<Vec<Span<'static>>> {
    let c = g.temp_c?;
    let sev = app.config().thresholds.temperature.grade(c as f64);
    Some(value(format!("{c}°C"), sev, app.theme()))
}

/// "653/700 W" (or "653 W" without a limit), graded against the limit.
fn power(app: &App, g: &GpuSample, with_limit: bool) -> Option<Vec<Span<'static>>> {
    let p = g.power_mw? / 1000;
    let sev = power_level(app, g).map_or(Severity::Normal, |l| l.1);
    let text = match g.power_limit_mw {
        Some(l) if with_limit => format!("{p}/{} W", l / 1000),
        _ => format!("{p} W"),
    };
    Some(value(text, sev, app.theme()))
}

/// The trend as words: "growing +510M/s", "volatile", "warming up".
fn trend_words(ins: &GpuInsight) -> String {
    match ins.phase {
        Phase::Growing | Phase::Shrinking => {
            format!("{} {}", ins.phase.name(), rate_short(ins.rate_bps))
        }
        Phase::Unknown => "warming up".into(),
        p => p.name().to_owned(),
    }
}

/// How much room the outlook has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Room {
    Full,
    /// Shorter words.
    Short,
    /// Shorter words, and no room for where a fill levels off.
    OneLine,
}

/// "full in ~57s (56s–1m06s)" or "at risk (peaks 97%)", graded; else
/// where a fill levels off.
fn outlook(app: &App, ins: &GpuInsight, room: Room) -> Vec<Span<'static>> {
    let short = room != Room::Full;
    let t = app.theme();
    let mut out = Vec::new();
    if let Some(eta) = ins.full_in {
        let sev = if eta.surely_within(app.config().alerts.forecast_below.as_secs_f64()) {
            Severity::Critical
        } else {
            Severity::Warn
        };
        out.push(Span::styled("  full in ", t.label));
        let text = if short {
            eta.describe_short()
        } else {
            eta.describe()
        };
        out.extend(value(text, sev, t));
    } else if let Some(pct) = ins.at_risk_pct {
        out.push(Span::raw("  "));
        let text = if short {
            "at risk".to_string()
        } else {
            format!("at risk (peaks {pct:.0}%)")
        };
        out.extend(value(text, Severity::Critical, t));
    } else if let Some(b) = ins.levels_at.filter(|_| room != Room::OneLine) {
        let label = if short {
            "  levels ~"
        } else {
            "  levelling off at ~"
        };
        out.push(Span::styled(label, t.label));
        out.push(Span::raw(bytes_short(b)));
    }
    out
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
    fn memory_line(&self, g: &GpuSample, slot: u64, w: usize) -> Vec<Span<'static>> {
        let app = self.app;
        let t = app.theme();
        let Some(m) = g.mem else {
            return vec![
                Span::styled("mem ", t.label),
                Span::styled("N/A".to_string(), t.dim),
            ];
        };
        let mut after: Vec<(u8, Vec<Span>)> = vec![(9, used_of_total(app, g, m, " / "))];
        after.push((
            5,
            vec![
                Span::styled("  reserved ", t.label),
                Span::raw(bytes_short(m.reserved)),
            ],
        ));
        if let Some(u) = unaccounted(app, self.index, slot, g) {
            after.push((
                4,
                vec![
                    Span::styled("  unaccounted ", t.label),
                    Span::raw(bytes_short(u)),
                ],
            ));
        }
        // The time of the peak is in the GPU view: here it would change
        // with every new peak and cost bytes on every redraw.
        if let Some((p, _)) = app.gpu_peak(self.index) {
            after.push((
                6,
                vec![
                    Span::styled("  peak ", t.label),
                    Span::styled(bytes_short(p), t.peak_mark),
                ],
            ));
        }
        let before = vec![Span::styled("mem ", t.label)];
        with_bar(app, g, before, after, (10, 60), w.saturating_sub(1)).0
    }

    /// Line 2, drawn into `area`: sparklines of per-interval peaks (fast
    /// lane) and utilisation, side by side; as charts with their scale
    /// when `area` has more than one row.
    fn sparklines(&self, g: &GpuSample, slot: u64, area: Rect, buf: &mut Buffer) {
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

    /// Line 3: utilisation, memory bandwidth, temperature, power, clocks
    /// and fan, each labelled.
    fn readings(&self, g: &GpuSample) -> Vec<(u8, Vec<Span<'static>>)> {
        let app = self.app;
        let t = app.theme();
        let na = || Span::styled(" N/A".to_string(), t.dim);
        let mut out: Vec<(u8, Vec<Span>)> = Vec::new();
        let mut util = vec![Span::styled("util", t.label)];
        util.extend(util_pct(app, g));
        out.push((9, util));
        out.push((
            3,
            vec![
                Span::styled("  mem bandwidth", t.label),
                Span::raw(g.util_mem.map_or(" N/A".into(), |u| format!(" {u}%"))),
            ],
        ));
        let mut tc = vec![Span::styled("  temp", t.label)];
        tc.extend(temp(app, g).unwrap_or_else(|| vec![na()]));
        out.push((8, tc));
        let mut pw = vec![Span::styled("  power", t.label)];
        pw.extend(power(app, g, true).unwrap_or_else(|| vec![na()]));
        out.push((7, pw));
        if g.sm_clock_mhz.is_some() || g.mem_clock_mhz.is_some() {
            let mhz = |c: Option<u32>| c.map_or("N/A".into(), |c| c.to_string());
            out.push((
                2,
                vec![
                    Span::styled("  clocks sm ", t.label),
                    Span::raw(mhz(g.sm_clock_mhz)),
                    Span::styled(" mem ", t.label),
                    Span::raw(format!("{} MHz", mhz(g.mem_clock_mhz))),
                ],
            ));
        }
        if app
            .system()
            .gpus
            .get(self.index)
            .is_some_and(|d| d.num_fans > 0)
        {
            out.push((
                1,
                vec![
                    Span::styled("  fan ", t.label),
                    Span::raw(g.fan_pct.map_or("N/A".into(), |f| format!("{f}%"))),
                ],
            ));
        }
        out
    }

    /// Line 4: where memory is going (processes, trend, forecast), then the
    /// slow lane (PCIe, BAR1, ECC).
    fn trend(&self, g: &GpuSample, slot: u64) -> Vec<(u8, Vec<Span<'static>>)> {
        let app = self.app;
        let t = app.theme();
        let i = self.index;
        let procs = app
            .history()
            .processes()
            .filter(|s| s.id.gpu as usize == i && s.at(slot).is_some())
            .count();
        let mut out: Vec<(u8, Vec<Span>)> = vec![(
            6,
            vec![
                Span::styled("procs ", t.label),
                Span::raw(procs.to_string()),
            ],
        )];
        if let Some(ins) = app.gpu_insight(i) {
            let style = match ins.phase {
                Phase::Growing => t.warn,
                Phase::Unknown => t.dim,
                _ => t.text,
            };
            out.push((
                9,
                vec![
                    Span::styled("  trend ", t.label),
                    Span::styled(trend_words(&ins), style),
                ],
            ));
            let o = outlook(app, &ins, Room::Full);
            if !o.is_empty() {
                out.push((9, o));
            }
        }
        out.extend(slow_lane(g, t));
        out
    }
}

/// PCIe throughput, BAR1 and volatile ECC errors, where known.
fn slow_lane(g: &GpuSample, t: &Theme) -> Vec<(u8, Vec<Span<'static>>)> {
    let mut out = Vec::new();
    if let (Some(rx), Some(tx)) = (g.pcie_rx_kbs, g.pcie_tx_kbs) {
        out.push((
            2,
            vec![
                Span::styled("  PCIe ", t.label),
                Span::raw(format!(
                    "↓{} ↑{}/s",
                    bytes_short(rx as u64 * 1024),
                    bytes_short(tx as u64 * 1024)
                )),
            ],
        ));
    }
    if let Some(b) = g.bar1 {
        out.push((
            1,
            vec![
                Span::styled("  BAR1 ", t.label),
                Span::raw(format!("{}/{}", bytes_short(b.used), bytes_short(b.total))),
            ],
        ));
    }
    if let Some(e) = g.ecc_volatile
        && e > 0
    {
        out.push((8, vec![Span::styled(format!("  ECC errors {e}"), t.crit)]));
    }
    out
}
