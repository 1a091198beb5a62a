//! Plain advice from a PyTorch process's allocator figures
//! (`model::alloc`), for the drill-down; docs/pytorch.md explains each rule.

use crate::model::alloc::AllocStats;
use crate::model::units::{GIB, MIB, bytes_short};

/// Thresholds of [`advice`]; docs/pytorch.md explains each.
pub mod thresholds {
    use super::{GIB, MIB};

    /// Retries from this many on count as "many".
    pub const RETRIES_MANY: u64 = 3;
    /// Split free blocks from this share of reserved memory on count as
    /// high fragmentation.
    pub const FRAGMENTATION_HIGH: f64 = 0.25;
    /// No fragmentation advice for a process reserving less than this.
    pub const RESERVED_MIN: u64 = 256 * MIB;
    /// Memory `empty_cache()` could free is worth mentioning to a process
    /// sharing its GPU from this much on...
    pub const RELEASABLE_MIN: u64 = GIB;
    /// ...and this share of its reserved memory.
    pub const RELEASABLE_SHARE: f64 = 0.25;
    /// After an OOM: tensors at their peak used less than this share of the
    /// reserved peak means the cache, not the tensors, held the memory.
    pub const OOM_TENSOR_SHARE: f64 = 0.8;
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// Plain advice from a process's figures. `others_on_gpu`: other processes
/// use the same GPU (then memory the cache holds is memory they cannot
/// have). One line per finding, most pressing first; empty when all is well.
pub fn advice(stats: &AllocStats, others_on_gpu: bool) -> Vec<String> {
    use thresholds::*;
    let mut out = Vec::new();
    if let Some(err) = &stats.error {
        out.push(format!("The publisher could not read the allocator: {err}"));
    }
    let expandable = stats.expandable_segments();
    let many = stats.devices.len() > 1;
    for d in &stats.devices {
        let prefix = if many {
            format!("cuda:{}: ", d.index)
        } else {
            String::new()
        };
        let mut say = |text: String| out.push(format!("{prefix}{text}"));
        let frag = d.fragmentation().unwrap_or(0.0);
        let fragmented = frag >= FRAGMENTATION_HIGH && d.reserved >= RESERVED_MIN;

        if d.num_ooms > 0 {
            let cache_held = (d.allocated_peak as f64) < OOM_TENSOR_SHARE * d.reserved_peak as f64;
            let what = if cache_held && !expandable {
                format!(
                    "the cache held {} tensors did not use: fragmentation; set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                    bytes_short(d.reserved_peak.saturating_sub(d.allocated_peak))
                )
            } else {
                "the tensors themselves needed it: lower the peak (smaller batches, activation checkpointing, mixed precision)".into()
            };
            say(format!(
                "{} out-of-memory error{}: peak allocated {} vs peak reserved {}; {what}.",
                d.num_ooms,
                if d.num_ooms == 1 { "" } else { "s" },
                bytes_short(d.allocated_peak),
                bytes_short(d.reserved_peak),
            ));
        }

        if d.num_alloc_retries >= RETRIES_MANY && fragmented && !expandable {
            say(format!(
                "{} allocator retries with {} of reserved memory in split blocks: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (at start) so segments grow instead of splitting.",
                d.num_alloc_retries,
                pct(frag)
            ));
        } else if d.num_alloc_retries >= RETRIES_MANY && expandable {
            say(format!(
                "{} allocator retries with expandable segments already on: the process runs at the edge of memory (peak reserved {}); lower the peak.",
                d.num_alloc_retries,
                bytes_short(d.reserved_peak)
            ));
        } else if d.num_alloc_retries > 0 {
            say(format!(
                "{} allocator retr{}: each one flushed the cache and synchronised the device; the process is near its memory limit (peak reserved {}).",
                d.num_alloc_retries,
                if d.num_alloc_retries == 1 { "y" } else { "ies" },
                bytes_short(d.reserved_peak)
            ));
        } else if fragmented {
            let largest = d
                .largest_free
                .map(|b| format!(" (largest free block {})", bytes_short(b)))
                .unwrap_or_default();
            say(format!(
                "{} of reserved memory ({}) is in split blocks too small to reuse{largest}; no retries yet.",
                pct(frag),
                bytes_short(d.inactive_split)
            ));
        }

        let releasable = d.releasable();
        if others_on_gpu
            && releasable >= RELEASABLE_MIN
            && releasable as f64 >= RELEASABLE_SHARE * d.reserved as f64
        {
            say(format!(
                "{} cached but unused while other processes share this GPU: torch.cuda.empty_cache() at a phase boundary (after evaluation, between epochs) hands it back.",
                bytes_short(releasable)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::thresholds::*;
    use super::*;
    use crate::model::alloc::fixtures::{dev, stats};

    #[test]
    fn a_calm_process_gets_no_advice() {
        assert!(advice(&stats(vec![dev(6 * GIB, 7 * GIB)]), true).is_empty());
        assert!(advice(&stats(vec![]), true).is_empty());
    }

    #[test]
    fn many_retries_and_fragmentation_suggest_expandable_segments() {
        let mut d = dev(20 * GIB, 40 * GIB);
        d.inactive_split = 12 * GIB;
        d.num_alloc_retries = RETRIES_MANY;
        let a = advice(&stats(vec![d.clone()]), false);
        assert_eq!(a.len(), 1, "{a:?}");
        assert!(a[0].contains("expandable_segments:True"), "{a:?}");
        assert!(a[0].contains("30%"), "{a:?}");
        // Already on: a different message.
        let mut s = stats(vec![d.clone()]);
        s.alloc_conf = Some("expandable_segments:True".into());
        let a = advice(&s, false);
        assert!(a[0].contains("already on"), "{a:?}");
        assert!(!a[0].contains("set PYTORCH_CUDA_ALLOC_CONF"), "{a:?}");
        // Low fragmentation: retries, but no expandable advice.
        d.inactive_split = GIB;
        let a = advice(&stats(vec![d.clone()]), false);
        assert!(a[0].contains("near its memory limit"), "{a:?}");
        assert!(!a[0].contains("expandable"), "{a:?}");
        // A single retry is said as one.
        d.num_alloc_retries = 1;
        assert!(advice(&stats(vec![d]), false)[0].starts_with("1 allocator retry:"));
    }

    #[test]
    fn fragmentation_without_retries_is_reported_with_the_largest_block() {
        let mut d = dev(2 * GIB, 4 * GIB);
        d.inactive_split = 2 * GIB;
        d.largest_free = Some(18 * MIB);
        let a = advice(&stats(vec![d.clone()]), false);
        assert_eq!(a.len(), 1, "{a:?}");
        assert!(
            a[0].contains("50%") && a[0].contains("largest free block 18M"),
            "{a:?}"
        );
        // Too small a process to bother.
        let mut small = dev(10 * MIB, 100 * MIB);
        small.inactive_split = 60 * MIB;
        assert!(advice(&stats(vec![small]), false).is_empty());
    }

    #[test]
    fn releasable_cache_on_a_shared_gpu_suggests_empty_cache() {
        let d = dev(4 * GIB, 10 * GIB);
        let a = advice(&stats(vec![d.clone()]), true);
        assert_eq!(a.len(), 1, "{a:?}");
        assert!(
            a[0].contains("empty_cache()") && a[0].contains("6.00G"),
            "{a:?}"
        );
        // Alone on the GPU: nobody else wants it.
        assert!(advice(&stats(vec![d]), false).is_empty());
        // Cached but split: empty_cache() could not free it.
        let mut split = dev(4 * GIB, 10 * GIB);
        split.inactive_split = 5 * GIB + GIB / 2;
        let a = advice(&stats(vec![split]), true);
        assert!(a.iter().all(|l| !l.contains("empty_cache")), "{a:?}");
        // Under the floor.
        assert!(advice(&stats(vec![dev(100 * MIB, 900 * MIB)]), true).is_empty());
    }

    #[test]
    fn ooms_compare_peak_allocated_with_peak_reserved() {
        let mut d = dev(10 * GIB, 40 * GIB);
        d.allocated_peak = 20 * GIB;
        d.reserved_peak = 40 * GIB;
        d.num_ooms = 2;
        let a = advice(&stats(vec![d.clone()]), false);
        assert!(
            a[0].starts_with("2 out-of-memory errors: peak allocated 20.0G vs peak reserved 40.0G"),
            "{a:?}"
        );
        assert!(
            a[0].contains("cache held 20.0G") && a[0].contains("expandable_segments"),
            "{a:?}"
        );
        d.allocated_peak = 39 * GIB;
        d.num_ooms = 1;
        let a = advice(&stats(vec![d]), false);
        assert!(a[0].starts_with("1 out-of-memory error:"), "{a:?}");
        assert!(a[0].contains("tensors themselves"), "{a:?}");
    }

    #[test]
    fn several_devices_are_named_and_errors_said() {
        let mut a = dev(GIB, 2 * GIB);
        a.index = 0;
        a.num_alloc_retries = 1;
        let mut b = dev(GIB, 2 * GIB);
        b.index = 3;
        b.num_ooms = 1;
        let mut s = stats(vec![a, b]);
        s.error = Some("RuntimeError: boom".into());
        let lines = advice(&s, false);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].contains("could not read the allocator: RuntimeError: boom"));
        assert!(lines[1].starts_with("cuda:0: 1 allocator retry"));
        assert!(lines[2].starts_with("cuda:3: 1 out-of-memory error"));
    }
}
