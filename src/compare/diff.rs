//! The comparison: a row per figure of each matched GPU and process
//! (baseline, new, change, % change), and what matched nothing. The gate
//! is `gate`.

use super::gpu_match::GpuBasis;
use super::matching::ProcBasis;
use super::series::MemStats;
use super::stats::{AllocPeak, GpuStats, ProcStats, RunStats};

/// What a figure is measured in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    Bytes,
    Seconds,
    BytesPerSecond,
    Count,
    /// 0..=1, shown as a percentage.
    Ratio,
}

/// One figure of both runs.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Row {
    /// Its JSON name.
    pub(crate) key: &'static str,
    /// Its name in the table.
    pub(crate) label: &'static str,
    pub(crate) unit: Unit,
    pub(crate) old: Option<f64>,
    pub(crate) new: Option<f64>,
}

impl Row {
    pub(crate) fn change(&self) -> Option<f64> {
        Some(self.new? - self.old?)
    }

    /// Change relative to the baseline, in percent; `None` from 0.
    pub(crate) fn change_pct(&self) -> Option<f64> {
        let old = self.old?;
        (old != 0.0).then(|| self.change().map(|c| c * 100.0 / old.abs()))?
    }
}

/// The memory figures of a series, and its events, as rows.
fn mem_rows(old: (&MemStats, u64, [u64; 2]), new: (&MemStats, u64, [u64; 2])) -> Vec<Row> {
    let row = |key, label, unit, f: &dyn Fn(&MemStats, u64) -> Option<f64>| Row {
        key,
        label,
        unit,
        old: f(old.0, old.1),
        new: f(new.0, new.1),
    };
    let count = |key, label, i: usize| Row {
        key,
        label,
        unit: Unit::Count,
        old: Some(old.2[i] as f64),
        new: Some(new.2[i] as f64),
    };
    vec![
        row("peak_bytes", "peak", Unit::Bytes, &|m, _| {
            (m.n > 0).then_some(m.peak as f64)
        }),
        row("mean_bytes", "mean", Unit::Bytes, &|m, _| m.mean()),
        row("p95_bytes", "p95", Unit::Bytes, &|m, _| {
            m.p95().map(|v| v as f64)
        }),
        row("time_to_peak_s", "time to peak", Unit::Seconds, &|m, t0| {
            (m.n > 0).then(|| m.peak_at.saturating_sub(t0) as f64 / 1000.0)
        }),
        row(
            "growth_bytes_per_s",
            "growth",
            Unit::BytesPerSecond,
            &|m, _| m.growth(),
        ),
        count("suspected_ooms", "suspected OOMs", 0),
        count("alerts", "alerts", 1),
    ]
}

fn alloc_rows(old: &AllocPeak, new: &AllocPeak) -> Vec<Row> {
    let row = |key, label, unit, f: fn(&AllocPeak) -> f64| Row {
        key,
        label,
        unit,
        old: Some(f(old)),
        new: Some(f(new)),
    };
    vec![
        row("allocated_peak_bytes", "allocated peak", Unit::Bytes, |a| {
            a.allocated_peak as f64
        }),
        row("reserved_peak_bytes", "reserved peak", Unit::Bytes, |a| {
            a.reserved_peak as f64
        }),
        row(
            "fragmentation_peak",
            "fragmentation peak",
            Unit::Ratio,
            |a| a.frag_peak,
        ),
        row("allocator_ooms", "allocator OOMs", Unit::Count, |a| {
            a.ooms as f64
        }),
        row("alloc_retries", "alloc retries", Unit::Count, |a| {
            a.retries as f64
        }),
    ]
}

/// A GPU as the comparison names it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GpuRef {
    pub(crate) index: u32,
    pub(crate) name: String,
    pub(crate) total: u64,
    pub(crate) peak: u64,
}

impl GpuRef {
    fn of(g: &GpuStats) -> GpuRef {
        GpuRef {
            index: g.index,
            name: g.name.clone(),
            total: g.total,
            peak: g.mem.peak,
        }
    }
}

/// A process as the comparison names it (strings as read: clean them
/// before showing them).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ProcRef {
    pub(crate) gpu: u32,
    pub(crate) pid: u32,
    pub(crate) user: String,
    pub(crate) command: String,
    pub(crate) program: String,
    pub(crate) peak: u64,
}

impl ProcRef {
    fn of(p: &ProcStats) -> ProcRef {
        ProcRef {
            gpu: p.id.gpu,
            pid: p.id.key.pid,
            user: p.user.clone(),
            command: p.command.clone(),
            program: super::normalize::program(&p.command),
            peak: p.mem.peak,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GpuDiff {
    pub(crate) new: GpuRef,
    pub(crate) old: GpuRef,
    pub(crate) basis: GpuBasis,
    pub(crate) rows: Vec<Row>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ProcDiff {
    pub(crate) new: ProcRef,
    pub(crate) old: ProcRef,
    pub(crate) basis: ProcBasis,
    /// Memory and events; then the allocator's figures when both have them.
    pub(crate) rows: Vec<Row>,
    pub(crate) alloc: Vec<Row>,
}

pub(crate) fn gpu_diff(new: &GpuStats, old: &GpuStats, basis: GpuBasis) -> GpuDiff {
    fn side(g: &GpuStats) -> (&MemStats, u64, [u64; 2]) {
        let e = g.events;
        (&g.mem, g.origin(), [e.ooms, e.alerts])
    }
    GpuDiff {
        new: GpuRef::of(new),
        old: GpuRef::of(old),
        basis,
        rows: mem_rows(side(old), side(new)),
    }
}

pub(crate) fn proc_diff(new: &ProcStats, old: &ProcStats, basis: ProcBasis) -> ProcDiff {
    fn side(p: &ProcStats) -> (&MemStats, u64, [u64; 2]) {
        let e = p.events;
        (&p.mem, p.first_seen, [e.ooms, e.alerts])
    }
    ProcDiff {
        new: ProcRef::of(new),
        old: ProcRef::of(old),
        basis,
        rows: mem_rows(side(old), side(new)),
        alloc: match (&old.alloc, &new.alloc) {
            (Some(o), Some(n)) => alloc_rows(o, n),
            _ => Vec::new(),
        },
    }
}

/// The unmatched on one side.
pub(crate) fn gpu_refs(run: &RunStats, keep: impl Fn(usize) -> bool) -> Vec<GpuRef> {
    let v = run.gpus.iter().enumerate();
    v.filter(|(i, _)| keep(*i))
        .map(|(_, g)| GpuRef::of(g))
        .collect()
}

pub(crate) fn proc_refs(run: &RunStats, keep: impl Fn(usize) -> bool) -> Vec<ProcRef> {
    let v = run.procs.iter().enumerate();
    v.filter(|(i, _)| keep(*i))
        .map(|(_, p)| ProcRef::of(p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_change_is_none_from_zero() {
        let r = Row {
            key: "x",
            label: "x",
            unit: Unit::Count,
            old: Some(0.0),
            new: Some(3.0),
        };
        assert_eq!((r.change(), r.change_pct()), (Some(3.0), None));
        let r = Row {
            old: Some(200.0),
            ..r
        };
        assert_eq!(r.change_pct(), Some(-98.5));
    }
}
