//! The analysis on real PyTorch workloads recorded on H200s and H100s
//! (tests/fixtures/corpus/README.md): the figures docs/analysis.md reports
//! must not get worse. Each set has a test that holds it to what it scored
//! when first scored (or since improved): `tune/` to `twentieth/` in
//! `first_sets.rs`, the later sets in `later_sets.rs`; tests of one shape
//! across sets in `shapes.rs`; the `score` command and the docs' tables in
//! `command.rs`. The helpers they share are here. `tune/` was the first
//! tuning set; `heldout/` was not looked at while tuning.

mod command;
mod first_sets;
mod later_sets;
mod shapes;

use std::path::PathBuf;

use vramwatch::analysis::AnalysisConfig;
use vramwatch::analysis::truth::{RunScore, Summary};
use vramwatch::commands::score::{score_file, truth_beside};

fn corpus(set: &str) -> Vec<RunScore> {
    corpus_with(set, &AnalysisConfig::default())
}

fn corpus_with(set: &str, cfg: &AnalysisConfig) -> Vec<RunScore> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/corpus")
        .join(set);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the corpus folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".jsonl.zst"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| score_file(f, &truth_beside(f), cfg).expect("scores"))
        .collect()
}

/// The driver's figures alone: what a job that does not publish its
/// allocator's figures (`vramwatch_torch`) gets.
fn nvml_only() -> AnalysisConfig {
    AnalysisConfig {
        allocator_demand: false,
        ..AnalysisConfig::default()
    }
}

/// The run of `set` whose name starts with `run` is a KV cache, and raised
/// no false alarm.
fn kv_cache_is_quiet(set: &str, run: &str) {
    let runs = corpus(set);
    let r = runs
        .iter()
        .find(|r| r.run.starts_with(run))
        .unwrap_or_else(|| panic!("{set}/{run}"));
    assert!(r.label.starts_with("kv_plateau/default"), "{r:?}");
    assert_eq!(r.false_alarms, Vec::<String>::new(), "{set}: {r:?}");
}

/// A held-out set's summary, checked for its (runs, OOM runs, checkpoints),
/// at least `held` checkpoints held, every leak flag within
/// `slowest_leak_s` of its growth, and no false alarm but the KV cache's.
fn held_out(set: &str, shape: (usize, usize, usize), held: usize, slowest_leak_s: f64) -> Summary {
    scored_set(set, shape, held, slowest_leak_s, 1, &["kv_plateau"])
}

/// As [`held_out`], with at most `false_alarms` runs alarmed, each one of
/// the workloads `may_alarm` names.
fn scored_set(
    set: &str,
    shape: (usize, usize, usize),
    held: usize,
    slowest_leak_s: f64,
    false_alarms: usize,
    may_alarm: &[&str],
) -> Summary {
    let runs = corpus(set);
    let s = Summary::of(&runs);
    assert_eq!((s.runs, s.oom_runs, s.checkpoints), shape, "{set}: {s:?}");
    assert!(s.held >= held, "{set}: {s:?}");
    assert!(
        s.slowest_leak_flag_s.is_some_and(|x| x <= slowest_leak_s),
        "{set}: {s:?}"
    );
    assert!(s.false_alarm_runs <= false_alarms, "{set}: {s:?}");
    for r in runs.iter().filter(|r| !r.false_alarms.is_empty()) {
        assert!(
            may_alarm.iter().any(|w| r.label.starts_with(w)),
            "{set}: {r:?}"
        );
    }
    s
}

/// The set has one run that grew towards an OOM that had not come by its
/// end: flagged as leaking, and no forecast range passed before the end.
fn one_unreached_flagged_with_no_range_passed(s: &Summary) {
    assert_eq!((s.unreached_runs, s.unreached_flagged), (1, 1), "{s:?}");
    assert_eq!(s.unreached_range_passed, 0, "{s:?}");
}
