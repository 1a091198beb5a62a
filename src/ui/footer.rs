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
            // Longer than the line: it says where it was cut.
            let text = crate::app::cmdline::cut(&m.text, (area.width as usize).saturating_sub(1));
            Line::from(Span::styled(format!(" {text}"), style)).render(area, buf);
            return;
        }
        let keys = &app.config().keys;
        let first = |a: Action| {
            keys.keys(a)
                .first()
                .map(|k| k.to_string())
                .unwrap_or_default()
        };
        // (keys, what, how much it matters): when the line is short the
        // least goes first, whole, never cut mid-word.
        let mut hints: Vec<(String, &str, u8)> = vec![
            (first(Action::Quit), "quit", 10),
            (first(Action::Help), "help", 10),
        ];
        match app.screen() {
            Screen::Overview => {
                hints.push((first(Action::Filter), "filter", 7));
                hints.push((first(Action::SortNext), "sort", 6));
                hints.push((first(Action::Enter), "details", 8));
                hints.push((first(Action::NextPane), "GPUs/procs", 3));
                hints.push((first(Action::Events), "events", 4));
            }
            Screen::Process(_) => {
                hints.push((first(Action::Back), "back", 9));
                if !app.settings().read_only && matches!(app.mode(), Mode::Live) {
                    hints.push((first(Action::Terminate), "terminate", 6));
                    hints.push((first(Action::Kill), "kill", 6));
                }
            }
            Screen::Gpu(_) => {
                hints.push((first(Action::Back), "back", 9));
                hints.push((
                    format!("{}/{}", first(Action::Up), first(Action::Down)),
                    "GPU",
                    7,
                ));
            }
            Screen::Help => {}
        }
        match app.mode() {
            Mode::Replay(p) => {
                let play = if p.playing { "pause" } else { "play" };
                hints.push((first(Action::Pause), play, 8));
                hints.push((
                    format!("{}{}", first(Action::StepBack), first(Action::StepForward)),
                    "step",
                    5,
                ));
                hints.push((
                    format!("{}{}", first(Action::PrevEvent), first(Action::NextEvent)),
                    "events",
                    4,
                ));
                hints.push((
                    format!("{}{}", first(Action::Faster), first(Action::Slower)),
                    "speed",
                    2,
                ));
            }
            Mode::Live => {
                hints.push((
                    first(Action::Pause),
                    if app.paused() { "live" } else { "pause" },
                    8,
                ));
                if app.paused() {
                    hints.push((
                        format!("{}{}", first(Action::StepBack), first(Action::StepForward)),
                        "scrub",
                        5,
                    ));
                }
                hints.push((
                    first(Action::Record),
                    if app.recording().is_some() {
                        "stop rec"
                    } else {
                        "record"
                    },
                    if app.recording().is_some() { 7 } else { 2 },
                ));
            }
        }
        let mut groups: Vec<(u8, Vec<Span<'static>>)> = vec![(11, vec![Span::raw(" ")])];
        for (k, what, keep) in hints {
            groups.push((
                keep,
                vec![
                    Span::styled(k, t.accent),
                    Span::styled(format!(" {what}  "), t.dim),
                ],
            ));
        }
        if !app.table().filter.is_empty() {
            groups.push((
                11,
                vec![Span::styled(
                    format!("filter: {}", app.table().filter),
                    t.warn,
                )],
            ));
        }
        let spans = crate::ui::fit(groups, area.width as usize);
        Line::from(spans).render(area, buf);
    }
}
