//! The events pane: process starts and exits, suspected OOMs, alerts,
//! XIDs, newest first. It scrolls; with the arrows in it (`e` opens it
//! with them, Tab moves them there) an event is selected and Enter shows
//! its moment. Events after the moment on screen (paused, a replay) are
//! dimmed and marked `›`.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use crate::app::{App, Pane};
use crate::model::EventKind;

pub(crate) use crate::app::events::tag;

pub struct EventsPane<'a>(pub &'a App);

impl Widget for &EventsPane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.0;
        let t = app.theme();
        let focus = app.nav().focus == Pane::Events;
        let n = app.events().len();
        let view = app.events_view();
        // Lines below the rule, and the first event on them.
        let h = area.height.saturating_sub(1) as usize;
        let offset = view.offset.min(n.saturating_sub(h));
        let shown = app.shown_ms();
        let mut title = vec![Span::styled(" events ", t.title)];
        if n > 0 {
            let hint = if focus {
                format!("{n} · ↑↓ select · Enter go there ")
            } else {
                format!("{n} · Tab to select ")
            };
            title.push(Span::styled(hint, t.dim));
        }
        // Newer events above the view (scrolled, or the selection held on
        // its event while new ones came in on top): said, in red when one
        // of them is an alert, an OOM, a lost GPU or an XID.
        if offset > 0 {
            let loud = (0..offset)
                .filter_map(|i| app.event_at(i))
                .any(|e| is_loud(e.kind) && e.t_ms <= shown);
            title.push(Span::styled(
                format!("↑ {offset} newer "),
                if loud { t.crit } else { t.warn },
            ));
        }
        let block = Block::default()
            .borders(Borders::TOP)
            .border_style(if focus { t.focus_border } else { t.border })
            .title(Line::from(title));
        let inner = block.inner(area);
        block.render(area, buf);
        if n == 0 {
            // Shown unasked, the pane says what will come there; indented
            // as the events are.
            let text = "no events yet: processes starting and exiting, alerts, leak flags and forecasts are listed here as they come";
            let area = Rect::new(
                inner.x + 1,
                inner.y,
                inner.width.saturating_sub(1),
                inner.height,
            );
            Paragraph::new(Span::styled(text, t.dim))
                .wrap(ratatui::widgets::Wrap { trim: true })
                .render(area, buf);
            return;
        }
        let all = app.all_commands();
        for (line, i) in (offset..n).take(h).enumerate() {
            let Some(e) = app.event_at(i) else {
                break;
            };
            let later = e.t_ms > shown;
            let style = match e.kind {
                _ if later => t.dim,
                k if is_loud(k) => t.crit,
                EventKind::ThresholdCrossed => t.warn,
                _ => t.dim,
            };
            let text = if later { t.dim } else { t.text };
            let row = Rect::new(inner.x, inner.y + line as u16, inner.width, 1);
            // 16 cells of mark, time and tag before the message.
            let room = (inner.width as usize).saturating_sub(16);
            Line::from(vec![
                Span::styled(if later { "›" } else { " " }, t.dim),
                Span::styled(format!("{} ", app.clock().hms(e.t_ms)), t.dim),
                Span::styled(format!("{:<5} ", tag(e.kind)), style),
                Span::styled(message(app, e, &all, room), text),
            ])
            .render(row, buf);
            if focus && view.selected == Some(i) {
                buf.set_style(row, t.selected);
            }
        }
        if n > h && inner.width > 12 {
            let label = format!(" {}–{} of {n} ", offset + 1, (offset + h).min(n));
            let x = area.x + area.width.saturating_sub(label.chars().count() as u16);
            buf.set_string(x, area.y, label, t.dim);
        }
    }
}

/// The kinds shown in red: alerts, suspected OOMs, lost GPUs, XIDs.
fn is_loud(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::SuspectedOom | EventKind::Alert | EventKind::GpuLost | EventKind::Xid
    )
}

/// The event's message in `room` cells; a process's command at its end is
/// abbreviated as the table does (`app::cmdline`), so events about
/// processes with alike commands stay apart, and what is still too long
/// ends in "…".
fn message(app: &App, e: &crate::model::Event, all: &[&str], room: usize) -> String {
    crate::app::cmdline::cut(&abbreviated(app, e, all, room), room)
}

fn abbreviated(app: &App, e: &crate::model::Event, all: &[&str], room: usize) -> String {
    if e.message.chars().count() <= room {
        return e.message.clone();
    }
    let label = e.pid.and_then(|pid| {
        app.history()
            .processes()
            .find(|s| s.id.key.pid == pid && e.gpu.is_none_or(|g| g == s.id.gpu))
            .map(|s| s.facts.label())
    });
    match label.and_then(|l| e.message.strip_suffix(l).map(|head| (head, l))) {
        Some((head, l)) => {
            let left = room.saturating_sub(head.chars().count());
            let short = crate::app::cmdline::abbreviate_among(&[l], all, left.max(12));
            format!("{head}{}", short.first().map_or("", String::as_str))
        }
        None => e.message.clone(),
    }
}
