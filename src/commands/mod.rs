//! What each subcommand does, one module each; `main.rs` only dispatches.

pub mod bench_sampler;
pub mod config;
pub mod dashboard;
pub mod export;
pub mod fleet;
pub mod record;
pub mod replay;
pub mod report;
pub mod score;
pub mod serve;
pub mod snapshot;

use std::thread::JoinHandle;

use crate::cli::SourceArgs;
use crate::config::{ColorDepth, Config};
use crate::pipeline::Hub;
use crate::source::select::{self, Selected};
use crate::source::{Source, SourceError};
use crate::theme::{Depth, depth_from_env, resolve_depth};

/// Opens the source the command line asks for: the simulator (`--demo`) or
/// NVML, showing only the GPUs chosen (`--gpu`, else `CUDA_VISIBLE_DEVICES`
/// unless `--all-gpus`; `source::select`). A note about ignored entries of
/// `CUDA_VISIBLE_DEVICES` goes to standard error. `ahead_s`: how far into a
/// simulated scenario to start.
pub(crate) fn open_source(
    args: &SourceArgs,
    me: &str,
    ahead_s: u64,
) -> Result<Box<dyn Source>, SourceError> {
    open_chosen(args, me, ahead_s).map(|(src, _)| src)
}

/// As [`open_source`], with what is shown when not every GPU is
/// (`showing GPUs 2, 3 as 0, 1 (--gpu 2,3)`).
pub(crate) fn open_chosen(
    args: &SourceArgs,
    me: &str,
    ahead_s: u64,
) -> Result<(Box<dyn Source>, Option<String>), SourceError> {
    let src = crate::source::open(args.demo.as_deref(), args.seed, me, ahead_s)?;
    let cuda = std::env::var_os("CUDA_VISIBLE_DEVICES").map(|v| v.to_string_lossy().into_owned());
    let chosen = select::resolve(&args.gpus, cuda.as_deref(), &src.system().gpus)?;
    if let Some(note) = &chosen.note {
        crate::tell!("vramwatch: note: {note}");
    }
    Ok(match chosen.positions {
        None => (src, None),
        Some(p) => (Box::new(Selected::new(src, p)), chosen.shown),
    })
}

/// The colour depth to draw with: an explicit depth (`--color`, or
/// `[display] color` in the config) is used as asked, even with `NO_COLOR`
/// set (no-color.org: configuration and flags override it); `auto` reads
/// `NO_COLOR`, `COLORTERM` and `TERM`.
pub(crate) fn color_depth(wanted: ColorDepth) -> Depth {
    match wanted {
        ColorDepth::Auto => depth_from_env(ColorDepth::Auto),
        explicit => resolve_depth(explicit, None, None, None),
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_colour_depth_beats_no_color() {
        assert_eq!(color_depth(ColorDepth::TrueColor), Depth::TrueColor);
        assert_eq!(color_depth(ColorDepth::Ansi256), Depth::Ansi256);
        assert_eq!(color_depth(ColorDepth::Ansi16), Depth::Ansi16);
    }
}
