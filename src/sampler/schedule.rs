//! When each lane runs ([`Schedule`]), and when a GPU's fast lane speeds up
//! (burst sampling: [`wants_burst`]).

use std::time::Duration;

use crate::model::GpuSample;

/// When each lane runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    /// Display interval: the normal lane, one snapshot per interval.
    pub interval: Duration,
    /// Fast lane (memory only); `None` turns it off.
    pub fast: Option<Duration>,
    /// Slow lane (energy, ECC, XID, and PCIe when due); `None` turns it off.
    pub slow: Option<Duration>,
    /// PCIe throughput period (whole slow-lane periods); `None` = off.
    pub pcie: Option<Duration>,
    /// Process utilisation period (rounded to whole intervals).
    pub proc_util: Duration,
    /// Burst sampling: from this memory % the fast lane runs at this period.
    pub burst: Option<(f64, Duration)>,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            interval: Duration::from_secs(1),
            fast: Some(Duration::from_millis(100)),
            slow: Some(Duration::from_secs(5)),
            pcie: Some(Duration::from_secs(30)),
            proc_util: Duration::from_secs(1),
            burst: Some((90.0, Duration::from_millis(50))),
        }
    }
}

impl Schedule {
    /// Slow rounds between two PCIe reads (`None`: never).
    pub fn pcie_every(&self) -> Option<u64> {
        let (pcie, slow) = (self.pcie?, self.slow?);
        Some(((pcie.as_millis() / slow.as_millis().max(1)) as u64).max(1))
    }

    /// Normal rounds between two process-utilisation reads (at least 1).
    pub fn proc_util_every(&self) -> u64 {
        let n = self.proc_util.as_millis() / self.interval.as_millis().max(1);
        (n as u64).max(1)
    }
}

/// Burst sampling stops only this many percentage points below its level,
/// so memory hovering at the level does not toggle the lane every read.
pub(crate) const BURST_HYSTERESIS_PCT: f64 = 2.0;

/// Whether the fast lane of `gpu` should run at the burst rate, given the
/// configured `level_pct` (`None`: burst sampling off) and whether it is
/// bursting now. Starts at `level_pct` (the interval's peak read counts,
/// [`GpuSample::peak_pct_full`]), stops below `level_pct -`
/// [`BURST_HYSTERESIS_PCT`]. A GPU without a memory reading keeps its
/// current state.
pub fn wants_burst(gpu: &GpuSample, level_pct: Option<f64>, bursting: bool) -> bool {
    let Some(level) = level_pct.filter(|l| l.is_finite()) else {
        return false;
    };
    let Some(pct) = gpu.peak_pct_full() else {
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

    #[test]
    fn schedule_rounds_process_utilisation_to_whole_intervals() {
        let s = Schedule {
            proc_util: Duration::from_millis(2500),
            ..Default::default()
        };
        assert_eq!(s.proc_util_every(), 2);
        let s = Schedule {
            proc_util: Duration::from_millis(10),
            ..Default::default()
        };
        assert_eq!(s.proc_util_every(), 1);
    }

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
        assert_eq!(zero.peak_pct_full(), Some(0.0));
    }
}
