//! Scoring the analysis against ground truth: a workload that says when it
//! started, when its memory began to grow and when (if ever) CUDA raised
//! out-of-memory (`python/workloads/`, one `<run>.truth.json` beside each
//! recording). For one run on one GPU:
//!
//! - at each checkpoint T−120, −60, −30, −10 s before the OOM, whether a
//!   forecast was shown (the GPU's forecast at the newest snapshot at or
//!   before the checkpoint) and whether its range held the real OOM time;
//!   a checkpoint before the growth began does not count;
//! - when the leak flag came, counted from the start of the growth;
//! - false alarms on a run that must not alarm: any forecast "full in less
//!   than 10 minutes" and any leak flag on its GPU.
//!
//! Nothing here looks ahead: the analysis is fed one snapshot at a time
//! exactly as the pipeline feeds it ([`crate::pipeline::analyse`]).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::analysis::{AnalysisConfig, Analyzer, Forecast};
use crate::model::{Millis, Snapshot, SystemInfo};

/// How long before the OOM forecasts are checked, seconds.
pub const CHECKPOINTS_S: [u64; 4] = [120, 60, 30, 10];

/// A forecast shorter than this on a run with no OOM is a false alarm.
pub const FALSE_ALARM_BELOW_S: f64 = 600.0;

/// What the run must bring about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    Oom,
    NoAlarm,
}

/// How the workload ended, as its truth file says (`outcome`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Completed,
    Oom,
    /// It grew towards an OOM but its time ran out first (exit 4): the
    /// growth is real, the OOM time unknown (after the end, if ever).
    NoOomBeforeDeadline,
    #[serde(other)]
    Other,
}

/// A workload's ground truth (the fields the scorer uses; the file has
/// more).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Truth {
    pub workload: String,
    #[serde(default)]
    pub variant: Option<String>,
    #[serde(default)]
    pub speed: Option<f64>,
    /// The CUDA device index the workload used.
    #[serde(default)]
    pub device: Option<u32>,
    /// The device's UUID as PyTorch gives it (matched to NVML's).
    #[serde(default)]
    pub device_uuid: Option<String>,
    #[serde(default)]
    pub pids: Vec<u32>,
    pub start_unix_ms: Millis,
    #[serde(default)]
    pub growth_start_unix_ms: Option<Millis>,
    #[serde(default)]
    pub oom_unix_ms: Option<Millis>,
    #[serde(default)]
    pub oom_pid: Option<u32>,
    pub expect: Expect,
    #[serde(default)]
    pub outcome: Option<Outcome>,
    /// When the workload ended (the last moment a run without an OOM is
    /// known to have had none).
    #[serde(default)]
    pub end_unix_ms: Option<Millis>,
}

/// Why a truth file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TruthError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: line {line}, column {column}: {message}")]
    Malformed {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error(
        "{path}: expects an OOM but has no oom_unix_ms (and its outcome is not \"no_oom_before_deadline\")"
    )]
    NoOomTime { path: String },
    #[error("{path}: {message}")]
    Times { path: String, message: String },
    #[error("{path}: larger than {} MiB: not a truth file", MAX_TRUTH_BYTES >> 20)]
    TooLarge { path: String },
}

/// The largest truth file read (they are a few KiB).
const MAX_TRUTH_BYTES: u64 = 4 << 20;

impl Truth {
    pub fn read(path: &Path) -> Result<Truth, TruthError> {
        let shown = crate::sanitize::path(path);
        let io = |source| TruthError::Io {
            path: shown.clone(),
            source,
        };
        use std::io::Read;
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .map_err(io)?
            .take(MAX_TRUTH_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() as u64 > MAX_TRUTH_BYTES {
            return Err(TruthError::TooLarge { path: shown });
        }
        let t: Truth = serde_json::from_slice(&bytes).map_err(|e| TruthError::Malformed {
            path: shown.clone(),
            line: e.line(),
            column: e.column(),
            message: crate::sanitize::clean_capped(&e.to_string(), 200),
        })?;
        if t.expect == Expect::Oom && t.oom_unix_ms.is_none() && !t.unreached() {
            return Err(TruthError::NoOomTime { path: shown });
        }
        t.times_in_order().map_err(|message| TruthError::Times {
            path: shown,
            message,
        })?;
        Ok(t)
    }

    /// An OOM was expected but the workload's time ran out first.
    pub fn unreached(&self) -> bool {
        self.expect == Expect::Oom
            && self.oom_unix_ms.is_none()
            && self.outcome == Some(Outcome::NoOomBeforeDeadline)
    }

    /// The start, the growth's start and the OOM in that order, and the
    /// OOM within a day of the start (a workload runs minutes).
    fn times_in_order(&self) -> Result<(), String> {
        const DAY_MS: Millis = 86_400_000;
        let start = self.start_unix_ms;
        if let Some(g) = self.growth_start_unix_ms
            && g < start
        {
            return Err(format!(
                "growth_start_unix_ms {g} is before start_unix_ms {start}"
            ));
        }
        if let Some(oom) = self.oom_unix_ms {
            if oom < start || oom - start > DAY_MS {
                return Err(format!(
                    "oom_unix_ms {oom} is not within a day after start_unix_ms {start}"
                ));
            }
            if let Some(g) = self.growth_start_unix_ms
                && g > oom
            {
                return Err(format!(
                    "growth_start_unix_ms {g} is after oom_unix_ms {oom}"
                ));
            }
        }
        Ok(())
    }

    /// The NVML index of the GPU the workload used: by UUID where the
    /// truth has one that the recording knows, else the CUDA index.
    pub fn gpu_in(&self, system: &SystemInfo) -> Option<u32> {
        let norm = |u: &str| {
            u.trim()
                .to_ascii_lowercase()
                .trim_start_matches("gpu-")
                .to_owned()
        };
        if let Some(want) = self
            .device_uuid
            .as_deref()
            .map(norm)
            .filter(|u| !u.is_empty())
            && let Some(g) = system.gpus.iter().find(|g| norm(&g.uuid) == want)
        {
            return Some(g.index);
        }
        self.device
    }

    /// A short name: workload, variant and speed.
    pub fn label(&self) -> String {
        let mut s = self.shape_raw();
        if let Some(x) = self.speed {
            s.push_str(&format!(" ×{x}"));
        }
        crate::sanitize::clean_capped(&s, 60)
    }

    /// The run's shape: workload and variant, whatever the speed.
    pub(crate) fn shape(&self) -> String {
        crate::sanitize::clean_capped(&self.shape_raw(), 60)
    }

    fn shape_raw(&self) -> String {
        let mut s = self.workload.clone();
        if let Some(v) = self.variant.as_deref().filter(|v| !v.is_empty()) {
            s.push('/');
            s.push_str(v);
        }
        s
    }
}

/// A forecast as it stood at a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Shown {
    /// When the snapshot it was shown with was taken.
    pub at_ms: Millis,
    /// Seconds from `at_ms`: central, earliest, latest (`None`: open).
    pub eta_s: f64,
    pub low_s: f64,
    pub high_s: Option<f64>,
    /// Whether the range held the real OOM.
    pub held: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Checkpoint {
    pub lead_s: u64,
    /// The growth had begun by then (else the checkpoint does not count).
    pub counts: bool,
    pub shown: Option<Shown>,
    /// The GPU was at risk (peaks at the top: the next larger allocation
    /// may fail) then.
    pub at_risk: bool,
}

/// One run's score.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunScore {
    pub run: String,
    pub label: String,
    /// Workload and variant ([`Truth::shape`]).
    pub shape: String,
    pub expect: Expect,
    pub gpu: u32,
    /// Seconds from the start of the growth to the OOM.
    pub growth_to_oom_s: Option<f64>,
    pub checkpoints: Vec<Checkpoint>,
    /// First forecast shown, seconds before the OOM (or after the start of
    /// the growth on a run without one).
    pub first_forecast_before_oom_s: Option<f64>,
    /// Seconds from the start of the growth to the first leak flag on the
    /// GPU (`None`: never flagged).
    pub leak_flag_after_growth_s: Option<f64>,
    /// What a run that must not alarm did anyway.
    pub false_alarms: Vec<String>,
    /// On a run whose OOM did not come before its end
    /// ([`Truth::unreached`]): the first forecast whose whole range passed
    /// before the end with no OOM (a forecast known wrong), if any.
    pub unreached: Option<Unreached>,
    /// Snapshots of the run that were analysed.
    pub snapshots: u64,
}

/// A run that grew towards an OOM that had not come when it ended.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Unreached {
    /// Seconds from the start of the growth to the end of the run.
    pub growth_to_end_s: Option<f64>,
    /// The first forecast whose latest end came before the run's end.
    pub range_passed: Option<String>,
}

impl RunScore {
    /// The checkpoints that count and whether each held: (counted, held).
    pub fn held(&self) -> (usize, usize) {
        let counted: Vec<_> = self.checkpoints.iter().filter(|c| c.counts).collect();
        let held = counted
            .iter()
            .filter(|c| c.shown.is_some_and(|s| s.held))
            .count();
        (counted.len(), held)
    }
}

/// Scores one run: `snapshots` of the recording in order, `truth` for the
/// workload on GPU `gpu`, analysed with `cfg`.
pub fn score_run(
    run: &str,
    truth: &Truth,
    gpu: u32,
    cfg: &AnalysisConfig,
    snapshots: impl IntoIterator<Item = Snapshot>,
) -> RunScore {
    let mut analyzer = Analyzer::new(cfg);
    let oom = truth.oom_unix_ms.filter(|_| truth.expect == Expect::Oom);
    let growth = truth.growth_start_unix_ms;
    // The newest forecast (and at-risk state) at or before each checkpoint.
    let mut at_checkpoint: Vec<Option<(Millis, Option<Forecast>, bool)>> =
        vec![None; CHECKPOINTS_S.len()];
    let mut first_forecast: Option<Millis> = None;
    let mut leak_at: Option<Millis> = None;
    let mut false_alarms = Vec::new();
    let unreached_end = truth.unreached().then_some(truth.end_unix_ms).flatten();
    let mut range_passed: Option<String> = None;
    let mut n = 0u64;
    for snap in snapshots {
        let t = snap.t_ms;
        n += 1;
        analyzer.observe(&snap);
        let forecast = analyzer.gpu(gpu).and_then(|g| g.forecast);
        let at_risk = analyzer.gpu(gpu).is_some_and(|g| g.at_risk_pct.is_some());
        if let Some(o) = oom {
            for (i, lead) in CHECKPOINTS_S.iter().enumerate() {
                if t <= o.saturating_sub(lead * 1000) {
                    at_checkpoint[i] = Some((t, forecast, at_risk));
                }
            }
            if t > o {
                // After the OOM nothing is scored.
                continue;
            }
        }
        if let Some(f) = forecast {
            first_forecast.get_or_insert(t);
            if let Some(end) = unreached_end
                && range_passed.is_none()
                && let (_, Some(hi)) = f.range_ms()
                && hi < end
            {
                range_passed = Some(format!(
                    "forecast {} shown {} s after the start: its range closed {} s before the end with no OOM",
                    f.label(),
                    t.saturating_sub(truth.start_unix_ms) / 1000,
                    (end - hi) / 1000
                ));
            }
            let left = f.eta_s - t.saturating_sub(f.made_ms) as f64 / 1000.0;
            if truth.expect == Expect::NoAlarm
                && left < FALSE_ALARM_BELOW_S
                && !false_alarms
                    .iter()
                    .any(|a: &String| a.starts_with("forecast"))
            {
                false_alarms.push(format!(
                    "forecast {} shown {} s after the start",
                    f.label(),
                    t.saturating_sub(truth.start_unix_ms) / 1000
                ));
            }
        }
        let leak = analyzer
            .processes()
            .any(|p| p.id.gpu == gpu && p.alive && p.leak.is_some());
        if leak && leak_at.is_none() {
            leak_at = Some(t);
            if truth.expect == Expect::NoAlarm {
                false_alarms.push(format!(
                    "leak flag {} s after the start",
                    t.saturating_sub(truth.start_unix_ms) / 1000
                ));
            }
        }
    }
    let checkpoints = CHECKPOINTS_S
        .iter()
        .zip(&at_checkpoint)
        .map(|(&lead, seen)| {
            let at = oom.map(|o| o.saturating_sub(lead * 1000));
            let counts = match (at, growth) {
                (Some(at), Some(g)) => at >= g,
                _ => false,
            };
            let at_risk = seen.is_some_and(|(_, _, r)| r);
            let shown = seen.and_then(|(t, f, _)| {
                let f = f?;
                let age = t.saturating_sub(f.made_ms) as f64 / 1000.0;
                Some(Shown {
                    at_ms: t,
                    eta_s: f.eta_s - age,
                    low_s: f.low_s - age,
                    high_s: f.high_s.map(|h| h - age),
                    held: oom.is_some_and(|o| f.contains(o)),
                })
            });
            Checkpoint {
                lead_s: lead,
                counts,
                shown,
                at_risk,
            }
        })
        .collect();
    let secs = |a: Millis, b: Millis| a.saturating_sub(b) as f64 / 1000.0;
    RunScore {
        run: crate::sanitize::clean_capped(run, 80),
        label: truth.label(),
        shape: truth.shape(),
        expect: truth.expect,
        gpu,
        growth_to_oom_s: oom.zip(growth).map(|(o, g)| secs(o, g)),
        checkpoints,
        first_forecast_before_oom_s: first_forecast.map(|f| match oom {
            Some(o) => secs(o, f),
            None => secs(f, growth.unwrap_or(truth.start_unix_ms)),
        }),
        leak_flag_after_growth_s: leak_at.map(|l| secs(l, growth.unwrap_or(truth.start_unix_ms))),
        false_alarms,
        unreached: truth.unreached().then(|| Unreached {
            growth_to_end_s: unreached_end.zip(growth).map(|(e, g)| secs(e, g)),
            range_passed,
        }),
        snapshots: n,
    }
}

/// The whole corpus: per-run rows and the totals the issue asks for.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub runs: usize,
    pub oom_runs: usize,
    /// Checkpoints at T−60/−30/−10 that count, and those whose forecast held.
    pub checkpoints: usize,
    pub held: usize,
    /// Of those, the ones where the growth had run [`SETTLED_GROWTH_S`] or
    /// more, and those whose forecast held: how the forecaster does once
    /// it has seen the growth for a while (most misses are in a growth's
    /// first seconds).
    pub settled_checkpoints: usize,
    pub settled_held: usize,
    /// Those where no forecast held but the GPU was shown at risk.
    pub at_risk_only: usize,
    /// OOM runs with a forecast shown by T−30 s (of those whose growth had
    /// begun by then).
    pub shown_by_30: usize,
    pub could_show_by_30: usize,
    /// The slowest leak flag after the start of growth on an OOM run, s.
    pub slowest_leak_flag_s: Option<f64>,
    /// OOM runs flagged within 20 s of the growth's start, within 21–25 s
    /// and later (as the tables round: to the second).
    pub flagged_within_20: usize,
    pub flagged_within_25: usize,
    pub flagged_later: usize,
    /// OOM runs never flagged.
    pub never_flagged: usize,
    pub no_alarm_runs: usize,
    pub false_alarm_runs: usize,
    /// Runs that grew towards an OOM that had not come by their end
    /// (not in `oom_runs`), those flagged as leaking, and those with a
    /// forecast whose whole range passed before the end.
    pub unreached_runs: usize,
    pub unreached_flagged: usize,
    pub unreached_range_passed: usize,
    /// The median width (latest − earliest end) of the ranges that held,
    /// as a share of the time then left: what a range costs (a range can
    /// always be made to hold by widening it).
    pub held_width: Option<f64>,
}

/// A checkpoint with at least this much growth behind it (s) counts in
/// [`Summary::settled_checkpoints`].
pub const SETTLED_GROWTH_S: f64 = 15.0;

impl Summary {
    pub fn of(runs: &[RunScore]) -> Summary {
        let mut s = Summary {
            runs: runs.len(),
            ..Summary::default()
        };
        let mut widths = Vec::new();
        for r in runs {
            match r.expect {
                Expect::NoAlarm => {
                    s.no_alarm_runs += 1;
                    s.false_alarm_runs += usize::from(!r.false_alarms.is_empty());
                }
                Expect::Oom if r.unreached.is_some() => {
                    s.unreached_runs += 1;
                    s.unreached_flagged += usize::from(r.leak_flag_after_growth_s.is_some());
                    s.unreached_range_passed += usize::from(
                        r.unreached
                            .as_ref()
                            .is_some_and(|u| u.range_passed.is_some()),
                    );
                }
                Expect::Oom => {
                    s.oom_runs += 1;
                    for c in r.checkpoints.iter().filter(|c| c.lead_s <= 60 && c.counts) {
                        s.checkpoints += 1;
                        let held = c.shown.is_some_and(|x| x.held);
                        s.held += usize::from(held);
                        let grown = r.growth_to_oom_s.map_or(0.0, |g| g - c.lead_s as f64);
                        if grown >= SETTLED_GROWTH_S {
                            s.settled_checkpoints += 1;
                            s.settled_held += usize::from(held);
                        }
                        s.at_risk_only += usize::from(!held && c.at_risk);
                        if let Some(x) = c.shown.filter(|x| x.held)
                            && let Some(h) = x.high_s
                        {
                            widths.push((h - x.low_s) / c.lead_s as f64);
                        }
                    }
                    if let Some(c) = r.checkpoints.iter().find(|c| c.lead_s == 30 && c.counts) {
                        s.could_show_by_30 += 1;
                        s.shown_by_30 += usize::from(c.shown.is_some());
                    }
                    match r.leak_flag_after_growth_s {
                        Some(x) => {
                            s.slowest_leak_flag_s =
                                Some(s.slowest_leak_flag_s.map_or(x, |m: f64| m.max(x)));
                            match x.round() {
                                x if x <= 20.0 => s.flagged_within_20 += 1,
                                x if x <= 25.0 => s.flagged_within_25 += 1,
                                _ => s.flagged_later += 1,
                            }
                        }
                        None => s.never_flagged += 1,
                    }
                }
            }
        }
        s.held_width = (!widths.is_empty()).then(|| super::slope::median(&mut widths));
        s
    }
}

mod table;
pub(crate) use table::grouped;
pub use table::markdown;

#[cfg(test)]
mod tests;
