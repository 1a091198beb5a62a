//! Scores the analysis against a recording: leak flags and the forecasts
//! 60, 30 and 10 s before each suspected OOM, as markdown rows for
//! docs/analysis.md.  `cargo run --example score_recording -- FILE [NAME]`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)] // a test or a tool: panicking is its way to fail, printing its output
use vramwatch::analysis::AnalysisConfig;
use vramwatch::analysis::scorecard::{Scorecard, score};
use vramwatch::record::Recording;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: score_recording FILE [NAME]");
        std::process::exit(2);
    };
    let name = args.get(1).cloned().unwrap_or_else(|| path.clone());
    let rec = match Recording::open(std::path::Path::new(path)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let snaps: Vec<_> = rec.iter().filter_map(Result::ok).collect();
    let card = score(&AnalysisConfig::default(), &snaps);
    println!("{}", Scorecard::markdown_header());
    for row in card.markdown_rows(&name) {
        println!("{row}");
    }
}
