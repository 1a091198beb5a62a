//! A trace of the GPU forecaster over one recording of the corpus, for
//! finding out why a checkpoint missed:
//! `VW_TRACE=tests/fixtures/corpus/tune/NAME.jsonl.zst cargo test --lib
//! commands::score::trace -- --ignored --nocapture`. (Here, not in
//! `analysis`, because it reads a recording: `analysis` sits below
//! `record` in the layers.)

use std::path::Path;

use crate::analysis::truth::Truth;
use crate::analysis::{AnalysisConfig, Analyzer, Forecast};
use crate::record::Recording;

/// The recording `VW_TRACE` names, its truth, the truth's GPU and the
/// moment (unix ms) times are printed from: the start of growth.
fn traced() -> Option<(Truth, Recording, u32, u64)> {
    let path = std::env::var("VW_TRACE").ok()?;
    let path = Path::new(&path);
    let truth = Truth::read(&super::truth_beside(path)).unwrap();
    let rec = Recording::open(path).unwrap();
    let gpu = truth.gpu_in(&rec.system()).unwrap();
    let zero = truth.growth_start_unix_ms.unwrap_or(truth.start_unix_ms);
    Some((truth, rec, gpu, zero))
}

#[test]
#[ignore = "a diagnostic: set VW_TRACE to a recording"]
fn trace() {
    let Some((truth, rec, gpu, zero)) = traced() else {
        return;
    };
    let mut a = Analyzer::new(&params());
    let gib = |x: u64| x as f64 / (1u64 << 30) as f64;
    for snap in rec.iter().filter_map(Result::ok) {
        let t = snap.t_ms;
        a.observe(&snap);
        let g = snap.gpus.iter().find(|g| g.index == gpu).unwrap();
        let Some(m) = g.mem else { continue };
        let ga = a.gpu(gpu).unwrap();
        let (cand, why) = a.envelope_state(gpu).unwrap();
        let rel = (t as f64 - zero as f64) / 1000.0;
        let left = truth.oom_unix_ms.map_or("     -".into(), |o| {
            format!("{:6.1}", (o as f64 - t as f64) / 1000.0)
        });
        let fc = |f: Option<Forecast>| {
            f.map_or(String::new(), |f| {
                format!(
                    "{:5.1} ({:5.1}–{}) r {:.2} [{:.2},{:.2}] {}",
                    f.eta_s,
                    f.low_s,
                    f.high_s.map_or("?".into(), |h| format!("{h:5.1}")),
                    f.rate.bps / (1u64 << 30) as f64,
                    f.rate.low / (1u64 << 30) as f64,
                    f.rate.high / (1u64 << 30) as f64,
                    truth
                        .oom_unix_ms
                        .map_or("", |o| if f.contains(o) { "✓" } else { "✗" })
                )
            })
        };
        let leak = a
            .processes()
            .any(|p| p.id.gpu == gpu && p.alive && p.leak.is_some());
        let demand = match a.demand_state(gpu) {
            Some((Some(d), c, why)) if std::env::var_os("VW_DEMAND").is_some() => {
                format!(
                    " | demand {:7.2} {why:>12} {}",
                    gib((m.used as f64 + d).max(0.0) as u64),
                    fc(c)
                )
            }
            _ => String::new(),
        };
        println!(
            "{rel:7.1} {left} used {:7.2} peak {:7.2} {}{} {} {}{demand}",
            gib(m.used),
            gib(g.mem_peak.unwrap_or(0)),
            ga.levels_at
                .map_or(String::new(), |l| format!("levels {:.1} ", gib(l))),
            if ga.at_risk_pct.is_some() { "R" } else { " " },
            if leak { "L" } else { " " },
            match ga.forecast {
                Some(f) => format!("SHOWN {}", fc(Some(f))),
                None => format!("{why:>14} {}", fc(cand)),
            },
        );
    }
}

/// The analysis configuration with `VW_PARAMS` (e.g.
/// `"decel=0.7,hold=2"`) applied: the forecaster and leak parameters that
/// [`trace`] and [`sweep`] try.
fn params() -> AnalysisConfig {
    params_from(&std::env::var("VW_PARAMS").unwrap_or_default())
}

/// The analysis configuration with `params` (`"decel=0.7,hold=2"`) applied.
fn params_from(params: &str) -> AnalysisConfig {
    let mut cfg = AnalysisConfig::default();
    for kv in params.split(',').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap();
        let x: f64 = v.parse().unwrap();
        let e = &mut cfg.envelope;
        let secs = std::time::Duration::from_secs_f64;
        match k {
            "decel" => e.decel = x,
            "decel_after" => e.decel_after = secs(x),
            "slowed" => e.slowed = x,
            "hold" => e.hold = secs(x),
            "hold_leaking" => e.hold_leaking = secs(x),
            "max_slip" => e.max_slip = x,
            "max_slip_rel" => e.max_slip_rel = x,
            "min_regime" => e.min_regime = secs(x),
            "min_points" => e.min_points = (x as usize).max(2),
            "at_risk_pct" => e.at_risk_pct = x,
            "cache_full_pct" => e.cache_full_pct = x,
            "one_step_share" => e.one_step_share = x,
            "max_fill" => e.max_fill = x,
            "max_extrapolation" => e.max_extrapolation = x,
            "shift_frac" => e.shift_frac = x,
            "leak_min_s" => cfg.leak.min_duration = secs(x),
            "demand" => cfg.allocator_demand = x != 0.0,
            _ => panic!("unknown parameter {k}"),
        }
    }
    cfg
}

/// A parameter sweep over the corpus: `VW_SETS=tune,quick VW_PARAMS=
/// "decel=0.7,decel_after=16" cargo test --release --lib
/// commands::score::trace::sweep -- --ignored --nocapture` prints each
/// set's summary line under the given forecaster parameters, then one for
/// all of them together (`VW_SETS=all`: every set in the corpus folder;
/// leave out a set recorded to be held out until the change it checks is
/// final).
#[test]
#[ignore = "a diagnostic: set VW_SETS and VW_PARAMS"]
fn sweep() {
    let Ok(sets) = std::env::var("VW_SETS") else {
        return;
    };
    let cfg = params();
    let mut every = Vec::new();
    for set in &corpus_sets(&sets) {
        let runs = score_set(set, &cfg);
        summary_line(set, &runs);
        if std::env::var("VW_VERBOSE").is_ok() {
            print!("{}", crate::analysis::truth::markdown(&runs));
        }
        every.extend(runs);
    }
    summary_line("all", &every);
}

const CORPUS: &str = "tests/fixtures/corpus";

/// The corpus sets `spec` names (`tune,quick`), or every one for `all`.
fn corpus_sets(spec: &str) -> Vec<String> {
    if spec != "all" {
        return spec.split(',').map(str::to_owned).collect();
    }
    let mut all: Vec<String> = std::fs::read_dir(CORPUS)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    all.sort();
    all
}

/// Every run of one corpus set, scored under `cfg`.
fn score_set(set: &str, cfg: &AnalysisConfig) -> Vec<crate::analysis::truth::RunScore> {
    super::recordings(&[Path::new(CORPUS).join(set)])
        .unwrap()
        .iter()
        .map(|g| super::score_file(&g.path, &super::truth_beside(&g.path), cfg).unwrap())
        .collect()
}

/// Leave-one-set-out cross-validation of the forecaster's knobs, to say how
/// much tuning them on every set is worth on a set they were not tuned on:
/// `VW_GRID="max_fill=0.011|0.009;hold=3|2.5" VW_LAMBDA=2 cargo test
/// --release --lib commands::score::trace::crossval -- --ignored
/// --nocapture`. Every combination of the grid is scored on every set;
/// then, for each set, the combination with the best held checkpoints −
/// λ × false alarms over the *other* sets (ties: the first in the grid, so
/// put the built values first) is scored on it. It prints the sum of those
/// left-out scores beside the built parameters' and the in-sample best's.
/// Only the grid's knobs are cross-validated: the rules themselves were
/// written seeing every set.
#[test]
#[ignore = "a diagnostic: set VW_GRID"]
fn crossval() {
    let Ok(grid) = std::env::var("VW_GRID") else {
        return;
    };
    let lambda: f64 = std::env::var("VW_LAMBDA").map_or(2.0, |l| l.parse().unwrap());
    let mut combos = vec![String::new()];
    for axis in grid.split(';').filter(|a| !a.is_empty()) {
        let (k, vs) = axis.split_once('=').unwrap();
        combos = combos
            .iter()
            .flat_map(|c| vs.split('|').map(move |v| format!("{c}{k}={v},")))
            .collect();
    }
    let sets = corpus_sets("all");
    // (held, false alarms) per combination, per set.
    let scores: Vec<Vec<(usize, usize)>> = combos
        .iter()
        .map(|c| {
            let cfg = params_from(c);
            sets.iter()
                .map(|set| {
                    let s = crate::analysis::truth::Summary::of(&score_set(set, &cfg));
                    (s.held, s.false_alarm_runs)
                })
                .collect()
        })
        .collect();
    let total = |c: usize, skip: Option<usize>| {
        let (h, f) = scores[c]
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != skip)
            .fold((0, 0), |(h, f), (_, x)| (h + x.0, f + x.1));
        (h, f, h as f64 - lambda * f as f64)
    };
    // The first combination with the best objective (strictly better wins).
    let best = |skip: Option<usize>| {
        (0..combos.len()).fold(0, |b, c| {
            if total(c, skip).2 > total(b, skip).2 {
                c
            } else {
                b
            }
        })
    };
    let (mut held, mut fa) = (0, 0);
    for (i, set) in sets.iter().enumerate() {
        let c = best(Some(i));
        let (h, f) = scores[c][i];
        println!(
            "{set:12} tuned on the rest: {:40} held {h} FA {f}",
            combos[c]
        );
        held += h;
        fa += f;
    }
    let built = params_from("");
    let built_score = sets.iter().fold((0, 0), |(h, f), set| {
        let s = crate::analysis::truth::Summary::of(&score_set(set, &built));
        (h + s.held, f + s.false_alarm_runs)
    });
    let b = best(None);
    println!("lambda {lambda}: left out, each set tuned on the rest: held {held} FA {fa}");
    println!(
        "built parameters, in sample: held {} FA {}",
        built_score.0, built_score.1
    );
    let (h, f, _) = total(b, None);
    println!("best of the grid, in sample: {} held {h} FA {f}", combos[b]);
}

/// One summary line of [`sweep`].
fn summary_line(set: &str, runs: &[crate::analysis::truth::RunScore]) {
    let s = crate::analysis::truth::Summary::of(runs);
    println!(
        "{set:8} held {}/{} settled {}/{} width {} risk+{} shown30 {}/{} leak<= {:?} never {} FA {}/{}",
        s.held,
        s.checkpoints,
        s.settled_held,
        s.settled_checkpoints,
        s.held_width.map_or("-".into(), |w| format!("{w:.2}")),
        s.at_risk_only,
        s.shown_by_30,
        s.could_show_by_30,
        s.slowest_leak_flag_s.map(|x| x.round()),
        s.never_flagged,
        s.false_alarm_runs,
        s.no_alarm_runs
    );
}

/// Each process of the run's GPU, per snapshot: memory, rate, phase and
/// leak flag (`VW_TRACE` as for [`trace`]; `commands::score::trace::procs`).
#[test]
#[ignore = "a diagnostic: set VW_TRACE to a recording"]
fn procs() {
    let Some((_, rec, gpu, zero)) = traced() else {
        return;
    };
    let mut a = Analyzer::new(&AnalysisConfig::default());
    let gib = |x: f64| x / (1u64 << 30) as f64;
    for snap in rec.iter().filter_map(Result::ok) {
        a.observe(&snap);
        let rel = (snap.t_ms as f64 - zero as f64) / 1000.0;
        for p in a.processes().filter(|p| p.id.gpu == gpu && p.alive) {
            println!(
                "{rel:7.1} pid {} mem {:7.2} rate {:>7} phase {:?} leak {}",
                p.id.key.pid,
                gib(p.mem.unwrap_or(0) as f64),
                p.rate.map_or("-".into(), |r| format!("{:.2}", gib(r.bps))),
                p.phase,
                p.leak.is_some()
            );
        }
    }
}

/// Each process of the run's GPU, at each fresh publish of its allocator
/// figures: the driver's memory, the tensors (`allocated`) and where
/// [`Levelling`](crate::analysis::levelling::Levelling) says they level
/// off (`VW_TRACE` as for [`trace`];
/// `commands::score::trace::levelling`).
#[test]
#[ignore = "a diagnostic: set VW_TRACE to a recording"]
fn levelling() {
    use crate::analysis::levelling::Levelling;
    let Some((_, rec, gpu, zero)) = traced() else {
        return;
    };
    let mut fills: std::collections::HashMap<u32, Levelling> = Default::default();
    let gib = |x: f64| x / (1u64 << 30) as f64;
    for snap in rec.iter().filter_map(Result::ok) {
        let rel = (snap.t_ms as f64 - zero as f64) / 1000.0;
        let g = snap.gpus.iter().find(|g| g.index == gpu);
        let total = g.and_then(|g| g.mem).map_or(0, |m| m.total);
        for sp in snap.procs.iter().filter(|p| p.gpu == gpu) {
            let fill = fills.entry(sp.key().pid).or_default();
            if let Some((a, _)) = fill.observe(sp, snap.t_ms) {
                println!(
                    "{rel:7.1} pid {} mem {:7.2} allocated {:7.2} levels {}",
                    sp.key().pid,
                    gib(sp.mem.unwrap_or(0) as f64),
                    gib(a),
                    fill.level(total)
                        .map_or("-".into(), |x| format!("{:.1}", gib(x)))
                );
            }
        }
    }
}
