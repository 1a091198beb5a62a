//! The integration tests, as one test binary: each former `tests/*.rs` is a
//! module here, so the crate is linked once for all of them rather than once
//! per file. Run one area with `cargo test --test it tui::` (or any part of
//! a test's path).
//!
//! The modules share one process and run on parallel threads: a test must
//! not change process-wide state (environment variables, the current
//! directory, signal dispositions, the panic hook) and must keep its files
//! in a temporary directory of its own.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)] // a test or a tool: panicking is its way to fail, printing what it skipped

mod common;

mod analysis_hook;
mod analysis_props;
mod analysis_sim;
mod at_risk_carry;
mod baseline;
mod cli;
mod cli_errors;
mod config_cli;
mod corpus;
mod corruption;
mod data_tools;
mod fleet;
mod floods;
mod gpu_compare;
mod grafana;
mod h200_recordings;
mod prometheus;
mod prometheus_docs;
mod python_pkg;
mod record;
mod record_cli;
mod record_command;
mod tmux;
mod torch_alloc;
mod tui;
