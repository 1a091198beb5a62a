//! The GPU's forecast beside a process flagged as leaking.

use super::super::*;
use super::snap;

const GIB: u64 = 1 << 30;

/// A process leaking 0.5 GiB/s from 10 GiB on a 100 GiB GPU whose
/// allocator takes one more 12 GiB segment at 40 s (a level shift: the
/// GPU's regime starts again), the leak going on beneath it: each second,
/// the moment (unix ms) the latest end of the GPU's forecast stands for,
/// if one is shown. `leak_min` is the leak flag's `min_duration`.
fn a_segment_over_a_leak(leak_min: Duration) -> Vec<Option<Millis>> {
    let mut cfg = AnalysisConfig::default();
    cfg.leak.min_duration = leak_min;
    let mut a = Analyzer::new(&cfg);
    (0..60u64)
        .map(|t| {
            let step = if t >= 40 { 12 * GIB } else { 0 };
            let used = 10 * GIB + t * GIB / 2 + step;
            a.observe(&snap(t, used, &[(10, used)]));
            a.gpu(0)
                .and_then(|g| g.forecast)
                .and_then(|f| f.range_ms().1)
        })
        .collect()
}

#[test]
fn a_forecast_over_a_flagged_leak_stands_over_an_allocator_segment() {
    // Flagged from ~20 s: the forecast shown before the segment stays over
    // the seconds the new regime is too young to give one, its latest end
    // where it was (the leak goes on; the segment took room, it gave
    // none back).
    let flagged = a_segment_over_a_leak(Duration::from_secs(20));
    let before = flagged[39].expect("a forecast before the segment");
    for (t, high) in flagged.iter().enumerate().skip(40).take(6) {
        assert!(high.is_some_and(|h| h <= before), "{t}: {flagged:?}");
    }
    // With no flag (its span longer than the run), the same growth loses
    // its forecast at the segment, as any level shift ends a regime.
    let unflagged = a_segment_over_a_leak(Duration::from_secs(600));
    assert!(unflagged[39].is_some(), "{unflagged:?}");
    assert!(
        unflagged[40..46].iter().any(Option::is_none),
        "{unflagged:?}"
    );
}
