//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::process::Command;

/// Whether the outside program `name` can be run. When it cannot, the test
/// should return early: this prints a skip notice, or panics when
/// `VRAMWATCH_REQUIRE_TOOLS=1` (set by `.ci/run`) so CI never skips.
pub(crate) fn tool_available(name: &str) -> bool {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !found {
        if std::env::var("VRAMWATCH_REQUIRE_TOOLS").as_deref() == Ok("1") {
            panic!("`{name}` is required (VRAMWATCH_REQUIRE_TOOLS=1) but not installed");
        }
        eprintln!(
            "SKIPPED: `{name}` is not installed; set VRAMWATCH_REQUIRE_TOOLS=1 to make this a failure"
        );
    }
    found
}
