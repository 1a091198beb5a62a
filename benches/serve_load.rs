//! Load test of the exporter on loopback (not a timed test: it reports).
//!
//! `cargo bench --bench serve_load` starts the simulated 4-GPU node with the
//! default schedule (1 s interval, 100 ms fast lane) and the HTTP server as
//! `vramwatch serve` does, records every snapshot for a quiet baseline, then
//! runs N keep-alive clients scraping `/metrics` as fast as they can plus M
//! clients that connect and send nothing, and reports requests/s, latency
//! percentiles, CPU per thread and whether the sampler kept its schedule
//! (gaps between snapshots, fast-lane reads per snapshot, publish lag)
//! compared with the baseline.
//!
//! Environment: VW_LOAD_CLIENTS (200), VW_LOAD_IDLE (50), VW_LOAD_SECS (10),
//! VW_LOAD_BASELINE_SECS (5), VW_LOAD_PATH (/metrics), VW_HTTP_THREADS (1).
//! Bounded: it stops by itself after baseline + load seconds.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)] // a test or a tool: panicking is its way to fail, printing its output

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use vramwatch::analysis::AnalysisConfig;
use vramwatch::export::{self, ServeOptions};
use vramwatch::model::now_ms;
use vramwatch::pipeline::Pipeline;
use vramwatch::sampler::Schedule;
use vramwatch::source::sim::{SimSource, SimWorld};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One snapshot as the consumer saw it.
#[derive(Clone, Copy, Debug)]
struct Seen {
    seq: u64,
    t_ms: u64,
    recv_ms: u64,
    min_reads: u32,
}

/// CPU seconds (user + system) per thread name, from /proc/self/task.
fn cpu_by_thread() -> BTreeMap<String, f64> {
    let tick = 100.0; // USER_HZ on Linux
    let mut out = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for t in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_owned();
        let f: Vec<&str> = stat[close + 2..].split(' ').collect();
        // Fields 14 and 15 of stat; after the comm, indices 11 and 12.
        let ticks: f64 = f.get(11).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0)
            + f.get(12).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        let group = if name.starts_with("vw-gpu") {
            "vw-gpu* (sampler probes)".to_owned()
        } else if name.starts_with("serve_load") {
            "main (load generator)".to_owned()
        } else {
            name
        };
        *out.entry(group).or_insert(0.0) += ticks / tick;
    }
    out
}

fn pct(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

/// Reads one response on a keep-alive connection; returns its body length.
async fn read_response(c: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    buf.clear();
    let mut chunk = [0u8; 64 * 1024];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = c.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    if !head.starts_with("http/1.1 200") {
        return Err(std::io::Error::other(
            head.lines().next().unwrap_or("").to_owned(),
        ));
    }
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| std::io::Error::other("no content-length"))?;
    while buf.len() < head_end + len {
        let n = c.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(len)
}

#[derive(Default)]
struct ClientStats {
    latencies_us: Vec<u32>,
    bytes: u64,
    errors: u64,
}

async fn client(addr: std::net::SocketAddr, path: String, until: Instant) -> ClientStats {
    let mut s = ClientStats::default();
    let req = format!("GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n");
    let mut buf = Vec::with_capacity(64 * 1024);
    while Instant::now() < until {
        let Ok(mut c) = TcpStream::connect(addr).await else {
            s.errors += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = c.set_nodelay(true);
        while Instant::now() < until {
            let t = Instant::now();
            let ok = match c.write_all(req.as_bytes()).await {
                Ok(()) => read_response(&mut c, &mut buf).await,
                Err(e) => Err(e),
            };
            match ok {
                Ok(n) => {
                    s.latencies_us
                        .push(t.elapsed().as_micros().min(u32::MAX as u128) as u32);
                    s.bytes += n as u64;
                }
                Err(_) => {
                    s.errors += 1;
                    break; // reconnect
                }
            }
        }
    }
    s
}

/// Connects and sends nothing; returns when the server closed it (seconds
/// after start) or `None` if it was still open at `until`.
async fn idle_client(addr: std::net::SocketAddr, start: Instant, until: Instant) -> Option<f64> {
    let mut c = TcpStream::connect(addr).await.ok()?;
    let mut b = [0u8; 256];
    match tokio::time::timeout_at(until.into(), c.read(&mut b)).await {
        Ok(_) => Some(start.elapsed().as_secs_f64()),
        Err(_) => None,
    }
}

fn schedule_report(label: &str, seen: &[Seen], interval_ms: u64) {
    if seen.len() < 2 {
        println!("  {label}: {} snapshots (too few)", seen.len());
        return;
    }
    let mut gaps: Vec<u32> = seen
        .windows(2)
        .map(|w| w[1].t_ms.saturating_sub(w[0].t_ms) as u32)
        .collect();
    gaps.sort_unstable();
    let mut lag: Vec<u32> = seen
        .iter()
        .map(|s| s.recv_ms.saturating_sub(s.t_ms) as u32)
        .collect();
    lag.sort_unstable();
    let mut reads: Vec<u32> = seen.iter().map(|s| s.min_reads).collect();
    reads.sort_unstable();
    let seq_gaps = seen.windows(2).filter(|w| w[1].seq != w[0].seq + 1).count();
    println!(
        "  {label}: {} snapshots, seq {}..{} ({} skipped in the stream); gap between snapshots ms min/median/max {}/{}/{} (interval {interval_ms}); publish lag ms median/max {}/{}; fast-lane reads per snapshot (fewest GPU) min/median {}/{}",
        seen.len(),
        seen[0].seq,
        seen[seen.len() - 1].seq,
        seq_gaps,
        gaps[0],
        pct(&gaps, 0.5),
        gaps[gaps.len() - 1],
        pct(&lag, 0.5),
        lag[lag.len() - 1],
        reads[0],
        pct(&reads, 0.5),
    );
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("serve_load: a load test; run it with `cargo bench --bench serve_load`");
        return;
    }
    let clients = env("VW_LOAD_CLIENTS", 200) as usize;
    let idle = env("VW_LOAD_IDLE", 50) as usize;
    let secs = env("VW_LOAD_SECS", 10);
    let baseline = env("VW_LOAD_BASELINE_SECS", 5);
    let threads = env("VW_HTTP_THREADS", 1) as usize;
    let path = std::env::var("VW_LOAD_PATH").unwrap_or_else(|_| "/metrics".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());

    // The pipeline on its own thread, as `vramwatch serve` has it.
    let schedule = Schedule::default();
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let world = SimWorld::new("demo", 1, now_ms().saturating_sub(60_000)).expect("demo");
    let pipeline = Pipeline::start(
        Box::new(SimSource::new(world, "me".into())),
        schedule,
        AnalysisConfig::default(),
    )
    .expect("pipeline");
    let server = export::Server::start(
        export::bind("127.0.0.1:0").expect("bind"),
        pipeline.hub(),
        ServeOptions {
            threads,
            ..ServeOptions::default()
        },
    )
    .expect("server");
    let addr = server.local_addr();
    let rx = pipeline.hub().subscribe_all(100_000);
    let rec = seen.clone();
    std::thread::spawn(move || {
        for a in rx {
            let s = &a.snapshot;
            let min_reads = s.gpus.iter().map(|g| g.mem_reads).min().unwrap_or(0);
            if let Ok(mut v) = rec.lock() {
                v.push(Seen {
                    seq: s.seq,
                    t_ms: s.t_ms,
                    recv_ms: now_ms(),
                    min_reads,
                });
            }
        }
    });
    let stopper = std::thread::Builder::new()
        .name("stopper".into())
        .spawn(move || {
            std::thread::sleep(Duration::from_secs(baseline + secs + 2));
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(server.stop());
            pipeline.stop();
        })
        .expect("thread");

    println!(
        "serve_load: {cores} cores (shared with other work: figures vary), {clients} clients on {path} + {idle} idle connections, {secs} s after a {baseline} s quiet baseline, server threads {threads}"
    );
    std::thread::sleep(Duration::from_secs(baseline));
    let cpu0 = cpu_by_thread();
    let load_start_ms = now_ms();

    // The load generator: its own runtime, on this (main) thread.
    let load = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let start = Instant::now();
    let until = start + Duration::from_secs(secs);
    let (stats, idle_closed) = load.block_on(async {
        let idle_tasks: Vec<_> = (0..idle)
            // Watched past the end, to see the header timeout close them.
            .map(|_| tokio::spawn(idle_client(addr, start, until + Duration::from_secs(2))))
            .collect();
        let tasks: Vec<_> = (0..clients)
            .map(|_| tokio::spawn(client(addr, path.clone(), until)))
            .collect();
        let mut all = ClientStats::default();
        for t in tasks {
            if let Ok(s) = t.await {
                all.latencies_us.extend(s.latencies_us);
                all.bytes += s.bytes;
                all.errors += s.errors;
            }
        }
        let mut closed = Vec::new();
        for t in idle_tasks {
            if let Ok(Some(at)) = t.await {
                closed.push(at);
            }
        }
        (all, closed)
    });
    let elapsed = start.elapsed().as_secs_f64();
    let load_end_ms = now_ms();
    let cpu1 = cpu_by_thread();

    let mut lat = stats.latencies_us;
    lat.sort_unstable();
    let n = lat.len();
    println!(
        "  requests: {n} in {elapsed:.1} s = {:.0} requests/s, {:.1} MB/s of bodies, {} errors",
        n as f64 / elapsed,
        stats.bytes as f64 / elapsed / 1e6,
        stats.errors
    );
    println!(
        "  latency ms: p50 {:.2}, p90 {:.2}, p99 {:.2}, p99.9 {:.2}, max {:.2}",
        pct(&lat, 0.5) as f64 / 1000.0,
        pct(&lat, 0.9) as f64 / 1000.0,
        pct(&lat, 0.99) as f64 / 1000.0,
        pct(&lat, 0.999) as f64 / 1000.0,
        lat.last().copied().unwrap_or(0) as f64 / 1000.0
    );
    println!(
        "  idle connections: {} of {idle} closed by the server during the run{}",
        idle_closed.len(),
        if idle_closed.is_empty() {
            String::new()
        } else {
            format!(
                " (first at {:.1} s, last at {:.1} s: the header timeout)",
                idle_closed.iter().cloned().fold(f64::MAX, f64::min),
                idle_closed.iter().cloned().fold(0.0, f64::max)
            )
        }
    );
    println!("  CPU seconds during the load, by thread:");
    for (name, v) in &cpu1 {
        let d = v - cpu0.get(name).copied().unwrap_or(0.0);
        if d >= 0.01 {
            println!(
                "    {name:<28} {d:.2} s ({:.0} % of one core)",
                100.0 * d / elapsed
            );
        }
    }
    let _ = stopper.join();
    let seen = seen.lock().map(|v| v.clone()).unwrap_or_default();
    println!("  sampler schedule:");
    let interval_ms = schedule.interval.as_millis() as u64;
    let quiet: Vec<Seen> = seen
        .iter()
        .copied()
        .filter(|s| s.t_ms < load_start_ms)
        .collect();
    let busy: Vec<Seen> = seen
        .iter()
        .copied()
        .filter(|s| s.t_ms >= load_start_ms && s.t_ms <= load_end_ms)
        .collect();
    schedule_report("quiet", &quiet, interval_ms);
    schedule_report("under load", &busy, interval_ms);
}
