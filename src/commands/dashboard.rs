//! The dashboard's event loop: terminal events, new snapshots, signals and
//! replay ticks go into `App::update`; the actions it returns are carried
//! out here. A frame is drawn only when something changed.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use crossterm::event::{Event as TermEvent, EventStream};
use futures::StreamExt;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::broadcast::error::RecvError;

use crate::app::{Action, App, Event, Mode, Outcome, Signal};
use crate::history::ProcId;
use crate::model::Snapshot;
use crate::sanitize;
use crate::tui::Tui;

/// Where new snapshots come from while the loop runs.
pub enum Feed {
    /// A live sampler's stream.
    Live(tokio::sync::broadcast::Receiver<Arc<Snapshot>>),
    /// Nothing new arrives: a replay (History is already full).
    None,
}

/// Starts or stops recording; returns the new state as events.
pub type ToggleRecording = Box<dyn FnMut(&App) -> Vec<Event>>;

/// What the loop needs besides the App.
pub struct Hooks {
    pub toggle_recording: ToggleRecording,
}

impl Default for Hooks {
    fn default() -> Self {
        Hooks {
            toggle_recording: Box::new(|_| {
                vec![Event::Outcome(Outcome {
                    ok: false,
                    text: "recording is not available here".into(),
                })]
            }),
        }
    }
}

/// Runs the dashboard until the user quits or a signal arrives.
pub async fn run(mut app: App, mut feed: Feed, mut hooks: Hooks) -> Result<()> {
    let mut tui = Tui::enter(app.config.display.mouse).context("opening the dashboard")?;
    let size = tui.terminal.size().context("reading the terminal size")?;
    app.update(Event::Resize(size.width, size.height));
    let mut events = EventStream::new();
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut hup = signal(SignalKind::hangup()).context("installing the SIGHUP handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let mut dirty = true;
    loop {
        if dirty {
            tui.terminal
                .draw(|f| crate::ui::draw(f, &app))
                .context("drawing the dashboard")?;
            dirty = false;
        }
        let play = match app.mode {
            Mode::Replay(p) if p.playing => {
                let ms = (app.history.interval_ms() / p.speed.max(1) as u64).max(15);
                Some(Duration::from_millis(ms))
            }
            _ => None,
        };
        let event = tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(TermEvent::Key(k))) => Event::Key(k),
                Some(Ok(TermEvent::Mouse(m))) => Event::Mouse(m),
                Some(Ok(TermEvent::Resize(w, h))) => Event::Resize(w, h),
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e).context("reading the terminal"),
                None => break,
            },
            s = next_snapshot(&mut feed) => match s {
                Some(s) => Event::Snapshot(s),
                None => {
                    feed = Feed::None;
                    continue;
                }
            },
            _ = tokio::time::sleep(play.unwrap_or(Duration::from_secs(3600))), if play.is_some() => Event::PlayTick,
            _ = term.recv() => break,
            _ = hup.recv() => break,
            _ = int.recv() => break,
        };
        dirty = true;
        let mut queue = vec![event];
        while let Some(ev) = queue.pop() {
            let Some(action) = app.update(ev) else {
                continue;
            };
            match action {
                Action::Quit => return Ok(()),
                Action::Bell => {
                    use std::io::Write;
                    let mut out = std::io::stdout();
                    let _ = out.write_all(b"\x07");
                    let _ = out.flush();
                }
                Action::Suspend => {
                    tui.suspend().context("suspending")?;
                }
                Action::Alerts(alerts) => {
                    let a = &app.config.alerts;
                    if a.bell {
                        use std::io::Write;
                        let mut out = std::io::stdout();
                        let _ = out.write_all(b"\x07");
                        let _ = out.flush();
                    }
                    if !a.command.is_empty() {
                        for alert in &alerts {
                            if let Err(e) = crate::analysis::run_hook(&a.command, alert) {
                                queue.push(Event::Outcome(Outcome {
                                    ok: false,
                                    text: format!("alert command failed: {e}"),
                                }));
                            }
                        }
                    }
                }
                Action::Inspect(id) => queue.push(inspect(&app, id)),
                Action::Signal { id, signal } => {
                    queue.push(Event::Outcome(send_signal(&app, id, signal)))
                }
                Action::ToggleRecording => queue.extend((hooks.toggle_recording)(&app)),
            }
        }
    }
    Ok(())
}

async fn next_snapshot(feed: &mut Feed) -> Option<Arc<Snapshot>> {
    match feed {
        Feed::Live(rx) => loop {
            match rx.recv().await {
                Ok(s) => return Some(s),
                // Drawing fell behind: skip to the newest.
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return None,
            }
        },
        Feed::None => std::future::pending().await,
    }
}

/// Reads what the drill-down shows that is not sampled (cwd).
fn inspect(app: &App, id: ProcId) -> Event {
    let cwd = if app.simulated || matches!(app.mode, Mode::Replay(_)) {
        None
    } else {
        std::fs::read_link(format!("/proc/{}/cwd", id.key.pid))
            .ok()
            .map(|p| sanitize::clean(&p.to_string_lossy()))
    };
    Event::Detail { id, cwd }
}

/// Sends a signal after checking the PID still is the same process.
fn send_signal(app: &App, id: ProcId, sig: Signal) -> Outcome {
    let pid = id.key.pid;
    if app.simulated {
        return Outcome {
            ok: false,
            text: format!(
                "demo: PID {pid} is simulated, so no {} was sent",
                sig.name()
            ),
        };
    }
    if let Some(now) = crate::host::start_time_of(pid)
        && id.key.start_time != 0
        && now != id.key.start_time
    {
        return Outcome {
            ok: false,
            text: format!("PID {pid} now belongs to another process; nothing was sent"),
        };
    }
    let nix_sig = match sig {
        Signal::Term => nix::sys::signal::Signal::SIGTERM,
        Signal::Kill => nix::sys::signal::Signal::SIGKILL,
    };
    let Ok(raw) = i32::try_from(pid) else {
        return Outcome {
            ok: false,
            text: format!("PID {pid} is out of range"),
        };
    };
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), nix_sig) {
        Ok(()) => Outcome {
            ok: true,
            text: format!("sent {} to PID {pid}", sig.name()),
        },
        Err(nix::errno::Errno::EPERM) => Outcome {
            ok: false,
            text: format!(
                "not allowed to signal PID {pid} (not your process): run vramwatch as its owner or root"
            ),
        },
        Err(nix::errno::Errno::ESRCH) => Outcome {
            ok: false,
            text: format!("PID {pid} has already exited"),
        },
        Err(e) => Outcome {
            ok: false,
            text: format!("could not signal PID {pid}: {e}"),
        },
    }
}
