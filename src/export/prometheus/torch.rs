//! The `vramwatch_torch_*` families: the figures PyTorch processes publish
//! about their caching allocator (`export::torch_metrics` names them), with
//! the labels of the process.

use crate::export::torch_metrics::{METRICS, metric_values};

use super::{Family, Kind, Labels, Value};

/// One family per allocator figure, one sample per process that publishes
/// its figures; nothing at all when no process does.
pub(super) fn write(l: &Labels, out: &mut String) {
    if l.procs.iter().all(|r| r.torch.is_none()) {
        return;
    }
    let values: Vec<_> = l
        .procs
        .iter()
        .filter_map(|r| Some((r, metric_values(r.torch.as_ref()?))))
        .collect();
    for (i, def) in METRICS.iter().enumerate() {
        let kind = if def.kind == "counter" {
            Kind::Counter
        } else {
            Kind::Gauge
        };
        let mut fam = Family::new(out, def.name, kind, def.help);
        for (r, v) in &values {
            fam.maybe(&r.labels, v[i].map(Value::Float));
        }
    }
}
