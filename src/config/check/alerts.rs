//! `[alerts]`: the command, forecasts, leaks, and burst sampling, whose
//! period must fit `[sampling] fast_interval`.

use std::time::Duration;

use super::{DAY, Got, MS, SEC, Validator, between_text};
use crate::config::raw::{self, Scalar};
use crate::config::units::{format_duration, format_rate, parse_rate};
use crate::config::{Alerts, Sampling};

impl Validator<'_> {
    pub(super) fn alerts(
        &mut self,
        r: raw::RawAlerts,
        sampling: &(Sampling, Got<Option<Duration>>),
    ) -> Alerts {
        let d = Alerts::default();
        let command = match &r.command {
            None => d.command.clone(),
            Some(c) => {
                let argv = c.get_ref().0.clone();
                if argv.first().is_some_and(|p| p.trim().is_empty()) {
                    let echo = self.echo(&c.span());
                    self.bad(
                        Some(c.span()),
                        format!(
                            "[alerts] command = {echo}: the first element, the program, is empty"
                        ),
                    );
                }
                argv
            }
        };
        let forecast_below = self
            .duration_or_off(
                "[alerts] forecast_below",
                &r.forecast_below,
                Some(d.forecast_below),
                10 * SEC..=7 * DAY,
            )
            .value
            .unwrap_or(Duration::ZERO);
        let leak_min_rate = match &r.leak_min_rate {
            None => d.leak_min_rate,
            Some(f) => {
                let label = "[alerts] leak_min_rate";
                let range = 1024.0..=1024.0_f64.powi(4);
                let text = between_text(&range, format_rate);
                self.string_of(label, f)
                    .and_then(|s| self.in_range(label, f.span(), parse_rate(&s), &range, text, ""))
                    .unwrap_or(d.leak_min_rate)
            }
        };
        let leak_min_duration = self.duration(
            "[alerts] leak_min_duration",
            &r.leak_min_duration,
            d.leak_min_duration,
            SEC..=DAY,
        );
        let burst_level = match &r.burst_level {
            None => d.burst_level,
            Some(f) => {
                let echo = self.echo(&f.span());
                match &f.get_ref().value {
                    Scalar::Str(s) if s.trim() == "off" => None,
                    Scalar::Num(v) if (1.0..=100.0).contains(v) => Some(*v),
                    _ => {
                        let must = self.must_be(&f.span(), "a percentage between 1 and 100");
                        self.bad(
                            Some(f.span()),
                            format!("[alerts] burst_level = {echo}: {must}, or \"off\""),
                        );
                        d.burst_level
                    }
                }
            }
        };
        let burst = self.duration(
            "[alerts] burst_interval",
            &r.burst_interval,
            d.burst_interval,
            10 * MS..=SEC,
        );
        let fast = &sampling.1;
        if let Some(f) = fast.value
            && burst.value > f
            && (burst.span.is_some() || fast.span.is_some())
            && !burst.failed
            && !fast.failed
        {
            let bs = self.shown(&burst, |v| format!("\"{}\"", format_duration(*v)));
            let msg = format!(
                "[alerts] burst_interval = {bs} {} must not be longer than [sampling] fast_interval = {} {}",
                self.origin(&burst),
                self.shown(fast, |_| format!("\"{}\"", format_duration(f))),
                self.origin(fast)
            );
            self.bad(burst.span.clone().or(fast.span.clone()), msg);
        }
        Alerts {
            bell: Self::boolean(&r.bell, d.bell),
            command,
            forecast_below,
            leak_min_rate,
            leak_min_duration: leak_min_duration.value,
            burst_level,
            burst_interval: burst.value,
        }
    }
}
