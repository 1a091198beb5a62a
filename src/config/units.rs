//! The unit syntax of the config file: durations (`500ms`, `1s`, `10m`,
//! `1h30m`, `7d`), byte sizes (`512MiB`, `1GiB`, `100MB`, `4096`) and byte
//! rates (`4MiB/s`). Parsers return a message meant for the user that says
//! what is wrong without repeating the value (the caller names the file,
//! line, key and value); formatters write the same syntax back.

use std::net::{IpAddr, SocketAddr};
use std::ops::RangeInclusive;
use std::time::Duration;

use super::load::cap;

/// Why a text is not a value of its unit.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Unreadable {
    /// A number too large to hold, of this kind ("a duration"): the caller
    /// adds the key's range (`a duration too large, must be between 100ms
    /// and 1m`).
    TooLarge(&'static str),
    /// Anything else, said for people, without the value.
    Why(String),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::TooLarge(what) => write!(f, "{what} too large"),
            Unreadable::Why(why) => f.write_str(why),
        }
    }
}

/// Parses a duration such as `500ms`, `1s`, `10m`, `1h30m`, `7days`.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    parse_duration_or_why(s).map_err(|why| match why {
        Unreadable::Why(why) => format!("not a duration: {why}; use e.g. 500ms, 1s, 10m, 2h, 7d"),
        too_large => too_large.to_string(),
    })
}

/// As [`parse_duration`], the error only why it is not one (the caller
/// gives the advice that fits it: examples, or the units and its range).
fn parse_duration_or_why(s: &str) -> Result<Duration, Unreadable> {
    use humantime::DurationError as E;
    let why = match humantime::parse_duration(s.trim()) {
        Ok(d) => return Ok(d),
        Err(E::UnknownUnit { unit, .. }) if unit.is_empty() => "the number has no unit".to_owned(),
        Err(E::UnknownUnit { unit, .. }) => format!("`{}` is not a time unit", cap(&unit)),
        Err(E::Empty) => "it is empty".to_owned(),
        Err(E::NumberOverflow) => return Err(Unreadable::TooLarge("a duration")),
        Err(E::InvalidCharacter(_) | E::NumberExpected(_)) => NOT_A_NUMBER.to_owned(),
    };
    Err(Unreadable::Why(why))
}

/// Why a duration that is not a number with a unit is not one.
const NOT_A_NUMBER: &str = "not a number with a unit";

/// Reads a duration for a key or flag whose range is `range_text`
/// ("between 100ms and 1m"). Where it is no duration, the message gives
/// the units and that range, not examples that may lie outside it (`10m`
/// for an interval of at most `1m`). A number too large to hold comes back
/// as [`Unreadable::TooLarge`], for the caller to add the range; the range
/// itself is the caller's to check ([`parse_duration_in`] does both).
pub(crate) fn parse_duration_for(s: &str, range_text: &str) -> Result<Duration, Unreadable> {
    parse_duration_or_why(s).map_err(|why| match why {
        Unreadable::Why(why) => {
            // "Not a number with a unit" is what the advice says already.
            let why = if why == NOT_A_NUMBER {
                String::new()
            } else {
                format!(": {why}")
            };
            Unreadable::Why(format!(
                "not a duration{why}; use a number with a unit (ms, s, m, h, d) {range_text}"
            ))
        }
        too_large => too_large,
    })
}

/// Reads a duration that must lie in `range` (a flag's: `--interval`, the
/// fleet's `--interval` and `--timeout`): the message of
/// [`parse_duration_for`], or "must be between 100ms and 1m{as_what}"
/// outside the range or too large to hold (`as_what` may say whose range
/// it is: ", as [sampling] interval").
pub(crate) fn parse_duration_in(
    s: &str,
    range: &RangeInclusive<Duration>,
    as_what: &str,
) -> Result<Duration, String> {
    let range_text = between_text(range, format_duration);
    match parse_duration_for(s, &range_text) {
        Ok(d) if range.contains(&d) => Ok(d),
        Ok(_) => Err(format!("must be {range_text}{as_what}")),
        Err(Unreadable::Why(why)) => Err(why),
        Err(too_large) => Err(format!("{too_large}, must be {range_text}{as_what}")),
    }
}

/// "between 100ms and 1m": a range as the messages give it, each end
/// written by `show`.
pub(crate) fn between_text<T: Copy>(r: &RangeInclusive<T>, show: impl Fn(T) -> String) -> String {
    format!("between {} and {}", show(*r.start()), show(*r.end()))
}

/// Writes a duration the way [`parse_duration`] reads it (`100ms`, `1m`, `7days`).
pub(crate) fn format_duration(d: Duration) -> String {
    if d.is_zero() {
        return "0s".to_owned();
    }
    humantime::format_duration(d).to_string().replace(' ', "")
}

/// Parses a listen address: an IP address and a port (`127.0.0.1:9400`,
/// `0.0.0.0:9400`, `[::1]:9400`). Host names are refused rather than looked
/// up, so the address is the same wherever it is read. The error says why,
/// without the value, and ends with examples.
pub(crate) fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    let t = s.trim();
    if let Ok(a) = t.parse::<SocketAddr>() {
        return Ok(a);
    }
    let why = if t.is_empty() {
        "it is empty".to_owned()
    } else if t.parse::<IpAddr>().is_ok() {
        "it has no port".to_owned()
    } else {
        match t.rsplit_once(':') {
            None => "not an IP address and port".to_owned(),
            Some((host, port)) => {
                let bracketed = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
                let ip = bracketed.unwrap_or(host);
                if bracketed.is_none() && host.contains(':') {
                    "an IPv6 address and port are written with brackets, `[::1]:9400`".to_owned()
                } else if ip.parse::<IpAddr>().is_ok() {
                    format!("`{}` is not a port (0 to 65535)", cap(port))
                } else if host.is_empty() {
                    "no address before the port".to_owned()
                } else {
                    format!(
                        "`{}` is not an IP address (host names are not looked up)",
                        cap(host)
                    )
                }
            }
        }
    };
    Err(format!(
        "{why}; use e.g. \"127.0.0.1:9400\", \"0.0.0.0:9400\" or \"[::1]:9400\""
    ))
}

const UNITS: [(&str, f64); 9] = [
    ("b", 1.0),
    ("kib", 1024.0),
    ("mib", 1024.0 * 1024.0),
    ("gib", 1024.0 * 1024.0 * 1024.0),
    ("tib", 1024.0 * 1024.0 * 1024.0 * 1024.0),
    ("kb", 1e3),
    ("mb", 1e6),
    ("gb", 1e9),
    ("tb", 1e12),
];

const SIZE_HELP: &str = "use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB";

/// Parses a number of bytes with an optional unit (`512MiB`, `1.5GiB`,
/// `100MB`, `4096`); the error is why, without the value.
fn bytes(t: &str) -> Result<f64, Unreadable> {
    let t = t.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num = num.replace('_', "");
    let unit = unit.trim();
    let value: f64 = match num.parse() {
        Ok(v) => v,
        Err(_) if num.is_empty() => return Err(why("it does not start with a number")),
        Err(_) => return Err(why(&format!("`{}` is not a number", cap(&num)))),
    };
    let lower = unit.to_ascii_lowercase();
    let factor = if unit.is_empty() {
        1.0
    } else if let Some((_, f)) = UNITS.iter().find(|(u, _)| *u == lower) {
        *f
    } else if matches!(
        lower.as_str(),
        "k" | "m" | "g" | "t" | "ki" | "mi" | "gi" | "ti"
    ) {
        let up = unit.to_ascii_uppercase();
        let up = up.trim_end_matches('I');
        return Err(why(&format!(
            "`{unit}` is ambiguous; write {up}iB (binary) or {up}B (decimal)"
        )));
    } else {
        return Err(why(&format!("`{}` is not a unit; {SIZE_HELP}", cap(unit))));
    };
    let bytes = value * factor;
    if !bytes.is_finite() || bytes > u64::MAX as f64 {
        return Err(Unreadable::TooLarge("a size"));
    }
    Ok(bytes)
}

/// Parses a number of bytes (`512MiB`, `1GiB`, `100MB`, `4096`); fractions
/// of a byte are rounded.
pub(crate) fn parse_size(s: &str) -> Result<u64, Unreadable> {
    bytes(s).map(|b| b.round() as u64).map_err(|u| match u {
        Unreadable::Why(w) => why(&format!("not a size: {w}; e.g. 512MiB, 1GiB")),
        too_large => too_large,
    })
}

fn why(s: &str) -> Unreadable {
    Unreadable::Why(s.to_owned())
}

/// Parses a byte rate such as `4MiB/s` into bytes per second.
pub(crate) fn parse_rate(s: &str) -> Result<f64, Unreadable> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let size = lower
        .strip_suffix("/s")
        .or_else(|| lower.strip_suffix("/sec"))
        .map(|rest| &t[..rest.len()]);
    let result = match size {
        Some(size) => bytes(size),
        None => Err(why("it needs a per-second unit")),
    };
    result.map_err(|u| match u {
        Unreadable::Why(w) => why(&format!("not a rate: {w}; e.g. 4MiB/s")),
        Unreadable::TooLarge(_) => Unreadable::TooLarge("a rate"),
    })
}

/// Writes a byte count in the largest binary unit it is a whole multiple
/// of (`1GiB`, `512MiB`, `1536KiB`), or in bytes.
pub(crate) fn format_size(bytes: u64) -> String {
    for (unit, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}B")
}

/// Writes a rate like [`parse_rate`] reads it.
pub(crate) fn format_rate(bytes_per_s: f64) -> String {
    if bytes_per_s.fract() == 0.0 && bytes_per_s >= 0.0 && bytes_per_s < u64::MAX as f64 {
        format!("{}/s", format_size(bytes_per_s as u64))
    } else {
        format!("{bytes_per_s}B/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_and_write() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration(" 1s "), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86400)));
        for d in [100, 1000, 60_000, 3_600_000, 7 * 86_400_000, 1500] {
            let d = Duration::from_millis(d);
            assert_eq!(parse_duration(&format_duration(d)), Ok(d), "{d:?}");
        }
        assert_eq!(format_duration(Duration::from_millis(100)), "100ms");
        assert_eq!(format_duration(Duration::from_secs(60)), "1m");
        assert_eq!(format_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn bad_durations_say_why() {
        let e = parse_duration("5").unwrap_err();
        assert_eq!(
            e,
            "not a duration: the number has no unit; use e.g. 500ms, 1s, 10m, 2h, 7d"
        );
        let e = parse_duration("5 parsecs").unwrap_err();
        assert!(e.contains("`parsecs` is not a time unit"), "{e}");
        assert!(parse_duration("").unwrap_err().contains("empty"));
        assert!(parse_duration("soon").unwrap_err().contains("not a number"));
    }

    #[test]
    fn durations_with_a_range_give_the_units_and_that_range() {
        let r = Duration::from_secs(1)..=Duration::from_secs(3600);
        assert_eq!(
            parse_duration_in("30s", &r, ""),
            Ok(Duration::from_secs(30))
        );
        assert_eq!(
            parse_duration_in("soon", &r, "").unwrap_err(),
            "not a duration; use a number with a unit (ms, s, m, h, d) between 1s and 1h"
        );
        assert_eq!(
            parse_duration_in("5", &r, "").unwrap_err(),
            "not a duration: the number has no unit; use a number with a unit (ms, s, m, h, d) between 1s and 1h"
        );
        assert_eq!(
            parse_duration_in("500ms", &r, ", as X").unwrap_err(),
            "must be between 1s and 1h, as X"
        );
        assert_eq!(
            parse_duration_in("99999999999999999999d", &r, "").unwrap_err(),
            "a duration too large, must be between 1s and 1h"
        );
    }

    #[test]
    fn listen_addresses_are_ip_and_port() {
        assert_eq!(
            parse_listen(" 127.0.0.1:9400 "),
            Ok("127.0.0.1:9400".parse().unwrap())
        );
        assert_eq!(parse_listen("[::1]:0"), Ok("[::1]:0".parse().unwrap()));
        let why = |s| parse_listen(s).unwrap_err();
        assert!(why("").starts_with("it is empty; use e.g."), "{}", why(""));
        assert!(why("127.0.0.1").starts_with("it has no port"));
        assert!(why("::1").starts_with("it has no port"));
        assert!(why("localhost").starts_with("not an IP address and port"));
        assert!(
            why("localhost:9400")
                .starts_with("`localhost` is not an IP address (host names are not looked up)")
        );
        assert!(why("127.0.0.1:99999").starts_with("`99999` is not a port"));
        assert!(why("::1:99999").contains("with brackets"));
        assert!(
            why("::1:9400").starts_with("it has no port"),
            "a whole IPv6 address"
        );
        assert!(why(":9400").starts_with("no address before the port"));
        assert!(why("x").ends_with("or \"[::1]:9400\""));
    }

    #[test]
    fn sizes_read_and_write() {
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("512 MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1.5KiB"), Ok(1536));
        assert_eq!(parse_size("100MB"), Ok(100_000_000));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("1_000B"), Ok(1000));
        assert_eq!(parse_size("2gib"), Ok(2 << 30));
        for b in [1u64 << 30, 512 << 20, 1536, 7, 1 << 40] {
            assert_eq!(parse_size(&format_size(b)), Ok(b));
        }
        assert_eq!(format_size(1536), "1536B");
        assert_eq!(format_size(3 << 20), "3MiB");
    }

    #[test]
    fn bad_sizes_say_why() {
        let e = parse_size("1G").unwrap_err().to_string();
        assert_eq!(
            e,
            "not a size: `G` is ambiguous; write GiB (binary) or GB (decimal); e.g. 512MiB, 1GiB"
        );
        let e = parse_size("3mi").unwrap_err().to_string();
        assert!(
            e.contains("`mi` is ambiguous; write MiB (binary) or MB (decimal)"),
            "{e}"
        );
        let e = parse_size("12 parsecs").unwrap_err().to_string();
        assert!(e.contains("`parsecs` is not a unit"), "{e}");
        assert!(
            parse_size("GiB")
                .unwrap_err()
                .to_string()
                .contains("does not start with a number")
        );
        assert!(
            parse_size("1.2.3MiB")
                .unwrap_err()
                .to_string()
                .contains("`1.2.3` is not a number")
        );
        assert_eq!(
            parse_size("99999999999TiB").unwrap_err(),
            Unreadable::TooLarge("a size")
        );
        assert_eq!(
            parse_duration("99999999999999999999h").unwrap_err(),
            "a duration too large"
        );
        let huge = format!("{}KiB/s", "9".repeat(400));
        assert_eq!(
            parse_rate(&huge).unwrap_err().to_string(),
            "a rate too large"
        );
        // What is quoted from the value is cut short.
        let long = format!("1{}", "x".repeat(1000));
        let e = parse_size(&long).unwrap_err().to_string();
        assert!(
            e.len() < 200 && e.contains("\u{2026}` is not a unit"),
            "{e}"
        );
    }

    #[test]
    fn rates_read_and_write() {
        assert_eq!(parse_rate("4MiB/s"), Ok(4.0 * 1024.0 * 1024.0));
        assert_eq!(parse_rate("1.5 KiB/sec"), Ok(1536.0));
        assert_eq!(format_rate(4.0 * 1024.0 * 1024.0), "4MiB/s");
        let e = parse_rate("4MiB").unwrap_err().to_string();
        assert!(e.contains("needs a per-second unit"), "{e}");
        let e = parse_rate("4XB/s").unwrap_err().to_string();
        assert_eq!(
            e,
            "not a rate: `XB` is not a unit; use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB; e.g. 4MiB/s"
        );
    }
}
