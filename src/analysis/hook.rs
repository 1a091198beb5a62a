//! The alert command hook: the configured program is started directly
//! (never through a shell, so nothing in a process name or message is ever
//! interpreted) with the alert's fields in `VRAMWATCH_ALERT_*` environment
//! variables. It is not waited for: a reaper thread collects its exit
//! status so no zombie is left, and the dashboard never blocks on it.

use std::fmt::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, UNIX_EPOCH};

use thiserror::Error;

use crate::analysis::alerts::{Alert, severity_str};

#[derive(Debug, Error)]
pub enum HookError {
    #[error(
        "the alert command is empty (set `command` in [alerts] to a program and its arguments)"
    )]
    Empty,
    #[error("cannot start alert command `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

/// The environment the hook sees:
///
/// | variable | value |
/// | --- | --- |
/// | `VRAMWATCH_ALERT_KIND` | `memory_critical`, `forecast_full`, `leak`, `temperature_critical`, `power_critical`, `gpu_lost`, `xid` |
/// | `VRAMWATCH_ALERT_SEVERITY` | `warn` or `critical` |
/// | `VRAMWATCH_ALERT_GPU` | GPU index, empty when none |
/// | `VRAMWATCH_ALERT_PID` | process id, empty when none |
/// | `VRAMWATCH_ALERT_MESSAGE` | the human message (control characters removed) |
/// | `VRAMWATCH_ALERT_TIME_MS` | unix milliseconds |
/// | `VRAMWATCH_ALERT_TIME` | RFC 3339 UTC, e.g. `2026-11-03T10:15:02.250Z` (empty past year 9999) |
pub fn alert_env(alert: &Alert) -> Vec<(String, String)> {
    let opt = |v: Option<u32>| v.map(|x| x.to_string()).unwrap_or_default();
    // Empty when the time cannot be written as RFC 3339 (past year 9999).
    let mut time = String::new();
    if let Some(t) = UNIX_EPOCH.checked_add(Duration::from_millis(alert.t_ms))
        && write!(time, "{}", humantime::format_rfc3339_millis(t)).is_err()
    {
        time.clear();
    }
    vec![
        ("VRAMWATCH_ALERT_KIND".into(), alert.kind.name().into()),
        (
            "VRAMWATCH_ALERT_SEVERITY".into(),
            severity_str(alert.severity).into(),
        ),
        ("VRAMWATCH_ALERT_GPU".into(), opt(alert.gpu)),
        ("VRAMWATCH_ALERT_PID".into(), opt(alert.pid)),
        (
            "VRAMWATCH_ALERT_MESSAGE".into(),
            crate::sanitize::clean(&alert.message),
        ),
        ("VRAMWATCH_ALERT_TIME_MS".into(), alert.t_ms.to_string()),
        ("VRAMWATCH_ALERT_TIME".into(), time),
    ]
}

/// Starts `command[0]` with arguments `command[1..]` and [`alert_env`];
/// stdin, stdout and stderr are `/dev/null` (the terminal belongs to the
/// dashboard). Returns the child's PID without waiting for it.
pub fn run_hook(command: &[String], alert: &Alert) -> Result<u32, HookError> {
    let (program, args) = command.split_first().ok_or(HookError::Empty)?;
    if program.is_empty() {
        return Err(HookError::Empty);
    }
    let mut child = Command::new(program)
        .args(args)
        .envs(alert_env(alert))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| HookError::Spawn {
            program: program.clone(),
            source,
        })?;
    let pid = child.id();
    // Reap it off the caller's thread. Should the thread not start, the
    // child is left to the OS: still no wait here.
    let _ = std::thread::Builder::new()
        .name("vw-alert-hook".into())
        .spawn(move || child.wait());
    Ok(pid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::alerts::AlertKind;
    use crate::config::Severity;

    fn alert() -> Alert {
        Alert {
            t_ms: 1_764_000_000_250,
            kind: AlertKind::Leak,
            gpu: Some(3),
            pid: None,
            severity: Severity::Warn,
            message: "PID 1 leaking\x1b[31m; $(rm -rf /)\0".into(),
        }
    }

    #[test]
    fn env_names_every_field() {
        let env = alert_env(&alert());
        let get = |k: &str| {
            env.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
                .unwrap()
        };
        assert_eq!(get("VRAMWATCH_ALERT_KIND"), "leak");
        assert_eq!(get("VRAMWATCH_ALERT_SEVERITY"), "warn");
        assert_eq!(get("VRAMWATCH_ALERT_GPU"), "3");
        assert_eq!(get("VRAMWATCH_ALERT_PID"), "");
        assert_eq!(get("VRAMWATCH_ALERT_TIME_MS"), "1764000000250");
        assert_eq!(get("VRAMWATCH_ALERT_TIME"), "2025-11-24T16:00:00.250Z");
        // Control characters (and NUL, which no environment can hold) go;
        // shell syntax stays as text.
        assert_eq!(get("VRAMWATCH_ALERT_MESSAGE"), "PID 1 leaking; $(rm -rf /)");
        assert_eq!(env.len(), 7);
        // A time no calendar can show: empty, not a panic.
        let mut far = alert();
        far.t_ms = u64::MAX;
        let env = alert_env(&far);
        assert!(
            env.iter()
                .any(|(k, v)| k == "VRAMWATCH_ALERT_TIME" && v.is_empty())
        );
    }

    #[test]
    fn empty_or_missing_programs_are_errors_not_panics() {
        assert!(matches!(run_hook(&[], &alert()), Err(HookError::Empty)));
        assert!(matches!(
            run_hook(&[String::new()], &alert()),
            Err(HookError::Empty)
        ));
        let e = run_hook(&["/nonexistent/vramwatch-hook".into()], &alert()).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/vramwatch-hook"), "{e}");
    }
}
