//! One sampler cycle on the simulator, 8 GPUs × 300 processes: what the
//! sampler does per interval (fast-lane reads between normal reads, the
//! normal and slow reads, assembling, host facts, events), on one thread;
//! and the assembling alone on precomputed readings.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)] // a test or a tool: panicking is its way to fail, printing its output

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use vramwatch::app::fixture::T0_MS;
use vramwatch::sampler::{Assembler, OomCounts, Peaks, Schedule, diff_events};
use vramwatch::source::Source;
use vramwatch::source::sim::{SimSource, SimWorld};

fn crowded() -> SimSource {
    let world = SimWorld::new("crowded", 1, T0_MS).expect("scenario");
    SimSource::new(world, "me".into())
}

fn cycle(c: &mut Criterion) {
    let src = crowded();
    let n = src.system().gpus.len();
    let mut probes: Vec<_> = (0..n).map(|i| src.probe(i)).collect();
    let mut host = src.host_facts();
    let mut prev = None;
    let mut t = T0_MS + 60_000;
    let mut seq = 0;
    // The default lanes: slow every 5 s, PCIe and energy every 30 s.
    let schedule = Schedule::default();
    c.bench_function(
        "sampler/cycle 8 GPUs x 300 procs (sim probes, 10 fast reads each)",
        |b| {
            b.iter(|| {
                let mut asm = Assembler::new(n);
                for (i, p) in probes.iter_mut().enumerate() {
                    let mut peaks = Peaks::default();
                    for k in 0..9 {
                        peaks.add(&p.fast(t + k * 100));
                    }
                    asm.fold_peaks(i, peaks);
                    asm.fold_normal(i, p.normal(t + 900, true));
                    if seq % 5 == 0 {
                        asm.fold_slow(i, p.slow(t + 900, schedule.slow_due(seq / 5)));
                    }
                }
                let mut snap = asm.publish(seq, t + 900);
                host.enrich(t + 900, &mut snap.procs, true);
                if let Some(prev) = &prev {
                    black_box(diff_events(prev, &snap, &mut OomCounts::default()));
                }
                prev = Some(snap);
                seq += 1;
                t += 1000;
            })
        },
    );

    // Precomputed readings: the sampler's own work only.
    let t = T0_MS + 60_000;
    let normals: Vec<_> = probes.iter_mut().map(|p| p.normal(t, true)).collect();
    let fasts: Vec<Vec<_>> = probes
        .iter_mut()
        .map(|p| (0..9).map(|k| p.fast(t + k * 100)).collect())
        .collect();
    let prev_snap = {
        let mut asm = Assembler::new(n);
        for (i, r) in normals.iter().enumerate() {
            asm.fold_normal(i, r.clone());
        }
        asm.publish(0, t)
    };
    c.bench_function(
        "sampler/assemble 8 GPUs x 300 procs (readings given)",
        |b| {
            b.iter(|| {
                let mut asm = Assembler::new(n);
                for i in 0..n {
                    let mut peaks = Peaks::default();
                    for f in &fasts[i] {
                        peaks.add(f);
                    }
                    asm.fold_peaks(i, peaks);
                    asm.fold_normal(i, normals[i].clone());
                }
                let snap = asm.publish(1, t + 1000);
                black_box(diff_events(&prev_snap, &snap, &mut OomCounts::default()))
            })
        },
    );
}

criterion_group!(benches, cycle);
criterion_main!(benches);
