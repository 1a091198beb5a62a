//! The comparison for machines (`--json`): one JSON object, its field
//! names stable and documented in docs/baseline.md ("JSON"). Bytes are
//! bytes, times seconds, rates bytes per second; a figure one side lacks
//! is `null`.

use anyhow::Result;
use serde_json::{Map, Value, json};

use crate::sanitize::clean;

use super::Comparison;
use super::diff::{GpuRef, ProcRef, Row};
use super::stats::RunStats;

/// `format` of the object.
pub(super) const FORMAT: &str = "vramwatch-baseline";
/// Bumped when a field changes meaning; new fields keep it.
pub(super) const VERSION: u32 = 1;

/// A number: an integer when it is one, `null` when not finite.
fn num(v: Option<f64>) -> Value {
    match v {
        Some(v) if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15 => json!(v as i64),
        Some(v) if v.is_finite() => json!(v),
        _ => Value::Null,
    }
}

fn figures(rows: &[Row]) -> Value {
    let mut m = Map::new();
    for r in rows {
        m.insert(
            r.key.to_owned(),
            json!({
                "baseline": num(r.old),
                "new": num(r.new),
                "change": num(r.change()),
                "change_pct": num(r.change_pct()),
            }),
        );
    }
    Value::Object(m)
}

fn run(r: &RunStats) -> Value {
    json!({
        "file": clean(&r.name),
        "host": clean(&r.header.host),
        "first_ms": r.first,
        "last_ms": r.last,
        "snapshots": r.snapshots,
        "interval_ms": r.header.interval_ms,
    })
}

fn gpu(g: &GpuRef) -> Value {
    json!({
        "index": g.index,
        "name": clean(&g.name),
        "memory_total": g.total,
        "peak_bytes": g.peak,
    })
}

fn process(p: &ProcRef) -> Value {
    json!({
        "gpu": p.gpu,
        "pid": p.pid,
        "user": clean(&p.user),
        "command": clean(&p.command),
        "program": clean(&p.program),
        "peak_bytes": p.peak,
    })
}

fn only(gpus: &[GpuRef], procs: &[ProcRef]) -> Value {
    json!({
        "gpus": gpus.iter().map(gpu).collect::<Vec<_>>(),
        "processes": procs.iter().map(process).collect::<Vec<_>>(),
    })
}

/// The object, pretty-printed, with a newline at the end.
pub(super) fn json(new: &RunStats, old: &RunStats, cmp: &Comparison) -> Result<String> {
    let gpus: Vec<Value> = cmp
        .gpus
        .iter()
        .map(|g| {
            json!({
                "new": gpu(&g.new),
                "baseline": gpu(&g.old),
                "matched_by": g.basis.name(),
                "figures": figures(&g.rows),
            })
        })
        .collect();
    let procs: Vec<Value> = cmp
        .procs
        .iter()
        .map(|p| {
            json!({
                "new": process(&p.new),
                "baseline": process(&p.old),
                "matched_by": p.basis.name(),
                "figures": figures(&p.rows),
                "allocator": if p.alloc.is_empty() { Value::Null } else { figures(&p.alloc) },
            })
        })
        .collect();
    let gate = cmp.gate.as_ref().map_or(Value::Null, |g| {
        json!({
            "metric": g.metric.name(),
            "threshold": g.threshold.to_string(),
            "passed": g.passed,
            "checked": g.checked,
            "reason": g.reason,
            "over": g.over.iter().map(|o| json!({
                "what": o.what,
                "baseline": num(Some(o.old)),
                "new": num(Some(o.new)),
            })).collect::<Vec<_>>(),
        })
    });
    let v = json!({
        "format": FORMAT,
        "version": VERSION,
        "new": run(new),
        "baseline": run(old),
        "p95": {"method": "histogram", "resolution_bytes": cmp.p95_resolution},
        "gpus": gpus,
        "processes": procs,
        "only_new": only(&cmp.gpus_only.0, &cmp.procs_only.0),
        "only_baseline": only(&cmp.gpus_only.1, &cmp.procs_only.1),
        "elsewhere": cmp.elsewhere.iter().map(|(a, b)| json!({"new_gpu": a, "baseline_gpu": b})).collect::<Vec<_>>(),
        "gate": gate,
    });
    let mut s = serde_json::to_string_pretty(&v)?;
    s.push('\n');
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_integers_when_whole_and_null_when_not_finite() {
        assert_eq!(num(Some(150754820096.0)).to_string(), "150754820096");
        assert_eq!(num(Some(-1.5)).to_string(), "-1.5");
        assert_eq!(num(Some(f64::NAN)), Value::Null);
        assert_eq!(num(None), Value::Null);
    }
}
