//! The HTTP server against real sockets.
use super::feed::Published;
use super::respond::health;
use super::*;
use crate::analysis::AnalysisConfig;
use crate::model::{Snapshot, SystemInfo, now_ms};
use crate::pipeline::Pipeline;
use crate::source::sim::{SimSource, SimWorld};
use hyper::StatusCode;
use std::collections::BTreeMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn pipeline_of(source: Box<dyn crate::source::Source>, interval_ms: u64, fast: bool) -> Pipeline {
    Pipeline::start(
        source,
        crate::sampler::Schedule {
            interval: Duration::from_millis(interval_ms),
            fast: Some(Duration::from_millis(20)),
            slow: fast.then(|| Duration::from_millis(500)),
            proc_util: Duration::from_millis(interval_ms),
            proc_util_shown: Duration::from_millis(interval_ms),
            burst: None,
            preview: false,
            pcie: None,
            energy: None,
        },
        AnalysisConfig::default(),
    )
    .unwrap()
}

fn sim(interval_ms: u64, scenario: &str) -> Pipeline {
    let world = SimWorld::new(scenario, 1, now_ms().saturating_sub(60_000)).unwrap();
    pipeline_of(
        Box::new(SimSource::new(world, "me".into())),
        interval_ms,
        true,
    )
}

fn start(p: &Pipeline, opts: ServeOptions) -> Server {
    Server::start(bind("127.0.0.1:0").unwrap(), p.hub(), opts).unwrap()
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
    let s = sim(200, "demo");
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
    assert_eq!(v["schema"], crate::export::snapshot_json::SNAPSHOT_SCHEMA);
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
    let s = sim(200, "demo");
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
    let s = sim(200, "demo");
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
    let s = sim(200, "demo");
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
async fn the_pipelines_analysis_appears_in_the_metrics() {
    // The leak scenario, a minute in: its leaking process is flagged.
    let p = sim(100, "leak");
    let server = start(&p, ServeOptions::default());
    let addr = server.local_addr();
    wait_for_snapshot(addr).await;
    let mut seen = false;
    for _ in 0..100 {
        let body = get(addr, "/metrics").await.2;
        if body.contains("vramwatch_gpu_memory_growth_bytes_per_second{gpu=\"0\"")
            && body.contains("vramwatch_process_leak_suspected{")
        {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(seen, "growth and leak figures within 5 s");
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
    fn fast(&mut self, t: u64) -> Result<crate::source::FastReading, crate::source::ProbeError> {
        let total = 100 * crate::model::units::GIB;
        let used = (total / 2).saturating_sub(t.saturating_sub(self.t0) * crate::model::units::MIB);
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
        _: crate::source::SlowDue,
    ) -> Result<crate::source::SlowReading, crate::source::ProbeError> {
        Ok(Default::default())
    }
}

struct NoHost;
impl crate::source::HostFacts for NoHost {
    fn enrich(&mut self, _: u64, _: &mut [crate::model::ProcSample], _: bool) {}
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
    let s = pipeline_of(Box::new(FallingSource(now_ms())), 100, false);
    let rx = s.hub().subscribe_all(10_000);
    let all: Arc<Mutex<Vec<Arc<Snapshot>>>> = Arc::default();
    let sink = all.clone();
    std::thread::spawn(move || {
        for a in rx {
            sink.lock().unwrap().push(a.snapshot.clone());
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
    let analyzed = crate::pipeline::analyse_all(&AnalysisConfig::default(), [snap])
        .pop()
        .unwrap();
    Published::new(
        w.info(),
        Arc::default(),
        Arc::default(),
        analyzed,
        BTreeMap::new(),
    )
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
    // `record --serve` and the dashboard's `--serve` have no `--listen`:
    // the hint names no flag.
    assert!(
        e.contains("cannot listen on")
            && e.contains("another program")
            && e.contains("choose another port")
            && !e.contains("--listen"),
        "{e}"
    );
}
