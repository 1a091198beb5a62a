//! Per-process utilisation: the newest sample of each process, and when a
//! read may be skipped (an idle device) without showing a stale figure.

use std::collections::HashMap;
use std::time::Instant;

use nvml_wrapper::struct_wrappers::device::ProcessUtilizationSample;

use crate::source::ProcUtil;

/// On a first read (no cursor yet) the driver returns every sample it has
/// buffered: a process's newest may be from long before, when it was busy
/// (it gets no sample while idle). Only samples this close to the newest
/// of all (µs) count then: two seconds, so that a busy process whose
/// samples are out of step with another's is not left out.
pub(crate) const FIRST_READ_WINDOW_US: u64 = 2_000_000;

/// The newest sample per PID, of those at most `window` µs older than the
/// newest of all (`None`: every sample); values over 100 (seen from some
/// drivers) are dropped. Returns the samples and the newest timestamp seen.
pub(crate) fn latest_utilisation(
    samples: &[ProcessUtilizationSample],
    window: Option<u64>,
) -> (Vec<ProcUtil>, Option<u64>) {
    let mut newest: HashMap<u32, &ProcessUtilizationSample> = HashMap::new();
    let max_ts = samples.iter().map(|s| s.timestamp).max();
    let oldest = match (max_ts, window) {
        (Some(m), Some(w)) => m.saturating_sub(w),
        _ => 0,
    };
    for s in samples.iter().filter(|s| s.timestamp >= oldest) {
        let e = newest.entry(s.pid).or_insert(s);
        if s.timestamp > e.timestamp {
            *e = s;
        }
    }
    let pct = |v: u32| (v <= 100).then_some(v);
    let mut out: Vec<ProcUtil> = newest
        .values()
        .map(|s| ProcUtil {
            pid: s.pid,
            sm: pct(s.sm_util),
            mem: pct(s.mem_util),
            enc: pct(s.enc_util),
            dec: pct(s.dec_util),
        })
        .collect();
    out.sort_by_key(|u| u.pid);
    (out, max_ts)
}

/// Where the reads of process utilisation stand on one device.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct UtilCursor {
    /// Ask only for samples after this (the driver's timestamps, µs).
    pub(crate) since: Option<u64>,
    /// A read has succeeded: the device supports the call.
    supported: bool,
    /// The newest sample seen and when it was read: the driver's clock
    /// (documented only as microseconds) tied to this process's, so that
    /// a skip can move the cursor without assuming which clock it is.
    anchor: Option<(u64, Instant)>,
}

impl UtilCursor {
    /// A read succeeded at `at`; `newest` is its newest sample's timestamp.
    pub(crate) fn read(&mut self, newest: Option<u64>, at: Instant) {
        self.supported = true;
        if let Some(ts) = newest {
            self.since = Some(self.since.map_or(ts, |t| t.max(ts)));
            self.anchor = Some((ts, at));
        }
    }

    /// Whether this round, at `now`, skips the read, the device being
    /// `idle`: only once a read has succeeded (a device without the call
    /// keeps showing N/A, not 0 %). A skip moves `since` to the driver's
    /// "now" (the newest sample seen plus the time since it was read), so
    /// that the next read asks only for samples after the skip: a sample
    /// from before it is not the current figure.
    pub(crate) fn skip(&mut self, idle: bool, now: Instant) -> bool {
        if !(self.supported && idle) {
            return false;
        }
        if let Some((ts, at)) = self.anchor {
            let us =
                u64::try_from(now.saturating_duration_since(at).as_micros()).unwrap_or(u64::MAX);
            let driver_now = ts.saturating_add(us);
            self.since = Some(self.since.map_or(driver_now, |t| t.max(driver_now)));
        }
        true
    }
}

/// Whether the device's own utilisation says nothing ran on it over its
/// last sample period: SMs, memory controller, encoder and decoder all at
/// 0 %, as far as the device says (`utilization` is SM and memory %). Every
/// process's share is then 0, and reading them (~2 ms of CPU on an H200,
/// docs/benchmarks.md) is skipped. Unknown utilisation is not idle.
pub(crate) fn device_idle(
    utilization: Option<(u32, u32)>,
    enc: Option<u32>,
    dec: Option<u32>,
) -> bool {
    utilization == Some((0, 0)) && enc.unwrap_or(0) == 0 && dec.unwrap_or(0) == 0
}
