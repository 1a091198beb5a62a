//! The smaller forms of a GPU: two labelled lines, one line, and the
//! panel of its top processes beside a full card.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Widget};

use super::bar::with_bar;
use super::figures::{Room, mem_pct, outlook, power, temp, unaccounted, util_pct};
use super::spark::{series, sparkline};
use crate::analysis::Phase;
use crate::app::{App, Pane};
use crate::history::Agg;
use crate::model::units::{MIB, bytes_short, rate_short};
use crate::model::{GpuSample, GpuState, MemInfo};
use crate::ui::{fit, width_of};

fn short_name(name: &str) -> &str {
    name.strip_prefix("NVIDIA ").unwrap_or(name)
}

/// The start of a GPU line: a selection mark, number and short name.
fn gpu_label(app: &App, i: usize, selected: bool) -> Span<'static> {
    let t = app.theme();
    let name = app
        .system()
        .gpus
        .get(i)
        .map_or("GPU", |d| short_name(&d.name));
    let sel = selected && app.nav().focus == Pane::Gpus;
    Span::styled(
        format!("{}{i:>2} {:<6.6} ", if sel { "▸" } else { " " }, name),
        if sel { t.accent } else { t.title },
    )
}

/// GPU `i`'s reading at `slot`; when it has none or is lost, draws
/// "LOST" after `label` across `area` and gives none.
fn reading<'a>(
    app: &'a App,
    i: usize,
    slot: u64,
    label: &Span<'static>,
    area: Rect,
    buf: &mut Buffer,
) -> Option<&'a GpuSample> {
    let g = app
        .history()
        .gpu_at(i, slot)
        .filter(|g| g.state != GpuState::Lost);
    if g.is_none() {
        let lost = Span::styled("LOST: no readings", app.theme().crit);
        Line::from(vec![label.clone(), lost]).render(area, buf);
    }
    g
}

/// A sparkline of GPU memory (or utilisation) with its label, `w` wide,
/// at the right end of `row`.
fn labelled_spark(
    app: &App,
    i: usize,
    g: &GpuSample,
    util: bool,
    row: Rect,
    w: u16,
    buf: &mut Buffer,
) {
    let t = app.theme();
    let slot = app.slot().unwrap_or(0);
    let x = row.right().saturating_sub(w);
    let label = if util { "util " } else { "mem  " };
    buf.set_stringn(x, row.y, label, w as usize, t.label);
    let n = w.saturating_sub(5);
    let area = Rect::new(x + 5, row.y, n, 1);
    if util {
        let data = series(app, i, slot, n as usize, Agg::Mean, |g| {
            g.util_gpu.map(u64::from)
        });
        sparkline(data, 100, t.spark_util, area, buf);
    } else {
        let total = g.mem.map_or(1, |m| m.total / MIB);
        let data = series(app, i, slot, n as usize, Agg::Max, |g| {
            g.mem_peak.or(g.mem.map(|m| m.used)).map(|b| b / MIB)
        });
        sparkline(data, total, t.spark_mem, area, buf);
    }
}

/// Two labelled lines per GPU: memory (bar, used of total, reserved,
/// unaccounted, peak), then utilisation, temperature, power, trend and
/// forecast; sparklines at the right where there is room.
pub struct GpuTwoLine<'a> {
    pub app: &'a App,
    pub index: usize,
    pub selected: bool,
}

impl Widget for &GpuTwoLine<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let t = app.theme();
        let i = self.index;
        let slot = app.slot().unwrap_or(0);
        let w = area.width as usize;
        let label = gpu_label(app, i, self.selected);
        let indent = label.width();
        let Some(g) = reading(app, i, slot, &label, area, buf) else {
            return;
        };
        let row = |n: u16| Rect::new(area.x, area.y + n, area.width, 1);
        // Line 2 first: the sparklines take what both lines leave.
        let mut l2: Vec<(u8, Vec<Span>)> = Vec::new();
        let mut util = vec![
            Span::raw(" ".repeat(indent)),
            Span::styled("util ", t.label),
        ];
        util.extend(util_pct(app, g));
        l2.push((9, util));
        if let Some(c) = temp(app, g) {
            let mut v = vec![Span::styled("  temp ", t.label)];
            v.extend(c);
            l2.push((5, v));
        }
        if let Some(p) = power(app, g, true) {
            let mut v = vec![Span::styled("  power ", t.label)];
            v.extend(p);
            l2.push((4, v));
        }
        if let Some(ins) = app.gpu_insight(i) {
            let style = match ins.phase {
                Phase::Growing => t.warn,
                Phase::Unknown => t.dim,
                _ => t.text,
            };
            l2.push((
                7,
                vec![
                    Span::styled("  trend ", t.label),
                    Span::styled(crate::ui::trend_words(ins.phase, ins.rate_bps), style),
                ],
            ));
            let o = outlook(app, &ins, if w < 100 { Room::Short } else { Room::Full });
            if !o.is_empty() {
                l2.push((9, o));
            }
        }
        let l2 = fit(l2, w);
        let mut after: Vec<(u8, Vec<Span>)> = Vec::new();
        if let Some(m) = g.mem {
            after.push((9, used_of_total_short(m)));
            after.push((
                5,
                vec![
                    Span::styled("  reserved ", t.label),
                    Span::raw(bytes_short(m.reserved)),
                ],
            ));
            if let Some(u) = unaccounted(app, i, slot, g) {
                after.push((
                    3,
                    vec![
                        Span::styled("  unaccounted ", t.label),
                        Span::raw(bytes_short(u)),
                    ],
                ));
            }
            if let Some((p, _)) = app.gpu_peak(i) {
                after.push((
                    6,
                    vec![
                        Span::styled("  peak ", t.label),
                        Span::styled(bytes_short(p), t.peak_mark),
                    ],
                ));
            }
        }
        // "mem  39%" over "util  97%", then the bar.
        let mut before = vec![label, Span::styled(" mem ", t.label)];
        before.extend(mem_pct(app, g));
        before.push(Span::raw(" "));
        // One bar width for every GPU (it depends on the width alone), so
        // equal shares are equal lengths; a line too long drops its least
        // important figures instead of shrinking its bar.
        let bar = (w / 5).clamp(8, 30);
        let (l1, l1_w) = with_bar(app, g, before, after, bar, w);
        Line::from(l1).render(row(0), buf);
        let l2_w = width_of(&l2);
        Line::from(l2).render(row(1), buf);
        // One width for every GPU's sparklines, so they line up.
        let spark_w = w.saturating_sub(100).min(65);
        if spark_w >= 13 && l1_w.max(l2_w) + 2 <= w - spark_w {
            let spark_w = spark_w as u16;
            labelled_spark(app, i, g, false, row(0), spark_w, buf);
            labelled_spark(app, i, g, true, row(1), spark_w, buf);
        }
    }
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
        let label = gpu_label(app, i, self.selected);
        let Some(g) = reading(app, i, slot, &label, area, buf) else {
            return;
        };
        let w = area.width as usize;
        let mut after: Vec<(u8, Vec<Span>)> = Vec::new();
        if let Some(m) = g.mem {
            after.push((9, used_of_total_short(m)));
            let mut v = vec![Span::styled(" mem ", t.label)];
            v.extend(mem_pct(app, g));
            after.push((9, v));
        }
        let mut v = vec![Span::styled(" util ", t.label)];
        v.extend(util_pct(app, g));
        after.push((8, v));
        if let Some(c) = temp(app, g) {
            let mut v = vec![Span::raw(" ")];
            v.extend(c);
            after.push((4, v));
        }
        if let Some(p) = power(app, g, false) {
            let mut v = vec![Span::raw(" ")];
            v.extend(p);
            after.push((3, v));
        }
        if let Some(ins) = app.gpu_insight(i) {
            if matches!(ins.phase, Phase::Growing | Phase::Shrinking)
                && ins.rate_bps.abs() >= MIB as f64
            {
                after.push((
                    7,
                    vec![Span::styled(
                        format!(" {}", rate_short(ins.rate_bps)),
                        t.warn,
                    )],
                ));
            }
            let o = outlook(app, &ins, Room::OneLine);
            if !o.is_empty() {
                after.push((9, o));
            }
        }
        // One bar width for every row (it depends on the width alone), so
        // the fills compare down the column: a row with more to say drops
        // its least important figures instead of shrinking its bar.
        let bar = (w / 5).clamp(8, 24);
        let (line, used) = with_bar(app, g, vec![label], after, bar, w);
        Line::from(line).render(area, buf);
        let spark_w = w.saturating_sub(84).min(60);
        if spark_w >= 13 && used + 2 <= w - spark_w {
            labelled_spark(app, i, g, false, area, spark_w as u16, buf);
        }
    }
}

/// "54.1G/140G" at fixed widths.
fn used_of_total_short(m: MemInfo) -> Vec<Span<'static>> {
    vec![Span::raw(format!(
        " {:>6}/{:<5}",
        bytes_short(m.used),
        bytes_short(m.total)
    ))]
}

/// Beside a full card on a wide terminal: the GPU's biggest processes (in
/// the memory sort's order: a swinging process by its recent highest).
pub struct TopProcesses<'a> {
    pub app: &'a App,
    pub index: usize,
}

impl Widget for &TopProcesses<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let t = app.theme();
        let rows: Vec<_> = app
            .gpu_rows(self.index)
            .into_iter()
            .filter(|r| !r.exited)
            .collect();
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(t.border)
            .title(Line::from(vec![
                Span::styled(format!(" GPU {} ", self.index), t.title),
                Span::styled(format!("processes ({}) ", rows.len()), t.text),
            ]));
        let inner = block.inner(area);
        block.render(area, buf);
        if rows.is_empty() {
            Line::from(Span::styled(" no processes", t.dim)).render(inner, buf);
            return;
        }
        let (shown, more) = crate::ui::rows_shown(rows.len(), inner.height as usize);
        // PID, user, memory, trend, then the command in what is left.
        let fixed = 7 + 1 + 9 + 1 + 6 + 1 + 12 + 1;
        let cmd_w = (inner.width as usize).saturating_sub(fixed);
        let labels: Vec<&str> = rows.iter().map(|r| r.series.facts.label()).collect();
        let cmds = crate::app::cmdline::abbreviate_among(&labels, &app.all_commands(), cmd_w);
        for (n, (r, cmd)) in rows.iter().zip(cmds).take(shown).enumerate() {
            let (trend, trend_style) = crate::ui::process_table::trend(app, r);
            let user = r.series.facts.user.as_deref().unwrap_or("?");
            let style = if app.is_mine(r.series) {
                t.text
            } else {
                t.other_user
            };
            Line::from(vec![
                Span::styled(format!("{:>7} ", r.id().key.pid), style),
                Span::styled(format!("{:<9.9} ", user), style),
                Span::styled(
                    format!("{:>6} ", r.mem().map_or("N/A".into(), bytes_short)),
                    style,
                ),
                Span::styled(format!("{:<12.12} ", trend), trend_style),
                Span::styled(cmd, style),
            ])
            .render(Rect::new(inner.x, inner.y + n as u16, inner.width, 1), buf);
        }
        if more > 0 {
            Line::from(Span::styled(
                format!(" +{more} more: / gpu:{} lists them all", self.index),
                t.dim,
            ))
            .render(
                Rect::new(inner.x, inner.y + shown as u16, inner.width, 1),
                buf,
            );
        }
    }
}
