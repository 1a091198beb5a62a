//! Where things go, as pure functions of the terminal size: the drawing
//! code and `App::update` (paging, mouse clicks) share them.

use ratatui::layout::Rect;

/// Below this the dashboard asks for a larger terminal.
pub const MIN_WIDTH: u16 = 50;
pub const MIN_HEIGHT: u16 = 12;

/// Lines of a full GPU card, borders included.
pub const CARD_HEIGHT: u16 = 6;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CardStyle {
    /// A bordered card of four lines per GPU.
    Full,
    /// One line per GPU.
    Compact,
}

/// Full cards while they take at most 40 % of the height.
pub fn card_style(size: (u16, u16), gpus: usize) -> CardStyle {
    let (_, h) = size;
    if gpus as u32 * CARD_HEIGHT as u32 * 5 <= h as u32 * 2 {
        CardStyle::Full
    } else {
        CardStyle::Compact
    }
}

/// The parts of the overview.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overview {
    pub header: Rect,
    pub cards: Rect,
    /// The process table, its header row included.
    pub table: Rect,
    pub events: Option<Rect>,
    /// The replay timeline.
    pub timeline: Option<Rect>,
    pub footer: Rect,
}

/// Lays out the overview for `size`.
pub fn overview(size: (u16, u16), gpus: usize, show_events: bool, replay: bool) -> Overview {
    let (w, h) = size;
    let header = Rect::new(0, 0, w, 1.min(h));
    let footer = Rect::new(0, h.saturating_sub(1), w, 1.min(h));
    let timeline_h = if replay { 2 } else { 0 };
    let card_lines = match card_style(size, gpus) {
        CardStyle::Full => gpus as u16 * CARD_HEIGHT,
        // Compact lines plus a rule under them.
        CardStyle::Compact => (gpus as u16).min(h / 3) + 1,
    };
    let mut y = 1;
    let cards = Rect::new(0, y, w, card_lines.min(h.saturating_sub(3)));
    y += cards.height;
    let bottom = h.saturating_sub(1 + timeline_h);
    let rest = bottom.saturating_sub(y);
    let events_h = if show_events {
        (rest / 3).max(3).min(rest)
    } else {
        0
    };
    let table = Rect::new(0, y, w, rest.saturating_sub(events_h));
    let events = show_events.then(|| Rect::new(0, y + table.height, w, events_h));
    let timeline = replay.then(|| Rect::new(0, bottom, w, timeline_h));
    Overview {
        header,
        cards,
        table,
        events,
        timeline,
        footer,
    }
}

/// The rows of the table body (below its header row).
pub fn table_body(size: (u16, u16), gpus: usize, show_events: bool, replay: bool) -> Rect {
    let t = overview(size, gpus, show_events, replay).table;
    Rect::new(t.x, t.y + 1, t.width, t.height.saturating_sub(1))
}

/// How many process rows fit.
pub fn table_rows(size: (u16, u16), gpus: usize, show_events: bool, replay: bool) -> usize {
    table_body(size, gpus, show_events, replay).height as usize
}

/// A centred box of at most `w`×`h` inside `area`.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_gpus_get_full_cards_many_get_lines() {
        assert_eq!(card_style((120, 40), 1), CardStyle::Full);
        assert_eq!(card_style((200, 60), 4), CardStyle::Full);
        assert_eq!(card_style((80, 24), 4), CardStyle::Compact);
        assert_eq!(card_style((200, 60), 8), CardStyle::Compact);
    }

    #[test]
    fn parts_tile_the_screen() {
        for (size, gpus, ev, replay) in [
            ((80, 24), 4, false, false),
            ((120, 40), 1, true, false),
            ((200, 60), 8, true, true),
            ((50, 12), 8, false, true),
        ] {
            let o = overview(size, gpus, ev, replay);
            let mut used = o.header.height + o.cards.height + o.table.height + o.footer.height;
            used += o.events.map_or(0, |r| r.height) + o.timeline.map_or(0, |r| r.height);
            assert_eq!(used, size.1, "{size:?} {gpus} {ev} {replay}: {o:?}");
            assert!(o.table.height >= 2, "{size:?}: table too small {o:?}");
        }
    }

    #[test]
    fn centred_boxes_fit() {
        let r = centered(Rect::new(0, 0, 80, 24), 100, 10);
        assert_eq!(r, Rect::new(0, 7, 80, 10));
    }
}
