//! What `App::update` asks the outside world to do. The runtime carries it
//! out and reports back with an `Event::Outcome`.

use crate::app::view::Signal;
use crate::history::ProcId;

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Quit,
    /// Send `signal` to the process, after checking it is still the same
    /// process (PID and start time).
    Signal {
        id: ProcId,
        signal: Signal,
    },
    /// Start or stop recording to the configured directory.
    ToggleRecording,
    /// Read the facts the drill-down shows (cwd).
    Inspect(ProcId),
    /// Ring the terminal bell.
    Bell,
    /// Give the terminal back to the shell until `fg`.
    Suspend,
}
