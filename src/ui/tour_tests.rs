//! Screens drawn into ratatui's TestBackend for what a new user's tour
//! found: marked figures keep their spacing, scrolled commands show where
//! they are cut, help scrolls to its last line, the GPU view's time axis
//! spans its data, and `K` acts only on a process shown selected.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use crate::analysis::AnalysisConfig;
use crate::app::playback::VecTimeline;
use crate::app::{App, Event, Screen, fixture};
use crate::config::{Column, Config};
use crate::model::units::MIB;
use crate::model::{MemInfo, Snapshot, SystemInfo};
use crate::pipeline::analyse_all;

const SIZES: [(u16, u16); 3] = [(80, 24), (120, 40), (200, 60)];

/// The screen's lines, trailing blanks dropped.
fn lines(app: &App) -> Vec<String> {
    let (w, h) = app.size();
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("test backend");
    t.draw(|f| crate::ui::draw(f, app)).expect("draw");
    let buf = t.backend().buffer();
    (0..h)
        .map(|y| {
            let l: String = (0..w).map(|x| buf[(x, y)].symbol()).collect();
            l.trim_end().to_owned()
        })
        .collect()
}

fn press(app: &mut App, code: KeyCode, m: KeyModifiers) {
    app.update(Event::Key(KeyEvent::new(code, m)));
}

fn key(app: &mut App, code: KeyCode) {
    let m = match code {
        KeyCode::Char(c) if c.is_ascii_uppercase() => KeyModifiers::SHIFT,
        _ => KeyModifiers::NONE,
    };
    press(app, code, m);
}

/// `seconds` of the demo, each snapshot (and the GPUs' facts) changed by
/// `edit`, in a terminal of `size`.
fn demo_edited(
    seconds: u64,
    size: (u16, u16),
    edit_system: impl Fn(&mut SystemInfo),
    edit: impl Fn(&mut Snapshot),
) -> App {
    let (system, mut snaps) = fixture::snapshots("demo", 1, seconds, "me");
    let mut system = (*system).clone();
    edit_system(&mut system);
    snaps.iter_mut().for_each(edit);
    let settings = fixture::settings(Config::default(), Arc::new(system));
    let analysed = analyse_all(&AnalysisConfig::from_config(&settings.config), snaps);
    let mut app = App::live(settings);
    app.update(Event::Resize(size.0, size.1));
    for a in analysed {
        app.update(Event::Snapshot(a));
    }
    app
}

/// GPU 0 as an H100 80GB (79.6G as NVML counts it) with `pct` % in use,
/// and at 100% utilisation.
fn h100_at(pct: u64, size: (u16, u16)) -> App {
    let total = 81_559 * MIB;
    demo_edited(
        20,
        size,
        |s| {
            s.gpus[0].name = "NVIDIA H100 80GB HBM3".into();
            s.gpus[0].memory_total = total;
        },
        |s| {
            let g = &mut s.gpus[0];
            let used = total / 100 * pct;
            g.mem = Some(MemInfo {
                used,
                reserved: 0,
                free: total - used,
                total,
            });
            g.mem_peak = None;
            g.util_gpu = Some(100);
        },
    )
}

#[test]
fn a_marked_figure_keeps_the_spacing_of_an_unmarked_one() {
    for size in SIZES {
        let crit = lines(&h100_at(96, size)).join("\n");
        let normal = lines(&h100_at(50, size)).join("\n");
        // The two-line form shows "mem  96%"; a card "76.4G / 79.6G  96%".
        let (c, n) = if size.0 < 100 {
            ("mem  96%‼", "mem  50% ")
        } else {
            ("79.6G  96%‼", "79.6G  50% ")
        };
        assert!(crit.contains(c), "{size:?}: {c}\n{crit}");
        assert!(normal.contains(n), "{size:?}: {n}\n{normal}");
        assert!(
            !crit.contains("G‼") && !crit.contains("m‼") && !crit.contains("l‼"),
            "{size:?}: a mark glued to the figure before it\n{crit}"
        );
        // 100% keeps a space after its label too.
        assert!(crit.contains("util 100%‼"), "{size:?}\n{crit}");
    }
}

/// The COMMAND cells of the rows of `pids`, as drawn.
fn command_cells(app: &App, pids: &[u32]) -> Vec<String> {
    let w = app.size().0;
    let x = crate::app::layout::fit_columns(&app.config().display.columns, w);
    let spans = crate::app::layout::column_spans(&x, w);
    let (cx, cw) = x
        .iter()
        .zip(&spans)
        .find(|(c, _)| **c == Column::Command)
        .map(|(_, s)| *s)
        .expect("a command column");
    let screen = lines(app);
    pids.iter()
        .map(|pid| {
            let row = screen
                .iter()
                .find(|l| {
                    l.split_whitespace().nth(1) == Some(&pid.to_string()) && !l.contains("▸ PID")
                })
                .unwrap_or_else(|| panic!("PID {pid} listed\n{}", screen.join("\n")));
            row.chars()
                .skip(cx as usize)
                .take(cw as usize)
                .collect::<String>()
                .trim_end()
                .to_owned()
        })
        .collect()
}

#[test]
fn a_scrolled_command_shows_where_it_is_cut_and_reaches_its_end() {
    // Two ranks of one job whose commands differ only at the very end.
    let cmd =
        |r| format!("python train.py --model llama-8b --ddp --batch 16 --lr 3e-4 --local-rank={r}");
    let mut app = demo_edited(
        20,
        (80, 24),
        |_| {},
        |s| {
            for p in &mut s.procs {
                match p.pid {
                    48211 => p.command = Some(cmd(0).into()),
                    48212 => p.command = Some(cmd(1).into()),
                    _ => {}
                }
            }
        },
    );
    let ranks = [48211, 48212];
    let width = app.command_width().expect("a command column");
    let mut seen = Vec::new();
    for _ in 0..20 {
        press(&mut app, KeyCode::Right, KeyModifiers::SHIFT);
        let by = app.table().hscroll as usize;
        if seen.last() == Some(&by) {
            break;
        }
        seen.push(by);
        let cells = command_cells(&app, &ranks);
        for (cell, r) in cells.iter().zip(0..) {
            let full = cmd(r);
            let body = cell.trim_start_matches('…').trim_end_matches('…');
            assert!(cell.starts_with('…'), "{by}: the hidden start: {cell}");
            assert!(
                cell.ends_with('…') || full.ends_with(body),
                "{by}: cut with no mark: {cell}"
            );
            assert!(full.contains(body), "{by}: {cell}");
            assert!(cell.chars().count() <= width);
        }
    }
    // The furthest scroll shows each rank's end, and they differ.
    let cells = command_cells(&app, &ranks);
    assert!(cells[0].ends_with("--local-rank=0"), "{cells:?}");
    assert!(cells[1].ends_with("--local-rank=1"), "{cells:?}");
    assert!(seen.len() > 2, "it scrolled: {seen:?}");
    // The detail line marks its cut end too.
    let mut app = demo_edited(20, (80, 24), |_| {}, |_| {});
    let long = app
        .rows()
        .iter()
        .position(|r| r.series.facts.label().chars().count() > 60)
        .expect("a long command");
    for _ in 0..long {
        key(&mut app, KeyCode::Down);
    }
    let detail = lines(&app)
        .into_iter()
        .find(|l| l.starts_with(" ▸ PID"))
        .expect("the detail line");
    assert!(detail.ends_with('…'), "{detail}");
}

#[test]
fn help_scrolls_to_its_last_line_and_back_to_its_first() {
    for size in SIZES {
        let mut app = demo_edited(5, size, |_| {}, |_| {});
        key(&mut app, KeyCode::Char('?'));
        let first = lines(&app).join("\n");
        assert!(first.contains("quit"), "{size:?}\n{first}");
        key(&mut app, KeyCode::Char('G'));
        let end = lines(&app).join("\n");
        assert!(
            end.contains("an event after the moment shown"),
            "{size:?}: the last line\n{end}"
        );
        assert!(!end.contains("↓ more"), "{size:?}\n{end}");
        // From the end, one line up moves at once.
        let at_end = app.help_scroll();
        key(&mut app, KeyCode::Up);
        assert_eq!(app.help_scroll() + 1, at_end.max(1), "{size:?}");
        key(&mut app, KeyCode::End);
        assert_eq!(app.help_scroll(), at_end, "{size:?}: End as G");
        key(&mut app, KeyCode::Home);
        assert_eq!(lines(&app).join("\n"), first, "{size:?}: Home");
        key(&mut app, KeyCode::Char('G'));
        key(&mut app, KeyCode::Char('g'));
        assert_eq!(lines(&app).join("\n"), first, "{size:?}: g");
    }
}

/// The x-axis labels of the GPU view's memory chart.
fn memory_axis(app: &App) -> String {
    let screen = lines(app);
    let top = screen
        .iter()
        .position(|l| l.contains(" memory GiB "))
        .expect("the memory chart");
    screen[top..]
        .iter()
        .find(|l| l.contains("now"))
        .expect("its time axis")
        .split(|c: char| c.is_whitespace() || c == '│')
        .filter(|w| w.starts_with('-') || *w == "now")
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_gpu_view_spans_the_data_it_has_live_and_in_replay() {
    for size in [(120, 40), (200, 60)] {
        // 30 one-second snapshots: 29 s of data.
        let mut app = demo_edited(30, size, |_| {}, |_| {});
        key(&mut app, KeyCode::Tab);
        key(&mut app, KeyCode::Enter);
        assert_eq!(app.screen(), Screen::Gpu(0));
        assert_eq!(memory_axis(&app), "-29s -14s now", "{size:?}");
        // A replay of the same snapshots at the same moment: the same axis.
        let (system, snaps) = fixture::snapshots("demo", 1, 30, "me");
        let mut replay = App::replaying_from(
            fixture::settings(Config::default(), system),
            Box::new(VecTimeline(snaps)),
        );
        replay.update(Event::Resize(size.0, size.1));
        key(&mut replay, KeyCode::End);
        key(&mut replay, KeyCode::Tab);
        key(&mut replay, KeyCode::Enter);
        assert_eq!(replay.screen(), Screen::Gpu(0));
        assert_eq!(memory_axis(&replay), memory_axis(&app), "{size:?}");
    }
    // With more history than the window, the window.
    let mut app = demo_edited(400, (120, 40), |_| {}, |_| {});
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Enter);
    assert_eq!(memory_axis(&app), "-2m24s -1m12s now");
}

#[test]
fn kill_acts_only_on_a_process_shown_selected() {
    let mut app = demo_edited(10, (120, 40), |_| {}, |_| {});
    // The GPUs have the focus: the table's selection is not highlighted.
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Char('K'));
    assert!(app.dialog().is_none(), "no dialog for an unseen selection");
    let msg = app.message().expect("a refusal");
    assert!(!msg.ok && msg.text.contains("select a process first"));
    let status = lines(&app).join("\n");
    assert!(status.contains("select a process first"), "{status}");
    key(&mut app, KeyCode::Char('T'));
    assert!(app.dialog().is_none(), "T as K");
    // The GPU view lists processes but selects none.
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.screen(), Screen::Gpu(0));
    key(&mut app, KeyCode::Char('K'));
    assert!(app.dialog().is_none());
    // Back in the table, with its row highlighted: K asks about that row.
    key(&mut app, KeyCode::Esc);
    key(&mut app, KeyCode::Tab);
    if app.nav().focus != crate::app::Pane::Procs {
        key(&mut app, KeyCode::Tab);
    }
    key(&mut app, KeyCode::Char('K'));
    let Some(crate::app::Dialog::ConfirmSignal { id, .. }) = app.dialog() else {
        panic!("no dialog");
    };
    assert_eq!(Some(*id), app.table().selected);
}
