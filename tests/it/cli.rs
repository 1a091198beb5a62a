//! The command line, as a user runs it.

use assert_cmd::Command;
use predicates::prelude::*;

fn vw() -> Command {
    let mut c = Command::cargo_bin("vramwatch").expect("binary built");
    // Never pick up a developer's own config.
    c.env("XDG_CONFIG_HOME", "/nonexistent-vramwatch-test");
    c
}

#[test]
fn snapshot_demo_json_follows_the_documented_schema() {
    let out = vw()
        .args(["snapshot", "--demo", "--json"])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(v["schema"], "vramwatch.snapshot/1");
    assert_eq!(v["system"]["source"], "sim:demo");
    let gpus = v["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 4);
    for g in gpus {
        let m = &g["mem"];
        let (used, resv, free, total) = (
            m["used"].as_u64().unwrap(),
            m["reserved"].as_u64().unwrap(),
            m["free"].as_u64().unwrap(),
            m["total"].as_u64().unwrap(),
        );
        assert_eq!(used + resv + free, total, "memory adds up: {g}");
        let idx = g["index"].as_u64().unwrap();
        let sum: u64 = v["procs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["gpu"].as_u64() == Some(idx))
            .filter_map(|p| p["mem"].as_u64())
            .sum();
        assert_eq!(g["unaccounted"].as_u64().unwrap(), used.saturating_sub(sum));
    }
    for p in v["procs"].as_array().unwrap() {
        assert!(p["pid"].as_u64().is_some() && p["start_time"].as_u64().unwrap() > 0);
        assert!(p["command"].as_str().is_some_and(|c| !c.is_empty()));
    }
}

#[test]
fn snapshot_table_is_memory_first() {
    vw().args(["snapshot", "--demo", "training"])
        .assert()
        .success()
        .stdout(predicate::str::contains("USED MiB").and(predicate::str::contains("train.py")));
}

#[test]
fn no_driver_is_a_one_line_error_with_exit_code_2() {
    let out = vw()
        .env("VRAMWATCH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
        .arg("snapshot")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("/nonexistent/libnvidia-ml.so.1") && err.contains("--demo"),
        "{err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
}

#[test]
fn bad_arguments_exit_2_with_a_reason() {
    vw().args(["snapshot", "--demo", "nosuch"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("unknown demo scenario `nosuch`")
                .and(predicate::str::contains("crowded")),
        );
    vw().args(["--interval", "10ms", "snapshot", "--demo"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("minimum interval of 100ms"));
    vw().args(["--color", "purple"]).assert().code(2);
}

#[test]
fn version_and_help() {
    vw().arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::contains(env!("CARGO_PKG_VERSION")));
    vw().arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("snapshot").and(predicate::str::contains("--demo")));
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    // `vramwatch snapshot --json | head -1`
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_vramwatch"))
        .args(["snapshot", "--demo", "crowded", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
