//! The dashboard's event loop: terminal events, analysed snapshots from the
//! pipeline, signals and replay ticks go into `App::update`; the actions it
//! returns are carried out here. A frame is drawn only when something
//! changed. The loop runs on the main thread with a runtime of its own: the
//! pipeline (sampling, analysis) runs on its own thread, so a slow frame
//! never delays a sampling round, and the recorder (`r`) takes its
//! snapshots from the pipeline, not from this loop.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use crossterm::event::{Event as TermEvent, EventStream};
use futures::StreamExt;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::mpsc;

use crate::analysis::AnalysisConfig;
use crate::app::{Action, App, Event, Mode, Outcome, RecordingStatus, Settings, Signal};
use crate::cli::{ColorArg, SourceArgs, UiArgs};
use crate::config::{ColorDepth, Config};
use crate::history::ProcId;
use crate::model::now_ms;
use crate::pipeline::{Analyzed, Hub, Pipeline};
use crate::record::RecordError;
use crate::record::recorder::{Recorder, Report, file_name};
use crate::sanitize;
use crate::theme::Theme;
use crate::tui::Tui;

/// Analysed snapshots taken in one go before a frame is drawn: a loop that
/// fell behind catches up without drawing each one.
const CATCH_UP: usize = 64;

/// Where new snapshots come from while the loop runs.
pub enum Feed {
    /// The pipeline's stream.
    Live(tokio::sync::broadcast::Receiver<Arc<Analyzed>>),
    /// Nothing new arrives: a replay (History is already full).
    None,
}

/// Where `r` records to, and how.
pub struct RecordingSetup {
    pub dir: std::path::PathBuf,
    pub compress: bool,
    pub options: crate::record::WriterOptions,
}

impl RecordingSetup {
    /// From the config: `[record] dir`, else the platform data dir's
    /// `vramwatch/recordings`.
    pub fn from_config(config: &Config) -> Option<RecordingSetup> {
        let dir = config.record.dir.clone().or_else(|| {
            directories::ProjectDirs::from("", "", "vramwatch")
                .map(|d| d.data_dir().join("recordings"))
        })?;
        Some(RecordingSetup {
            dir,
            compress: config.record.compress,
            options: crate::record::WriterOptions::from_config(&config.record),
        })
    }
}

/// What the loop needs besides the App.
#[derive(Default)]
pub struct Hooks {
    /// `None`: `r` says recording is not available.
    pub recording: Option<RecordingSetup>,
    /// The pipeline, for the recorder to subscribe to.
    pub hub: Option<Hub>,
    /// Lines to show from elsewhere (the alert command's failures).
    pub notes: Option<mpsc::UnboundedReceiver<String>>,
}

/// A recording started with `r`: the recorder and its reports.
struct Active {
    recorder: Recorder,
    reports: mpsc::UnboundedReceiver<Report>,
}

/// Starts or stops recording; returns the new state as an event.
fn toggle_recording(app: &App, hooks: &Hooks, active: &mut Option<Active>) -> Event {
    if let Some(rec) = active.take() {
        let summary = rec.recorder.stop();
        if let Some(why) = summary.failed {
            return Event::Outcome(Outcome {
                ok: false,
                text: format!("recording could not be finished: {why}"),
            });
        }
        return Event::Recording(RecordingStatus::Stopped);
    }
    let (Some(setup), Some(hub)) = (hooks.recording.as_ref(), hooks.hub.as_ref()) else {
        return Event::Outcome(Outcome {
            ok: false,
            text: "recording is not available here".into(),
        });
    };
    let base = file_name(&setup.dir, &app.system().host, now_ms(), setup.compress);
    // A name taken this second (another dashboard on this host, or `r`
    // pressed twice within it) gets the next free one: `…-170046-2.jsonl.zst`.
    let mut tried = 0;
    loop {
        let path = numbered(&base, tried);
        let (tx, reports) = mpsc::unbounded_channel();
        let created = Recorder::create(path.clone(), hub, setup.options.clone(), move |r| {
            let _ = tx.send(r);
        });
        return match created {
            Ok(recorder) => {
                *active = Some(Active { recorder, reports });
                Event::Recording(RecordingStatus::Started {
                    path: path.display().to_string(),
                })
            }
            Err(RecordError::Exists { .. }) if tried < NAMES_TRIED => {
                tried += 1;
                continue;
            }
            Err(e) => Event::Outcome(Outcome {
                ok: false,
                text: format!("cannot record: {e}"),
            }),
        };
    }
}

/// Names a recording started with `r` tries before it gives up.
const NAMES_TRIED: u32 = 9;

/// `path` with `-(n+1)` before its extension (`n` > 0), or `path` itself
/// (not `.N`: that is a rotated file's name).
fn numbered(path: &std::path::Path, n: u32) -> std::path::PathBuf {
    if n == 0 {
        return path.to_path_buf();
    }
    crate::record::with_stem_suffix(path, &format!("-{}", n + 1))
}

/// What the recorder reported, as an App event (`None`: nothing to show).
fn recording_event(r: Report) -> Option<Event> {
    match r {
        Report::Wrote { stats, .. } => Some(Event::Recording(RecordingStatus::Progress {
            bytes: stats.total_bytes,
        })),
        Report::Warning(w) => Some(Event::Recording(RecordingStatus::Warning {
            text: w.to_string(),
        })),
        Report::Missed { count, .. } => Some(Event::Recording(RecordingStatus::Warning {
            text: format!("{count} snapshot(s) were not recorded (the disk fell behind)"),
        })),
        Report::Rotated(previous) => Some(Event::Outcome(Outcome {
            ok: true,
            text: format!(
                "recording reached its size limit: moved to {}",
                previous.display()
            ),
        })),
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
    config.display.ascii |= ui.ascii;
    Ok(config)
}

/// `vramwatch [--demo]`: the dashboard over a live pipeline (and the
/// Prometheus exporter on the same pipeline with `--serve`).
pub fn run_live(source: &SourceArgs, ui: &UiArgs, me: String) -> Result<()> {
    let config = load_config(source, ui)?;
    // Open the source and bind the metrics port before touching the
    // terminal, so errors print plainly.
    let src = super::open_source(source, &me, 0)?;
    let listener = match &ui.serve {
        Some(addr) => Some(crate::export::bind(addr).context("--serve")?),
        None => None,
    };
    // The address as bound, for the header ("serving :9400").
    let serving = listener.as_ref().map(|l| {
        l.local_addr()
            .map_or_else(|_| ui.serve.clone().unwrap_or_default(), |a| a.to_string())
    });
    // The first frame shows memory and processes as soon as they are read
    // (a preview snapshot); the other figures follow ~10 ms later.
    let schedule = crate::sampler::Schedule {
        preview: true,
        ..config.schedule()
    };
    let pipeline = Pipeline::start(src, schedule, AnalysisConfig::from_config(&config))
        .context("starting the sampler")?;
    // Subscribed before anything else: the first snapshot (the preview,
    // ~15 ms after the start on an H200) is the first frame's, and the
    // stream does not replay.
    let feed = Feed::Live(pipeline.hub().subscribe());
    let (note_tx, notes) = mpsc::unbounded_channel::<String>();
    let hook = super::start_hook(pipeline.hub(), &config, move |e| {
        let _ = note_tx.send(e);
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let hub = pipeline.hub().clone();
    let result = rt.block_on(async move {
        let server = match listener {
            Some(l) => Some(crate::export::Server::start(l, &hub, Default::default())?),
            None => None,
        };
        let settings = Settings {
            theme: Theme::new(
                config.display.theme,
                super::color_depth(config.display.color),
            ),
            read_only: ui.read_only,
            simulated: source.demo.is_some(),
            serving,
            ..Settings::new(config.clone(), hub.system.clone(), me)
        };
        let hooks = Hooks {
            recording: RecordingSetup::from_config(&config),
            hub: Some(hub.clone()),
            notes: Some(notes),
        };
        let r = run(App::live(settings), feed, hooks).await;
        if let Some(s) = server {
            s.stop().await;
        }
        r
    });
    pipeline.stop();
    if let Some(h) = hook {
        let _ = h.join();
    }
    result
}

fn bell() {
    use std::io::Write;
    let mut out = std::io::stdout();
    let _ = out.write_all(b"\x07");
    let _ = out.flush();
}

/// How long the first frame waits for the first snapshot.
const FIRST_FRAME_WAIT: Duration = Duration::from_millis(500);

/// Runs the dashboard until the user quits or a signal arrives.
pub async fn run(mut app: App, mut feed: Feed, mut hooks: Hooks) -> Result<()> {
    let mut recording: Option<Active> = None;
    let mut tui = Tui::enter(app.config().display.mouse).context("opening the dashboard")?;
    let size = tui.terminal.size().context("reading the terminal size")?;
    app.update(Event::Resize(size.width, size.height));
    let mut events = EventStream::new();
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut hup = signal(SignalKind::hangup()).context("installing the SIGHUP handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let mut notes = hooks.notes.take();
    let mut dirty = true;
    // The first frame waits a moment for the first snapshot (the preview
    // of memory and processes): painted before it, the screen is a
    // skeleton ("no readings") that the next frame repaints whole, 1.7 KB
    // for nothing.
    let first_by = tokio::time::Instant::now() + FIRST_FRAME_WAIT;
    let mut painted = false;
    'run: loop {
        let wait_first = !painted
            && matches!(feed, Feed::Live(_))
            && app.history().is_empty()
            && tokio::time::Instant::now() < first_by;
        if let Some(hub) = &hooks.hub {
            // Process utilisation and host facts are read more often while
            // shown (`sampler::UtilCadence`).
            hub.on_screen.set_util(app.shows_proc_util());
            hub.on_screen.set_host(app.shows_host_facts());
        }
        if dirty && !wait_first {
            tui.terminal
                .draw(|f| crate::ui::draw(f, &app))
                .context("drawing the dashboard")?;
            dirty = false;
            painted = true;
        }
        let play = match app.mode() {
            Mode::Replay(p) if p.playing => {
                let ms = (app.history().interval_ms() / p.speed.max(1) as u64).max(15);
                Some(Duration::from_millis(ms))
            }
            _ => None,
        };
        let mut queue = tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(TermEvent::Key(k))) => vec![Event::Key(k)],
                Some(Ok(TermEvent::Mouse(m))) => vec![Event::Mouse(m)],
                Some(Ok(TermEvent::Resize(w, h))) => vec![Event::Resize(w, h)],
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e).context("reading the terminal"),
                None => break,
            },
            s = next_snapshot(&mut feed) => match s {
                Some(s) => catch_up(&mut feed, s),
                None => {
                    feed = Feed::None;
                    continue;
                }
            },
            Some(r) = next_report(&mut recording) => recording_event(r).into_iter().collect(),
            Some(text) = next_note(&mut notes) => vec![Event::Outcome(Outcome { ok: false, text })],
            _ = tokio::time::sleep(play.unwrap_or(Duration::from_secs(3600))), if play.is_some() => vec![Event::PlayTick],
            _ = tokio::time::sleep_until(first_by), if wait_first => Vec::new(),
            _ = term.recv() => break,
            _ = hup.recv() => break,
            _ = int.recv() => break,
        };
        dirty = true;
        queue.reverse();
        while let Some(ev) = queue.pop() {
            let Some(action) = app.update(ev) else {
                continue;
            };
            match action {
                Action::Quit => break 'run,
                Action::Bell => bell(),
                Action::Suspend => tui.suspend().context("suspending")?,
                Action::Inspect(id) => queue.push(inspect(&app, id)),
                Action::Signal { id, signal } => {
                    queue.push(Event::Outcome(send_signal(&app, id, signal)))
                }
                Action::ToggleRecording => {
                    queue.push(toggle_recording(&app, &hooks, &mut recording))
                }
            }
        }
    }
    if let Some(rec) = recording.take() {
        rec.recorder.stop();
    }
    Ok(())
}

/// `first` and whatever else the pipeline has already sent, oldest first:
/// one frame for all of them.
fn catch_up(feed: &mut Feed, first: Arc<Analyzed>) -> Vec<Event> {
    let mut out = vec![Event::Snapshot(first)];
    if let Feed::Live(rx) = feed {
        while out.len() < CATCH_UP {
            match rx.try_recv() {
                Ok(s) => out.push(Event::Snapshot(s)),
                Err(TryRecvError::Lagged(_)) => continue,
                Err(_) => break,
            }
        }
    }
    out
}

async fn next_report(active: &mut Option<Active>) -> Option<Report> {
    match active {
        Some(a) => a.reports.recv().await,
        None => std::future::pending().await,
    }
}

async fn next_note(notes: &mut Option<mpsc::UnboundedReceiver<String>>) -> Option<String> {
    match notes {
        Some(n) => n.recv().await,
        None => std::future::pending().await,
    }
}

async fn next_snapshot(feed: &mut Feed) -> Option<Arc<Analyzed>> {
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
    let cwd = if app.settings().simulated || app.replaying() {
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
    if app.settings().simulated {
        return Outcome {
            ok: false,
            text: format!(
                "demo: PID {pid} is simulated, so no {} was sent",
                sig.name()
            ),
        };
    }
    if let Some(now) = crate::source::host::start_time_of(pid)
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::numbered;

    #[test]
    fn a_taken_recording_name_gets_a_number_before_its_extension() {
        let p = Path::new("/r/vramwatch-node-20261206-170046.jsonl.zst");
        assert_eq!(numbered(p, 0), p);
        assert_eq!(
            numbered(p, 1),
            Path::new("/r/vramwatch-node-20261206-170046-2.jsonl.zst")
        );
        assert_eq!(numbered(Path::new("/r/x"), 2), Path::new("/r/x-3"));
    }
}
