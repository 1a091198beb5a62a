//! What the user looks at: screens, panes, the table's selection, sort and
//! filter, dialogs. Owned by `App`, changed only in `App::update`.

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
    /// The events pane, while it is open.
    Events,
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

pub use crate::config::EventsPane;

/// Where the user is: the screen stack, which overview pane has the
/// arrows, the terminal size and the events pane's state.
#[derive(Clone, Debug, PartialEq)]
pub struct Nav {
    /// Screens, the current one last; never empty.
    stack: Vec<Screen>,
    pub focus: Pane,
    pub selected_gpu: usize,
    pub events: EventsPane,
    /// A pane shown unasked ([`EventsPane::Auto`]) was shown at the last
    /// update: it then keeps fewer rows (`layout::EventsRows`).
    pub events_held: bool,
    /// Terminal size, from the last resize.
    pub size: (u16, u16),
}

impl Default for Nav {
    fn default() -> Self {
        Nav {
            stack: vec![Screen::Overview],
            focus: Pane::Procs,
            selected_gpu: 0,
            events: EventsPane::Auto,
            events_held: false,
            size: (120, 40),
        }
    }
}

impl Nav {
    pub fn screen(&self) -> Screen {
        self.stack.last().copied().unwrap_or(Screen::Overview)
    }

    pub(crate) fn push(&mut self, s: Screen) {
        if self.screen() != s {
            self.stack.push(s);
        }
    }

    /// Replaces the current screen (moving between GPUs in the GPU view).
    pub(crate) fn replace(&mut self, s: Screen) {
        if self.stack.len() > 1 {
            self.stack.pop();
        }
        self.push(s);
    }

    /// Back one screen; false when already at the overview.
    pub(crate) fn pop(&mut self) -> bool {
        if self.stack.len() > 1 {
            self.stack.pop();
            true
        } else {
            false
        }
    }
}

/// The process table: what is selected and shown, in which order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableState {
    /// The selected process, by identity (rows move when sorted).
    pub selected: Option<ProcId>,
    /// First table row shown.
    pub offset: usize,
    pub sort: Sort,
    pub filter: String,
    /// The filter line has the keyboard.
    pub filter_editing: bool,
    /// The user chose the selected process; until then the selection is
    /// the top row, so an immediate Enter opens what is on top.
    pub pinned: bool,
    /// Characters the command column is scrolled to the left.
    pub hscroll: u16,
    /// The user inverted the sort: every column then sorts the other way
    /// from its default, until inverted again.
    pub inverted: bool,
}

/// The events pane: which event is selected and the first line shown.
/// Events are listed newest first; indices count from the newest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventsState {
    pub selected: Option<usize>,
    pub offset: usize,
}
