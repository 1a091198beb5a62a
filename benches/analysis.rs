//! Cost of the analysis per snapshot: `Analyzer::observe` on the sim
//! `crowded` scenario (8 GPUs × 300 processes at 1 Hz) after a minute of
//! warm-up, so every window is full and the leak buckets are in use; and
//! one robust-slope estimate of a full 64-point window.
//!
//!     cargo bench --bench analysis
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)] // a test or a tool: panicking is its way to fail, printing its output

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};

use vramwatch::analysis::slope::{MAX_POINTS, Window};
use vramwatch::analysis::{AnalysisConfig, Analyzer};
use vramwatch::model::Snapshot;
use vramwatch::source::sim::SimWorld;

const T0: u64 = 1_764_000_000_000;
const WARM_UP: u64 = 60;
const MEASURED: u64 = 240;

fn snapshots(name: &str) -> Vec<Snapshot> {
    let world = SimWorld::new(name, 7, T0).expect("scenario exists");
    (0..WARM_UP + MEASURED)
        .map(|i| world.snapshot(i, T0 + i * 1000, "me"))
        .collect()
}

/// Times `observe` on the snapshots after the warm-up; when they run out,
/// starts a fresh analyzer and warms it up again (untimed).
fn bench_observe(c: &mut Criterion, label: &str, snaps: &[Snapshot]) {
    let cfg = AnalysisConfig::default();
    let warm = |a: &mut Analyzer| {
        for s in &snaps[..WARM_UP as usize] {
            a.observe(s);
        }
    };
    c.bench_function(label, |b| {
        let mut a = Analyzer::new(&cfg);
        warm(&mut a);
        let mut next = WARM_UP as usize;
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if next == snaps.len() {
                    a = Analyzer::new(&cfg);
                    warm(&mut a);
                    next = WARM_UP as usize;
                }
                let t = Instant::now();
                black_box(a.observe(black_box(&snaps[next])));
                total += t.elapsed();
                next += 1;
            }
            total
        });
    });
}

fn observe(c: &mut Criterion) {
    let crowded = snapshots("crowded");
    assert_eq!(crowded[WARM_UP as usize].procs.len(), 300);
    bench_observe(c, "observe/crowded_8gpu_300proc", &crowded);
    bench_observe(c, "observe/leak_1gpu_2proc", &snapshots("leak"));
}

fn estimate(c: &mut Criterion) {
    let mut w = Window::new(Duration::from_secs(64));
    for i in 0..MAX_POINTS as u64 {
        let v = 1e10 + 3e7 * i as f64 + ((i * 7919) % 13) as f64 * 1e6;
        w.push(i * 1000, v);
    }
    c.bench_function("window/estimate_64_points", |b| {
        b.iter(|| black_box(black_box(&w).estimate()))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = observe, estimate
}
criterion_main!(benches);
