//! `[sampling]`: the interval and the lanes, which must fit it.

use std::time::Duration;

use super::{DAY, Got, HOUR, MINUTE, MS, SEC, Validator};
use crate::config::raw::{self, DurationKind, S, Text};
use crate::config::units::format_duration;
use crate::config::{INTERVAL_RANGE, Sampling};

impl Validator<'_> {
    /// The sampling section, and where `fast_interval` came from (the
    /// alerts check `burst_interval` against it).
    pub(super) fn sampling(&mut self, r: raw::RawSampling) -> (Sampling, Got<Option<Duration>>) {
        let d = Sampling::default();
        let interval = self.duration(
            "[sampling] interval",
            &r.interval,
            d.interval,
            INTERVAL_RANGE,
        );
        let fast = self.duration_or_off(
            "[sampling] fast_interval",
            &r.fast_interval,
            d.fast_interval,
            10 * MS..=MINUTE,
        );
        if let Some(f) = fast.value
            && f > interval.value
            && !fast.failed
            && !interval.failed
        {
            let (fs, is) = (
                self.shown(&fast, |_| format!("\"{}\"", format_duration(f))),
                self.shown(&interval, |v| format!("\"{}\"", format_duration(*v))),
            );
            let msg = format!(
                "[sampling] fast_interval = {fs} must not be longer than interval = {is} {}",
                self.origin(&interval)
            );
            self.bad(fast.span.clone().or(interval.span.clone()), msg);
        }
        let slow = self.duration_or_off(
            "[sampling] slow_interval",
            &r.slow_interval,
            d.slow_interval,
            SEC..=HOUR,
        );
        let pcie = self.duration_or_off(
            "[sampling] pcie_interval",
            &r.pcie_interval,
            d.pcie_interval,
            SEC..=HOUR,
        );
        let energy = self.duration_or_off(
            "[sampling] energy_interval",
            &r.energy_interval,
            d.energy_interval,
            SEC..=HOUR,
        );
        let proc_util = self.util_period(
            "proc_util_interval",
            &r.proc_util_interval,
            d.proc_util_interval,
            &interval,
        );
        let proc_util_shown = self.util_period(
            "proc_util_shown_interval",
            &r.proc_util_shown_interval,
            d.proc_util_shown_interval,
            &interval,
        );
        let history = self.duration(
            "[sampling] history",
            &r.history,
            d.history,
            MINUTE..=7 * DAY,
        );
        let exited_keep = self.duration(
            "[sampling] exited_keep",
            &r.exited_keep,
            d.exited_keep,
            Duration::ZERO..=HOUR,
        );
        let sampling = Sampling {
            interval: interval.value,
            fast_interval: fast.value,
            slow_interval: slow.value,
            pcie_interval: pcie.value,
            energy_interval: energy.value,
            proc_util_interval: proc_util.value,
            // Never read less often on screen than off it.
            proc_util_shown_interval: proc_util_shown.value.min(proc_util.value),
            history: history.value,
            exited_keep: exited_keep.value,
        };
        (sampling, fast)
    }

    /// A process-utilisation period `[sampling] key`: 100 ms ..= 1 h and
    /// not shorter than `interval` (unset: `default`, or `interval` where
    /// that is longer).
    fn util_period(
        &mut self,
        key: &str,
        f: &S<Text<DurationKind>>,
        default: Duration,
        interval: &Got<Duration>,
    ) -> Got<Duration> {
        let label = format!("[sampling] {key}");
        let got = self.duration(&label, f, default.max(interval.value), 100 * MS..=HOUR);
        if got.span.is_some() && got.value < interval.value && !interval.failed {
            let ps = self.shown(&got, |v| format_duration(*v));
            let is = self.shown(interval, |v| format!("\"{}\"", format_duration(*v)));
            let msg = format!(
                "{label} = {ps} must not be shorter than interval = {is} {}",
                self.origin(interval)
            );
            self.bad(got.span.clone(), msg);
        }
        got
    }
}
