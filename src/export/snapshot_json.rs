//! The snapshot as one JSON document (`vramwatch snapshot --json` and
//! `GET /snapshot`; docs/snapshot-json.md).

use serde_json::{Value, json};

use crate::model::{Snapshot, SystemInfo};

/// Identifies the JSON document's layout; bumped on breaking changes.
pub(crate) const SNAPSHOT_SCHEMA: &str = "vramwatch.snapshot/1";

/// The JSON document: system facts, the snapshot, and per-GPU unaccounted
/// memory (device used minus the sum of its processes).
pub(crate) fn to_json(system: &SystemInfo, snap: &Snapshot) -> Value {
    let mut gpus = serde_json::to_value(&snap.gpus).unwrap_or(Value::Null);
    if let Value::Array(list) = &mut gpus {
        for (v, g) in list.iter_mut().zip(&snap.gpus) {
            if let Value::Object(o) = v {
                o.insert("unaccounted".into(), json!(g.unaccounted(&snap.procs)));
            }
        }
    }
    let mut doc = json!({
        "schema": SNAPSHOT_SCHEMA,
        "vramwatch_version": env!("CARGO_PKG_VERSION"),
        "system": system,
        "seq": snap.seq,
        "t_ms": snap.t_ms,
        "gpus": gpus,
        "procs": snap.procs,
        "events": snap.events,
    });
    round_figures(&mut doc);
    doc
}

/// Rounds the document's measured fractions to what they are worth: a
/// process's `cpu_pct` to 0.1 (it arrives as an `f32`, printed with ten
/// digits of noise).
fn round_figures(doc: &mut Value) {
    let Some(procs) = doc.get_mut("procs").and_then(Value::as_array_mut) else {
        return;
    };
    for p in procs {
        if let Some(c) = p.get_mut("cpu_pct")
            && let Some(x) = c.as_f64()
        {
            *c = json!((x * 10.0).round() / 10.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::units::MIB;
    use crate::source::sim::SimWorld;

    const T0: u64 = 1_764_000_000_000;

    fn demo() -> (std::sync::Arc<SystemInfo>, Snapshot) {
        let w = SimWorld::new("demo", 1, T0).unwrap();
        (w.info(), w.snapshot(0, T0 + 30_000, "me"))
    }

    #[test]
    fn json_carries_schema_system_and_unaccounted() {
        let (sys, snap) = demo();
        let v = to_json(&sys, &snap);
        assert_eq!(v["schema"], SNAPSHOT_SCHEMA);
        assert_eq!(v["system"]["gpus"].as_array().unwrap().len(), 4);
        assert_eq!(v["gpus"][0]["mem"]["total"], 143_771 * MIB);
        assert!(v["gpus"][2]["unaccounted"].as_u64().unwrap() >= 2048 * MIB);
        assert_eq!(v["procs"].as_array().unwrap().len(), snap.procs.len());
    }
}
