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
//! - One render per snapshot (`feed`): a tracker task follows the
//!   pipeline's stream of analysed snapshots and publishes each with empty
//!   caches; the first request fills them, every other request of the
//!   same snapshot shares the bytes, plain or gzip (`gzip`: the shared
//!   part is compressed once, only a scraper's own peaks per request).
//! - Bounded: at most `max_connections` connections and
//!   `max_connections_per_client` per client address, a newcomer taking
//!   the place of the longest-idle connection of whoever holds too many
//!   (`conns`), so that a flood of idle connections never locks out a
//!   scraper or `/healthz`; the process's open-file limit is raised to fit
//!   them; request heads of at most `max_header_bytes`; a client has
//!   `header_timeout` to send a whole request head (this also closes idle
//!   keep-alive connections), and a response write that makes no progress
//!   for `write_timeout` closes the connection. Request bodies are never
//!   read.

mod conns;
mod feed;
mod gzip;
mod respond;

use std::convert::Infallible;
use std::future::Future;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use thiserror::Error;
use tokio::sync::{oneshot, watch};
use tokio_io_timeout::TimeoutStream;

use super::prometheus::Render;
use super::window::{PeakRing, Scrapers};
use crate::config;
use crate::pipeline::Hub;
use conns::Conns;
use feed::{Feed, Shared};

/// Resource bounds of the server.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Connections open at once (fewer if the open-file limit cannot be
    /// raised to fit them).
    pub max_connections: usize,
    /// Connections open at once from one client (IPv4 address, IPv6 /64).
    /// Over either bound a newcomer takes the place of the longest-idle
    /// connection of the client holding the most, or is closed if all of
    /// them are busy.
    pub max_connections_per_client: usize,
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
            max_connections_per_client: 64,
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
    /// The host label's name (`[serve] hostname_label`).
    pub hostname_label: String,
    /// Processes-on-a-GPU that get series (`[serve] max_process_series`).
    pub max_process_series: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        let render = Render::default();
        ServeOptions {
            limits: Limits::default(),
            threads: 1,
            peak_window: Duration::from_secs(600),
            hostname_label: render.host_label,
            max_process_series: render.max_process_series,
        }
    }
}

impl ServeOptions {
    /// The defaults, with the `[serve]` section's choices.
    pub fn from_config(serve: &config::Serve) -> ServeOptions {
        ServeOptions {
            hostname_label: serve.hostname_label.clone(),
            max_process_series: serve.max_process_series,
            ..ServeOptions::default()
        }
    }

    fn render(&self) -> Render {
        Render {
            host_label: self.hostname_label.clone(),
            max_process_series: self.max_process_series,
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
            " (another program, perhaps another vramwatch serve or dcgm-exporter, has this port; choose another port)"
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
        // A deeper accept queue than std's 128, so that a scraper's
        // connection is not dropped (and retried a second later) while a
        // flood of connections waits to be accepted. Best effort.
        let _ = socket2::SockRef::from(&listener).listen(BACKLOG);
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
        let feed = Feed::of(hub, opts.render());
        let mut opts = opts;
        opts.limits.max_connections = fit_fd_limit(opts.limits.max_connections);
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

// ---- the server -----------------------------------------------------------

/// Length of the accept queue asked for (the kernel may cap it).
const BACKLOG: i32 = 4096;

/// Open files kept for everything else (NVML, recordings, `/proc`).
const FD_RESERVE: u64 = 256;

/// Raises the soft open-file limit (to the hard one at most) so that
/// `max_connections` connections fit beside [`FD_RESERVE`] other files, as
/// Go programs do at start; returns how many connections fit.
fn fit_fd_limit(max_connections: usize) -> usize {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return max_connections;
    };
    let want = (max_connections as u64)
        .saturating_add(FD_RESERVE)
        .min(hard);
    let soft = if soft < want && setrlimit(Resource::RLIMIT_NOFILE, want, hard).is_ok() {
        want
    } else {
        soft
    };
    max_connections.min(soft.saturating_sub(FD_RESERVE).max(16) as usize)
}

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
    let tracker = tokio::spawn(feed::track(feed, shared.clone(), tx, stop.clone()));
    let limits = opts.limits;
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.max_header_bytes.max(8192))
        .max_header_size(limits.max_header_bytes)
        .keep_alive(true);
    let graceful = GracefulShutdown::new();
    let conns = Conns::new(limits.max_connections, limits.max_connections_per_client);
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
                let Some(place) = conns.admit(peer.ip()) else {
                    drop(stream);
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let mut stream = TimeoutStream::new(stream);
                stream.set_write_timeout(Some(limits.write_timeout));
                let io = TokioIo::new(Box::pin(stream));
                let shared = shared.clone();
                let ip = peer.ip();
                let slot = place.slot().clone();
                let svc = service_fn(move |req| {
                    let busy = slot.begin();
                    let mut r = respond::respond(&req, &shared, ip);
                    r.body_mut().hold(busy);
                    async move { Ok::<_, Infallible>(r) }
                });
                let conn = graceful.watch(builder.serve_connection(io, svc));
                tokio::spawn(async move {
                    // Closed by the client, the timeouts, or a newcomer
                    // that took its place (dropping it closes the socket).
                    tokio::select! {
                        _ = conn => {}
                        _ = place.slot().evicted() => {}
                    }
                    drop(place);
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

#[cfg(test)]
mod tests;
