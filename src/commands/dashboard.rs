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

use crate::app::{Action, App, Event, Mode, Outcome, RecordingStatus, Signal};
use crate::cli::{ColorArg, SourceArgs, UiArgs};
use crate::config::{ColorDepth, Config};
use crate::history::ProcId;
use crate::model::Snapshot;
use crate::sanitize;
use crate::tui::Tui;
use crate::ui::theme::{Theme, depth_from_env};

/// Where new snapshots come from while the loop runs.
pub enum Feed {
    /// A live sampler's stream.
    Live(tokio::sync::broadcast::Receiver<Arc<Snapshot>>),
    /// Nothing new arrives: a replay (History is already full).
    None,
}

/// Where `r` records to, and how.
pub struct RecordingSetup {
    pub dir: std::path::PathBuf,
    pub compress: bool,
    pub options: crate::record::WriterOptions,
    pub analysis: crate::analysis::AnalysisConfig,
}

impl RecordingSetup {
    /// From the config: `[record] dir`, else the platform data dir's
    /// `vramwatch/recordings`.
    pub fn from_config(config: &crate::config::Config) -> Option<RecordingSetup> {
        let dir = config.record.dir.clone().or_else(|| {
            directories::ProjectDirs::from("", "", "vramwatch")
                .map(|d| d.data_dir().join("recordings"))
        })?;
        Some(RecordingSetup {
            dir,
            compress: config.record.compress,
            options: crate::record::WriterOptions::from_config(&config.record),
            analysis: crate::analysis::AnalysisConfig::from_config(config),
        })
    }
}

/// What the loop needs besides the App.
#[derive(Default)]
pub struct Hooks {
    /// `None`: `r` says recording is not available.
    pub recording: Option<RecordingSetup>,
}

/// Starts or stops recording; returns the new state as events.
fn toggle_recording(
    app: &App,
    setup: Option<&RecordingSetup>,
    active: &mut Option<crate::record::background::Background>,
) -> Event {
    use crate::record::background::{Background, file_name};
    if let Some(rec) = active.take() {
        rec.stop();
        return Event::Recording(RecordingStatus::Stopped);
    }
    let Some(setup) = setup else {
        return Event::Outcome(Outcome {
            ok: false,
            text: "recording is not available here".into(),
        });
    };
    let now = crate::sampler::now_ms();
    let path = file_name(&setup.dir, &app.system.host, now, setup.compress);
    match Background::start(
        path.clone(),
        &app.system,
        app.history.interval_ms(),
        now,
        setup.options.clone(),
        setup.analysis.clone(),
    ) {
        Ok(rec) => {
            *active = Some(rec);
            Event::Recording(RecordingStatus::Started {
                path: path.display().to_string(),
            })
        }
        Err(e) => Event::Outcome(Outcome {
            ok: false,
            text: format!("cannot record: {e}"),
        }),
    }
}

/// The config with the dashboard's command-line overrides applied.
pub fn load_config(source: &SourceArgs, ui: &UiArgs) -> Result<Config> {
    let mut config = crate::config::load(source.config.as_deref())?.with_interval(source.interval);
    if let Some(c) = ui.color {
        config.display.color = match c {
            ColorArg::Auto => ColorDepth::Auto,
            ColorArg::Ansi16 => ColorDepth::Ansi16,
            ColorArg::Ansi256 => ColorDepth::Ansi256,
            ColorArg::Truecolor => ColorDepth::TrueColor,
        };
    }
    Ok(config)
}

/// `vramwatch [--demo]`: the dashboard over a live sampler (and the
/// Prometheus exporter on the same sampler with `--serve`).
pub fn run_live(source: &SourceArgs, ui: &UiArgs, me: String) -> Result<()> {
    let config = load_config(source, ui)?;
    // Open the source and bind the metrics port before touching the
    // terminal, so errors print plainly.
    let src = crate::source::open(source.demo.as_deref(), source.seed, &me, 0)?;
    let listener = match &ui.serve {
        Some(addr) => Some(crate::export::bind(addr).context("--serve")?),
        None => None,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async move {
        let sampler = crate::sampler::Sampler::spawn(src, config.schedule());
        let server = match listener {
            Some(l) => Some(crate::export::Server::start(
                l,
                &sampler,
                crate::export::analysis::serve_options(&sampler, &config),
            )?),
            None => None,
        };
        let theme = Theme::new(config.display.theme, depth_from_env(config.display.color));
        let hooks = Hooks {
            recording: RecordingSetup::from_config(&config),
        };
        let mut app = App::new(config, sampler.system.clone(), Mode::Live, me);
        app.theme = theme;
        app.read_only = ui.read_only;
        app.simulated = source.demo.is_some();
        let r = run(app, Feed::Live(sampler.subscribe()), hooks).await;
        if let Some(s) = server {
            s.stop().await;
        }
        r
    })
}

/// Runs the dashboard until the user quits or a signal arrives.
pub async fn run(mut app: App, mut feed: Feed, hooks: Hooks) -> Result<()> {
    let mut recording: Option<crate::record::background::Background> = None;
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
                Some(s) => {
                    if let Some(rec) = &recording {
                        rec.feed(&s);
                        let (bytes, warning) = rec.poll();
                        app.update(Event::Recording(RecordingStatus::Progress { bytes }));
                        if let Some(text) = warning {
                            app.update(Event::Recording(RecordingStatus::Warning { text }));
                        }
                    }
                    Event::Snapshot(s)
                }
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
                Action::Quit => {
                    if let Some(rec) = recording.take() {
                        rec.finish();
                    }
                    return Ok(());
                }
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
                Action::ToggleRecording => queue.push(toggle_recording(
                    &app,
                    hooks.recording.as_ref(),
                    &mut recording,
                )),
            }
        }
    }
    if let Some(rec) = recording.take() {
        rec.finish();
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
