//! Keys checked against each other: warn below critical, lanes that fit
//! the interval, and refused values left out of the comparisons.

use super::*;
use std::time::Duration;

#[test]
fn warn_must_be_below_crit_naming_both() {
    assert_eq!(
        error("[thresholds]\npower_warn = 99\npower_crit = 99\n"),
        "c.toml:2:14: [thresholds] power_warn = 99 (line 2) must be below power_crit = 99 (line 3)"
    );
    // Against a default: the message says so, and points at the key written.
    assert_eq!(
        error("[thresholds]\nmemory_crit = 50\n"),
        "c.toml:2:15: [thresholds] memory_warn = 80 (the default) must be below memory_crit = 50 (line 2)"
    );
}

#[test]
fn lanes_must_fit_the_interval() {
    assert_eq!(
        error("[sampling]\ninterval = \"500ms\"\nfast_interval = \"1s\"\n"),
        "c.toml:3:17: [sampling] fast_interval = \"1s\" must not be longer than interval = \"500ms\" (line 2)"
    );
    assert_eq!(
        error("[sampling]\ninterval = \"2s\"\nproc_util_interval = \"1s\"\n"),
        "c.toml:3:22: [sampling] proc_util_interval = \"1s\" must not be shorter than interval = \"2s\" (line 2)"
    );
    assert_eq!(
        error("[sampling]\ninterval = \"3s\"\nproc_util_shown_interval = \"2s\"\n"),
        "c.toml:3:28: [sampling] proc_util_shown_interval = \"2s\" must not be shorter than interval = \"3s\" (line 2)"
    );
    // Raising the interval alone keeps the process periods, or carries
    // them along when the interval passes them.
    let c = parse("[sampling]\ninterval = \"2s\"\n", "c.toml").unwrap();
    assert_eq!(c.sampling.proc_util_interval, Duration::from_secs(5));
    assert_eq!(c.sampling.proc_util_shown_interval, Duration::from_secs(2));
    let c = parse("[sampling]\ninterval = \"10s\"\n", "c.toml").unwrap();
    assert_eq!(c.sampling.proc_util_interval, Duration::from_secs(10));
    assert_eq!(c.sampling.proc_util_shown_interval, Duration::from_secs(10));
    // Never less often on screen than off it.
    let c = parse("[sampling]\nproc_util_interval = \"1s\"\n", "c.toml").unwrap();
    assert_eq!(c.sampling.proc_util_shown_interval, Duration::from_secs(1));
    assert_eq!(
        error("[sampling]\nfast_interval = \"40ms\"\n"),
        "c.toml:2:17: [alerts] burst_interval = \"50ms\" (the default) must not be longer than [sampling] fast_interval = \"40ms\" (line 2)"
    );
    // With the fast lane off, burst_interval is not compared.
    assert!(
        parse(
            "[sampling]\nfast_interval = \"off\"\n[alerts]\nburst_interval = \"1s\"\n",
            "c"
        )
        .is_ok()
    );
}

/// A refused value is reported once; its default is not then blamed in a
/// comparison with another key.
#[test]
fn refused_values_are_not_compared_again() {
    assert_eq!(
        errors("[thresholds]\nmemory_warn = 120\nmemory_crit = 50\n"),
        ["c.toml:2:15: [thresholds] memory_warn = 120: must be between 0 and 100"]
    );
    assert_eq!(
        errors("[thresholds]\nmemory_warn = \"80%\"\nmemory_crit = 50\n"),
        ["c.toml:2:15: [thresholds] memory_warn = \"80%\": expected a number, found a string"]
    );
    assert_eq!(
        errors("[sampling]\ninterval = \"50ms\"\nfast_interval = \"500ms\"\n"),
        ["c.toml:2:12: [sampling] interval = \"50ms\": must be between 100ms and 1m"]
    );
    assert_eq!(
        errors("[sampling]\nfast_interval = 5\n[alerts]\nburst_interval = \"200ms\"\n"),
        [
            "c.toml:2:17: [sampling] fast_interval = 5: expected a duration such as \"500ms\", \"1s\" or \"10m\", or \"off\", found an integer"
        ]
    );
}
