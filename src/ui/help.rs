//! The help screen: every key, generated from the key map, and what the
//! marks on screen mean.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::app::App;
use crate::app::help::{FIXED, LEGEND, key_lines, max_scroll, shown_lines};
use crate::app::layout::centered;

pub struct Help<'a>(pub &'a App);

impl Widget for &Help<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.0;
        let t = app.theme();
        let keys = key_lines(&app.config().keys);
        let key_w = keys
            .iter()
            .map(|(k, _)| k.chars().count())
            .max()
            .unwrap_or(8)
            .min(24);
        let mut lines: Vec<Line> = keys
            .into_iter()
            .map(|(k, d)| {
                Line::from(vec![
                    Span::styled(format!(" {k:>key_w$}  "), t.accent),
                    Span::raw(d),
                ])
            })
            .collect();
        for (k, d) in FIXED {
            lines.push(Line::from(vec![
                Span::styled(format!(" {k:>key_w$}  "), t.accent),
                Span::raw(d),
            ]));
        }
        lines.push(Line::raw(""));
        for (sym, what) in LEGEND {
            lines.push(Line::from(vec![
                Span::styled(format!(" {sym:>key_w$}  "), t.label),
                Span::styled(what, t.dim),
            ]));
        }
        let h = (shown_lines(lines.len(), area.height) + 2).min(area.height);
        let mut w = (key_w as u16 + 62).min(area.width);
        // No sliver of the screen behind at the edge.
        if area.width - w < 4 {
            w = area.width;
        }
        let r = centered(area, w, h);
        Clear.render(r, buf);
        let total = lines.len() as u16;
        let shown = r.height.saturating_sub(2);
        let scroll = app.help_scroll().min(max_scroll(lines.len(), area.height));
        let more = if scroll + shown < total {
            " ↓ more "
        } else {
            ""
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(t.focus_border)
            .title(Span::styled(" help · Esc or ? to close ", t.title))
            .title_bottom(Line::from(Span::styled(more, t.dim)).right_aligned());
        Paragraph::new(lines)
            .block(block)
            .scroll((scroll, 0))
            .render(r, buf);
    }
}
