//! Transients: spikes and dips that come back, and shifts that stay.

use super::super::tests::{GIB, mem, run};
use super::super::*;
use crate::analysis::spike::SPIKE_MS;

#[test]
fn a_spike_of_one_sample_is_a_peak_of_the_regime_not_a_new_one() {
    // 80 GiB growing at 0.5 GiB/s (full at 120 s); at 30 s one reading 20
    // GiB higher (another process's evaluation pass, more than a level
    // shift), back the next second.
    let base = |s: u64| 80.0 * GIB + 0.5 * GIB * s as f64;
    let f = |s: u64| {
        let u = if s == 30 {
            base(s) + 20.0 * GIB
        } else {
            base(s)
        };
        (u, u)
    };
    let o = run(40, f);
    assert!(o[29].forecast.is_some(), "shown before the spike");
    // The spike itself starts a regime (it may be a fill), and says the
    // forecast from before for that sample (no blank frame) ...
    assert_eq!(o[30].forecast, o[29].forecast);
    assert!(o[30].rate.is_none(), "a new regime, young");
    // ... but the next reading, back where the growth was, takes the old
    // regime back at once, with the spike as its transient: the forecast
    // now expects the next one and says sooner than the growth alone.
    for (s, x) in o.iter().enumerate().skip(31) {
        let fc = x.forecast.unwrap_or_else(|| panic!("none at {s} s"));
        let alone = (140.0 * GIB - base(s as u64)) / (0.5 * GIB);
        assert!(fc.eta_s < alone - 30.0, "{s} s: {} vs {alone}", fc.eta_s);
    }
    // A shift that stays is one: a fill of 20 GiB at 30 s that does not go
    // away starts a regime, which is young a second later.
    let g = |s: u64| {
        let u = base(s) + if s >= 30 { 20.0 * GIB } else { 0.0 };
        (u, u)
    };
    let o = run(40, g);
    assert!(o[31].forecast.is_none() && o[31].rate.is_none());
    // A dip that comes back two samples later is two shifts.
    let h = |s: u64| {
        let u = base(s)
            - if (30..=31).contains(&s) {
                20.0 * GIB
            } else {
                0.0
            };
        (u, u)
    };
    let o = run(40, h);
    assert!(o[32].forecast.is_none() && o[32].rate.is_none());
}

#[test]
fn a_spike_that_lasts_seconds_is_a_peak_of_the_regime_too() {
    // 80 GiB growing at 0.5 GiB/s; from 30 s to 33 s 20 GiB higher (an
    // evaluation pass holding its activations for four readings).
    let base = |s: u64| 80.0 * GIB + 0.5 * GIB * s as f64;
    let spike = |s: u64| {
        let u = base(s)
            + if (30..=33).contains(&s) {
                20.0 * GIB
            } else {
                0.0
            };
        (u, u)
    };
    let o = run(45, spike);
    assert!(o[29].forecast.is_some(), "shown before the spike");
    assert!(o[32].rate.is_none(), "during it, a young regime");
    // Back where the growth was: the old regime, the spike its transient.
    for (s, x) in o.iter().enumerate().skip(34) {
        let fc = x.forecast.unwrap_or_else(|| panic!("none at {s} s"));
        let alone = (140.0 * GIB - base(s as u64)) / (0.5 * GIB);
        assert!(fc.eta_s < alone - 30.0, "{s} s: {} vs {alone}", fc.eta_s);
    }
    // Falling back after longer than `SPIKE_MS`, it was a level: the
    // regime after the fall is young.
    let secs = SPIKE_MS / 1000;
    let long = |s: u64| {
        let u = base(s)
            + if (10..=10 + secs).contains(&s) {
                20.0 * GIB
            } else {
                0.0
            };
        (u, u)
    };
    let o = run(12 + secs, long);
    assert!(o[(11 + secs) as usize].rate.is_none());
    // A fill that stays, then a spike: the fall comes back to the level
    // after the fill, not the one before it.
    let fill = |s: u64| {
        let u = base(s)
            + if s >= 5 { 20.0 * GIB } else { 0.0 }
            + if (20..=22).contains(&s) {
                20.0 * GIB
            } else {
                0.0
            };
        (u, u)
    };
    let o = run(30, fill);
    assert!(o[21].rate.is_none());
    assert!(o[23].rate.is_some(), "the regime after the fill came back");
    // Its processes gone, a fall is not the spike's end.
    let p = EnvelopeParams::default();
    let mut e = Envelope::default();
    let at = |s: u64| 1_000_000 + s * 1000;
    for s in 0..34 {
        e.observe(at(s), mem(spike(s).0), None, 1.0, &p, true);
    }
    // (A process there from the start: its memory given back.)
    let mut gone = e.clone();
    gone.process_gone(at(0));
    let o = gone.observe(at(34), mem(base(34)), None, 1.0, &p, true);
    assert!(
        o.rate.is_none(),
        "the regime before the spike came back: {o:?}"
    );
    // A process that came with the spike (a short-lived second process)
    // gone: that is the spike's end, and the regime before it comes back.
    e.process_gone(at(30));
    let o = e.observe(at(34), mem(base(34)), None, 1.0, &p, true);
    assert!(o.rate.is_some(), "the spike's own process left: {o:?}");
}

#[test]
fn a_dip_of_one_sample_keeps_the_regime_and_its_risk() {
    // 130 GiB growing at 0.1 GiB/s with peaks to 137 GiB (98 %: at risk);
    // at 30 s one reading 20 GiB lower (a cache released and taken again).
    let f = |s: u64| {
        let base = 130.0 * GIB + 0.1 * GIB * s as f64;
        let u = if s == 30 { base - 20.0 * GIB } else { base };
        (
            u,
            if s.is_multiple_of(5) && s != 30 {
                137.0 * GIB
            } else {
                u
            },
        )
    };
    let o = run(40, f);
    assert!(o[29].at_risk_pct.is_some() && o[29].rate.is_some());
    // The dip's own sample cannot tell it from an OOM's process gone: the
    // old peaks are set aside ...
    assert!(o[30].at_risk_pct.is_none() && o[30].rate.is_none());
    // ... and come back with the regime when the next reading does.
    for (s, x) in o.iter().enumerate().skip(31) {
        assert!(x.at_risk_pct.is_some(), "{s} s: the dip hid the risk");
        assert!(x.rate.is_some(), "{s} s: the dip ended the regime");
    }
}

#[test]
fn a_restart_from_outside_forgets_the_regime_a_shift_ended() {
    let p = EnvelopeParams::default();
    let mut e = Envelope::default();
    let at = |s: u64| 1_000_000 + s * 1000;
    for s in 0..30 {
        let u = 80.0 * GIB + 0.5 * GIB * s as f64;
        e.observe(at(s), mem(u), None, 1.0, &p, true);
    }
    e.observe(at(30), mem(115.0 * GIB), None, 1.0, &p, true);
    e.restart();
    let o = e.observe(at(31), mem(95.5 * GIB), None, 1.0, &p, true);
    assert!(o.rate.is_none(), "the old regime came back: {o:?}");
}

#[test]
fn a_drop_during_a_spike_clears_the_risk() {
    // 120 GiB growing 0.1 GiB/s, peaks read at 137 GiB (98 %: at risk);
    // at 30 s a spike to 139 GiB (a shift), at 31 s everything gone (an OOM
    // whose process the snapshot still lists): not at risk from then on.
    let f = |s: u64| {
        let u = match s {
            30 => 139.0 * GIB,
            31.. => 0.5 * GIB,
            _ => 120.0 * GIB + 0.1 * GIB * s as f64,
        };
        (u, if s < 30 && s % 5 == 4 { 137.0 * GIB } else { u })
    };
    let o = run(40, f);
    assert!(o[29].at_risk_pct.is_some());
    for (s, x) in o.iter().enumerate().skip(31) {
        assert!(x.at_risk_pct.is_none(), "{s} s: {x:?}");
    }
}

#[test]
fn a_spike_that_climbs_in_two_steps_comes_back_to_the_level_before_it() {
    // 80 GiB growing 0.5 GiB/s; at 30 s 15 GiB more, at 31 s 15 GiB more
    // again (each a shift), back at 33 s: the regime before the first step
    // comes back, not the one-sample level between the two.
    let base = |s: u64| 80.0 * GIB + 0.5 * GIB * s as f64;
    let f = |s: u64| {
        let extra = match s {
            30 => 15.0,
            31 | 32 => 30.0,
            _ => 0.0,
        };
        let u = base(s) + extra * GIB;
        (u, u)
    };
    let o = run(36, f);
    assert!(o[32].rate.is_none());
    assert!(
        o[33].rate.is_some() && o[33].forecast.is_some(),
        "{:?}",
        o[33]
    );
}

#[test]
fn a_spike_that_falls_part_of_the_way_keeps_its_top() {
    // 80 GiB growing at 0.1 GiB/s; at 30 s 25 GiB higher with a peak 30
    // GiB higher, at 32 s down to 9 GiB higher (a shift, but not back),
    // at 34 s back: the regime before the spike comes back, and its
    // returning point carries the spike's top, though the regime that
    // held it was ended by the fall.
    let base = |s: u64| 80.0 * GIB + 0.1 * GIB * s as f64;
    let f = |s: u64| match s {
        30 => (base(s) + 25.0 * GIB, base(s) + 30.0 * GIB),
        31 => (base(s) + 25.0 * GIB, base(s) + 25.0 * GIB),
        32 | 33 => (base(s) + 9.0 * GIB, base(s) + 9.0 * GIB),
        _ => (base(s), base(s)),
    };
    let p = EnvelopeParams::default();
    let mut e = Envelope::default();
    for s in 0..35 {
        let (u, pk) = f(s);
        e.observe(1_000_000 + s * 1000, mem(u), Some(pk as u64), 1.0, &p, true);
    }
    let first = e.regime.points.front().map(|q| q.t);
    assert_eq!(first, Some(1_000_000), "the regime from before came back");
    let top = e.regime.points.iter().map(|q| q.peak).fold(0.0, f64::max);
    assert!(
        top >= base(30) + 30.0 * GIB - 1.0,
        "the spike's top is kept: {:.1} GiB",
        top / GIB
    );
}

#[test]
fn a_drop_does_not_show_the_forecast_from_before_on_its_own_sample() {
    // 80 GiB growing at 0.5 GiB/s (shown by 29 s); at 30 s one reading
    // 70 GiB lower (memory given back), back the next second, or not.
    let base = |s: u64| 80.0 * GIB + 0.5 * GIB * s as f64;
    for stays in [false, true] {
        let f = |s: u64| {
            let u = if s == 30 || (stays && s > 30) {
                base(s) - 70.0 * GIB
            } else {
                base(s)
            };
            (u, u)
        };
        let o = run(33, f);
        assert!(o[29].forecast.is_some(), "shown before the drop");
        assert!(
            o[30].forecast.is_none(),
            "stays {stays}: {:?}",
            o[30].forecast
        );
        assert_eq!(o[31].forecast.is_some(), !stays, "stays {stays}");
    }
}
