//! The screens, drawn into ratatui's TestBackend from deterministic sim data:
//! insta snapshots of the text at 80×24, 120×40 and 200×60, and style checks
//! on the buffer (snapshots do not capture colour).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::Modifier;

use vramwatch::app::{App, Clock, Event, fixture};
use vramwatch::config::{Config, Theme as ThemeName};
use vramwatch::theme::{Depth, Theme};

const SIZES: [(u16, u16); 3] = [(80, 24), (120, 40), (200, 60)];

fn render(app: &App) -> Buffer {
    let (w, h) = app.size();
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("test backend");
    t.draw(|f| vramwatch::ui::draw(f, app)).expect("draw");
    t.backend().buffer().clone()
}

fn text(buf: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        let line: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn key(app: &mut App, c: KeyCode) {
    let m = match c {
        KeyCode::Char(ch) if ch.is_ascii_uppercase() => KeyModifiers::SHIFT,
        _ => KeyModifiers::NONE,
    };
    app.update(Event::Key(KeyEvent::new(c, m)));
}

fn at(scenario: &str, seconds: u64, size: (u16, u16)) -> App {
    let mut app = fixture::app(scenario, 1, seconds, size);
    key(&mut app, KeyCode::Char('g'));
    app
}

/// Finds `needle` on screen: (x, y) of its first cell.
fn find(buf: &Buffer, needle: &str) -> Option<(u16, u16)> {
    for y in 0..buf.area.height {
        let line: Vec<&str> = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        let joined: String = line.concat();
        if let Some(byte) = joined.find(needle) {
            // Map the byte offset back to a cell.
            let mut acc = 0;
            for (x, s) in line.iter().enumerate() {
                if acc == byte {
                    return Some((x as u16, y));
                }
                acc += s.len();
            }
        }
    }
    None
}

#[test]
fn overview_at_every_size() {
    for size in SIZES {
        let app = at("demo", 90, size);
        insta::assert_snapshot!(
            format!("overview_{}x{}", size.0, size.1),
            text(&render(&app))
        );
    }
}

/// Every card's memory bar is as long as every other's, whatever text
/// follows it (GPU 2's "unaccounted 2.00G" is longer than the others'
/// "4M"; the bar took what the text left, so equal shares were drawn at
/// different lengths).
#[test]
fn every_card_draws_its_memory_bar_at_one_length() {
    let bar = |c: &char| matches!(c, '█' | '░' | '▒' | '┃');
    for size in [(80, 24), (120, 40), (200, 60)] {
        let buf = render(&at("demo", 90, size));
        let text = text(&buf);
        // The first run of bar cells on each line that has one (free
        // memory or the peak in it: a sparkline has neither).
        let bars: Vec<usize> = text
            .lines()
            .filter_map(|l| {
                let from = l.chars().position(|c| bar(&c))?;
                let run: Vec<char> = l.chars().skip(from).take_while(bar).collect();
                run.iter()
                    .any(|c| matches!(c, '░' | '┃'))
                    .then_some(run.len())
            })
            .collect();
        assert_eq!(bars.len(), 4, "{size:?}\n{text}");
        assert!(
            bars.iter().all(|b| *b == bars[0]),
            "{size:?}: {bars:?}\n{text}"
        );
    }
}

#[test]
fn process_view_at_every_size() {
    for size in SIZES {
        let mut app = at("demo", 90, size);
        key(&mut app, KeyCode::Enter);
        insta::assert_snapshot!(
            format!("process_{}x{}", size.0, size.1),
            text(&render(&app))
        );
    }
}

#[test]
fn gpu_view_at_every_size() {
    for size in SIZES {
        let mut app = at("demo", 90, size);
        key(&mut app, KeyCode::Tab);
        key(&mut app, KeyCode::Down);
        key(&mut app, KeyCode::Enter);
        insta::assert_snapshot!(format!("gpu_{}x{}", size.0, size.1), text(&render(&app)));
    }
}

#[test]
fn help_at_every_size() {
    for size in SIZES {
        let mut app = at("demo", 10, size);
        key(&mut app, KeyCode::Char('?'));
        insta::assert_snapshot!(format!("help_{}x{}", size.0, size.1), text(&render(&app)));
    }
}

#[test]
fn crowded_node_fills_the_terminal_by_priority() {
    for size in SIZES {
        let app = at("crowded", 60, size);
        let buf = render(&app);
        insta::assert_snapshot!(format!("crowded_{}x{}", size.0, size.1), text(&buf));
        // Every GPU is on screen, its figures labelled.
        let t = text(&buf);
        assert!(
            t.contains(" 0 H200") || t.contains("GPU 0 NVIDIA H200"),
            "{t}"
        );
        assert!(
            t.contains(" 7 H200") || t.contains("GPU 7 NVIDIA H200"),
            "{t}"
        );
        assert!(t.contains("mem") && t.contains("util"), "{t}");
        // The shards stay apart at every width.
        assert!(t.contains("--shard 148"), "{t}");
    }
}

/// The shipped H200 recording, replayed, times in UTC.
fn h200(size: (u16, u16)) -> App {
    replay("assets/h200-2gpu-10min.jsonl.zst", size)
}

/// The replay of `file` (under the project) at its start, in UTC.
fn replay(file: &str, size: (u16, u16)) -> App {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let app = vramwatch::commands::replay::open_app(&path, Config::default(), "me".into(), None)
        .unwrap_or_else(|e| panic!("{file} opens: {e}"));
    let mut app = app.with_clock(Clock::Utc);
    app.update(Event::Resize(size.0, size.1));
    app
}

#[test]
fn h200_replay_at_every_size() {
    for size in SIZES {
        let mut app = h200(size);
        // Twelve processes on two GPUs, seven minutes in.
        for _ in 0..430 {
            key(&mut app, KeyCode::Right);
        }
        let t = text(&render(&app));
        insta::assert_snapshot!(format!("h200_replay_{}x{}", size.0, size.1), t);
        // The workers are told apart by what differs: their pipe handles.
        let rows: Vec<&str> = t
            .lines()
            .filter(|l| l.contains(" root ") && !l.contains("▸"))
            .collect();
        assert!(rows.len() >= 12, "{t}");
        assert!(rows.iter().all(|l| l.contains("pipe_handle=")), "{t}");
        assert!(!rows.iter().any(|l| l.contains("/opt/torch")), "{t}");
    }
}

#[test]
fn confirm_dialog_filter_events_and_replay_screens() {
    let mut app = at("demo", 90, (120, 40));
    key(&mut app, KeyCode::Char('T'));
    insta::assert_snapshot!("dialog_120x40", text(&render(&app)));

    let mut app = at("demo", 90, (120, 40));
    key(&mut app, KeyCode::Char('/'));
    for c in "alice".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    insta::assert_snapshot!("filter_120x40", text(&render(&app)));

    let mut app = at("demo", 90, (120, 40));
    key(&mut app, KeyCode::Char('e'));
    insta::assert_snapshot!("events_120x40", text(&render(&app)));

    let (system, snaps) = fixture::snapshots("demo", 1, 120, "me");
    let timeline = vramwatch::app::playback::VecTimeline(snaps);
    let mut app = App::replaying_from(
        fixture::settings(Config::default(), system),
        Box::new(timeline),
    );
    app.update(Event::Resize(120, 40));
    key(&mut app, KeyCode::Char('+'));
    key(&mut app, KeyCode::Char('+'));
    for _ in 0..30 {
        key(&mut app, KeyCode::Right);
    }
    insta::assert_snapshot!("replay_120x40", text(&render(&app)));
}

/// The replay footer names what Space does now: "play" while paused,
/// "pause" while playing.
#[test]
fn the_replay_footer_says_what_space_does_now() {
    let (system, snaps) = fixture::snapshots("demo", 1, 20, "me");
    let timeline = vramwatch::app::playback::VecTimeline(snaps);
    let mut app = App::replaying_from(
        fixture::settings(Config::default(), system),
        Box::new(timeline),
    );
    app.update(Event::Resize(120, 40));
    let footer = |app: &App| text(&render(app)).lines().last().unwrap_or("").to_owned();
    assert!(footer(&app).contains("Space play"), "{}", footer(&app));
    key(&mut app, KeyCode::Char(' '));
    assert!(footer(&app).contains("Space pause"), "{}", footer(&app));
    key(&mut app, KeyCode::Char(' '));
    assert!(footer(&app).contains("Space play"), "{}", footer(&app));
}

/// An event longer than its row ends in "…" where it was cut, not at a
/// bare cut.
#[test]
fn an_event_too_long_for_its_row_ends_in_an_ellipsis() {
    let mut app = at("demo", 120, (80, 24));
    key(&mut app, KeyCode::Char('e'));
    let screen = text(&render(&app));
    let rows: Vec<&str> = screen
        .lines()
        .filter(|l| l.contains("ALERT") || l.contains("NOTE"))
        .collect();
    assert!(!rows.is_empty(), "{screen}");
    // An 80-column row holds 64 cells of message: the demo's alerts and
    // notes are longer, and each says where it was cut.
    for r in &rows {
        let r = r.trim_end();
        if r.chars().count() >= 79 {
            assert!(r.ends_with('…'), "{r:?}\n{screen}");
        }
    }
    assert!(rows.iter().any(|r| r.trim_end().ends_with('…')), "{screen}");
}

/// A message longer than the footer line ends in "…" where it was cut.
#[test]
fn a_message_too_long_for_the_footer_ends_in_an_ellipsis() {
    let mut app = at("demo", 120, (80, 24));
    key(&mut app, KeyCode::Char('e'));
    // The newest event's moment: "at 12:01:.. ALERT [warn leak] PID …".
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Enter);
    let screen = text(&render(&app));
    let footer = screen.lines().last().unwrap_or("").trim_end();
    assert!(footer.starts_with(" at "), "{screen}");
    assert!(footer.ends_with('…'), "{footer:?}");
}

#[test]
fn too_small_asks_to_enlarge() {
    let app = at("demo", 5, (40, 10));
    let t = text(&render(&app));
    let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("enlarge the terminal to at least 50×12 (now 40×10)"),
        "{t}"
    );
}

#[test]
fn no_size_panics() {
    for w in [1u16, 20, 49, 50, 51, 63, 79, 81, 99, 133, 255] {
        for h in [1u16, 5, 11, 12, 13, 17, 23, 25, 31, 60, 90] {
            for scenario in ["demo", "crowded", "idle"] {
                let mut app = at(scenario, 20, (w, h));
                render(&app);
                key(&mut app, KeyCode::Enter);
                render(&app);
                key(&mut app, KeyCode::Esc);
                key(&mut app, KeyCode::Tab);
                key(&mut app, KeyCode::Enter);
                render(&app);
                key(&mut app, KeyCode::Char('?'));
                render(&app);
                key(&mut app, KeyCode::Char('?'));
                key(&mut app, KeyCode::Esc);
                key(&mut app, KeyCode::Char('e'));
                key(&mut app, KeyCode::Down);
                render(&app);
            }
        }
    }
}

// ---- styles ------------------------------------------------------------

#[test]
fn memory_over_the_critical_level_is_marked_and_coloured() {
    // The leak scenario's GPU is above 95 % just before the OOM.
    let (system, snaps) = fixture::analysed("leak", 1, 200, "me", &Config::default());
    let near_full = snaps
        .iter()
        .position(|s| s.snapshot.gpus[0].mem.is_some_and(|m| m.used_pct() >= 96.0))
        .expect("the leak gets close to full");
    let fill = |theme: Option<Theme>| {
        let mut settings = fixture::settings(Config::default(), system.clone());
        if let Some(t) = theme {
            settings.theme = t;
        }
        let mut app = App::live(settings);
        app.update(Event::Resize(120, 40));
        for s in &snaps[..=near_full] {
            app.update(Event::Snapshot(s.clone()));
        }
        app
    };
    let app = fill(None);
    let buf = render(&app);
    // The mark follows its value ("  96%‼"), the spacing before it kept.
    let (x, y) = find(&buf, "%‼").expect("critical mark on screen");
    let cell = &buf[(x, y)];
    assert_eq!(cell.fg, app.theme().crit.fg.unwrap(), "critical colour");
    assert!(cell.modifier.contains(Modifier::BOLD));

    // Without colour the mark stays and the value is reversed.
    let app = fill(Some(Theme::new(ThemeName::Mono, Depth::TrueColor)));
    let buf = render(&app);
    let (x, y) = find(&buf, "%‼").expect("critical mark without colour");
    assert!(buf[(x, y)].modifier.contains(Modifier::REVERSED));
}

#[test]
fn warn_level_has_its_own_mark_and_colour() {
    let mut config = Config::default();
    config.thresholds.memory.warn = 50.0;
    let app = fixture::app_with(config, "demo", 1, 30, (120, 40));
    let buf = render(&app);
    // GPU 1 holds the 96 GiB job and the leak: 79 %, over warn=50, under crit=95.
    let (x, y) = find(&buf, "  79%▲").expect("warn mark on GPU 1");
    assert_eq!(buf[(x + 2, y)].fg, app.theme().warn.fg.unwrap());
    assert_eq!(buf[(x + 5, y)].fg, app.theme().warn.fg.unwrap());
}

#[test]
fn other_users_are_dimmed_and_the_selection_is_reversed() {
    let app = at("demo", 30, (120, 40));
    let buf = render(&app);
    let (_, y_alice) = find(&buf, "alice").expect("alice's process listed");
    let (_, y_me) = find(&buf, " me ").expect("my process listed");
    let row_fg = |y: u16| buf[(2, y)].fg;
    assert_eq!(row_fg(y_alice), app.theme().other_user.fg.unwrap());
    assert_ne!(row_fg(y_me), app.theme().other_user.fg.unwrap());
    // The selected (first) row is reversed.
    let body =
        vramwatch::app::layout::table_body(app.size(), app.system().gpus.len(), false, false);
    assert!(buf[(1, body.y)].modifier.contains(Modifier::REVERSED));
    assert!(!buf[(1, body.y + 1)].modifier.contains(Modifier::REVERSED));
}

#[test]
fn colours_map_down_for_small_terminals() {
    let mut settings =
        fixture::settings(Config::default(), fixture::snapshots("demo", 1, 1, "me").0);
    settings.theme = Theme::new(ThemeName::Dark, Depth::Ansi16);
    let mut app = fixture::app_from(settings, "demo", 1, 30, (120, 40));
    key(&mut app, KeyCode::Char('g'));
    let buf = render(&app);
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            let c = &buf[(x, y)];
            assert!(
                !matches!(
                    c.fg,
                    ratatui::style::Color::Rgb(..) | ratatui::style::Color::Indexed(_)
                ),
                "RGB or 256-colour at ({x},{y}) on a 16-colour terminal"
            );
        }
    }
}

#[test]
fn header_status_never_overwrites_the_left_text_at_80_columns() {
    let mut app = at("demo", 300, (80, 24));
    key(&mut app, KeyCode::Char(' '));
    let buf = render(&app);
    let header: String = (0..80).map(|x| buf[(x, 0)].symbol()).collect();
    let (x, y) = find(&buf, "❚❚ PAUSED").expect("pause mark on screen");
    assert_eq!(y, 0, "{header}");
    assert_eq!(
        buf[(x - 1, 0)].symbol(),
        " ",
        "a gap before the status: {header}"
    );
    assert!(header.contains(" vramwatch "), "{header}");
    // A dropped item goes whole, never cut mid-word.
    assert!(
        header.contains("every 1s") || !header.contains("every"),
        "{header}"
    );
    assert!(header.contains("⚠"), "alerts counted: {header}");
}

#[test]
fn process_view_shows_the_pytorch_allocator_when_the_process_publishes_it() {
    for size in [(120, 40), (200, 60)] {
        let mut app = at("demo", 90, size);
        key(&mut app, KeyCode::Char('/'));
        for c in "rank 0".chars() {
            key(&mut app, KeyCode::Char(c));
        }
        key(&mut app, KeyCode::Enter);
        key(&mut app, KeyCode::Enter);
        let buf = render(&app);
        let screen = text(&buf);
        assert!(screen.contains("PID 48211"), "{screen}");
        let (x, y) = find(&buf, "outside the allocator").expect("allocator figures");
        assert_eq!(buf[(x, y)].style().fg, app.theme().label.fg, "labelled");
        insta::assert_snapshot!(format!("process_torch_{}x{}", size.0, size.1), screen);
    }
}

// ---- the small edges -----------------------------------------------------

fn footer(buf: &Buffer) -> String {
    let y = buf.area.height - 1;
    (0..buf.area.width)
        .map(|x| buf[(x, y)].symbol())
        .collect::<String>()
        .trim_end()
        .to_owned()
}

#[test]
fn the_footer_drops_whole_hints_when_narrow() {
    let whole = [
        "quit",
        "help",
        "filter",
        "sort",
        "details",
        "GPUs/procs",
        "events",
        "pause",
        "record",
        "back",
        "terminate",
        "kill",
        "GPU",
        "play",
        "step",
        "speed",
        "live",
        "scrub",
    ];
    let mut screens: Vec<App> = Vec::new();
    for w in [50u16, 63, 80, 99] {
        let mut app = at("demo", 30, (w, 24));
        screens.push(fixture::app("demo", 1, 30, (w, 24)));
        key(&mut app, KeyCode::Char(' '));
        screens.push(app);
        let mut app = at("demo", 30, (w, 24));
        key(&mut app, KeyCode::Enter);
        screens.push(app);
    }
    for app in &screens {
        let f = footer(&render(app));
        let last = f.split_whitespace().last().unwrap_or("");
        assert!(
            whole.contains(&last),
            "cut footer at {:?}: {f:?}",
            app.size()
        );
        assert!(f.contains("? help"), "{f}");
    }
}

#[test]
fn every_sorted_column_shows_its_arrow() {
    for w in [80u16, 120, 200] {
        let mut app = at("demo", 30, (w, 40));
        let cols = vramwatch::app::layout::sortable_columns(&app.config().display.columns, w);
        for _ in 0..cols.len() {
            key(&mut app, KeyCode::Char('>'));
            let c = app.table().sort.column;
            let title = vramwatch::ui::process_table::title(c);
            let arrow = if app.table().sort.descending {
                '▼'
            } else {
                '▲'
            };
            let t = text(&render(&app));
            assert!(
                t.contains(&format!("{title}{arrow}")),
                "{w}: {c:?} has no arrow:\n{t}"
            );
        }
    }
}

#[test]
fn the_trend_says_it_is_warming_up() {
    let app = at("demo", 3, (120, 40));
    let t = text(&render(&app));
    assert!(t.contains("warming up"), "{t}");
    let app = at("demo", 60, (120, 40));
    let t = text(&render(&app));
    assert!(!t.contains("warming up"), "{t}");
}

/// At every size, the drill-down of the first process matching `filter`
/// (demo, 90 s in) shows each of `wholes` unbroken.
fn drill_down_keeps_whole(filter: &str, wholes: &[&str]) {
    for size in SIZES {
        let mut app = at("demo", 90, size);
        key(&mut app, KeyCode::Char('/'));
        for c in filter.chars() {
            key(&mut app, KeyCode::Char(c));
        }
        key(&mut app, KeyCode::Enter);
        key(&mut app, KeyCode::Enter);
        let t = text(&render(&app));
        for whole in wholes {
            assert!(t.contains(whole), "{size:?}: `{whole}` broken:\n{t}");
        }
    }
}

#[test]
fn the_pytorch_figures_keep_each_value_with_its_label() {
    drill_down_keeps_whole(
        "rank 0",
        &[
            "(read 0.0s ago)",
            "PYTORCH_CUDA_ALLOC_CONF (unset)",
            "largest free block 1.13G",
            "outside the allocator 512M",
        ],
    );
}

#[test]
fn the_process_facts_keep_each_value_with_its_label() {
    // The vLLM server of the demo runs in a Kubernetes pod: at 80 columns
    // its facts take two lines, and "pod" must not end one of them.
    drill_down_keeps_whole(
        "vllm",
        &[
            "pod inference/llm-serve-0",
            "container vllm (c41d9e0f5a27)",
            "user svc-infer",
        ],
    );
}

#[test]
fn serving_shows_in_the_header() {
    let (system, snaps) = fixture::analysed("demo", 1, 5, "me", &Config::default());
    let mut settings = fixture::settings(Config::default(), system);
    settings.serving = Some("0.0.0.0:9400".into());
    let mut app = App::live(settings);
    app.update(Event::Resize(120, 40));
    for s in snaps {
        app.update(Event::Snapshot(s));
    }
    let buf = render(&app);
    let header: String = (0..120).map(|x| buf[(x, 0)].symbol()).collect();
    assert!(header.contains("serving :9400"), "{header}");
    let app = at("demo", 5, (120, 40));
    let buf = render(&app);
    let header: String = (0..120).map(|x| buf[(x, 0)].symbol()).collect();
    assert!(!header.contains("serving"), "{header}");
}

#[test]
fn an_exited_process_is_described_as_exited() {
    // The leaking eval loop ran out of memory at 12:01:27.
    let mut app = at("demo", 90, (120, 40));
    key(&mut app, KeyCode::Char('/'));
    for c in "eval_loop".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    // Its row uses nothing now: no SM%, CPU% or RSS after "exited".
    let table = text(&render(&app));
    let row = table
        .lines()
        .find(|l| l.contains("52090"))
        .unwrap_or_else(|| panic!("{table}"));
    // "exited", its peak, then its age: nothing between.
    let words: Vec<&str> = row.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "exited").expect("exited");
    assert_eq!(words[at + 1..at + 3], ["43.0G", "1m"], "{row}");
    key(&mut app, KeyCode::Enter);
    let t = text(&render(&app));
    assert!(t.contains("PID 52090"), "{t}");
    assert!(
        t.contains("exited 12:01:27 with GPU 1 at 100% full (suspected OOM)"),
        "{t}"
    );
    assert!(t.contains("peak 43.0G"), "{t}");
    assert!(!t.contains("growth") && !t.contains("LEAK"), "{t}");
}

#[test]
fn cards_are_labelled_at_every_size() {
    for size in SIZES {
        let app = at("demo", 90, size);
        let t = text(&render(&app));
        for label in ["mem", "util", "reserved", "peak", "temp", "power", "trend"] {
            assert!(t.contains(label), "{size:?}: no `{label}`:\n{t}");
        }
        // The 80×24 screen keeps the table its rows.
        let rows = t
            .lines()
            .filter(|l| l.contains(" H200") || l.contains("GPU "))
            .count();
        assert!(rows >= 4, "{t}");
    }
}

#[test]
fn the_events_pane_scrolls_and_selects() {
    // 120×30: fewer lines than events (at 120×40 the open pane takes the
    // rows the processes leave, and holds all ten).
    let mut app = at("demo", 90, (120, 30));
    key(&mut app, KeyCode::Char('e'));
    for _ in 0..10 {
        key(&mut app, KeyCode::Down);
    }
    let buf = render(&app);
    let t = text(&buf);
    insta::assert_snapshot!("events_selected_120x30", t);
    // The oldest event is in view, selected (reversed).
    let (_, y) = find(&buf, "PID 39004 started").expect("scrolled to the oldest");
    assert!(buf[(2, y)].modifier.contains(Modifier::REVERSED));
    // The events above the view are counted in the pane's title, in red
    // while one of them is an alert or an OOM (the newest are scrolled
    // out of sight: a new critical alert must not go unseen).
    let (x, y) = find(&buf, "newer ").expect("the newer events counted");
    let title: String = (0..buf.area.width).map(|c| buf[(c, y)].symbol()).collect();
    assert!(title.contains("events") && title.contains("↑ "), "{title}");
    assert_eq!(buf[(x, y)].fg, app.theme().crit.fg.unwrap(), "{title}");
    // Back at the top, no such word.
    for _ in 0..10 {
        key(&mut app, KeyCode::Up);
    }
    assert!(find(&render(&app), "newer ").is_none());
}

#[test]
fn spare_table_rows_go_to_the_cards_charts() {
    // The demo at 200×60 lists 9 processes: the cards' charts take rows
    // the table leaves, up to the cap (each row costs terminal bytes).
    let app = at("demo", 90, (200, 60));
    let t = text(&render(&app));
    let lines: Vec<&str> = t.lines().collect();
    let scales = lines.iter().filter(|l| l.starts_with("│140G ")).count();
    assert_eq!(scales, 4, "a scale on every card's chart:\n{t}");
    assert_eq!(
        vramwatch::app::layout::overview_of(&app).chart,
        vramwatch::config::DEFAULT_CHART_ROWS
    );
    // The table's rows and the mouse's: the drawn table is where
    // `overview_of` puts it.
    let o = vramwatch::app::layout::overview_of(&app);
    assert!(o.chart > 1, "{o:?}");
    assert!(lines[o.table.y as usize].starts_with("GPU      PID"), "{t}");
    // Processes enough to fill the table: one-row sparklines as before.
    let app = at("crowded", 60, (200, 60));
    assert_eq!(vramwatch::app::layout::overview_of(&app).chart, 1);
    let t = text(&render(&app));
    assert!(!t.contains("│140G "), "{t}");
    // `[display] chart_rows` caps them: 1 keeps one-row sparklines, 5
    // lets them take more of the rows the table leaves.
    for (cap, want) in [(1, 1), (5, 5)] {
        let mut config = Config::default();
        config.display.chart_rows = cap;
        let mut app = fixture::app_with(config, "demo", 1, 90, (200, 60));
        key(&mut app, KeyCode::Char('g'));
        assert_eq!(vramwatch::app::layout::overview_of(&app).chart, want);
        let t = text(&render(&app));
        assert_eq!(t.contains("│140G "), want > 1, "{t}");
    }
}

#[test]
fn ascii_draws_every_screen_with_ascii_only() {
    // `--ascii` / `[display] ascii = true`: no box drawing, blocks or
    // braille on any screen, at any size; the layout stays where it was.
    for size in [(80, 24), (120, 40), (200, 60)] {
        let mut config = Config::default();
        config.display.ascii = true;
        let mut app = fixture::app_with(config, "demo", 1, 90, size);
        key(&mut app, KeyCode::Char('g'));
        let mut screens = vec![("overview", render(&app))];
        key(&mut app, KeyCode::Enter);
        screens.push(("drill-down", render(&app)));
        key(&mut app, KeyCode::Esc);
        key(&mut app, KeyCode::Char('?'));
        screens.push(("help", render(&app)));
        for (name, buf) in &screens {
            let t = text(buf);
            assert!(t.is_ascii(), "{name} {size:?}:\n{t}");
            // The same cells as the drawing it stands in for.
            assert_eq!(t.lines().count(), size.1 as usize);
        }
        if size == (120, 40) {
            insta::assert_snapshot!("overview_ascii_120x40", text(&screens[0].1));
        }
        // The plain drawing does use box drawing and blocks.
        let plain = text(&render(&fixture::app("demo", 1, 90, size)));
        assert!(!plain.is_ascii());
    }
}

#[test]
fn rows_the_processes_leave_hold_the_events_pane_which_says_what_comes_there() {
    // One GPU, one process at 80×24, 120×40 and 200×60, before any event.
    for size in SIZES {
        let app = at("training", 3, size);
        let buf = render(&app);
        let s = text(&buf);
        assert_eq!(app.events().len(), 0, "{:?}", app.events());
        let (_, rule) = find(&buf, " events ").unwrap_or_else(|| panic!("{size:?}:\n{s}"));
        let (x, y) = find(&buf, "no events yet").unwrap_or_else(|| panic!("{size:?}:\n{s}"));
        assert_eq!(y, rule + 1, "under its rule");
        assert_eq!(Some(buf[(x, y)].fg), app.theme().dim.fg, "dimmed");
        // The whole sentence is on screen, wrapped where narrow.
        assert!(s.contains("listed here as they come"), "{size:?}:\n{s}");
        // Under the table: its header, the process, the detail line.
        let (_, header) = find(&buf, "GPU MEM").expect("the table's header");
        assert_eq!(rule, header + 3, "{size:?}:\n{s}");
    }
}

#[test]
fn one_line_gpu_rows_share_one_bar_width() {
    // 80×24 with the events pane: a line per GPU. A row with a rate and a
    // forecast had a shorter bar than its neighbours, so the fills could
    // not be compared down the column.
    for secs in [40, 60, 90] {
        let mut app = at("demo", secs, (80, 24));
        key(&mut app, KeyCode::Char('e'));
        let t = text(&render(&app));
        let bars: Vec<(usize, usize)> = t
            .lines()
            .filter(|l| l.contains("/140G"))
            .map(|l| {
                let cells: Vec<char> = l.chars().collect();
                let start = cells
                    .iter()
                    .position(|c| "█▉▊▋▌▍▎▏┃░".contains(*c))
                    .unwrap();
                let len = cells[start..]
                    .iter()
                    .take_while(|c| "█▉▊▋▌▍▎▏┃░".contains(**c))
                    .count();
                (start, len)
            })
            .collect();
        assert_eq!(bars.len(), 4, "{t}");
        assert!(
            bars.iter().all(|b| *b == bars[0]),
            "{secs} s: {bars:?}\n{t}"
        );
    }
}

/// `eval_spike/cached` on the H200 (corpus `eleventh/01`): an evaluation
/// pass's transient kept in the cache holds the GPU flat at 136 GiB while
/// the tensors inside it leak until the OOM. The leak is flagged from the
/// tensors, said so, and the table gives their rate, not the driver's 0.
#[test]
fn a_leak_hidden_in_the_allocators_cache_is_flagged_from_its_tensors() {
    let mut app = replay(
        "tests/fixtures/corpus/eleventh/01-gpu0-eval_spike-cached-s1.0-seed14.jsonl.zst",
        (120, 40),
    );
    let mut screen = String::new();
    for _ in 0..120 {
        key(&mut app, KeyCode::Right);
        screen = text(&render(&app));
        if screen.contains("LEAK") {
            break;
        }
    }
    let row = screen
        .lines()
        .find(|l| l.contains("LEAK"))
        .unwrap_or_else(|| panic!("never flagged:\n{screen}"));
    // Its tensors' rate (~0.3 GB/s), where the driver's figure stands still.
    let rate = row
        .split('▲')
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no rate: {row}"));
    assert!(rate.ends_with("M/s") && !rate.starts_with('0'), "{row}");
    // Stepping back and on again analyses the replay anew from the slots
    // kept: each slot with its own allocator figures, so the flag holds.
    key(&mut app, KeyCode::Left);
    for _ in 0..3 {
        key(&mut app, KeyCode::Right);
    }
    let again = text(&render(&app));
    assert!(again.contains("LEAK"), "after Left and Right:\n{again}");
    key(&mut app, KeyCode::Enter);
    let view = text(&render(&app));
    // With the tensors' rate (the growth beside it is the driver's).
    assert!(view.contains("LEAK suspected in its tensors +"), "{view}");
}

/// A process whose allocator counted an out-of-memory error and that
/// exited 2 s later is described as exited after it, not as a second
/// suspected OOM.
#[test]
fn an_exit_after_a_counted_oom_is_described_after_it() {
    use std::sync::Arc;
    use vramwatch::model::ProcSample;
    use vramwatch::model::alloc::{AllocStats, DeviceAlloc};
    use vramwatch::sampler::{OomCounts, diff_events};
    let (system, mut snaps) = fixture::snapshots("demo", 1, 20, "me");
    for (i, s) in snaps.iter_mut().enumerate() {
        if (5..12).contains(&i) {
            s.procs.push(ProcSample {
                pid: 4242,
                start_time: 99,
                gpu: 0,
                mem: Some(1 << 30),
                name: Some("oom_job.py".into()),
                command: Some("python oom_job.py".into()),
                torch: Some(Arc::new(AllocStats {
                    devices: vec![DeviceAlloc {
                        num_ooms: u64::from(i >= 9),
                        ..Default::default()
                    }],
                    ..Default::default()
                })),
                ..Default::default()
            });
        }
    }
    let mut counts = OomCounts::default();
    for i in 1..snaps.len() {
        let ev = diff_events(&snaps[i - 1], &snaps[i], &mut counts);
        snaps[i].events = ev;
    }
    let timeline = vramwatch::app::playback::VecTimeline(snaps);
    let mut app = App::replaying_from(
        fixture::settings(Config::default(), system),
        Box::new(timeline),
    );
    app.update(Event::Resize(120, 40));
    key(&mut app, KeyCode::End);
    key(&mut app, KeyCode::Char('/'));
    for c in "oom_job".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Enter);
    let t = text(&render(&app));
    assert!(t.contains("PID 4242"), "{t}");
    assert!(t.contains("after running out of memory"), "{t}");
    assert!(!t.contains("(suspected OOM)"), "{t}");
}
