//! Scores the corpus (every set in `tests/fixtures/corpus/` up to
//! `seventh/`; `eighth/` was held out from the session that recorded it,
//! and the next held-out set should be left out the same way) with
//! the default analysis and then with each variant given, one summary line
//! each: a tool for trying a forecaster parameter on real recordings
//! before changing it. A variant is `key=value[,key=value...]`, keys the
//! `EnvelopeParams` fields below (seconds for durations) and `demand`
//! (0: the driver's figures alone).
//! `cargo run --release --example sweep_envelope -- hold=2 "hold=2,min_regime=3" demand=0`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a tool: panicking is its way to fail
use std::path::PathBuf;
use std::time::Duration;
use vramwatch::analysis::AnalysisConfig;
use vramwatch::analysis::truth::{RunScore, Summary};
use vramwatch::commands::score::{score_file, truth_beside};

fn files() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus");
    let mut v = vec![];
    for set in [
        "tune", "heldout", "quick", "after", "fresh", "late", "later", "last", "fifth", "sixth",
        "seventh",
    ] {
        let mut f: Vec<PathBuf> = std::fs::read_dir(root.join(set))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(".jsonl.zst"))
            .collect();
        f.sort();
        v.extend(f);
    }
    v
}

fn main() {
    let fs = files();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let variants: Vec<(String, AnalysisConfig)> = {
        let mut v = vec![("default".to_string(), AnalysisConfig::default())];
        for a in &args {
            let mut c = AnalysisConfig::default();
            for kv in a.split(',') {
                let (k, val) = kv.split_once('=').unwrap();
                let x: f64 = val.parse().unwrap();
                if k == "demand" {
                    c.allocator_demand = x != 0.0;
                    continue;
                }
                let e = &mut c.envelope;
                match k {
                    "hold" => e.hold = Duration::from_secs_f64(x),
                    "min_regime" => e.min_regime = Duration::from_secs_f64(x),
                    "min_points" => e.min_points = x as usize,
                    "max_slip" => e.max_slip = x,
                    "max_slip_rel" => e.max_slip_rel = x,
                    "decel" => e.decel = x,
                    "decel_after" => e.decel_after = Duration::from_secs_f64(x),
                    "max_extrapolation" => e.max_extrapolation = x,
                    "max_fill" => e.max_fill = x,
                    "shift_frac" => e.shift_frac = x,
                    _ => panic!("{k}"),
                }
            }
            v.push((a.clone(), c));
        }
        v
    };
    for (name, cfg) in variants {
        let runs: Vec<RunScore> = fs
            .iter()
            .map(|f| score_file(f, &truth_beside(f), &cfg).unwrap())
            .collect();
        let s = Summary::of(&runs);
        let fa: Vec<String> = runs
            .iter()
            .filter(|r| !r.false_alarms.is_empty())
            .map(|r| r.run.clone())
            .collect();
        println!(
            "{name}: held {}/{} settled {}/{} atrisk {} shown30 {}/{} leak {:?} never {} FA {}/{} {:?}",
            s.held,
            s.checkpoints,
            s.settled_held,
            s.settled_checkpoints,
            s.at_risk_only,
            s.shown_by_30,
            s.could_show_by_30,
            s.slowest_leak_flag_s,
            s.never_flagged,
            s.false_alarm_runs,
            s.no_alarm_runs,
            fa
        );
    }
}
