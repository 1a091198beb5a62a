//! Prints what the analysis says about one GPU of a recording, snapshot by
//! snapshot: used, peak, phase, rate, forecast, leak flags. A tool for
//! tuning the estimators on real recordings.
//! `cargo run --example trace_analysis -- FILE GPU [FROM_S]`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)] // a test or a tool: panicking is its way to fail, printing its output

use vramwatch::analysis::{AnalysisConfig, Analyzer};
use vramwatch::model::units::{bytes_short, rate_short};
use vramwatch::record::Recording;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let Some(file) = a.first() else {
        eprintln!("usage: trace_analysis FILE GPU [FROM_S]");
        return;
    };
    let gpu: u32 = a.get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let from: u64 = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
    let rec = match Recording::open(std::path::Path::new(file)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    };
    let mut an = Analyzer::new(&AnalysisConfig::default());
    let t0 = rec.times().first().copied().unwrap_or(0);
    for s in rec.iter().filter_map(Result::ok) {
        an.observe(&s);
        let t = (s.t_ms - t0) / 1000;
        if t < from {
            continue;
        }
        let Some(g) = an.gpu(gpu) else { continue };
        let used = g.mem.map_or(0, |m| m.used);
        let peak = s
            .gpus
            .iter()
            .find(|x| x.index == gpu)
            .and_then(|x| x.mem_peak)
            .unwrap_or(0);
        let leaks: Vec<String> = an
            .processes()
            .filter(|p| p.id.gpu == gpu && p.alive)
            .map(|p| {
                format!(
                    "{}:{}{}{}",
                    p.id.key.pid,
                    p.phase.symbol(),
                    p.rate.map_or(String::new(), |r| rate_short(r.bps)),
                    if p.leak.is_some() { "LEAK" } else { "" }
                )
            })
            .collect();
        println!(
            "{t:>4}s used {:>6} peak {:>6} {:<9} {:>9} {} | {}",
            bytes_short(used),
            bytes_short(peak),
            g.phase.name(),
            g.rate.map_or(String::new(), |r| rate_short(r.bps)),
            g.forecast.map_or(String::new(), |f| format!(
                "{} [base room {} peak room {} rate {}..{}]",
                f.label(),
                bytes_short(f.room.at_troughs),
                bytes_short(f.room.at_peaks),
                rate_short(f.rate.low),
                rate_short(f.rate.high)
            )) + &g
                .at_risk_pct
                .map_or(String::new(), |r| format!(" RISK {r:.1}%")),
            leaks.join(" ")
        );
    }
}
