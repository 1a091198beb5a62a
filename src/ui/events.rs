//! The events pane: process starts and exits, suspected OOMs, alerts, XIDs.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use crate::app::App;
use crate::model::EventKind;

pub struct EventsPane<'a>(pub &'a App);

/// A short tag per kind.
pub(crate) fn tag(kind: EventKind) -> &'static str {
    match kind {
        EventKind::ProcessStarted => "start",
        EventKind::ProcessExited => "exit",
        EventKind::SuspectedOom => "OOM?",
        EventKind::ThresholdCrossed => "level",
        EventKind::Alert => "ALERT",
        EventKind::GpuLost => "LOST",
        EventKind::Xid => "XID",
        EventKind::Note => "note",
    }
}

impl Widget for &EventsPane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.0;
        let t = app.theme();
        let block = Block::default()
            .borders(Borders::TOP)
            .border_style(t.border)
            .title(Span::styled(" events ", t.title));
        let inner = block.inner(area);
        block.render(area, buf);
        let upto = app.shown_ms();
        let lines: Vec<Line> = app
            .events()
            .iter()
            .rev()
            .filter(|e| e.t_ms <= upto)
            .take(inner.height as usize)
            .map(|e| {
                let style = match e.kind {
                    EventKind::SuspectedOom
                    | EventKind::Alert
                    | EventKind::GpuLost
                    | EventKind::Xid => t.crit,
                    EventKind::ThresholdCrossed => t.warn,
                    _ => t.dim,
                };
                Line::from(vec![
                    Span::styled(format!(" {} ", app.clock().hms(e.t_ms)), t.dim),
                    Span::styled(format!("{:<5} ", tag(e.kind)), style),
                    Span::raw(e.message.clone()),
                ])
            })
            .collect();
        if lines.is_empty() {
            Paragraph::new(Span::styled(" no events yet", t.dim)).render(inner, buf);
        } else {
            Paragraph::new(lines).render(inner, buf);
        }
    }
}
