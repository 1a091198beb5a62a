//! What the PyTorch caching allocator says about itself, as the Python
//! side (`python/vramwatch_torch`) publishes it: plain data and the figures
//! derived from it. Reading the files is `source::torch`; advice from the
//! figures is `analysis::allocator`; the metrics are `export::torch_metrics`
//! (docs/pytorch.md).

use serde::{Deserialize, Serialize};

use crate::model::Millis;
use crate::model::units::bytes_short;

/// A file not rewritten for this many publish intervals (and at least
/// [`STALE_MIN_MS`]) is stale: its process is stuck or its publisher died.
pub const STALE_INTERVALS: u64 = 5;
pub const STALE_MIN_MS: u64 = 5_000;

/// One file: what a PyTorch process said about its allocator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AllocStats {
    pub schema: u32,
    pub pid: u32,
    /// Unix seconds, as vramwatch computes it (see docs/pytorch.md); `None`
    /// where the writer could not read /proc.
    pub start_time: Option<u64>,
    /// When it was written, unix ms.
    pub t_ms: Millis,
    /// Publishes so far (0 for the first).
    #[serde(default)]
    pub seq: u64,
    #[serde(default)]
    pub interval_ms: u64,
    /// e.g. `vramwatch_torch 0.1.0`.
    #[serde(default)]
    pub writer: Option<String>,
    #[serde(default)]
    pub torch_version: Option<String>,
    /// False until the program's first CUDA call: then `devices` is empty.
    #[serde(default)]
    pub cuda_initialized: bool,
    /// The process's `PYTORCH_CUDA_ALLOC_CONF` (else `PYTORCH_ALLOC_CONF`).
    #[serde(default)]
    pub alloc_conf: Option<String>,
    #[serde(default)]
    pub cuda_visible_devices: Option<String>,
    /// What the previous publish cost the process, µs.
    #[serde(default)]
    pub publish_us: Option<u64>,
    /// What the last largest-free-block probe cost, µs.
    #[serde(default)]
    pub snapshot_us: Option<u64>,
    /// Devices the program has used (PyTorch's indices).
    #[serde(default)]
    pub devices: Vec<DeviceAlloc>,
    /// Why the figures could not be read this time, if they could not.
    #[serde(default)]
    pub error: Option<String>,
}

/// The allocator on one device. Bytes unless named otherwise; peaks are
/// since the process started or since its last
/// `torch.cuda.reset_peak_memory_stats()`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceAlloc {
    /// PyTorch's device index (after `CUDA_VISIBLE_DEVICES`; not NVML's).
    pub index: u32,
    /// The device UUID as PyTorch gives it, to match NVML's.
    #[serde(default)]
    pub uuid: Option<String>,
    /// Held by tensors.
    pub allocated: u64,
    /// Held by the allocator from the driver (what NVML counts, less the
    /// CUDA context and non-PyTorch allocations).
    pub reserved: u64,
    /// Allocated plus blocks freed but still in use by a stream.
    #[serde(default)]
    pub active: u64,
    /// Free blocks inside segments that are partly in use: reserved, free,
    /// and not releasable.
    #[serde(default)]
    pub inactive_split: u64,
    #[serde(default)]
    pub allocated_peak: u64,
    #[serde(default)]
    pub reserved_peak: u64,
    #[serde(default)]
    pub active_peak: u64,
    #[serde(default)]
    pub inactive_split_peak: u64,
    /// Times a cudaMalloc failed, the allocator freed its cache and retried.
    #[serde(default)]
    pub num_alloc_retries: u64,
    /// Out-of-memory errors raised (and perhaps caught by the program).
    #[serde(default)]
    pub num_ooms: u64,
    /// The largest free cached block, from `torch.cuda.memory_snapshot()`;
    /// `None` when not probed.
    #[serde(default)]
    pub largest_free: Option<u64>,
    /// When `largest_free` was probed (it is refreshed less often).
    #[serde(default)]
    pub largest_free_t_ms: Option<Millis>,
}

impl DeviceAlloc {
    /// Reserved but not held by tensors: the cache.
    pub fn cached_free(&self) -> u64 {
        self.reserved.saturating_sub(self.allocated)
    }

    /// Share of reserved memory in split free blocks, 0..=1; `None` when
    /// nothing is reserved.
    pub fn fragmentation(&self) -> Option<f64> {
        (self.reserved > 0).then(|| (self.inactive_split as f64 / self.reserved as f64).min(1.0))
    }

    /// What `torch.cuda.empty_cache()` could hand back: free segments with
    /// nothing in use (reserved less active less split free blocks).
    pub fn releasable(&self) -> u64 {
        self.reserved
            .saturating_sub(self.active.max(self.allocated))
            .saturating_sub(self.inactive_split)
    }

    /// NVML's figure for the process less what the allocator reserved: the
    /// CUDA context and what other libraries take with their own cudaMalloc
    /// (NCCL's buffers, for one).
    pub fn outside_allocator(&self, nvml_bytes: u64) -> u64 {
        nvml_bytes.saturating_sub(self.reserved)
    }

    /// The compact "alloc/resv" figure for a table, e.g. `3.20G/5.00G`.
    pub fn short_label(&self) -> String {
        format!(
            "{}/{}",
            bytes_short(self.allocated),
            bytes_short(self.reserved)
        )
    }
}

impl AllocStats {
    /// The device NVML knows by `gpu_uuid` (`GPU-…` or `MIG-…`). PyTorch's
    /// indices are not NVML's (`CUDA_VISIBLE_DEVICES`, `CUDA_DEVICE_ORDER`),
    /// so devices are matched by UUID; a file with one device and no UUID
    /// (an old PyTorch) gives that device.
    pub fn device_for(&self, gpu_uuid: &str) -> Option<&DeviceAlloc> {
        let want = normalise_uuid(gpu_uuid);
        if let Some(d) = self
            .devices
            .iter()
            .find(|d| d.uuid.as_deref().map(normalise_uuid).as_deref() == Some(want.as_str()))
        {
            return Some(d);
        }
        match self.devices.as_slice() {
            [only] if only.uuid.is_none() => Some(only),
            _ => None,
        }
    }

    /// Milliseconds since the file was written (0 if it is from the future).
    pub fn age_ms(&self, now_ms: Millis) -> u64 {
        now_ms.saturating_sub(self.t_ms)
    }

    /// Not rewritten for [`STALE_INTERVALS`] intervals (at least
    /// [`STALE_MIN_MS`]): the figures may be old.
    pub fn is_stale(&self, now_ms: Millis) -> bool {
        let limit = (self.interval_ms.saturating_mul(STALE_INTERVALS)).max(STALE_MIN_MS);
        self.age_ms(now_ms) > limit
    }

    /// The figures of the one GPU a process sample holds (the sampler keeps
    /// only that GPU's entry), if CUDA is up and they are not stale at
    /// `now_ms`: what the analysis reads.
    pub fn fresh(&self, now_ms: Millis) -> Option<&DeviceAlloc> {
        if !self.cuda_initialized || self.is_stale(now_ms) {
            return None;
        }
        self.devices.first()
    }

    /// Whether `PYTORCH_CUDA_ALLOC_CONF` turns expandable segments on.
    pub fn expandable_segments(&self) -> bool {
        self.alloc_conf.as_deref().is_some_and(|conf| {
            conf.split(',').any(|opt| {
                let mut kv = opt.splitn(2, ':');
                let key = kv.next().unwrap_or("").trim();
                let value = kv.next().unwrap_or("").trim();
                key == "expandable_segments" && value.eq_ignore_ascii_case("true")
            })
        })
    }
}

/// `GPU-8d3c…`, `8d3c…` and `8D3C…` are the same device.
fn normalise_uuid(uuid: &str) -> String {
    let lower = uuid.trim().to_ascii_lowercase();
    lower
        .strip_prefix("gpu-")
        .or_else(|| lower.strip_prefix("mig-"))
        .unwrap_or(&lower)
        .to_owned()
}

/// Builders of allocator stats for tests: this module's, the analysis's
/// advice's and the exported metrics'.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::{AllocStats, DeviceAlloc};

    /// A device whose allocator holds `reserved`, `allocated` of it in
    /// use (and active), peaks at those levels.
    pub(crate) fn dev(allocated: u64, reserved: u64) -> DeviceAlloc {
        DeviceAlloc {
            allocated,
            reserved,
            active: allocated,
            allocated_peak: allocated,
            reserved_peak: reserved,
            ..Default::default()
        }
    }

    /// The stats of pid 1 with `devices`.
    pub(crate) fn stats(devices: Vec<DeviceAlloc>) -> AllocStats {
        AllocStats {
            schema: 1,
            pid: 1,
            start_time: Some(1),
            devices,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{dev, stats};
    use super::*;
    use crate::model::units::{GIB, MIB};

    #[test]
    fn derived_figures() {
        let mut d = dev(6 * GIB, 10 * GIB);
        d.active = 7 * GIB;
        d.inactive_split = GIB;
        assert_eq!(d.cached_free(), 4 * GIB);
        assert_eq!(d.fragmentation(), Some(0.1));
        // 10 reserved - 7 active - 1 split = 2 in whole free segments.
        assert_eq!(d.releasable(), 2 * GIB);
        assert_eq!(d.outside_allocator(10 * GIB + 600 * MIB), 600 * MIB);
        assert_eq!(d.outside_allocator(9 * GIB), 0);
        assert_eq!(d.short_label(), "6.00G/10.0G");
        // Nothing reserved: no fragmentation figure; nonsense never underflows.
        assert_eq!(dev(0, 0).fragmentation(), None);
        let odd = DeviceAlloc {
            allocated: 5,
            reserved: 3,
            inactive_split: 9,
            ..Default::default()
        };
        assert_eq!(odd.cached_free(), 0);
        assert_eq!(odd.releasable(), 0);
        assert_eq!(odd.fragmentation(), Some(1.0));
    }

    #[test]
    fn expandable_segments_is_read_from_the_conf() {
        let with = |conf: Option<&str>| AllocStats {
            alloc_conf: conf.map(Into::into),
            ..Default::default()
        };
        assert!(with(Some("expandable_segments:True")).expandable_segments());
        assert!(
            with(Some("max_split_size_mb:128, expandable_segments:true")).expandable_segments()
        );
        assert!(!with(Some("expandable_segments:False")).expandable_segments());
        assert!(!with(Some("max_split_size_mb:128")).expandable_segments());
        assert!(!with(None).expandable_segments());
    }

    #[test]
    fn devices_match_by_uuid_whatever_the_prefix_or_case() {
        let mut a = dev(1, 2);
        a.index = 0;
        a.uuid = Some("8d3c0f2e-1111-2222-3333-444455556666".into());
        let mut b = dev(3, 4);
        b.index = 1;
        b.uuid = Some("GPU-AAAA0000-1111-2222-3333-444455556666".into());
        let s = stats(vec![a, b]);
        let hit = |u: &str| s.device_for(u).map(|d| d.index);
        assert_eq!(hit("GPU-8d3c0f2e-1111-2222-3333-444455556666"), Some(0));
        assert_eq!(hit("gpu-aaaa0000-1111-2222-3333-444455556666"), Some(1));
        assert_eq!(hit("GPU-ffffffff-1111-2222-3333-444455556666"), None);
        // One device without a UUID: it is the one.
        let s = stats(vec![dev(1, 2)]);
        assert!(s.device_for("GPU-anything").is_some());
        let s = stats(vec![dev(1, 2), dev(3, 4)]);
        assert!(s.device_for("GPU-anything").is_none());
    }

    #[test]
    fn staleness_counts_intervals_with_a_floor() {
        let s = AllocStats {
            t_ms: 100_000,
            interval_ms: 500,
            ..Default::default()
        };
        assert!(!s.is_stale(100_000 + STALE_MIN_MS));
        assert!(s.is_stale(100_000 + STALE_MIN_MS + 1));
        let slow = AllocStats {
            t_ms: 100_000,
            interval_ms: 10_000,
            ..Default::default()
        };
        assert!(!slow.is_stale(100_000 + 49_000));
        assert!(slow.is_stale(100_000 + 51_000));
        assert_eq!(s.age_ms(50), 0);
    }
}
