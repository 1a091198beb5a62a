//! `vramwatch serve --demo` scraped by a real Prometheus (Debian's package)
//! on loopback: the values Prometheus stores equal what `/snapshot`
//! reported, and `promtool check metrics` accepts `/metrics`.

use crate::common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const MIB: u64 = 1 << 20;

/// A child process killed when the test ends, however it ends.
pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET path` over HTTP/1.0 (no chunked replies): (status, body).
pub(crate) fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut c = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(c, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut raw = Vec::new();
    c.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, body.to_owned()))
}

/// `GET path` asking for gzip: (Content-Encoding, the body decompressed).
fn get_gzip(addr: SocketAddr, path: &str) -> (String, String) {
    let mut c = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        c,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept-Encoding: gzip\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    c.read_to_end(&mut raw).unwrap();
    let at = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..at]).to_ascii_lowercase();
    let encoding = head
        .lines()
        .find_map(|l| l.strip_prefix("content-encoding: "))
        .unwrap_or("")
        .trim()
        .to_owned();
    let mut body = String::new();
    flate2::read::GzDecoder::new(&raw[at + 4..])
        .read_to_string(&mut body)
        .unwrap();
    (encoding, body)
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An instant query: each series' labels and value.
pub(crate) fn query(prom: SocketAddr, q: &str) -> Vec<(HashMap<String, String>, f64)> {
    let Ok((200, body)) = get(prom, &format!("/api/v1/query?query={}", urlencode(q))) else {
        return Vec::new();
    };
    let v: Value = serde_json::from_str(&body).expect("Prometheus answers JSON");
    v["data"]["result"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let labels = r["metric"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned()))
                .collect();
            let value = r["value"][1]
                .as_str()
                .and_then(|s| s.parse().ok())
                .unwrap_or(f64::NAN);
            (labels, value)
        })
        .collect()
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Starts `vramwatch serve --demo` on a free port; returns it and its address.
pub(crate) fn start_vramwatch(interval: &str) -> (Killed, SocketAddr) {
    serve(&["--demo", "--interval", interval])
}

/// `vramwatch serve ARGS --listen 127.0.0.1:0`; returns it and the address
/// it says it listens on.
pub(crate) fn serve(args: &[&str]) -> (Killed, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramwatch"))
        .arg("serve")
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("vramwatch starts");
    let stderr = child.stderr.take().expect("stderr piped");
    let child = Killed(child);
    let mut line = String::new();
    BufReader::new(stderr)
        .read_line(&mut line)
        .expect("vramwatch says where it listens");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    (child, addr)
}

pub(crate) fn wait_until(what: &str, deadline: Instant, mut ok: impl FnMut() -> bool) {
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub(crate) fn start_prometheus(dir: &Path, target: SocketAddr) -> (Killed, SocketAddr) {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: vramwatch\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("prometheus starts");
    (Killed(child), addr)
}

pub(crate) fn label<'a>(m: &'a HashMap<String, String>, k: &str) -> &'a str {
    m.get(k).map(String::as_str).unwrap_or("")
}

#[test]
fn prometheus_stores_what_the_snapshot_reports() {
    if !common::tool_available("prometheus") {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(25);
    // One snapshot for the whole test: /snapshot and every scrape agree.
    let (_vw, vw) = start_vramwatch("60s");
    let dir = tempfile::tempdir().unwrap();
    let (_prom, prom) = start_prometheus(dir.path(), vw);
    let log = || std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();
    wait_until("Prometheus to start", deadline, || {
        matches!(get(prom, "/-/ready"), Ok((200, _)))
    });
    wait_until("two successful scrapes", deadline, || {
        let n = query(prom, "count_over_time(up{job=\"vramwatch\"}[1m])");
        let up = query(prom, "up{job=\"vramwatch\"}");
        n.first().is_some_and(|(_, v)| *v >= 2.0) && up.first().is_some_and(|(_, v)| *v == 1.0)
    });

    let series = query(
        prom,
        "{__name__=~\"DCGM_FI_DEV_FB_USED|vramwatch_process_memory_bytes|vramwatch_snapshot_seq|vramwatch_process_info\"}",
    );
    let (status, body) = get(vw, "/snapshot").unwrap();
    assert_eq!(status, 200);
    let snap: Value = serde_json::from_str(&body).unwrap();
    let of = |name: &str| -> Vec<&(HashMap<String, String>, f64)> {
        series
            .iter()
            .filter(|(m, _)| label(m, "__name__") == name)
            .collect()
    };
    let seq = of("vramwatch_snapshot_seq");
    assert_eq!(seq.len(), 1, "{}", log());
    assert_eq!(
        seq[0].1,
        snap["seq"].as_f64().unwrap(),
        "Prometheus and /snapshot show the same snapshot"
    );

    let fb = of("DCGM_FI_DEV_FB_USED");
    let gpus = snap["gpus"].as_array().unwrap();
    assert_eq!(fb.len(), gpus.len());
    for g in gpus {
        let index = g["index"].as_u64().unwrap().to_string();
        let used = g["mem"]["used"].as_u64().unwrap();
        let s = fb
            .iter()
            .find(|(m, _)| label(m, "gpu") == index)
            .unwrap_or_else(|| panic!("no DCGM_FI_DEV_FB_USED for GPU {index}"));
        assert_eq!(
            s.1,
            used.div_ceil(MIB) as f64,
            "GPU {index}: MiB as dcgm-exporter reports"
        );
        assert_eq!(label(&s.0, "device"), format!("nvidia{index}"));
        assert_eq!(label(&s.0, "modelName"), "NVIDIA H200");
        assert_eq!(label(&s.0, "Hostname"), "sim-node");
        assert!(label(&s.0, "UUID").starts_with("GPU-"));
    }

    let procs = of("vramwatch_process_memory_bytes");
    let infos = of("vramwatch_process_info");
    let listed: Vec<&Value> = snap["procs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["mem"].is_u64())
        .collect();
    assert!(!listed.is_empty());
    assert_eq!(procs.len(), listed.len());
    for p in listed {
        let pid = p["pid"].as_u64().unwrap().to_string();
        let gpu = p["gpu"].as_u64().unwrap().to_string();
        let s = procs
            .iter()
            .find(|(m, _)| label(m, "pid") == pid && label(m, "gpu") == gpu)
            .unwrap_or_else(|| panic!("no series for pid {pid} on GPU {gpu}"));
        assert_eq!(s.1, p["mem"].as_u64().unwrap() as f64, "pid {pid}: bytes");
        // Who it is: on its info series, joined by pid and start time.
        let start = label(&s.0, "start_time");
        assert_eq!(start, p["start_time"].as_u64().unwrap().to_string());
        let info = infos
            .iter()
            .find(|(m, _)| label(m, "pid") == pid && label(m, "start_time") == start)
            .unwrap_or_else(|| panic!("no vramwatch_process_info for pid {pid}"));
        assert_eq!(info.1, 1.0);
        assert_eq!(label(&info.0, "user"), p["user"].as_str().unwrap_or(""));
        assert_eq!(
            label(&info.0, "container_id"),
            p["container"].as_str().unwrap_or("")
        );
    }
    // The join as a dashboard writes it.
    let joined = query(
        prom,
        "vramwatch_process_memory_bytes * on(instance, pid, start_time) group_left(user, command, container_id) vramwatch_process_info",
    );
    assert_eq!(joined.len(), procs.len());
    assert!(joined.iter().all(|(m, _)| m.contains_key("command")));
}

/// Lines `promtool check metrics` prints for `text`, and its exit code.
fn promtool_check(text: &str) -> (i32, Vec<String>) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .chain(String::from_utf8_lossy(&out.stderr).lines())
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    (out.status.code().unwrap_or(-1), lines)
}

#[test]
fn promtool_accepts_the_metrics() {
    if !common::tool_available("promtool") {
        return;
    }
    let (_vw, vw) = start_vramwatch("1s");
    let deadline = Instant::now() + Duration::from_secs(15);
    wait_until("the first snapshot", deadline, || {
        matches!(get(vw, "/healthz"), Ok((200, _)))
    });
    let (status, text) = get(vw, "/metrics").unwrap();
    assert_eq!(status, 200);

    // The whole page parses; the only lint findings are the ones
    // dcgm-exporter's own names carry (its `modelName` label, its counters
    // without `_total`, `DCGM_FI_DEV_PCIE_REPLAY_COUNTER`), kept for
    // dashboard compatibility.
    let (code, lines) = promtool_check(&text);
    assert!(
        code == 0 || code == 3,
        "promtool failed ({code}): {lines:?}"
    );
    for l in &lines {
        let dcgm_label = l.starts_with("DCGM_FI_")
            && l.ends_with("label names should be written in 'snake_case' not 'camelCase'");
        let dcgm_counter = l.starts_with("DCGM_FI_")
            && (l.ends_with(" counter metrics should have \"_total\" suffix")
                || l.ends_with(" metric name should not include type 'counter'"));
        assert!(
            dcgm_label || dcgm_counter,
            "unexpected promtool finding: {l}"
        );
    }

    // The same page, gzip-compressed when asked (as Prometheus asks).
    // (The demo samples every second: compare the families, not values;
    // and families still come in the first seconds, as the growth rates
    // do once a trend is 4 s old, so compare pages fetched together.)
    let families = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.starts_with("# TYPE "))
            .map(str::to_owned)
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    wait_until(
        "gzip and plain pages with the same families",
        deadline,
        || {
            let zipped = get_gzip(vw, "/metrics");
            assert_eq!(zipped.0, "gzip");
            families(&zipped.1) == families(&get(vw, "/metrics").unwrap().1)
        },
    );

    // vramwatch's own families are clean.
    let own: String = text
        .lines()
        .filter(|l| {
            l.starts_with("vramwatch_")
                || l.starts_with("# HELP vramwatch_")
                || l.starts_with("# TYPE vramwatch_")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(own.contains("vramwatch_process_memory_bytes{"));
    let (code, lines) = promtool_check(&own);
    assert_eq!((code, lines), (0, Vec::<String>::new()));
}

#[test]
fn a_bad_listen_address_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_vramwatch"))
        .args(["serve", "--demo", "--listen", "localhost"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--listen") && err.contains("`localhost` is not a listen address"),
        "{err}"
    );
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_vramwatch"))
        .args(["serve", "--demo", "--listen", &addr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("cannot listen on {addr}")), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn sigterm_stops_it_cleanly() {
    let (mut vw, addr) = start_vramwatch("1s");
    let deadline = Instant::now() + Duration::from_secs(10);
    wait_until("the first snapshot", deadline, || {
        matches!(get(addr, "/healthz"), Ok((200, _)))
    });
    let pid = nix::unistd::Pid::from_raw(vw.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let mut status = None;
    wait_until("vramwatch to exit", deadline, || {
        status = vw.0.try_wait().unwrap();
        status.is_some()
    });
    assert_eq!(status.unwrap().code(), Some(0));
    assert!(TcpStream::connect(addr).is_err(), "the port is closed");
}

/// Raises this test process's open-file limit to at least `n` (to the hard
/// limit at most); false, with a notice, when it stays below.
fn fds_for(n: u64) -> bool {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return false;
    };
    if soft >= n || (hard >= n && setrlimit(Resource::RLIMIT_NOFILE, n, hard).is_ok()) {
        return true;
    }
    eprintln!("SKIPPED: the open-file limit ({soft}, hard {hard}) cannot be raised to {n}");
    false
}

/// Opens `n` connections to `to` from the loopback addresses `from` in
/// turn, sending nothing.
async fn idle_connections(to: SocketAddr, from: &[&str], n: usize) -> Vec<tokio::net::TcpStream> {
    let mut held = Vec::with_capacity(n);
    for i in 0..n {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.bind(format!("{}:0", from[i % from.len()]).parse().unwrap())
            .unwrap();
        held.push(sock.connect(to).await.unwrap());
    }
    held
}

/// `/healthz` and `/metrics` from 127.0.0.1, each answered within a second.
fn answers_within_a_second(vw: SocketAddr, what: &str) {
    for path in ["/healthz", "/metrics"] {
        let t = Instant::now();
        let got = get(vw, path);
        let took = t.elapsed();
        assert!(
            matches!(got, Ok((200, _))),
            "{path} with {what}: {got:?} after {took:?}"
        );
        assert!(
            took < Duration::from_secs(1),
            "{path} with {what}: {took:?}"
        );
    }
}

#[test]
fn healthz_and_metrics_answer_while_1100_idle_connections_are_held() {
    if !fds_for(4096) {
        return;
    }
    let (_vw, vw) = start_vramwatch("1s");
    let deadline = Instant::now() + Duration::from_secs(15);
    wait_until("the first snapshot", deadline, || {
        matches!(get(vw, "/healthz"), Ok((200, _)))
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // From one address: it keeps at most its share, the newest.
    let held = rt.block_on(idle_connections(vw, &["127.0.0.2"], 1100));
    std::thread::sleep(Duration::from_millis(300));
    answers_within_a_second(vw, "1,100 idle connections from 127.0.0.2");
    // Even a newcomer from the flooding address gets in.
    let sock = TcpStream::connect(vw);
    assert!(sock.is_ok());
    drop((held, sock));
    // Spread over twenty addresses, more than the server keeps in all.
    let from: Vec<String> = (10..30).map(|i| format!("127.0.0.{i}")).collect();
    let from: Vec<&str> = from.iter().map(String::as_str).collect();
    let held = rt.block_on(idle_connections(vw, &from, 1100));
    std::thread::sleep(Duration::from_millis(300));
    answers_within_a_second(vw, "1,100 idle connections from 20 addresses");
    drop(held);
}

/// A client that keeps `n` connections open from `from`, opening a new one
/// whenever the server closes one, until `until`.
async fn hostile(to: SocketAddr, from: Vec<String>, n: usize, until: Instant) -> u64 {
    use tokio::io::AsyncReadExt;
    let opened = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let ip = from[i % from.len()].clone();
            let opened = opened.clone();
            tokio::spawn(async move {
                while Instant::now() < until {
                    let sock = tokio::net::TcpSocket::new_v4().unwrap();
                    sock.bind(format!("{ip}:0").parse().unwrap()).unwrap();
                    let Ok(mut c) = sock.connect(to).await else {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    };
                    opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let mut b = [0u8; 64];
                    let _ = tokio::time::timeout_at(until.into(), c.read(&mut b)).await;
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    opened.load(std::sync::atomic::Ordering::Relaxed)
}

/// Scrapes every 500 ms while a client reconnects to keep 1,030
/// connections open; every scrape must succeed (within Prometheus's
/// default 10 s timeout). `VRAMWATCH_FLOOD_SCRAPES` sets how many (20).
#[test]
fn scrapes_succeed_while_a_client_keeps_1030_connections_open() {
    if !fds_for(4096) {
        return;
    }
    let scrapes: u32 = std::env::var("VRAMWATCH_FLOOD_SCRAPES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let (_vw, vw) = start_vramwatch("1s");
    let deadline = Instant::now() + Duration::from_secs(15);
    wait_until("the first snapshot", deadline, || {
        matches!(get(vw, "/healthz"), Ok((200, _)))
    });
    let until = Instant::now() + Duration::from_millis(500 * u64::from(scrapes) + 1500);
    let attacker = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let from = (2..6).map(|i| format!("127.0.0.{i}")).collect();
        rt.block_on(hostile(vw, from, 1030, until))
    });
    std::thread::sleep(Duration::from_millis(1000));
    let mut ok = 0;
    let mut slowest = Duration::ZERO;
    for _ in 0..scrapes {
        let t = Instant::now();
        if matches!(get(vw, "/metrics"), Ok((200, ref b)) if b.contains("vramwatch_snapshot_seq")) {
            ok += 1;
        }
        slowest = slowest.max(t.elapsed());
        std::thread::sleep(Duration::from_millis(500).saturating_sub(t.elapsed()));
    }
    let opened = attacker.join().unwrap();
    eprintln!(
        "flood: {ok} of {scrapes} scrapes succeeded (slowest {slowest:?}) while a client opened {opened} connections to keep 1,030 open"
    );
    assert_eq!(ok, scrapes, "slowest {slowest:?}");
}
