//! Scores the corpus (every set in `tests/fixtures/corpus/` but those
//! named `hold-out=SET`: a set recorded to be held out is left out until
//! the change it checks is final) with the default analysis and then with
//! each variant given, one summary line each: a tool for trying a
//! forecaster parameter on real recordings before changing it. A variant
//! is `key=value[,key=value...]`, keys the `EnvelopeParams` fields below
//! (seconds for durations) and `demand` (0: the driver's figures alone).
//! `cargo run --release --example sweep_envelope -- hold-out=ninth hold=2 "hold=2,min_regime=3" demand=0`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a tool: panicking is its way to fail
use std::path::PathBuf;
use std::time::Duration;
use vramwatch::analysis::AnalysisConfig;
use vramwatch::analysis::truth::{RunScore, Summary};
use vramwatch::commands::score::{score_file, truth_beside};

/// Every recording of every set but `held_out`, set by set in name order.
fn files(held_out: &[&str]) -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus");
    let mut sets: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("the corpus folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .filter(|p| !held_out.iter().any(|h| p.ends_with(h)))
        .collect();
    sets.sort();
    let mut v = vec![];
    for set in sets {
        let mut f: Vec<PathBuf> = std::fs::read_dir(&set)
            .expect("a corpus set")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(".jsonl.zst"))
            .collect();
        f.sort();
        v.extend(f);
    }
    v
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let held_out: Vec<&str> = args
        .iter()
        .filter_map(|a| a.strip_prefix("hold-out="))
        .collect();
    let fs = files(&held_out);
    println!("{} recordings, held out: {held_out:?}", fs.len());
    let variants: Vec<(String, AnalysisConfig)> = {
        let mut v = vec![("default".to_string(), AnalysisConfig::default())];
        for a in args.iter().filter(|a| !a.starts_with("hold-out=")) {
            let mut c = AnalysisConfig::default();
            for kv in a.split(',') {
                let (k, val) = kv
                    .split_once('=')
                    .expect("a variant is key=value[,key=value]");
                let x: f64 = val.parse().expect("a number after =");
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
                    _ => panic!("unknown key {k}: see the module doc"),
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
