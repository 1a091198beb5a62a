//! The loader's tests, by topic; the limits on what a file can make it
//! do are `limits_tests.rs`.

mod cross_checks;
mod default_file;
mod never_panics;
mod problems;
mod reading;

use super::*;

/// The one-line messages of a config that must fail.
fn errors(text: &str) -> Vec<String> {
    match parse(text, "c.toml") {
        Ok(c) => panic!("expected an error for {text:?}, got {c:?}"),
        Err(e) => e.to_string().lines().map(str::to_owned).collect(),
    }
}

fn error(text: &str) -> String {
    let e = errors(text);
    assert_eq!(e.len(), 1, "{e:?}");
    e.into_iter().next().unwrap_or_default()
}
