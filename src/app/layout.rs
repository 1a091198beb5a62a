//! Where things go, as pure functions of the terminal size: the drawing
//! code and `App::update` (paging, mouse clicks) share them.

use ratatui::layout::Rect;

use crate::config::Column;

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

// ---- the process table's columns ------------------------------------------

/// (fixed width, drop priority: higher goes first when narrow).
fn spec(c: Column) -> (u16, u8) {
    match c {
        Column::Gpu => (3, 1),
        Column::Pid => (7, 0),
        Column::User => (9, 3),
        Column::Container => (12, 7),
        Column::Kind => (4, 8),
        Column::Memory => (8, 0),
        Column::MemoryPct => (5, 5),
        Column::Trend => (12, 2),
        Column::Peak => (7, 4),
        Column::Alloc => (13, 7),
        Column::Sm => (4, 3),
        Column::Cpu => (5, 6),
        Column::Rss => (7, 6),
        Column::Age => (6, 5),
        Column::Command => (0, 0),
    }
}

/// The command column gets at least a quarter of the width (12..=40).
pub fn command_width(width: u16) -> u16 {
    (width / 4).clamp(12, 40)
}

/// The columns `s`, `<` and `>` cycle through: those shown at `width`, so
/// the sort never lands on a column the user cannot see.
pub fn sortable_columns(configured: &[Column], width: u16) -> Vec<Column> {
    fit_columns(configured, width)
        .into_iter()
        .filter(|c| *c != Column::MemoryPct)
        .collect()
}

/// Columns that fit in `width`, in configured order; COMMAND takes the rest.
pub fn fit_columns(configured: &[Column], width: u16) -> Vec<Column> {
    let mut cols: Vec<Column> = configured.to_vec();
    let command_min = command_width(width);
    let need = |cols: &[Column]| -> u16 {
        cols.iter().map(|c| spec(*c).0 + 1).sum::<u16>()
            + if cols.contains(&Column::Command) {
                command_min
            } else {
                0
            }
    };
    while need(&cols) > width {
        let Some((i, _)) = cols
            .iter()
            .enumerate()
            .filter(|(_, c)| spec(**c).1 > 0)
            .max_by_key(|(i, c)| (spec(**c).1, *i))
        else {
            break;
        };
        cols.remove(i);
    }
    cols
}

/// (x, width) of each column within a row `width` wide; COMMAND takes what
/// is left. Laid out by hand: the table is drawn every frame and a generic
/// table widget's layout solving cost most of the frame.
pub fn column_spans(cols: &[Column], width: u16) -> Vec<(u16, u16)> {
    let fixed: u16 = cols
        .iter()
        .filter(|c| **c != Column::Command)
        .map(|c| spec(*c).0 + 1)
        .sum();
    let mut x = 0u16;
    cols.iter()
        .map(|c| {
            let w = match c {
                Column::Command => width.saturating_sub(fixed).max(1),
                c => spec(*c).0,
            };
            let span = (x, w.min(width.saturating_sub(x)));
            x = x.saturating_add(w + 1).min(width);
            span
        })
        .collect()
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

    #[test]
    fn narrow_tables_drop_low_priority_columns_first() {
        let all = Column::ALL.to_vec();
        let wide = fit_columns(&all, 200);
        assert_eq!(wide, all);
        let narrow = fit_columns(&all, 80);
        assert!(narrow.contains(&Column::Pid) && narrow.contains(&Column::Memory));
        assert!(narrow.contains(&Column::Command) && narrow.contains(&Column::Trend));
        assert!(!narrow.contains(&Column::Kind) && !narrow.contains(&Column::Container));
        let need: u16 = narrow.iter().map(|c| spec(*c).0 + 1).sum::<u16>() + command_width(80);
        assert!(need <= 80);
        // Never drops the essentials, even when nothing fits.
        let tiny = fit_columns(&all, 10);
        assert!(tiny.contains(&Column::Pid) && tiny.contains(&Column::Memory));
    }

    #[test]
    fn columns_are_laid_out_left_to_right_with_the_command_last() {
        let cols = [Column::Gpu, Column::Pid, Column::Command];
        assert_eq!(column_spans(&cols, 40), vec![(0, 3), (4, 7), (12, 28)]);
        // Too narrow: nothing runs past the edge.
        for (x, w) in column_spans(&Column::ALL, 30) {
            assert!(x + w <= 30);
        }
    }
}
