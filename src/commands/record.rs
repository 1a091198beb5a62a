//! `vramwatch record`: samples without a UI and appends every snapshot to a
//! recording (docs/recording-format.md) until Ctrl-C, SIGTERM or
//! `--duration`. Every snapshot the sampler published is written before it
//! exits. The sampler runs on a tokio runtime; the file is written on a
//! thread of its own so a slow disk (an fsync) never delays sampling.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{broadcast, mpsc};

use crate::cli::{RecordArgs, SourceArgs};
use crate::model::Snapshot;
use crate::model::units::{bytes_short, duration_short};
use crate::record::{Header, RecordWarning, WriteOutcome, Writer, WriterOptions, WriterStats};
use crate::sampler::{Sampler, now_ms};
use crate::{config, host, source};

/// How often a status line is printed when stderr is not a terminal.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// What the writer thread tells the main loop.
enum Report {
    Wrote(WriterStats),
    Rotated(PathBuf),
    Warning(RecordWarning),
}

pub fn run(args: &RecordArgs, src_args: &SourceArgs) -> Result<()> {
    let cfg = config::load(src_args.config.as_deref())?.with_interval(src_args.interval);
    let schedule = cfg.schedule();
    // Bind the metrics port first: a bad address stops us before anything starts.
    let listener = match &args.serve {
        Some(addr) => Some(crate::export::bind(addr).context("--serve")?),
        None => None,
    };
    let analysis = crate::analysis::AnalysisConfig::from_config(&cfg);
    let me = host::current_user();
    let src = source::open(src_args.demo.as_deref(), src_args.seed, &me, 0)?;
    let system = src.system();
    let header = Header::new(&system, schedule.interval.as_millis() as u64, now_ms());
    let opts = WriterOptions {
        overwrite: args.force,
        ..WriterOptions::from_config(&cfg.record)
    };
    let writer = Writer::create(&args.output, header, opts)?;
    let shown = absolute(&args.output);
    let tty = std::io::stderr().is_terminal();
    eprintln!(
        "vramwatch: recording {} GPU{} ({}) every {} to {} ({}){}",
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
        match args.duration {
            Some(d) => format!(" for {}", humantime::format_duration(d)),
            None => "; stop with Ctrl-C".into(),
        }
    );

    let (to_writer, from_main) = std_mpsc::channel::<Arc<Snapshot>>();
    let (report_tx, reports) = mpsc::unbounded_channel::<Report>();
    let thread = std::thread::Builder::new()
        .name("vw-record".into())
        .spawn(move || write_all(writer, from_main, report_tx, &analysis))
        .context("starting the writer thread")?;

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let started = Instant::now();
    let outcome = rt.block_on(async {
        let sampler = Sampler::spawn(src, schedule);
        let rx = sampler.subscribe();
        let mut status = Status::new(shown.clone(), tty, started);
        let server = match listener {
            Some(l) => match crate::export::Server::start(
                l,
                &sampler,
                crate::export::analysis::serve_options(&sampler, &cfg),
            ) {
                Ok(s) => Some(s),
                Err(e) => return (Err(anyhow::Error::new(e).context("--serve")), status),
            },
            None => None,
        };
        let r = record_loop(sampler, rx, &to_writer, reports, &mut status, args.duration).await;
        if let Some(s) = server {
            s.stop().await;
        }
        (r, status)
    });
    let (loop_result, mut status) = outcome;
    drop(to_writer);
    let finished = thread
        .join()
        .map_err(|_| anyhow::anyhow!("the writer thread panicked"))?;
    status.clear_line();
    let stats = finished.with_context(|| format!("finishing {}", shown.display()))?;
    let missed = loop_result?;
    eprintln!(
        "vramwatch: wrote {} snapshots ({}) to {} in {}{}{}{}",
        stats.snapshots,
        bytes_short(stats.total_bytes),
        shown.display(),
        duration_short(started.elapsed().as_secs()),
        if stats.rotations > 0 {
            format!("; {} more files from rotation", stats.rotations)
        } else {
            String::new()
        },
        if stats.dropped > 0 {
            format!(
                "; {} snapshots not written (see the warnings above)",
                stats.dropped
            )
        } else {
            String::new()
        },
        if missed > 0 {
            format!("; {missed} snapshots missed (the writer fell behind)")
        } else {
            String::new()
        },
    );
    Ok(())
}

/// Forwards snapshots to the writer until a signal or the deadline, then
/// stops the sampler and forwards what it had published. Returns how many
/// snapshots were missed because the broadcast channel overflowed.
async fn record_loop(
    sampler: Sampler,
    mut rx: broadcast::Receiver<Arc<Snapshot>>,
    to_writer: &std_mpsc::Sender<Arc<Snapshot>>,
    mut reports: mpsc::UnboundedReceiver<Report>,
    status: &mut Status,
    duration: Option<Duration>,
) -> Result<u64> {
    let mut term = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    let deadline = duration.map(|d| tokio::time::Instant::now() + d);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut missed = 0u64;
    let mut ctrl_c = std::pin::pin!(tokio::signal::ctrl_c());
    loop {
        tokio::select! {
            _ = &mut ctrl_c => break,
            _ = term.recv() => break,
            _ = sleep_until(deadline), if deadline.is_some() => break,
            r = rx.recv() => match r {
                Ok(s) => {
                    if to_writer.send(s).is_err() {
                        bail!("the writer thread stopped");
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => missed += n,
                Err(broadcast::error::RecvError::Closed) => bail!("the sampler stopped"),
            },
            Some(rep) = reports.recv() => status.report(rep),
            _ = tick.tick() => status.show(),
        }
    }
    // Stop sampling; write everything already published.
    drop(sampler);
    loop {
        match rx.recv().await {
            Ok(s) => {
                if to_writer.send(s).is_err() {
                    break;
                }
            }
            Err(broadcast::error::RecvError::Lagged(n)) => missed += n,
            Err(broadcast::error::RecvError::Closed) => break,
        }
    }
    while let Ok(rep) = reports.try_recv() {
        status.report(rep);
    }
    Ok(missed)
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The writer thread: analyses each snapshot (its alerts are written as
/// events of that snapshot) and writes it, until the channel closes; then
/// finishes the file.
fn write_all(
    mut writer: Writer,
    snaps: std_mpsc::Receiver<Arc<Snapshot>>,
    reports: mpsc::UnboundedSender<Report>,
    analysis: &crate::analysis::AnalysisConfig,
) -> Result<WriterStats, crate::record::RecordError> {
    let mut analyzer = crate::analysis::Analyzer::new(analysis);
    for s in snaps {
        let alerts = analyzer.observe(&s);
        let s = if alerts.is_empty() {
            s
        } else {
            let mut with = (*s).clone();
            with.events.extend(alerts.iter().map(|a| a.to_event()));
            Arc::new(with)
        };
        let outcome = writer.write(&s);
        let _ = match outcome {
            WriteOutcome::Written => Ok(()),
            WriteOutcome::Rotated { previous } => reports.send(Report::Rotated(previous)),
            WriteOutcome::Warning(w) => reports.send(Report::Warning(w)),
        };
        let _ = reports.send(Report::Wrote(writer.stats().clone()));
    }
    writer.finish()
}

/// The status line: rewritten in place on a terminal, a plain line every
/// minute otherwise.
struct Status {
    path: PathBuf,
    tty: bool,
    started: Instant,
    stats: WriterStats,
    last_log: Instant,
    last_warning: Option<(String, Instant)>,
    on_line: bool,
}

impl Status {
    fn new(path: PathBuf, tty: bool, started: Instant) -> Status {
        Status {
            path,
            tty,
            started,
            stats: WriterStats::default(),
            last_log: Instant::now(),
            last_warning: None,
            on_line: false,
        }
    }

    fn line(&self) -> String {
        let s = &self.stats;
        format!(
            "● REC {}  {} snapshots  {}  {}{}",
            self.path.display(),
            s.snapshots,
            bytes_short(s.bytes),
            duration_short(self.started.elapsed().as_secs()),
            if s.dropped > 0 {
                format!("  {} not written", s.dropped)
            } else {
                String::new()
            }
        )
    }

    fn show(&mut self) {
        if self.tty {
            eprint!("\r\x1b[K{}", self.line());
            let _ = std::io::stderr().flush();
            self.on_line = true;
        } else if self.last_log.elapsed() >= LOG_EVERY {
            self.last_log = Instant::now();
            eprintln!("vramwatch: {}", self.line());
        }
    }

    fn clear_line(&mut self) {
        if self.on_line {
            eprint!("\r\x1b[K");
            self.on_line = false;
        }
    }

    /// A message on a line of its own.
    fn say(&mut self, msg: &str) {
        self.clear_line();
        eprintln!("vramwatch: {msg}");
    }

    fn report(&mut self, r: Report) {
        match r {
            Report::Wrote(stats) => self.stats = stats,
            Report::Rotated(previous) => {
                self.say(&format!(
                    "{} reached the size limit: moved to {}, continuing in a new file",
                    self.path.display(),
                    previous.display()
                ));
            }
            Report::Warning(w) => {
                // The same trouble every second is said once a minute.
                let text = w.to_string();
                let kind = std::mem::discriminant(&w);
                let repeat = self
                    .last_warning
                    .as_ref()
                    .is_some_and(|(k, at)| *k == format!("{kind:?}") && at.elapsed() < LOG_EVERY);
                if !repeat {
                    self.last_warning = Some((format!("{kind:?}"), Instant::now()));
                    self.say(&format!("warning: {text}"));
                }
            }
        }
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_owned())
}
