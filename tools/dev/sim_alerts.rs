//! Prints the alerts the analysis raises on a sim scenario (a tool for
//! checking what a change to the estimators does to the demo screens).
//! `cargo run --example sim_alerts -- crowded 60`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)] // a test or a tool: panicking is its way to fail, printing its output

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let scenario = a.first().map_or("demo", String::as_str);
    let secs: u64 = a.get(1).and_then(|s| s.parse().ok()).unwrap_or(60);
    let config = vramwatch::config::Config::default();
    let (_, snaps) = vramwatch::app::fixture::analysed(scenario, 1, secs, "me", &config);
    for s in snaps {
        for al in &s.alerts {
            println!(
                "{} {}",
                (s.snapshot.t_ms - vramwatch::app::fixture::T0_MS) / 1000,
                al.to_event().message
            );
        }
    }
}
