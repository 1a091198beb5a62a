//! Container and pod names from local sources: the kubelet's log links
//! (`/var/log/containers/<pod>_<namespace>_<container>-<id>.log`, on every
//! Kubernetes node whatever its runtime: [`super::kubelet_logs`]), then the
//! Docker Engine API over its unix socket (`GET /containers/<id>/json`:
//! `Name`, and the `io.kubernetes.*` labels dockershim and cri-dockerd
//! set).
//!
//! Where it runs: the host-facts thread asks [`Names::get`], which answers
//! from a bounded cache and never waits. A container id not yet known is
//! sent to a thread of its own (`vw-containers`, started on the first
//! lookup) that asks the socket with a timeout; its answer lands in the
//! cache at a later round. A failure is remembered for a while; a socket
//! that is missing, refuses, hangs or answers garbage stops every lookup
//! for that while, so a node without Docker costs one failed connect a
//! minute at most and a slow daemon never delays a sampling round. On a
//! node whose log links can be read, a container neither source knows is
//! asked again after the same while (it may be too young to have a link).
//! containerd's CRI (gRPC) and the kubelet's API are not asked: the links
//! say the same names without either.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;
use serde::Deserialize;

use crate::sanitize;
use crate::source::host::kubelet_logs::{self, KUBELET_LOG_LINKS};

/// The Docker Engine's socket unless `DOCKER_HOST` names another
/// `unix://` one.
const DOCKER_SOCKET: &str = "/var/run/docker.sock";
/// How long one lookup may take, connect to last byte.
const TIMEOUT: Duration = Duration::from_secs(1);
/// How long a failure is remembered (per container, or for the whole
/// socket when the socket failed).
const BACKOFF: Duration = Duration::from_secs(60);
/// Most containers remembered.
const CAP: usize = 1024;
/// Most lookups waiting for the lookup thread.
const QUEUE: usize = 64;
/// Largest answer read; a container's inspect JSON is a few KB.
const MAX_BODY: usize = 1 << 20;
/// Longest name, pod or namespace kept (Kubernetes names are ≤ 253).
const MAX_NAME: usize = 253;

/// What the runtime says about one container, sanitised.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ContainerMeta {
    /// The container's name: the Kubernetes container name when the
    /// container is a pod's, else the runtime's name (without Docker's `/`).
    pub(crate) name: Option<Arc<str>>,
    pub(crate) pod: Option<Arc<str>>,
    pub(crate) namespace: Option<Arc<str>>,
    pub(crate) pod_uid: Option<Arc<str>>,
}

/// Why a lookup gave nothing.
#[derive(Debug)]
enum LookupError {
    /// The socket is missing, refused us, hung, or spoke no HTTP: stop
    /// asking it for a while.
    Socket,
    /// The runtime does not know the container, or its answer was unusable.
    Container,
}

enum Entry {
    Pending,
    Known {
        meta: Arc<ContainerMeta>,
        used: Instant,
    },
    Failed {
        until: Instant,
    },
}

struct Worker {
    tx: SyncSender<(String, bool)>,
    rx: Receiver<(String, Result<ContainerMeta, LookupError>)>,
}

/// Container names by full container id, looked up off the caller's thread.
pub(crate) struct Names {
    socket: PathBuf,
    /// The kubelet's log links.
    logs: PathBuf,
    timeout: Duration,
    backoff: Duration,
    cap: usize,
    cache: HashMap<String, Entry>,
    worker: Option<Worker>,
    /// No lookups before this (the socket failed).
    down_until: Option<Instant>,
}

impl Names {
    /// The Docker Engine's socket (`DOCKER_HOST=unix://...` or the default).
    pub(crate) fn docker() -> Names {
        let socket = std::env::var("DOCKER_HOST")
            .ok()
            .and_then(|h| h.strip_prefix("unix://").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from(DOCKER_SOCKET));
        Names::new(socket, KUBELET_LOG_LINKS.into(), TIMEOUT, BACKOFF, CAP)
    }

    pub(crate) fn new(
        socket: PathBuf,
        logs: PathBuf,
        timeout: Duration,
        backoff: Duration,
        cap: usize,
    ) -> Names {
        Names {
            socket,
            logs,
            timeout,
            backoff,
            cap: cap.max(1),
            cache: HashMap::new(),
            worker: None,
            down_until: None,
        }
    }

    /// What is known about container `id` (its full id) now; `docker`:
    /// whether the Docker Engine may know it (else only the kubelet's log
    /// links are asked). An id not asked about yet is queued for the lookup
    /// thread; this never blocks.
    pub(crate) fn get(
        &mut self,
        id: &str,
        docker: bool,
        now: Instant,
    ) -> Option<Arc<ContainerMeta>> {
        match self.cache.get_mut(id) {
            Some(Entry::Known { meta, used }) => {
                *used = now;
                return Some(meta.clone());
            }
            Some(Entry::Pending) => return None,
            Some(Entry::Failed { until }) if now < *until => return None,
            _ => {}
        }
        if self.down_until.is_some_and(|u| now < u) {
            return None;
        }
        if self.cache.len() >= self.cap && !self.make_room(now) {
            return None;
        }
        if self.worker.is_none() {
            match spawn(
                self.socket.clone(),
                self.logs.clone(),
                self.timeout,
                self.backoff,
            ) {
                Ok(w) => self.worker = Some(w),
                Err(_) => {
                    self.down_until = Some(now + self.backoff);
                    return None;
                }
            }
        }
        let tx = &self.worker.as_ref()?.tx;
        match tx.try_send((id.to_owned(), docker)) {
            Ok(()) => {
                self.cache.insert(id.to_owned(), Entry::Pending);
            }
            // Asked again at the next round.
            Err(TrySendError::Full(_)) => {}
            Err(TrySendError::Disconnected(_)) => {
                self.worker = None;
                self.down_until = Some(now + self.backoff);
            }
        }
        None
    }

    /// Takes in the answers that arrived since the last call.
    pub(crate) fn poll(&mut self, now: Instant) {
        let Some(w) = self.worker.as_ref() else {
            return;
        };
        while let Ok((id, result)) = w.rx.try_recv() {
            let entry = match result {
                Ok(meta) => Entry::Known {
                    meta: Arc::new(meta),
                    used: now,
                },
                Err(e) => {
                    if matches!(e, LookupError::Socket) {
                        self.down_until = Some(now + self.backoff);
                    }
                    Entry::Failed {
                        until: now + self.backoff,
                    }
                }
            };
            self.cache.insert(id, entry);
        }
    }

    /// Drops expired failures, else the least recently used name; false
    /// when every entry is a pending lookup.
    fn make_room(&mut self, now: Instant) -> bool {
        self.cache
            .retain(|_, e| !matches!(e, Entry::Failed { until } if now >= *until));
        if self.cache.len() < self.cap {
            return true;
        }
        let oldest = self
            .cache
            .iter()
            .filter_map(|(id, e)| match e {
                Entry::Known { used, .. } => Some((*used, id)),
                Entry::Failed { until } => {
                    Some((until.checked_sub(self.backoff).unwrap_or(now), id))
                }
                Entry::Pending => None,
            })
            .min()
            .map(|(_, id)| id.clone());
        match oldest {
            Some(id) => self.cache.remove(&id).is_some(),
            None => false,
        }
    }
}

/// Starts the lookup thread: one lookup at a time, the log links first,
/// then the socket under `timeout`; after a socket failure the socket is
/// not asked (no I/O) for `backoff`.
fn spawn(
    socket: PathBuf,
    logs: PathBuf,
    timeout: Duration,
    backoff: Duration,
) -> std::io::Result<Worker> {
    let (tx, requests) = mpsc::sync_channel::<(String, bool)>(QUEUE);
    let (answers, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("vw-containers".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            let mut down_until: Option<Instant> = None;
            while let Ok((id, docker)) = requests.recv() {
                let links = kubelet_logs::lookup(&logs, &id);
                if let Ok(Some(meta)) = links {
                    if answers.send((id, Ok(meta))).is_err() {
                        break;
                    }
                    continue;
                }
                // containerd, CRI-O: the links were the only source.
                let mut result = if !docker {
                    Err(LookupError::Container)
                } else if down_until.is_some_and(|u| Instant::now() < u) {
                    Err(LookupError::Socket)
                } else {
                    rt.block_on(async {
                        tokio::time::timeout(timeout, inspect(&socket, &id))
                            .await
                            .unwrap_or(Err(LookupError::Socket))
                    })
                };
                if matches!(result, Err(LookupError::Socket)) {
                    down_until = Some(Instant::now() + backoff);
                    // The links are readable (a Kubernetes node) but name
                    // no such container yet: this one only is retried.
                    if links.is_ok() {
                        result = Err(LookupError::Container);
                    }
                }
                if answers.send((id, result)).is_err() {
                    break;
                }
            }
        })?;
    Ok(Worker { tx, rx })
}

/// `GET /containers/<id>/json` over the socket, the answer read up to
/// [`MAX_BODY`] bytes.
async fn inspect(socket: &Path, id: &str) -> Result<ContainerMeta, LookupError> {
    let stream = tokio::net::UnixStream::connect(socket)
        .await
        .map_err(|_| LookupError::Socket)?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|_| LookupError::Socket)?;
    let request = async move {
        let req = hyper::Request::get(format!("/containers/{id}/json"))
            .header(hyper::header::HOST, "docker")
            .body(Empty::<Bytes>::new())
            .map_err(|_| LookupError::Container)?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|_| LookupError::Socket)?;
        // Dropping the sender lets the connection close once read.
        drop(sender);
        if !resp.status().is_success() {
            return Err(LookupError::Container);
        }
        let body = Limited::new(resp.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(|_| LookupError::Container)?
            .to_bytes();
        parse_inspect(&body).ok_or(LookupError::Container)
    };
    let (result, _) = tokio::join!(request, conn);
    result
}

#[derive(Deserialize)]
struct Inspect {
    #[serde(rename = "Name", default)]
    name: Option<String>,
    #[serde(rename = "Config", default)]
    config: Option<InspectConfig>,
}

#[derive(Deserialize)]
struct InspectConfig {
    #[serde(rename = "Labels", default)]
    labels: Option<HashMap<String, String>>,
}

pub(super) fn clean(s: &str) -> Option<Arc<str>> {
    let s = sanitize::clean_capped(s.trim(), MAX_NAME);
    (!s.is_empty()).then(|| s.into())
}

/// The names in a Docker inspect answer; `None` when it is not one.
fn parse_inspect(body: &[u8]) -> Option<ContainerMeta> {
    let inspect: Inspect = serde_json::from_slice(body).ok()?;
    let labels = inspect.config.and_then(|c| c.labels).unwrap_or_default();
    let label = |k: &str| labels.get(k).and_then(|v| clean(v));
    let docker_name = inspect
        .name
        .as_deref()
        .and_then(|n| clean(n.trim_start_matches('/')));
    Some(ContainerMeta {
        name: label("io.kubernetes.container.name").or(docker_name),
        pod: label("io.kubernetes.pod.name"),
        namespace: label("io.kubernetes.pod.namespace"),
        pod_uid: label("io.kubernetes.pod.uid"),
    })
}

#[cfg(test)]
#[path = "containers_tests.rs"]
mod tests;
