//! `vramwatch record -o FILE -- COMMAND`: the command runs while the demo
//! GPUs are recorded, its exit status becomes vramwatch's, and the
//! recording covers its run.

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;
use vramwatch::record::Recording;

fn vw() -> Command {
    Command::cargo_bin("vramwatch").expect("binary")
}

/// The recording reads back whole (no warnings, finished with an index)
/// and `report` reads it: returns its snapshots' first and last times.
fn check_recording(path: &Path) -> (u64, u64) {
    let rec = Recording::open(path).unwrap();
    assert!(rec.warnings().is_empty(), "{:?}", rec.warnings());
    assert!(rec.len() >= 2, "{} snapshots", rec.len());
    let first = rec.get(0).unwrap().t_ms;
    let last = rec.get(rec.len() - 1).unwrap().t_ms;
    if path.extension().is_some_and(|e| e == "jsonl") {
        let text = fs::read_to_string(path).unwrap();
        let end = text.lines().last().unwrap();
        assert!(end.starts_with("{\"type\":\"index\""), "{end}");
    }
    vw().arg("report").arg(path).assert().success();
    (first, last)
}

#[test]
fn the_command_s_exit_code_is_kept_and_its_run_recorded() {
    for code in [3, 0] {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("run.jsonl");
        // The command prints when it starts and ends (unix ms).
        let script = format!("date +%s%3N; sleep 1; date +%s%3N; exit {code}");
        let done = vw()
            .args(["--demo", "record", "-o"])
            .arg(&out)
            .args(["--", "sh", "-c", &script])
            .assert()
            .code(code)
            .stderr(
                predicate::str::contains(format!("exited with code {code} after"))
                    .and(predicate::str::contains("while `sh -c 'date"))
                    .and(predicate::str::contains("wrote ")),
            );
        let stdout = String::from_utf8(done.get_output().stdout.clone()).unwrap();
        let times: Vec<u64> = stdout.lines().map(|l| l.parse().unwrap()).collect();
        let [began, ended] = times[..] else {
            panic!("{stdout:?}")
        };
        // Snapshots from before the command started until after it ended.
        let (first, last) = check_recording(&out);
        assert!(
            first <= began,
            "first snapshot {first}, command began {began}"
        );
        assert!(last >= ended, "last snapshot {last}, command ended {ended}");
        // The recording says when the command started and how it ended.
        let rec = Recording::open(&out).unwrap();
        let notes: Vec<(u64, String)> = (0..rec.len())
            .flat_map(|i| rec.get(i).unwrap().events.clone())
            .filter(|e| e.message.starts_with("command `sh -c"))
            .map(|e| (e.t_ms, e.message))
            .collect();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].1.ends_with(" started"), "{notes:?}");
        assert!(notes[0].0 <= began + 1000, "{notes:?} began {began}");
        assert!(
            notes[1]
                .1
                .contains(&format!(") exited with code {code} after ")),
            "{notes:?}"
        );
        assert!(notes[1].0 >= ended, "{notes:?} ended {ended}");
    }
}

#[test]
fn a_command_killed_by_a_signal_gives_128_plus_the_signal() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("killed.jsonl.zst");
    vw().args(["record", "--demo", "--interval", "100ms", "-o"])
        .arg(&out)
        .args(["--", "sh", "-c", "sleep 0.3; kill -9 $$"])
        .assert()
        .code(128 + 9)
        .stderr(predicate::str::contains("was killed by signal 9 (SIGKILL)"));
    check_recording(&out);
}

#[test]
fn a_command_that_cannot_start_exits_127_or_126_and_leaves_no_recording() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("none.jsonl");
    vw().args(["record", "--demo", "-o"])
        .arg(&out)
        .args(["--", "vramwatch-no-such-command", "--flag"])
        .assert()
        .code(127)
        .stdout("")
        .stderr(predicate::str::contains(
            "vramwatch: error: cannot run `vramwatch-no-such-command`: command not found",
        ));
    assert!(!out.exists());

    let script = d.path().join("not-executable.sh");
    fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o644)).unwrap();
    vw().args(["record", "--demo", "-o"])
        .arg(&out)
        .arg("--")
        .arg(&script)
        .assert()
        .code(126)
        .stderr(
            predicate::str::contains(format!("cannot run `{}`", script.display()))
                .and(predicate::str::contains("Permission denied")),
        );
    assert!(!out.exists());
}

#[test]
fn duration_ends_the_command_with_sigterm_and_keeps_its_code() {
    let d = tempfile::tempdir().unwrap();
    // A command that handles SIGTERM: its own exit code.
    let out = d.path().join("handled.jsonl");
    let started = Instant::now();
    vw().args([
        "record",
        "--demo",
        "--interval",
        "100ms",
        "--duration",
        "1s",
        "-o",
    ])
    .arg(&out)
    .args([
        "--",
        "sh",
        "-c",
        "trap 'kill $! 2>/dev/null; exit 42' TERM; sleep 30 >/dev/null 2>&1 & wait",
    ])
    .assert()
    .code(42)
    .stderr(predicate::str::contains("--duration reached: sent SIGTERM"));
    assert!(started.elapsed() < Duration::from_secs(8));
    let (first, last) = check_recording(&out);
    assert!(last - first >= 900, "{first}..{last}");
    // One that does not: killed by SIGTERM.
    let out = d.path().join("plain.jsonl.zst");
    vw().args([
        "record",
        "--demo",
        "--interval",
        "100ms",
        "--duration",
        "500ms",
        "-o",
    ])
    .arg(&out)
    .args(["--", "sleep", "30"])
    .assert()
    .code(128 + 15);
    check_recording(&out);
}

#[test]
fn a_command_that_ignores_sigterm_is_killed_after_ten_seconds() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("stubborn.jsonl");
    let started = Instant::now();
    vw().args(["record", "--demo", "--duration", "1s", "-o"])
        .arg(&out)
        .args([
            "--",
            "sh",
            "-c",
            "trap '' TERM; sleep 15 >/dev/null 2>&1 & wait",
        ])
        .assert()
        .code(128 + 9)
        .stderr(predicate::str::contains("after SIGTERM: sent SIGKILL"));
    let took = started.elapsed();
    assert!(
        (Duration::from_secs(10)..Duration::from_secs(14)).contains(&took),
        "{took:?}"
    );
    check_recording(&out);
}

#[test]
fn sigterm_and_sigint_to_vramwatch_are_passed_on_to_the_command() {
    use nix::sys::signal::Signal;
    for (signal, name, code) in [(Signal::SIGTERM, "TERM", 5), (Signal::SIGINT, "INT", 6)] {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("signalled.jsonl");
        let script = format!(
            "trap 'echo got-{name}; exit {code}' {name}; echo ready; while :; do sleep 0.1; done"
        );
        let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("vramwatch"))
            .args(["record", "--demo", "--interval", "100ms", "-o"])
            .arg(&out)
            .args(["--", "sh", "-c", &script])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Not the terminal's foreground group, should the tests run in
            // one: a SIGINT is then passed on, not left to the terminal.
            .process_group(0)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "ready");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
        assert_eq!(lines.next().unwrap().unwrap(), format!("got-{name}"));
        let done = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(code), "{stderr}");
        assert!(
            stderr.contains(&format!("SIG{name} passed on to `sh -c")),
            "{stderr}"
        );
        check_recording(&out);
    }
}

#[test]
fn the_command_s_input_and_output_pass_through_untouched() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("cat.jsonl");
    let bytes: Vec<u8> = b"line\n\ttab\r\n\x00\xff\x1b[31mno newline at the end".to_vec();
    vw().args(["record", "--demo", "--interval", "100ms", "-o"])
        .arg(&out)
        .args(["--", "cat"])
        .write_stdin(bytes.clone())
        .assert()
        .success()
        .stdout(bytes);
}
