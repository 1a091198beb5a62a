//! Scoring the estimators against what really happened in a run of
//! snapshots (a sim scenario or a recording): when each process was
//! flagged leaking, and what its GPU's forecast said 60, 30 and 10 s before
//! each suspected OOM. `tools/dev/forecast_table.rs` prints it for the docs;
//! tests assert on it.
//!
//! A suspected OOM is a process that left its GPU while the GPU was within
//! [`OOM_NEAR_FULL_PCT`] of full at the snapshot before (as
//! [`crate::sampler::diff_events`] decides) or at the highest read of the
//! interval in which it left. Its time is the first snapshot without it.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::analysis::{Alert, AnalysisConfig, Analyzer, Forecast};
use crate::model::units::duration_short;
use crate::model::{EventKind, Millis, ProcId, ProcessKey, Snapshot};
use crate::sampler::{OOM_NEAR_FULL_PCT, OomCounts, diff_events};

/// How long before an OOM forecasts are looked up, seconds.
pub const LEADS_S: [u64; 3] = [60, 30, 10];

/// Forecast history kept per GPU.
const HISTORY_MS: u64 = 180_000;

#[derive(Clone, Debug, PartialEq)]
pub struct ProcRecord {
    pub gpu: u32,
    pub key: ProcessKey,
    pub label: String,
    pub first_seen_ms: Millis,
    pub last_seen_ms: Millis,
    /// When the leak flag was first raised.
    pub leak_flagged_ms: Option<Millis>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OomRecord {
    pub gpu: u32,
    pub key: ProcessKey,
    pub label: String,
    /// First snapshot without the process: the OOM is seen here.
    pub oom_ms: Millis,
    /// For each of [`LEADS_S`], the GPU forecast of the newest snapshot at
    /// least that long before `oom_ms` (with its time), if there was one.
    pub forecasts: Vec<(u64, Option<Forecast>)>,
}

impl OomRecord {
    /// Whether the forecast made `lead_s` before contained the OOM.
    pub fn hit(&self, lead_s: u64) -> Option<bool> {
        self.forecasts
            .iter()
            .find(|(l, _)| *l == lead_s)
            .and_then(|(_, f)| f.as_ref())
            .map(|f| f.contains(self.oom_ms))
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scorecard {
    pub start_ms: Option<Millis>,
    pub end_ms: Option<Millis>,
    pub snapshots: u64,
    /// Every process incarnation seen, in order of first appearance.
    pub procs: Vec<ProcRecord>,
    pub ooms: Vec<OomRecord>,
    pub alerts: Vec<Alert>,
}

impl Scorecard {
    pub fn proc(&self, key: &ProcessKey, gpu: u32) -> Option<&ProcRecord> {
        self.procs.iter().find(|p| p.key == *key && p.gpu == gpu)
    }

    /// Seconds from the first appearance of `p` to its leak flag.
    pub fn flagged_after_s(p: &ProcRecord) -> Option<f64> {
        p.leak_flagged_ms
            .map(|f| f.saturating_sub(p.first_seen_ms) as f64 / 1000.0)
    }

    /// The markdown table header matching [`Scorecard::markdown_rows`].
    pub fn markdown_header() -> String {
        let mut s = String::from("| run | process | leak flagged | OOM seen |");
        for l in LEADS_S {
            s.push_str(&format!(" forecast at T−{l} s |"));
        }
        s.push_str("\n| --- | --- | --- | --- |");
        for _ in LEADS_S {
            s.push_str(" --- |");
        }
        s
    }

    /// One row per OOM and per flagged process that did not OOM; one "none"
    /// row when there are neither. The flag and OOM times are counted from
    /// the process's first sample; a forecast reads "~eta (low–high), real
    /// N ✓" where N is how long after the forecast the OOM was really seen,
    /// ✓ when the range held it and ✗ when not.
    pub fn markdown_rows(&self, run: &str) -> Vec<String> {
        let mut rows = Vec::new();
        let secs = |ms: Millis, from: Millis| duration_short(ms.saturating_sub(from) / 1000);
        for o in &self.ooms {
            let p = self.proc(&o.key, o.gpu);
            let first = p.map_or(o.oom_ms, |p| p.first_seen_ms);
            let flagged = p
                .and_then(|p| p.leak_flagged_ms)
                .map_or_else(|| "not flagged".to_owned(), |f| secs(f, first));
            let mut row = format!(
                "| {run} | PID {} on GPU {} `{}` | {} | {} |",
                o.key.pid,
                o.gpu,
                short(&o.label),
                flagged,
                secs(o.oom_ms, first)
            );
            for (_, f) in &o.forecasts {
                let cell = match f {
                    None => "no forecast".to_owned(),
                    Some(f) => format!(
                        "{}, real {} {}",
                        f.label(),
                        secs(o.oom_ms, f.made_ms),
                        if f.contains(o.oom_ms) { "✓" } else { "✗" }
                    ),
                };
                row.push_str(&format!(" {cell} |"));
            }
            rows.push(row);
        }
        for p in &self.procs {
            let oomed = self.ooms.iter().any(|o| o.key == p.key && o.gpu == p.gpu);
            if let (Some(f), false) = (p.leak_flagged_ms, oomed) {
                let mut row = format!(
                    "| {run} | PID {} on GPU {} `{}` | {} | no OOM |",
                    p.key.pid,
                    p.gpu,
                    short(&p.label),
                    secs(f, p.first_seen_ms)
                );
                for _ in LEADS_S {
                    row.push_str(" — |");
                }
                rows.push(row);
            }
        }
        if rows.is_empty() {
            let mut row = format!("| {run} | — | none flagged | no OOM |");
            for _ in LEADS_S {
                row.push_str(" — |");
            }
            rows.push(row);
        }
        rows
    }
}

fn short(label: &str) -> String {
    let clean = crate::sanitize::clean_capped(label, 40).replace(['`', '|'], "'");
    if label.chars().count() > 40 {
        format!("{clean}…")
    } else {
        clean
    }
}

/// Feeds snapshots to an [`Analyzer`] and keeps the score.
#[derive(Debug)]
pub struct Scorer {
    analyzer: Analyzer,
    prev: Option<Snapshot>,
    /// What the processes' allocators have counted ([`diff_events`]).
    counts: OomCounts,
    history: BTreeMap<u32, VecDeque<(Millis, Option<Forecast>)>>,
    index: HashMap<ProcId, usize>,
    card: Scorecard,
}

impl Scorer {
    pub fn new(cfg: &AnalysisConfig) -> Scorer {
        Scorer {
            analyzer: Analyzer::new(cfg),
            prev: None,
            counts: OomCounts::default(),
            history: BTreeMap::new(),
            index: HashMap::new(),
            card: Scorecard::default(),
        }
    }

    pub fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }

    pub fn observe(&mut self, snap: &Snapshot) {
        let t = snap.t_ms;
        let alerts = self.analyzer.observe(snap);
        self.card.alerts.extend(alerts);
        self.card.snapshots += 1;
        self.card.start_ms.get_or_insert(t);
        self.card.end_ms = Some(t);

        for p in &snap.procs {
            let k = p.id();
            let i = *self.index.entry(k).or_insert_with(|| {
                self.card.procs.push(ProcRecord {
                    gpu: p.gpu,
                    key: p.key(),
                    label: p.label().to_owned(),
                    first_seen_ms: t,
                    last_seen_ms: t,
                    leak_flagged_ms: None,
                });
                self.card.procs.len() - 1
            });
            let r = &mut self.card.procs[i];
            r.last_seen_ms = r.last_seen_ms.max(t);
            if r.leak_flagged_ms.is_none()
                && self
                    .analyzer
                    .process(&p.id())
                    .is_some_and(|a| a.leak.is_some())
            {
                r.leak_flagged_ms = Some(t);
            }
        }

        if let Some(prev) = &self.prev {
            for e in diff_events(prev, snap, &mut self.counts) {
                let (Some(gpu), Some(pid)) = (e.gpu, e.pid) else {
                    continue;
                };
                let near_full_now = snap
                    .gpus
                    .iter()
                    .find(|g| g.index == gpu)
                    .and_then(|g| g.peak_pct_full())
                    .is_some_and(|p| p >= OOM_NEAR_FULL_PCT);
                // (A process still listed ran out of memory and went on:
                // its exit, if it comes, is the OOM scored.)
                let listed = snap.procs.iter().any(|p| p.pid == pid && p.gpu == gpu);
                if listed {
                    continue;
                }
                let Some(gone) = prev.procs.iter().find(|p| p.pid == pid && p.gpu == gpu) else {
                    continue;
                };
                // Its exit soon after an OOM its allocator counted
                // (`after_oom`) is that OOM.
                let oom = e.kind == EventKind::SuspectedOom
                    || (e.kind == EventKind::ProcessExited && (near_full_now || e.after_oom));
                if !oom {
                    continue;
                }
                let hist = self.history.get(&gpu);
                let forecasts = LEADS_S
                    .iter()
                    .map(|&lead| {
                        let at = t.saturating_sub(lead * 1000);
                        let f = hist.and_then(|h| {
                            h.iter()
                                .rev()
                                .find(|(ht, _)| *ht <= at)
                                .and_then(|(_, f)| *f)
                        });
                        (lead, f)
                    })
                    .collect();
                self.card.ooms.push(OomRecord {
                    gpu,
                    key: gone.key(),
                    label: gone.label().to_owned(),
                    oom_ms: t,
                    forecasts,
                });
            }
        }

        for g in &snap.gpus {
            let h = self.history.entry(g.index).or_default();
            h.push_back((t, self.analyzer.gpu(g.index).and_then(|a| a.forecast)));
            while h
                .front()
                .is_some_and(|(ht, _)| t.saturating_sub(*ht) > HISTORY_MS)
            {
                h.pop_front();
            }
        }
        self.prev = Some(snap.clone());
    }

    pub fn finish(self) -> Scorecard {
        self.card
    }
}

/// Scores a whole run (snapshots owned or borrowed).
pub fn score<S: Borrow<Snapshot>>(
    cfg: &AnalysisConfig,
    snaps: impl IntoIterator<Item = S>,
) -> Scorecard {
    let mut s = Scorer::new(cfg);
    for snap in snaps {
        s.observe(snap.borrow());
    }
    s.finish()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::alloc::{AllocStats, DeviceAlloc};
    use crate::model::units::GIB;
    use crate::model::{GpuSample, MemInfo, ProcSample};

    /// Second `s`: GPU 0 `pct` % full, with PID 9 (whose allocator has
    /// counted `ooms`) while `alive`.
    fn snap(s: u64, pct: u64, ooms: u64, alive: bool) -> Snapshot {
        let p = ProcSample {
            pid: 9,
            start_time: 7,
            gpu: 0,
            mem: Some(pct * GIB),
            torch: Some(Arc::new(AllocStats {
                devices: vec![DeviceAlloc {
                    num_ooms: ooms,
                    ..Default::default()
                }],
                ..Default::default()
            })),
            ..Default::default()
        };
        Snapshot {
            seq: s,
            t_ms: 1_000_000 + s * 1000,
            gpus: vec![GpuSample {
                index: 0,
                mem: Some(MemInfo {
                    used: pct * GIB,
                    reserved: 0,
                    free: (100 - pct) * GIB,
                    total: 100 * GIB,
                }),
                mem_peak: Some(pct * GIB),
                ..Default::default()
            }],
            procs: if alive { vec![p] } else { Vec::new() },
            events: Vec::new(),
        }
    }

    #[test]
    fn the_exit_after_a_counted_oom_is_that_oom() {
        // Counted at 3 s with the GPU at 60 % (the allocation that failed
        // never showed), gone at 5 s: one OOM, seen at the exit. Gone
        // without a count: none.
        let ooms = |counted: bool| {
            let snaps = [
                snap(1, 60, 0, true),
                snap(2, 60, 0, true),
                snap(3, 60, u64::from(counted), true),
                snap(4, 60, u64::from(counted), true),
                snap(5, 10, 0, false),
            ];
            score(&AnalysisConfig::default(), &snaps).ooms
        };
        let with = ooms(true);
        assert_eq!(with.len(), 1, "{with:?}");
        assert_eq!(with[0].oom_ms, 1_005_000);
        assert!(ooms(false).is_empty());
    }
}
