//! PromQL over HTTP: `/api/v1/query`, `/api/v1/query_range` and
//! `/api/v1/alerts` of one Prometheus (or anything that answers its HTTP
//! API), with typed results and errors that say what went wrong where.
//!
//! hyper 1's client (`hyper-util`, pooled keep-alive connections) over
//! rustls with the webpki roots (no system certificates needed). Every
//! request has a deadline: connecting, sending and reading the whole body.
//! Queries are POSTed as a form, so a long one never meets a URL limit.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue, USER_AGENT};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use serde::Deserialize;

/// A response body larger than this is refused: the fleet's queries
/// aggregate on the server, so a body this big means a selector that is far
/// too wide.
pub const MAX_BODY: usize = 64 << 20;

/// A series' labels.
pub type Labels = BTreeMap<String, String>;

/// One series of an instant query.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub labels: Labels,
    pub value: f64,
}

/// One series of a range query: `(unix seconds, value)` points.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub labels: Labels,
    pub points: Vec<(f64, f64)>,
}

/// One alert of Prometheus's own rules (`/api/v1/alerts`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PromAlert {
    #[serde(default)]
    pub labels: Labels,
    #[serde(default)]
    pub annotations: Labels,
    /// `firing` or `pending`.
    #[serde(default)]
    pub state: String,
    /// RFC 3339, when it became active.
    #[serde(default, rename = "activeAt")]
    pub active_at: Option<String>,
}

/// How to prove who we are; read from the environment, never from the
/// command line.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum Auth {
    #[default]
    None,
    Bearer(String),
    Basic {
        user: String,
        password: String,
    },
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a secret.
        f.write_str(match self {
            Auth::None => "None",
            Auth::Bearer(_) => "Bearer(…)",
            Auth::Basic { .. } => "Basic(…)",
        })
    }
}

impl Auth {
    fn header(&self) -> Result<Option<HeaderValue>, PromError> {
        let raw = match self {
            Auth::None => return Ok(None),
            Auth::Bearer(t) => format!("Bearer {t}"),
            Auth::Basic { user, password } => {
                format!("Basic {}", base64(format!("{user}:{password}").as_bytes()))
            }
        };
        let mut v = HeaderValue::from_str(&raw).map_err(|_| {
            PromError::Config("the credentials contain characters a header cannot carry".into())
        })?;
        v.set_sensitive(true);
        Ok(Some(v))
    }
}

/// Standard base64 with padding (RFC 4648), for basic auth.
pub fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub fn urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3 / 2);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// What went wrong talking to Prometheus.
#[derive(Debug, thiserror::Error)]
pub enum PromError {
    #[error("{0}")]
    Config(String),
    #[error("{url}: no answer within {secs:.1}s")]
    Timeout { url: String, secs: f64 },
    #[error("{url}: {why}")]
    Transport { url: String, why: String },
    #[error("{url}: HTTP {status}{}", if .message.is_empty() { String::new() } else { format!(": {}", .message) })]
    Status {
        url: String,
        status: u16,
        message: String,
    },
    #[error("{url}: Prometheus refused the query ({kind}): {message}")]
    Api {
        url: String,
        kind: String,
        message: String,
    },
    #[error("{url}: the answer is not Prometheus's JSON: {why}")]
    Decode { url: String, why: String },
}

/// The Prometheus HTTP API of one server.
pub struct Client {
    http: HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
    /// `scheme://authority[/prefix]`, no trailing slash.
    base: String,
    auth: Option<HeaderValue>,
    timeout: Duration,
    /// Response body bytes read so far (for the benchmark and the status).
    fetched: AtomicU64,
    /// Requests sent so far.
    requests: AtomicU64,
}

/// `url` checked: http or https, a host, no credentials in it, no query.
/// Returns the base without a trailing slash.
pub fn parse_base(url: &str) -> Result<String, PromError> {
    let shown = redact(url);
    let bad = |why: &str| PromError::Config(format!("--prometheus `{shown}`: {why}"));
    let uri: Uri = url
        .trim()
        .parse()
        .map_err(|_| bad("not a URL; use e.g. http://prometheus:9090"))?;
    match uri.scheme_str() {
        Some("http") | Some("https") => {}
        _ => return Err(bad("the URL must start with http:// or https://")),
    }
    let Some(auth) = uri.authority() else {
        return Err(bad("the URL has no host"));
    };
    if auth.as_str().contains('@') {
        return Err(bad(
            "credentials do not belong on the command line: set VRAMWATCH_FLEET_USER and VRAMWATCH_FLEET_PASSWORD, or VRAMWATCH_FLEET_TOKEN",
        ));
    }
    if uri.query().is_some() {
        return Err(bad("the URL must not have a query (?...)"));
    }
    let path = uri.path().trim_end_matches('/');
    Ok(format!(
        "{}://{}{}",
        uri.scheme_str().unwrap_or("http"),
        auth.as_str(),
        path
    ))
}

/// `url` with any `user:password@` replaced by `…@`, for messages.
fn redact(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let end = rest.find('/').unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) if scheme.is_empty() => format!("…{}", &rest[at..]),
        Some(at) => format!("{scheme}://…{}", &rest[at..]),
        None => url.to_owned(),
    }
}

impl Client {
    /// A client for the Prometheus at `url` (its base, e.g.
    /// `https://prom.example/prometheus`); `timeout` bounds every request.
    pub fn new(url: &str, auth: &Auth, timeout: Duration) -> Result<Client, PromError> {
        let base = parse_base(url)?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(timeout));
        http.set_nodelay(true);
        let provider = rustls::crypto::ring::default_provider();
        let tls = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(provider)
            .map_err(|e| PromError::Config(format!("cannot set up TLS: {e}")))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let http = HyperClient::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(32)
            .build(tls);
        Ok(Client {
            http,
            base,
            auth: auth.header()?,
            timeout,
            fetched: AtomicU64::new(0),
            requests: AtomicU64::new(0),
        })
    }

    /// The base URL requests go to.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Response body bytes read since the client was made.
    pub fn fetched_bytes(&self) -> u64 {
        self.fetched.load(Ordering::Relaxed)
    }

    /// Requests sent since the client was made.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// An instant query at the server's now. A scalar answer is one sample
    /// without labels.
    pub async fn query(&self, promql: &str) -> Result<Vec<Sample>, PromError> {
        let form = format!("query={}", urlencode(promql));
        let (url, data) = self.call("/api/v1/query", Some(form)).await?;
        decode_vector(&url, data)
    }

    /// A range query over `[start, end]` (unix seconds) every `step` seconds.
    pub async fn query_range(
        &self,
        promql: &str,
        start: f64,
        end: f64,
        step: f64,
    ) -> Result<Vec<Series>, PromError> {
        let form = format!(
            "query={}&start={start:.3}&end={end:.3}&step={step:.3}",
            urlencode(promql)
        );
        let (url, data) = self.call("/api/v1/query_range", Some(form)).await?;
        decode_matrix(&url, data)
    }

    /// Prometheus's own alerts, firing and pending.
    pub async fn alerts(&self) -> Result<Vec<PromAlert>, PromError> {
        #[derive(Deserialize)]
        struct Alerts {
            #[serde(default)]
            alerts: Vec<PromAlert>,
        }
        let (url, data) = self.call("/api/v1/alerts", None).await?;
        let a: Alerts = serde_json::from_value(data).map_err(|e| PromError::Decode {
            url,
            why: e.to_string(),
        })?;
        Ok(a.alerts
            .into_iter()
            .map(|a| PromAlert {
                labels: clean_labels(a.labels),
                annotations: clean_labels(a.annotations),
                ..a
            })
            .collect())
    }

    /// POSTs `form` (or GETs without one) to `path`; returns the URL and
    /// the envelope's `data`.
    async fn call(
        &self,
        path: &str,
        form: Option<String>,
    ) -> Result<(String, serde_json::Value), PromError> {
        let url = format!("{}{path}", self.base);
        self.requests.fetch_add(1, Ordering::Relaxed);
        let (status, body) = tokio::time::timeout(self.timeout, self.send(&url, form))
            .await
            .map_err(|_| PromError::Timeout {
                url: url.clone(),
                secs: self.timeout.as_secs_f64(),
            })??;
        self.fetched.fetch_add(body.len() as u64, Ordering::Relaxed);
        let env: Envelope = match serde_json::from_slice(&body) {
            Ok(e) => e,
            Err(e) if status.is_success() => {
                return Err(PromError::Decode {
                    url,
                    why: e.to_string(),
                });
            }
            Err(_) => {
                return Err(PromError::Status {
                    url,
                    status: status.as_u16(),
                    message: first_line(&body),
                });
            }
        };
        if env.status != "success" {
            return Err(PromError::Api {
                url,
                kind: env
                    .error_type
                    .unwrap_or_else(|| status.as_u16().to_string()),
                message: env.error.unwrap_or_default(),
            });
        }
        env.data
            .map(|d| (url.clone(), d))
            .ok_or_else(|| PromError::Decode {
                url,
                why: "no `data`".into(),
            })
    }

    async fn send(
        &self,
        url: &str,
        form: Option<String>,
    ) -> Result<(StatusCode, Bytes), PromError> {
        let transport = |why: String| PromError::Transport {
            url: url.to_owned(),
            why,
        };
        let mut req = Request::builder()
            .uri(url)
            .header(ACCEPT, "application/json")
            .header(USER_AGENT, concat!("vramwatch/", env!("CARGO_PKG_VERSION")));
        if let Some(a) = &self.auth {
            req = req.header(AUTHORIZATION, a.clone());
        }
        let req = match form {
            Some(f) => req
                .method(Method::POST)
                .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Full::new(Bytes::from(f))),
            None => req.method(Method::GET).body(Full::new(Bytes::new())),
        }
        .map_err(|e| transport(format!("cannot build the request: {e}")))?;
        let resp = self.http.request(req).await.map_err(|e| {
            // hyper's own words ("client error (Connect)") say little: the
            // cause does.
            if e.is_connect() {
                transport(format!("cannot connect: {}", root_cause(&e)))
            } else {
                transport(chain(&e))
            }
        })?;
        let status = resp.status();
        let body = Limited::new(resp.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(|e| transport(format!("reading the answer: {e}")))?
            .to_bytes();
        Ok((status, body))
    }
}

/// An error and its causes, `a: b: c` (hyper's own message alone is
/// "client error (Connect)").
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

/// The innermost cause of an error.
fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cur = e;
    while let Some(c) = cur.source() {
        cur = c;
    }
    cur.to_string()
}

fn first_line(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let line = text.lines().next().unwrap_or("").trim();
    crate::sanitize::clean_capped(line, 200)
}

/// `{"status", "data", "errorType", "error"}`.
#[derive(Deserialize)]
struct Envelope {
    status: String,
    #[serde(default)]
    data: Option<serde_json::Value>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "resultType", content = "result", rename_all = "lowercase")]
enum Data {
    Vector(Vec<RawSample>),
    Matrix(Vec<RawSeries>),
    Scalar((f64, String)),
    String(serde::de::IgnoredAny),
}

#[derive(Deserialize)]
struct RawSample {
    #[serde(default)]
    metric: Labels,
    value: (f64, String),
}

#[derive(Deserialize)]
struct RawSeries {
    #[serde(default)]
    metric: Labels,
    #[serde(default)]
    values: Vec<(f64, String)>,
}

/// Labels as they may be shown: every key and value from a Prometheus is
/// untrusted (an exporter's host label can carry escape sequences), so
/// each is cleaned of control characters and capped, once, here.
fn clean_labels(labels: Labels) -> Labels {
    labels
        .into_iter()
        .map(|(k, v)| (crate::sanitize::clean(&k), crate::sanitize::clean(&v)))
        .collect()
}

/// Prometheus writes values as strings: "1.5", "NaN", "+Inf".
fn number(s: &str) -> f64 {
    s.parse().unwrap_or(f64::NAN)
}

fn decode(url: &str, data: serde_json::Value) -> Result<Data, PromError> {
    serde_json::from_value(data).map_err(|e| PromError::Decode {
        url: url.to_owned(),
        why: e.to_string(),
    })
}

/// The samples of an instant query's `data`.
pub fn decode_vector(url: &str, data: serde_json::Value) -> Result<Vec<Sample>, PromError> {
    match decode(url, data)? {
        Data::Vector(v) => Ok(v
            .into_iter()
            .map(|s| Sample {
                labels: clean_labels(s.metric),
                value: number(&s.value.1),
            })
            .collect()),
        Data::Scalar((_, v)) => Ok(vec![Sample {
            labels: Labels::new(),
            value: number(&v),
        }]),
        _ => Err(PromError::Decode {
            url: url.to_owned(),
            why: "expected a vector".into(),
        }),
    }
}

/// The series of a range query's `data`.
pub fn decode_matrix(url: &str, data: serde_json::Value) -> Result<Vec<Series>, PromError> {
    match decode(url, data)? {
        Data::Matrix(m) => Ok(m
            .into_iter()
            .map(|s| Series {
                labels: clean_labels(s.metric),
                points: s.values.iter().map(|(t, v)| (*t, number(v))).collect(),
            })
            .collect()),
        _ => Err(PromError::Decode {
            url: url.to_owned(),
            why: "expected a matrix".into(),
        }),
    }
}

#[cfg(test)]
mod tests;
