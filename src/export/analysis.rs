//! The analysis figures the exporter adds to `/metrics`: an `Analyzer` fed
//! by the same sampler, on a task of its own, publishing an [`Extra`] per
//! snapshot.

use std::sync::Arc;

use tokio::sync::{broadcast, watch};

use crate::analysis::{AnalysisConfig, Analyzer};
use crate::config::Severity;
use crate::export::{AlertState, Extra, GpuExtra, ProcExtra};
use crate::model::{GpuState, Snapshot};
use crate::sampler::Sampler;

/// What the analysis says about `snap`, as the exporter wants it.
pub fn extra_of(a: &Analyzer, snap: &Snapshot) -> Extra {
    let cfg = a.config();
    let forecast_below = cfg.levels.forecast_below.as_secs_f64();
    let mut out = Extra::default();
    for g in &snap.gpus {
        let Some(ga) = a.gpu(g.index) else { continue };
        let age = |made: u64| snap.t_ms.saturating_sub(made) as f64 / 1000.0;
        let seconds_to_full = ga
            .forecast
            .as_ref()
            .map(|f| (f.eta_s - age(f.made_ms)).max(0.0));
        out.gpus.push(GpuExtra {
            index: g.index,
            growth_bps: ga.rate.map(|r| r.bps),
            seconds_to_full,
        });
        let pct = g.mem.map(|m| {
            let peak = g.mem_peak.unwrap_or(m.used).max(m.used);
            peak.saturating_add(m.reserved) as f64 * 100.0 / m.total.max(1) as f64
        });
        out.alerts.push(AlertState {
            name: "memory".into(),
            gpu: Some(g.index),
            pid: None,
            severity: Severity::Critical,
            active: pct.is_some_and(|p| p >= cfg.levels.memory.crit),
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
        let Some(pa) = a.process(&p.key(), p.gpu) else {
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

/// Server options whose `/metrics` carry the analysis of `config`.
pub fn serve_options(
    sampler: &Sampler,
    config: &crate::config::Config,
) -> crate::export::ServeOptions {
    crate::export::ServeOptions {
        extra: Some(spawn(sampler, AnalysisConfig::from_config(config))),
        ..Default::default()
    }
}

/// Starts the analysis task (inside a tokio runtime); the receiver goes into
/// `ServeOptions::extra`.
pub fn spawn(sampler: &Sampler, cfg: AnalysisConfig) -> watch::Receiver<Option<Arc<Extra>>> {
    let (tx, rx) = watch::channel(None);
    let mut snaps = sampler.subscribe();
    tokio::spawn(async move {
        let mut analyzer = Analyzer::new(&cfg);
        loop {
            match snaps.recv().await {
                Ok(s) => {
                    analyzer.observe(&s);
                    if tx.send(Some(Arc::new(extra_of(&analyzer, &s)))).is_err() {
                        break;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => break,
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::fixture;

    #[test]
    fn a_leak_shows_as_growth_a_flag_and_an_alert_state() {
        let (_, snaps) = fixture::snapshots("leak", 1, 60, "me");
        let mut a = Analyzer::new(&AnalysisConfig::default());
        for s in &snaps {
            a.observe(s);
        }
        let x = extra_of(&a, snaps.last().unwrap());
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
