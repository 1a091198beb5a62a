//! Growth that slowed for good (`Envelope::slowed_for_good`).

use super::super::tests::{GIB, mem};
use super::*;
use crate::analysis::envelope::Outlook;

/// 10 GiB, then 1 GiB/s for 40 s and `then` GiB/s from then on (at 0.7,
/// a leak beneath a cache that has filled: 140 GiB at 168.6 s). `dip`
/// takes 3 GiB off every tenth reading (memory given back and taken
/// again). The outlook and the regime's points at 90 s.
fn slowing_to(then: f64, p: &EnvelopeParams, dip: bool) -> (Outlook, usize) {
    let f = |s: u64| {
        let u = if s <= 40 {
            10.0 + s as f64
        } else {
            50.0 + then * (s - 40) as f64
        };
        let u = if dip && s % 10 == 5 { u - 3.0 } else { u };
        u * GIB
    };
    feed(90, f, p)
}

/// The outlook and the regime's points after `f(s)` bytes read at 1 Hz
/// for seconds 0 to `last`.
fn feed(last: u64, f: impl Fn(u64) -> f64, p: &EnvelopeParams) -> (Outlook, usize) {
    let mut e = Envelope::default();
    let mut o = Outlook::default();
    for s in 0..=last {
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

/// The regime's points after `f(s)` bytes read at 1 Hz for seconds 0 to
/// `last`, with the default parameters.
fn points_after(last: u64, f: impl Fn(u64) -> f64) -> usize {
    feed(last, f, &EnvelopeParams::default()).1
}

fn slowing(p: &EnvelopeParams, dip: bool) -> (Outlook, usize) {
    slowing_to(0.7, p, dip)
}

#[test]
fn growth_that_slowed_for_good_is_forecast_at_its_new_pace() {
    let full_ms = 1_000_000 + 168_600;
    // From 64 s the newer half (0.7 GiB/s) can be judged on its own: the
    // regime starts again there, and the range holds the moment.
    let (o, n) = slowing(&EnvelopeParams::default(), false);
    let fc = o.forecast.expect("a forecast");
    assert_eq!(n, 51, "the regime starts again at 40 s, where it slowed");
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
fn growth_that_slowed_starts_again_only_where_the_newer_half_can_be_judged() {
    // Slowed at 20 s (1 → 0.7 GiB/s): from ~28 s the halves are apart at
    // about 0.7 with the newer one steady, but the newer half is under 24 s
    // long, too short for its own levelling-off check (by 45 s the ratio
    // has risen to 0.8 and the upper bound holds it too) (the `crowded`
    // simulation: processes starting over 30 s, then their caches filling,
    // gave a forecast for a GPU that never filled).
    let f = |s: u64| if s <= 20 { 10.0 + s as f64 } else { 30.0 + 0.7 * (s - 20) as f64 } * GIB;
    assert_eq!(points_after(45, f), 46);
}

#[test]
fn a_fill_that_keeps_slowing_does_not_start_again() {
    // A cache filling with a time constant of 100 s towards 130 GiB: its
    // halves are surely apart at 0.72, but so are the newer half's own:
    // still slowing, not a new pace.
    let f = |s: u64| (10.0 + 120.0 * (1.0 - (-(s as f64) / 100.0).exp())) * GIB;
    assert_eq!(points_after(90, f), 91);
}

#[test]
fn growth_that_slowed_a_little_or_a_lot_does_not_start_again() {
    let p = EnvelopeParams::default();
    // To 0.9 of its pace: not `slowed` (0.8) enough to say the growth
    // before says nothing about it.
    let (o, n) = slowing_to(0.9, &p, false);
    assert_eq!(n, 91);
    assert!(o.forecast.is_some());
    // To 0.4: under `decel` (0.6), a fill levelling off: no forecast, and
    // the regime goes on whole (starting again, its newer half would read
    // as a new pace).
    let (o, n) = slowing_to(0.4, &p, false);
    assert_eq!(n, 91);
    assert!(o.forecast.is_none(), "{o:?}");
}
