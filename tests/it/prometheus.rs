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
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET path` over HTTP/1.0 (no chunked replies): (status, body).
fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
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
fn query(prom: SocketAddr, q: &str) -> Vec<(HashMap<String, String>, f64)> {
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

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Starts `vramwatch serve --demo` on a free port; returns it and its address.
fn start_vramwatch(interval: &str) -> (Killed, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramwatch"))
        .args([
            "serve",
            "--demo",
            "--interval",
            interval,
            "--listen",
            "127.0.0.1:0",
        ])
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

fn wait_until(what: &str, deadline: Instant, mut ok: impl FnMut() -> bool) {
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn start_prometheus(dir: &Path, target: SocketAddr) -> (Killed, SocketAddr) {
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

fn label<'a>(m: &'a HashMap<String, String>, k: &str) -> &'a str {
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
        "{__name__=~\"DCGM_FI_DEV_FB_USED|vramwatch_process_memory_bytes|vramwatch_snapshot_seq\"}",
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
        assert_eq!(label(&s.0, "user"), p["user"].as_str().unwrap_or(""));
        assert_eq!(
            label(&s.0, "container"),
            p["container"].as_str().unwrap_or("")
        );
    }
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
    // dcgm-exporter's own names carry (its `modelName` label and its energy
    // counter without `_total`), kept for dashboard compatibility.
    let (code, lines) = promtool_check(&text);
    assert!(
        code == 0 || code == 3,
        "promtool failed ({code}): {lines:?}"
    );
    for l in &lines {
        let dcgm_label = l.starts_with("DCGM_FI_")
            && l.ends_with("label names should be written in 'snake_case' not 'camelCase'");
        let dcgm_energy = l
            == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter metrics should have \"_total\" suffix";
        assert!(
            dcgm_label || dcgm_energy,
            "unexpected promtool finding: {l}"
        );
    }

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
