//! The events screen: alerts firing across the fleet, vramwatch's rules
//! (`vramwatch_alert_active`) and Prometheus's own (`/api/v1/alerts`),
//! the most severe first.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::{put, titles, visible};
use crate::fleet::app::{FleetApp, Table};
use crate::fleet::model::{AlertRow, AlertSource};
use crate::model::units::duration_short;

/// Title, width, right-aligned.
const COLS: [(&str, u16, bool); 7] = [
    ("SEVERITY", 8, false),
    ("HOST", 16, false),
    ("ALERT", 20, false),
    ("GPU", 3, true),
    ("PID", 7, true),
    ("FROM", 10, false),
    ("SINCE · SUMMARY", 0, false),
];

pub(super) fn render(app: &FleetApp, area: Rect, buf: &mut Buffer) {
    let t = app.theme();
    let fixed: u16 = COLS.iter().map(|c| c.1 + 1).sum();
    let last = area.width.saturating_sub(fixed);
    let heads: Vec<_> = COLS
        .iter()
        .map(|&(n, w, r)| (n, if w == 0 { last } else { w }, r, false))
        .collect();
    titles(buf, area, &heads, t, None);
    let rows = app.event_rows();
    if rows.is_empty() {
        let msg = if app.status().last_ok_ms.is_some() {
            " no alert is firing"
        } else {
            " waiting for Prometheus …"
        };
        put(buf, (area.x, area.y + 1), area.width, msg, false, t.dim);
        return;
    }
    let nav = app.nav(Table::Events);
    let sel = app.selected(Table::Events);
    let body = area.height.saturating_sub(1) as usize;
    for (line, i, a) in visible(&rows, nav.offset, body) {
        let y = area.y + 1 + line;
        let mut base = t.text;
        if Some(i) == sel {
            base = base.patch(t.selected);
        }
        buf.set_style(Rect::new(area.x, y, area.width, 1), base);
        let sev = match a.severity.as_str() {
            "critical" | "page" => t.crit,
            "warn" | "warning" => t.warn,
            _ => t.text,
        };
        let cells = cells(app, a);
        let mut x = area.x;
        for (i, ((_, w, right), text)) in
            heads.iter().map(|h| (h.0, h.1, h.2)).zip(cells).enumerate()
        {
            let st = if i == 0 { base.patch(sev) } else { base };
            put(buf, (x, y), w, &text, right, st);
            x += w + 1;
        }
    }
}

fn cells(app: &FleetApp, a: &AlertRow) -> [String; 7] {
    let since = a
        .since
        .as_deref()
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|d| {
            let ms = d.timestamp_millis().max(0) as u64;
            format!(
                "{} ago",
                duration_short(app.now_ms().saturating_sub(ms) / 1000)
            )
        });
    let tail = match (since, a.summary.is_empty()) {
        (Some(s), false) => format!("{s} · {}", a.summary),
        (Some(s), true) => s,
        (None, _) => a.summary.clone(),
    };
    [
        a.severity.clone(),
        a.host.clone(),
        a.name.clone(),
        a.gpu.clone().unwrap_or_default(),
        a.pid.clone().unwrap_or_default(),
        match a.source {
            AlertSource::Vramwatch => "vramwatch".into(),
            AlertSource::Prometheus => "prometheus".into(),
        },
        tail,
    ]
}
