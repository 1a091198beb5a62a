//! What each subcommand does, one module each; `main.rs` only dispatches.

pub mod bench_sampler;
pub mod config;
pub mod dashboard;
pub mod export;
pub mod record;
pub mod replay;
pub mod report;
pub mod serve;
pub mod snapshot;
