//! `vramwatch record`: samples without a UI and appends every snapshot to a
//! recording (docs/recording-format.md) until Ctrl-C, SIGTERM or
//! `--duration`, or, given `-- COMMAND`, for as long as the command runs
//! (it then exits with the command's status; docs/cli.md). Every snapshot
//! the pipeline made is written before it exits: the recorder is a
//! consumer of the pipeline with a queue of its own, writing on a thread of
//! its own so a slow disk (an fsync) never delays sampling.
//!
//! `status.rs` is what it says on standard error, `wait.rs` how it waits
//! (for a signal, the deadline or the command), `child.rs` the command.

mod child;
mod status;
mod wait;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::sync::mpsc;

use crate::analysis::AnalysisConfig;
use crate::app::Clock;
use crate::cli::{RecordArgs, SourceArgs};
use crate::config;
use crate::model::now_ms;
use crate::model::units::duration_short;
use crate::pipeline::Pipeline;
use crate::record::recorder::{Recorder, Report};
use crate::record::{Header, Writer, WriterOptions};
use crate::source::host;
use status::{Status, summary_line};
use wait::{Ran, Waiter};

/// How `record -- COMMAND` ends when the command did not succeed: with
/// the command's exit status (128 + N when signal N killed it; 127 when it
/// was not found, 126 when it could not be run). What happened has been
/// said on standard error already, so `main` only exits with it.
#[derive(Debug, thiserror::Error)]
#[error("the command's exit status was {0}")]
pub struct CommandStatus(pub u8);

/// A recording under way: the pipeline, its consumers and the reports.
struct Session {
    pipeline: Pipeline,
    hook: Option<JoinHandle<()>>,
    recorder: Recorder,
    reports: mpsc::UnboundedReceiver<Report>,
    listener: Option<std::net::TcpListener>,
    /// The file, as an absolute path.
    shown: PathBuf,
    interval: Duration,
}

pub fn run(args: &RecordArgs, src_args: &SourceArgs) -> Result<()> {
    let mut session = start(args, src_args)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let started = Instant::now();
    // With a command, no status line: its output has the terminal.
    let tty = std::io::stderr().is_terminal() && args.command.is_empty();
    let mut status = Status::new(
        session.shown.clone(),
        tty,
        started,
        Clock::Local,
        std::io::stderr(),
    );
    let hub = session.pipeline.hub().clone();
    let notes = session.recorder.notes();
    let waited = rt.block_on(async {
        let mut waiter = Waiter::new(&mut session.reports, &mut status)?;
        let server = match session.listener.take() {
            Some(l) => {
                Some(crate::export::Server::start(l, &hub, Default::default()).context("--serve")?)
            }
            None => None,
        };
        let ran = if args.command.is_empty() {
            waiter.wait(args.duration).await;
            None
        } else {
            let latest = hub.latest();
            let ran = waiter
                .run_command(
                    &args.command,
                    args.duration,
                    latest,
                    session.interval,
                    &notes,
                )
                .await;
            Some(ran)
        };
        if let Some(s) = server {
            s.stop().await;
        }
        anyhow::Ok(ran)
    });
    finish(session, status, started, waited)
}

/// Opens the source and the file, says what is recorded, and starts the
/// pipeline with its recorder (and `--serve`'s listener, bound first: a
/// bad address stops us before anything starts).
fn start(args: &RecordArgs, src_args: &SourceArgs) -> Result<Session> {
    let cfg = config::load(src_args.config.as_deref())?.with_interval(src_args.interval);
    let schedule = cfg.schedule();
    let listener = match &args.serve {
        Some(addr) => Some(crate::export::bind(addr).context("--serve")?),
        None => None,
    };
    let me = host::current_user();
    let src = super::open_source(src_args, &me, 0)?;
    let system = src.system();
    let header = Header::new(&system, schedule.interval.as_millis() as u64, now_ms());
    let opts = WriterOptions {
        overwrite: args.force,
        ..WriterOptions::from_config(&cfg.record)
    };
    let writer = Writer::create(&args.output, header, opts)?;
    let shown = absolute(&args.output);
    let until = match (args.command.is_empty(), args.duration) {
        (true, Some(d)) => format!(" for {}", humantime::format_duration(d)),
        (true, None) => "; stop with Ctrl-C".into(),
        (false, d) => format!(
            " while `{}` runs{}",
            child::shell_words(&args.command),
            d.map(|d| format!(" (at most {})", humantime::format_duration(d)))
                .unwrap_or_default()
        ),
    };
    crate::tell!(
        "vramwatch: recording {} GPU{} ({}) every {} to {} ({}){until}",
        system.gpus.len(),
        if system.gpus.len() == 1 { "" } else { "s" },
        system.source,
        humantime::format_duration(schedule.interval),
        shown.display(),
        if writer.compressed() {
            "zstd-compressed JSON Lines"
        } else {
            "JSON Lines"
        },
    );
    let pipeline = Pipeline::start(src, schedule, AnalysisConfig::from_config(&cfg))
        .context("starting the sampler")?;
    let hook = super::start_hook(pipeline.hub(), &cfg, |e| crate::tell!("vramwatch: {e}"));
    let (report_tx, reports) = mpsc::unbounded_channel::<Report>();
    let recorder = Recorder::start(writer, pipeline.hub(), move |r| {
        let _ = report_tx.send(r);
    })?;
    Ok(Session {
        pipeline,
        hook,
        recorder,
        reports,
        listener,
        shown,
        interval: schedule.interval,
    })
}

/// Stops sampling (everything sampled is analysed and reaches the
/// recorder, whose queue then ends), finishes the file, prints the summary
/// and decides how `record` ends.
fn finish(
    session: Session,
    mut status: Status<std::io::Stderr>,
    started: Instant,
    waited: Result<Option<Ran>>,
) -> Result<()> {
    let Session {
        pipeline,
        hook,
        recorder,
        mut reports,
        shown,
        ..
    } = session;
    pipeline.stop();
    let summary = recorder.finish();
    if let Some(h) = hook {
        let _ = h.join();
    }
    // What the recorder said after the wait ended (the last outage's news).
    while let Ok(rep) = reports.try_recv() {
        status.report(rep);
    }
    status.clear_line();
    if let Ok(Some(Ran::Refused(r))) = &waited {
        return Err(remove_unused(&shown, r));
    }
    // The summary is printed whatever went wrong: it holds the losses.
    crate::tell!(
        "vramwatch: {}",
        summary_line(&summary, &shown, started.elapsed(), Clock::Local)
    );
    let ran = waited?;
    let failed = summary.failed.map(|why| finishing(&shown, why));
    let code = match ran {
        None => 0,
        Some(ran) => command_code(ran)?,
    };
    match (code, failed) {
        (0, Some(why)) => Err(crate::cli::Failure(why).into()),
        (0, None) => Ok(()),
        (code, failed) => {
            // The command's status wins; the failure is still said.
            if let Some(why) = failed {
                crate::tell!("vramwatch: error: {why}");
            }
            Err(CommandStatus(code).into())
        }
    }
}

/// The recording of a command that could not be started: removed, so
/// that nothing mistakes it for the command's. Says why; the error is the
/// status to exit with.
fn remove_unused(path: &Path, r: &child::Refused) -> anyhow::Error {
    let removed = match std::fs::remove_file(path) {
        Ok(()) => format!("{} removed", path.display()),
        Err(e) => format!("{} left behind: cannot remove it: {e}", path.display()),
    };
    crate::tell!(
        "vramwatch: error: {}; nothing recorded ({removed})",
        r.message
    );
    CommandStatus(r.code).into()
}

/// Why the file could not be finished (the writer's errors name the file
/// already).
fn finishing(path: &Path, why: String) -> String {
    let name = path.display().to_string();
    if why.starts_with(&name) {
        format!("finishing {why}")
    } else {
        format!("finishing {name}: {why}")
    }
}

/// Says how the command ended; its exit status as a shell gives it.
fn command_code(ran: Ran) -> Result<u8> {
    match ran {
        Ran::Exited {
            status,
            took,
            pid,
            shown,
        } => {
            crate::tell!(
                "vramwatch: `{shown}` (pid {pid}) {} after {}",
                child::describe(status),
                took_text(took)
            );
            Ok(child::exit_code(status))
        }
        Ran::NotStarted(sig) => {
            crate::tell!(
                "vramwatch: {} before the command was started: not started",
                sig.as_str()
            );
            Ok(128 + sig as u8)
        }
        Ran::Lost(why) => Err(crate::cli::Failure(why).into()),
        // Told before the summary.
        Ran::Refused(r) => Ok(r.code),
    }
}

/// `0.4s`, `12s`, `1m05s`.
fn took_text(d: Duration) -> String {
    if d < Duration::from_secs(10) {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        duration_short(d.as_secs())
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_owned())
}
