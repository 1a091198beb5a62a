//! The bottom line: the newest message, the filter being typed, or key hints
//! taken from the key map.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::app::{App, Mode, Screen};
use crate::config::keys::Action;

/// A message stays this long.
const MESSAGE_MS: u64 = 6_000;

pub struct Footer<'a>(pub &'a App);

impl Widget for &Footer<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.0;
        let t = app.theme();
        if app.table().filter_editing {
            Line::from(vec![
                Span::styled(" filter: ", t.accent),
                Span::raw(app.table().filter.clone()),
                Span::styled("█", t.accent),
                Span::styled("   Enter keep · Esc clear", t.dim),
            ])
            .render(area, buf);
            return;
        }
        if let Some(m) = &app.message()
            && app.now_ms().saturating_sub(m.t_ms) <= MESSAGE_MS
        {
            let style = if m.ok { t.ok } else { t.warn };
            Line::from(Span::styled(format!(" {}", m.text), style)).render(area, buf);
            return;
        }
        let keys = &app.config().keys;
        let first = |a: Action| {
            keys.keys(a)
                .first()
                .map(|k| k.to_string())
                .unwrap_or_default()
        };
        let mut hints: Vec<(String, &str)> =
            vec![(first(Action::Quit), "quit"), (first(Action::Help), "help")];
        match app.screen() {
            Screen::Overview => {
                hints.push((first(Action::Filter), "filter"));
                hints.push((first(Action::SortNext), "sort"));
                hints.push((first(Action::Enter), "details"));
                hints.push((first(Action::NextPane), "GPUs/procs"));
                hints.push((first(Action::Events), "events"));
            }
            Screen::Process(_) => {
                hints.push((first(Action::Back), "back"));
                if !app.settings().read_only && matches!(app.mode(), Mode::Live) {
                    hints.push((first(Action::Terminate), "terminate"));
                    hints.push((first(Action::Kill), "kill"));
                }
            }
            Screen::Gpu(_) => {
                hints.push((first(Action::Back), "back"));
                hints.push((
                    format!("{}/{}", first(Action::Up), first(Action::Down)),
                    "GPU",
                ));
            }
            Screen::Help => {}
        }
        match app.mode() {
            Mode::Replay(_) => {
                hints.push((first(Action::Pause), "play"));
                hints.push((
                    format!("{}{}", first(Action::StepBack), first(Action::StepForward)),
                    "step",
                ));
                hints.push((
                    format!("{}{}", first(Action::PrevEvent), first(Action::NextEvent)),
                    "events",
                ));
                hints.push((
                    format!("{}{}", first(Action::Faster), first(Action::Slower)),
                    "speed",
                ));
            }
            Mode::Live => {
                hints.push((
                    first(Action::Pause),
                    if app.paused() { "live" } else { "pause" },
                ));
                if app.paused() {
                    hints.push((
                        format!("{}{}", first(Action::StepBack), first(Action::StepForward)),
                        "scrub",
                    ));
                }
                hints.push((
                    first(Action::Record),
                    if app.recording().is_some() {
                        "stop rec"
                    } else {
                        "record"
                    },
                ));
            }
        }
        let mut spans = vec![Span::raw(" ")];
        for (k, what) in hints {
            spans.push(Span::styled(k, t.accent));
            spans.push(Span::styled(format!(" {what}  "), t.dim));
        }
        if !app.table().filter.is_empty() {
            spans.push(Span::styled(
                format!("filter: {}", app.table().filter),
                t.warn,
            ));
        }
        Line::from(spans).render(area, buf);
    }
}
