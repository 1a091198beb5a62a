//! The top line: host, driver, CUDA, time, interval, the exporter's
//! address, recording, pause or replay position, alert count.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::app::{App, Mode};
use crate::model::units::{bytes_short, duration_short};

pub struct HeaderBar<'a>(pub &'a App);

impl Widget for &HeaderBar<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.0;
        let t = app.theme();
        let sys = &app.system();
        let interval = app.history().interval_ms();
        let every = if interval.is_multiple_of(1000) {
            format!("{}s", interval / 1000)
        } else {
            format!("{interval}ms")
        };
        let driver = sys.driver_version.clone().unwrap_or_else(|| "N/A".into());
        let cuda = sys.cuda_version.clone().unwrap_or_else(|| "N/A".into());
        // Left-side groups in screen order; when the line is short, the
        // lowest `keep` goes first (driver, then CUDA, then the interval).
        let mut groups: Vec<(u8, Vec<Span>)> = vec![
            (
                9,
                vec![
                    Span::styled(" vramwatch ", t.title),
                    Span::styled(sys.host.clone(), t.accent),
                ],
            ),
            (1, vec![Span::styled("  driver ", t.dim), Span::raw(driver)]),
            (2, vec![Span::styled("  CUDA ", t.dim), Span::raw(cuda)]),
            (
                8,
                vec![Span::styled(
                    format!("  {}", app.clock().hms(app.shown_ms())),
                    t.text,
                )],
            ),
            (3, vec![Span::styled(format!("  every {every}"), t.dim)]),
        ];
        if sys.source != "nvml" {
            groups.push((4, vec![Span::styled(format!("  [{}]", sys.source), t.dim)]));
        }
        let mut right: Vec<Span> = Vec::new();
        if let Some(addr) = &app.settings().serving {
            right.push(Span::styled(format!("serving {}", short_addr(addr)), t.ok));
            right.push(Span::raw("  "));
        }
        if let Some(r) = &app.recording() {
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
        match app.mode() {
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
                let behind = app.now_ms().saturating_sub(app.shown_ms()) / 1000;
                right.push(Span::styled(
                    format!("❚❚ PAUSED −{}", duration_short(behind)),
                    t.paused,
                ));
                right.push(Span::raw("  "));
            }
            Mode::Live => {}
        }
        let alerts = app.alerts_so_far();
        if alerts > 0 {
            right.push(Span::styled(format!("⚠ {alerts} "), t.warn));
        }
        let right_w = right.iter().map(|s| s.width()).sum::<usize>() as u16;
        let room = if right_w == 0 {
            area.width
        } else {
            area.width.saturating_sub(right_w + 1)
        };
        let width = |g: &[(u8, Vec<Span>)]| -> u16 {
            g.iter()
                .flat_map(|(_, spans)| spans)
                .map(|s| s.width() as u16)
                .sum()
        };
        while width(&groups) > room && groups.len() > 1 {
            let Some(i) = (0..groups.len()).min_by_key(|i| groups[*i].0) else {
                break;
            };
            groups.remove(i);
        }
        let left: Vec<Span> = groups.into_iter().flat_map(|(_, spans)| spans).collect();
        Line::from(left).render(Rect::new(area.x, area.y, room, 1), buf);
        if right_w > 0 && right_w <= area.width {
            let r = Rect::new(area.x + area.width - right_w, area.y, right_w, 1);
            Line::from(right).render(r, buf);
        }
    }
}

/// "0.0.0.0:9400" and "[::]:9400" as ":9400" (every address); others whole.
fn short_addr(addr: &str) -> &str {
    for any in ["0.0.0.0:", "[::]:"] {
        if let Some(port) = addr.strip_prefix(any) {
            return &addr[addr.len() - port.len() - 1..];
        }
    }
    addr
}

#[cfg(test)]
mod tests {
    #[test]
    fn any_address_is_shown_as_its_port() {
        assert_eq!(super::short_addr("0.0.0.0:9400"), ":9400");
        assert_eq!(super::short_addr("[::]:9400"), ":9400");
        assert_eq!(super::short_addr("127.0.0.1:9400"), "127.0.0.1:9400");
    }
}
