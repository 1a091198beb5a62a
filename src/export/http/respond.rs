//! Answers a request: `/metrics` (plain or gzip), `/snapshot`, `/healthz`,
//! 404 and 405 for the rest.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::IpAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::header::{
    ACCEPT_ENCODING, ALLOW, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, HeaderValue, VARY,
};
use hyper::{Method, Request, Response, StatusCode};

use super::conns::Busy;
use super::feed::{Published, Shared};
use super::gzip;
use crate::export::prometheus;
use crate::model::now_ms;

/// The body of a response: a few shared buffers sent one after another;
/// the connection counts as busy until it is written (or dropped).
pub(super) struct Chunks {
    parts: VecDeque<Bytes>,
    len: u64,
    busy: Option<Busy>,
}

impl Chunks {
    pub(super) fn new(parts: impl IntoIterator<Item = Bytes>) -> Chunks {
        let parts: VecDeque<Bytes> = parts.into_iter().filter(|b| !b.is_empty()).collect();
        let len = parts.iter().map(|b| b.len() as u64).sum();
        Chunks {
            parts,
            len,
            busy: None,
        }
    }

    fn text(s: &'static str) -> Chunks {
        Chunks::new([Bytes::from_static(s.as_bytes())])
    }

    /// Keeps the connection busy until this body is done.
    pub(super) fn hold(&mut self, busy: Busy) {
        self.busy = Some(busy);
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

/// A page that may be sent compressed: `Vary` either way, and
/// `Content-Encoding: gzip` when `gz` has the compressed parts.
fn page(content_type: &'static str, plain: Vec<Bytes>, gz: Option<Vec<Bytes>>) -> Response<Chunks> {
    let zipped = gz.is_some();
    let mut r = reply(
        StatusCode::OK,
        content_type,
        Chunks::new(gz.unwrap_or(plain)),
    );
    let h = r.headers_mut();
    h.insert(VARY, HeaderValue::from_static("Accept-Encoding"));
    if zipped {
        h.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    r
}

/// Answers one request.
pub(super) fn respond(req: &Request<Incoming>, shared: &Shared, peer: IpAddr) -> Response<Chunks> {
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
    let gz = gzip::accepted(
        req.headers()
            .get_all(ACCEPT_ENCODING)
            .iter()
            .map(HeaderValue::as_bytes),
    );
    if path == "/snapshot" {
        let zipped = gz.then(|| p.json_gz()).flatten().map(|b| vec![b]);
        return page("application/json", vec![p.json()], zipped);
    }
    metrics(&p, shared, peer, req.method() == Method::HEAD, gz)
}

/// `/metrics`: the snapshot's page, then the peaks since this scraper's
/// previous scrape.
fn metrics(p: &Published, shared: &Shared, peer: IpAddr, head: bool, gz: bool) -> Response<Chunks> {
    // A HEAD request gets the headers a GET would, and does not count as a
    // scrape (it would cut the scraper's peak window short).
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
    let peaks = peaks.map(|peaks| Bytes::from(prometheus::render_peaks(p.labels(), &peaks)));
    let zipped = if gz {
        let fresh;
        let tail = match &peaks {
            Some(b) => {
                fresh = gzip::Part::new(b, true);
                fresh.as_ref()
            }
            None => p.own_peaks_gz(),
        };
        match (p.metrics_gz(), tail) {
            (Some(m), Some(t)) => Some(gzip::member(&[m, t])),
            _ => None,
        }
    } else {
        None
    };
    let plain = vec![p.metrics(), peaks.unwrap_or_else(|| p.own_peaks())];
    page(prometheus::CONTENT_TYPE, plain, zipped)
}

/// 200 while snapshots keep coming; 503 before the first and when the last
/// is older than three intervals (at least 5 s).
pub(super) fn health(p: Option<&Published>, interval: Duration) -> Response<Chunks> {
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
