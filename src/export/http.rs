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
//! - One render per snapshot: a tracker task follows the sampler's stream
//!   and publishes each snapshot with empty caches; the first request fills
//!   them, every other request of the same snapshot shares the bytes.
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

use super::Extra;
use super::prometheus::{self, Body as MetricsBody, Labels};
use super::window::{PeakRing, Scrapers};
use crate::commands::snapshot::to_json;
use crate::model::{Snapshot, SystemInfo};
use crate::sampler::{Sampler, now_ms};

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
    /// Analysis figures to export as they change (see [`Extra`]).
    pub extra: Option<watch::Receiver<Option<Arc<Extra>>>>,
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
            extra: None,
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
    /// Serves `sampler`'s snapshots on `listener` from a runtime of its own.
    pub fn start(
        listener: std::net::TcpListener,
        sampler: &Sampler,
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
            system: sampler.system.clone(),
            stream: sampler.subscribe(),
            latest: sampler.latest(),
            extra: opts.extra.clone(),
        };
        let interval = sampler.schedule.interval;
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

/// Binds `listen`, serves `sampler` until `shutdown` resolves, then stops
/// cleanly. For `--serve ADDR` beside the dashboard or `record`.
pub async fn serve(
    listen: &str,
    sampler: &Sampler,
    opts: ServeOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let server = Server::start(bind(listen)?, sampler, opts)?;
    shutdown.await;
    server.stop().await;
    Ok(())
}

// ---- what the server shows ------------------------------------------------

/// Where snapshots come from.
struct Feed {
    system: Arc<SystemInfo>,
    stream: broadcast::Receiver<Arc<Snapshot>>,
    latest: watch::Receiver<Option<Arc<Snapshot>>>,
    extra: Option<watch::Receiver<Option<Arc<Extra>>>>,
}

/// One snapshot as served, with its renders made on first use.
struct Published {
    system: Arc<SystemInfo>,
    snap: Arc<Snapshot>,
    extra: Option<Arc<Extra>>,
    last_xid: BTreeMap<u32, u64>,
    labels: OnceLock<Labels>,
    metrics: OnceLock<Bytes>,
    own_peaks: OnceLock<Bytes>,
    json: OnceLock<Bytes>,
}

impl Published {
    fn labels(&self) -> &Labels {
        self.labels
            .get_or_init(|| Labels::new(&self.system, &self.snap))
    }

    fn metrics(&self) -> Bytes {
        self.metrics
            .get_or_init(|| {
                MetricsBody {
                    system: &self.system,
                    snap: &self.snap,
                    labels: self.labels(),
                    last_xid: &self.last_xid,
                    extra: self.extra.as_deref(),
                }
                .render()
                .into()
            })
            .clone()
    }

    fn own_peaks(&self) -> Bytes {
        self.own_peaks
            .get_or_init(|| {
                prometheus::render_peaks(self.labels(), &super::window::Peaks::of(&self.snap))
                    .into()
            })
            .clone()
    }

    fn json(&self) -> Bytes {
        self.json
            .get_or_init(|| {
                let mut v = serde_json::to_vec(&to_json(&self.system, &self.snap))
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

/// Follows the sampler: every snapshot goes into the peak ring, then is
/// published with fresh caches; new analysis figures republish the current
/// snapshot.
async fn track(
    mut feed: Feed,
    shared: Arc<Shared>,
    tx: watch::Sender<Option<Arc<Published>>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut last_xid = BTreeMap::new();
    let mut snap: Option<Arc<Snapshot>> = feed.latest.borrow().clone();
    let mut extra = feed.extra.as_ref().and_then(|e| e.borrow().clone());
    let system = feed.system.clone();
    let publish = |snap: &Arc<Snapshot>, extra: &Option<Arc<Extra>>, xid: &BTreeMap<u32, u64>| {
        tx.send_replace(Some(Arc::new(Published {
            system: system.clone(),
            snap: snap.clone(),
            extra: extra.clone(),
            last_xid: xid.clone(),
            labels: OnceLock::new(),
            metrics: OnceLock::new(),
            own_peaks: OnceLock::new(),
            json: OnceLock::new(),
        })));
    };
    let take = |s: &Arc<Snapshot>, xid: &mut BTreeMap<u32, u64>| {
        shared.window().0.push(s);
        for e in &s.events {
            if let (Some(code), Some(gpu)) = (prometheus::xid_of(e.kind, &e.message), e.gpu) {
                xid.insert(gpu, code);
            }
        }
    };
    if let Some(s) = &snap {
        take(s, &mut last_xid);
        publish(s, &extra, &last_xid);
    }
    loop {
        let extra_changed = async {
            match feed.extra.as_mut() {
                Some(rx) => rx.changed().await.is_ok(),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() { break; }
            }
            got = feed.stream.recv() => {
                let next = match got {
                    Ok(s) => s,
                    // Fell behind: the newest is what matters; the skipped
                    // snapshots' peaks are lost.
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        match feed.latest.borrow().clone() {
                            Some(s) => s,
                            None => continue,
                        }
                    }
                    // The sampler is gone: keep serving the last snapshot
                    // (`/healthz` reports it stale).
                    Err(broadcast::error::RecvError::Closed) => {
                        let _ = stop.changed().await;
                        break;
                    }
                };
                // Already seen (the stream can hold what the seed was).
                if snap.as_ref().is_some_and(|s| next.seq <= s.seq) {
                    continue;
                }
                take(&next, &mut last_xid);
                publish(&next, &extra, &last_xid);
                snap = Some(next);
            }
            ok = extra_changed => {
                if !ok {
                    feed.extra = None;
                    continue;
                }
                extra = feed.extra.as_mut().and_then(|e| e.borrow_and_update().clone());
                if let Some(s) = &snap {
                    publish(s, &extra, &last_xid);
                }
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
        match scrapers.scrape(peer, p.snap.seq) {
            // Scraped this snapshot or the one before: the snapshot's own
            // peaks are the window, and they are rendered once.
            Some(prev) if prev + 1 >= p.snap.seq => None,
            None => None,
            Some(prev) => Some(ring.peaks(Some(prev), &p.snap)),
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
    let age = now_ms().saturating_sub(p.snap.t_ms);
    let limit = (3 * interval.as_millis() as u64).max(5_000);
    if age > limit {
        let msg = format!(
            "stale: the last snapshot (seq {}) is {:.1} s old\n",
            p.snap.seq,
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
        Chunks::new([Bytes::from(format!("ok seq {}\n", p.snap.seq))]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::GpuExtra;
    use crate::source::sim::{SimSource, SimWorld};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    fn sampler(interval_ms: u64) -> Sampler {
        let world = SimWorld::new("demo", 1, now_ms()).unwrap();
        let source = SimSource::new(world, "me".into());
        Sampler::spawn(
            Box::new(source),
            crate::sampler::Schedule {
                interval: Duration::from_millis(interval_ms),
                fast: Some(Duration::from_millis(20)),
                slow: Some(Duration::from_millis(500)),
                proc_util: Duration::from_millis(interval_ms),
                burst: None,
                pcie: None,
            },
        )
    }

    fn start(s: &Sampler, opts: ServeOptions) -> Server {
        Server::start(bind("127.0.0.1:0").unwrap(), s, opts).unwrap()
    }

    /// Sends `raw` and reads until the server closes: (status, head, body).
    async fn exchange(addr: SocketAddr, raw: &str) -> (u16, String, String) {
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(raw.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut buf))
            .await
            .expect("the server answers and closes within 10 s")
            .unwrap();
        let text = String::from_utf8_lossy(&buf).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (status, head.to_owned(), body.to_owned())
    }

    async fn get(addr: SocketAddr, path: &str) -> (u16, String, String) {
        exchange(
            addr,
            &format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
        )
        .await
    }

    async fn wait_for_snapshot(addr: SocketAddr) {
        for _ in 0..100 {
            if get(addr, "/healthz").await.0 == 200 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no snapshot within 5 s");
    }

    #[tokio::test]
    async fn the_three_endpoints_answer_and_nothing_else() {
        let s = sampler(200);
        let server = start(&s, ServeOptions::default());
        let addr = server.local_addr();
        wait_for_snapshot(addr).await;
        let (st, head, body) = get(addr, "/metrics").await;
        assert_eq!(st, 200);
        assert!(
            head.contains("content-type: text/plain; version=0.0.4; charset=utf-8"),
            "{head}"
        );
        assert!(body.contains("\nDCGM_FI_DEV_FB_USED{gpu=\"0\""));
        assert!(body.contains("\nvramwatch_gpu_memory_peak_bytes{gpu=\"0\""));
        let (st, head, body) = get(addr, "/snapshot").await;
        assert_eq!(st, 200);
        assert!(head.contains("content-type: application/json"));
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["schema"], crate::commands::snapshot::SNAPSHOT_SCHEMA);
        assert_eq!(v["gpus"].as_array().unwrap().len(), 4);
        let (st, _, body) = get(addr, "/healthz").await;
        assert_eq!((st, body.starts_with("ok")), (200, true));
        let (st, _, body) = get(addr, "/").await;
        assert_eq!(st, 404);
        assert!(body.contains("/metrics"));
        assert_eq!(get(addr, "/metrics/x").await.0, 404);
        // Query strings are ignored.
        assert_eq!(get(addr, "/metrics?x=1").await.0, 200);
        let (st, head, _) = exchange(
            addr,
            "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert_eq!(st, 405);
        assert!(head.contains("allow: GET, HEAD"), "{head}");
        let (st, head, body) = exchange(
            addr,
            "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert_eq!(st, 200);
        assert!(head.contains("content-length: "), "{head}");
        assert!(body.is_empty());
        server.stop().await;
        assert!(TcpStream::connect(addr).await.is_err(), "stopped = closed");
    }

    #[tokio::test]
    async fn oversized_heads_are_refused() {
        let s = sampler(200);
        let server = start(&s, ServeOptions::default());
        let big = "a".repeat(20_000);
        let (st, _, _) = exchange(
            server.local_addr(),
            &format!("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\n\r\n"),
        )
        .await;
        assert_eq!(st, 431);
        server.stop().await;
    }

    #[tokio::test]
    async fn silent_clients_are_dropped_and_connections_are_bounded() {
        let s = sampler(200);
        let opts = ServeOptions {
            limits: Limits {
                max_connections: 2,
                header_timeout: Duration::from_millis(300),
                ..Limits::default()
            },
            ..ServeOptions::default()
        };
        let server = start(&s, opts);
        let addr = server.local_addr();
        let t = std::time::Instant::now();
        let mut a = TcpStream::connect(addr).await.unwrap();
        let mut b = TcpStream::connect(addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        // A third while two are open: closed at once, before any timeout.
        let mut c = TcpStream::connect(addr).await.unwrap();
        let mut buf = [0u8; 64];
        let n = tokio::time::timeout(Duration::from_secs(5), c.read(&mut buf)).await;
        assert!(matches!(n, Ok(Ok(0)) | Ok(Err(_))), "{n:?}");
        // The two silent ones go at the header timeout.
        for conn in [&mut a, &mut b] {
            let n = tokio::time::timeout(Duration::from_secs(5), conn.read(&mut buf))
                .await
                .expect("closed by the server");
            assert!(matches!(n, Ok(0) | Err(_)) || buf[..9] == *b"HTTP/1.1 ");
        }
        assert!(t.elapsed() >= Duration::from_millis(250));
        // Slots are free again.
        wait_for_snapshot(addr).await;
        assert_eq!(get(addr, "/metrics").await.0, 200);
        server.stop().await;
    }

    #[tokio::test]
    async fn keep_alive_serves_many_requests_on_one_connection() {
        let s = sampler(200);
        let server = start(&s, ServeOptions::default());
        let addr = server.local_addr();
        wait_for_snapshot(addr).await;
        let mut c = TcpStream::connect(addr).await.unwrap();
        for _ in 0..3 {
            c.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            let mut buf = vec![0u8; 4096];
            let n = c.read(&mut buf).await.unwrap();
            assert!(buf[..n].starts_with(b"HTTP/1.1 200 OK"));
        }
        server.stop().await;
    }

    #[tokio::test]
    async fn analysis_figures_fed_through_the_channel_appear() {
        let s = sampler(200);
        let (tx, rx) = watch::channel(None);
        let server = start(
            &s,
            ServeOptions {
                extra: Some(rx),
                ..ServeOptions::default()
            },
        );
        let addr = server.local_addr();
        wait_for_snapshot(addr).await;
        assert!(!get(addr, "/metrics").await.2.contains("seconds_to_full"));
        tx.send_replace(Some(Arc::new(Extra {
            gpus: vec![GpuExtra {
                index: 2,
                growth_bps: Some(1e6),
                seconds_to_full: Some(42.0),
            }],
            ..Extra::default()
        })));
        let mut seen = false;
        for _ in 0..50 {
            if get(addr, "/metrics")
                .await
                .2
                .contains("vramwatch_gpu_memory_seconds_to_full{gpu=\"2\"")
            {
                seen = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(seen);
        server.stop().await;
    }

    /// `GET /metrics` from the loopback address `from`: the snapshot seq and
    /// the per-GPU peaks it reports.
    async fn scrape_from(addr: SocketAddr, from: &str) -> (u64, BTreeMap<u32, u64>) {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.bind(format!("{from}:0").parse().unwrap()).unwrap();
        let mut c = sock.connect(addr).await.unwrap();
        c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut buf = Vec::new();
        c.read_to_end(&mut buf).await.unwrap();
        let text = String::from_utf8(buf).unwrap();
        let value = |l: &str| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap();
        let seq = text
            .lines()
            .find(|l| l.starts_with("vramwatch_snapshot_seq{"))
            .map(value)
            .unwrap();
        let peaks = text
            .lines()
            .filter_map(|l| l.strip_prefix("vramwatch_gpu_memory_peak_bytes{gpu=\""))
            .map(|l| (l.split('"').next().unwrap().parse().unwrap(), value(l)))
            .collect();
        (seq, peaks)
    }

    /// One GPU whose memory only falls, 1 MiB per millisecond: the peak of
    /// a window is always in its oldest snapshot, never in the newest.
    struct Falling {
        t0: u64,
    }

    impl crate::source::GpuProbe for Falling {
        fn fast(
            &mut self,
            t: u64,
        ) -> Result<crate::source::FastReading, crate::source::ProbeError> {
            let total = 100 * crate::model::units::GIB;
            let used =
                (total / 2).saturating_sub(t.saturating_sub(self.t0) * crate::model::units::MIB);
            Ok(crate::source::FastReading {
                mem: Some(crate::model::MemInfo {
                    used,
                    reserved: 0,
                    free: total - used,
                    total,
                }),
                procs: vec![],
            })
        }
        fn normal(
            &mut self,
            t: u64,
            _: bool,
        ) -> Result<crate::source::NormalReading, crate::source::ProbeError> {
            Ok(crate::source::NormalReading {
                fast: self.fast(t)?,
                ..Default::default()
            })
        }
        fn slow(
            &mut self,
            _: u64,
            _: bool,
        ) -> Result<crate::source::SlowReading, crate::source::ProbeError> {
            Ok(Default::default())
        }
    }

    struct NoHost;
    impl crate::source::HostFacts for NoHost {
        fn enrich(&mut self, _: u64, _: &mut [crate::model::ProcSample]) {}
    }

    struct FallingSource(u64);
    impl crate::source::Source for FallingSource {
        fn system(&self) -> Arc<SystemInfo> {
            Arc::new(SystemInfo {
                host: "t".into(),
                gpus: vec![crate::model::DeviceInfo::default()],
                ..Default::default()
            })
        }
        fn probe(&self, _: usize) -> Box<dyn crate::source::GpuProbe> {
            Box::new(Falling { t0: self.0 })
        }
        fn host_facts(&self) -> Box<dyn crate::source::HostFacts> {
            Box::new(NoHost)
        }
    }

    #[tokio::test]
    async fn peaks_cover_everything_since_each_scrapers_previous_scrape() {
        let s = Sampler::spawn(
            Box::new(FallingSource(now_ms())),
            crate::sampler::Schedule {
                interval: Duration::from_millis(100),
                fast: Some(Duration::from_millis(20)),
                slow: None,
                proc_util: Duration::from_millis(100),
                burst: None,
                pcie: None,
            },
        );
        let mut rx = s.subscribe();
        let all: Arc<Mutex<Vec<Arc<Snapshot>>>> = Arc::default();
        let sink = all.clone();
        tokio::spawn(async move {
            while let Ok(snap) = rx.recv().await {
                sink.lock().unwrap().push(snap);
            }
        });
        let server = start(&s, ServeOptions::default());
        let addr = server.local_addr();
        wait_for_snapshot(addr).await;
        let pause = || tokio::time::sleep(Duration::from_millis(450));
        let (a0, _) = scrape_from(addr, "127.0.0.1").await;
        pause().await;
        let (b0, _) = scrape_from(addr, "127.0.0.2").await;
        pause().await;
        let (a1, peak_a) = scrape_from(addr, "127.0.0.1").await;
        let (b1, peak_b) = scrape_from(addr, "127.0.0.2").await;
        assert!(a1 > a0 + 3 && b1 > b0 + 2, "{a0} {a1} {b0} {b1}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        let expect = |after: u64, upto: u64| -> BTreeMap<u32, u64> {
            let all = all.lock().unwrap();
            let mut m = BTreeMap::new();
            for snap in all.iter().filter(|x| x.seq > after && x.seq <= upto) {
                for g in &snap.gpus {
                    let v = m.entry(g.index).or_insert(0);
                    *v = (*v).max(g.mem_peak.unwrap());
                }
            }
            m
        };
        assert_eq!(
            peak_a,
            expect(a0, a1),
            "scraper A: since its own previous scrape"
        );
        assert_eq!(peak_b, expect(b0, b1), "scraper B: its own window");
        server.stop().await;
    }

    fn published(snap: Snapshot) -> Published {
        let w = SimWorld::new("demo", 1, 0).unwrap();
        Published {
            system: w.info(),
            snap: Arc::new(snap),
            extra: None,
            last_xid: BTreeMap::new(),
            labels: OnceLock::new(),
            metrics: OnceLock::new(),
            own_peaks: OnceLock::new(),
            json: OnceLock::new(),
        }
    }

    #[test]
    fn a_snapshot_is_rendered_once_however_often_it_is_asked_for() {
        let w = SimWorld::new("demo", 1, 0).unwrap();
        let p = published(w.snapshot(0, 10_000, "me"));
        let a = p.metrics();
        let b = p.metrics();
        assert_eq!(a.as_ptr(), b.as_ptr(), "the same buffer, not a new render");
        assert_eq!(p.json().as_ptr(), p.json().as_ptr());
        assert_eq!(p.own_peaks().as_ptr(), p.own_peaks().as_ptr());
    }

    #[test]
    fn health_reports_missing_and_stale_snapshots() {
        let i = Duration::from_secs(1);
        assert_eq!(health(None, i).status(), StatusCode::SERVICE_UNAVAILABLE);
        let fresh = published(Snapshot {
            t_ms: now_ms(),
            ..Snapshot::default()
        });
        assert_eq!(health(Some(&fresh), i).status(), StatusCode::OK);
        let old = published(Snapshot {
            t_ms: now_ms() - 6_000,
            ..Snapshot::default()
        });
        assert_eq!(
            health(Some(&old), i).status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        // A slow interval allows older snapshots.
        assert_eq!(
            health(Some(&old), Duration::from_secs(10)).status(),
            StatusCode::OK
        );
    }

    #[test]
    fn bad_addresses_say_what_is_wrong() {
        let e = bind("nonsense").unwrap_err().to_string();
        assert!(
            e.contains("`nonsense` is not a listen address") && e.contains("HOST:PORT"),
            "{e}"
        );
        let e = bind("127.0.0.1:70000").unwrap_err().to_string();
        assert!(e.contains("invalid port"), "{e}");
        let e = bind("").unwrap_err().to_string();
        assert!(e.contains("empty"), "{e}");
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let e = bind(&addr).unwrap_err().to_string();
        assert!(
            e.contains("cannot listen on") && e.contains("another program"),
            "{e}"
        );
    }
}
