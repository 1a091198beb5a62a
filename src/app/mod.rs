//! The one owner of the dashboard's state. `App::update(Event) ->
//! Option<Action>` is the only mutator (The Elm Architecture): every field
//! is private, the UI draws `&App` through its accessors, and the event
//! loop carries out the actions `update` returns.
//!
//! The state is split by job: [`Settings`] (fixed), History (samples),
//! navigation ([`Nav`]), the process table ([`TableState`]), dialogs, the
//! help screen, playback ([`playback`]: live, paused or a replay) and the
//! analysis shown ([`insight`]).

pub(crate) mod action;
pub mod cmdline;
pub(crate) mod event;
pub mod events;
pub mod fixture;
pub(crate) mod help;
pub(crate) mod insight;
mod keys;
pub mod layout;
pub mod playback;
pub mod rows;
pub(crate) mod settings;
mod table;
pub(crate) mod view;

use std::collections::VecDeque;
use std::sync::Arc;

use crate::analysis::Eta;
use crate::config::{Column, Config};
use crate::history::{History, ProcId, ProcSeries};
use crate::model::{Event as ModelEvent, Millis, SystemInfo};
use crate::pipeline::Analyzed;
use crate::theme::Theme;

pub use action::Action;
pub use event::{Event, Outcome, RecordingStatus};
pub use insight::{GpuInsight, ProcInsight};
use insight::{Insight, Paused};
pub use playback::{Mode, Playback, Replay, Timeline};
use rows::Row;
pub use settings::{Clock, Settings};
pub use view::{Dialog, EventsPane, EventsState, Nav, Pane, Screen, Signal, Sort, TableState};

/// How many events the events pane keeps.
const EVENTS_KEPT: usize = 500;

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

/// Facts read on demand for the drill-down.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Detail {
    pub id: Option<ProcId>,
    pub cwd: Option<String>,
}

/// Everything the dashboard knows.
pub struct App {
    settings: Settings,
    history: History,
    nav: Nav,
    table: TableState,
    dialog: Option<Dialog>,
    /// First line of the help screen shown.
    help_scroll: u16,
    mode: Mode,
    /// `Some(slot)`: paused (live) or the replay position; `None` = now.
    cursor: Option<u64>,
    /// The recording being replayed and what of it is loaded.
    replay: Option<Replay>,
    insight: Insight,
    /// The analysis shown while live is paused (`None` when not paused).
    paused_analysis: Option<Paused>,
    events: VecDeque<ModelEvent>,
    /// The events pane's selection and scroll.
    events_view: EventsState,
    message: Option<Message>,
    recording: Option<RecordingState>,
    detail: Detail,
    /// Newest sample time seen (live) or the recording's end (replay).
    now_ms: Millis,
}

impl App {
    /// A live dashboard, fed by the pipeline ([`Event::Snapshot`]).
    pub fn live(settings: Settings) -> App {
        App::with(settings, Mode::Live, Insight::Live(None))
    }

    /// The same App with times shown by `clock` (tests and captures of a
    /// replay opened elsewhere use UTC). Only when building it.
    pub fn with_clock(mut self, clock: Clock) -> App {
        self.settings.clock = clock;
        self
    }

    fn with(settings: Settings, mode: Mode, insight: Insight) -> App {
        let s = &settings.config.sampling;
        let interval_ms = s.interval.as_millis().max(1) as u64;
        let cap = (s.history.as_millis() as u64 / interval_ms).max(2) as usize;
        let history = History::new(cap, interval_ms, s.exited_keep.as_millis() as u64);
        let mut nav = Nav::default();
        nav.events = settings.config.display.events;
        App {
            settings,
            history,
            nav,
            table: TableState::default(),
            dialog: None,
            help_scroll: 0,
            mode,
            cursor: None,
            replay: None,
            insight,
            paused_analysis: None,
            events: VecDeque::new(),
            events_view: EventsState::default(),
            message: None,
            recording: None,
            detail: Detail::default(),
            now_ms: 0,
        }
    }

    // ---- what the UI reads ----------------------------------------------

    pub fn settings(&self) -> &Settings {
        &self.settings
    }
    pub fn config(&self) -> &Config {
        &self.settings.config
    }
    pub fn system(&self) -> &Arc<SystemInfo> {
        &self.settings.system
    }
    pub fn theme(&self) -> &Theme {
        &self.settings.theme
    }
    pub fn clock(&self) -> Clock {
        self.settings.clock
    }
    pub fn history(&self) -> &History {
        &self.history
    }
    pub fn nav(&self) -> &Nav {
        &self.nav
    }
    pub fn screen(&self) -> Screen {
        self.nav.screen()
    }
    pub fn size(&self) -> (u16, u16) {
        self.nav.size
    }
    pub fn table(&self) -> &TableState {
        &self.table
    }
    pub fn dialog(&self) -> Option<&Dialog> {
        self.dialog.as_ref()
    }
    pub fn help_scroll(&self) -> u16 {
        self.help_scroll
    }
    pub fn mode(&self) -> Mode {
        self.mode
    }
    pub fn cursor(&self) -> Option<u64> {
        self.cursor
    }
    pub fn replay(&self) -> Option<&Replay> {
        self.replay.as_ref()
    }
    pub fn events(&self) -> &VecDeque<ModelEvent> {
        &self.events
    }
    pub fn events_view(&self) -> &EventsState {
        &self.events_view
    }
    pub fn message(&self) -> Option<&Message> {
        self.message.as_ref()
    }
    pub fn recording(&self) -> Option<&RecordingState> {
        self.recording.as_ref()
    }
    pub fn detail(&self) -> &Detail {
        &self.detail
    }
    pub fn now_ms(&self) -> Millis {
        self.now_ms
    }

    // ---- derived state --------------------------------------------------

    /// The slot on screen: the cursor when paused or replaying, else the newest.
    pub fn slot(&self) -> Option<u64> {
        match self.cursor {
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
        matches!(self.mode, Mode::Live) && self.cursor.is_some()
    }

    pub fn replaying(&self) -> bool {
        matches!(self.mode, Mode::Replay(_))
    }

    /// GPU `index`'s highest memory as of the slot on screen, and when
    /// (nothing after the slot shown counts).
    pub fn gpu_peak(&self, index: usize) -> Option<(u64, Millis)> {
        self.history.gpu_peak_at(index, self.slot()?)
    }

    /// A process's highest memory as of the slot on screen, and when.
    pub fn proc_peak(&self, s: &ProcSeries) -> Option<(u64, Millis)> {
        self.history.proc_peak_at(s, self.slot()?)
    }

    /// Alerts and other trouble (suspected OOMs, XIDs, lost GPUs) up to the
    /// time on screen.
    pub fn alerts_so_far(&self) -> usize {
        use crate::model::EventKind;
        let upto = self.shown_ms();
        self.events
            .iter()
            .filter(|e| e.t_ms <= upto)
            .filter(|e| {
                matches!(
                    e.kind,
                    EventKind::Alert
                        | EventKind::SuspectedOom
                        | EventKind::Xid
                        | EventKind::GpuLost
                )
            })
            .count()
    }

    /// The analysis as of the moment on screen: the newest analysed
    /// snapshot live, the slot shown when paused or replaying.
    fn analysis_shown(&self) -> Option<(&crate::analysis::Assessment, Millis)> {
        match (&self.paused_analysis, self.paused()) {
            (Some(p), true) => p.current(),
            _ => self.insight.current(),
        }
    }

    /// The analysis of GPU `index`, as of the newest analysed snapshot
    /// (live) or the position shown (paused, replay).
    pub fn gpu_insight(&self, index: usize) -> Option<GpuInsight> {
        let (a, now) = self.analysis_shown()?;
        let g = a.gpu(index as u32)?;
        Some(GpuInsight {
            rate_bps: g.rate.map_or(0.0, |r| r.bps),
            phase: g.phase,
            full_in: g.forecast.as_ref().map(|f| Eta::of(f, now)),
            at_risk_pct: g.at_risk_pct,
            levels_at: g.levels_at,
        })
    }

    /// The analysis of a process on one GPU.
    pub fn proc_insight(&self, id: &ProcId) -> Option<ProcInsight> {
        let (a, now) = self.analysis_shown()?;
        let p = a.process(id)?;
        Some(ProcInsight {
            rate_bps: p.rate.map_or(0.0, |r| r.bps),
            phase: p.phase,
            leak: p.leak,
            full_in: p.forecast.as_ref().map(|f| Eta::of(f, now)),
        })
    }

    /// The process table as shown.
    pub fn rows(&self) -> Vec<Row<'_>> {
        let Some(slot) = self.slot() else {
            return Vec::new();
        };
        rows::rows_at(
            &self.history,
            slot,
            &self.table.filter,
            self.table.sort,
            &|s| self.proc_insight(&s.id),
            self.command_width().unwrap_or(usize::MAX),
        )
    }

    /// The processes on GPU `gpu` as shown (the GPU view's list), biggest
    /// first as the memory sort orders them (a swinging process by its
    /// recent highest, `rows::SORT_HOLD_MS`), whatever the table's filter.
    pub fn gpu_rows(&self, gpu: usize) -> Vec<Row<'_>> {
        let Some(slot) = self.slot() else {
            return Vec::new();
        };
        rows::rows_at(
            &self.history,
            slot,
            &format!("gpu:{gpu}"),
            Sort::default(),
            &|s| self.proc_insight(&s.id),
            usize::MAX,
        )
    }

    /// The commands of every process listed at the slot on screen (what a
    /// GPU's commands are told apart from).
    pub fn all_commands(&self) -> Vec<&str> {
        let Some(slot) = self.slot() else {
            return Vec::new();
        };
        self.history
            .processes_at(slot)
            .into_iter()
            .map(|(s, _)| s.facts.label())
            .collect()
    }

    /// Index of the selected row in `rows`.
    pub fn selected_index(&self, rows: &[Row]) -> Option<usize> {
        let id = self.table.selected?;
        rows.iter().position(|r| r.id() == id)
    }

    /// Process table rows that fit on screen, as drawn (below its header).
    pub fn table_height(&self) -> usize {
        layout::overview_of(self).table.height.saturating_sub(1) as usize
    }

    /// Whether per-process GPU utilisation is on screen: the overview's
    /// SM% column at the current width, or a process's drill-down. The
    /// event loop passes it on to the sampler, which reads it every
    /// interval only then (`sampler::OnScreen`).
    pub fn shows_proc_util(&self) -> bool {
        self.shows_process_figures(&[Column::Sm])
    }

    /// Whether host facts that change (CPU %, RSS) are on screen: the
    /// overview's CPU% or RSS column at the current width, or a process's
    /// drill-down. Read every interval only then, as process utilisation.
    pub(crate) fn shows_host_facts(&self) -> bool {
        self.shows_process_figures(&[Column::Cpu, Column::Rss])
    }

    /// Whether any of these columns is on screen, or a drill-down (which
    /// shows every per-process figure).
    fn shows_process_figures(&self, columns: &[Column]) -> bool {
        let (w, h) = self.nav.size;
        if w < layout::MIN_WIDTH || h < layout::MIN_HEIGHT {
            return false;
        }
        match self.screen() {
            Screen::Process(_) => true,
            Screen::Overview => layout::fit_columns(&self.settings.config.display.columns, w)
                .iter()
                .any(|c| columns.contains(c)),
            Screen::Gpu(_) | Screen::Help => false,
        }
    }

    pub fn is_mine(&self, s: &ProcSeries) -> bool {
        s.facts.user.as_deref() == Some(self.settings.me.as_str())
    }

    // ---- the mutator ------------------------------------------------------

    pub fn update(&mut self, event: Event) -> Option<Action> {
        let action = self.on_event(event);
        self.settle_events_pane();
        action
    }

    fn on_event(&mut self, event: Event) -> Option<Action> {
        match event {
            Event::Key(k) => {
                // A message answers the key before: the next key takes it
                // away (in a replay the clock stands still, so the 6 s
                // a message lasts never ran out).
                if k.kind != crossterm::event::KeyEventKind::Release {
                    self.message = None;
                }
                self.on_key(k)
            }
            Event::Mouse(m) => self.on_mouse(m),
            Event::Resize(w, h) => {
                self.nav.size = (w, h);
                self.keep_selection_visible();
                None
            }
            Event::Snapshot(a) => self.on_snapshot(a),
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
                self.on_recording(r);
                None
            }
        }
    }

    fn on_recording(&mut self, r: RecordingStatus) {
        match r {
            RecordingStatus::Started { path } => {
                self.say(format!("recording to {}", file_first(&path)), true);
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
                    self.say(format!("recording stopped: {}", file_first(&r.path)), true);
                }
            }
        }
    }

    /// A live analysed snapshot: History, the analysis shown, events. The
    /// bell rings for its memory and GPU alerts when configured (the alert
    /// command is the pipeline's own consumer).
    fn on_snapshot(&mut self, a: Arc<Analyzed>) -> Option<Action> {
        if self.replaying() {
            return None;
        }
        self.history.push(&a.snapshot);
        self.now_ms = self.now_ms.max(a.snapshot.t_ms);
        let mut added = 0;
        for e in a.events() {
            if self.events.len() >= EVENTS_KEPT {
                self.events.pop_front();
            }
            self.events.push_back(e);
            added += 1;
        }
        self.events_arrived(added);
        let ring = self.settings.config.alerts.bell && a.alerts.iter().any(|x| x.kind.rings());
        self.insight = Insight::Live(Some(a));
        if let Some(c) = self.cursor {
            // Paused on a slot that history has since dropped.
            self.cursor = Some(c.max(self.history.first_slot()));
        }
        self.fix_selection();
        ring.then_some(Action::Bell)
    }

    fn say(&mut self, text: String, ok: bool) {
        self.message = Some(Message {
            text,
            ok,
            t_ms: self.now_ms,
        });
    }
}

/// A file's name first, then its folder (under the home folder as `~/…`):
/// on a narrow terminal the status line keeps the part that differs.
fn file_first(path: &str) -> String {
    let p = std::path::Path::new(path);
    let (Some(name), Some(dir)) = (p.file_name(), p.parent()) else {
        return path.to_string();
    };
    if dir.as_os_str().is_empty() {
        return path.to_string();
    }
    let home = directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf());
    let dir = match home.as_deref().and_then(|h| dir.strip_prefix(h).ok()) {
        Some(rest) => std::path::Path::new("~").join(rest),
        None => dir.to_path_buf(),
    };
    format!("{} (in {})", name.to_string_lossy(), dir.display())
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_nav;
