//! CPU cost of one host-facts refresh for a few PIDs (a tool: the H200 run
//! showed our own overhead is not in NVML).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)] // a test or a tool: panicking is its way to fail, printing its output
use std::time::Instant;

use vramwatch::model::ProcSample;
use vramwatch::source::HostFacts;
use vramwatch::source::host::ProcHost;

fn main() {
    let pids: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .take(12)
        .collect();
    let mut host = ProcHost::new(Vec::new());
    let mut procs: Vec<ProcSample> = pids
        .iter()
        .map(|&pid| ProcSample {
            pid,
            ..Default::default()
        })
        .collect();
    host.enrich(0, &mut procs, true);
    let cpu0 = vramwatch::commands::bench_sampler::cpu_seconds();
    let t = Instant::now();
    let n = 200;
    for _ in 0..n {
        host.enrich(0, &mut procs, true);
    }
    println!(
        "{} pids: {:?} wall, {:.0} us CPU per enrich",
        pids.len(),
        t.elapsed() / n,
        (vramwatch::commands::bench_sampler::cpu_seconds() - cpu0) * 1e6 / n as f64
    );
}
