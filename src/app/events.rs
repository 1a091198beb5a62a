//! The events pane: selecting and scrolling the events (newest first), and
//! going to the moment of one (live: paused history; replay: the
//! playhead). `[` and `]` say which event they landed on.

use super::App;
use super::view::Pane;
use crate::model::{Event, EventKind};

/// A short tag per kind.
pub fn tag(kind: EventKind) -> &'static str {
    match kind {
        EventKind::ProcessStarted => "start",
        EventKind::ProcessExited => "exit",
        EventKind::SuspectedOom => "OOM?",
        EventKind::ThresholdCrossed => "level",
        EventKind::Alert => "ALERT",
        EventKind::GpuLost => "LOST",
        EventKind::Xid => "XID",
        EventKind::Note => "note",
    }
}

impl App {
    /// The event at `i` of the pane's list (0 = newest).
    pub fn event_at(&self, i: usize) -> Option<&Event> {
        let n = self.events.len();
        (i < n).then(|| &self.events[n - 1 - i])
    }

    /// Lines of the events pane (below its rule), 0 when it is not shown.
    pub fn events_height(&self) -> usize {
        super::layout::overview_of(self)
            .events
            .map_or(0, |r| r.height.saturating_sub(1) as usize)
    }

    /// How the layout places the events pane now.
    pub fn events_rows(&self) -> super::layout::EventsRows {
        super::layout::EventsRows {
            pane: self.nav.events,
            held: self.nav.events_held,
        }
    }

    /// After each update: a pane shown unasked is held while it keeps a
    /// few rows ([`super::layout::EVENTS_AUTO_KEEP`]); when the processes
    /// need those (or the terminal shrinks) it goes, and if it had the
    /// arrows they go back to the table, with a word on the message line.
    /// Its height follows the processes: the selected event stays in view.
    pub(super) fn settle_events_pane(&mut self) {
        let shown = self.events_shown();
        self.nav.events_held = shown && self.nav.events == super::EventsPane::Auto;
        if self.nav.focus == Pane::Events && !shown {
            self.nav.focus = Pane::Procs;
            self.say(
                "the events pane gave its rows to the processes; e opens it".into(),
                true,
            );
        }
        self.keep_event_visible();
    }

    /// Whether the overview shows the events pane now: opened with `e`, or
    /// unasked in rows left empty ([`super::EventsPane::Auto`]).
    pub fn events_shown(&self) -> bool {
        super::layout::overview_of(self).events.is_some()
    }

    /// `n` new events came in on top: the selection stays on its event.
    pub(super) fn events_arrived(&mut self, n: usize) {
        let len = self.events.len();
        let v = &mut self.events_view;
        if let Some(s) = v.selected.as_mut() {
            *s = (*s + n).min(len.saturating_sub(1));
            v.offset = (v.offset + n).min(len.saturating_sub(1));
        }
    }

    /// Moves the events selection by `delta` (from none: the newest).
    pub(super) fn move_event(&mut self, delta: isize) {
        let n = self.events.len();
        if n == 0 {
            return;
        }
        // From none, the first step down lands on the newest.
        let none = if delta > 0 { -1 } else { 0 };
        let cur = self.events_view.selected.map_or(none, |s| s as isize);
        let next = (cur + delta).clamp(0, n as isize - 1) as usize;
        self.events_view.selected = Some(next);
        self.keep_event_visible();
    }

    /// Scrolls the events pane by `delta` lines (the wheel), selection kept.
    pub(super) fn scroll_events(&mut self, delta: isize) {
        let n = self.events.len();
        let h = self.events_height().max(1);
        let max = n.saturating_sub(h) as isize;
        self.events_view.offset = (self.events_view.offset as isize + delta).clamp(0, max) as usize;
    }

    pub(super) fn keep_event_visible(&mut self) {
        // Nothing selected, nothing to keep: no layout to compute (this
        // runs after every update).
        let Some(s) = self.events_view.selected else {
            return;
        };
        let h = self.events_height().max(1);
        let v = &mut self.events_view;
        if s < v.offset {
            v.offset = s;
        } else if s >= v.offset + h {
            v.offset = s + 1 - h;
        }
    }

    /// Selects the event on pane line `row` (a click).
    pub(super) fn select_event_line(&mut self, row: usize) {
        let i = self.events_view.offset + row;
        if i < self.events.len() {
            self.events_view.selected = Some(i);
            self.nav.focus = Pane::Events;
        }
    }

    /// "12:00:24 ALERT GPU 1 full in ~1m03s …": an event in one line.
    pub fn describe_event(&self, e: &Event) -> String {
        format!(
            "{} {} {}",
            self.settings.clock.hms(e.t_ms),
            tag(e.kind),
            e.message
        )
    }

    /// Enter on an event: shows its moment.
    pub(super) fn open_event(&mut self) {
        let Some(e) = self
            .events_view
            .selected
            .and_then(|i| self.event_at(i))
            .cloned()
        else {
            return;
        };
        if self.go_to_time(e.t_ms) {
            // The process the event is about, where the table lists it
            // at that moment, is the one selected there.
            if let Some(pid) = e.pid {
                let id = self
                    .rows()
                    .iter()
                    .map(crate::app::rows::Row::id)
                    .find(|id| id.key.pid == pid && e.gpu.is_none_or(|g| g == id.gpu));
                if let Some(id) = id {
                    self.select_id(id);
                    self.keep_selection_visible();
                }
            }
            let text = format!("at {}", self.describe_event(&e));
            self.say(text, true);
        } else {
            self.say(
                format!(
                    "{} is no longer in history (it keeps {})",
                    self.settings.clock.hms(e.t_ms),
                    crate::model::units::duration_short(
                        self.settings.config.sampling.history.as_secs()
                    )
                ),
                false,
            );
        }
    }

    /// Shows the moment `t_ms`: the playhead of a replay, else paused
    /// history. False when history no longer holds it.
    pub(super) fn go_to_time(&mut self, t_ms: crate::model::Millis) -> bool {
        if let Some(r) = &self.replay {
            let target = r.timeline.position_at(t_ms);
            self.seek(target);
            self.stop_playing();
            return true;
        }
        match self.history.slot_at_time(t_ms) {
            Some(s) => {
                self.cursor = Some(s);
                self.fix_selection();
                true
            }
            None => false,
        }
    }

    /// After `[`/`]` landed at `t_ms`: selects the event there and says
    /// which it is (and how many more share the moment).
    pub(super) fn landed_on(&mut self, t_ms: crate::model::Millis) {
        let n = self.events.len();
        let at: Vec<usize> = (0..n)
            .filter(|i| self.event_at(*i).is_some_and(|e| e.t_ms == t_ms))
            .collect();
        // The oldest of the moment's events: listed lowest.
        let Some(&i) = at.last() else {
            return;
        };
        self.events_view.selected = Some(i);
        self.keep_event_visible();
        let Some(e) = self.event_at(i).cloned() else {
            return;
        };
        let more = match at.len() {
            1 => String::new(),
            k => format!(" (+{} more at this moment)", k - 1),
        };
        let text = format!("event {}{more}", self.describe_event(&e));
        self.say(text, true);
    }
}
