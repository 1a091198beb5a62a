//! Recording benchmark: 24 h of an 8-GPU node crowded with 300 processes
//! (the `crowded` simulator scenario), one snapshot a second, written as
//! `.jsonl` and `.jsonl.zst`; then what replay needs from those files.
//!
//! Prints: file size per GPU-day, write time per snapshot, time to open and
//! decode the first snapshot, time to jump to the last snapshot, peak RSS
//! of opening and replaying. `VRAMWATCH_BENCH_SNAPSHOTS=N` records N
//! snapshots instead of 86,400 (sizes are then scaled to a day). The files
//! are kept in `target/bench-record/` and reused when they already hold N
//! snapshots; delete them to measure writing again.
//! `VRAMWATCH_BENCH_SCENARIO` picks another simulator scenario;
//! `VRAMWATCH_BENCH_LEVEL` and `VRAMWATCH_BENCH_BLOCK` override the zstd
//! level and the snapshots per block, `VRAMWATCH_BENCH_FLUSH_MS` the
//! flush period of `.zst` files; `VRAMWATCH_BENCH_QUICK=1` skips the
//! criterion runs.
//!
//! Run: `cargo bench --bench record`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)] // a test or a tool: panicking is its way to fail, printing its output

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use vramwatch::model::{ProcSample, Snapshot};
use vramwatch::record::{Header, Recording, Writer, WriterOptions};
use vramwatch::sampler::{OomCounts, diff_events};
use vramwatch::source::sim::SimWorld;

const T0: u64 = 1_764_000_000_000;
const DAY: u64 = 86_400;

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

/// Peak resident memory of this process since the last reset, KiB.
fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resets the peak (Linux: writing 5 to clear_refs).
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn current_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Records `n` snapshots of the crowded node to both files, timing the
/// writers apart from the simulator.
fn record(scenario: &str, n: u64, plain: &Path, zst: &Path) {
    let world = SimWorld::new(scenario, 1, T0).expect("scenario");
    let header = Header::new(&world.info(), 1000, T0);
    fn env<T: std::str::FromStr>(k: &str) -> Option<T> {
        std::env::var(k).ok().and_then(|v| v.parse().ok())
    }
    let defaults = WriterOptions::default();
    let opts = WriterOptions {
        level: env("VRAMWATCH_BENCH_LEVEL").unwrap_or(defaults.level),
        block_snapshots: env("VRAMWATCH_BENCH_BLOCK").unwrap_or(defaults.block_snapshots),
        flush_every: env("VRAMWATCH_BENCH_FLUSH_MS")
            .map(Duration::from_millis)
            .unwrap_or(defaults.flush_every),
        max_size: u64::MAX,
        overwrite: true,
        // The figures are about the format; syncing is the disk's cost.
        sync_every: Duration::from_secs(3600),
        ..WriterOptions::default()
    };
    let mut wp = Writer::create(plain, header.clone(), opts.clone()).expect("create plain");
    let mut wz = Writer::create(zst, header, opts).expect("create zst");
    let (mut t_gen, mut t_plain, mut t_zst) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let mut prev: Option<Snapshot> = None;
    let mut counts = OomCounts::default();
    let mut events = 0usize;
    // What `record` reads: process utilisation and host facts (CPU %,
    // RSS) every `proc_util_interval` (nothing shows them), the rest every
    // round; VRAMWATCH_BENCH_EVERY_ROUND=1 reads everything every round,
    // an upper bound for a dashboard recording with all columns on screen
    // (host facts every round, process utilisation every 2 s).
    let every = vramwatch::sampler::Schedule::default().proc_util_every();
    let every_round = env::<u8>("VRAMWATCH_BENCH_EVERY_ROUND") == Some(1);
    let mut held: HashMap<(u32, u32, u64), ProcSample> = HashMap::new();
    for i in 0..n {
        let t = Instant::now();
        let mut s = world.snapshot(i, T0 + i * 1000, "me");
        if !every_round && i % every == 0 {
            held = s.procs.iter().map(|p| (key(p), p.clone())).collect();
        } else if !every_round {
            hold(&mut s, &held);
        }
        if let Some(p) = &prev {
            s.events = diff_events(p, &s, &mut counts);
        }
        events += s.events.len();
        t_gen += t.elapsed();
        let t = Instant::now();
        wp.write(&s);
        t_plain += t.elapsed();
        let t = Instant::now();
        wz.write(&s);
        t_zst += t.elapsed();
        prev = Some(s);
        if i % 3600 == 3599 {
            eprintln!("  recorded {} h of {}", (i + 1) / 3600, n / 3600);
        }
    }
    wp.finish().expect("finish plain");
    wz.finish().expect("finish zst");
    println!(
        "write: {n} snapshots ({events} events); simulator {:.1} s; writer .jsonl {:.0} µs/snapshot, .jsonl.zst {:.0} µs/snapshot",
        t_gen.as_secs_f64(),
        t_plain.as_secs_f64() * 1e6 / n as f64,
        t_zst.as_secs_f64() * 1e6 / n as f64
    );
}

fn key(p: &ProcSample) -> (u32, u32, u64) {
    (p.gpu, p.pid, p.start_time)
}

/// Keeps the figures of `held` (the last round that read them) that the
/// sampler reads only every `proc_util_interval`, as it does: a process
/// started since has no utilisation until the next read (its host facts
/// are read at once, its CPU % needs a second read).
fn hold(s: &mut Snapshot, held: &HashMap<(u32, u32, u64), ProcSample>) {
    for p in &mut s.procs {
        match held.get(&key(p)) {
            Some(h) => {
                (p.sm_util, p.mem_util, p.enc_util, p.dec_util) =
                    (h.sm_util, h.mem_util, h.enc_util, h.dec_util);
                (p.cpu_pct, p.rss) = (h.cpu_pct, h.rss);
            }
            None => {
                (p.sm_util, p.mem_util, p.enc_util, p.dec_util) = (None, None, None, None);
                p.cpu_pct = None;
            }
        }
    }
}

fn holds(path: &Path, n: u64) -> bool {
    Recording::open(path).is_ok_and(|r| r.len() as u64 == n)
}

fn main() {
    let n: u64 = std::env::var("VRAMWATCH_BENCH_SNAPSHOTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DAY);
    let scenario = std::env::var("VRAMWATCH_BENCH_SCENARIO").unwrap_or_else(|_| "crowded".into());
    let gpus = SimWorld::new(&scenario, 1, T0)
        .expect("scenario")
        .info()
        .gpus
        .len() as f64;
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-record");
    std::fs::create_dir_all(&dir).expect("bench dir");
    let plain = dir.join(format!("{scenario}-{n}.jsonl"));
    let zst = dir.join(format!("{scenario}-{n}.jsonl.zst"));
    if !(holds(&plain, n) && holds(&zst, n)) {
        eprintln!("recording {n} snapshots of the {scenario} scenario ...");
        record(&scenario, n, &plain, &zst);
    } else {
        println!(
            "write: reusing {} (delete it to time writing)",
            dir.display()
        );
    }
    let days = n as f64 / DAY as f64;
    for p in [&plain, &zst] {
        let size = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        println!(
            "size: {}: {:.1} MiB = {:.2} MiB per GPU-day ({:.0} bytes per snapshot)",
            p.file_name().unwrap_or_default().to_string_lossy(),
            mib(size),
            mib(size) / gpus / days,
            size as f64 / n as f64
        );
    }

    for p in [&zst, &plain] {
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        // One cold-ish run first, for the peak memory of opening and
        // replaying (a few blocks in order, then the end).
        let base = current_rss_kib();
        let reset = reset_peak_rss();
        let t = Instant::now();
        let rec = Recording::open(p).expect("open");
        let first = rec.get(0).expect("first");
        let t_first = t.elapsed();
        let t = Instant::now();
        let last = rec.get(rec.len() - 1).expect("last");
        let t_last = t.elapsed();
        for i in 0..rec.len().min(2000) {
            rec.get(i).expect("replay");
        }
        let peak = peak_rss_kib();
        println!(
            "replay {name}: open + first snapshot {:.1} ms, jump to end {:.1} ms ({} GPUs, {} processes); peak RSS {} (process RSS before opening {})",
            t_first.as_secs_f64() * 1e3,
            t_last.as_secs_f64() * 1e3,
            first.gpus.len(),
            last.procs.len(),
            match (reset, peak) {
                (true, Some(k)) => format!("{:.1} MiB", k as f64 / 1024.0),
                _ => "unavailable".into(),
            },
            base.map_or("?".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
        );
        drop(rec);
        if std::env::var("VRAMWATCH_BENCH_QUICK").is_ok() {
            continue;
        }
        let mut c = Criterion::default()
            .configure_from_args()
            .sample_size(10)
            .measurement_time(Duration::from_secs(5));
        c.bench_function(&format!("open + first snapshot ({name})"), |b| {
            b.iter(|| {
                let r = Recording::open(p).expect("open");
                r.get(0).expect("first")
            })
        });
        c.bench_function(&format!("jump to end after open ({name})"), |b| {
            b.iter_batched(
                || {
                    let r = Recording::open(p).expect("open");
                    r.get(0).expect("first");
                    r
                },
                |r| r.get(r.len() - 1).expect("last"),
                BatchSize::PerIteration,
            )
        });
        c.final_summary();
    }
}
