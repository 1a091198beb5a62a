//! The GPU's forecast over an allocator's new segment while a process's
//! tensors grow, flagged as leaking or not.

use std::time::Duration;

use super::super::*;
use super::one_torch_process;

/// What a process publishes of its allocator's tensors.
#[derive(Clone, Copy)]
enum Tensors {
    /// They grow with the driver's figure (a leak).
    Grows,
    /// They stay flat (a warm-up: what grows is activations).
    Flat,
}

/// Second `s` of growth beneath a big segment: the driver sees 2 GiB
/// segments of memory that grows 0.4 GiB/s from 20 GiB, and at 60 s one
/// segment of 16 GiB at once (a cache's block: the forecaster's regime
/// starts afresh), the process publishing its `tensors` or not. Whether
/// a forecast is shown each second. The leak flag is kept out (its least
/// duration 10 minutes): while it is raised, a forecast is carried
/// anyway.
fn growth_beneath_a_big_segment(tensors: Option<Tensors>) -> Vec<bool> {
    let gib = (1u64 << 30) as f64;
    let mut cfg = AnalysisConfig::default();
    cfg.leak.min_duration = Duration::from_secs(600);
    let mut a = Analyzer::new(&cfg);
    (0..90)
        .map(|s| {
            let grown = 20.0 + 0.4 * s as f64;
            let big = if s >= 60 { 16.0 } else { 0.0 };
            let segments = (grown / 2.0).ceil() * 2.0 + big + 0.5;
            let held = match tensors {
                Some(Tensors::Grows) => grown,
                _ => 20.0,
            };
            let peak = tensors.map(|_| (held * gib) as u64 + (1 << 30));
            a.observe(&one_torch_process(s, (segments * gib) as u64, peak));
            a.gpu(0).unwrap().forecast.is_some()
        })
        .collect()
}

#[test]
fn a_forecast_is_carried_over_a_new_segment_while_the_tensors_grow() {
    let shown = |s: &[bool]| s.iter().filter(|x| **x).count();
    for tensors in [None, Some(Tensors::Grows), Some(Tensors::Flat)] {
        let said = growth_beneath_a_big_segment(tensors);
        // Shown before the big segment, each way.
        assert_eq!(shown(&said[40..60]), 20, "{said:?}");
        // In the ten seconds after it: carried while the tensors grow;
        // else none while the new regime is too young for a rate.
        let after = shown(&said[61..71]);
        let carried = matches!(tensors, Some(Tensors::Grows));
        assert_eq!(after, if carried { 10 } else { 0 }, "{said:?}");
    }
}
