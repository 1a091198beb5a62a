//! Value checks: units, ranges, warn below critical, lanes that fit the
//! interval, the display (`display.rs`), key bindings (`bindings.rs`),
//! addresses. Each check records its problem and falls back to the
//! default, so every problem in a file is found in one run.

mod bindings;
mod display;

use std::ops::{Range, RangeInclusive};
use std::path::PathBuf;
use std::time::Duration;

use toml::Spanned;

use super::load::{Found, Position, SCHEMA_VERSION, echo, huge_number};
use super::raw::{self, DurationKind, DurationOrOffKind, RawConfig, S, Scalar, Text};
use super::units::{
    format_duration, format_rate, format_size, is_too_large, parse_duration, parse_listen,
    parse_rate, parse_size,
};
use super::{
    Alerts, Config, INTERVAL_RANGE, Level, MAX_PROCESS_SERIES, Record, Sampling, Serve, Thresholds,
    check_label_name,
};

/// Checks `raw`, adding to `problems` (those found before, by serde, about
/// the keys listed in `refused`).
pub(super) fn config(
    text: &str,
    raw: RawConfig,
    problems: Vec<Found>,
    refused: Vec<String>,
) -> (Config, Vec<Found>) {
    let mut v = Validator {
        text,
        problems,
        refused,
    };
    let config = v.config(raw);
    (config, v.problems)
}

struct Validator<'a> {
    text: &'a str,
    problems: Vec<Found>,
    /// Keys serde refused (`[section] key`), already reported: their
    /// defaults stand in, but are not compared with other keys.
    refused: Vec<String>,
}

/// A checked value and where it was written (`None`: the default).
struct Got<T> {
    value: T,
    span: Option<Range<usize>>,
    /// The key was written but refused; `value` is the default standing
    /// in, so cross-checks skip it rather than blame the default.
    failed: bool,
}

impl<T> Got<T> {
    fn written(value: T, span: Range<usize>) -> Self {
        Got {
            value,
            span: Some(span),
            failed: false,
        }
    }

    fn failed(value: T) -> Self {
        Got {
            value,
            span: None,
            failed: true,
        }
    }
}

/// The range a figure may take.
/// "between A and B", each end shown with `show`.
fn between_text<T: Copy>(r: &RangeInclusive<T>, show: impl Fn(T) -> String) -> String {
    format!("between {} and {}", show(*r.start()), show(*r.end()))
}

const SEC: Duration = Duration::from_secs(1);
const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(86_400);
const MS: Duration = Duration::from_millis(1);

impl Validator<'_> {
    fn bad(&mut self, span: Option<Range<usize>>, message: String) {
        self.problems.push((span, message));
    }

    /// The default standing in for an unwritten (or refused) key.
    fn unset<T>(&self, label: &str, value: T) -> Got<T> {
        Got {
            value,
            span: None,
            failed: self.refused.iter().any(|r| r == label),
        }
    }

    fn echo(&self, span: &Range<usize>) -> String {
        echo(self.text.get(span.clone()).unwrap_or_default())
    }

    /// "a number too large" for a number written past what 64 bits hold
    /// (the loader reads it as the largest, so it reaches the range check).
    fn huge(&self, span: &Range<usize>) -> Option<&'static str> {
        match huge_number(self.text.get(span.clone()).unwrap_or_default())? {
            true => Some("a number too large"),
            false => Some("a number too small"),
        }
    }

    /// `must be …`, after "a number too large, " where that is why.
    fn must_be(&self, span: &Range<usize>, what: &str) -> String {
        match self.huge(span) {
            Some(huge) => format!("{huge}, must be {what}"),
            None => format!("must be {what}"),
        }
    }

    /// A whole-number key: its value when given and within `range`; a
    /// problem reported (and `None`) when outside it.
    fn whole(&mut self, f: &S<i64>, label: &str, range: RangeInclusive<i64>) -> Option<i64> {
        let f = f.as_ref()?;
        let text = format!("a whole number from {} to {}", range.start(), range.end());
        self.in_range(label, f.span(), Ok(*f.get_ref()), &range, text, "")
    }

    /// A parsed value if it lies in `range`. Otherwise the problem, naming
    /// the key, the value as written and what it must be (`also` ends both
    /// messages, e.g. `, or "off"`), and `None`.
    fn in_range<T: PartialOrd>(
        &mut self,
        label: &str,
        span: Range<usize>,
        parsed: Result<T, String>,
        range: &RangeInclusive<T>,
        range_text: String,
        also: &str,
    ) -> Option<T> {
        let echo = self.echo(&span);
        match parsed {
            Ok(v) if range.contains(&v) => Some(v),
            Ok(_) => {
                let must = self.must_be(&span, &range_text);
                self.bad(Some(span), format!("{label} = {echo}: {must}{also}"));
                None
            }
            Err(why) if is_too_large(&why) => {
                self.bad(
                    Some(span),
                    format!("{label} = {echo}: {why}, must be {range_text}{also}"),
                );
                None
            }
            Err(why) => {
                self.bad(Some(span), format!("{label} = {echo}: {why}{also}"));
                None
            }
        }
    }

    /// Where `got` came from, for a message: `(line 4)` or `(the default)`.
    fn origin<T>(&self, got: &Got<T>) -> String {
        match &got.span {
            Some(s) => format!("(line {})", Position::of(self.text, s.start).line),
            None => "(the default)".to_owned(),
        }
    }

    /// How `got` reads in a message: as written, or the default formatted.
    fn shown<T>(&self, got: &Got<T>, fmt_default: impl Fn(&T) -> String) -> String {
        match &got.span {
            Some(s) => self.echo(s),
            None => fmt_default(&got.value),
        }
    }

    fn string_of<K>(&mut self, label: &str, f: &Spanned<Text<K>>) -> Option<String> {
        match &f.get_ref().value {
            Scalar::Str(s) => Some(s.clone()),
            Scalar::Num(_) => {
                let echo = self.echo(&f.span());
                self.bad(
                    Some(f.span()),
                    format!("{label} = {echo}: expected a string, found a number"),
                );
                None
            }
        }
    }

    fn duration(
        &mut self,
        label: &str,
        f: &S<Text<DurationKind>>,
        default: Duration,
        range: RangeInclusive<Duration>,
    ) -> Got<Duration> {
        let Some(f) = f else {
            return self.unset(label, default);
        };
        let fallback = Got::failed(default);
        let Some(s) = self.string_of(label, f) else {
            return fallback;
        };
        let text = between_text(&range, format_duration);
        match self.in_range(label, f.span(), parse_duration(&s), &range, text, "") {
            Some(d) => Got::written(d, f.span()),
            None => fallback,
        }
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

    fn duration_or_off(
        &mut self,
        label: &str,
        f: &S<Text<DurationOrOffKind>>,
        default: Option<Duration>,
        range: RangeInclusive<Duration>,
    ) -> Got<Option<Duration>> {
        let Some(f) = f else {
            return self.unset(label, default);
        };
        let fallback = Got::failed(default);
        let Some(s) = self.string_of(label, f) else {
            return fallback;
        };
        if s.trim() == "off" {
            return Got::written(None, f.span());
        }
        let text = between_text(&range, format_duration);
        let also = ", or \"off\"";
        match self.in_range(label, f.span(), parse_duration(&s), &range, text, also) {
            Some(d) => Got::written(Some(d), f.span()),
            None => fallback,
        }
    }

    fn number(
        &mut self,
        label: &str,
        f: &S<f64>,
        default: f64,
        range: RangeInclusive<f64>,
    ) -> Got<f64> {
        let Some(f) = f else {
            return self.unset(label, default);
        };
        let text = between_text(&range, |v: f64| v.to_string());
        match self.in_range(label, f.span(), Ok(*f.get_ref()), &range, text, "") {
            Some(v) => Got::written(v, f.span()),
            None => Got::failed(default),
        }
    }

    fn boolean(f: &S<bool>, default: bool) -> bool {
        f.as_ref().map_or(default, |b| *b.get_ref())
    }

    fn config(&mut self, raw: RawConfig) -> Config {
        if let Some(v) = &raw.version
            && *v.get_ref() != SCHEMA_VERSION
        {
            let echo = self.echo(&v.span());
            let why = self.huge(&v.span()).unwrap_or("unsupported config version");
            self.bad(
                Some(v.span()),
                format!("version = {echo}: {why}; this vramwatch reads version {SCHEMA_VERSION}"),
            );
        }
        let sampling = self.sampling(raw.sampling.unwrap_or_default());
        let thresholds = self.thresholds(raw.thresholds.unwrap_or_default());
        let alerts = self.alerts(raw.alerts.unwrap_or_default(), &sampling);
        let display = self.display(raw.display.unwrap_or_default());
        let keys = self.keys(raw.keys.unwrap_or_default());
        let record = self.record(raw.record.unwrap_or_default());
        let serve = self.serve(raw.serve.unwrap_or_default());
        Config {
            sampling: sampling.0,
            thresholds,
            alerts,
            display,
            keys,
            record,
            serve,
        }
    }

    /// The sampling section, and where `fast_interval` came from (the
    /// alerts check `burst_interval` against it).
    fn sampling(&mut self, r: raw::RawSampling) -> (Sampling, Got<Option<Duration>>) {
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

    fn thresholds(&mut self, r: raw::RawThresholds) -> Thresholds {
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

    fn alerts(
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

    fn record(&mut self, r: raw::RawRecord) -> Record {
        let d = Record::default();
        let dir = match &r.dir {
            None => d.dir.clone(),
            Some(f) => {
                let echo = self.echo(&f.span());
                match expand_dir(f.get_ref()) {
                    Ok(p) => Some(p),
                    Err(why) => {
                        self.bad(Some(f.span()), format!("[record] dir = {echo}: {why}"));
                        d.dir.clone()
                    }
                }
            }
        };
        let max_size = match &r.max_size {
            None => d.max_size,
            Some(f) => {
                let parsed = match &f.get_ref().value {
                    Scalar::Str(s) => parse_size(s),
                    Scalar::Num(n) if *n >= 0.0 && n.fract() == 0.0 => Ok(*n as u64),
                    Scalar::Num(_) => Err("a number of bytes is a whole number".to_owned()),
                };
                let range = 1u64 << 20..=1u64 << 40;
                let text = between_text(&range, format_size);
                self.in_range("[record] max_size", f.span(), parsed, &range, text, "")
                    .unwrap_or(d.max_size)
            }
        };
        let sync_every = self.duration(
            "[record] sync_every",
            &r.sync_every,
            d.sync_every,
            100 * MS..=HOUR,
        );
        Record {
            dir,
            max_size,
            compress: Self::boolean(&r.compress, d.compress),
            sync_every: sync_every.value,
        }
    }

    fn serve(&mut self, r: raw::RawServe) -> Serve {
        let d = Serve::default();
        let listen = match &r.listen {
            None => d.listen,
            Some(f) => match parse_listen(f.get_ref()) {
                Ok(addr) => addr.to_string(),
                Err(why) => {
                    let echo = self.echo(&f.span());
                    self.bad(Some(f.span()), format!("[serve] listen = {echo}: {why}"));
                    d.listen
                }
            },
        };
        let hostname_label = match &r.hostname_label {
            None => d.hostname_label,
            Some(f) => match check_label_name(f.get_ref()) {
                Ok(()) => f.get_ref().clone(),
                Err(why) => {
                    let echo = self.echo(&f.span());
                    self.bad(
                        Some(f.span()),
                        format!("[serve] hostname_label = {echo}: {why}"),
                    );
                    d.hostname_label
                }
            },
        };
        let max_process_series = self
            .whole(
                &r.max_process_series,
                "[serve] max_process_series",
                0..=MAX_PROCESS_SERIES as i64,
            )
            .map_or(d.max_process_series, |v| v as usize);
        Serve {
            listen,
            hostname_label,
            max_process_series,
        }
    }
}

/// `~/x` → the home directory's `x`; the result must be absolute.
fn expand_dir(s: &str) -> Result<PathBuf, String> {
    if s.trim().is_empty() {
        return Err("is empty; leave it out to use the default".into());
    }
    let p = if s == "~" || s.starts_with("~/") {
        let home = directories::BaseDirs::new()
            .map(|b| b.home_dir().to_path_buf())
            .ok_or("`~` cannot be expanded: no home directory is known")?;
        home.join(s.trim_start_matches('~').trim_start_matches('/'))
    } else {
        PathBuf::from(s)
    };
    if p.is_absolute() {
        Ok(p)
    } else {
        Err("must be an absolute path (or start with ~/)".into())
    }
}
