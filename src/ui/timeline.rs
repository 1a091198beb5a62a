//! The replay timeline: position in the recording, speed, and markers for
//! events (process start/exit, suspected OOM, alerts).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::app::{App, Mode};
use crate::model::EventKind;

pub struct Timeline<'a>(pub &'a App);

/// The marker for an event kind on the timeline (the strongest wins).
pub(crate) fn marker(kind: EventKind) -> (char, u8) {
    match kind {
        EventKind::SuspectedOom => ('✖', 5),
        EventKind::Alert | EventKind::GpuLost | EventKind::Xid => ('!', 4),
        EventKind::ThresholdCrossed => ('▲', 3),
        EventKind::ProcessExited => ('╵', 2),
        EventKind::ProcessStarted => ('╷', 1),
        EventKind::Note => ('·', 0),
    }
}

impl Widget for &Timeline<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.0;
        let t = app.theme();
        let span = app.replay().as_ref().and_then(|r| r.span()).or_else(|| {
            let first = app.history().time_at(app.history().first_slot())?;
            let last = app.history().time_at(app.history().last_slot()?)?;
            Some((first, last))
        });
        let Some((first_t, last_t)) = span else {
            return;
        };
        let (playing, speed) = match app.mode() {
            Mode::Replay(p) => (p.playing, p.speed),
            Mode::Live => (false, 1),
        };
        let label_l = format!(
            " {} {:>2}× {} ",
            if playing { "▶" } else { "❚❚" },
            speed,
            app.clock().hms(app.shown_ms())
        );
        let label_r = format!(" {}–{} ", app.clock().hms(first_t), app.clock().hms(last_t));
        let bar_x = area.x + label_l.chars().count() as u16;
        let bar_w = area
            .width
            .saturating_sub(label_l.chars().count() as u16 + label_r.chars().count() as u16);
        if bar_w < 4 || area.height < 2 {
            return;
        }
        let span = (last_t - first_t).max(1) as f64;
        let col = |tm: u64| -> u16 {
            (((tm.saturating_sub(first_t)) as f64 / span) * (bar_w - 1) as f64).round() as u16
        };
        // Line 1: event markers.
        let mut marks: Vec<(char, u8)> = vec![(' ', 0); bar_w as usize];
        for e in app.events() {
            if e.t_ms < first_t || e.t_ms > last_t {
                continue;
            }
            let c = col(e.t_ms) as usize;
            let m = marker(e.kind);
            if marks[c].0 == ' ' || m.1 > marks[c].1 {
                marks[c] = m;
            }
        }
        let marks_line: String = marks.iter().map(|m| m.0).collect();
        buf.set_string(bar_x, area.y, marks_line, t.warn);
        // Line 2: the bar with the position.
        let pos = col(app.shown_ms()) as usize;
        let bar: String = (0..bar_w as usize)
            .map(|i| if i < pos { '━' } else { '─' })
            .collect();
        Line::from(Span::styled(label_l, t.paused))
            .render(Rect::new(area.x, area.y + 1, area.width, 1), buf);
        buf.set_string(bar_x, area.y + 1, bar, t.accent);
        buf.set_string(bar_x + pos as u16, area.y + 1, "●", t.peak_mark);
        buf.set_string(bar_x + bar_w, area.y + 1, label_r, t.dim);
    }
}
