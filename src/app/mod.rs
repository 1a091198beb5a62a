//! The one owner of state. `App::update(Event) -> Option<Action>` is the
//! only mutator (The Elm Architecture); the UI draws `&App`.

pub mod action;
pub mod event;
pub mod fixture;
pub mod replay;
pub mod rows;
pub mod view;

use std::collections::VecDeque;
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, MouseEventKind};

use crate::analysis::{AnalysisConfig, Analyzer};
use crate::config::keys::Action as Intent;
use crate::config::{Column, Config};
use crate::history::{History, ProcId, ProcSeries};
use crate::model::{Event as ModelEvent, Millis, Snapshot, SystemInfo};

pub use action::Action;
pub use event::{Event, Outcome, RecordingStatus};
use rows::Row;
pub use view::{Dialog, Pane, Playback, Screen, Signal, Sort, ViewState};

/// Slots re-analysed before the position when a replay moves backwards.
const ANALYSIS_CONTEXT: u64 = 60;

/// How many events the events pane keeps.
const EVENTS_KEPT: usize = 500;

/// Live sampling or a recording played back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Live,
    Replay(Playback),
}

/// How times are shown: local time for people, UTC for tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    Local,
    Utc,
}

impl Clock {
    /// `HH:MM:SS` of a unix-ms time.
    pub fn hms(self, t_ms: Millis) -> String {
        use chrono::{DateTime, Local, Utc};
        let Some(utc) = DateTime::<Utc>::from_timestamp_millis(t_ms as i64) else {
            return "--:--:--".into();
        };
        match self {
            Clock::Local => utc.with_timezone(&Local).format("%H:%M:%S").to_string(),
            Clock::Utc => utc.format("%H:%M:%S").to_string(),
        }
    }
}

/// A line shown at the bottom for a few seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub text: String,
    pub ok: bool,
    pub t_ms: Millis,
}

/// Recording state for the header.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordingState {
    pub path: String,
    pub bytes: u64,
    pub warning: Option<String>,
}

/// A forecast as shown: seconds from the time on screen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Eta {
    pub low_s: f64,
    pub eta_s: f64,
    /// `None`: growth may stop before it is full.
    pub high_s: Option<f64>,
}

impl Eta {
    /// "~2m10s (1m50s–2m20s)", or "~2m10s (≥1m50s)" when it may not fill.
    /// Rounded to a step that grows with the time (1 s under a minute, 10 s
    /// under ten, then minutes), as precise as a forecast is, and steady on
    /// screen.
    pub fn describe(&self) -> String {
        use crate::model::units::duration_short as d;
        let step = |s: f64| -> f64 {
            if s < 60.0 {
                1.0
            } else if s < 600.0 {
                10.0
            } else if s < 3600.0 {
                60.0
            } else {
                600.0
            }
        };
        let r = |s: f64, f: fn(f64) -> f64| (f(s / step(s)) * step(s)) as u64;
        let eta = d(r(self.eta_s, f64::round));
        let low = d(r(self.low_s, f64::floor));
        match self.high_s {
            Some(h) => format!("~{eta} ({low}–{})", d(r(h, f64::ceil))),
            None => format!("~{eta} (≥{low})"),
        }
    }

    /// Sure to be full within `secs`: even the latest end is sooner.
    pub fn surely_within(&self, secs: f64) -> bool {
        self.high_s.is_some_and(|h| h < secs)
    }

    fn of(f: &crate::analysis::Forecast, now_ms: Millis) -> Eta {
        let age = now_ms.saturating_sub(f.made_ms) as f64 / 1000.0;
        Eta {
            low_s: (f.low_s - age).max(0.0),
            eta_s: (f.eta_s - age).max(0.0),
            high_s: f.high_s.map(|h| (h - age).max(0.0)),
        }
    }
}

/// What the analysis says about a GPU.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuInsight {
    /// Growth of used memory, bytes/s.
    pub rate_bps: f64,
    pub phase: &'static str,
    /// When it will be full, when growth is sustained.
    pub full_in: Option<Eta>,
}

/// What the analysis says about a process.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcInsight {
    pub rate_bps: f64,
    pub phase: &'static str,
    pub leak: bool,
    /// When it reaches the GPU's free memory.
    pub full_in: Option<Eta>,
}

/// Facts read on demand for the drill-down.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Detail {
    pub id: Option<ProcId>,
    pub cwd: Option<String>,
}

/// Everything the dashboard knows.
pub struct App {
    pub config: Config,
    pub system: Arc<SystemInfo>,
    pub history: History,
    pub view: ViewState,
    pub mode: Mode,
    /// The user running vramwatch: other users' processes are dimmed.
    pub me: String,
    pub read_only: bool,
    /// Processes are simulated: signals are not sent.
    pub simulated: bool,
    pub clock: Clock,
    pub events: VecDeque<ModelEvent>,
    pub message: Option<Message>,
    pub recording: Option<RecordingState>,
    pub detail: Detail,
    pub theme: crate::ui::theme::Theme,
    /// The recording being replayed and what of it is loaded.
    pub replay: Option<replay::Replay>,
    /// Peaks, growth, phases, leaks, forecasts, alerts.
    pub analysis: Analyzer,
    /// The time of the last snapshot the analysis has seen.
    analyzed_to: Option<Millis>,
    /// Newest sample time seen (live) or the recording's end (replay).
    pub now_ms: Millis,
    pub quit: bool,
}

impl App {
    pub fn new(config: Config, system: Arc<SystemInfo>, mode: Mode, me: String) -> App {
        let s = &config.sampling;
        let interval_ms = s.interval.as_millis().max(1) as u64;
        let cap = (s.history.as_millis() as u64 / interval_ms).max(2) as usize;
        let history = History::new(cap, interval_ms, s.exited_keep.as_millis() as u64);
        let mut view = ViewState::default();
        if let Mode::Replay(_) = mode {
            view.cursor = Some(0);
        }
        let theme =
            crate::ui::theme::Theme::new(config.display.theme, crate::ui::theme::Depth::TrueColor);
        let analysis = Analyzer::new(&AnalysisConfig::from_config(&config));
        App {
            config,
            system,
            history,
            view,
            mode,
            me,
            read_only: false,
            simulated: false,
            clock: Clock::Local,
            events: VecDeque::new(),
            message: None,
            recording: None,
            detail: Detail::default(),
            theme,
            replay: None,
            analysis,
            analyzed_to: None,
            now_ms: 0,
            quit: false,
        }
    }

    /// An App over a recording, at its start, paused.
    pub fn replaying_from(
        config: Config,
        system: Arc<SystemInfo>,
        timeline: Box<dyn replay::Timeline>,
        me: String,
    ) -> App {
        let mut app = App::new(
            config,
            system,
            Mode::Replay(Playback {
                playing: false,
                speed: 1,
            }),
            me,
        );
        app.events = timeline.events().into();
        let r = replay::Replay::new(timeline);
        app.now_ms = r.span().map_or(0, |s| s.1);
        app.replay = Some(r);
        app.seek(0);
        app
    }

    /// Shows recording position `target`, loading what History lacks.
    fn seek(&mut self, target: usize) {
        let Some(r) = self.replay.as_mut() else {
            return;
        };
        if r.is_empty() {
            return;
        }
        let target = target.min(r.len() - 1);
        let loaded = !self.history.is_empty();
        if !(loaded && target >= r.lo && target <= r.hi) {
            let (from, fresh) = if loaded && target > r.hi && target - r.hi <= replay::STEP_LOAD {
                (r.hi + 1, false)
            } else {
                (target.saturating_sub(replay::PRELOAD), true)
            };
            if fresh {
                self.history = self.history.cleared();
                self.analyzed_to = None;
                r.lo = from;
            }
            for i in from..=target {
                match r.timeline.get(i) {
                    Some(s) => self.history.push(&s),
                    None => r.unreadable += 1,
                }
            }
            r.hi = target;
            // Keep `lo` honest once History has evicted the oldest slots.
            if let Some(t) = self.history.time_at(self.history.first_slot()) {
                r.lo = r.lo.max(r.timeline.position_at(t));
            }
        }
        r.pos = target;
        let at_end = target + 1 == r.len();
        let t = r.timeline.time(target);
        self.view.cursor = self.history.slot_at_time(t);
        self.sync_analysis();
        if at_end && let Mode::Replay(p) = &mut self.mode {
            p.playing = false;
        }
        self.fix_selection();
    }

    /// (position, length) of the replay.
    pub fn replay_position(&self) -> Option<(usize, usize)> {
        self.replay.as_ref().map(|r| (r.pos, r.len()))
    }

    // ---- derived state --------------------------------------------------

    /// The slot on screen: the cursor when paused or replaying, else the newest.
    pub fn slot(&self) -> Option<u64> {
        match self.view.cursor {
            Some(c) => Some(c.clamp(
                self.history.first_slot(),
                self.history.last_slot().unwrap_or(c),
            )),
            None => self.history.last_slot(),
        }
    }

    /// Time of the slot on screen.
    pub fn shown_ms(&self) -> Millis {
        self.slot()
            .and_then(|s| self.history.time_at(s))
            .unwrap_or(self.now_ms)
    }

    pub fn paused(&self) -> bool {
        matches!(self.mode, Mode::Live) && self.view.cursor.is_some()
    }

    /// Growth of a process in bytes/s, where known.
    pub fn rate_of(&self, s: &ProcSeries) -> Option<f64> {
        self.proc_insight(&s.id).map(|i| i.rate_bps)
    }

    /// The analysis of GPU `index`, as of the newest sample analysed (live)
    /// or the position shown (replay).
    pub fn gpu_insight(&self, index: usize) -> Option<GpuInsight> {
        let a = self.analysis.gpu(index as u32)?;
        let now = self.analyzed_to.unwrap_or(self.now_ms);
        Some(GpuInsight {
            rate_bps: a.rate.map_or(0.0, |r| r.bps),
            phase: a.phase.name(),
            full_in: a.forecast.as_ref().map(|f| Eta::of(f, now)),
        })
    }

    /// The analysis of a process on one GPU.
    pub fn proc_insight(&self, id: &ProcId) -> Option<ProcInsight> {
        let a = self.analysis.process(&id.key, id.gpu)?;
        let now = self.analyzed_to.unwrap_or(self.now_ms);
        Some(ProcInsight {
            rate_bps: a.rate.map_or(0.0, |r| r.bps),
            phase: a.phase.name(),
            leak: a.leak.is_some(),
            full_in: a.forecast.as_ref().map(|f| Eta::of(f, now)),
        })
    }

    /// Brings the analysis to the slot on screen in a replay: forward from
    /// where it was, or afresh over the loaded window before it.
    fn sync_analysis(&mut self) {
        let Some(slot) = self.slot() else { return };
        let Some(t) = self.history.time_at(slot) else {
            return;
        };
        if self.analyzed_to == Some(t) {
            return;
        }
        let from = match self.analyzed_to.and_then(|a| self.history.slot_at_time(a)) {
            Some(done) if self.analyzed_to < Some(t) && done >= self.history.first_slot() => {
                done + 1
            }
            _ => {
                // Afresh: a minute before the slot is enough for the rate
                // window (30 s) and a leak flag (20 s), and keeps stepping
                // back through a big node's recording quick.
                self.analysis.reset();
                slot.saturating_sub(ANALYSIS_CONTEXT)
                    .max(self.history.first_slot())
            }
        };
        for s in from..=slot {
            if let Some(snap) = self.history.snapshot_at(s) {
                // A replay's alerts are the recording's own events.
                let _ = self.analysis.observe(&snap);
            }
        }
        self.analyzed_to = Some(t);
    }

    /// The process table as shown.
    pub fn rows(&self) -> Vec<Row<'_>> {
        let Some(slot) = self.slot() else {
            return Vec::new();
        };
        rows::rows_at(
            &self.history,
            slot,
            &self.view.filter,
            self.view.sort,
            &|s| self.rate_of(s),
        )
    }

    /// Index of the selected row in `rows`.
    pub fn selected_index(&self, rows: &[Row]) -> Option<usize> {
        let id = self.view.selected?;
        rows.iter().position(|r| r.id() == id)
    }

    /// Process table rows that fit on screen.
    pub fn table_height(&self) -> usize {
        crate::ui::layout::table_rows(
            self.view.size,
            self.system.gpus.len(),
            self.view.show_events,
            self.replaying(),
        )
    }

    pub fn is_mine(&self, s: &ProcSeries) -> bool {
        s.facts.user.as_deref() == Some(self.me.as_str())
    }

    // ---- the mutator ------------------------------------------------------

    pub fn update(&mut self, event: Event) -> Option<Action> {
        match event {
            Event::Key(k) => self.on_key(k),
            Event::Mouse(m) => self.on_mouse(m),
            Event::Resize(w, h) => {
                self.view.size = (w, h);
                self.keep_selection_visible();
                None
            }
            Event::Snapshot(s) => self.on_snapshot(&s),
            Event::PlayTick => {
                if let Some(pos) = self.replay.as_ref().map(|r| r.pos) {
                    self.seek(pos + 1);
                } else {
                    self.step(1);
                }
                None
            }
            Event::Outcome(o) => {
                self.say(o.text, o.ok);
                None
            }
            Event::Detail { id, cwd } => {
                self.detail = Detail { id: Some(id), cwd };
                None
            }
            Event::Recording(r) => {
                match r {
                    RecordingStatus::Started { path } => {
                        self.say(format!("recording to {path}"), true);
                        self.recording = Some(RecordingState {
                            path,
                            ..Default::default()
                        });
                    }
                    RecordingStatus::Progress { bytes } => {
                        if let Some(r) = &mut self.recording {
                            r.bytes = bytes;
                        }
                    }
                    RecordingStatus::Warning { text } => {
                        self.say(format!("recording: {text}"), false);
                        if let Some(r) = &mut self.recording {
                            r.warning = Some(text);
                        }
                    }
                    RecordingStatus::Stopped => {
                        if let Some(r) = self.recording.take() {
                            self.say(format!("recording stopped: {}", r.path), true);
                        }
                    }
                }
                None
            }
        }
    }

    /// Adds a live snapshot: History, analysis, events; alerts go to the
    /// runtime (bell, hook).
    pub fn on_snapshot(&mut self, s: &Snapshot) -> Option<Action> {
        self.history.push(s);
        self.now_ms = self.now_ms.max(s.t_ms);
        let alerts = self.analysis.observe(s);
        self.analyzed_to = Some(s.t_ms);
        let events = s
            .events
            .iter()
            .cloned()
            .chain(alerts.iter().map(|a| a.to_event()));
        for e in events {
            if self.events.len() >= EVENTS_KEPT {
                self.events.pop_front();
            }
            self.events.push_back(e);
        }
        if let Some(c) = self.view.cursor {
            // Paused on a slot that history has since dropped.
            self.view.cursor = Some(c.max(self.history.first_slot()));
        }
        self.fix_selection();
        (!alerts.is_empty()).then_some(Action::Alerts(alerts))
    }

    fn say(&mut self, text: String, ok: bool) {
        self.message = Some(Message {
            text,
            ok,
            t_ms: self.now_ms,
        });
    }

    /// Keeps a valid selection: the same process if it is still listed,
    /// else the row at the same place.
    fn fix_selection(&mut self) {
        let rows = self.rows();
        let ids: Vec<ProcId> = rows.iter().map(Row::id).collect();
        drop(rows);
        if ids.is_empty() {
            self.view.selected = None;
            self.view.offset = 0;
            return;
        }
        if self.view.selected.is_none_or(|s| !ids.contains(&s)) {
            let i = self.view.offset.min(ids.len() - 1);
            self.view.selected = Some(ids[i]);
        }
        self.keep_selection_visible();
    }

    fn keep_selection_visible(&mut self) {
        let rows = self.rows();
        let n = rows.len();
        let sel = self.selected_index(&rows).unwrap_or(0);
        drop(rows);
        let h = self.table_height().max(1);
        if sel < self.view.offset {
            self.view.offset = sel;
        } else if sel >= self.view.offset + h {
            self.view.offset = sel + 1 - h;
        }
        self.view.offset = self.view.offset.min(n.saturating_sub(h));
    }

    fn move_selection(&mut self, delta: isize) {
        let rows = self.rows();
        if rows.is_empty() {
            return;
        }
        let cur = self.selected_index(&rows).unwrap_or(0) as isize;
        let next = (cur + delta).clamp(0, rows.len() as isize - 1) as usize;
        let id = rows[next].id();
        drop(rows);
        self.view.selected = Some(id);
        self.keep_selection_visible();
    }

    /// Moves the time cursor by `delta` slots (pausing live mode); in a
    /// replay, by `delta` snapshots of the recording.
    fn step(&mut self, delta: i64) {
        if let Some(pos) = self.replay.as_ref().map(|r| r.pos) {
            self.seek((pos as i64 + delta).max(0) as usize);
            return;
        }
        let Some(last) = self.history.last_slot() else {
            return;
        };
        let first = self.history.first_slot();
        let cur = self.view.cursor.unwrap_or(last);
        let next = (cur as i64 + delta).clamp(first as i64, last as i64) as u64;
        self.view.cursor = Some(next);
        if let Mode::Replay(p) = &mut self.mode
            && next == last
        {
            p.playing = false;
        }
        self.fix_selection();
    }

    fn jump_to(&mut self, slot: u64) {
        self.view.cursor = Some(slot);
        if let Mode::Replay(p) = &mut self.mode {
            p.playing = false;
        }
        self.fix_selection();
    }

    /// Jumps to the nearest event before or after the time shown.
    fn jump_to_event(&mut self, forward: bool) -> bool {
        let cur = self.shown_ms();
        let times = self.events.iter().map(|e| e.t_ms);
        let t = if forward {
            times.filter(|&t| t > cur).min()
        } else {
            times.filter(|&t| t < cur).max()
        };
        let Some(t) = t else { return false };
        if let Some(r) = &self.replay {
            let target = r.timeline.position_at(t);
            self.seek(target);
            if let Mode::Replay(p) = &mut self.mode {
                p.playing = false;
            }
            return true;
        }
        match self.history.slot_at_time(t) {
            Some(s) => {
                self.jump_to(s);
                true
            }
            None => false,
        }
    }

    fn on_mouse(&mut self, m: crossterm::event::MouseEvent) -> Option<Action> {
        if !self.config.display.mouse || self.view.screen() != Screen::Overview {
            return None;
        }
        match m.kind {
            MouseEventKind::ScrollDown => self.move_selection(3),
            MouseEventKind::ScrollUp => self.move_selection(-3),
            MouseEventKind::Down(crossterm::event::MouseButton::Left) => {
                let area = crate::ui::layout::table_body(
                    self.view.size,
                    self.system.gpus.len(),
                    self.view.show_events,
                    self.replaying(),
                );
                if m.row >= area.y && m.row < area.y + area.height {
                    let i = self.view.offset + (m.row - area.y) as usize;
                    let id = self.rows().get(i).map(Row::id);
                    if let Some(id) = id {
                        self.view.selected = Some(id);
                        self.view.focus = Pane::Procs;
                    }
                }
            }
            _ => {}
        }
        None
    }

    fn on_key(&mut self, k: KeyEvent) -> Option<Action> {
        if k.kind == KeyEventKind::Release {
            return None;
        }
        if self.view.dialog.is_some() {
            return self.on_dialog_key(k);
        }
        if self.view.filter_editing {
            self.on_filter_key(k);
            return None;
        }
        let intent = self.config.keys.action(&k)?;
        if self.view.screen() == Screen::Help {
            return match intent {
                Intent::Quit => Some(Action::Quit),
                Intent::Help | Intent::Back | Intent::Enter => {
                    self.view.pop();
                    self.view.help_scroll = 0;
                    None
                }
                Intent::Up | Intent::PageUp | Intent::Home | Intent::First => {
                    let d = if intent == Intent::Up { 1 } else { u16::MAX };
                    self.view.help_scroll = self.view.help_scroll.saturating_sub(d);
                    None
                }
                Intent::Down | Intent::PageDown | Intent::End | Intent::Last => {
                    let d = if intent == Intent::Down { 1 } else { 10 };
                    let max = crate::ui::help::line_count(self) as u16;
                    self.view.help_scroll = (self.view.help_scroll + d).min(max.saturating_sub(1));
                    None
                }
                _ => None,
            };
        }
        self.on_intent(intent)
    }

    fn on_dialog_key(&mut self, k: KeyEvent) -> Option<Action> {
        let confirm = matches!(
            k.code,
            KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter
        );
        let cancel = matches!(
            k.code,
            KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc
        ) || self.config.keys.action(&k) == Some(Intent::Back);
        if confirm {
            let Some(Dialog::ConfirmSignal { id, signal, .. }) = self.view.dialog.take() else {
                return None;
            };
            return Some(Action::Signal { id, signal });
        }
        if cancel {
            self.view.dialog = None;
        }
        None
    }

    fn on_filter_key(&mut self, k: KeyEvent) {
        match k.code {
            KeyCode::Enter => self.view.filter_editing = false,
            KeyCode::Esc => {
                self.view.filter_editing = false;
                self.view.filter.clear();
            }
            KeyCode::Backspace => {
                self.view.filter.pop();
            }
            KeyCode::Char(c)
                if !k
                    .modifiers
                    .contains(crossterm::event::KeyModifiers::CONTROL) =>
            {
                // At most 64 characters; more are ignored.
                let room = self.view.filter.chars().count() < 64;
                self.view.filter.extend(room.then_some(c));
            }
            KeyCode::Char('c') => {
                self.view.filter_editing = false;
                self.view.filter.clear();
            }
            _ => {}
        }
        self.view.offset = 0;
        self.fix_selection();
    }

    fn replaying(&self) -> bool {
        matches!(self.mode, Mode::Replay(_))
    }

    fn on_intent(&mut self, intent: Intent) -> Option<Action> {
        let screen = self.view.screen();
        let page = self.table_height().max(1) as isize;
        match intent {
            Intent::Quit => return Some(Action::Quit),
            Intent::Help => self.view.push(Screen::Help),
            Intent::Up | Intent::Down => {
                let d = if intent == Intent::Up { -1 } else { 1 };
                match (screen, self.view.focus) {
                    (Screen::Overview, Pane::Procs) => self.move_selection(d),
                    (Screen::Overview, Pane::Gpus) | (Screen::Gpu(_), _) => {
                        let n = self.system.gpus.len().max(1) as isize;
                        let g = (self.view.selected_gpu as isize + d).clamp(0, n - 1) as usize;
                        self.view.selected_gpu = g;
                        if let Screen::Gpu(_) = screen {
                            self.view.stack.pop();
                            self.view.push(Screen::Gpu(g));
                        }
                    }
                    _ => {}
                }
            }
            Intent::PageUp => self.move_selection(-page),
            Intent::PageDown => self.move_selection(page),
            Intent::First => self.move_selection(isize::MIN / 2),
            Intent::Last => self.move_selection(isize::MAX / 2),
            Intent::Home | Intent::End => {
                let home = intent == Intent::Home;
                if let Some(len) = self.replay.as_ref().map(|r| r.len()) {
                    self.seek(if home { 0 } else { len.saturating_sub(1) });
                    if let Mode::Replay(p) = &mut self.mode {
                        p.playing = false;
                    }
                } else {
                    self.move_selection(if home { isize::MIN / 2 } else { isize::MAX / 2 });
                }
            }
            Intent::Enter => match (screen, self.view.focus) {
                (Screen::Overview, Pane::Procs) => {
                    if let Some(id) = self.view.selected {
                        self.view.push(Screen::Process(id));
                        self.detail = Detail::default();
                        return Some(Action::Inspect(id));
                    }
                }
                (Screen::Overview, Pane::Gpus) => {
                    self.view.push(Screen::Gpu(self.view.selected_gpu))
                }
                _ => {}
            },
            Intent::Back => {
                if !self.view.filter.is_empty() && screen == Screen::Overview {
                    self.view.filter.clear();
                    self.fix_selection();
                } else if !self.view.pop() && self.paused() {
                    self.view.cursor = None;
                    self.fix_selection();
                }
            }
            Intent::Filter => {
                if screen == Screen::Overview {
                    self.view.filter_editing = true;
                    self.view.focus = Pane::Procs;
                }
            }
            Intent::SortNext | Intent::SortNextColumn | Intent::SortPrev => {
                let cols: Vec<Column> = crate::ui::process_table::sortable_columns(
                    &self.config.display.columns,
                    self.view.size.0,
                );
                if !cols.is_empty() {
                    let d = if intent == Intent::SortPrev { -1 } else { 1 };
                    // From a column no longer shown, start at either end.
                    let i = cols
                        .iter()
                        .position(|c| *c == self.view.sort.column)
                        .map_or(if d > 0 { -1 } else { 0 }, |i| i as isize);
                    let n = cols.len() as isize;
                    let next = cols[((i + d).rem_euclid(n)) as usize];
                    // Numbers sort biggest first, names A to Z.
                    let descending = !matches!(
                        next,
                        Column::User
                            | Column::Container
                            | Column::Command
                            | Column::Kind
                            | Column::Gpu
                            | Column::Pid
                    );
                    self.view.sort = Sort {
                        column: next,
                        descending,
                    };
                    self.keep_selection_visible();
                }
            }
            Intent::InvertSort => {
                self.view.sort.descending = !self.view.sort.descending;
                self.keep_selection_visible();
            }
            Intent::Pause => match &mut self.mode {
                Mode::Replay(p) => {
                    let playing = p.playing;
                    let at_end = self.replay.as_ref().is_some_and(|r| r.pos + 1 >= r.len());
                    if !playing && at_end {
                        // At the end: play from the start again.
                        self.seek(0);
                    }
                    if let Mode::Replay(p) = &mut self.mode {
                        p.playing = !playing;
                    }
                }
                Mode::Live => {
                    self.view.cursor = match self.view.cursor {
                        Some(_) => None,
                        None => self.history.last_slot(),
                    };
                    self.fix_selection();
                }
            },
            Intent::StepBack => {
                self.step(-1);
                if let Mode::Replay(p) = &mut self.mode {
                    p.playing = false;
                }
            }
            Intent::StepForward => {
                if self.paused() && self.view.cursor == self.history.last_slot() {
                    // Stepping past the newest sample returns to live.
                    self.view.cursor = None;
                } else {
                    self.step(1);
                    if let Mode::Replay(p) = &mut self.mode {
                        p.playing = false;
                    }
                }
            }
            Intent::PrevEvent | Intent::NextEvent => {
                if !self.jump_to_event(intent == Intent::NextEvent) {
                    self.say("no more events that way".into(), true);
                }
            }
            Intent::Faster | Intent::Slower => {
                if let Mode::Replay(p) = &mut self.mode {
                    p.speed = if intent == Intent::Faster {
                        (p.speed * 2).min(view::MAX_SPEED)
                    } else {
                        (p.speed / 2).max(1)
                    };
                }
            }
            Intent::Record => {
                if self.replaying() {
                    self.say(
                        "recording is for live monitoring; this is a replay".into(),
                        false,
                    );
                } else {
                    return Some(Action::ToggleRecording);
                }
            }
            Intent::Terminate | Intent::Kill => {
                let signal = if intent == Intent::Kill {
                    Signal::Kill
                } else {
                    Signal::Term
                };
                self.ask_signal(signal);
            }
            Intent::NextPane => {
                if screen == Screen::Overview {
                    self.view.focus = match self.view.focus {
                        Pane::Gpus => Pane::Procs,
                        Pane::Procs => Pane::Gpus,
                    };
                }
            }
            Intent::Events => {
                self.view.show_events = !self.view.show_events;
                self.keep_selection_visible();
            }
            Intent::Suspend => return Some(Action::Suspend),
        }
        None
    }

    fn ask_signal(&mut self, signal: Signal) {
        if self.read_only {
            self.say(
                "read-only mode: terminate and kill are disabled".into(),
                false,
            );
            return;
        }
        if self.replaying() {
            self.say("cannot signal processes in a replay".into(), false);
            return;
        }
        let id = match self.view.screen() {
            Screen::Process(id) => Some(id),
            _ => self.view.selected,
        };
        let Some(id) = id else {
            self.say("no process selected".into(), false);
            return;
        };
        let Some(s) = self.history.process(&id) else {
            return;
        };
        if s.last_slot != self.history.last_slot().unwrap_or(0) {
            self.say(format!("PID {} has exited", id.key.pid), false);
            return;
        }
        let start_ms = if id.key.start_time > 0 {
            id.key.start_time * 1000
        } else {
            s.first_seen_ms
        };
        self.view.dialog = Some(Dialog::ConfirmSignal {
            id,
            signal,
            user: s.facts.user.as_deref().unwrap_or("?").to_owned(),
            command: s
                .facts
                .command
                .as_deref()
                .or(s.facts.name.as_deref())
                .unwrap_or("?")
                .to_owned(),
            age_s: self.now_ms.saturating_sub(start_ms) / 1000,
        });
    }
}

#[cfg(test)]
mod tests;
