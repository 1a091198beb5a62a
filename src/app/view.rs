//! View state: which screen, what is selected, how the table is sorted and
//! filtered, where the time cursor is. Owned by `App`, changed only in
//! `App::update`.

use crate::config::Column;
use crate::history::ProcId;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Screen {
    Overview,
    /// Larger charts of one GPU.
    Gpu(usize),
    /// Drill-down into one process on one GPU.
    Process(ProcId),
    Help,
}

/// Which part of the overview the arrows move in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pane {
    Gpus,
    Procs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Term,
    Kill,
}

impl Signal {
    pub fn name(self) -> &'static str {
        match self {
            Signal::Term => "SIGTERM",
            Signal::Kill => "SIGKILL",
        }
    }
}

/// A question that takes the keyboard until answered.
#[derive(Clone, Debug, PartialEq)]
pub enum Dialog {
    ConfirmSignal {
        id: ProcId,
        signal: Signal,
        user: String,
        command: String,
        age_s: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sort {
    pub column: Column,
    pub descending: bool,
}

impl Default for Sort {
    fn default() -> Self {
        Sort {
            column: Column::Memory,
            descending: true,
        }
    }
}

/// Replay playback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Playback {
    pub playing: bool,
    /// 1, 2, 4 ... 64 × real time.
    pub speed: u32,
}

pub const MAX_SPEED: u32 = 64;

#[derive(Clone, Debug, PartialEq)]
pub struct ViewState {
    /// Screens, the current one last; never empty.
    pub stack: Vec<Screen>,
    pub focus: Pane,
    pub selected_gpu: usize,
    /// The selected process, by identity (rows move when sorted).
    pub selected: Option<ProcId>,
    /// First table row shown.
    pub offset: usize,
    pub sort: Sort,
    pub filter: String,
    /// The filter line has the keyboard.
    pub filter_editing: bool,
    /// `Some(slot)`: paused (live) or the replay position; `None` = now.
    pub cursor: Option<u64>,
    pub dialog: Option<Dialog>,
    pub show_events: bool,
    /// First line of the help screen shown.
    pub help_scroll: u16,
    /// Terminal size, from the last resize.
    pub size: (u16, u16),
}

impl Default for ViewState {
    fn default() -> Self {
        ViewState {
            stack: vec![Screen::Overview],
            focus: Pane::Procs,
            selected_gpu: 0,
            selected: None,
            offset: 0,
            sort: Sort::default(),
            filter: String::new(),
            filter_editing: false,
            cursor: None,
            dialog: None,
            show_events: false,
            help_scroll: 0,
            size: (120, 40),
        }
    }
}

impl ViewState {
    pub fn screen(&self) -> Screen {
        self.stack.last().copied().unwrap_or(Screen::Overview)
    }

    pub fn push(&mut self, s: Screen) {
        if self.screen() != s {
            self.stack.push(s);
        }
    }

    /// Back one screen; false when already at the overview.
    pub fn pop(&mut self) -> bool {
        if self.stack.len() > 1 {
            self.stack.pop();
            true
        } else {
            false
        }
    }
}
