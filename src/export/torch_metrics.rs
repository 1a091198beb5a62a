//! The `vramwatch_torch_*` metric families: one per figure of the PyTorch
//! allocator (`model::alloc`), with the exporter adding the labels.

use crate::model::alloc::DeviceAlloc;

/// A Prometheus metric for each device's figures: name, type, help.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MetricDef {
    pub name: &'static str,
    /// `gauge` or `counter`.
    pub kind: &'static str,
    pub help: &'static str,
}

/// The `vramwatch_torch_*` metrics, in the order [`metric_values`] gives
/// their values. Labels (gpu, pid, ...) are the exporter's to add.
pub(crate) const METRICS: [MetricDef; 10] = [
    MetricDef {
        name: "vramwatch_torch_allocated_bytes",
        kind: "gauge",
        help: "Memory held by PyTorch tensors.",
    },
    MetricDef {
        name: "vramwatch_torch_reserved_bytes",
        kind: "gauge",
        help: "Memory the PyTorch caching allocator holds from the driver.",
    },
    MetricDef {
        name: "vramwatch_torch_active_bytes",
        kind: "gauge",
        help: "Allocated memory plus blocks freed but still in use by a stream.",
    },
    MetricDef {
        name: "vramwatch_torch_inactive_split_bytes",
        kind: "gauge",
        help: "Free blocks inside partly used segments (fragmentation).",
    },
    MetricDef {
        name: "vramwatch_torch_allocated_peak_bytes",
        kind: "gauge",
        help: "Peak of allocated memory since start or the last reset.",
    },
    MetricDef {
        name: "vramwatch_torch_reserved_peak_bytes",
        kind: "gauge",
        help: "Peak of reserved memory since start or the last reset.",
    },
    MetricDef {
        name: "vramwatch_torch_fragmentation_ratio",
        kind: "gauge",
        help: "Inactive split bytes over reserved bytes.",
    },
    MetricDef {
        name: "vramwatch_torch_largest_free_block_bytes",
        kind: "gauge",
        help: "Largest free block in the cache (probed less often).",
    },
    MetricDef {
        name: "vramwatch_torch_alloc_retries_total",
        kind: "counter",
        help: "cudaMalloc failures after which the allocator flushed its cache and retried.",
    },
    MetricDef {
        name: "vramwatch_torch_ooms_total",
        kind: "counter",
        help: "Out-of-memory errors the allocator raised.",
    },
];

/// The values of [`METRICS`] for one device, in the same order; `None`
/// where there is no figure (no largest-free probe, nothing reserved).
pub(crate) fn metric_values(d: &DeviceAlloc) -> [Option<f64>; 10] {
    [
        Some(d.allocated as f64),
        Some(d.reserved as f64),
        Some(d.active as f64),
        Some(d.inactive_split as f64),
        Some(d.allocated_peak as f64),
        Some(d.reserved_peak as f64),
        d.fragmentation(),
        d.largest_free.map(|b| b as f64),
        Some(d.num_alloc_retries as f64),
        Some(d.num_ooms as f64),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::alloc::fixtures::dev;

    #[test]
    fn metric_values_line_up_with_their_names() {
        let mut d = dev(3, 4);
        d.inactive_split = 1;
        d.num_alloc_retries = 7;
        d.num_ooms = 2;
        let v = metric_values(&d);
        let by_name = |n: &str| v[METRICS.iter().position(|m| m.name == n).unwrap()];
        assert_eq!(by_name("vramwatch_torch_allocated_bytes"), Some(3.0));
        assert_eq!(by_name("vramwatch_torch_reserved_bytes"), Some(4.0));
        assert_eq!(by_name("vramwatch_torch_fragmentation_ratio"), Some(0.25));
        assert_eq!(by_name("vramwatch_torch_largest_free_block_bytes"), None);
        assert_eq!(by_name("vramwatch_torch_alloc_retries_total"), Some(7.0));
        assert_eq!(by_name("vramwatch_torch_ooms_total"), Some(2.0));
        for m in METRICS {
            assert!(m.name.starts_with("vramwatch_torch_"));
            assert_eq!(
                m.name.ends_with("_total"),
                m.kind == "counter",
                "{}",
                m.name
            );
        }
    }
}
