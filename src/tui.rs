//! The terminal: raw mode, alternate screen, mouse capture, cursor, and
//! getting all of it back on every way out — normal exit, error, signal, or
//! a panic in any thread.

use std::io::{self, IsTerminal, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use crossterm::{cursor, execute};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

mod frame_writer;
pub use frame_writer::FrameWriter;

/// Whether the terminal is in our mode (so restoring twice is harmless).
static ACTIVE: AtomicBool = AtomicBool::new(false);
static MOUSE: AtomicBool = AtomicBool::new(false);

#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error(
        "standard {0} is not a terminal: the dashboard needs one. Use `vramwatch snapshot` (or `snapshot --json`) for pipes and scripts, or `vramwatch record` to log"
    )]
    NotATerminal(&'static str),
    #[error("cannot set up the terminal: {0}")]
    Io(#[from] io::Error),
}

pub type Term = Terminal<CrosstermBackend<FrameWriter<Stdout>>>;

/// Puts the terminal back as it was. Safe to call more than once and from
/// a panic hook.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    if MOUSE.load(Ordering::SeqCst) {
        let _ = execute!(out, DisableMouseCapture);
    }
    let _ = execute!(out, LeaveAlternateScreen, cursor::Show);
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// Restores the terminal before any panic message is printed, in any
/// thread, then ends the program: a half-working dashboard is worse than
/// none.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        restore();
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".into());
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let thread = std::thread::current()
            .name()
            .unwrap_or("unnamed")
            .to_owned();
        crate::tell!(
            "vramwatch: internal error in thread {thread}: {msg}{place}. The terminal was restored. Please report this."
        );
        std::process::exit(101);
    }));
}

/// The terminal while the dashboard runs; dropping it restores.
pub struct Tui {
    pub terminal: Term,
}

impl Tui {
    /// Enters raw mode and the alternate screen; refuses without a TTY.
    pub fn enter(mouse: bool) -> Result<Tui, TuiError> {
        if !io::stdout().is_terminal() {
            return Err(TuiError::NotATerminal("output"));
        }
        if !io::stdin().is_terminal() {
            return Err(TuiError::NotATerminal("input"));
        }
        install_panic_hook();
        // The theme decides colour: `auto` already honours `NO_COLOR`, and an
        // explicit depth (`--color`, `[display] color`) must beat it, as
        // no-color.org asks. crossterm would drop every colour on its own
        // whenever `NO_COLOR` is set, so it is told to write what it gets.
        crossterm::style::force_color_output(true);
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        MOUSE.store(mouse, Ordering::SeqCst);
        let mut out = io::stdout();
        let setup = if mouse {
            execute!(out, EnterAlternateScreen, cursor::Hide, EnableMouseCapture)
        } else {
            execute!(out, EnterAlternateScreen, cursor::Hide)
        };
        if let Err(e) = setup {
            restore();
            return Err(e.into());
        }
        // The cursor was hidden just above.
        let out = FrameWriter::new(io::stdout(), true);
        let terminal = match Terminal::new(CrosstermBackend::new(out)) {
            Ok(t) => t,
            Err(e) => {
                restore();
                return Err(e.into());
            }
        };
        Ok(Tui { terminal })
    }

    /// Leaves the terminal for the shell (Ctrl-Z), then stops this process
    /// until `fg`; comes back into the dashboard after.
    pub fn suspend(&mut self) -> io::Result<()> {
        let mouse = MOUSE.load(Ordering::SeqCst);
        restore();
        nix::sys::signal::raise(nix::sys::signal::Signal::SIGTSTP).map_err(io::Error::other)?;
        // Resumed.
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let mut out = io::stdout();
        if mouse {
            execute!(out, EnterAlternateScreen, cursor::Hide, EnableMouseCapture)?;
        } else {
            execute!(out, EnterAlternateScreen, cursor::Hide)?;
        }
        self.terminal.clear()
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        restore();
    }
}
