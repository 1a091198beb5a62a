//! The confirm dialog before a signal is sent: it names PID, user, command
//! and age, so the wrong process is not killed by a stale row.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use crate::app::layout::centered;
use crate::app::{App, Dialog};
use crate::model::units::duration_short;

pub struct DialogBox<'a>(pub &'a App);

impl Widget for &DialogBox<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.0;
        let t = app.theme();
        let Some(Dialog::ConfirmSignal {
            id,
            signal,
            user,
            command,
            age_s,
        }) = &app.dialog()
        else {
            return;
        };
        let lines = vec![
            Line::from(vec![
                Span::raw("Send "),
                Span::styled(signal.name(), t.crit),
                Span::raw(format!(" to PID {} on GPU {}?", id.key.pid, id.gpu)),
            ]),
            Line::raw(""),
            Line::from(vec![
                Span::styled("user     ", t.label),
                Span::raw(user.clone()),
            ]),
            Line::from(vec![
                Span::styled("running  ", t.label),
                Span::raw(duration_short(*age_s)),
            ]),
            Line::from(vec![
                Span::styled("command  ", t.label),
                Span::raw(command.clone()),
            ]),
            Line::raw(""),
            Line::from(vec![
                Span::styled(" y ", t.selected),
                Span::raw(" send    "),
                Span::styled(" n ", t.selected),
                Span::raw(" cancel"),
            ]),
        ];
        let r = centered(area, 70, 11);
        Clear.render(r, buf);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(t.crit)
            .title(Span::styled(format!(" {} ", signal.name()), t.title));
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false })
            .render(r, buf);
    }
}
