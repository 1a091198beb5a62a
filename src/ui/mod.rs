//! Drawing: `draw(frame, &App)` lays out the current screen; every part is
//! a widget over `&App` (no state is changed while drawing, nothing blocks).

pub(crate) mod allocator;
pub(crate) mod chart;
pub(crate) mod dialog;
pub(crate) mod events;
pub(crate) mod footer;
pub mod gpu_card;
pub(crate) mod gpu_view;
pub(crate) mod header;
pub(crate) mod help;
pub mod process_table;
pub(crate) mod process_view;
pub(crate) mod timeline;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Widget};

use crate::app::layout::{self, CardStyle, MIN_HEIGHT, MIN_WIDTH};
use crate::app::{App, Mode, Screen};

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, app: &App) {
    let area = frame.area();
    render(app, area, frame.buffer_mut());
}

/// Renders the whole screen into a buffer (what `draw` does; tests and
/// benchmarks call it directly).
pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!(
            "enlarge the terminal to at least {MIN_WIDTH}×{MIN_HEIGHT} (now {}×{})",
            area.width, area.height
        );
        ratatui::widgets::Paragraph::new(Span::styled(msg, app.theme().warn))
            .wrap(ratatui::widgets::Wrap { trim: true })
            .render(area, buf);
        return;
    }
    let replay = matches!(app.mode(), Mode::Replay(_));
    let o = layout::overview(
        (area.width, area.height),
        app.system().gpus.len(),
        app.nav().show_events,
        replay,
    );
    (&header::HeaderBar(app)).render(o.header, buf);
    let body = Rect::new(
        0,
        o.cards.y,
        area.width,
        o.footer.y - o.cards.y - o.timeline.map_or(0, |t| t.height),
    );
    match app.screen() {
        Screen::Overview | Screen::Help => overview(app, &o, buf),
        Screen::Gpu(i) => (&gpu_view::GpuView { app, index: i }).render(body, buf),
        Screen::Process(id) => (&process_view::ProcessView { app, id }).render(body, buf),
    }
    if let Some(t) = o.timeline {
        (&timeline::Timeline(app)).render(t, buf);
    }
    (&footer::Footer(app)).render(o.footer, buf);
    if app.screen() == Screen::Help {
        (&help::Help(app)).render(area, buf);
    }
    if app.dialog().is_some() {
        (&dialog::DialogBox(app)).render(area, buf);
    }
}

fn overview(app: &App, o: &layout::Overview, buf: &mut Buffer) {
    let gpus = app.system().gpus.len();
    match layout::card_style((o.header.width, o.footer.y + 1), gpus) {
        CardStyle::Full => {
            for i in 0..gpus {
                let r = Rect::new(
                    0,
                    o.cards.y + i as u16 * layout::CARD_HEIGHT,
                    o.cards.width,
                    layout::CARD_HEIGHT,
                );
                if r.bottom() > o.cards.bottom() {
                    break;
                }
                (&gpu_card::GpuCard {
                    app,
                    index: i,
                    selected: i == app.nav().selected_gpu,
                })
                    .render(r, buf);
            }
        }
        CardStyle::Compact => {
            let lines = o.cards.height.saturating_sub(1);
            // Scroll the GPU list so the selected GPU is visible.
            let first = app
                .nav()
                .selected_gpu
                .saturating_sub(lines.saturating_sub(1) as usize);
            for (row, i) in (first..gpus).take(lines as usize).enumerate() {
                let r = Rect::new(0, o.cards.y + row as u16, o.cards.width, 1);
                (&gpu_card::GpuLine {
                    app,
                    index: i,
                    selected: i == app.nav().selected_gpu,
                })
                    .render(r, buf);
            }
            if gpus > lines as usize {
                let note = format!(" {} GPUs: Tab, then ↑↓ ", gpus);
                let x = o.cards.width.saturating_sub(note.chars().count() as u16);
                buf.set_string(x, o.cards.y + lines, note, app.theme().dim);
            }
            let rule = Rect::new(0, o.cards.y + lines, o.cards.width, 1);
            Block::default()
                .borders(Borders::TOP)
                .border_style(app.theme().border)
                .render(rule, buf);
        }
    }
    (&process_table::ProcessTable(app)).render(o.table, buf);
    if let Some(e) = o.events {
        (&events::EventsPane(app)).render(e, buf);
    }
}
