//! vramwatch: a terminal dashboard for NVIDIA GPUs that puts memory first.
//!
//! The pipeline (docs/ARCHITECTURE.md): a [`source`] is probed by the
//! [`sampler`] on a schedule of lanes; each round becomes a
//! [`model::Snapshot`] published to every consumer.

/// Writes a line to standard error as `eprintln!` does, but a closed or
/// failing standard error (`vramwatch report x 2>&1 | head -1`) drops the
/// line instead of panicking: the exit status stays the documented one.
#[macro_export]
macro_rules! tell {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        // Messages quote what came from outside (paths, recordings, config
        // values, HTTP bodies): no escape sequence of theirs reaches the
        // terminal.
        let text = $crate::sanitize::for_stderr(&::std::format!($($arg)*));
        let _ = ::std::writeln!(::std::io::stderr(), "{text}");
    }};
}

pub mod analysis;
pub mod app;
pub mod cli;
pub mod commands;
pub(crate) mod compare;
pub mod config;
pub mod export;
pub mod fleet;
pub mod history;
pub mod model;
pub mod pipeline;
pub mod record;
pub mod sampler;
pub mod sanitize;
pub mod source;
pub mod theme;
pub mod tui;
pub mod ui;
