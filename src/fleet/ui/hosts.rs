//! The hosts screen: one line per host, sorted and filtered.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::Widget;

use super::{bar, graded, memory_text, put, scrape_cell, titles, visible};
use crate::analysis::Eta;
use crate::fleet::app::{FleetApp, Table};
use crate::fleet::layout::host_columns;
use crate::fleet::model::{Health, Host};
use crate::fleet::table::HostCol;
use crate::model::units::{MIB, rate_short};

/// Columns that show what only vramwatch reports: on a dcgm-exporter host
/// they are one "no process data" mark.
const VRAMWATCH_ONLY: [HostCol; 4] = [
    HostCol::Growth,
    HostCol::FullIn,
    HostCol::Alerts,
    HostCol::Leaks,
];

pub(super) fn render(app: &FleetApp, area: Rect, buf: &mut Buffer) {
    let t = app.theme();
    let cols = host_columns(area.width);
    let sort = app.host_sort();
    let heads: Vec<_> = cols
        .iter()
        .map(|(c, w)| (c.spec().title, *w, c.spec().right, *c == sort.column))
        .collect();
    titles(buf, area, &heads, t, Some(sort.descending));
    let rows = app.host_rows();
    if rows.is_empty() {
        let msg = if app.hosts().is_empty() {
            if app.status().last_ok_ms.is_some() {
                " no GPU hosts: check --selector, and that Prometheus scrapes `vramwatch serve` or dcgm-exporter"
            } else {
                " waiting for Prometheus …"
            }
        } else {
            " no host matches the filter"
        };
        put(buf, (area.x, area.y + 1), area.width, msg, false, t.dim);
        return;
    }
    let nav = app.nav(Table::Hosts);
    let sel = app.selected(Table::Hosts);
    let body = area.height.saturating_sub(1) as usize;
    for (line, i, h) in visible(&rows, nav.offset, body) {
        let y = area.y + 1 + line;
        // Stale figures are dim: the host's, or all while refreshes fail.
        let mut base = match h.scrape.health {
            Health::Down | Health::Stale => t.dim,
            _ if app.status().error.is_some() => t.dim,
            _ => t.text,
        };
        if Some(i) == sel {
            base = base.patch(t.selected);
        }
        buf.set_style(Rect::new(area.x, y, area.width, 1), base);
        row(
            app,
            h,
            &cols,
            Rect::new(area.x, y, area.width, 1),
            base,
            buf,
        );
    }
    if rows.len() > body && area.width > 12 {
        let label = format!(" {}/{} ", sel.map_or(0, |s| s + 1), rows.len());
        let x = area.right().saturating_sub(label.len() as u16);
        buf.set_string(x, area.y, label, t.dim);
    }
}

fn row(app: &FleetApp, h: &Host, cols: &[(HostCol, u16)], r: Rect, base: Style, buf: &mut Buffer) {
    let t = app.theme();
    let mut x = r.x;
    let mut no_data: Option<(u16, u16)> = None;
    for &(c, w) in cols {
        if !h.process_data && VRAMWATCH_ONLY.contains(&c) {
            let (x0, _) = no_data.unwrap_or((x, 0));
            no_data = Some((x0, x + w - x0));
            x += w + 1;
            continue;
        }
        if c == HostCol::Memory {
            memory(app, h, (x, r.y), w, base, buf);
        } else {
            let (text, st) = cell(app, h, c);
            let style = if base == t.dim { base } else { base.patch(st) };
            put(buf, (x, r.y), w, &text, c.spec().right, style);
        }
        x += w + 1;
    }
    if let Some((x0, w)) = no_data {
        put(
            buf,
            (x0, r.y),
            w,
            " no process data (dcgm)",
            false,
            base.patch(t.dim),
        );
    }
}

/// The bar and "in use/total".
fn memory(app: &FleetApp, h: &Host, (x, y): (u16, u16), w: u16, base: Style, buf: &mut Buffer) {
    let t = app.theme();
    let (Some(used), Some(total)) = (h.used_bytes, h.total_bytes) else {
        put(buf, (x, y), w, "", false, base);
        return;
    };
    let text = format!(" {}", memory_text(used, total, true));
    let bar_w = w.saturating_sub(text.chars().count() as u16);
    let sev = app
        .config()
        .thresholds
        .memory
        .grade(h.used_pct().unwrap_or(0.0));
    let mut spans = bar(used, total, bar_w, sev, t);
    spans.push(ratatui::text::Span::styled(text, base));
    Line::from(spans).render(Rect::new(x, y, w, 1), buf);
}

fn cell(app: &FleetApp, h: &Host, c: HostCol) -> (String, Style) {
    let t = app.theme();
    let th = &app.config().thresholds;
    let plain = |s: String| (s, t.text);
    match c {
        HostCol::Host => plain(h.name.clone()),
        HostCol::Gpus => plain(h.gpus.to_string()),
        HostCol::Memory => plain(String::new()),
        HostCol::Fullest => match h.fullest_pct {
            Some(p) => graded(format!("{p:.0}%"), th.memory.grade(p), t),
            None => plain(String::new()),
        },
        HostCol::Util => match h.max_util_pct {
            Some(u) => plain(format!("{u:.0}%")),
            None => plain(String::new()),
        },
        HostCol::Growth => match h.growth_bps {
            Some(g) if g.abs() >= MIB as f64 => {
                (rate_short(g), if g > 0.0 { t.warn } else { t.ok })
            }
            Some(_) => ("─".into(), t.dim),
            None => plain(String::new()),
        },
        HostCol::FullIn => match h.full_in_s {
            // The least central estimate over its GPUs is "now": one is at
            // risk (its range's end is in the host's drill-down, "≤44s").
            Some(s) if s.round() <= 0.0 => ("at risk".into(), t.crit),
            Some(s) => {
                let soon = s <= app.config().alerts.forecast_below.as_secs_f64();
                // Rounded as the dashboard and the drill-down round it.
                let eta = Eta {
                    low_s: 0.0,
                    eta_s: s,
                    high_s: None,
                };
                (eta.describe_short(), if soon { t.crit } else { t.warn })
            }
            None => plain(String::new()),
        },
        HostCol::Alerts => count(h.alerts, t.crit, t),
        HostCol::Leaks => count(h.leaks, t.crit, t),
        HostCol::Scrape => scrape_cell(&app.scrape_shown(h), t),
    }
}

fn count(n: u32, hot: Style, t: &crate::theme::Theme) -> (String, Style) {
    if n == 0 {
        ("·".into(), t.dim)
    } else {
        (n.to_string(), hot)
    }
}
