//! The top line: host, driver, CUDA, time, interval, recording, pause or
//! replay position, alert count.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::app::{App, Mode};
use crate::model::EventKind;
use crate::model::units::{bytes_short, duration_short};

pub struct HeaderBar<'a>(pub &'a App);

impl Widget for &HeaderBar<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.0;
        let t = &app.theme;
        let sys = &app.system;
        let interval = app.history.interval_ms();
        let every = if interval.is_multiple_of(1000) {
            format!("{}s", interval / 1000)
        } else {
            format!("{interval}ms")
        };
        let mut left = vec![
            Span::styled(" vramwatch ", t.title),
            Span::styled(sys.host.clone(), t.accent),
            Span::raw("  "),
            Span::styled("driver ", t.dim),
            Span::raw(sys.driver_version.clone().unwrap_or_else(|| "N/A".into())),
            Span::styled("  CUDA ", t.dim),
            Span::raw(sys.cuda_version.clone().unwrap_or_else(|| "N/A".into())),
            Span::raw("  "),
            Span::styled(app.clock.hms(app.shown_ms()), t.text),
            Span::styled(format!("  every {every}"), t.dim),
        ];
        if sys.source != "nvml" {
            left.push(Span::styled(format!("  [{}]", sys.source), t.dim));
        }
        let mut right: Vec<Span> = Vec::new();
        if let Some(r) = &app.recording {
            let mark = if r.warning.is_some() {
                "● REC ⚠"
            } else {
                "● REC"
            };
            right.push(Span::styled(
                format!("{mark} {}", bytes_short(r.bytes)),
                t.rec,
            ));
            right.push(Span::raw("  "));
        }
        match app.mode {
            Mode::Replay(p) => {
                let state = if p.playing { "▶" } else { "❚❚" };
                let (pos, len) = app.replay_position().unwrap_or((0, 0));
                right.push(Span::styled(
                    format!("{state} {}× {}/{}", p.speed, pos + 1, len),
                    t.paused,
                ));
                right.push(Span::raw("  "));
            }
            Mode::Live if app.paused() => {
                let behind = app.now_ms.saturating_sub(app.shown_ms()) / 1000;
                right.push(Span::styled(
                    format!("❚❚ PAUSED −{}", duration_short(behind)),
                    t.paused,
                ));
                right.push(Span::raw("  "));
            }
            Mode::Live => {}
        }
        let alerts = app
            .events
            .iter()
            .filter(|e| {
                matches!(
                    e.kind,
                    EventKind::Alert
                        | EventKind::SuspectedOom
                        | EventKind::Xid
                        | EventKind::GpuLost
                )
            })
            .count();
        if alerts > 0 {
            right.push(Span::styled(format!("⚠ {alerts} "), t.warn));
        }
        let right_w: usize = right.iter().map(|s| s.width()).sum();
        Line::from(left).render(area, buf);
        if right_w as u16 <= area.width {
            let r = Rect::new(
                area.x + area.width - right_w as u16,
                area.y,
                right_w as u16,
                1,
            );
            Line::from(right).render(r, buf);
        }
    }
}
