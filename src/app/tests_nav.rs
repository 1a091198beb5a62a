//! `App::update` for what a new user tries: the mouse, sorting by a
//! header, the first row, command scrolling, user and GPU filters, the
//! events pane and the jumps between events.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

use super::*;
use crate::app::fixture;
use crate::app::playback::VecTimeline;
use crate::config::{Column, Config};
use crate::pipeline::Analyzed;

fn key(app: &mut App, code: KeyCode) -> Option<Action> {
    app.update(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn ch(app: &mut App, c: char) -> Option<Action> {
    let m = if c.is_ascii_uppercase() {
        KeyModifiers::SHIFT
    } else {
        KeyModifiers::NONE
    };
    app.update(Event::Key(KeyEvent::new(KeyCode::Char(c), m)))
}

fn demo(seconds: u64) -> App {
    fixture::app("demo", 1, seconds, (120, 40))
}

fn selected_pid(app: &App) -> u32 {
    app.table().selected.map(|s| s.key.pid).unwrap_or(0)
}

fn click(app: &mut App, column: u16, row: u16) {
    app.update(Event::Mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }));
}

#[test]
fn mouse_is_on_by_default_and_clicks_select() {
    let mut app = demo(10);
    let rows: Vec<u32> = app.rows().iter().map(|r| r.id().key.pid).collect();
    // Where the table is drawn: the cards grow into rows it leaves.
    let t = layout::overview_of(&app).table;
    let body_y = t.y + 1;
    click(&mut app, 10, body_y + 2);
    assert_eq!(selected_pid(&app), rows[2]);
    // `[display] mouse = false` turns it off.
    let mut config = Config::default();
    config.display.mouse = false;
    let mut app = fixture::app_with(config, "demo", 1, 10, (120, 40));
    click(&mut app, 10, body_y + 2);
    assert_eq!(selected_pid(&app), rows[0], "mouse off");
}

#[test]
fn clicking_a_header_sorts_and_again_inverts() {
    let mut app = demo(10);
    let table = layout::overview_of(&app).table;
    let cols = layout::fit_columns(&app.config().display.columns, table.width);
    let spans = layout::column_spans(&cols, table.width);
    let x = |c: Column| spans[cols.iter().position(|x| *x == c).unwrap()].0;
    click(&mut app, x(Column::Pid), table.y);
    assert_eq!(app.table().sort.column, Column::Pid);
    assert!(!app.table().sort.descending, "PIDs sort up first");
    click(&mut app, x(Column::Pid) + 2, table.y);
    assert!(app.table().sort.descending, "a second click inverts");
    let pids: Vec<u32> = app
        .rows()
        .iter()
        .filter(|r| !r.exited)
        .map(|r| r.id().key.pid)
        .collect();
    assert!(pids.windows(2).all(|w| w[0] > w[1]), "{pids:?}");
}

#[test]
fn clicking_a_gpu_shows_its_processes_and_again_all() {
    let mut app = demo(10);
    let o = layout::overview_of(&app);
    let (_, card) = layout::gpu_slots(&o, 4, 0)[2];
    click(&mut app, 30, card.y + 1);
    assert_eq!(app.table().filter, "gpu:2");
    assert_eq!(app.nav().selected_gpu, 2);
    assert!(!app.rows().is_empty());
    assert!(app.rows().iter().all(|r| r.id().gpu == 2));
    click(&mut app, 30, card.y + 1);
    assert_eq!(app.table().filter, "");
}

#[test]
fn the_selection_is_the_top_row_until_the_user_moves_it() {
    // The sim's rows change order as memory moves; Enter right away opens
    // what is on top, whatever was on top when the first sample came.
    let (_, snaps) = fixture::analysed("demo", 1, 60, "me", &Config::default());
    let mut app = demo(0);
    for s in &snaps {
        app.update(Event::Snapshot(s.clone()));
        let top = app.rows().first().map(|r| r.id());
        assert_eq!(app.table().selected, top, "at {}", s.snapshot.t_ms);
    }
    let top = app.rows()[0].id();
    assert_eq!(key(&mut app, KeyCode::Enter), Some(Action::Inspect(top)));
    key(&mut app, KeyCode::Esc);
    // Once moved, the selection follows its process.
    ch(&mut app, 'j');
    let chosen = app.table().selected;
    assert_ne!(chosen, Some(top));
    let (_, more) = fixture::analysed("demo", 1, 90, "me", &Config::default());
    for s in &more[60..] {
        app.update(Event::Snapshot(s.clone()));
    }
    assert_eq!(app.table().selected, chosen);
}

#[test]
fn inverting_the_sort_holds_across_columns() {
    let mut app = demo(10);
    app.update(Event::Resize(200, 60));
    ch(&mut app, 'I');
    assert!(!app.table().sort.descending, "memory, smallest first");
    ch(&mut app, '>');
    assert_eq!(app.table().sort.column, Column::Trend);
    assert!(!app.table().sort.descending, "still inverted");
    ch(&mut app, '<');
    ch(&mut app, '<');
    assert_eq!(app.table().sort.column, Column::Kind);
    assert!(app.table().sort.descending, "names inverted: Z to A");
    ch(&mut app, 'I');
    ch(&mut app, 's');
    assert!(
        app.table().sort.descending,
        "back to each column's own order"
    );
}

#[test]
fn shift_arrows_scroll_the_command_and_plain_arrows_step_in_time() {
    let mut app = demo(10);
    let shift = |code| Event::Key(KeyEvent::new(code, KeyModifiers::SHIFT));
    app.update(shift(KeyCode::Right));
    app.update(shift(KeyCode::Right));
    assert_eq!(app.table().hscroll, 16);
    assert!(!app.paused(), "a scroll is not a step");
    app.update(shift(KeyCode::Left));
    assert_eq!(app.table().hscroll, 8);
    for _ in 0..50 {
        app.update(shift(KeyCode::Right));
    }
    let longest = app
        .rows()
        .iter()
        .map(|r| r.series.facts.label().chars().count())
        .max()
        .unwrap();
    assert!((app.table().hscroll as usize) < longest, "stops at the end");
    key(&mut app, KeyCode::Left);
    assert!(app.paused());
}

#[test]
fn u_cycles_users_and_gpu_terms_filter() {
    let mut app = demo(10);
    ch(&mut app, 'u');
    assert_eq!(app.table().filter, "user:alice");
    assert!(
        app.rows()
            .iter()
            .all(|r| r.series.facts.user.as_deref() == Some("alice"))
    );
    ch(&mut app, 'u');
    assert_eq!(app.table().filter, "user:bob");
    for _ in 0..10 {
        ch(&mut app, 'u');
    }
    // Past the last user: everyone's again, and round.
    let users: std::collections::BTreeSet<String> = app
        .rows()
        .iter()
        .filter_map(|r| r.series.facts.user.as_deref().map(str::to_owned))
        .collect();
    assert!(users.len() > 1 || app.table().filter.starts_with("user:"));
    // `/gpu:1` in the filter.
    key(&mut app, KeyCode::Esc);
    ch(&mut app, '/');
    for c in "gpu:1".chars() {
        ch(&mut app, c);
    }
    key(&mut app, KeyCode::Enter);
    assert!(!app.rows().is_empty());
    assert!(app.rows().iter().all(|r| r.id().gpu == 1));
}

#[test]
fn t_says_why_there_is_no_tree() {
    let mut app = demo(5);
    ch(&mut app, 't');
    assert!(app.message().unwrap().text.contains("parent PIDs"));
}

#[test]
fn events_scroll_select_and_enter_goes_there_live() {
    // 120×24: more events than the open pane's lines (at 120×40 it takes
    // the rows the processes leave, and holds them all).
    let mut app = fixture::app("demo", 1, 90, (120, 24));
    ch(&mut app, 'e');
    assert_eq!(app.nav().focus, Pane::Events, "e gives the pane the arrows");
    let n = app.events().len();
    assert!(n > app.events_height(), "more events than lines: {n}");
    // Down from none selects the newest; End the oldest, scrolled into view.
    key(&mut app, KeyCode::Down);
    assert_eq!(app.events_view().selected, Some(0));
    ch(&mut app, 'G');
    assert_eq!(app.events_view().selected, Some(n - 1));
    let v = app.events_view();
    assert!(v.offset + app.events_height() > n - 1 && v.offset < n);
    // Home and End move in the pane with the arrows, not the table.
    let row = selected_pid(&app);
    key(&mut app, KeyCode::Home);
    assert_eq!(app.events_view().selected, Some(0));
    assert_eq!(app.events_view().offset, 0);
    key(&mut app, KeyCode::End);
    assert_eq!(app.events_view().selected, Some(n - 1));
    assert_eq!(selected_pid(&app), row, "the table's selection stays");
    // Enter: paused at that event's moment, and said so.
    key(&mut app, KeyCode::Up);
    let e = app.event_at(n - 2).unwrap().clone();
    key(&mut app, KeyCode::Enter);
    assert!(app.paused());
    assert_eq!(app.shown_ms(), e.t_ms);
    assert!(app.message().unwrap().text.contains(&e.message));
    // New events keep the selection on its event.
    let (_, more) = fixture::analysed("demo", 1, 130, "me", &Config::default());
    let before = app.events().len();
    for s in &more[90..] {
        app.update(Event::Snapshot(s.clone()));
    }
    assert!(app.events().len() > before);
    let sel = app.events_view().selected.unwrap();
    assert_eq!(app.event_at(sel), Some(&e));
    // Tab cycles processes, GPUs, events; e closes and gives the arrows back.
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.nav().focus, Pane::Procs);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.nav().focus, Pane::Gpus);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.nav().focus, Pane::Events);
    ch(&mut app, 'e');
    assert!(!app.events_shown());
    assert_eq!(app.nav().focus, Pane::Procs);
}

#[test]
fn jumping_between_events_says_where_it_landed() {
    let (system, snaps) = fixture::snapshots("demo", 1, 120, "me");
    let mut app = App::replaying_from(
        fixture::settings(Config::default(), system),
        Box::new(VecTimeline(snaps)),
    );
    ch(&mut app, ']');
    let t = app.shown_ms();
    let m = app.message().unwrap().text.clone();
    assert!(m.starts_with("event "), "{m}");
    let e = app.events().iter().find(|e| e.t_ms == t).unwrap();
    assert!(m.contains(&e.message), "{m}");
    // The pane selects it too; Enter on another event moves the playhead.
    ch(&mut app, 'e');
    let sel = app.events_view().selected.unwrap();
    assert_eq!(app.event_at(sel).unwrap().t_ms, t);
    key(&mut app, KeyCode::Home);
    ch(&mut app, 'g');
    key(&mut app, KeyCode::Enter);
    let newest = app.events().back().unwrap().t_ms;
    assert_eq!(app.shown_ms(), newest);
}

#[test]
fn process_utilisation_is_on_screen_only_with_the_sm_column_or_a_drill_down() {
    // With every column configured (the default), SM% is shown from 68
    // columns on and dropped below.
    let mut app = demo(10);
    assert!(app.shows_proc_util(), "SM% at 120×40");
    app.update(Event::Resize(68, 24));
    assert!(app.shows_proc_util(), "SM% at 68 columns");
    app.update(Event::Resize(66, 24));
    assert!(!app.shows_proc_util(), "SM% dropped at 66 columns");
    // A drill-down shows the process's SM% at any width.
    let act = key(&mut app, KeyCode::Enter);
    assert!(matches!(act, Some(Action::Inspect(_))), "{act:?}");
    assert!(app.shows_proc_util(), "drill-down");
    key(&mut app, KeyCode::Esc);
    assert!(!app.shows_proc_util());
    // The GPU view, help and a terminal too small show none.
    app.update(Event::Resize(120, 40));
    assert!(app.shows_proc_util());
    ch(&mut app, '?');
    assert_eq!(app.screen(), Screen::Help);
    assert!(!app.shows_proc_util(), "help");
    key(&mut app, KeyCode::Esc);
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.screen(), Screen::Gpu(0));
    assert!(!app.shows_proc_util(), "the GPU view");
    key(&mut app, KeyCode::Esc);
    assert!(app.shows_proc_util(), "back on the overview");
    app.update(Event::Resize(40, 10));
    assert!(!app.shows_proc_util(), "too small to draw");
    // Left out of `[display] columns`: not shown at any width.
    let mut config = Config::default();
    config.display.columns.retain(|c| *c != Column::Sm);
    let app = fixture::app_with(config, "demo", 1, 10, (200, 60));
    assert!(!app.shows_proc_util());
}

#[test]
fn host_facts_are_on_screen_only_with_the_cpu_or_rss_column_or_a_drill_down() {
    // With every column configured (the default), RSS is shown from 114
    // columns on and CPU% from 103; both are dropped below.
    let mut app = demo(10);
    assert!(app.shows_host_facts(), "CPU% and RSS at 120×40");
    app.update(Event::Resize(103, 30));
    assert!(app.shows_host_facts(), "CPU% alone at 103 columns");
    app.update(Event::Resize(102, 30));
    assert!(!app.shows_host_facts(), "both dropped at 102 columns");
    assert!(app.shows_proc_util(), "while SM% is still shown");
    let act = key(&mut app, KeyCode::Enter);
    assert!(matches!(act, Some(Action::Inspect(_))), "{act:?}");
    assert!(
        app.shows_host_facts(),
        "a drill-down shows host CPU and RSS"
    );
    key(&mut app, KeyCode::Esc);
    app.update(Event::Resize(120, 40));
    ch(&mut app, '?');
    assert!(!app.shows_host_facts(), "help");
    app.update(Event::Resize(40, 10));
    assert!(!app.shows_host_facts(), "too small to draw");
    // Left out of `[display] columns`: not shown at any width.
    let mut config = Config::default();
    config
        .display
        .columns
        .retain(|c| !matches!(c, Column::Cpu | Column::Rss));
    let app = fixture::app_with(config, "demo", 1, 10, (200, 60));
    assert!(!app.shows_host_facts());
}

#[test]
fn a_pane_shown_unasked_is_gone_to_with_e_and_closed_from_inside() {
    // The demo at 200×60: 4 GPUs, 8 processes, rows to spare under them.
    let mut app = fixture::app("demo", 1, 90, (200, 60));
    assert!(app.events_shown(), "shown unasked in the rows left");
    assert_eq!(app.nav().focus, Pane::Procs, "without the arrows");
    let h = app.events_height();
    assert!(h >= 5, "{h}");
    // e: the arrows go to it, its size stays; e again closes it.
    ch(&mut app, 'e');
    assert_eq!(app.nav().focus, Pane::Events);
    assert_eq!(app.events_height(), h);
    key(&mut app, KeyCode::Down);
    assert_eq!(app.events_view().selected, Some(0));
    ch(&mut app, 'e');
    assert!(!app.events_shown());
    assert_eq!(app.nav().focus, Pane::Procs);
    // Closed stays closed; e opens it at its own size.
    app.update(Event::Resize(200, 61));
    assert!(!app.events_shown());
    ch(&mut app, 'e');
    assert!(app.events_shown());
    assert_eq!(app.nav().focus, Pane::Events);
}

#[test]
fn the_events_pane_starts_as_the_config_says() {
    let with = |events| {
        let mut config = Config::default();
        config.display.events = events;
        fixture::app_with(config, "demo", 1, 90, (200, 60))
    };
    assert!(!with(EventsPane::Closed).events_shown());
    let open = with(EventsPane::Open);
    let auto = with(EventsPane::Auto);
    assert!(open.events_shown() && auto.events_shown());
    // Open takes its share and the rows the processes leave; unasked,
    // only the rows left.
    assert!(open.events_height() >= auto.events_height());
    assert_eq!(
        open.nav().focus,
        Pane::Procs,
        "the arrows stay with the table"
    );
}

#[test]
fn the_arrows_go_back_to_the_table_when_an_unasked_pane_goes() {
    let mut app = fixture::app("demo", 1, 90, (200, 60));
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.nav().focus, Pane::Events);
    // Smaller: it keeps fewer rows than it needed to appear, then the
    // processes need them, the pane goes, and with it the arrows, said.
    let mut h = 60;
    while app.events_shown() {
        assert!(app.events_height() + 1 >= layout::EVENTS_AUTO_KEEP as usize);
        assert_eq!(app.nav().focus, Pane::Events, "at 200×{h}");
        h -= 1;
        app.update(Event::Resize(200, h));
    }
    assert_eq!(app.nav().focus, Pane::Procs);
    let m = app.message().map(|m| m.text.clone()).unwrap_or_default();
    assert!(m.contains("e opens it"), "{m}");
    let before = app.table().selected;
    key(&mut app, KeyCode::Down);
    assert_ne!(app.table().selected, before, "Down moves the table");
    // One row more is not enough to bring it back: it needs its rows.
    app.update(Event::Resize(200, h + 1));
    assert!(!app.events_shown());
    // Back to 200×60, it is shown again without taking the arrows.
    app.update(Event::Resize(200, 60));
    assert!(app.events_shown());
    assert_eq!(app.nav().focus, Pane::Procs);
}

/// The demo's snapshots for `seconds`, from `from` on with `extra` more
/// processes (copies of the first, under new PIDs), analysed as live.
fn demo_with_extra(seconds: u64, from: usize, extra: u32) -> Vec<Arc<Analyzed>> {
    let (_, mut snaps) = fixture::snapshots("demo", 1, seconds, "me");
    for s in snaps.iter_mut().skip(from) {
        let first = s.procs[0].clone();
        for i in 0..extra {
            let mut p = first.clone();
            p.pid = 90_000 + i;
            s.procs.push(p);
        }
    }
    let cfg = crate::analysis::AnalysisConfig::from_config(&Config::default());
    crate::pipeline::analyse_all(&cfg, snaps)
}

#[test]
fn a_focused_unasked_pane_stays_while_a_few_processes_come() {
    let size = (200, 60);
    let base = fixture::app("demo", 1, 100, size);
    let h0 = base.events_height();
    let spare = h0 + 1;
    // Processes enough to leave the pane fewer rows than it needs to
    // appear, but as many as it keeps.
    let extra = (spare - layout::EVENTS_AUTO_KEEP as usize) as u32;
    let run = |extra| {
        let mut app = App::live(fixture::settings(
            Config::default(),
            fixture::snapshots("demo", 1, 1, "me").0,
        ));
        app.update(Event::Resize(size.0, size.1));
        let snaps = demo_with_extra(100, 90, extra);
        let mut snaps = snaps.into_iter();
        for s in snaps.by_ref().take(90) {
            app.update(Event::Snapshot(s));
        }
        ch(&mut app, 'e');
        assert_eq!(app.nav().focus, Pane::Events);
        // The pane's last line selected: it must scroll when it shrinks.
        let last = (app.events_height() - 1).min(app.events().len() - 1);
        for _ in 0..=last {
            key(&mut app, KeyCode::Down);
        }
        assert_eq!(app.events_view().selected, Some(last));
        assert!(last >= layout::EVENTS_AUTO_KEEP as usize, "{last}");
        for s in snaps {
            app.update(Event::Snapshot(s));
        }
        app
    };
    let app = run(extra);
    assert!(app.events_shown(), "kept: {extra} processes more");
    assert_eq!(app.nav().focus, Pane::Events, "the arrows stay in it");
    assert_eq!(app.events_height() + 1, layout::EVENTS_AUTO_KEEP as usize);
    let v = app.events_view();
    let sel = v.selected.expect("an event stays selected");
    assert!(
        sel >= v.offset && sel < v.offset + app.events_height(),
        "{v:?}"
    );
    // One process more: the rows go to the processes, the arrows to the table.
    let app = run(extra + 1);
    assert!(!app.events_shown());
    assert_eq!(app.nav().focus, Pane::Procs);
}

#[test]
fn a_click_in_an_unasked_pane_selects_its_event_and_gives_it_the_arrows() {
    let mut app = fixture::app("demo", 1, 90, (200, 60));
    let o = layout::overview_of(&app);
    let e = o.events.expect("shown unasked");
    assert!(app.events().len() >= 2, "the demo has events by now");
    // The pane's second line: the second newest event.
    click(&mut app, e.x + 5, e.y + 2);
    assert_eq!(app.nav().focus, Pane::Events);
    assert_eq!(app.events_view().selected, Some(1));
    // The detail line moved up under the table: a click there selects
    // nothing in either.
    let d = o.detail.expect("a detail line");
    assert_eq!(d.y, o.table.bottom());
    let before = app.table().selected;
    click(&mut app, 10, d.y);
    assert_eq!(app.table().selected, before);
    assert_eq!(app.events_view().selected, Some(1));
}

#[test]
fn the_process_whose_details_were_opened_stays_selected_after_a_new_sort() {
    let (_, snaps) = fixture::analysed("demo", 1, 40, "me", &Config::default());
    let mut app = demo(0);
    for s in &snaps[..30] {
        app.update(Event::Snapshot(s.clone()));
    }
    let top = app.rows()[0].id();
    assert_eq!(key(&mut app, KeyCode::Enter), Some(Action::Inspect(top)));
    key(&mut app, KeyCode::Esc);
    // Another sort puts another process on top; through the next samples
    // the cursor stays on the one just inspected.
    ch(&mut app, 'I');
    for s in &snaps[30..] {
        app.update(Event::Snapshot(s.clone()));
    }
    assert_ne!(app.rows()[0].id(), top, "the sort changed the top row");
    assert_eq!(app.table().selected, Some(top));
}
