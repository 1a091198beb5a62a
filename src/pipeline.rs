//! The live pipeline, one stage after another (docs/ARCHITECTURE.md):
//!
//! ```text
//! source ─▶ sampler ─▶ analysis (once) ─▶ Arc<Analyzed> ─┬▶ dashboard (App)
//!           (in order)                                    ├▶ recorder (lossless)
//!                                                         ├▶ exporter (/metrics)
//!                                                         └▶ alert hook (lossless)
//! ```
//!
//! The sampler and the analysis stage run on a thread and runtime of their
//! own (`vw-pipeline`), so neither drawing nor serving can delay a round.
//! Each snapshot is analysed exactly once; every consumer gets the same
//! [`Analyzed`]: the snapshot, the assessment as of it, and the alerts it
//! raised. Consumers that may skip (the dashboard, the exporter) subscribe
//! to a broadcast ([`Hub::subscribe`]); consumers that must see everything
//! (the recorder, the alert hook) get a queue of their own
//! ([`Hub::subscribe_all`]) and can tell from `seq` what, if anything, they
//! missed. A replay does not use the pipeline: it owns an analyzer over the
//! recording.

use std::sync::mpsc::{self as std_mpsc, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::analysis::{Alert, AlertKind, AnalysisConfig, Analyzer, Assessment};
use crate::model::{Event, Millis, Snapshot, SystemInfo};
use crate::sampler::{OnScreen, Sampler, Schedule};
use crate::source::Source;

/// Analysed snapshots a skipping consumer may fall behind by before it
/// skips (it then sees `Lagged`).
const BROADCAST_CAPACITY: usize = 64;

/// One snapshot, analysed: what every consumer receives.
#[derive(Clone, Debug)]
pub struct Analyzed {
    pub snapshot: Arc<Snapshot>,
    /// The analysis as of this snapshot.
    pub assessment: Assessment,
    /// What this snapshot raised, ordered by GPU and kind.
    pub alerts: Vec<Alert>,
    /// What the analysis began to say with this snapshot: a forecast first
    /// shown, a GPU at risk (kind `Note`, recorded with the snapshot).
    pub notes: Vec<Event>,
}

impl Analyzed {
    pub fn seq(&self) -> u64 {
        self.snapshot.seq
    }

    /// The snapshot's own events, then its alerts and notes as events.
    pub fn events(&self) -> impl Iterator<Item = Event> + '_ {
        self.snapshot
            .events
            .iter()
            .cloned()
            .chain(self.alerts.iter().map(Alert::to_event))
            .chain(self.notes.iter().cloned())
    }

    /// The snapshot as a recording keeps it: its alerts and notes among
    /// its events.
    pub fn recorded(&self) -> Arc<Snapshot> {
        if self.alerts.is_empty() && self.notes.is_empty() {
            return self.snapshot.clone();
        }
        let mut with = (*self.snapshot).clone();
        with.events.extend(self.alerts.iter().map(Alert::to_event));
        with.events.extend(self.notes.iter().cloned());
        Arc::new(with)
    }
}

/// The analysis stage's step: observe one snapshot, package the result.
/// The pipeline, tests and benchmarks share it.
pub fn analyse(analyzer: &mut Analyzer, snapshot: Arc<Snapshot>) -> Analyzed {
    let before: Vec<Before> = analyzer
        .gpus()
        .map(|g| Before {
            index: g.index,
            forecast_last_ms: analyzer.forecast_last_shown(g.index),
            at_risk: g.at_risk_pct.is_some(),
        })
        .collect();
    let mut alerts = analyzer.observe(&snapshot);
    let assessment = analyzer.assessment(snapshot.t_ms);
    let notes = notes_and_first_showings(&before, &assessment, &mut alerts, snapshot.t_ms);
    Analyzed {
        assessment,
        snapshot,
        alerts,
        notes,
    }
}

/// What a GPU's notes depend on from before a snapshot.
struct Before {
    index: u32,
    forecast_last_ms: Option<Millis>,
    at_risk: bool,
}

/// A forecast shown again within this long of the last one is the same
/// episode: no new "first shown" note (a forecast at the top of a
/// sawtooth or a saturated GPU comes and goes from one sample to the
/// next).
const FORECAST_EPISODE_GAP_MS: Millis = 60_000;

/// What a `forecast_full` alert raised with a forecast's first showing
/// ends with (in its event, and in the message the alert command gets).
const FIRST_SHOWN_IN_ALERT: &str = "; forecast first shown";

/// "Forecast first shown" and "at risk" notes, for GPUs where they began:
/// a forecast after none for `FORECAST_EPISODE_GAP_MS`, the at-risk state
/// after none (it lasts its window after the last peak). Where the same
/// snapshot raises the GPU's `forecast_full` alert, which gives the same
/// figures, the alert's message says "forecast first shown" instead of a
/// note of its own (two lines saying one thing in the events pane); the
/// alert command's `VRAMWATCH_ALERT_MESSAGE` then says so too.
fn notes_and_first_showings(
    before: &[Before],
    now: &Assessment,
    alerts: &mut [Alert],
    t_ms: u64,
) -> Vec<Event> {
    use crate::model::EventKind;
    let mut out = Vec::new();
    for g in now.gpus() {
        let (had_forecast, had_risk) =
            before
                .iter()
                .find(|b| b.index == g.index)
                .map_or((false, false), |b| {
                    let recent = b
                        .forecast_last_ms
                        .is_some_and(|l| t_ms.saturating_sub(l) <= FORECAST_EPISODE_GAP_MS);
                    (recent, b.at_risk)
                });
        let note = |message: String| Event {
            t_ms,
            kind: EventKind::Note,
            gpu: Some(g.index),
            pid: None,
            message,
            after_oom: false,
        };
        if let Some(f) = g.forecast.filter(|_| !had_forecast) {
            let alert = alerts
                .iter_mut()
                .find(|a| a.kind == AlertKind::ForecastFull && a.gpu == Some(g.index));
            match alert {
                Some(a) => a.message.push_str(FIRST_SHOWN_IN_ALERT),
                None => out.push(note(format!(
                    "GPU {} forecast first shown: full in {} at {}",
                    g.index,
                    f.label(),
                    crate::model::units::rate_short(f.rate.bps)
                ))),
            }
        }
        if let Some(p) = g.at_risk_pct.filter(|_| !had_risk) {
            out.push(note(format!(
                "GPU {} at risk: peaks at {p:.1}% of its memory; the next larger allocation may fail",
                g.index
            )));
        }
    }
    out
}

/// A sequence of snapshots analysed in order by one analyzer, as the
/// pipeline would (for tests, fixtures and benchmarks).
pub fn analyse_all(
    cfg: &AnalysisConfig,
    snapshots: impl IntoIterator<Item = Snapshot>,
) -> Vec<Arc<Analyzed>> {
    let mut a = Analyzer::new(cfg);
    snapshots
        .into_iter()
        .map(|s| Arc::new(analyse(&mut a, Arc::new(s))))
        .collect()
}

/// The queues of the consumers that must see everything.
#[derive(Default)]
struct Lossless {
    queues: Vec<SyncSender<Arc<Analyzed>>>,
    /// The stage has ended: new queues are closed at once.
    closed: bool,
}

/// Where consumers get analysed snapshots. Cheap to clone; holding one
/// does not keep the pipeline's streams open.
#[derive(Clone)]
pub struct Hub {
    pub system: Arc<SystemInfo>,
    pub schedule: Schedule,
    pub analysis: Arc<AnalysisConfig>,
    /// Set by the dashboard while per-process utilisation or host facts are
    /// on screen: the sampler then reads them every interval, else every
    /// `schedule.proc_util`.
    pub on_screen: OnScreen,
    tx: broadcast::WeakSender<Arc<Analyzed>>,
    latest: watch::Receiver<Option<Arc<Analyzed>>>,
    lossless: Arc<Mutex<Lossless>>,
}

impl Hub {
    /// Every analysed snapshot from now on; a consumer that falls more than
    /// [`BROADCAST_CAPACITY`] behind sees `Lagged` and skips.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Analyzed>> {
        match self.tx.upgrade() {
            Some(tx) => tx.subscribe(),
            // The pipeline has ended: a receiver that says so.
            None => broadcast::channel(1).1,
        }
    }

    /// The newest analysed snapshot (for consumers that want only that).
    pub fn latest(&self) -> watch::Receiver<Option<Arc<Analyzed>>> {
        self.latest.clone()
    }

    /// Every analysed snapshot from now on, on a queue of this consumer's
    /// own holding up to `capacity`. The stage never waits for it: when
    /// the queue is full, that snapshot is not queued, which the consumer
    /// sees as a gap in `seq`. The queue ends when the pipeline stops.
    pub fn subscribe_all(&self, capacity: usize) -> std_mpsc::Receiver<Arc<Analyzed>> {
        let (tx, rx) = std_mpsc::sync_channel(capacity.max(1));
        let mut l = self.lossless.lock().unwrap_or_else(|e| e.into_inner());
        if !l.closed {
            l.queues.push(tx);
        }
        rx
    }
}

/// The sending end of the stage.
struct Outlets {
    tx: broadcast::Sender<Arc<Analyzed>>,
    latest: watch::Sender<Option<Arc<Analyzed>>>,
    lossless: Arc<Mutex<Lossless>>,
}

impl Outlets {
    fn send(&self, a: Arc<Analyzed>) {
        {
            let mut l = self.lossless.lock().unwrap_or_else(|e| e.into_inner());
            l.queues.retain(|q| match q.try_send(a.clone()) {
                Ok(()) | Err(TrySendError::Full(_)) => true,
                Err(TrySendError::Disconnected(_)) => false,
            });
        }
        let _ = self.tx.send(a.clone());
        self.latest.send_replace(Some(a));
    }

    fn close(self) {
        let mut l = self.lossless.lock().unwrap_or_else(|e| e.into_inner());
        l.closed = true;
        l.queues.clear();
    }
}

/// The analysis stage: one analyzer, every snapshot once, in order.
async fn stage(
    mut snaps: mpsc::UnboundedReceiver<Arc<Snapshot>>,
    mut analyzer: Analyzer,
    out: Outlets,
) {
    while let Some(s) = snaps.recv().await {
        out.send(Arc::new(analyse(&mut analyzer, s)));
    }
    out.close();
}

/// A running pipeline. Dropping it (or [`Pipeline::stop`]) stops sampling,
/// lets what was sampled through the analysis, and ends every stream.
pub struct Pipeline {
    hub: Hub,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Pipeline {
    /// Starts sampling `source` on `schedule` and analysing with `analysis`
    /// on a thread of its own.
    pub fn start(
        source: Box<dyn Source>,
        schedule: Schedule,
        analysis: AnalysisConfig,
    ) -> std::io::Result<Pipeline> {
        let system = source.system();
        let (tx, _) = broadcast::channel(BROADCAST_CAPACITY);
        let (latest_tx, latest) = watch::channel(None);
        let lossless = Arc::new(Mutex::new(Lossless::default()));
        let on_screen = OnScreen::default();
        let hub = Hub {
            system,
            schedule,
            analysis: Arc::new(analysis.clone()),
            on_screen: on_screen.clone(),
            tx: tx.downgrade(),
            latest,
            lossless: lossless.clone(),
        };
        let out = Outlets {
            tx,
            latest: latest_tx,
            lossless,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("vw-pipeline".into())
            .spawn(move || {
                rt.block_on(async move {
                    let (sampler, snaps) = Sampler::spawn_with(source, schedule, on_screen);
                    let analysis = tokio::spawn(stage(snaps, Analyzer::new(&analysis), out));
                    // Stop asked for, or the pipeline dropped.
                    let _ = stopped.await;
                    drop(sampler);
                    let _ = analysis.await;
                });
            })?;
        Ok(Pipeline {
            hub,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub fn hub(&self) -> &Hub {
        &self.hub
    }

    pub fn system(&self) -> &Arc<SystemInfo> {
        &self.hub.system
    }

    /// Stops sampling and waits until everything sampled has been analysed
    /// and handed to the consumers; then every stream ends.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.halt();
    }
}

/// The alert hook as a consumer: runs `command` (no shell) for every alert
/// the pipeline raises, on a thread of its own; `on_error` hears why a run
/// could not start.
pub fn spawn_hook(
    hub: &Hub,
    command: Vec<String>,
    mut on_error: impl FnMut(String) + Send + 'static,
) -> std::io::Result<JoinHandle<()>> {
    let rx = hub.subscribe_all(256);
    std::thread::Builder::new()
        .name("vw-hook".into())
        .spawn(move || {
            for a in rx {
                for alert in &a.alerts {
                    if let Err(e) = crate::analysis::run_hook(&command, alert) {
                        on_error(format!("alert command failed: {e}"));
                    }
                }
            }
        })
}

/// Counts what a lossless consumer missed, from the `seq` of what it got.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GapCounter {
    next: Option<u64>,
    pub missed: u64,
}

impl GapCounter {
    /// Notes `seq` as received; returns how many were missed just before it.
    pub fn saw(&mut self, seq: u64) -> u64 {
        let gap = match self.next {
            Some(n) if seq > n => seq - n,
            _ => 0,
        };
        self.missed += gap;
        self.next = Some(seq + 1);
        gap
    }
}

#[cfg(test)]
mod tests;
