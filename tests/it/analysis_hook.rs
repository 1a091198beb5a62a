//! The alert command hook against real programs: it gets the alert in its
//! environment, its arguments are never interpreted by a shell, and the
//! caller does not wait for it (the child is reaped, not left a zombie).

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use vramwatch::analysis::{Alert, AlertKind, run_hook};
use vramwatch::config::Severity;

fn alert(message: &str) -> Alert {
    Alert {
        t_ms: 1_764_000_000_250,
        kind: AlertKind::Leak,
        gpu: Some(1),
        pid: Some(52_090),
        severity: Severity::Warn,
        message: message.into(),
    }
}

/// Waits (up to 20 s) for `path` to exist.
fn wait_for(path: &Path) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn hook_sees_the_alert_and_nothing_is_interpreted() {
    if !common::tool_available("sh") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out");
    let pwned = dir.path().join("pwned");
    let evil = format!("$(touch {0}) `touch {0}`; touch {0}", pwned.display());
    // The script writes its argument and the alert's variables; written to
    // a temp name and renamed, so a reader never sees half a file.
    let script = r#"printf '%s\n%s\n%s\n%s\n%s\n%s\n' "$1" "$VRAMWATCH_ALERT_KIND" "$VRAMWATCH_ALERT_SEVERITY" "$VRAMWATCH_ALERT_GPU" "$VRAMWATCH_ALERT_PID" "$VRAMWATCH_ALERT_MESSAGE" > "$0.tmp" && mv "$0.tmp" "$0""#;
    let command = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        script.to_owned(),
        out.display().to_string(),
        evil.clone(),
    ];
    let pid = run_hook(&command, &alert(&evil)).expect("hook starts");
    assert!(pid > 0);
    assert!(wait_for(&out), "the hook never wrote {}", out.display());
    let text = std::fs::read_to_string(&out).expect("hook output");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [evil.as_str(), "leak", "warn", "1", "52090", evil.as_str()]
    );
    assert!(
        !pwned.exists(),
        "an argument or the message was run by a shell"
    );
}

#[test]
fn hook_is_not_waited_for_and_is_reaped() {
    if !common::tool_available("sleep") {
        return;
    }
    let pid = run_hook(&["sleep".into(), "1".into()], &alert("x")).expect("hook starts");
    // Running now (or already done); once it exits, the reaper collects
    // it: no zombie is left behind.
    let stat = format!("/proc/{pid}/stat");
    let start = Instant::now();
    loop {
        match std::fs::read_to_string(&stat) {
            Err(_) => break,
            Ok(s) => {
                let state = s
                    .rsplit(')')
                    .next()
                    .and_then(|r| r.split_whitespace().next());
                assert!(
                    start.elapsed() < Duration::from_secs(30),
                    "PID {pid} still there in state {state:?}"
                );
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
