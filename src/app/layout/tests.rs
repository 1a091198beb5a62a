//! The overview's geometry: card styles, charts grown into spare rows, the
//! events pane shown unasked, what is found where it is drawn.
use super::*;

const CHART_MAX_ROWS: u16 = crate::config::DEFAULT_CHART_ROWS;

/// The pane as `overview`'s flag has it: open, or closed.
fn pane(open: bool) -> EventsPane {
    if open {
        EventsPane::Open
    } else {
        EventsPane::Closed
    }
}

#[test]
fn cards_fill_the_terminal_by_priority() {
    let style = |size, gpus, ev| card_style(size, gpus, ev, false);
    // Full cards wherever the table keeps its rows.
    assert_eq!(style((120, 40), 1, false), CardStyle::Full);
    assert_eq!(style((120, 40), 4, false), CardStyle::Full);
    assert_eq!(style((200, 60), 4, true), CardStyle::Full);
    assert_eq!(style((200, 60), 8, false), CardStyle::Full);
    // Two labelled lines next.
    assert_eq!(style((80, 24), 4, false), CardStyle::TwoLine);
    assert_eq!(style((120, 40), 8, false), CardStyle::TwoLine);
    assert_eq!(style((120, 40), 4, true), CardStyle::TwoLine);
    // One line only when space is short.
    assert_eq!(style((80, 24), 8, false), CardStyle::Compact);
    assert_eq!(style((120, 40), 16, false), CardStyle::Compact);
    for (size, gpus) in [
        ((80, 24), 4),
        ((120, 40), 4),
        ((120, 40), 8),
        ((200, 60), 8),
    ] {
        let o = overview(size, gpus, false, false);
        assert!(
            o.table.height > MIN_TABLE_ROWS,
            "{size:?} {gpus}: the table keeps its rows: {o:?}"
        );
    }
}

#[test]
fn spare_table_rows_grow_the_charts_evenly_up_to_a_cap() {
    // 4 cards, 32 body rows, 8 processes: 24 spare, 6 more rows each,
    // capped.
    assert_eq!(chart_rows(32, 8, 4, CHART_MAX_ROWS), CHART_MAX_ROWS);
    assert_eq!(chart_rows(16, 8, 4, CHART_MAX_ROWS), 3);
    // What does not split evenly stays with the table.
    assert_eq!(chart_rows(12, 8, 4, CHART_MAX_ROWS), 2);
    assert_eq!(chart_rows(12, 9, 4, CHART_MAX_ROWS), 1);
    // Two GPUs on a tall terminal: capped.
    assert_eq!(chart_rows(44, 3, 2, CHART_MAX_ROWS), CHART_MAX_ROWS);
    // No processes still leaves the "no processes" line.
    assert_eq!(chart_rows(9, 0, 1, CHART_MAX_ROWS), CHART_MAX_ROWS);
    assert_eq!(chart_rows(5, 0, 2, CHART_MAX_ROWS), 3);
    // Processes that fill the table keep every row.
    assert_eq!(chart_rows(32, 32, 4, CHART_MAX_ROWS), 1);
    assert_eq!(chart_rows(32, 500, 4, CHART_MAX_ROWS), 1);
    assert_eq!(chart_rows(32, usize::MAX, 4, CHART_MAX_ROWS), 1);
    assert_eq!(chart_rows(32, 8, 0, CHART_MAX_ROWS), 1);
}

#[test]
fn cards_grow_into_the_rows_the_table_leaves() {
    // The demo at 200×60: 4 cards and 8 processes.
    let o = overview_for((200, 60), 4, EventsPane::Closed, false, 8, CHART_MAX_ROWS);
    assert_eq!(o.chart, CHART_MAX_ROWS);
    assert_eq!(card_height(&o), CARD_HEIGHT + CHART_MAX_ROWS - 1);
    assert_eq!(
        o.cards,
        Rect::new(0, 1, 200, 4 * (CARD_HEIGHT + CHART_MAX_ROWS - 1))
    );
    assert_eq!(o.table.y, o.cards.bottom());
    // The cap leaves the rest with the table; the detail line under it.
    assert!(o.table.height > 8, "header and 8 rows: {o:?}");
    assert_eq!(o.detail, Some(Rect::new(0, o.table.bottom(), 200, 1)));
    assert!(o.table.height > 8);
    // 120×40: 4 spare rows, one each.
    let o = overview_for((120, 40), 4, EventsPane::Closed, false, 8, CHART_MAX_ROWS);
    assert_eq!((o.chart, o.table.height), (2, 1 + 8));
    // A full table keeps its rows: the same layout as without processes
    // counted.
    for (size, gpus, ev) in [((120, 40), 4, false), ((200, 60), 4, true)] {
        let plain = overview(size, gpus, ev, false);
        let body = plain.table.height as usize - 1;
        for listed in [body, body + 1, 500, usize::MAX] {
            assert_eq!(
                overview_for(size, gpus, pane(ev), false, listed, CHART_MAX_ROWS),
                plain
            );
        }
        assert_eq!(plain.chart, 1);
    }
    // Two GPUs at 200×60: capped charts, the rest stays with the table.
    let o = overview_for((200, 60), 2, EventsPane::Closed, false, 3, CHART_MAX_ROWS);
    assert_eq!(o.chart, CHART_MAX_ROWS);
    assert!(o.table.height > 1 + 3, "{o:?}");
    // The timeline does not move; the open events pane ends where it
    // did, and grows up into the rows the capped charts left.
    let plain = overview((200, 60), 4, true, true);
    let o = overview_for((200, 60), 4, EventsPane::Open, true, 2, CHART_MAX_ROWS);
    assert!(o.chart > 1);
    assert_eq!(o.timeline, plain.timeline);
    let (e, was) = (o.events.unwrap(), plain.events.unwrap());
    assert_eq!(e.bottom(), was.bottom());
    assert!(e.height > was.height, "{o:?}");
    assert_eq!(o.table.height, 1 + 2, "{o:?}");
    // Two-line and one-line cards do not grow: 80×24 is as it was.
    for (size, gpus) in [((80, 24), 4), ((80, 24), 8), ((120, 40), 8)] {
        let plain = overview(size, gpus, false, false);
        assert_ne!(plain.style, CardStyle::Full);
        assert_eq!(
            overview_for(size, gpus, EventsPane::Closed, false, 0, CHART_MAX_ROWS),
            plain
        );
    }
}

#[test]
fn grown_cards_are_found_where_they_are_drawn() {
    let o = overview_for((200, 60), 4, EventsPane::Closed, false, 8, CHART_MAX_ROWS);
    let slots = gpu_slots(&o, 4, 0);
    assert_eq!(slots.len(), 4);
    let h = CARD_HEIGHT + CHART_MAX_ROWS - 1;
    assert_eq!(slots[3].1, Rect::new(0, 1 + 3 * h, 200, h));
    assert_eq!(gpu_at(&o, 4, 0, 1 + h), Some(1));
    assert_eq!(gpu_at(&o, 4, 0, 1 + 4 * h), None);
}

#[test]
fn grown_parts_tile_the_screen() {
    use EventsPane::{Auto, Closed, Open};
    for (size, gpus, ev, replay, listed) in [
        ((120, 40), 1, Open, false, 0),
        ((200, 60), 4, Closed, false, 8),
        ((200, 60), 2, Open, true, 1),
        ((200, 60), 8, Open, true, 3),
        ((120, 40), 1, Auto, false, 7),
        ((200, 60), 4, Auto, true, 8),
        ((120, 40), 8, Auto, false, 2),
        ((80, 24), 8, Auto, false, 0),
    ] {
        for held in [false, true] {
            let rows = EventsRows { pane: ev, held };
            let o = overview_for(size, gpus, rows, replay, listed, CHART_MAX_ROWS);
            let mut used = o.header.height + o.cards.height + o.table.height + o.footer.height;
            used += o.detail.map_or(0, |r| r.height);
            used += o.events.map_or(0, |r| r.height) + o.timeline.map_or(0, |r| r.height);
            assert_eq!(used, size.1, "{size:?} {gpus} {ev:?} {replay}: {o:?}");
            assert!(o.table.height > listed.max(1) as u16, "{o:?}");
        }
    }
}

#[test]
fn an_open_events_pane_takes_the_rows_the_processes_leave() {
    // Four GPUs at 120×40, the pane opened with `e`: two-line cards, and
    // nine processes. The table keeps its header and its nine rows, the
    // detail line follows, the pane has the rest down to the footer.
    let at = |listed| {
        overview_for(
            (120, 40),
            4,
            EventsPane::Open,
            false,
            listed,
            CHART_MAX_ROWS,
        )
    };
    let o = at(9);
    assert_eq!(o.style, CardStyle::TwoLine);
    assert_eq!(o.table.height, 10, "{o:?}");
    let d = o.detail.unwrap_or_else(|| panic!("{o:?}"));
    let e = o.events.unwrap_or_else(|| panic!("{o:?}"));
    assert_eq!((d.y, e.y), (o.table.bottom(), d.bottom()), "{o:?}");
    assert_eq!(e.bottom(), o.footer.y);
    assert_eq!(e.height, 40 - 1 - 9 - 10 - 1 - 1, "{o:?}");
    // More processes than the table's own share: it keeps that share and
    // scrolls, the pane keeps its third.
    let many = at(40);
    let closed = overview((120, 40), 4, true, false);
    assert_eq!((many.table, many.events), (closed.table, closed.events));
}

#[test]
fn a_pane_shown_unasked_stays_in_fewer_rows_than_it_needs_to_appear() {
    let rows = |held| EventsRows {
        pane: EventsPane::Auto,
        held,
    };
    let at = |listed, held| overview_for((120, 40), 1, rows(held), false, listed, CHART_MAX_ROWS);
    let mut kept_only = Vec::new();
    for listed in 0..40 {
        let (new, held) = (at(listed, false), at(listed, true));
        if let Some(e) = new.events {
            assert!(e.height >= EVENTS_AUTO_MIN, "{listed}: {new:?}");
            assert_eq!(held, new, "{listed}: held, the same pane");
        }
        match (new.events, held.events) {
            (None, Some(e)) => {
                assert!(e.height >= EVENTS_AUTO_KEEP, "{listed}: {held:?}");
                kept_only.push(e.height);
            }
            (Some(_), None) => panic!("{listed}: held but gone"),
            _ => {}
        }
    }
    // Each row from the one the pane keeps to the one it needs, once.
    let want: Vec<u16> = (EVENTS_AUTO_KEEP..EVENTS_AUTO_MIN).rev().collect();
    assert_eq!(kept_only, want);
}

#[test]
fn two_line_cards_leave_their_empty_rows_to_the_events_pane_too() {
    // Eight GPUs at 120×40: two lines each, two processes, the rows
    // under them to the pane.
    let o = overview_for((120, 40), 8, EventsPane::Auto, false, 2, CHART_MAX_ROWS);
    assert_eq!(o.style, CardStyle::TwoLine);
    let e = o.events.unwrap_or_else(|| panic!("{o:?}"));
    assert_eq!(o.table.height, 3, "{o:?}");
    assert!(e.height >= EVENTS_AUTO_MIN, "{o:?}");
    assert_eq!(e.bottom(), o.footer.y);
}

#[test]
fn unasked_the_events_pane_takes_only_rows_left_empty() {
    let auto = |size, gpus, replay, listed| {
        overview_for(size, gpus, EventsPane::Auto, replay, listed, CHART_MAX_ROWS)
    };
    // One GPU, 7 processes at 200×60 (the H200 benchmark's screen):
    // the charts grow to their cap, the pane takes the rest, the table
    // keeps its header and its 7 rows, top to bottom without a gap.
    for (size, gpus, replay, listed) in [
        ((200, 60), 1, false, 7),
        ((120, 40), 1, false, 7),
        ((200, 60), 4, false, 8),
        ((200, 60), 2, true, 0),
    ] {
        let o = auto(size, gpus, replay, listed);
        let e = o.events.unwrap_or_else(|| panic!("{size:?} {gpus}: {o:?}"));
        assert_eq!(o.chart, CHART_MAX_ROWS, "{o:?}");
        assert_eq!(o.table.height, 1 + listed.max(1) as u16, "{o:?}");
        let detail = o.detail.unwrap();
        assert_eq!(detail.y, o.table.bottom());
        assert_eq!(e.y, detail.bottom());
        assert!(e.height >= EVENTS_AUTO_MIN, "{o:?}");
        assert_eq!(e.bottom(), o.timeline.unwrap_or(o.footer).y, "{o:?}");
    }
    // No room: as with the pane closed (80×24, 4 GPUs at 120×40, a
    // table that fills its rows, 5 rows left).
    for (size, gpus, listed) in [((80, 24), 4, 8), ((120, 40), 4, 8), ((120, 40), 1, 40)] {
        let closed = overview_for(
            size,
            gpus,
            EventsPane::Closed,
            false,
            listed,
            CHART_MAX_ROWS,
        );
        assert_eq!(auto(size, gpus, false, listed), closed, "{size:?} {gpus}");
    }
    let closed = overview_for((120, 40), 1, EventsPane::Closed, false, 0, CHART_MAX_ROWS);
    // The table's body less 5 processes: 5 rows left, one too few.
    let five = closed.table.height - 1 - (EVENTS_AUTO_MIN - 1);
    assert_eq!(
        auto((120, 40), 1, false, five as usize),
        overview_for(
            (120, 40),
            1,
            EventsPane::Closed,
            false,
            five as usize,
            CHART_MAX_ROWS
        )
    );
    assert!(
        auto((120, 40), 1, false, five as usize - 1)
            .events
            .is_some()
    );
    // Opened, it ends where `overview` puts it, and takes the rows the
    // table's processes leave.
    let open = overview((200, 60), 1, true, false).events.unwrap();
    let o = overview_for((200, 60), 1, EventsPane::Open, false, 7, CHART_MAX_ROWS);
    let e = o.events.unwrap();
    assert_eq!(e.bottom(), open.bottom());
    assert!(e.height >= open.height, "{o:?}");
    assert_eq!(o.table.height, 1 + 7, "{o:?}");
}

#[test]
fn gpus_are_found_where_they_are_drawn() {
    let o = overview((120, 40), 4, false, false);
    assert_eq!(gpu_at(&o, 4, 0, 1), Some(0));
    assert_eq!(gpu_at(&o, 4, 0, 1 + CARD_HEIGHT), Some(1));
    assert_eq!(gpu_at(&o, 4, 0, 1 + 4 * CARD_HEIGHT), None);
    // Lines scroll to keep the selected GPU in view.
    let o = overview((80, 24), 16, false, false);
    let slots = gpu_slots(&o, 16, 15);
    assert_eq!(slots.last().map(|s| s.0), Some(15));
    assert!(slots.iter().all(|(_, r)| r.bottom() < o.cards.bottom()));
}

#[test]
fn headers_are_found_by_column() {
    let cols = [Column::Gpu, Column::Pid, Column::Command];
    assert_eq!(column_at(&cols, 40, 0), Some(Column::Gpu));
    assert_eq!(column_at(&cols, 40, 8), Some(Column::Pid));
    assert_eq!(column_at(&cols, 40, 30), Some(Column::Command));
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
        used += o.detail.map_or(0, |r| r.height);
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
    assert_eq!(column_spans(&cols, 40), vec![(0, 4), (5, 7), (13, 27)]);
    // Too narrow: nothing runs past the edge.
    for (x, w) in column_spans(&Column::ALL, 30) {
        assert!(x + w <= 30);
    }
}
