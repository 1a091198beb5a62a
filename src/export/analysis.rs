//! The analysis figures the exporter adds to `/metrics`, read from the
//! pipeline's assessment of each snapshot (nothing is analysed here).

use crate::analysis::{AnalysisConfig, Assessment};
use crate::config::Severity;
use crate::export::{AlertState, Extra, GpuExtra, ProcExtra};
use crate::model::{GpuState, Snapshot};

/// What the assessment says about `snap`, as the exporter wants it.
pub(crate) fn extra_of(a: &Assessment, snap: &Snapshot, cfg: &AnalysisConfig) -> Extra {
    let forecast_below = cfg.levels.forecast_below.as_secs_f64();
    let mut out = Extra::default();
    for g in &snap.gpus {
        let Some(ga) = a.gpu(g.index) else { continue };
        let age = |made: u64| snap.t_ms.saturating_sub(made) as f64 / 1000.0;
        let seconds_to_full = ga
            .forecast
            .as_ref()
            .map(|f| (f.eta_s - age(f.made_ms)).max(0.0));
        let left = |s: f64, made: u64| (s - age(made)).max(0.0);
        out.gpus.push(GpuExtra {
            index: g.index,
            growth_bps: ga.rate.map(|r| r.bps),
            seconds_to_full,
            seconds_to_full_low: ga.forecast.map(|f| left(f.low_s, f.made_ms)),
            seconds_to_full_high: ga
                .forecast
                .and_then(|f| f.high_s.map(|h| left(h, f.made_ms))),
            at_risk_ratio: ga.at_risk_pct.map(|p| p / 100.0),
        });
        out.alerts.push(AlertState {
            name: "at_risk".into(),
            gpu: Some(g.index),
            pid: None,
            severity: Severity::Warn,
            active: ga.at_risk_pct.is_some(),
        });
        out.alerts.push(AlertState {
            name: "memory".into(),
            gpu: Some(g.index),
            pid: None,
            severity: Severity::Critical,
            active: g
                .peak_pct_full()
                .is_some_and(|p| p >= cfg.levels.memory.crit),
        });
        let surely_full = ga
            .forecast
            .as_ref()
            .and_then(|f| f.high_s.map(|h| h - age(f.made_ms)))
            .is_some_and(|h| forecast_below > 0.0 && h < forecast_below);
        out.alerts.push(AlertState {
            name: "forecast".into(),
            gpu: Some(g.index),
            pid: None,
            severity: Severity::Warn,
            active: surely_full,
        });
        out.alerts.push(AlertState {
            name: "gpu_lost".into(),
            gpu: Some(g.index),
            pid: None,
            severity: Severity::Critical,
            active: g.state == GpuState::Lost,
        });
    }
    for p in &snap.procs {
        let Some(pa) = a.process(&p.id()) else {
            continue;
        };
        out.procs.push(ProcExtra {
            key: p.key(),
            gpu: p.gpu,
            growth_bps: pa.rate.map(|r| r.bps),
            leak_suspected: pa.leak.is_some(),
        });
        if pa.leak.is_some() {
            out.alerts.push(AlertState {
                name: "leak".into(),
                gpu: Some(p.gpu),
                pid: Some(p.pid),
                severity: Severity::Warn,
                active: true,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::fixture;
    use crate::pipeline::analyse_all;

    #[test]
    fn a_leak_shows_as_growth_a_flag_and_an_alert_state() {
        let (_, snaps) = fixture::snapshots("leak", 1, 60, "me");
        let cfg = AnalysisConfig::default();
        let last = analyse_all(&cfg, snaps).pop().unwrap();
        let x = extra_of(&last.assessment, &last.snapshot, &cfg);
        let leak = x
            .procs
            .iter()
            .find(|p| p.key.pid == 52_090)
            .expect("the leak");
        assert!(leak.leak_suspected);
        assert!(leak.growth_bps.unwrap() > 500.0 * 1024.0 * 1024.0);
        assert!(x.gpus[0].growth_bps.unwrap() > 0.0);
        assert!(
            x.alerts
                .iter()
                .any(|s| s.name == "leak" && s.active && s.pid == Some(52_090))
        );
        assert!(x.alerts.iter().any(|s| s.name == "memory" && !s.active));
    }
}
