//! What reading the config costs at startup: the documented default (every
//! key, 27 key bindings) and a file with many problems (the error path).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)] // a test or a tool: panicking is its way to fail, printing its output

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use vramwatch::config;

fn load(c: &mut Criterion) {
    c.bench_function("config/parse default.toml", |b| {
        b.iter(|| config::parse(black_box(config::DEFAULT_TOML), "default.toml"))
    });
    let bad = "[sampling]\ninterval = \"50ms\"\n[display]\ncolour = 1\nmouse = 1\n\
               [thresholds]\npower_crit = 80\n[keys]\nhelp = \"q\"\nqiut = \"x\"\n";
    c.bench_function("config/parse 6 problems", |b| {
        b.iter(|| config::parse(black_box(bad), "bad.toml"))
    });
}

criterion_group!(benches, load);
criterion_main!(benches);
