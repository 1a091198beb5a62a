//! What the server shows: the tracker follows the pipeline's analysed
//! snapshots and publishes each as a [`Published`] whose renders (plain
//! and gzip) are made on first use and shared by every request.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{broadcast, watch};

use super::gzip;
use crate::analysis::AnalysisConfig;
use crate::export::analysis::extra_of;
use crate::export::prometheus::{self, Body as MetricsBody, Labels, Render};
use crate::export::snapshot_json::to_json;
use crate::export::window::{PeakRing, Peaks, Scrapers};
use crate::model::{Snapshot, SystemInfo};
use crate::pipeline::{Analyzed, Hub};

/// Where analysed snapshots come from, and how they are written.
pub(super) struct Feed {
    system: Arc<SystemInfo>,
    analysis: Arc<AnalysisConfig>,
    render: Arc<Render>,
    stream: broadcast::Receiver<Arc<Analyzed>>,
    latest: watch::Receiver<Option<Arc<Analyzed>>>,
}

impl Feed {
    pub(super) fn of(hub: &Hub, render: Render) -> Feed {
        Feed {
            system: hub.system.clone(),
            analysis: hub.analysis.clone(),
            render: Arc::new(render),
            stream: hub.subscribe(),
            latest: hub.latest(),
        }
    }
}

/// One analysed snapshot as served, with its renders made on first use.
pub(super) struct Published {
    system: Arc<SystemInfo>,
    analysis: Arc<AnalysisConfig>,
    render: Arc<Render>,
    analyzed: Arc<Analyzed>,
    last_xid: BTreeMap<u32, u64>,
    labels: OnceLock<Labels>,
    metrics: OnceLock<Bytes>,
    metrics_gz: OnceLock<Option<gzip::Part>>,
    own_peaks: OnceLock<Bytes>,
    own_peaks_gz: OnceLock<Option<gzip::Part>>,
    json: OnceLock<Bytes>,
    json_gz: OnceLock<Option<Bytes>>,
}

impl Published {
    pub(super) fn new(
        system: Arc<SystemInfo>,
        analysis: Arc<AnalysisConfig>,
        render: Arc<Render>,
        analyzed: Arc<Analyzed>,
        last_xid: BTreeMap<u32, u64>,
    ) -> Published {
        Published {
            system,
            analysis,
            render,
            analyzed,
            last_xid,
            labels: OnceLock::new(),
            metrics: OnceLock::new(),
            metrics_gz: OnceLock::new(),
            own_peaks: OnceLock::new(),
            own_peaks_gz: OnceLock::new(),
            json: OnceLock::new(),
            json_gz: OnceLock::new(),
        }
    }

    pub(super) fn snap(&self) -> &Snapshot {
        &self.analyzed.snapshot
    }

    pub(super) fn labels(&self) -> &Labels {
        self.labels
            .get_or_init(|| Labels::new(&self.system, self.snap(), &self.render))
    }

    /// The page's part every scraper shares, compressed once (ends with a
    /// sync flush: the peaks follow).
    pub(super) fn metrics_gz(&self) -> Option<&gzip::Part> {
        self.metrics_gz
            .get_or_init(|| gzip::Part::new(&self.metrics(), false))
            .as_ref()
    }

    /// This snapshot's own peaks, compressed once (ends the stream).
    pub(super) fn own_peaks_gz(&self) -> Option<&gzip::Part> {
        self.own_peaks_gz
            .get_or_init(|| gzip::Part::new(&self.own_peaks(), true))
            .as_ref()
    }

    pub(super) fn json_gz(&self) -> Option<Bytes> {
        self.json_gz
            .get_or_init(|| gzip::whole(&self.json()))
            .clone()
    }

    pub(super) fn metrics(&self) -> Bytes {
        self.metrics
            .get_or_init(|| {
                let extra = extra_of(&self.analyzed.assessment, self.snap(), &self.analysis);
                MetricsBody {
                    system: &self.system,
                    snap: self.snap(),
                    labels: self.labels(),
                    last_xid: &self.last_xid,
                    extra: Some(&extra),
                }
                .render()
                .into()
            })
            .clone()
    }

    pub(super) fn own_peaks(&self) -> Bytes {
        self.own_peaks
            .get_or_init(|| prometheus::render_peaks(self.labels(), &Peaks::of(self.snap())).into())
            .clone()
    }

    pub(super) fn json(&self) -> Bytes {
        self.json
            .get_or_init(|| {
                let mut v = serde_json::to_vec(&to_json(&self.system, self.snap()))
                    .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}").into_bytes());
                v.push(b'\n');
                v.into()
            })
            .clone()
    }
}

/// State shared by the tracker and every request.
pub(super) struct Shared {
    pub(super) current: watch::Receiver<Option<Arc<Published>>>,
    pub(super) window: Mutex<(PeakRing, Scrapers)>,
    pub(super) interval: Duration,
}

impl Shared {
    pub(super) fn window(&self) -> std::sync::MutexGuard<'_, (PeakRing, Scrapers)> {
        // A panic while holding it leaves plain data behind: keep going.
        self.window.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Follows the pipeline: every snapshot goes into the peak ring, then is
/// published with fresh caches.
pub(super) async fn track(
    mut feed: Feed,
    shared: Arc<Shared>,
    tx: watch::Sender<Option<Arc<Published>>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut last_xid = BTreeMap::new();
    let mut seen: Option<u64> = None;
    let (system, analysis, render) = (
        feed.system.clone(),
        feed.analysis.clone(),
        feed.render.clone(),
    );
    let publish = |a: &Arc<Analyzed>, xid: &BTreeMap<u32, u64>| {
        tx.send_replace(Some(Arc::new(Published::new(
            system.clone(),
            analysis.clone(),
            render.clone(),
            a.clone(),
            xid.clone(),
        ))));
    };
    let take = |a: &Analyzed, xid: &mut BTreeMap<u32, u64>| {
        shared.window().0.push(&a.snapshot);
        for e in &a.snapshot.events {
            if let (Some(code), Some(gpu)) = (prometheus::xid_of(e.kind, &e.message), e.gpu) {
                xid.insert(gpu, code);
            }
        }
    };
    let first = feed.latest.borrow().clone();
    if let Some(a) = first {
        take(&a, &mut last_xid);
        publish(&a, &last_xid);
        seen = Some(a.seq());
    }
    loop {
        tokio::select! {
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() { break; }
            }
            got = feed.stream.recv() => {
                let next = match got {
                    Ok(a) => a,
                    // Fell behind: the newest is what matters; the skipped
                    // snapshots' peaks are lost.
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let newest = feed.latest.borrow().clone();
                        match newest {
                            Some(a) => a,
                            None => continue,
                        }
                    }
                    // The pipeline is gone: keep serving the last snapshot
                    // (`/healthz` reports it stale).
                    Err(broadcast::error::RecvError::Closed) => {
                        let _ = stop.changed().await;
                        break;
                    }
                };
                // Already seen (the stream can hold what the seed was).
                if seen.is_some_and(|s| next.seq() <= s) {
                    continue;
                }
                take(&next, &mut last_xid);
                publish(&next, &last_xid);
                seen = Some(next.seq());
            }
        }
    }
}
