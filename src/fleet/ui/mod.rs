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
/// it directly), in ASCII only with `--ascii`.
pub fn render(app: &FleetApp, area: Rect, buf: &mut Buffer) {
    screen(app, area, buf);
    if app.config().display.ascii {
        crate::theme::ascii::asciify(buf);
    }
}

fn screen(app: &FleetApp, area: Rect, buf: &mut Buffer) {
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

/// The rows a table shows: `body` of them from `offset`, each with its
/// line below the titles (from 0) and its index in `rows`.
pub(super) fn visible<T>(
    rows: &[T],
    offset: usize,
    body: usize,
) -> impl Iterator<Item = (u16, usize, &T)> {
    rows.iter()
        .enumerate()
        .skip(offset)
        .take(body)
        .enumerate()
        .map(|(line, (i, r))| (line as u16, i, r))
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
/// or why they are not; cut at a word with "…" when too long.
fn status(app: &FleetApp, area: Rect, buf: &mut Buffer) {
    let t = app.theme();
    let s = app.status();
    let now = app.now_ms();
    let ago = |ms: u64| duration_short(now.saturating_sub(ms) / 1000);
    let retry = duration_short(s.next_ms.saturating_sub(now).div_ceil(1000));
    let spans = if let Some(e) = &s.error {
        let last = s.last_ok_ms.map_or("no data yet".to_owned(), |t| {
            format!("last good data {} ago", ago(t))
        });
        vec![Span::styled(
            format!(" ⚠ {last}, retry in {retry} · {}", short_urls(e)),
            t.warn,
        )]
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
                " · {} hosts · {} GPUs · {}",
                sum.hosts,
                sum.gpus,
                memory_text(sum.used_bytes, sum.total_bytes, false)
            )),
        ];
        if let Some(c) = health_counts(sum.hosts_down, sum.hosts_stale) {
            spans.push(Span::styled(format!(" · {c}"), t.crit));
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
            spans.push(Span::styled(format!(" · ⚠ {}", short_urls(w)), t.warn));
        }
        spans
    } else {
        vec![Span::styled(
            format!(" connecting to {} …", app.settings().prometheus),
            t.dim,
        )]
    };
    fit_words(spans, area.width).render(area, buf);
}

/// Memory in use of the total as everywhere in vramwatch: "29.0G / 140G";
/// `padded`: each figure in five cells, so a column's slashes line up.
pub(super) fn memory_text(used: u64, total: u64, padded: bool) -> String {
    let (u, t) = (bytes_short(used), bytes_short(total));
    if padded {
        format!("{u:>5} / {t:<5}")
    } else {
        format!("{u} / {t}")
    }
}

/// "1 down, 3 stale", leaving out the counts that are zero; `None` when
/// both are.
pub(super) fn health_counts(down: usize, stale: usize) -> Option<String> {
    let parts: Vec<String> = [(down, "down"), (stale, "stale")]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// `text` with every URL in it cut to its host and port: the path (and a
/// query, PromQL) left out, so the reason after it fits.
pub(super) fn short_urls(text: &str) -> String {
    text.split(' ')
        .map(|word| {
            let Some(rest) = word
                .strip_prefix("http://")
                .or_else(|| word.strip_prefix("https://"))
            else {
                return word.to_owned();
            };
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let host = rest[..end].trim_end_matches(':');
            if word.ends_with(':') {
                format!("{host}:")
            } else {
                host.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `spans` in `width` cells: when too long, cut after the last whole word
/// that leaves room for "…" (mid-word only when no word fits).
pub(super) fn fit_words(spans: Vec<Span<'static>>, width: u16) -> Line<'static> {
    let width = width as usize;
    let cells = |s: &str| Span::raw(s).width();
    if spans.iter().map(Span::width).sum::<usize>() <= width {
        return Line::from(spans);
    }
    let chars: Vec<(char, usize)> = spans
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.content.chars().map(move |c| (c, i)))
        .collect();
    // Keep `chars[..cut]`: at a space when one leaves room, else as much
    // as fits.
    let (mut at_word, mut fits, mut acc, mut seen_word) = (None, 0, 0, false);
    let mut utf8 = [0u8; 4];
    for (k, (c, _)) in chars.iter().enumerate() {
        if acc + 1 > width {
            break;
        }
        fits = k;
        if *c == ' ' && seen_word {
            at_word = Some(k);
        }
        seen_word |= !c.is_whitespace();
        acc += cells(c.encode_utf8(&mut utf8));
    }
    let mut keep = &chars[..at_word.unwrap_or(fits)];
    while let Some(((c, _), rest)) = keep.split_last() {
        if c.is_whitespace() || matches!(c, '·' | ',' | '(') {
            keep = rest;
        } else {
            break;
        }
    }
    let mut out: Vec<Span<'static>> = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        let text: String = keep
            .iter()
            .filter(|(_, j)| *j == i)
            .map(|(c, _)| c)
            .collect();
        if !text.is_empty() {
            out.push(Span::styled(text, s.style));
        }
    }
    let style = out.last().map_or(Style::default(), |s| s.style);
    out.push(Span::styled("…", style));
    Line::from(out)
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
    // Whole hints only, as many as fit (the later ones go first; the gap
    // after the last may fall off the edge); the filter in force stays.
    let mut groups = vec![(u8::MAX, vec![Span::raw(" ")])];
    for (k, what) in hints {
        groups.push((
            1,
            vec![
                Span::styled(k, t.accent),
                Span::styled(format!(" {what}  "), t.dim),
            ],
        ));
    }
    if !nav.filter.is_empty() {
        let filter = Span::styled(format!("filter: {}", nav.filter), t.warn);
        groups.push((u8::MAX, vec![filter]));
    }
    let spans = crate::ui::fit(groups, usize::from(area.width) + 2);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn text(l: &Line) -> String {
        l.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn zero_health_counts_are_left_out() {
        assert_eq!(health_counts(0, 0), None);
        assert_eq!(health_counts(0, 3).as_deref(), Some("3 stale"));
        assert_eq!(health_counts(2, 0).as_deref(), Some("2 down"));
        assert_eq!(health_counts(1, 3).as_deref(), Some("1 down, 3 stale"));
    }

    #[test]
    fn long_lines_are_cut_at_a_word_with_an_ellipsis() {
        let spans = || {
            vec![
                Span::raw(" ⚠ last good data 12s ago"),
                Span::styled(
                    " · cannot connect: Connection refused (os error 111)",
                    Style::default(),
                ),
            ]
        };
        // Fits: as it is.
        let l = fit_words(spans(), 200);
        assert_eq!(
            text(&l),
            " ⚠ last good data 12s ago · cannot connect: Connection refused (os error 111)"
        );
        for w in [20u16, 40, 60, 70, 76] {
            let l = fit_words(spans(), w);
            let s = text(&l);
            assert!(l.width() <= w as usize, "{w}: {s:?}");
            assert!(s.ends_with('…'), "{w}: {s:?}");
            let kept = s.trim_end_matches('…');
            // What is kept ends with a whole word of the original.
            let full = text(&fit_words(spans(), 200));
            let next = full[kept.len()..].chars().next();
            assert!(matches!(next, Some(' ')), "{w}: {s:?}");
        }
        assert_eq!(
            text(&fit_words(spans(), 70)),
            " ⚠ last good data 12s ago · cannot connect: Connection refused (os…"
        );
        assert_eq!(text(&fit_words(spans(), 30)), " ⚠ last good data 12s ago…");
        // No word fits: cut mid-word.
        let l = fit_words(vec![Span::raw("abcdefghijklmnop")], 6);
        assert_eq!(text(&l), "abcde…");
    }

    #[test]
    fn urls_in_errors_are_cut_to_host_and_port() {
        assert_eq!(
            short_urls("http://127.0.0.1:58981/api/v1/query: cannot connect: refused"),
            "127.0.0.1:58981: cannot connect: refused"
        );
        assert_eq!(
            short_urls(
                "Memory: https://prom.example/prometheus/api/v1/query?query=sum(x): HTTP 503"
            ),
            "Memory: prom.example: HTTP 503"
        );
        assert_eq!(short_urls("no url here"), "no url here");
    }

    #[test]
    fn memory_is_spelt_one_way() {
        let g = 1u64 << 30;
        assert_eq!(memory_text(29 * g, 140 * g, false), "29.0G / 140G");
        assert_eq!(memory_text(29 * g, 140 * g, true), "29.0G / 140G ");
        assert_eq!(memory_text(900 * g, 1120 * g, true), " 900G / 1120G");
    }
}
