//! The process table: one row per process per GPU, sorted and filtered,
//! columns dropped by priority when the terminal is narrow. Other users'
//! processes are dimmed; exited ones stay a while, marked. Commands are
//! abbreviated to what tells them apart (`app::cmdline`); the selected
//! one's whole command is on the detail line under the table, and
//! Shift-←/→ scroll the column.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::widgets::Widget;

use crate::analysis::Phase;
use crate::app::cmdline;
use crate::app::layout::{column_spans, command_column_width, fit_columns};
use crate::app::rows::{Row, shown_commands};
use crate::app::{App, Pane};
use crate::config::Column;
use crate::model::units::{MIB, age_short, bytes_short, rate_short};

/// Growth below this (bytes/s) shows as flat.
pub const FLAT_BPS: f64 = 1.0 * MIB as f64;

pub fn title(c: Column) -> &'static str {
    match c {
        Column::Gpu => "GPU",
        Column::Pid => "PID",
        Column::User => "USER",
        Column::Container => "CONTAINER",
        Column::Kind => "TYPE",
        Column::Memory => "GPU MEM",
        Column::MemoryPct => "MEM%",
        Column::Trend => "TREND",
        Column::Peak => "PEAK",
        Column::Alloc => "ALLOC/RESV",
        Column::Sm => "SM%",
        Column::Cpu => "CPU%",
        Column::Rss => "RSS",
        Column::Age => "AGE",
        Column::Command => "COMMAND",
    }
}

/// The trend cell: ▲ growing, ▼ shrinking, ─ flat, or "exited".
pub fn trend(app: &App, r: &Row) -> (String, Style) {
    let t = app.theme();
    if r.exited {
        return ("exited".into(), t.exited);
    }
    let Some(ins) = app.proc_insight(&r.id()) else {
        return ("warming up".into(), t.dim);
    };
    let v = ins.rate_bps;
    // The phase decides the arrow (it has hysteresis); the rate is its size.
    match ins.phase {
        _ if ins.leak.is_some() => (
            format!(
                "▲{} LEAK",
                rate_short(ins.shown_rate().max(0.0)).trim_start_matches('+')
            ),
            t.crit,
        ),
        Phase::Growing if v >= FLAT_BPS => (
            format!("▲{}", rate_short(v).trim_start_matches('+')),
            t.warn,
        ),
        Phase::Shrinking if v <= -FLAT_BPS => {
            (format!("▼{}", rate_short(v).trim_start_matches('-')), t.ok)
        }
        Phase::Volatile => ("∿ swings".into(), t.dim),
        // Too few samples for a trend yet: say so rather than stay blank.
        Phase::Unknown => ("warming up".into(), t.dim),
        _ => ("─".into(), t.dim),
    }
}

fn cell(app: &App, r: &Row, c: Column) -> (String, Option<Style>) {
    let f = &r.series.facts;
    let last = r.last;
    match c {
        Column::Gpu => (r.id().gpu.to_string(), None),
        Column::Pid => (r.id().key.pid.to_string(), None),
        Column::User => (f.user.as_deref().unwrap_or("?").to_string(), None),
        Column::Container => (f.container_label().unwrap_or("-").to_string(), None),
        Column::Kind => (f.kind.letter().to_string(), None),
        Column::Memory => (
            r.mem()
                .or(last.and_then(|p| p.mem))
                .map_or("N/A".into(), bytes_short),
            None,
        ),
        Column::MemoryPct => (r.mem_pct.map_or("".into(), |p| format!("{p:.1}")), None),
        Column::Trend => {
            let (s, st) = trend(app, r);
            (s, Some(st))
        }
        Column::Peak => (r.peak.map_or("".into(), |p| bytes_short(p.0)), None),
        Column::Alloc => (
            r.series
                .torch
                .as_ref()
                .and_then(|t| t.devices.first())
                .filter(|_| !r.exited)
                .map_or(String::new(), |d| d.short_label()),
            None,
        ),
        // A process that has gone uses nothing now: its last readings are
        // not shown as current (its peak and last memory are in its view).
        Column::Sm | Column::Cpu | Column::Rss if r.exited => (String::new(), None),
        Column::Sm => (
            last.and_then(|p| p.sm_util)
                .map_or("N/A".into(), |u| u.to_string()),
            None,
        ),
        Column::Cpu => (
            last.and_then(|p| p.cpu_pct)
                .map_or("".into(), |c| format!("{c:.0}")),
            None,
        ),
        Column::Rss => (
            last.and_then(|p| p.rss).map_or("".into(), bytes_short),
            None,
        ),
        Column::Age => (age_short(r.age_s(app.shown_ms())), None),
        // Drawn by the table, abbreviated against the other rows.
        Column::Command => (f.label().to_string(), None),
    }
}

fn right_aligned(c: Column) -> bool {
    matches!(
        c,
        Column::Pid
            | Column::Memory
            | Column::MemoryPct
            | Column::Peak
            | Column::Alloc
            | Column::Sm
            | Column::Cpu
            | Column::Rss
            | Column::Age
    )
}

pub struct ProcessTable<'a>(pub &'a App);

/// Writes `text` into `w` cells at `x`, right-aligned when asked, cut to fit.
fn put(
    buf: &mut Buffer,
    area: Rect,
    (x, w): (u16, u16),
    y: u16,
    text: &str,
    right: bool,
    style: Style,
) {
    if w == 0 || y >= area.bottom() {
        return;
    }
    let len = text.chars().count() as u16;
    let shown: String = text.chars().take(w as usize).collect();
    let dx = if right { w.saturating_sub(len) } else { 0 };
    buf.set_stringn(area.x + x + dx, y, shown, w as usize, style);
}

impl Widget for &ProcessTable<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.0;
        let t = app.theme();
        if area.height == 0 || area.width == 0 {
            return;
        }
        let rows = app.rows();
        let cols = fit_columns(&app.config().display.columns, area.width);
        let spans = column_spans(&cols, area.width);
        let sort = app.table().sort;
        let head_style = t.header.patch(t.label);
        let hscroll = app.table().hscroll as usize;
        for (c, span) in cols.iter().zip(&spans) {
            let mut name = title(*c).to_string();
            if *c == sort.column {
                name.push(if sort.descending { '▼' } else { '▲' });
            }
            if *c == Column::Command && hscroll > 0 {
                name.push_str(&format!(" ◂{hscroll} (Shift-←)"));
            }
            put(
                buf,
                area,
                *span,
                area.y,
                &name,
                right_aligned(*c),
                head_style,
            );
        }
        if rows.is_empty() {
            let msg = if app.table().filter.is_empty() {
                " no processes on any GPU"
            } else {
                " no process matches the filter"
            };
            if area.height > 1 {
                buf.set_stringn(area.x, area.y + 1, msg, area.width as usize, t.dim);
            }
            return;
        }
        let sel = app.selected_index(&rows);
        let body_h = area.height.saturating_sub(1) as usize;
        let start = app.table().offset.min(rows.len().saturating_sub(1));
        let focus = app.nav().focus == Pane::Procs;
        let cmd_w = command_column_width(&app.config().display.columns, area.width).unwrap_or(0);
        let commands = command_cells(&rows, cmd_w, hscroll);
        for (line, (i, r)) in rows.iter().enumerate().skip(start).take(body_h).enumerate() {
            let y = area.y + 1 + line as u16;
            let mut base = if r.exited {
                t.exited
            } else if !app.is_mine(r.series) {
                t.other_user
            } else {
                t.text
            };
            if Some(i) == sel && focus {
                base = base.patch(t.selected);
            }
            buf.set_style(Rect::new(area.x, y, area.width, 1), base);
            for (c, span) in cols.iter().zip(&spans) {
                let (text, style) = match c {
                    Column::Command => (commands[i].clone(), None),
                    c => cell(app, r, *c),
                };
                let style = match style {
                    Some(st) if !r.exited => base.patch(st),
                    _ => base,
                };
                put(buf, area, *span, y, &text, right_aligned(*c), style);
            }
        }
        // Where we are in a long list.
        if rows.len() > body_h && area.width > 12 {
            let label = format!(" {}/{} ", sel.map_or(0, |s| s + 1), rows.len());
            let x = area.x + area.width.saturating_sub(label.len() as u16);
            buf.set_string(x, area.y, label, t.dim);
        }
    }
}

/// The command column's text for every row: abbreviated against the other
/// rows (what the command sort goes by), or the whole command scrolled by
/// `hscroll`, "…" at each end that is cut.
fn command_cells(rows: &[Row], width: usize, hscroll: usize) -> Vec<String> {
    if hscroll > 0 {
        return rows
            .iter()
            .map(|r| cmdline::window(r.series.facts.label(), hscroll, width))
            .collect();
    }
    shown_commands(rows, width)
}

/// Under the table: the selected process's PID, user, GPU and its whole
/// command (scrolled with the command column).
pub struct DetailLine<'a>(pub &'a App);

impl Widget for &DetailLine<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        use ratatui::text::{Line, Span};
        let app = self.0;
        let t = app.theme();
        let Some(s) = app
            .table()
            .selected
            .and_then(|id| app.history().process(&id))
        else {
            return;
        };
        let exited = app.slot().is_some_and(|slot| s.at(slot).is_none());
        let f = &s.facts;
        let mut spans = vec![
            Span::styled(format!(" ▸ PID {}", s.id.key.pid), t.label),
            Span::styled(
                format!(
                    " {} GPU {}{}: ",
                    f.user.as_deref().unwrap_or("?"),
                    s.id.gpu,
                    if exited { " (exited)" } else { "" }
                ),
                t.dim,
            ),
        ];
        let hscroll = app.table().hscroll as usize;
        let room = (area.width as usize).saturating_sub(crate::ui::width_of(&spans));
        spans.push(Span::styled(
            cmdline::window(f.label(), hscroll, room),
            t.text,
        ));
        Line::from(spans).render(area, buf);
    }
}
