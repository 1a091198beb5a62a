//! Drawing the fleet: `draw(frame, &FleetApp)`; every part reads the app
//! and changes nothing. The look is the local dashboard's: the same theme,
//! units, bars, threshold marks and key hints.

mod detail;
mod events;
mod hosts;
mod procs;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use super::app::{FleetApp, Tab, Table};
use super::layout::{MIN_HEIGHT, MIN_WIDTH, areas};
use super::model::{Health, Scrape, Summary};
use crate::config::Severity;
use crate::config::keys::Action as Intent;
use crate::model::units::{bytes_short, duration_short};
use crate::theme::Theme;

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, app: &FleetApp) {
    let area = frame.area();
    render(app, area, frame.buffer_mut());
}

/// Renders the whole screen into a buffer (tests and the benchmark call
/// it directly).
pub fn render(app: &FleetApp, area: Rect, buf: &mut Buffer) {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!(
            "enlarge the terminal to at least {MIN_WIDTH}×{MIN_HEIGHT} (now {}×{})",
            area.width, area.height
        );
        Paragraph::new(Span::styled(msg, app.theme().warn))
            .wrap(Wrap { trim: true })
            .render(area, buf);
        return;
    }
    let a = areas((area.width, area.height));
    header(app, a.header, buf);
    status(app, a.status, buf);
    match (app.open_host(), app.tab()) {
        (Some(_), _) => detail::render(app, a.body, buf),
        (None, Tab::Hosts) => hosts::render(app, a.body, buf),
        (None, Tab::Procs) => procs::render_fleet(app, a.body, buf),
        (None, Tab::Events) => events::render(app, a.body, buf),
    }
    footer(app, a.footer, buf);
    if app.help() {
        help(app, area, buf);
    }
}

/// Writes `text` into `w` cells at `x`, right-aligned when asked, cut to
/// fit.
pub(super) fn put(
    buf: &mut Buffer,
    (x, y): (u16, u16),
    w: u16,
    text: &str,
    right: bool,
    st: Style,
) {
    if w == 0 {
        return;
    }
    let len = text.chars().count() as u16;
    let shown: String = text.chars().take(w as usize).collect();
    let dx = if right { w.saturating_sub(len) } else { 0 };
    buf.set_stringn(x + dx, y, shown, w as usize, st);
}

/// A value with its severity: a one-cell mark (blank when normal), then
/// the text, as the local dashboard shows thresholds.
pub(super) fn graded(text: String, sev: Severity, t: &Theme) -> (String, Style) {
    let mark = match Theme::mark(sev) {
        "" => " ",
        m => m,
    };
    (format!("{text}{mark}"), t.level(sev))
}

/// A memory bar: in use █, free ░, coloured by the fullness's severity.
pub(super) fn bar(
    in_use: u64,
    total: u64,
    width: u16,
    sev: Severity,
    t: &Theme,
) -> Vec<Span<'static>> {
    let w = width as u64;
    if total == 0 || w == 0 {
        return vec![Span::styled(" ".repeat(width as usize), t.dim)];
    }
    let used =
        ((in_use as u128 * w as u128 + total as u128 / 2) / total as u128).min(w as u128) as u64;
    let style = if sev == Severity::Normal {
        t.mem_used
    } else {
        t.level(sev)
    };
    vec![
        Span::styled("█".repeat(used as usize), style),
        Span::styled("░".repeat((w - used) as usize), t.mem_free),
    ]
}

/// "up 2s", "stale 40s", "down 12s", "down >10m", and its style.
pub(super) fn scrape_cell(s: &Scrape, t: &Theme) -> (String, Style) {
    let age = match s.age_s {
        Some(a) => duration_short(a.max(0.0).round() as u64),
        None if s.health == Health::Up => String::new(),
        None => ">10m".into(),
    };
    let style = match s.health {
        Health::Up => t.ok,
        Health::Stale => t.warn,
        Health::Down => t.crit,
        Health::Unknown => t.dim,
    };
    (
        format!("{} {age}", s.health.name()).trim_end().to_owned(),
        style,
    )
}

/// A column header row: titles, the sorted one marked ▼ or ▲.
pub(super) fn titles(
    buf: &mut Buffer,
    area: Rect,
    cols: &[(&'static str, u16, bool, bool)],
    t: &Theme,
    sorted_desc: Option<bool>,
) {
    let style = t.header.patch(t.label);
    let mut x = area.x;
    for &(title, w, right, sorted) in cols {
        let mut name = title.to_string();
        if sorted && let Some(d) = sorted_desc {
            name.push(if d { '▼' } else { '▲' });
        }
        put(buf, (x, area.y), w, &name, right, style);
        x += w + 1;
    }
}

/// The top line: the title, the screens (the one shown highlighted), the
/// time, the interval, paused, alerts.
fn header(app: &FleetApp, area: Rect, buf: &mut Buffer) {
    let t = app.theme();
    let mut left = vec![Span::styled(" vramwatch fleet ", t.title)];
    for tab in Tab::ALL {
        let on = tab == app.tab();
        let style = if on {
            t.accent.patch(t.selected)
        } else {
            t.dim
        };
        left.push(Span::raw(" "));
        left.push(Span::styled(format!(" {} ", tab.name()), style));
    }
    Line::from(left).render(area, buf);
    let mut right: Vec<Span> = Vec::new();
    if app.paused() {
        right.push(Span::styled("❚❚ PAUSED  ", t.paused));
    }
    let alerts: u32 = app.hosts().iter().map(|h| h.alerts).sum();
    if alerts > 0 {
        right.push(Span::styled(format!("⚠ {alerts}  "), t.warn));
    }
    let every = app.settings().interval;
    right.push(Span::styled(
        format!("every {}  ", humantime::format_duration(every)),
        t.dim,
    ));
    right.push(Span::styled(
        format!("{} ", app.settings().clock.hms(app.now_ms())),
        t.text,
    ));
    let w: u16 = right.iter().map(|s| s.width() as u16).sum();
    let lw: u16 = 17
        + Tab::ALL
            .iter()
            .map(|t| t.name().len() as u16 + 3)
            .sum::<u16>();
    if area.width >= lw + w {
        Line::from(right).render(Rect::new(area.right() - w, area.y, w, 1), buf);
    }
}

/// The second line: where the figures come from and how fresh they are,
/// or why they are not.
fn status(app: &FleetApp, area: Rect, buf: &mut Buffer) {
    let t = app.theme();
    let s = app.status();
    let now = app.now_ms();
    let ago = |ms: u64| duration_short(now.saturating_sub(ms) / 1000);
    let retry = duration_short(s.next_ms.saturating_sub(now).div_ceil(1000));
    let line = if let Some(e) = &s.error {
        let last = s.last_ok_ms.map_or("no data yet".to_owned(), |t| {
            format!("last good data {} ago", ago(t))
        });
        Line::from(Span::styled(
            format!(" ⚠ {last}, retry in {retry} · {e}"),
            t.warn,
        ))
    } else if let Some(ok) = s.last_ok_ms {
        let sum = Summary::of(app.hosts());
        let mut spans = vec![
            Span::styled(format!(" {}", app.settings().prometheus), t.accent),
            Span::styled(
                if app.settings().selector.is_empty() {
                    String::new()
                } else {
                    format!(" {{{}}}", app.settings().selector)
                },
                t.dim,
            ),
            Span::raw(format!(
                " · {} hosts · {} GPUs · {}/{}",
                sum.hosts,
                sum.gpus,
                bytes_short(sum.used_bytes),
                bytes_short(sum.total_bytes)
            )),
        ];
        if sum.hosts_down + sum.hosts_stale > 0 {
            spans.push(Span::styled(
                format!(" · {} down, {} stale", sum.hosts_down, sum.hosts_stale),
                t.crit,
            ));
        }
        spans.push(Span::styled(
            format!(
                " · data {} ago ({} queries, {}, {} ms)",
                ago(ok),
                s.queries,
                bytes_short(s.bytes),
                s.took_ms
            ),
            t.dim,
        ));
        if let Some(w) = s.warnings.first() {
            spans.push(Span::styled(format!(" · ⚠ {w}"), t.warn));
        }
        Line::from(spans)
    } else {
        Line::from(Span::styled(
            format!(" connecting to {} …", app.settings().prometheus),
            t.dim,
        ))
    };
    line.render(area, buf);
}

/// The bottom line: the filter being typed, or key hints from the key map.
fn footer(app: &FleetApp, area: Rect, buf: &mut Buffer) {
    let t = app.theme();
    let nav = app.nav(app.table());
    if nav.filter_editing {
        Line::from(vec![
            Span::styled(" filter: ", t.accent),
            Span::raw(nav.filter.clone()),
            Span::styled("█", t.accent),
            Span::styled("   Enter keep · Esc clear", t.dim),
        ])
        .render(area, buf);
        return;
    }
    let keys = &app.config().keys;
    let first = |a: Intent| {
        keys.keys(a)
            .first()
            .map(|k| k.to_string())
            .unwrap_or_default()
    };
    let mut hints = vec![(first(Intent::Quit), "quit"), (first(Intent::Help), "help")];
    if app.open_host().is_some() {
        hints.push((first(Intent::Back), "back"));
    } else {
        hints.push((first(Intent::Enter), "open host"));
    }
    if app.table() != Table::Events {
        hints.push((first(Intent::SortNext), "sort"));
    }
    hints.push((first(Intent::Filter), "filter"));
    hints.push((first(Intent::NextPane), "screens"));
    hints.push((first(Intent::Record), "refresh"));
    hints.push((
        first(Intent::Pause),
        if app.paused() { "resume" } else { "pause" },
    ));
    let mut spans = vec![Span::raw(" ")];
    for (k, what) in hints {
        spans.push(Span::styled(k, t.accent));
        spans.push(Span::styled(format!(" {what}  "), t.dim));
    }
    if !nav.filter.is_empty() {
        spans.push(Span::styled(format!("filter: {}", nav.filter), t.warn));
    }
    Line::from(spans).render(area, buf);
}

/// What each key does here.
const HELP: [(Intent, &str); 15] = [
    (Intent::Quit, "quit"),
    (Intent::Help, "this help"),
    (Intent::Up, "select up"),
    (Intent::Down, "select down"),
    (Intent::PageUp, "page up"),
    (Intent::PageDown, "page down"),
    (
        Intent::Enter,
        "open the selected host: its GPUs and processes",
    ),
    (Intent::Back, "back / clear filter"),
    (Intent::Filter, "filter (host, user, command)"),
    (Intent::SortNext, "next sort column"),
    (Intent::InvertSort, "invert sort order"),
    (Intent::NextPane, "next screen: hosts, processes, events"),
    (Intent::Events, "events: alerts firing across the fleet"),
    (Intent::Record, "refresh now"),
    (Intent::Pause, "pause / resume refreshing"),
];

fn help(app: &FleetApp, area: Rect, buf: &mut Buffer) {
    let t = app.theme();
    let keys = &app.config().keys;
    let rows: Vec<(String, &str)> = HELP.iter().map(|(a, d)| (keys.label(*a), *d)).collect();
    let kw = rows
        .iter()
        .map(|r| r.0.chars().count())
        .max()
        .unwrap_or(8)
        .min(20);
    let mut lines: Vec<Line> = rows
        .into_iter()
        .map(|(k, d)| {
            Line::from(vec![
                Span::styled(format!(" {k:>kw$}  "), t.accent),
                Span::raw(d),
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    for (sym, what) in [
        ("█ ░", "memory in use (used + reserved), free"),
        ("▲ ‼", "over the warn / critical threshold"),
        ("up/stale/down", "scrape health, and its age"),
        ("no process data", "dcgm-exporter only: device figures"),
    ] {
        lines.push(Line::from(vec![
            Span::styled(format!(" {sym:>kw$}  "), t.label),
            Span::styled(what, t.dim),
        ]));
    }
    let h = (lines.len() as u16 + 2).min(area.height);
    let w = (kw as u16 + 56).min(area.width);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    Clear.render(r, buf);
    Paragraph::new(lines)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(t.focus_border)
                .title(Span::styled(" fleet help · Esc or ? to close ", t.title)),
        )
        .render(r, buf);
}
