//! Reading one key's value: as a string, a whole number, a number, a
//! duration (or `"off"`), a boolean, and whether it lies in its range.

use std::ops::{Range, RangeInclusive};
use std::time::Duration;

use toml::Spanned;

use super::{Got, Validator, between_text};
use crate::config::raw::{DurationKind, DurationOrOffKind, S, Scalar, Text};
use crate::config::units::{Unreadable, format_duration, parse_duration_for};

impl Validator<'_> {
    /// A whole-number key: its value when given and within `range`; a
    /// problem reported (and `None`) when outside it.
    pub(super) fn whole(
        &mut self,
        f: &S<i64>,
        label: &str,
        range: RangeInclusive<i64>,
    ) -> Option<i64> {
        let f = f.as_ref()?;
        let text = format!("a whole number from {} to {}", range.start(), range.end());
        self.in_range(label, f.span(), Ok(*f.get_ref()), &range, text, "")
    }

    /// A parsed value if it lies in `range`. Otherwise the problem, naming
    /// the key, the value as written and what it must be (`also` ends both
    /// messages, e.g. `, or "off"`), and `None`.
    pub(super) fn in_range<T: PartialOrd>(
        &mut self,
        label: &str,
        span: Range<usize>,
        parsed: Result<T, Unreadable>,
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
            Err(Unreadable::Why(why)) => {
                self.bad(Some(span), format!("{label} = {echo}: {why}{also}"));
                None
            }
            Err(too_large) => {
                self.bad(
                    Some(span),
                    format!("{label} = {echo}: {too_large}, must be {range_text}{also}"),
                );
                None
            }
        }
    }

    pub(super) fn string_of<K>(&mut self, label: &str, f: &Spanned<Text<K>>) -> Option<String> {
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

    pub(super) fn duration(
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
        let parsed = parse_duration_for(&s, &text);
        match self.in_range(label, f.span(), parsed, &range, text, "") {
            Some(d) => Got::written(d, f.span()),
            None => fallback,
        }
    }

    pub(super) fn duration_or_off(
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
        let parsed = parse_duration_for(&s, &text);
        match self.in_range(label, f.span(), parsed, &range, text, also) {
            Some(d) => Got::written(Some(d), f.span()),
            None => fallback,
        }
    }

    pub(super) fn number(
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

    pub(super) fn boolean(f: &S<bool>, default: bool) -> bool {
        f.as_ref().map_or(default, |b| *b.get_ref())
    }
}
