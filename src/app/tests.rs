//! `App::update`: keys and samples in, state and actions out.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::app::fixture;
use crate::app::playback::{PRELOAD, VecTimeline};
use crate::config::{Column, Config};

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

#[test]
fn quit_keys() {
    let mut app = demo(5);
    assert_eq!(ch(&mut app, 'q'), Some(Action::Quit));
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(app.update(Event::Key(ctrl_c)), Some(Action::Quit));
}

#[test]
fn selection_moves_and_clamps_and_follows_the_process() {
    let mut app = demo(30);
    let rows: Vec<u32> = app.rows().iter().map(|r| r.id().key.pid).collect();
    assert!(rows.len() >= 6);
    // Until the user moves it, the selection is the top row.
    assert_eq!(selected_pid(&app), rows[0]);
    ch(&mut app, 'g');
    assert_eq!(selected_pid(&app), rows[0]);
    ch(&mut app, 'j');
    ch(&mut app, 'j');
    assert_eq!(selected_pid(&app), rows[2]);
    key(&mut app, KeyCode::Up);
    assert_eq!(selected_pid(&app), rows[1]);
    ch(&mut app, 'G');
    assert_eq!(selected_pid(&app), *rows.last().unwrap());
    key(&mut app, KeyCode::Down);
    assert_eq!(
        selected_pid(&app),
        *rows.last().unwrap(),
        "clamped at the end"
    );
    ch(&mut app, 'g');
    assert_eq!(selected_pid(&app), rows[0]);
    key(&mut app, KeyCode::PageDown);
    assert_eq!(
        selected_pid(&app),
        *rows.last().unwrap(),
        "page longer than the list"
    );
    // Re-sorting keeps the same process selected.
    let before = selected_pid(&app);
    ch(&mut app, 'I');
    assert_eq!(selected_pid(&app), before);
}

#[test]
fn sort_keys_cycle_columns_and_invert() {
    let mut app = demo(10);
    // Wide enough that every configured column is shown.
    app.update(Event::Resize(200, 60));
    assert_eq!(app.table().sort.column, Column::Memory);
    ch(&mut app, '>');
    assert_eq!(app.table().sort.column, Column::Trend);
    ch(&mut app, '<');
    ch(&mut app, '<');
    assert_eq!(app.table().sort.column, Column::Kind);
    ch(&mut app, 's');
    assert_eq!(app.table().sort.column, Column::Memory);
    assert!(app.table().sort.descending);
    ch(&mut app, 'I');
    assert!(!app.table().sort.descending);
    let mems: Vec<u64> = app
        .rows()
        .iter()
        .filter(|r| !r.exited)
        .filter_map(|r| r.mem())
        .collect();
    assert!(mems.windows(2).all(|w| w[0] <= w[1]), "ascending: {mems:?}");
}

#[test]
fn sort_keys_skip_columns_hidden_at_this_width() {
    let mut app = demo(10);
    app.update(Event::Resize(80, 24));
    let shown = layout::fit_columns(&app.config().display.columns, 80);
    assert!(
        shown.len() < app.config().display.columns.len(),
        "80 columns should hide some: {shown:?}"
    );
    for _ in 0..2 * app.config().display.columns.len() {
        ch(&mut app, '>');
        assert!(
            shown.contains(&app.table().sort.column),
            "{:?}",
            app.table().sort
        );
    }
    for _ in 0..2 * app.config().display.columns.len() {
        ch(&mut app, '<');
        assert!(
            shown.contains(&app.table().sort.column),
            "{:?}",
            app.table().sort
        );
    }
}

#[test]
fn filter_typing_narrows_and_escape_clears() {
    let mut app = demo(10);
    ch(&mut app, '/');
    assert!(app.table().filter_editing);
    for c in "vllm".chars() {
        ch(&mut app, c);
    }
    assert_eq!(app.rows().len(), 1);
    assert_eq!(selected_pid(&app), 20_310);
    // 'q' while typing is text, not quit.
    assert_eq!(ch(&mut app, 'q'), None);
    key(&mut app, KeyCode::Backspace);
    key(&mut app, KeyCode::Enter);
    assert!(!app.table().filter_editing);
    assert_eq!(app.table().filter, "vllm");
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.table().filter, "");
    assert!(app.rows().len() > 1);
    // The process found stays selected, wherever its row is now (it was
    // the top row again).
    assert_ne!(app.rows()[0].id().key.pid, 20_310);
    assert_eq!(selected_pid(&app), 20_310);
    // The same when Esc ends the typing.
    ch(&mut app, 'g');
    ch(&mut app, '/');
    for c in "bench".chars() {
        ch(&mut app, c);
    }
    assert_eq!(selected_pid(&app), 39_004);
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.table().filter, "");
    assert_eq!(selected_pid(&app), 39_004);
}

#[test]
fn enter_opens_the_process_view_and_escape_returns() {
    let mut app = demo(10);
    let id = app.table().selected.unwrap();
    assert_eq!(key(&mut app, KeyCode::Enter), Some(Action::Inspect(id)));
    assert_eq!(app.screen(), Screen::Process(id));
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.screen(), Screen::Overview);
    // Tab to the GPUs, Enter opens the GPU view; arrows switch GPU there.
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.screen(), Screen::Gpu(1));
    key(&mut app, KeyCode::Down);
    assert_eq!(app.screen(), Screen::Gpu(2));
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.screen(), Screen::Overview);
}

#[test]
fn help_opens_and_closes() {
    let mut app = demo(3);
    ch(&mut app, '?');
    assert_eq!(app.screen(), Screen::Help);
    // Other keys do nothing while help is up.
    ch(&mut app, 'j');
    assert_eq!(app.screen(), Screen::Help);
    ch(&mut app, '?');
    assert_eq!(app.screen(), Screen::Overview);
}

#[test]
fn pause_freezes_the_screen_while_samples_keep_coming() {
    let (_, snaps) = fixture::analysed("demo", 1, 40, "me", &Config::default());
    let mut app = demo(30);
    let frozen = app.shown_ms();
    ch(&mut app, ' ');
    assert!(app.paused());
    for s in &snaps[30..35] {
        app.update(Event::Snapshot(s.clone()));
    }
    assert_eq!(app.shown_ms(), frozen, "screen stays on its moment");
    assert_eq!(app.history().len(), 35, "sampling went on");
    key(&mut app, KeyCode::Left);
    assert_eq!(app.shown_ms(), frozen - 1000);
    key(&mut app, KeyCode::Right);
    key(&mut app, KeyCode::Right);
    assert_eq!(app.shown_ms(), frozen + 1000);
    ch(&mut app, ' ');
    assert!(!app.paused());
    assert_eq!(app.shown_ms(), snaps[34].snapshot.t_ms);
    // Left while live pauses one step back; Esc returns to now.
    key(&mut app, KeyCode::Left);
    assert!(app.paused());
    key(&mut app, KeyCode::Esc);
    assert!(!app.paused());
}

#[test]
fn a_paused_screen_shows_the_analysis_of_its_moment_not_the_newest() {
    let (system, snaps) = fixture::analysed("demo", 1, 90, "me", &Config::default());
    let gpus = 0..system.gpus.len();
    let mut app = demo(60);
    let at_pause: Vec<_> = gpus.clone().map(|i| app.gpu_insight(i)).collect();
    ch(&mut app, ' ');
    for s in &snaps[60..90] {
        app.update(Event::Snapshot(s.clone()));
    }
    let paused: Vec<_> = gpus.clone().map(|i| app.gpu_insight(i)).collect();
    assert_eq!(paused, at_pause, "the paused moment's analysis stays");
    // Not vacuous: the newest analysis says something else by now.
    ch(&mut app, ' ');
    assert!(!app.paused());
    let newest: Vec<_> = gpus.clone().map(|i| app.gpu_insight(i)).collect();
    assert_ne!(newest, at_pause);

    // Stepped to another moment, it is what a replay shows there.
    let mut app = demo(60);
    ch(&mut app, ' ');
    for s in &snaps[60..90] {
        app.update(Event::Snapshot(s.clone()));
    }
    key(&mut app, KeyCode::Left);
    let mut replay = App::replaying_from(
        fixture::settings(Config::default(), system.clone()),
        Box::new(VecTimeline(
            snaps.iter().map(|a| a.snapshot.as_ref().clone()).collect(),
        )),
    );
    for _ in 0..58 {
        key(&mut replay, KeyCode::Right);
    }
    assert_eq!(replay.shown_ms(), app.shown_ms());
    for i in gpus.clone() {
        assert_eq!(app.gpu_insight(i), replay.gpu_insight(i), "GPU {i}");
    }
    // Back on the moment paused on: its own analysis again.
    key(&mut app, KeyCode::Right);
    let back: Vec<_> = gpus.map(|i| app.gpu_insight(i)).collect();
    assert_eq!(back, at_pause);
}

#[test]
fn terminate_asks_first_and_names_the_process() {
    let mut app = demo(10);
    ch(&mut app, 'T');
    let Some(Dialog::ConfirmSignal {
        id,
        signal,
        user,
        command,
        ..
    }) = app.dialog().cloned()
    else {
        panic!("no dialog");
    };
    assert_eq!(signal, Signal::Term);
    assert_eq!(Some(id), app.table().selected);
    assert!(!user.is_empty() && !command.is_empty());
    // Keys go to the dialog: 'q' does not quit, 'n' cancels.
    assert_eq!(ch(&mut app, 'q'), None);
    ch(&mut app, 'n');
    assert!(app.dialog().is_none());
    ch(&mut app, 'K');
    assert_eq!(
        ch(&mut app, 'y'),
        Some(Action::Signal {
            id,
            signal: Signal::Kill
        })
    );
    assert!(app.dialog().is_none());
}

#[test]
fn read_only_and_replay_refuse_signals() {
    let (system, snaps) = fixture::analysed("demo", 1, 10, "me", &Config::default());
    let mut settings = fixture::settings(Config::default(), system);
    settings.read_only = true;
    let mut app = App::live(settings);
    for s in snaps {
        app.update(Event::Snapshot(s));
    }
    ch(&mut app, 'K');
    assert!(app.dialog().is_none());
    assert!(app.message().unwrap().text.contains("read-only"));
}

#[test]
fn record_key_asks_the_runtime() {
    let mut app = demo(3);
    assert_eq!(ch(&mut app, 'r'), Some(Action::ToggleRecording));
    app.update(Event::Recording(RecordingStatus::Started {
        path: "/tmp/x.jsonl".into(),
    }));
    assert!(app.recording().is_some());
    app.update(Event::Recording(RecordingStatus::Stopped));
    assert!(app.recording().is_none());
}

#[test]
fn replay_navigation() {
    let (system, snaps) = fixture::snapshots("demo", 1, 120, "me");
    let t0 = snaps[0].t_ms;
    let timeline = VecTimeline(snaps);
    let mut app = App::replaying_from(
        fixture::settings(Config::default(), system),
        Box::new(timeline),
    );
    let pos = |app: &App| app.replay_position().unwrap().0;
    assert_eq!(pos(&app), 0, "replay opens at the start");
    assert_eq!(app.shown_ms(), t0);
    assert!(
        app.events().len() > 3,
        "the recording's events are all there"
    );
    key(&mut app, KeyCode::End);
    assert_eq!(pos(&app), 119);
    assert_eq!(app.shown_ms(), t0 + 119_000);
    assert_eq!(
        app.history().len(),
        120,
        "a short step forward loads the snapshots between"
    );
    key(&mut app, KeyCode::Home);
    assert_eq!(pos(&app), 0);
    // `]` says which event it landed on; the next key takes the word away
    // (a replay's clock stands still, so it stayed on screen for good).
    ch(&mut app, ']');
    assert!(app.message().is_some_and(|m| m.text.starts_with("event ")));
    key(&mut app, KeyCode::Home);
    assert!(app.message().is_none(), "{:?}", app.message());
    // Play advances on ticks; speed doubles and halves within 1..=64.
    ch(&mut app, ' ');
    app.update(Event::PlayTick);
    app.update(Event::PlayTick);
    assert_eq!(pos(&app), 2);
    assert_eq!(app.shown_ms(), t0 + 2000);
    for _ in 0..10 {
        ch(&mut app, '+');
    }
    assert_eq!(
        app.mode(),
        Mode::Replay(Playback {
            playing: true,
            speed: 64
        })
    );
    ch(&mut app, '-');
    assert!(matches!(
        app.mode(),
        Mode::Replay(Playback { speed: 32, .. })
    ));
    // Stepping pauses.
    key(&mut app, KeyCode::Right);
    assert!(matches!(
        app.mode(),
        Mode::Replay(Playback { playing: false, .. })
    ));
    assert_eq!(pos(&app), 3);
    key(&mut app, KeyCode::Left);
    key(&mut app, KeyCode::Left);
    assert_eq!(pos(&app), 1);
    // Jump from event to event, and back.
    ch(&mut app, ']');
    let t1 = app.shown_ms();
    assert!(
        app.events().iter().any(|e| e.t_ms == t1),
        "cursor on an event"
    );
    ch(&mut app, ']');
    let t2 = app.shown_ms();
    assert!(t2 > t1 && app.events().iter().any(|e| e.t_ms == t2));
    ch(&mut app, '[');
    assert_eq!(app.shown_ms(), t1);
    // No recording or signals in a replay.
    assert_eq!(ch(&mut app, 'r'), None);
    ch(&mut app, 'K');
    assert!(app.dialog().is_none());
}

#[test]
fn exited_processes_stay_marked_then_go() {
    let app = demo(80);
    // The export job ran from 20 s to 75 s.
    let rows = app.rows();
    let r = rows
        .iter()
        .find(|r| r.id().key.pid == 55_120)
        .expect("still listed");
    assert!(r.exited);
    let app = demo(75 + 300 + 5);
    assert!(
        app.rows().iter().all(|r| r.id().key.pid != 55_120),
        "gone after exited_keep"
    );
}

#[test]
fn resizing_keeps_the_selection_visible() {
    let mut app = demo(30);
    ch(&mut app, 'G');
    app.update(Event::Resize(80, 14));
    let h = app.table_height();
    let sel = app.selected_index(&app.rows()).unwrap();
    assert!(sel >= app.table().offset && sel < app.table().offset + h);
}

#[test]
fn replay_plays_to_the_end_and_stops_then_space_restarts() {
    let (system, snaps) = fixture::snapshots("idle", 1, 10, "me");
    let mut app = App::replaying_from(
        fixture::settings(Config::default(), system),
        Box::new(VecTimeline(snaps)),
    );
    ch(&mut app, ' ');
    for _ in 0..20 {
        app.update(Event::PlayTick);
    }
    assert_eq!(app.replay_position(), Some((9, 10)));
    assert_eq!(
        app.mode(),
        Mode::Replay(Playback {
            playing: false,
            speed: 1
        })
    );
    ch(&mut app, ' ');
    assert_eq!(app.replay_position(), Some((0, 10)));
    assert!(matches!(
        app.mode(),
        Mode::Replay(Playback { playing: true, .. })
    ));
}

#[test]
fn a_long_jump_loads_a_window_not_the_file() {
    let (system, snaps) = fixture::snapshots("idle", 1, 2000, "me");
    let mut app = App::replaying_from(
        fixture::settings(Config::default(), system),
        Box::new(VecTimeline(snaps)),
    );
    key(&mut app, KeyCode::End);
    assert_eq!(app.replay_position(), Some((1999, 2000)));
    assert_eq!(app.history().len(), PRELOAD + 1);
    // Stepping back within the window moves only the cursor.
    key(&mut app, KeyCode::Left);
    assert_eq!(app.history().len(), PRELOAD + 1);
    assert_eq!(app.replay_position(), Some((1998, 2000)));
    // Back to the start: a fresh window again.
    key(&mut app, KeyCode::Home);
    assert_eq!(app.history().len(), 1);
}

#[test]
fn a_recording_is_named_file_first_with_the_home_folder_short() {
    let home = directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf());
    if let Some(h) = home {
        let p = h.join(".local/share/vramwatch/recordings/run.jsonl.zst");
        assert_eq!(
            file_first(&p.display().to_string()),
            "run.jsonl.zst (in ~/.local/share/vramwatch/recordings)"
        );
    }
    assert_eq!(
        file_first("/data/rec/run.jsonl.zst"),
        "run.jsonl.zst (in /data/rec)"
    );
    assert_eq!(file_first("run.jsonl"), "run.jsonl");
}

/// Enter on an event about a process shows its moment with that process
/// selected in the table, also where it is not the top row then.
#[test]
fn enter_on_a_process_event_selects_the_process() {
    let started = |app: &App, i: usize| {
        app.event_at(i)
            .filter(|e| e.kind == crate::model::EventKind::ProcessStarted)
            .and_then(|e| e.pid)
    };
    let n = demo(90).events().len();
    let mut not_on_top = 0;
    for i in 0..n {
        let mut app = demo(90);
        let Some(pid) = started(&app, i) else {
            continue;
        };
        ch(&mut app, 'e');
        // From none selected, the first step down lands on the newest (0).
        for _ in 0..=i {
            key(&mut app, KeyCode::Down);
        }
        key(&mut app, KeyCode::Enter);
        assert_eq!(selected_pid(&app), pid, "event {i}");
        if app.rows().first().is_some_and(|r| r.id().key.pid != pid) {
            not_on_top += 1;
        }
    }
    assert!(not_on_top > 0, "no event's process was below the top row");
}

#[test]
fn a_step_back_in_a_replay_shows_what_the_pass_forward_showed_there() {
    // History gave every slot the newest allocator figures (a later
    // `allocated_peak`, a publish at every slot), so a replayed moment was
    // analysed with figures from after it: `twentieth/02` (a leak beneath
    // a KV cache) at T−18 s read "~17s (12s–40s)" stepped back to and
    // "≤35s" played to.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/fixtures/corpus/twentieth/02-gpu0-kv_plateau-leak-tau20-s1.3-seed22.jsonl.zst",
    );
    let rec = crate::record::Recording::open(&path).unwrap();
    let system = rec.system();
    let snaps: Vec<_> = rec.iter().filter_map(Result::ok).collect();
    let n = snaps.len() as u64;
    let mut app = App::replaying_from(
        fixture::settings(Config::default(), system),
        Box::new(VecTimeline(snaps)),
    );
    let mut forward = Vec::new();
    for _ in 1..n {
        key(&mut app, KeyCode::Right);
        forward.push((app.shown_ms(), app.gpu_insight(0)));
    }
    assert!(
        forward
            .iter()
            .any(|(_, g)| g.as_ref().is_some_and(|g| g.full_in.is_some())),
        "a forecast to compare"
    );
    for (t, seen) in forward.iter().rev().skip(1) {
        key(&mut app, KeyCode::Left);
        assert_eq!(app.shown_ms(), *t);
        assert_eq!(&app.gpu_insight(0), seen, "at {t}");
    }
}

#[test]
fn a_slot_of_history_is_rebuilt_the_same_after_later_samples() {
    // Its allocator figures included (they were the newest publish's).
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/fixtures/corpus/twentieth/02-gpu0-kv_plateau-leak-tau20-s1.3-seed22.jsonl.zst",
    );
    let rec = crate::record::Recording::open(&path).unwrap();
    let mut h = History::new(3600, 1000, 60_000);
    let mut then = Vec::new();
    for s in rec.iter().filter_map(Result::ok) {
        h.push(&s);
        let slot = h.slot_at_time(s.t_ms).unwrap();
        then.push((slot, h.snapshot_at(slot)));
    }
    assert!(
        then.iter()
            .any(|(_, s)| s.iter().any(|s| s.procs.iter().any(|p| p.torch.is_some())))
    );
    for (slot, was) in &then {
        assert_eq!(&h.snapshot_at(*slot), was, "slot {slot}");
    }
}
