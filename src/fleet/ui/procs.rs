//! Process tables: the fleet's biggest processes, and a host's in the
//! drill-down. Columns as the local dashboard names them.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use super::{put, titles, visible};
use crate::app::cmdline::cut;
use crate::fleet::app::{FleetApp, Table};
use crate::fleet::layout::proc_columns;
use crate::fleet::model::ProcRow;
use crate::fleet::table::ProcCol;
use crate::model::units::{MIB, bytes_short, rate_short};

/// The processes screen: the `--top` biggest across the fleet.
pub(super) fn render_fleet(app: &FleetApp, area: Rect, buf: &mut Buffer) {
    let t = app.theme();
    let rows = app.proc_rows();
    table(app, area, &rows, Table::Procs, buf);
    // What the list covers, at the right of the header row.
    let without = app.hosts().iter().filter(|h| !h.process_data).count();
    let mut note = format!(" top {} by memory ", app.settings().top);
    if without > 0 {
        note = format!(
            " top {} by memory · {without} host{} without process data ",
            app.settings().top,
            if without == 1 { "" } else { "s" }
        );
    }
    if rows.len() <= area.height.saturating_sub(1) as usize {
        let w = note.chars().count() as u16;
        if area.width > w + 40 {
            buf.set_string(area.right() - w, area.y, note, t.dim);
        }
    }
}

/// A process table over `rows` (table `which`: its selection and filter).
pub(super) fn table(app: &FleetApp, area: Rect, rows: &[&ProcRow], which: Table, buf: &mut Buffer) {
    let t = app.theme();
    if area.height == 0 {
        return;
    }
    let cols = proc_columns(area.width, which == Table::Procs);
    let sort = app.proc_sort();
    let heads: Vec<_> = cols
        .iter()
        .map(|(c, w)| (c.spec().title, *w, c.spec().right, *c == sort.column))
        .collect();
    titles(buf, area, &heads, t, Some(sort.descending));
    if rows.is_empty() {
        let msg = if app.nav(which).filter.is_empty() {
            if app.status().last_ok_ms.is_some() {
                " no processes reported"
            } else {
                " waiting for Prometheus …"
            }
        } else {
            " no process matches the filter"
        };
        put(buf, (area.x, area.y + 1), area.width, msg, false, t.dim);
        return;
    }
    let nav = app.nav(which);
    let sel = app.selected(which);
    let body = area.height.saturating_sub(1) as usize;
    for (line, i, p) in visible(rows, nav.offset, body) {
        let y = area.y + 1 + line;
        let mut base = t.text;
        if Some(i) == sel {
            base = base.patch(t.selected);
        }
        buf.set_style(Rect::new(area.x, y, area.width, 1), base);
        let mut x = area.x;
        for &(c, w) in &cols {
            let (mut text, st) = cell(app, p, c);
            if matches!(c, ProcCol::Host | ProcCol::User | ProcCol::Command) {
                // The last column ends at the screen's edge.
                text = cut(&text, w.min(area.right().saturating_sub(x)) as usize);
            }
            put(buf, (x, y), w, &text, c.spec().right, base.patch(st));
            x += w + 1;
        }
    }
    if rows.len() > body && area.width > 12 {
        let label = format!(" {}/{} ", sel.map_or(0, |s| s + 1), rows.len());
        let x = area.right().saturating_sub(label.len() as u16);
        buf.set_string(x, area.y, label, t.dim);
    }
}

fn cell(app: &FleetApp, p: &ProcRow, c: ProcCol) -> (String, Style) {
    let t = app.theme();
    let plain = |s: String| (s, Style::default());
    match c {
        ProcCol::Host => plain(p.host.clone()),
        ProcCol::Gpu => plain(p.gpu.to_string()),
        ProcCol::Pid => plain(p.pid.to_string()),
        ProcCol::User => plain(if p.user.is_empty() {
            "?".into()
        } else {
            p.user.clone()
        }),
        ProcCol::Memory => plain(bytes_short(p.mem_bytes)),
        ProcCol::Growth => {
            let g = p.growth_bps.unwrap_or(0.0);
            let rate = rate_short(g.max(0.0));
            let rate = rate.trim_start_matches('+');
            let hot = if p.leak { t.crit } else { t.warn };
            match p.growth_bps {
                Some(g) if g >= MIB as f64 => (format!("▲{rate}"), hot),
                Some(g) if g <= -(MIB as f64) => {
                    (format!("▼{}", rate_short(g).trim_start_matches('-')), t.ok)
                }
                Some(_) => ("─".into(), t.dim),
                None => plain(String::new()),
            }
        }
        ProcCol::Leak if p.leak => ("LEAK".into(), t.crit),
        ProcCol::Leak => plain(String::new()),
        ProcCol::Command => plain(p.command.clone()),
    }
}
