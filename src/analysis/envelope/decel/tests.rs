//! Growth that slowed for good (`Envelope::slowed_for_good`).

use super::super::tests::{GIB, mem};
use super::*;
use crate::analysis::envelope::Outlook;

/// 10 GiB, then 1 GiB/s for 40 s and 0.7 GiB/s from then on (a leak
/// beneath a cache that has filled): 140 GiB at 168.6 s. `dip` takes 3 GiB
/// off every tenth reading (memory given back and taken again). The
/// outlook and the regime's points at 90 s.
fn slowing(p: &EnvelopeParams, dip: bool) -> (Outlook, usize) {
    let f = |s: u64| {
        let u = if s <= 40 {
            10.0 + s as f64
        } else {
            50.0 + 0.7 * (s - 40) as f64
        };
        let u = if dip && s % 10 == 5 { u - 3.0 } else { u };
        u * GIB
    };
    let mut e = Envelope::default();
    let mut o = Outlook::default();
    for s in 0..=90u64 {
        o = e.observe(
            1_000_000 + s * 1000,
            mem(f(s)),
            Some(f(s) as u64),
            1.0,
            p,
            true,
        );
    }
    (o, e.regime.points.len())
}

#[test]
fn growth_that_slowed_for_good_is_forecast_at_its_new_pace() {
    let full_ms = 1_000_000 + 168_600;
    // From 64 s the newer half (0.7 GiB/s) can be judged on its own: the
    // regime starts again there, and the range holds the moment.
    let (o, n) = slowing(&EnvelopeParams::default(), false);
    let fc = o.forecast.expect("a forecast");
    assert!(n < 91, "{n} points: the regime did not start again");
    assert!(fc.contains(full_ms), "{fc:?}");
    // Over the whole regime (1 GiB/s in it), the range ends before it
    // (147–158 s).
    let off = EnvelopeParams {
        slowed: EnvelopeParams::default().decel,
        ..EnvelopeParams::default()
    };
    let (o, n) = slowing(&off, false);
    let fc = o.forecast.expect("a forecast");
    assert_eq!(n, 91);
    assert!(!fc.contains(full_ms), "{fc:?}");
}

#[test]
fn growth_that_gave_memory_back_does_not_start_again_where_it_slowed() {
    // The same with a 3 GiB dip every 10 s: halves of a sawtooth differ by
    // chance (`empty_cache_saw`'s T−10 s ranges went wrong when they
    // counted), so the regime goes on whole.
    let (_, n) = slowing(&EnvelopeParams::default(), true);
    assert_eq!(n, 91);
}

#[test]
fn growth_that_slowed_starts_again_only_where_both_halves_can_be_judged() {
    // Slowed at 20 s (1 → 0.7 GiB/s); at 45 s the newer half is under 24 s
    // long, too short for its own levelling-off check (the `crowded`
    // simulation: processes starting over 30 s, then their caches filling,
    // gave a forecast for a GPU that never filled).
    let f = |s: u64| if s <= 20 { 10.0 + s as f64 } else { 30.0 + 0.7 * (s - 20) as f64 } * GIB;
    let p = EnvelopeParams::default();
    let mut e = Envelope::default();
    for s in 0..=45u64 {
        e.observe(
            1_000_000 + s * 1000,
            mem(f(s)),
            Some(f(s) as u64),
            1.0,
            &p,
            true,
        );
    }
    assert_eq!(e.regime.points.len(), 46);
}

#[test]
fn a_fill_that_keeps_slowing_does_not_start_again() {
    // A cache filling with a time constant of 100 s towards 130 GiB: its
    // halves are surely apart at 0.72, but so are the newer half's own:
    // still slowing, not a new pace.
    let f = |s: u64| (10.0 + 120.0 * (1.0 - (-(s as f64) / 100.0).exp())) * GIB;
    let p = EnvelopeParams::default();
    let mut e = Envelope::default();
    for s in 0..=90u64 {
        e.observe(
            1_000_000 + s * 1000,
            mem(f(s)),
            Some(f(s) as u64),
            1.0,
            &p,
            true,
        );
    }
    assert_eq!(e.regime.points.len(), 91);
}
