//! What each subcommand does, one module each; `main.rs` only dispatches.

pub mod bench_sampler;
pub mod config;
pub mod dashboard;
pub mod export;
pub mod record;
pub mod replay;
pub mod report;
pub mod score;
pub mod serve;
pub mod snapshot;

use std::thread::JoinHandle;

use crate::config::Config;
use crate::pipeline::Hub;

/// Runs `[alerts] command` (no shell) for every alert the pipeline raises,
/// when one is configured; `on_error` hears why a run could not start.
pub(crate) fn start_hook(
    hub: &Hub,
    cfg: &Config,
    on_error: impl Fn(String) + Clone + Send + 'static,
) -> Option<JoinHandle<()>> {
    if cfg.alerts.command.is_empty() {
        return None;
    }
    match crate::pipeline::spawn_hook(hub, cfg.alerts.command.clone(), on_error.clone()) {
        Ok(h) => Some(h),
        Err(e) => {
            on_error(format!("cannot start the alert command's thread: {e}"));
            None
        }
    }
}
