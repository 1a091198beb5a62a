//! Keys and the mouse: what each intent does on each screen.

use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

use super::rows::Filter;
use super::view::{Dialog, EventsPane, Pane, Screen, Signal};
use super::{Action, App, Detail, layout};
use crate::config::keys::Action as Intent;

/// Characters Shift-←/→ scroll the command column by.
const HSCROLL_STEP: i32 = 8;

impl App {
    pub(super) fn on_key(&mut self, k: KeyEvent) -> Option<Action> {
        if k.kind == KeyEventKind::Release {
            return None;
        }
        if self.dialog.is_some() {
            return self.on_dialog_key(k);
        }
        if self.table.filter_editing {
            self.on_filter_key(k);
            return None;
        }
        let screen = self.nav.screen();
        // Shift-←/→ scroll the command column (plain ←/→ step in time).
        if k.modifiers.contains(KeyModifiers::SHIFT)
            && matches!(k.code, KeyCode::Left | KeyCode::Right)
            && screen == Screen::Overview
        {
            let d = if k.code == KeyCode::Left { -1 } else { 1 };
            self.scroll_command(d * HSCROLL_STEP);
            return None;
        }
        let Some(intent) = self.settings.config.keys.action(&k) else {
            // Fixed keys, where the key map leaves them free.
            if screen == Screen::Overview {
                match k.code {
                    KeyCode::Char('u') => self.cycle_user(),
                    KeyCode::Char('t') => self.say(
                        "tree view: vramwatch does not sample parent PIDs yet, so there is no tree to show"
                            .into(),
                        false,
                    ),
                    _ => {}
                }
            }
            return None;
        };
        if screen == Screen::Help {
            return self.on_help_intent(intent);
        }
        self.on_intent(intent)
    }

    /// `u`: the next user's processes only (users A to Z), then everyone's.
    fn cycle_user(&mut self) {
        let Some(slot) = self.slot() else {
            return;
        };
        let mut users: Vec<String> = self
            .history
            .processes_at(slot)
            .into_iter()
            .filter_map(|(s, _)| s.facts.user.as_deref().map(str::to_owned))
            .collect();
        users.sort();
        users.dedup();
        let next = match Filter::parse(&self.table.filter).users.first() {
            None => users.first().cloned(),
            Some(cur) => users
                .iter()
                .position(|u| u.to_lowercase() == *cur)
                .and_then(|i| users.get(i + 1))
                .cloned(),
        };
        self.set_filter_term("user", next.as_deref());
        self.nav.focus = Pane::Procs;
        let text = match &next {
            Some(u) => format!("{u}'s processes (u: next user)"),
            None => "every user's processes".into(),
        };
        self.say(text, true);
    }

    fn on_help_intent(&mut self, intent: Intent) -> Option<Action> {
        match intent {
            Intent::Quit => return Some(Action::Quit),
            Intent::Help | Intent::Back | Intent::Enter => {
                self.nav.pop();
                self.help_scroll = 0;
            }
            Intent::Up
            | Intent::Down
            | Intent::PageUp
            | Intent::PageDown
            | Intent::Home
            | Intent::End
            | Intent::First
            | Intent::Last => {
                // Within what the box shows at this height: End puts the
                // last line at its bottom, and Up moves at once from there.
                let total = super::help::line_count(&self.settings.config.keys);
                let height = self.nav.size.1;
                let max = super::help::max_scroll(total, height);
                let page = super::help::shown_lines(total, height)
                    .saturating_sub(1)
                    .max(1);
                let now = self.help_scroll.min(max);
                self.help_scroll = match intent {
                    Intent::Up => now.saturating_sub(1),
                    Intent::Down => now.saturating_add(1),
                    Intent::PageUp => now.saturating_sub(page),
                    Intent::PageDown => now.saturating_add(page),
                    Intent::Home | Intent::First => 0,
                    _ => max,
                }
                .min(max);
            }
            _ => {}
        }
        None
    }

    fn on_dialog_key(&mut self, k: KeyEvent) -> Option<Action> {
        let confirm = matches!(
            k.code,
            KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter
        );
        let cancel = matches!(
            k.code,
            KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc
        ) || self.settings.config.keys.action(&k) == Some(Intent::Back);
        if confirm {
            let Some(Dialog::ConfirmSignal { id, signal, .. }) = self.dialog.take() else {
                return None;
            };
            return Some(Action::Signal { id, signal });
        }
        if cancel {
            self.dialog = None;
        }
        None
    }

    fn on_intent(&mut self, intent: Intent) -> Option<Action> {
        let page = self.table_height().max(1) as isize;
        match intent {
            Intent::Quit => return Some(Action::Quit),
            Intent::Help => self.nav.push(Screen::Help),
            Intent::Up => self.on_arrow(-1),
            Intent::Down => self.on_arrow(1),
            Intent::PageUp | Intent::PageDown | Intent::First | Intent::Last
                if self.events_focused() =>
            {
                let h = self.events_height().max(1) as isize;
                self.move_event(match intent {
                    Intent::PageUp => -h,
                    Intent::PageDown => h,
                    Intent::First => isize::MIN / 2,
                    _ => isize::MAX / 2,
                });
            }
            Intent::PageUp => self.move_selection(-page),
            Intent::PageDown => self.move_selection(page),
            Intent::First => self.move_selection(isize::MIN / 2),
            Intent::Last => self.move_selection(isize::MAX / 2),
            Intent::Home | Intent::End => {
                let home = intent == Intent::Home;
                if !self.seek_end(home) {
                    let to = if home { isize::MIN / 2 } else { isize::MAX / 2 };
                    // Live, the pane with the arrows: the events pane's
                    // first row is its newest event.
                    if self.events_focused() {
                        self.move_event(to);
                    } else {
                        self.move_selection(to);
                    }
                }
            }
            Intent::Enter => return self.on_enter(),
            Intent::Back => self.on_back(),
            Intent::Filter => {
                if self.nav.screen() == Screen::Overview {
                    self.start_filter();
                }
            }
            Intent::SortNext | Intent::SortNextColumn => self.cycle_sort(true),
            Intent::SortPrev => self.cycle_sort(false),
            Intent::InvertSort => self.invert_sort(),
            Intent::Pause => self.toggle_pause(),
            Intent::StepBack => {
                self.step(-1);
                self.stop_playing();
            }
            Intent::StepForward => self.step_forward(),
            Intent::PrevEvent | Intent::NextEvent => {
                if !self.jump_to_event(intent == Intent::NextEvent) {
                    self.say("no more events that way".into(), true);
                }
            }
            Intent::Faster | Intent::Slower => self.change_speed(intent == Intent::Faster),
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
            Intent::Terminate => self.ask_signal(Signal::Term),
            Intent::Kill => self.ask_signal(Signal::Kill),
            Intent::NextPane => {
                if self.nav.screen() == Screen::Overview {
                    // Processes, GPUs, then the events when open.
                    self.nav.focus = match self.nav.focus {
                        Pane::Procs => Pane::Gpus,
                        Pane::Gpus if self.events_shown() => Pane::Events,
                        Pane::Gpus | Pane::Events => Pane::Procs,
                    };
                }
            }
            Intent::Events => {
                // Opens the pane, or goes to it where it is shown unasked
                // in empty rows (it keeps its size), and gives it the
                // arrows; in it, closes it and gives them back.
                if self.events_focused() {
                    self.nav.events = EventsPane::Closed;
                    self.nav.focus = Pane::Procs;
                } else {
                    if !self.events_shown() {
                        self.nav.events = EventsPane::Open;
                    }
                    self.nav.focus = Pane::Events;
                    self.keep_event_visible();
                }
                self.keep_selection_visible();
            }
            Intent::Suspend => return Some(Action::Suspend),
        }
        None
    }

    fn events_focused(&self) -> bool {
        self.nav.screen() == Screen::Overview && self.nav.focus == Pane::Events
    }

    /// Up/Down: the table's selection, the events', or the GPU in the GPU
    /// pane and view.
    fn on_arrow(&mut self, d: isize) {
        match (self.nav.screen(), self.nav.focus) {
            (Screen::Overview, Pane::Procs) => self.move_selection(d),
            (Screen::Overview, Pane::Events) => self.move_event(d),
            (Screen::Overview, Pane::Gpus) | (Screen::Gpu(_), _) => {
                let n = self.settings.system.gpus.len().max(1) as isize;
                let g = (self.nav.selected_gpu as isize + d).clamp(0, n - 1) as usize;
                self.nav.selected_gpu = g;
                if let Screen::Gpu(_) = self.nav.screen() {
                    self.nav.replace(Screen::Gpu(g));
                }
            }
            _ => {}
        }
    }

    fn on_enter(&mut self) -> Option<Action> {
        match (self.nav.screen(), self.nav.focus) {
            (Screen::Overview, Pane::Procs) => {
                let id = self.table.selected?;
                // The process looked at is the one chosen: back from its
                // details, a new sort or sample must not put another
                // under the cursor (where `T`/`K` would act on it).
                self.select_id(id);
                self.nav.push(Screen::Process(id));
                self.detail = Detail::default();
                Some(Action::Inspect(id))
            }
            (Screen::Overview, Pane::Gpus) => {
                self.nav.push(Screen::Gpu(self.nav.selected_gpu));
                None
            }
            (Screen::Overview, Pane::Events) => {
                self.open_event();
                None
            }
            _ => None,
        }
    }

    /// Esc: clear the filter, else back one screen, else back to live.
    fn on_back(&mut self) {
        if self.nav.screen() == Screen::Overview && self.clear_filter() {
            return;
        }
        if !self.nav.pop() && self.paused() {
            self.cursor = None;
            self.fix_selection();
        }
    }

    fn step_forward(&mut self) {
        if self.paused() && self.cursor == self.history.last_slot() {
            // Stepping past the newest sample returns to live.
            self.cursor = None;
            self.fix_selection();
        } else {
            self.step(1);
            self.stop_playing();
        }
    }

    /// The wheel scrolls the pane under it; a click selects a process or
    /// an event, sorts by a column header (again: inverts), or shows only
    /// a GPU's processes (again: all).
    pub(super) fn on_mouse(&mut self, m: MouseEvent) -> Option<Action> {
        if !self.settings.config.display.mouse || self.nav.screen() != Screen::Overview {
            return None;
        }
        let gpus = self.settings.system.gpus.len();
        // The layout as drawn: cards grown into rows the table leaves.
        let o = layout::overview_of(self);
        let inside = |r: ratatui::layout::Rect| {
            m.row >= r.y && m.row < r.bottom() && m.column >= r.x && m.column < r.right()
        };
        let over_events = o.events.is_some_and(inside);
        match m.kind {
            MouseEventKind::ScrollDown if over_events => self.scroll_events(3),
            MouseEventKind::ScrollUp if over_events => self.scroll_events(-3),
            MouseEventKind::ScrollDown => self.move_selection(3),
            MouseEventKind::ScrollUp => self.move_selection(-3),
            MouseEventKind::Down(MouseButton::Left) => {
                let body = ratatui::layout::Rect::new(
                    o.table.x,
                    o.table.y + 1,
                    o.table.width,
                    o.table.height.saturating_sub(1),
                );
                if inside(o.cards) {
                    if let Some(g) = layout::gpu_at(&o, gpus, self.nav.selected_gpu, m.row) {
                        self.click_gpu(g);
                    }
                } else if m.row == o.table.y && inside(o.table) {
                    let cols = &self.settings.config.display.columns;
                    if let Some(c) = layout::column_at(cols, o.table.width, m.column) {
                        self.sort_by(c);
                        self.nav.focus = Pane::Procs;
                    }
                } else if inside(body) {
                    self.select_row(self.table.offset + (m.row - body.y) as usize);
                } else if let Some(e) = o.events.filter(|e| inside(*e) && m.row > e.y) {
                    self.select_event_line((m.row - e.y - 1) as usize);
                }
            }
            _ => {}
        }
        None
    }

    /// A click on a GPU: only its processes, or everyone's again.
    fn click_gpu(&mut self, g: usize) {
        self.nav.selected_gpu = g;
        let only_this = Filter::parse(&self.table.filter).gpus == [g as u32];
        if only_this {
            self.set_filter_term("gpu", None);
            self.say("processes on every GPU".into(), true);
        } else {
            self.set_filter_term("gpu", Some(&g.to_string()));
            self.say(
                format!("processes on GPU {g} (click it again for all)"),
                true,
            );
        }
    }

    /// Opens the confirm dialog for `signal` to the process shown or selected.
    fn ask_signal(&mut self, signal: Signal) {
        if self.settings.read_only {
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
        // Only a process the user sees selected: the one whose view is
        // open, or the table's highlighted row while the table has the
        // focus (elsewhere its selection is not highlighted).
        let id = match (self.nav.screen(), self.nav.focus) {
            (Screen::Process(id), _) => Some(id),
            (Screen::Overview, Pane::Procs) => self.table.selected,
            (Screen::Overview, _) => {
                self.say(
                    "select a process first: Tab to the process table, then ↑/↓".into(),
                    false,
                );
                return;
            }
            _ => {
                self.say(
                    "select a process first: Esc, then ↑/↓ in the process table".into(),
                    false,
                );
                return;
            }
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
        self.dialog = Some(Dialog::ConfirmSignal {
            id,
            signal,
            user: s.facts.user.as_deref().unwrap_or("?").to_owned(),
            command: s.facts.label().to_owned(),
            age_s: self.now_ms.saturating_sub(start_ms) / 1000,
        });
    }
}
