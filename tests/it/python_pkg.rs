//! Runs the Python package's own tests (`python/tests`, stdlib unittest with
//! a fake torch) so `cargo test` covers the Python side too.

use crate::common;

use std::path::Path;
use std::process::Command;

#[test]
fn python_package_unit_tests_pass() {
    if !common::tool_available("python3") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("python3")
        .args(["-m", "unittest", "discover", "-s", "python/tests"])
        .current_dir(root)
        // Bytecode caches would land in the source tree.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("VRAMWATCH_TORCH_DISABLE")
        .output()
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python/tests failed:\n{}\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    // unittest prints "Ran N tests" and "OK": make sure tests were found.
    let ran = stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("Ran ")?
                .split(' ')
                .next()?
                .parse::<u32>()
                .ok()
        })
        .unwrap_or(0);
    assert!(ran >= 50, "only {ran} Python tests ran:\n{stderr}");
}

/// The workload corpus's own tests (python/workloads/tests): the truth
/// files, pacing and plans without torch, and the runner against a fake
/// `vramwatch` (which it records and stops like the real one).
#[test]
fn workload_corpus_tests_pass() {
    if !common::tool_available("python3") || !common::tool_available("bash") {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/workloads");
    let unit = Command::new("python3")
        .args([
            "-m",
            "unittest",
            "discover",
            "-s",
            "tests",
            "-p",
            "test_common.py",
        ])
        .current_dir(&dir)
        .output()
        .expect("python3 runs");
    assert!(
        unit.status.success(),
        "{}",
        String::from_utf8_lossy(&unit.stderr)
    );
    let runner = Command::new("bash")
        .arg("tests/test_runner.sh")
        .current_dir(&dir)
        .output()
        .expect("bash runs");
    let out = String::from_utf8_lossy(&runner.stdout);
    assert!(
        runner.status.success() && out.contains("all runner tests passed"),
        "{out}\n{}",
        String::from_utf8_lossy(&runner.stderr)
    );
}
