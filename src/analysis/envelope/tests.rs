//! The GPU forecaster on shapes real jobs make.

use super::fit::persistent_step;
use super::*;
use crate::analysis::forecast::Room;

pub(super) const GIB: f64 = (1u64 << 30) as f64;
const TOTAL: u64 = 140 << 30;

pub(super) fn mem(used: f64) -> MemInfo {
    let used = used.clamp(0.0, TOTAL as f64) as u64;
    MemInfo {
        used,
        reserved: 0,
        free: TOTAL - used,
        total: TOTAL,
    }
}

/// Runs `f(s) = (used, peak)` at 1 Hz; the outlook after each second.
pub(super) fn run(secs: u64, f: impl Fn(u64) -> (f64, f64)) -> Vec<Outlook> {
    let p = EnvelopeParams::default();
    let mut e = Envelope::default();
    (0..secs)
        .map(|s| {
            let (u, pk) = f(s);
            e.observe(1_000_000 + s * 1000, mem(u), Some(pk as u64), 1.0, &p, true)
        })
        .collect()
}

fn shown_from(o: &[Outlook]) -> Option<usize> {
    o.iter().position(|x| x.forecast.is_some())
}

#[test]
fn a_fill_then_a_leak_is_forecast_soon_after_the_fill() {
    // 110 GiB of weights in 3 s, then 0.6 GiB/s: full 140 GiB at ~53 s.
    let f = |s: u64| {
        let u = match s {
            0..=9 => 1.0 * GIB,
            10..=12 => (1.0 + 36.0 * (s - 9) as f64) * GIB,
            _ => 110.0 * GIB + 0.6 * GIB * (s - 12) as f64,
        };
        (u, u)
    };
    let o = run(60, f);
    let first = shown_from(&o).expect("a forecast");
    assert!(
        first <= 12 + 15,
        "shown {first} s in (growth began at 12 s)"
    );
    let fc = o[first].forecast.unwrap();
    let oom_ms = 1_000_000 + (12.0 + 30.0 / 0.6) as u64 * 1000;
    assert!(fc.contains(oom_ms), "{fc:?} vs {oom_ms}");
}

#[test]
fn a_reading_at_a_tooths_top_does_not_hide_the_growth() {
    // `empty_cache()` every 7 s under a base growing at 0.5 GiB/s from 100
    // GiB (full at 80 s): the fast lane sees each tooth reach 10 GiB above
    // the base, and one 1 Hz reading (at 8 s) lands on a top. That reading
    // is not a high the growth must pass before it counts, nor growth
    // that slowed down after it (docs/analysis-history.md, "Fifth round"); and
    // since a forecast is made from a 3 s regime, the reading comes after
    // one is shown: it is a step for that sample ("one step"), over which
    // the forecast shown stands (fourteenth session).
    let f = |s: u64| {
        let base = 100.0 * GIB + 0.5 * GIB * s as f64;
        let u = if s == 8 { base + 7.5 * GIB } else { base };
        (u, if s % 7 == 1 { base + 10.0 * GIB } else { u })
    };
    let o = run(60, f);
    let first = shown_from(&o).expect("a forecast");
    assert!(first <= 20, "shown {first} s in");
    let gone: Vec<usize> = (first..60).filter(|&s| o[s].forecast.is_none()).collect();
    assert!(gone.is_empty(), "withdrawn at {gone:?} s");
}

#[test]
fn a_sub_second_interval_is_forecast_as_a_one_second_one() {
    // 0.5 GiB/s from 100 GiB, read every 200 ms (`--interval 200ms`):
    // full at 80 s. Samples closer than the points' spacing fold into the
    // last point (see `points_stay_about_a_second_apart_at_any_interval`);
    // the regime must still grow.
    let p = EnvelopeParams::default();
    let mut e = Envelope::default();
    let mut first = None;
    for i in 0..300u64 {
        let u = 100.0 * GIB + 0.5 * GIB * i as f64 / 5.0;
        let o = e.observe(1_000_000 + i * 200, mem(u), Some(u as u64), 0.2, &p, true);
        if let Some(f) = o.forecast {
            first.get_or_insert((i, f));
        }
    }
    let (i, f) = first.expect("a forecast");
    assert!(i <= 25 * 5, "shown {} s in", i / 5);
    assert!(f.contains(1_000_000 + 80_000), "{f:?}");
    assert!(
        e.regime.points.len() <= 61,
        "{} points for 60 s",
        e.regime.points.len()
    );
}

#[test]
fn a_one_second_interval_keeps_every_reading() {
    // At `--interval 1s` the sampler's rounds land 999-1001 ms apart (seen
    // in every H200 recording). A reading 999 ms after the last is its own
    // point: folded into the one before, its `used` was lost, and with it
    // the rise of a one-sample evaluation spike, which the earliest end
    // must allow for (corpus seventh/02 and sixth/05 at T-30 s: the range
    // began 4 s after the OOM). 0.25 GiB/s from 120 GiB, a 2 GiB spike
    // for one reading at 21 s (the next reading 999 ms later).
    let p = EnvelopeParams::default();
    let mut e = Envelope::default();
    let jitter = [999u64, 1000, 1001];
    let mut t = 1_000_000u64;
    let mut last = Outlook::default();
    for i in 0..30u64 {
        let base = 120.0 * GIB + 0.25 * GIB * i as f64;
        let u = if i == 21 { base + 2.0 * GIB } else { base };
        last = e.observe(t, mem(u), Some(u as u64), 1.0, &p, true);
        t += jitter[i as usize % 3];
    }
    assert_eq!(e.regime.points.len(), 30, "every reading a point");
    let f = last.forecast.expect("a forecast");
    // Room at the peaks ~ 140 - 127.25 - 2 GiB (the spike's top); the
    // earliest end leaves room for the spike's 2 GiB rise on top of that,
    // at the fast end of the rate.
    let room = f.eta_s * f.rate.bps;
    assert!(
        f.low_s <= (room - 2.0 * GIB) / f.rate.high.max(f.rate.bps) + 0.5,
        "{f:?}"
    );
}

#[test]
fn points_stay_about_a_second_apart_at_any_interval() {
    // A reading is a point at 900 ms and at 1 s, jitter or a late round
    // included; faster readings fold into points ~1 s apart.
    let p = EnvelopeParams::default();
    for (interval, want) in [
        (100u64, 60..=61),
        (200, 60..=61),
        (500, 60..=61),
        (900, 66..=67),
    ] {
        let mut e = Envelope::default();
        let mut t = 1_000_000u64;
        let n = 60_000 / interval;
        for i in 0..n {
            let u = 100.0 * GIB + 0.1 * GIB * i as f64;
            e.observe(t, mem(u), Some(u as u64), 0.1, &p, true);
            // ±1 ms of jitter.
            t = (t + interval + 1) - i % 3;
        }
        let points = e.regime.points.len();
        assert!(want.contains(&points), "{interval} ms: {points} points");
    }
    // A 1 s round 150 ms late, and the next on time 850 ms after it.
    let mut e = Envelope::default();
    let times = [0u64, 1000, 2000, 3150, 4000, 5000, 6000, 7000];
    for (i, dt) in times.iter().enumerate() {
        let u = 100.0 * GIB + GIB * i as f64;
        e.observe(1_000_000 + dt, mem(u), Some(u as u64), 1.0, &p, true);
    }
    assert_eq!(e.regime.points.len(), times.len());
}

#[test]
fn a_warm_up_is_not_a_fill_levelling_off() {
    // 1.5 GiB/s for the first 8 s, then a steady 0.5 GiB/s from 100 GiB:
    // growth that slowed once and then holds. The regime's first quarter
    // is left out of the deceleration test, so its halves compare the
    // steady part.
    let f = |s: u64| {
        let g = if s < 8 {
            1.5 * s as f64
        } else {
            12.0 + 0.5 * (s - 8) as f64
        };
        let u = (100.0 + g) * GIB;
        (u, u)
    };
    let o = run(50, f);
    let first = shown_from(&o).expect("a forecast");
    let gone: Vec<usize> = (first..50).filter(|&s| o[s].forecast.is_none()).collect();
    assert!(
        gone.is_empty(),
        "shown at {first} s, withdrawn at {gone:?} s"
    );
}

#[test]
fn transient_peaks_bring_the_forecast_forward() {
    // Baseline 110 GiB + 0.25 GiB/s; an 8 GiB peak every 12 s (an eval).
    let f = |s: u64| {
        let u = 110.0 * GIB + 0.25 * GIB * s as f64;
        let pk = if s % 12 == 6 { u + 8.0 * GIB } else { u };
        (u, pk)
    };
    let o = run(60, f);
    let fc = o[59].forecast.expect("a forecast");
    // The baseline alone reaches 140 GiB at 120 s; with the 8 GiB peak on
    // top, at 88 s: the central estimate is the latter.
    let full_s = (fc.full_at_ms() - 1_000_000) as f64 / 1000.0;
    assert!((full_s - 88.0).abs() < 6.0, "{full_s}");
    assert!(fc.high_s.unwrap() + 59.0 >= 118.0, "{fc:?}");
}

#[test]
fn a_plateau_fill_is_withdrawn_as_it_levels_off() {
    // A cache filling as 1 − e^(−t/30) towards 100 GiB of 140. For its
    // first half minute it cannot be told from a leak (a known false
    // alarm, docs/analysis.md); once its growth has halved over the
    // regime, the forecast goes and does not come back.
    let f = |s: u64| {
        let u = 10.0 * GIB + 90.0 * GIB * (1.0 - (-(s as f64) / 30.0).exp());
        (u, u)
    };
    let o = run(150, f);
    assert!(o[50..].iter().all(|x| x.forecast.is_none()));
}

#[test]
fn fast_loading_is_not_forecast() {
    // A data set arriving at 3.8 GiB/s for 28 s, then flat at 110 GiB.
    let f = |s: u64| {
        let u = (3.0 + 3.8 * s.min(28) as f64) * GIB;
        (u, u)
    };
    assert_eq!(shown_from(&run(80, f)), None);
}

#[test]
fn a_flat_gpu_has_no_forecast_and_a_saturated_one_is_at_risk() {
    let o = run(40, |_| (100.0 * GIB, 100.0 * GIB));
    assert!(
        o.iter()
            .all(|x| x.forecast.is_none() && x.at_risk_pct.is_none())
    );
    // Reserved to 139.2 of 140 GiB by the allocator, peaking at 139.7.
    let o = run(40, |s| {
        (
            139.2 * GIB,
            if s % 5 == 0 { 139.7 * GIB } else { 139.2 * GIB },
        )
    });
    let risk = o[39].at_risk_pct.expect("at risk");
    assert!(risk > 99.0, "{risk}");
}

#[test]
fn a_staircase_is_forecast_like_the_line_through_it() {
    // 4 GiB allocator segments every 8 s from 90 GiB: 0.5 GiB/s on average.
    let f = |s: u64| {
        let u = 90.0 * GIB + 4.0 * GIB * (s / 8) as f64;
        (u, u)
    };
    let o = run(70, f);
    let fc = o[69].forecast.expect("a forecast");
    assert!((fc.rate.bps / GIB - 0.5).abs() < 0.1, "{:?}", fc.rate);
}

#[test]
fn a_sawtooth_whose_moment_scatters_is_forecast_early() {
    // `empty_cache()` every 8 s: 1 GiB/s for 6 s, then back by 2 GiB (the
    // baseline grows at 0.5 GiB/s), with the peak of each tooth a little
    // above its reading. Each new tooth moves the predicted moment by a
    // second or two, which is agreement for a moment ~40 s away.
    let f = |s: u64| {
        let tooth = (s % 8) as f64;
        let u = 110.0 * GIB + 0.5 * GIB * (s - s % 8) as f64 + GIB * tooth.min(6.0) - 2.0 * GIB;
        (u, u + if s % 8 == 6 { 1.0 * GIB } else { 0.0 })
    };
    let o = run(60, f);
    let first = shown_from(&o).expect("a forecast");
    assert!(first <= 15, "shown only {first} s in");
}

#[test]
fn growth_speeding_up_is_not_forecast_while_its_moment_runs_ahead() {
    // A warm-up whose allocator segments grow (2, 3, 4.5, 6.5 GiB every
    // 2 s): every step pulls the predicted moment in by many seconds.
    let steps = [0.0, 2.0, 5.0, 9.5, 16.0, 25.0, 37.0];
    let f = |s: u64| {
        let u = 60.0 * GIB + steps[(s as usize / 2).min(steps.len() - 1)] * GIB;
        (u, u)
    };
    let o = run(14, f);
    assert_eq!(
        shown_from(&o),
        None,
        "{:?}",
        o.iter().map(|x| x.forecast).collect::<Vec<_>>()
    );
}

#[test]
fn a_few_steps_give_a_rate_known_to_a_step() {
    // 3 GiB segments every 6 s: after 14 s, two steps seen. The rate's
    // range is at least a step over the span either side, whatever the
    // pairs say.
    let f = |s: u64| {
        let u = 100.0 * GIB + 3.0 * GIB * (s / 6) as f64;
        (u, u)
    };
    let p = EnvelopeParams::default();
    let mut e = Envelope::default();
    let mut last = None;
    for s in 0..20u64 {
        let (u, pk) = f(s);
        e.observe(1_000_000 + s * 1000, mem(u), Some(pk as u64), 1.0, &p, true);
        last = e.last.or(last);
    }
    let fc = last.expect("a candidate");
    let span = 19.0;
    assert!(
        fc.rate.low <= fc.rate.bps - 3.0 * GIB / span + 1.0,
        "{:?}",
        fc.rate
    );
    assert!(
        fc.rate.high >= fc.rate.bps + 3.0 * GIB / span - 1.0,
        "{:?}",
        fc.rate
    );
}

/// A candidate made at second `s` (at 1,000 s + `s`) of a run whose
/// moment stays put: full at 60 s, between 50 and 70 s.
pub(super) fn steady_forecast(s: u64) -> Forecast {
    Forecast {
        made_ms: 1_000_000 + s * 1000,
        room: Room::flat(10 << 30),
        rate: Rate::exact(GIB),
        eta_s: 60.0 - s as f64,
        low_s: 50.0 - s as f64,
        high_s: Some(70.0 - s as f64),
    }
}

#[test]
fn a_forecast_gone_for_a_moment_comes_back_at_once() {
    // A steady forecast; the candidate goes for two samples (the baseline
    // touched the top, a cache was released) and comes back: shown again
    // at once, not after another `hold`. Gone for longer than `hold`, it
    // must agree for `hold` again.
    let p = EnvelopeParams::default();
    let mut e = Envelope::default();
    let shown: Vec<bool> = (0..20u64)
        .map(|s| {
            let c = (![8, 9, 13, 14, 15, 16].contains(&s)).then(|| steady_forecast(s));
            e.hold(c, false, &p).is_some()
        })
        .collect();
    let expect: Vec<bool> = (0..20u64)
        .map(|s| (3..8).contains(&s) || (10..13).contains(&s) || s >= 20)
        .collect();
    assert_eq!(shown, expect);
}

#[test]
fn a_cache_released_halfway_is_not_a_plateau() {
    // 0.25 GiB/s for 40 s; at 30 s the allocator frees 2.5 GiB of cache on
    // a failed allocation and the climb goes on from there.
    let f = |s: u64| {
        let drop = if s >= 30 { 2.5 * GIB } else { 0.0 };
        let u = 120.0 * GIB + 0.25 * GIB * s as f64 - drop;
        (u, u)
    };
    let o = run(40, f);
    assert!(
        o[33..].iter().all(|x| x.forecast.is_some()),
        "{:?}",
        o[33..].iter().map(|x| x.forecast).collect::<Vec<_>>()
    );
}

#[test]
fn a_process_starting_up_is_not_forecast_weeks_ahead() {
    // A CUDA context and libraries arriving: ~1.2 GiB in steps over 6 s.
    let f = |s: u64| {
        let u = (0.2 + 0.2 * s.min(6) as f64) * GIB;
        (u, u)
    };
    assert_eq!(shown_from(&run(8, f)), None);
}

#[test]
fn a_transient_is_not_a_step_of_the_growth() {
    let g = |v: &[f64]| persistent_step(v.iter().copied());
    // A staircase: each step stays.
    assert_eq!(g(&[1.0, 1.0, 3.0, 3.0, 4.0]), 2.0);
    // A 12-unit eval spike that falls back: the baseline rose by 1.
    assert_eq!(g(&[10.0, 10.5, 22.5, 22.5, 11.0, 11.0]), 0.5);
    // A drop (cache released) and the climb after it.
    assert_eq!(g(&[5.0, 6.0, 4.0, 4.5, 7.0]), 2.5);
    assert_eq!(g(&[]), 0.0);
}

#[test]
fn an_eval_spike_near_the_top_does_not_hide_the_forecast() {
    // A vision job as recorded on the H200 (corpus after/01, shaped): 124
    // GiB + 0.25 GiB/s, and a 10 GiB evaluation peak of three samples at
    // 12 s that falls back. Before, the spike was taken for the next step
    // of the staircase: the rate's range reached zero ("one step") and no
    // forecast came until the OOM was 7 s off. Now the GPU at risk shows
    // it as soon as the spike is over, and the range holds the moment the
    // baseline plus the spike no longer fit (24 s).
    let f = |s: u64| {
        let base = 124.0 * GIB + 0.25 * GIB * s as f64;
        let u = if (12..15).contains(&s) {
            base + 10.0 * GIB
        } else {
            base
        };
        (u, u)
    };
    let o = run(18, f);
    assert!(o[15].at_risk_pct.is_some(), "{:?}", o[15]);
    let fc = o[15].forecast.expect("shown the sample after the spike");
    let boundary = 1_000_000 + 24_000;
    assert!(fc.contains(boundary), "{fc:?}");
}

#[test]
fn after_an_oom_the_peak_before_the_drop_is_forgotten() {
    // A leak reaches the top (139.5 GiB), its process dies: `used` drops to
    // 97 GiB while the interval's peak still says 139.5. The restarted job
    // then leaks again at 0.5 GiB/s from 97 GiB.
    let f = |s: u64| match s {
        0..=29 => {
            let u = 110.0 * GIB + GIB * s as f64;
            (u, u)
        }
        30 => (97.0 * GIB, 139.5 * GIB),
        _ => {
            let u = 97.0 * GIB + 0.5 * GIB * (s - 30) as f64;
            (u, u)
        }
    };
    let o = run(45, f);
    assert!(o[29].at_risk_pct.is_some());
    for (s, x) in o.iter().enumerate().skip(30) {
        assert!(x.at_risk_pct.is_none(), "{s}: {x:?}");
        if let Some(fc) = x.forecast {
            // Full at 97 + 0.5 t = 140: ~86 s after the restart.
            assert!(fc.eta_s > 30.0, "{s}: {fc:?}");
        }
    }
}

#[test]
fn a_fill_slowing_down_says_where_it_levels_off() {
    // A cache filling towards 100 GiB with a 20 s time constant, from 20
    // GiB: no forecast, and once it is surely slowing down, a level near
    // the plateau.
    let f = |s: u64| {
        let u = (20.0 + 80.0 * (1.0 - (-(s as f64) / 20.0).exp())) * GIB;
        (u, u)
    };
    let o = run(70, f);
    let first = o
        .iter()
        .position(|x| x.levels_at.is_some())
        .expect("a level");
    assert!(first <= 40, "first at {first}");
    for (s, x) in o.iter().enumerate().skip(first) {
        assert!(x.forecast.is_none(), "{s}: {x:?}");
        if let Some(l) = x.levels_at {
            let gib = l / GIB;
            assert!((85.0..=115.0).contains(&gib), "{s}: levels at {gib:.1} GiB");
        }
    }
    // A steady leak never gets one.
    let leak = run(60, |s| {
        let u = 60.0 * GIB + 0.5 * GIB * s as f64;
        (u, u)
    });
    assert!(leak.iter().all(|x| x.levels_at.is_none()));
}

#[test]
fn growth_that_is_one_step_that_stayed_is_not_a_trend() {
    // A steady job at 100 GiB of 140 takes one more 10 GiB segment at 9 s
    // and stays flat (`fourteenth/07`'s shape), its peaks every 5 s 15 GiB
    // higher: no forecast, however long the step stays in the regime.
    let f = |s: u64| {
        let u = GIB
            * if s < 9 {
                100.0 + 0.05 * s as f64
            } else {
                110.0
            };
        (u, if s % 5 == 4 { u + 15.0 * GIB } else { u })
    };
    let o = run(40, f);
    assert_eq!(
        shown_from(&o),
        None,
        "{:?}",
        o.iter().find(|x| x.forecast.is_some())
    );
    // The same rise made of steps every 3 s is a trend.
    let g = |s: u64| {
        let u = GIB * (100.0 + 3.0 * (s / 3) as f64);
        (u, if s % 5 == 4 { u + 15.0 * GIB } else { u })
    };
    assert!(shown_from(&run(15, g)).is_some());
}

#[test]
fn a_start_up_read_as_growth_does_not_narrow_the_first_range_past_the_oom() {
    // The demo's GPU 1: a steady job fills 96 GiB in its first 3 s; at
    // 4 s a second process takes 3 GiB over 3 s, then leaks 0.5 GiB/s in
    // half-second steps from 7 s: full 140 GiB at 89 s. While the
    // start-up is in the regime, its rate over the whole reads faster
    // than the leak; every forecast shown must hold the OOM.
    let f = |s: u64| {
        let s = s as f64;
        let steady = 96.0 * (s / 3.0).min(1.0);
        let age = (s - 4.0).max(0.0);
        let start = 3.0 * (age / 3.0).min(1.0);
        let leak = if age > 3.0 {
            ((age - 3.0) * 2.0).floor() / 2.0 * 0.5
        } else {
            0.0
        };
        let u = (steady + start + leak) * GIB;
        (u, u)
    };
    let oom_s = 7.0 + (140.0 - 99.0) / 0.5;
    let oom_ms = 1_000_000 + (oom_s * 1000.0) as u64;
    let o = run(oom_s as u64, f);
    let first = shown_from(&o).expect("a forecast");
    assert!(first <= 15, "shown {first} s in");
    for (s, x) in o.iter().enumerate().skip(first) {
        if let Some(fc) = x.forecast {
            assert!(fc.contains(oom_ms), "at {s} s: {fc:?}, OOM at {oom_s} s");
        }
    }
}

mod leaking;
