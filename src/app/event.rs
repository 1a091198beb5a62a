//! Everything that can change the App: input, samples, results of actions.

use std::sync::Arc;

use crossterm::event::{KeyEvent, MouseEvent};

use crate::history::ProcId;
use crate::pipeline::Analyzed;

#[derive(Clone, Debug)]
pub enum Event {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Resize(u16, u16),
    /// A new analysed sample from the pipeline (live).
    Snapshot(Arc<Analyzed>),
    /// Replay playback advances one step.
    PlayTick,
    /// What became of an action, for the message line.
    Outcome(Outcome),
    /// Facts read on demand for the drill-down.
    Detail {
        id: ProcId,
        cwd: Option<String>,
    },
    /// Recording state changed (started, progress, warning, stopped).
    Recording(RecordingStatus),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub ok: bool,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum RecordingStatus {
    Started { path: String },
    Progress { bytes: u64 },
    Warning { text: String },
    Stopped,
}
