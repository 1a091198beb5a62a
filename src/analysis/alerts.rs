//! Alerts: one per episode. Each fires once when its condition is crossed
//! and re-arms only when the figure has clearly gone back (below the warn
//! level, the forecast well past its limit, the GPU back on the bus) **and
//! stayed back for [`REARM_HOLD`]**: a value hovering at a threshold, or
//! dipping below it between two busy steps, rings once.
//!
//! | kind | fires when | re-arms when (held for `REARM_HOLD`) | severity |
//! | --- | --- | --- | --- |
//! | `memory_critical` | peak used % (fast-lane peak + reserved) ≥ memory crit | used % < memory warn | critical |
//! | `forecast_full` | the forecast's latest end < `forecast_below` | no forecast, or its central estimate > 1.25 × `forecast_below` | warn |
//! | `temperature_critical` | °C ≥ temperature crit | °C < temperature warn | critical |
//! | `power_critical` | draw ≥ power crit % of the limit | < power warn % | warn |
//! | `leak` | a process's leak flag is raised | the flag clears (its own hysteresis) | warn |
//! | `gpu_lost` | the GPU's state becomes lost | the state is ok again | critical |
//! | `xid` | every XID event in a snapshot | — | critical |

use std::time::Duration;

use serde::Serialize;

use crate::analysis::forecast::Forecast;
use crate::analysis::leak::{LeakFlag, LeakSeen};
use crate::config::{Alerts, Level, Severity, Thresholds};
use crate::model::units::{duration_short, rate_short};
use crate::model::{Event, EventKind, GpuSample, GpuState, Millis, ProcSample};

/// A forecast alert re-arms when the forecast is this many times its limit
/// (or gone).
pub const FORECAST_REARM: f64 = 1.25;

/// How long a figure must stay clearly back before its alert can fire
/// again: a power draw at 98 % that dips to 60 % for a second between
/// training steps is one episode, not eighteen.
pub const REARM_HOLD: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    GpuLost,
    Xid,
    MemoryCritical,
    ForecastFull,
    Leak,
    TemperatureCritical,
    PowerCritical,
}

impl AlertKind {
    /// Whether the dashboard rings the bell for it (with `[alerts] bell`):
    /// memory and the GPU itself, yes; temperature and power, which a busy
    /// GPU reaches every day, are shown and sent to the alert command but
    /// kept quiet, so the bell keeps meaning "memory".
    pub fn rings(self) -> bool {
        !matches!(
            self,
            AlertKind::TemperatureCritical | AlertKind::PowerCritical
        )
    }

    /// The name in `VRAMWATCH_ALERT_KIND` and in recordings.
    pub fn name(self) -> &'static str {
        match self {
            AlertKind::GpuLost => "gpu_lost",
            AlertKind::Xid => "xid",
            AlertKind::MemoryCritical => "memory_critical",
            AlertKind::ForecastFull => "forecast_full",
            AlertKind::Leak => "leak",
            AlertKind::TemperatureCritical => "temperature_critical",
            AlertKind::PowerCritical => "power_critical",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Alert {
    pub t_ms: Millis,
    pub kind: AlertKind,
    pub gpu: Option<u32>,
    pub pid: Option<u32>,
    #[serde(serialize_with = "severity_name")]
    pub severity: Severity,
    pub message: String,
}

fn severity_name<S: serde::Serializer>(s: &Severity, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(severity_str(*s))
}

/// "normal", "warn" or "critical".
pub fn severity_str(s: Severity) -> &'static str {
    match s {
        Severity::Normal => "normal",
        Severity::Warn => "warn",
        Severity::Critical => "critical",
    }
}

impl Alert {
    /// The alert as a recording event (kind [`EventKind::Alert`]).
    pub fn to_event(&self) -> Event {
        Event {
            t_ms: self.t_ms,
            kind: EventKind::Alert,
            gpu: self.gpu,
            pid: self.pid,
            message: format!(
                "[{} {}] {}",
                severity_str(self.severity),
                self.kind.name(),
                self.message
            ),
            after_oom: false,
        }
    }
}

impl From<&Alert> for Event {
    fn from(a: &Alert) -> Event {
        a.to_event()
    }
}

/// Fires once on a crossing; re-arms once a separate condition has held
/// for [`REARM_HOLD`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Latch {
    fired: bool,
    /// Since when the figure has been clearly back (while fired).
    back_since: Option<Millis>,
}

impl Latch {
    pub fn fired(&self) -> bool {
        self.fired
    }

    /// At `t_ms`, `over`: the condition holds now; `rearm`: the figure is
    /// clearly back. Returns whether to fire.
    pub fn step(&mut self, t_ms: Millis, over: bool, rearm: bool) -> bool {
        if !self.fired {
            if over {
                self.fired = true;
                self.back_since = None;
                return true;
            }
            return false;
        }
        if rearm && !over {
            let since = *self.back_since.get_or_insert(t_ms);
            if t_ms.saturating_sub(since) >= REARM_HOLD.as_millis() as u64 {
                self.fired = false;
                self.back_since = None;
            }
        } else {
            self.back_since = None;
        }
        false
    }
}

/// The levels the GPU alerts use.
#[derive(Clone, Debug, PartialEq)]
pub struct AlertLevels {
    pub memory: Level,
    pub temperature: Level,
    pub power: Level,
    pub forecast_below: Duration,
}

impl AlertLevels {
    /// The levels a configuration sets.
    pub fn from_config(t: &Thresholds, a: &Alerts) -> AlertLevels {
        AlertLevels {
            memory: t.memory,
            temperature: t.temperature,
            power: t.power,
            forecast_below: a.forecast_below,
        }
    }
}

/// The latches of one GPU.
#[derive(Clone, Debug, Default)]
pub struct GpuAlerts {
    memory: Latch,
    temperature: Latch,
    power: Latch,
    forecast: Latch,
    lost: Latch,
}

impl GpuAlerts {
    /// The alerts `g` (and its forecast) raise at `t_ms`.
    pub fn check(
        &mut self,
        t_ms: Millis,
        g: &GpuSample,
        forecast: Option<&Forecast>,
        lv: &AlertLevels,
    ) -> Vec<Alert> {
        let mut out = Vec::new();
        let gpu = g.index;
        let mut push = |kind, severity, message| {
            out.push(Alert {
                t_ms,
                kind,
                gpu: Some(gpu),
                pid: None,
                severity,
                message,
            })
        };
        let lost = g.state == GpuState::Lost;
        if self.lost.step(t_ms, lost, g.state == GpuState::Ok) {
            push(
                AlertKind::GpuLost,
                Severity::Critical,
                format!("GPU {gpu} is lost (fell off the bus or answers only with errors)"),
            );
        }
        if lost {
            return out;
        }
        if let Some(m) = g.mem
            && m.total > 0
        {
            // Not `MemInfo::used_pct`: a corrupt reading may not add up.
            let now = pct(m.used.saturating_add(m.reserved), m.total);
            let peak_used = g.mem_peak.unwrap_or(m.used).max(m.used);
            let peak = pct(peak_used.saturating_add(m.reserved), m.total);
            if self
                .memory
                .step(t_ms, peak >= lv.memory.crit, now < lv.memory.warn)
            {
                push(
                    AlertKind::MemoryCritical,
                    Severity::Critical,
                    format!(
                        "GPU {gpu} memory at {peak:.1}% (critical from {}%)",
                        lv.memory.crit
                    ),
                );
            }
        }
        if let Some(temp) = g.temp_c {
            let t = temp as f64;
            if self
                .temperature
                .step(t_ms, t >= lv.temperature.crit, t < lv.temperature.warn)
            {
                push(
                    AlertKind::TemperatureCritical,
                    Severity::Critical,
                    format!(
                        "GPU {gpu} at {temp} °C (critical from {} °C)",
                        lv.temperature.crit
                    ),
                );
            }
        }
        if let (Some(p), Some(limit)) = (g.power_mw, g.power_limit_mw)
            && limit > 0
        {
            let share = pct(p as u64, limit as u64);
            if self
                .power
                .step(t_ms, share >= lv.power.crit, share < lv.power.warn)
            {
                push(
                    AlertKind::PowerCritical,
                    Severity::Warn,
                    format!(
                        "GPU {gpu} drawing {:.0} W, {share:.0}% of its {:.0} W limit (critical from {}%)",
                        p as f64 / 1000.0,
                        limit as f64 / 1000.0,
                        lv.power.crit
                    ),
                );
            }
        }
        let below = lv.forecast_below.as_secs_f64();
        // Only a confident forecast alerts: full within the limit even at
        // the slow end of its range. (A start-up burst may forecast "~16 s"
        // with a range out to minutes; it is shown, not rung.)
        let soon = forecast.is_some_and(|f| f.high_s.is_some_and(|h| h < below));
        let far = forecast.is_none_or(|f| f.eta_s > below * FORECAST_REARM);
        if self.forecast.step(t_ms, soon, far)
            && let Some(f) = forecast
        {
            push(
                AlertKind::ForecastFull,
                Severity::Warn,
                format!(
                    "GPU {gpu} full in {} at {} ({} free)",
                    f.label(),
                    rate_short(f.rate.bps),
                    // Free now, as the driver says: a forecast carried from
                    // an earlier sample, or made from the allocators'
                    // demand, counted from other figures.
                    crate::model::units::bytes_short(g.mem.map_or(f.room.free, |m| m.free))
                ),
            );
        }
        out
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// One alert per XID event.
pub fn xid_alerts(events: &[Event]) -> impl Iterator<Item = Alert> + '_ {
    events
        .iter()
        .filter(|e| e.kind == EventKind::Xid)
        .map(|e| Alert {
            t_ms: e.t_ms,
            kind: AlertKind::Xid,
            gpu: e.gpu,
            pid: e.pid,
            severity: Severity::Critical,
            message: crate::sanitize::clean_capped(&e.message, 512),
        })
}

/// The alert for a process whose leak flag was just raised.
pub fn leak_alert(t_ms: Millis, p: &ProcSample, flag: &LeakFlag) -> Alert {
    let age = t_ms.saturating_sub(flag.onset_ms) / 1000;
    Alert {
        t_ms,
        kind: AlertKind::Leak,
        gpu: Some(p.gpu),
        pid: Some(p.pid),
        severity: Severity::Warn,
        message: format!(
            "PID {} on GPU {} leaking {} for {}{}: {}",
            p.pid,
            p.gpu,
            rate_short(flag.rate.bps),
            duration_short(age),
            match flag.seen_in {
                LeakSeen::Memory => "",
                LeakSeen::Tensors => " in its tensors",
            },
            crate::sanitize::clean_capped(p.label(), 200)
        ),
    }
}

#[cfg(test)]
mod tests;
