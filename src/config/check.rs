//! Value checks: units, ranges, warn below critical, lanes that fit the
//! interval, the display (`display.rs`), key bindings (`bindings.rs`),
//! addresses. Each check records its problem and falls back to the
//! default, so every problem in a file is found in one run.
//!
//! This file holds the `Validator` and how it words a problem; reading
//! one value of each kind (a duration, a number, …) is `values.rs`, and
//! each section has its own file: `sampling.rs`, `thresholds.rs`,
//! `alerts.rs`, `display.rs`, `bindings.rs`, `record.rs`, `serve.rs`.

mod alerts;
mod bindings;
mod display;
mod record;
mod sampling;
mod serve;
mod thresholds;
mod values;

use std::ops::Range;
use std::time::Duration;

use super::Config;
use super::load::{Found, Position, SCHEMA_VERSION, echo, huge_number};
use super::raw::RawConfig;
use super::units::between_text;

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
}
