//! `[thresholds]`: a warn and a critical level per figure, warn below
//! critical.

use std::ops::RangeInclusive;

use super::Validator;
use crate::config::raw::{self, S};
use crate::config::{Level, Thresholds};

impl Validator<'_> {
    fn level(
        &mut self,
        name: &str,
        warn: &S<f64>,
        crit: &S<f64>,
        default: Level,
        range: RangeInclusive<f64>,
    ) -> Level {
        let wl = format!("[thresholds] {name}_warn");
        let cl = format!("[thresholds] {name}_crit");
        let w = self.number(&wl, warn, default.warn, range.clone());
        let c = self.number(&cl, crit, default.crit, range);
        if w.value >= c.value && !w.failed && !c.failed {
            let ws = self.shown(&w, |v| v.to_string());
            let cs = self.shown(&c, |v| v.to_string());
            let msg = format!(
                "[thresholds] {name}_warn = {ws} {} must be below {name}_crit = {cs} {}",
                self.origin(&w),
                self.origin(&c)
            );
            self.bad(w.span.clone().or(c.span.clone()), msg);
            return default;
        }
        Level {
            warn: w.value,
            crit: c.value,
        }
    }

    pub(super) fn thresholds(&mut self, r: raw::RawThresholds) -> Thresholds {
        let d = Thresholds::default();
        Thresholds {
            memory: self.level(
                "memory",
                &r.memory_warn,
                &r.memory_crit,
                d.memory,
                0.0..=100.0,
            ),
            temperature: self.level(
                "temperature",
                &r.temperature_warn,
                &r.temperature_crit,
                d.temperature,
                0.0..=150.0,
            ),
            power: self.level("power", &r.power_warn, &r.power_crit, d.power, 0.0..=200.0),
            utilization: self.level(
                "utilization",
                &r.utilization_warn,
                &r.utilization_crit,
                d.utilization,
                0.0..=100.0,
            ),
        }
    }
}
