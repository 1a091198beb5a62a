//! `vramwatch record`: samples without a UI and appends every snapshot to a
//! recording (docs/recording-format.md) until Ctrl-C, SIGTERM or
//! `--duration`. Every snapshot the pipeline made is written before it
//! exits: the recorder is a consumer of the pipeline with a queue of its
//! own, writing on a thread of its own so a slow disk (an fsync) never
//! delays sampling.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::analysis::AnalysisConfig;
use crate::cli::{RecordArgs, SourceArgs};
use crate::config;
use crate::model::now_ms;
use crate::model::units::{bytes_short, duration_short};
use crate::pipeline::Pipeline;
use crate::record::recorder::{Recorder, Report};
use crate::record::{Header, Writer, WriterOptions, WriterStats};
use crate::source::host;

/// How often a status line is printed when stderr is not a terminal.
const LOG_EVERY: Duration = Duration::from_secs(60);

pub fn run(args: &RecordArgs, src_args: &SourceArgs) -> Result<()> {
    let cfg = config::load(src_args.config.as_deref())?.with_interval(src_args.interval);
    let schedule = cfg.schedule();
    // Bind the metrics port first: a bad address stops us before anything starts.
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

    let pipeline = Pipeline::start(src, schedule, AnalysisConfig::from_config(&cfg))
        .context("starting the sampler")?;
    let hook = super::start_hook(pipeline.hub(), &cfg, |e| eprintln!("vramwatch: {e}"));
    let (report_tx, reports) = mpsc::unbounded_channel::<Report>();
    let recorder = Recorder::start(writer, pipeline.hub(), move |r| {
        let _ = report_tx.send(r);
    })?;

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let started = Instant::now();
    let mut status = Status::new(shown.clone(), tty, started);
    let waited = rt.block_on(async {
        let server = match listener {
            Some(l) => Some(
                crate::export::Server::start(l, pipeline.hub(), Default::default())
                    .context("--serve")?,
            ),
            None => None,
        };
        let r = wait(reports, &mut status, args.duration).await;
        if let Some(s) = server {
            s.stop().await;
        }
        r
    });
    // Stop sampling: everything sampled is analysed and reaches the
    // recorder, whose queue then ends.
    pipeline.stop();
    let summary = recorder.finish();
    if let Some(h) = hook {
        let _ = h.join();
    }
    let mut reports = waited?;
    while let Ok(rep) = reports.try_recv() {
        status.report(rep);
    }
    status.clear_line();
    let stats = &summary.stats;
    // The summary is printed even when the file could not be finished.
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
        if summary.missed > 0 {
            format!(
                "; {} snapshots missed (the writer fell behind)",
                summary.missed
            )
        } else {
            String::new()
        },
    );
    if let Some(why) = summary.failed {
        let why = format!("finishing {}: {why}", shown.display());
        return Err(crate::cli::Failure(why).into());
    }
    Ok(())
}

/// Shows the recorder's progress until a signal or the deadline. Returns
/// the report channel, for what comes after the stop.
async fn wait(
    mut reports: mpsc::UnboundedReceiver<Report>,
    status: &mut Status,
    duration: Option<Duration>,
) -> Result<mpsc::UnboundedReceiver<Report>> {
    let mut term = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    let deadline = duration.map(|d| tokio::time::Instant::now() + d);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut ctrl_c = std::pin::pin!(tokio::signal::ctrl_c());
    loop {
        tokio::select! {
            _ = &mut ctrl_c => break,
            _ = term.recv() => break,
            _ = sleep_until(deadline), if deadline.is_some() => break,
            Some(rep) = reports.recv() => status.report(rep),
            _ = tick.tick() => status.show(),
        }
    }
    Ok(reports)
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
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
            Report::Wrote { stats, .. } => self.stats = stats,
            Report::Missed { count, before_seq } => self.say(&format!(
                "warning: {count} snapshot(s) before seq {before_seq} never reached the recorder (its queue was full)"
            )),
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
