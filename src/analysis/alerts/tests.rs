//! The alerts' episodes: firing, hysteresis and re-arming.

use super::*;
use crate::analysis::slope::Rate;
use crate::model::MemInfo;

/// The defaults: memory 80/95 %, temperature 80/90 °C, power 90/98 %,
/// forecast alerts below 5 minutes.
fn levels() -> AlertLevels {
    AlertLevels::from_config(&Thresholds::default(), &Alerts::default())
}

fn gpu_at(used_pct: u64) -> GpuSample {
    GpuSample {
        index: 2,
        mem: Some(MemInfo {
            used: used_pct,
            reserved: 0,
            free: 100 - used_pct,
            total: 100,
        }),
        ..Default::default()
    }
}

#[test]
fn latch_fires_once_per_crossing() {
    let hold = REARM_HOLD.as_millis() as u64;
    let mut l = Latch::default();
    assert!(!l.step(0, false, true));
    assert!(l.step(1, true, false));
    assert!(!l.step(2, true, false));
    // Hovering between warn and crit: still fired, no re-arm.
    assert!(!l.step(3, false, false));
    assert!(!l.step(4, true, false));
    assert!(l.fired());
    // Back, but not for long: still one episode.
    assert!(!l.step(5, false, true));
    assert!(!l.step(5 + hold - 1, false, true));
    assert!(l.fired());
    assert!(!l.step(5 + hold, true, false), "the same episode");
    // Back for the whole hold: re-armed, the next crossing fires.
    assert!(!l.step(10 + hold, false, true));
    assert!(!l.step(10 + 2 * hold, false, true));
    assert!(!l.fired());
    assert!(l.step(11 + 2 * hold, true, false));
}

#[test]
fn power_hovering_at_its_limit_with_dips_rings_once() {
    // The H200 run: power at 98-99 % of the limit, dipping to 60 %
    // for a second every few seconds (data loading between steps),
    // for 70 s: one alert, not eighteen.
    let mut a = GpuAlerts::default();
    let lv = levels();
    let mut fired = 0;
    for s in 0..70u64 {
        let mut g = gpu_at(10);
        g.power_limit_mw = Some(700_000);
        g.power_mw = Some(if s % 4 == 3 {
            420_000
        } else {
            690_000 + (s % 2) as u32 * 3_000
        });
        fired += a.check(s * 1000, &g, None, &lv).len();
    }
    assert_eq!(fired, 1);
}

#[test]
fn power_straddling_its_critical_level_rings_once_per_episode() {
    // 97.9 % and 98.1 % of the limit in turn (critical from 98 %) for
    // 70 s: one alert. It leaves only below the warn level (90 %) and
    // must stay there for `REARM_HOLD` before the next crossing rings.
    let mut a = GpuAlerts::default();
    let lv = levels();
    let hold_s = REARM_HOLD.as_secs();
    let mut at = |s: u64, mw: u32| {
        let mut g = gpu_at(10);
        g.power_limit_mw = Some(700_000);
        g.power_mw = Some(mw);
        a.check(s * 1000, &g, None, &lv).len()
    };
    let hovering: usize = (0..70)
        .map(|s| at(s, [685_300, 686_700][s as usize % 2]))
        .sum();
    assert_eq!(hovering, 1);
    // At 91 % (between warn and crit) for two minutes: not back.
    let between: usize = (70..190).map(|s| at(s, 637_000)).sum();
    assert_eq!(between, 0);
    assert_eq!(at(190, 690_000), 0, "the same episode");
    // Below warn for less than the hold, then over again: still one.
    let short: usize = (191..191 + hold_s - 1).map(|s| at(s, 500_000)).sum();
    assert_eq!(short + at(191 + hold_s, 690_000), 0);
    // Below warn for the whole hold: the next crossing is a new episode.
    let back: usize = (300..300 + hold_s + 1).map(|s| at(s, 500_000)).sum();
    assert_eq!(back, 0);
    assert_eq!(at(301 + hold_s, 690_000), 1);
}

#[test]
fn memory_alert_fires_once_and_rearms_below_warn() {
    let mut a = GpuAlerts::default();
    let lv = levels();
    let series = [50, 96, 97, 94, 96, 85, 96, 70, 99];
    // Each reading held for a minute and a second, read every second.
    let mut t = 0;
    let fired: Vec<bool> = series
        .iter()
        .map(|&u| {
            (0..61).fold(false, |any, _| {
                t += 1000;
                !a.check(t, &gpu_at(u), None, &lv).is_empty() || any
            })
        })
        .collect();
    assert_eq!(
        fired,
        [false, true, false, false, false, false, false, false, true]
    );
}

#[test]
fn a_spike_between_samples_counts_for_memory() {
    let mut a = GpuAlerts::default();
    let mut g = gpu_at(60);
    g.mem_peak = Some(97);
    let v = a.check(7, &g, None, &levels());
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].kind, AlertKind::MemoryCritical);
    assert_eq!(v[0].severity, Severity::Critical);
    assert!(v[0].message.contains("97.0%"), "{}", v[0].message);
    let e = v[0].to_event();
    assert_eq!(e.kind, EventKind::Alert);
    assert_eq!((e.gpu, e.t_ms), (Some(2), 7));
    assert!(e.message.starts_with("[critical memory_critical]"));
}

#[test]
fn temperature_power_and_lost() {
    let mut a = GpuAlerts::default();
    let lv = levels();
    let mut g = gpu_at(10);
    g.temp_c = Some(91);
    g.power_mw = Some(690_000);
    g.power_limit_mw = Some(700_000);
    let kinds: Vec<_> = a.check(0, &g, None, &lv).iter().map(|x| x.kind).collect();
    assert_eq!(
        kinds,
        [AlertKind::TemperatureCritical, AlertKind::PowerCritical]
    );
    assert!(a.check(1, &g, None, &lv).is_empty());
    g.state = GpuState::Lost;
    let v = a.check(2, &g, None, &lv);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].kind, AlertKind::GpuLost);
    assert!(a.check(3, &g, None, &lv).is_empty());
    // Stale is not back: no re-arm.
    g.state = GpuState::Stale;
    a.check(4, &g, None, &lv);
    g.state = GpuState::Lost;
    assert!(a.check(5, &g, None, &lv).is_empty());
    g.state = GpuState::Ok;
    a.check(6, &g, None, &lv);
    g.state = GpuState::Lost;
    assert!(a.check(7, &g, None, &lv).is_empty(), "back for 1 ms only");
    g.state = GpuState::Ok;
    a.check(10, &g, None, &lv);
    a.check(10 + REARM_HOLD.as_millis() as u64, &g, None, &lv);
    g.state = GpuState::Lost;
    assert_eq!(a.check(70_000, &g, None, &lv).len(), 1);
    // A zero power limit is not a division by zero.
    let mut g = gpu_at(10);
    g.power_mw = Some(5);
    g.power_limit_mw = Some(0);
    assert!(GpuAlerts::default().check(0, &g, None, &lv).is_empty());
}

#[test]
fn forecast_alert_fires_below_the_limit_and_rearms_when_far() {
    let mut a = GpuAlerts::default();
    let lv = levels();
    let g = gpu_at(10);
    let f = |eta: f64| Forecast {
        made_ms: 0,
        room: crate::analysis::forecast::Room::flat(1 << 30),
        rate: Rate::exact(1.0),
        eta_s: eta,
        low_s: eta,
        high_s: Some(eta),
    };
    let seq = [
        Some(400.0),
        Some(290.0),
        Some(310.0),
        Some(200.0),
        Some(380.0),
        Some(100.0),
        None,
        Some(120.0),
    ];
    // An unconfident forecast (range out to an hour) does not ring.
    let mut wide = f(10.0);
    wide.high_s = Some(3600.0);
    assert!(a.check(0, &g, Some(&wide), &lv).is_empty());
    wide.high_s = None;
    assert!(a.check(0, &g, Some(&wide), &lv).is_empty());
    let mut t = 0;
    let fired: Vec<bool> = seq
        .iter()
        .map(|e| {
            let fc = e.map(f);
            (0..61).fold(false, |any, _| {
                t += 1000;
                !a.check(t, &g, fc.as_ref(), &lv).is_empty() || any
            })
        })
        .collect();
    assert_eq!(fired, [false, true, false, false, false, true, false, true]);
}

#[test]
fn the_forecast_alert_says_what_is_free_now() {
    // A forecast made when 1 GiB was free (carried since, or made from
    // the allocators' demand): the alert gives the driver's free memory
    // now, 90 B of this GPU's 100.
    let mut a = GpuAlerts::default();
    let f = Forecast {
        made_ms: 0,
        room: crate::analysis::forecast::Room::flat(1 << 30),
        rate: Rate::exact(1.0),
        eta_s: 60.0,
        low_s: 50.0,
        high_s: Some(70.0),
    };
    let out = a.check(1000, &gpu_at(10), Some(&f), &levels());
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].message.ends_with("(90B free)"), "{}", out[0].message);
}

#[test]
fn xid_events_become_alerts() {
    let ev = [
        Event {
            t_ms: 5,
            kind: EventKind::Xid,
            gpu: Some(1),
            pid: None,
            message: "XID 79 on GPU 1\x1b[2J".into(),
            after_oom: false,
        },
        Event {
            t_ms: 5,
            kind: EventKind::Note,
            gpu: None,
            pid: None,
            message: "x".into(),
            after_oom: false,
        },
    ];
    let v: Vec<_> = xid_alerts(&ev).collect();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].message, "XID 79 on GPU 1");
    assert_eq!(v[0].kind.name(), "xid");
}

#[test]
fn alerts_serialise_with_names() {
    let a = Alert {
        t_ms: 1,
        kind: AlertKind::ForecastFull,
        gpu: Some(0),
        pid: None,
        severity: Severity::Warn,
        message: "m".into(),
    };
    let j = serde_json::to_value(&a).unwrap();
    assert_eq!(j["kind"], "forecast_full");
    assert_eq!(j["severity"], "warn");
}
