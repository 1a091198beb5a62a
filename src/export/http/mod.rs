//! The HTTP server: `GET /metrics`, `GET /snapshot`, `GET /healthz`,
//! nothing else.
//!
//! Built on hyper 1 (HTTP/1.1 parsing, keep-alive, header limits and the
//! header timeout are hyper's, which is fuzzed and used by most of the Rust
//! ecosystem) rather than a hand-written parser. What is ours:
//!
//! - It runs on a runtime of its own, on its own thread(s): scrapers, slow
//!   clients and floods compete with the sampler and the dashboard for CPU
//!   only, never for their event loop.
//! - One render per snapshot: a tracker task follows the pipeline's stream
//!   of analysed snapshots and publishes each with empty caches; the first
//!   request fills them, every other request of the same snapshot shares
//!   the bytes. The analysis figures are the pipeline's: nothing is
//!   analysed here.
//! - Bounded: at most `max_connections` connections (more are closed at
//!   once), request heads of at most `max_header_bytes`, a client has
//!   `header_timeout` to send a whole request head (this also closes idle
//!   keep-alive connections), and a response write that makes no progress
//!   for `write_timeout` closes the connection. Request bodies are never
//!   read.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::header::{ALLOW, CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use thiserror::Error;
use tokio::sync::{Semaphore, broadcast, oneshot, watch};
use tokio_io_timeout::TimeoutStream;

use super::analysis::extra_of;
use super::prometheus::{self, Body as MetricsBody, Labels};
use super::snapshot_json::to_json;
use super::window::{PeakRing, Scrapers};
use crate::analysis::AnalysisConfig;
use crate::model::{Snapshot, SystemInfo, now_ms};
use crate::pipeline::{Analyzed, Hub};

/// Resource bounds of the server.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Connections open at once; more are closed as soon as accepted.
    pub max_connections: usize,
    /// Time a client has to send a complete request head, counted from when
    /// the server starts waiting for it (so an idle keep-alive connection is
    /// closed after this long too).
    pub header_timeout: Duration,
    /// A response write that makes no progress for this long closes the
    /// connection (a client that does not read).
    pub write_timeout: Duration,
    /// Largest request head (request line and headers), bytes; larger gets
    /// 431 and the connection is closed.
    pub max_header_bytes: usize,
    /// On stop, how long open requests may take to finish.
    pub shutdown_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 1024,
            header_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            max_header_bytes: 8 * 1024,
            shutdown_grace: Duration::from_secs(2),
        }
    }
}

/// How to run the server.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub limits: Limits,
    /// Worker threads of the server's runtime. One keeps the server off the
    /// other cores whatever the load.
    pub threads: usize,
    /// A scraper that has not scraped for this long has its peaks taken over
    /// at most this window.
    pub peak_window: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            limits: Limits::default(),
            threads: 1,
            peak_window: Duration::from_secs(600),
        }
    }
}

#[derive(Debug, Error)]
pub enum ServeError {
    #[error(
        "`{addr}` is not a listen address ({reason}); use HOST:PORT, e.g. 127.0.0.1:9400 or [::1]:9400"
    )]
    BadAddress { addr: String, reason: String },
    #[error("cannot listen on {addr}: {error}{hint}")]
    Bind {
        addr: String,
        error: std::io::Error,
        hint: &'static str,
    },
    #[error("cannot start the HTTP server: {0}")]
    Start(std::io::Error),
}

/// Resolves and binds `listen` (`HOST:PORT`; port 0 picks a free port).
pub fn bind(listen: &str) -> Result<std::net::TcpListener, ServeError> {
    let bad = |reason: String| ServeError::BadAddress {
        addr: listen.to_owned(),
        reason,
    };
    let trimmed = listen.trim();
    if trimmed.is_empty() {
        return Err(bad("it is empty".into()));
    }
    if !trimmed.contains(':') {
        return Err(bad("no port".into()));
    }
    let addrs: Vec<SocketAddr> = trimmed
        .to_socket_addrs()
        .map_err(|e| bad(e.to_string()))?
        .collect();
    let mut last = None;
    for a in &addrs {
        match std::net::TcpListener::bind(a) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    let Some(error) = last else {
        return Err(bad("it resolves to no address".into()));
    };
    let hint = match error.kind() {
        std::io::ErrorKind::AddrInUse => {
            " (another program, perhaps another vramwatch serve or dcgm-exporter, has this port; choose another with --listen)"
        }
        std::io::ErrorKind::PermissionDenied => " (ports below 1024 need privileges)",
        std::io::ErrorKind::AddrNotAvailable => " (no interface of this machine has that address)",
        _ => "",
    };
    Err(ServeError::Bind {
        addr: listen.to_owned(),
        error,
        hint,
    })
}

/// A running server. Dropping it stops it (without waiting); [`Server::stop`]
/// waits for open requests up to the grace period.
pub struct Server {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    done: oneshot::Receiver<()>,
}

impl Server {
    /// Serves the pipeline's analysed snapshots on `listener` from a
    /// runtime of its own.
    pub fn start(
        listener: std::net::TcpListener,
        hub: &Hub,
        opts: ServeOptions,
    ) -> Result<Server, ServeError> {
        listener.set_nonblocking(true).map_err(ServeError::Start)?;
        let addr = listener.local_addr().map_err(ServeError::Start)?;
        let rt = if opts.threads <= 1 {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(opts.threads)
                .thread_name("vw-http")
                .enable_all()
                .build()
        }
        .map_err(ServeError::Start)?;
        let listener = {
            let _in = rt.enter();
            tokio::net::TcpListener::from_std(listener).map_err(ServeError::Start)?
        };
        let (stop, stop_rx) = watch::channel(false);
        let (done_tx, done) = oneshot::channel();
        let feed = Feed {
            system: hub.system.clone(),
            analysis: hub.analysis.clone(),
            stream: hub.subscribe(),
            latest: hub.latest(),
        };
        let interval = hub.schedule.interval;
        std::thread::Builder::new()
            .name("vw-http".into())
            .spawn(move || {
                rt.block_on(run(listener, feed, interval, opts, stop_rx));
                let _ = done_tx.send(());
            })
            .map_err(ServeError::Start)?;
        Ok(Server { addr, stop, done })
    }

    /// The address it listens on (the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, lets open requests finish (up to the grace period)
    /// and returns when the server's thread is done.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.done.await;
    }
}

/// Binds `listen`, serves the pipeline until `shutdown` resolves, then
/// stops cleanly.
pub async fn serve(
    listen: &str,
    hub: &Hub,
    opts: ServeOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let server = Server::start(bind(listen)?, hub, opts)?;
    shutdown.await;
    server.stop().await;
    Ok(())
}

// ---- what the server shows ------------------------------------------------

/// Where analysed snapshots come from.
struct Feed {
    system: Arc<SystemInfo>,
    analysis: Arc<AnalysisConfig>,
    stream: broadcast::Receiver<Arc<Analyzed>>,
    latest: watch::Receiver<Option<Arc<Analyzed>>>,
}

/// One analysed snapshot as served, with its renders made on first use.
struct Published {
    system: Arc<SystemInfo>,
    analysis: Arc<AnalysisConfig>,
    analyzed: Arc<Analyzed>,
    last_xid: BTreeMap<u32, u64>,
    labels: OnceLock<Labels>,
    metrics: OnceLock<Bytes>,
    own_peaks: OnceLock<Bytes>,
    json: OnceLock<Bytes>,
}

impl Published {
    fn new(
        system: Arc<SystemInfo>,
        analysis: Arc<AnalysisConfig>,
        analyzed: Arc<Analyzed>,
        last_xid: BTreeMap<u32, u64>,
    ) -> Published {
        Published {
            system,
            analysis,
            analyzed,
            last_xid,
            labels: OnceLock::new(),
            metrics: OnceLock::new(),
            own_peaks: OnceLock::new(),
            json: OnceLock::new(),
        }
    }

    fn snap(&self) -> &Snapshot {
        &self.analyzed.snapshot
    }

    fn labels(&self) -> &Labels {
        self.labels
            .get_or_init(|| Labels::new(&self.system, self.snap()))
    }

    fn metrics(&self) -> Bytes {
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

    fn own_peaks(&self) -> Bytes {
        self.own_peaks
            .get_or_init(|| {
                prometheus::render_peaks(self.labels(), &super::window::Peaks::of(self.snap()))
                    .into()
            })
            .clone()
    }

    fn json(&self) -> Bytes {
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
struct Shared {
    current: watch::Receiver<Option<Arc<Published>>>,
    window: Mutex<(PeakRing, Scrapers)>,
    interval: Duration,
}

impl Shared {
    fn window(&self) -> std::sync::MutexGuard<'_, (PeakRing, Scrapers)> {
        // A panic while holding it leaves plain data behind: keep going.
        self.window.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Follows the pipeline: every snapshot goes into the peak ring, then is
/// published with fresh caches.
async fn track(
    mut feed: Feed,
    shared: Arc<Shared>,
    tx: watch::Sender<Option<Arc<Published>>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut last_xid = BTreeMap::new();
    let mut seen: Option<u64> = None;
    let (system, analysis) = (feed.system.clone(), feed.analysis.clone());
    let publish = |a: &Arc<Analyzed>, xid: &BTreeMap<u32, u64>| {
        tx.send_replace(Some(Arc::new(Published::new(
            system.clone(),
            analysis.clone(),
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

// ---- the server -----------------------------------------------------------

async fn run(
    listener: tokio::net::TcpListener,
    feed: Feed,
    interval: Duration,
    opts: ServeOptions,
    mut stop: watch::Receiver<bool>,
) {
    let (tx, current) = watch::channel(None);
    let keep_ms = opts.peak_window.as_millis() as u64;
    let max_entries = (keep_ms / interval.as_millis().max(1) as u64 + 2).min(100_000) as usize;
    let shared = Arc::new(Shared {
        current,
        window: Mutex::new((PeakRing::new(keep_ms, max_entries), Scrapers::new(256))),
        interval,
    });
    let tracker = tokio::spawn(track(feed, shared.clone(), tx, stop.clone()));
    let limits = opts.limits;
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.max_header_bytes.max(8192))
        .max_header_size(limits.max_header_bytes)
        .keep_alive(true);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    loop {
        tokio::select! {
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() { break; }
            }
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    // Out of file descriptors and the like: let others
                    // finish rather than spin.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                };
                let Ok(slot) = slots.clone().try_acquire_owned() else {
                    drop(stream);
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let mut stream = TimeoutStream::new(stream);
                stream.set_write_timeout(Some(limits.write_timeout));
                let io = TokioIo::new(Box::pin(stream));
                let shared = shared.clone();
                let ip = peer.ip();
                let svc = service_fn(move |req| {
                    let shared = shared.clone();
                    async move { Ok::<_, Infallible>(respond(&req, &shared, ip)) }
                });
                let conn = graceful.watch(builder.serve_connection(io, svc));
                tokio::spawn(async move {
                    let _ = conn.await;
                    drop(slot);
                });
            }
        }
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(limits.shutdown_grace) => {}
    }
    tracker.abort();
}

/// The body of a response: a few shared buffers sent one after another.
struct Chunks {
    parts: std::collections::VecDeque<Bytes>,
    len: u64,
}

impl Chunks {
    fn new(parts: impl IntoIterator<Item = Bytes>) -> Chunks {
        let parts: std::collections::VecDeque<Bytes> =
            parts.into_iter().filter(|b| !b.is_empty()).collect();
        let len = parts.iter().map(|b| b.len() as u64).sum();
        Chunks { parts, len }
    }

    fn text(s: &'static str) -> Chunks {
        Chunks::new([Bytes::from_static(s.as_bytes())])
    }
}

impl hyper::body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let next = self.parts.pop_front();
        if let Some(b) = &next {
            self.len -= b.len() as u64;
        }
        Poll::Ready(next.map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.parts.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.len)
    }
}

const TEXT: &str = "text/plain; charset=utf-8";

fn reply(status: StatusCode, content_type: &'static str, body: Chunks) -> Response<Chunks> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// Answers one request.
fn respond(req: &Request<Incoming>, shared: &Shared, peer: IpAddr) -> Response<Chunks> {
    let path = req.uri().path();
    if !matches!(path, "/metrics" | "/snapshot" | "/healthz") {
        return reply(
            StatusCode::NOT_FOUND,
            TEXT,
            Chunks::text("not found: vramwatch serves /metrics, /snapshot and /healthz\n"),
        );
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = reply(
            StatusCode::METHOD_NOT_ALLOWED,
            TEXT,
            Chunks::text("method not allowed: use GET\n"),
        );
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let current = shared.current.borrow().clone();
    if path == "/healthz" {
        return health(current.as_deref(), shared.interval);
    }
    let Some(p) = current else {
        return reply(
            StatusCode::SERVICE_UNAVAILABLE,
            TEXT,
            Chunks::text("no snapshot yet: the first one comes within one interval\n"),
        );
    };
    if path == "/snapshot" {
        return reply(StatusCode::OK, "application/json", Chunks::new([p.json()]));
    }
    // A HEAD request gets the headers a GET would, and does not count as a
    // scrape (it would cut the scraper's peak window short).
    let head = req.method() == Method::HEAD;
    let peaks = if head {
        None
    } else {
        let mut w = shared.window();
        let (ring, scrapers) = &mut *w;
        match scrapers.scrape(peer, p.snap().seq) {
            // Scraped this snapshot or the one before: the snapshot's own
            // peaks are the window, and they are rendered once.
            Some(prev) if prev + 1 >= p.snap().seq => None,
            None => None,
            Some(prev) => Some(ring.peaks(Some(prev), p.snap())),
        }
    };
    let peaks = match peaks {
        None => p.own_peaks(),
        Some(peaks) => prometheus::render_peaks(p.labels(), &peaks).into(),
    };
    reply(
        StatusCode::OK,
        prometheus::CONTENT_TYPE,
        Chunks::new([p.metrics(), peaks]),
    )
}

/// 200 while snapshots keep coming; 503 before the first and when the last
/// is older than three intervals (at least 5 s).
fn health(p: Option<&Published>, interval: Duration) -> Response<Chunks> {
    let Some(p) = p else {
        return reply(
            StatusCode::SERVICE_UNAVAILABLE,
            TEXT,
            Chunks::text("starting: no snapshot yet\n"),
        );
    };
    let age = now_ms().saturating_sub(p.snap().t_ms);
    let limit = (3 * interval.as_millis() as u64).max(5_000);
    if age > limit {
        let msg = format!(
            "stale: the last snapshot (seq {}) is {:.1} s old\n",
            p.snap().seq,
            age as f64 / 1000.0
        );
        return reply(
            StatusCode::SERVICE_UNAVAILABLE,
            TEXT,
            Chunks::new([Bytes::from(msg)]),
        );
    }
    reply(
        StatusCode::OK,
        TEXT,
        Chunks::new([Bytes::from(format!("ok seq {}\n", p.snap().seq))]),
    )
}

#[cfg(test)]
mod tests;
