//! Prints the accuracy table of docs/analysis.md: for each sim scenario,
//! when a leak was flagged and what the GPU forecast said 60, 30 and 10 s
//! before each OOM, against the real OOM time.
//!
//!     cargo run --example forecast_table [SECONDS] [SEED] [--alerts]
//!
//! Every sim scenario is run at 1 Hz for SECONDS (default 400) with the
//! default configuration. Also prints how many leak flags and alerts each
//! scenario raised.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)] // a test or a tool: panicking is its way to fail, printing its output

use vramwatch::analysis::AnalysisConfig;
use vramwatch::analysis::scorecard::{Scorecard, Scorer};
use vramwatch::model::units::plural;
use vramwatch::source::sim::{SCENARIOS, SimWorld};

const T0: u64 = 1_764_000_000_000;

fn main() {
    let all: Vec<String> = std::env::args().skip(1).collect();
    let show_alerts = all.iter().any(|a| a == "--alerts");
    let mut args = all.into_iter().filter(|a| a != "--alerts");
    let secs: u64 = match args.next().map(|a| a.parse()) {
        None => 400,
        Some(Ok(s)) => s,
        Some(Err(e)) => {
            eprintln!("forecast_table: SECONDS must be a whole number: {e}");
            std::process::exit(2);
        }
    };
    let seed: u64 = match args.next().map(|a| a.parse()) {
        None => 7,
        Some(Ok(s)) => s,
        Some(Err(e)) => {
            eprintln!("forecast_table: SEED must be a whole number: {e}");
            std::process::exit(2);
        }
    };
    let cfg = AnalysisConfig::default();
    let mut summary = Vec::new();
    println!("{}", Scorecard::markdown_header());
    for (name, _) in SCENARIOS {
        let world = match SimWorld::new(name, seed, T0) {
            Ok(w) => w,
            Err(e) => {
                eprintln!("forecast_table: {e}");
                std::process::exit(2);
            }
        };
        let mut scorer = Scorer::new(&cfg);
        for i in 0..=secs {
            scorer.observe(&world.snapshot(i, T0 + i * 1000, "me"));
        }
        let card = scorer.finish();
        if show_alerts {
            for a in &card.alerts {
                eprintln!(
                    "{name} +{:>4}s {}",
                    (a.t_ms - T0) / 1000,
                    a.to_event().message
                );
            }
        }
        for row in card.markdown_rows(&format!("sim `{name}`")) {
            println!("{row}");
        }
        let flagged = card
            .procs
            .iter()
            .filter(|p| p.leak_flagged_ms.is_some())
            .count();
        summary.push(format!(
            "- sim `{name}`: {}, {flagged} flagged leaking, {}, {}",
            plural(card.procs.len() as u64, "process", "processes"),
            plural(card.ooms.len() as u64, "OOM", "OOMs"),
            plural(card.alerts.len() as u64, "alert", "alerts")
        ));
    }
    println!();
    println!("{secs} s at 1 Hz, seed {seed}, default configuration:");
    println!();
    for s in summary {
        println!("{s}");
    }
}
