//! Burst sampling: when a GPU's memory passes a level, the fast lane speeds
//! up (to `burst_interval`) to catch the peak before an OOM, and slows down
//! again once it has dropped back. The sampler owns the lane; this decides.

use crate::model::GpuSample;

/// Burst sampling stops only this many percentage points below its level,
/// so memory hovering at the level does not toggle the lane every read.
pub const BURST_HYSTERESIS_PCT: f64 = 2.0;

/// Share of the total in use at the highest read of the interval, counting
/// reserved memory; `None` without a memory reading.
pub fn peak_used_pct(gpu: &GpuSample) -> Option<f64> {
    let m = gpu.mem?;
    if m.total == 0 {
        return Some(0.0);
    }
    let used = gpu.mem_peak.unwrap_or(m.used).max(m.used);
    Some(used.saturating_add(m.reserved) as f64 * 100.0 / m.total as f64)
}

/// Whether the fast lane of `gpu` should run at the burst rate, given the
/// configured `level_pct` (`None`: burst sampling off) and whether it is
/// bursting now. Starts at `level_pct` (peak reads count), stops below
/// `level_pct - BURST_HYSTERESIS_PCT`. A GPU without a memory reading keeps
/// its current state.
pub fn wants_burst(gpu: &GpuSample, level_pct: Option<f64>, bursting: bool) -> bool {
    let Some(level) = level_pct.filter(|l| l.is_finite()) else {
        return false;
    };
    let Some(pct) = peak_used_pct(gpu) else {
        return bursting;
    };
    if bursting {
        pct >= level - BURST_HYSTERESIS_PCT
    } else {
        pct >= level
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MemInfo;

    fn gpu(used: u64, peak: Option<u64>) -> GpuSample {
        GpuSample {
            mem: Some(MemInfo {
                used,
                reserved: 1,
                free: 99 - used,
                total: 100,
            }),
            mem_peak: peak,
            ..Default::default()
        }
    }

    #[test]
    fn starts_at_the_level_and_stops_below_it_with_hysteresis() {
        let l = Some(90.0);
        assert!(!wants_burst(&gpu(80, None), l, false));
        assert!(wants_burst(&gpu(89, None), l, false));
        assert!(wants_burst(&gpu(87, None), l, true));
        assert!(!wants_burst(&gpu(87, None), l, false));
        assert!(!wants_burst(&gpu(86, None), l, true));
    }

    #[test]
    fn a_fast_lane_peak_starts_it() {
        assert!(wants_burst(&gpu(50, Some(95)), Some(90.0), false));
    }

    #[test]
    fn off_or_unknown() {
        assert!(!wants_burst(&gpu(99, None), None, true));
        assert!(!wants_burst(&gpu(99, None), Some(f64::NAN), true));
        let none = GpuSample::default();
        assert!(wants_burst(&none, Some(90.0), true));
        assert!(!wants_burst(&none, Some(90.0), false));
        let mut zero = gpu(0, None);
        zero.mem = Some(MemInfo::default());
        assert_eq!(peak_used_pct(&zero), Some(0.0));
    }
}
