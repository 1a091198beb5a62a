//! Deterministic Apps filled from the simulator, for tests and benchmarks:
//! the same scenario, seed and length always give the same screen.

use std::sync::Arc;

use crate::analysis::AnalysisConfig;
use crate::app::{App, Clock, Event, Settings};
use crate::config::Config;
use crate::model::{Millis, Snapshot, SystemInfo};
use crate::pipeline::{Analyzed, analyse_all};
use crate::source::sim::SimWorld;

/// A fixed start time: 2026-11-29 12:00:00 UTC.
pub const T0_MS: Millis = 1_795_953_600_000;

/// `seconds` one-second snapshots of `scenario`, events included.
pub fn snapshots(
    scenario: &str,
    seed: u64,
    seconds: u64,
    me: &str,
) -> (Arc<SystemInfo>, Vec<Snapshot>) {
    let world = match SimWorld::new(scenario, seed, T0_MS) {
        Ok(w) => w,
        // Callers pass scenario names they know; an unknown one is a bug in
        // the caller, shown as an empty node rather than a panic.
        Err(_) => return (Arc::default(), Vec::new()),
    };
    let out = world.snapshots(T0_MS, 1000, seconds, me);
    (world.info(), out)
}

/// The same snapshots, analysed as the pipeline would with `config`.
pub fn analysed(
    scenario: &str,
    seed: u64,
    seconds: u64,
    me: &str,
    config: &Config,
) -> (Arc<SystemInfo>, Vec<Arc<Analyzed>>) {
    let (system, snaps) = snapshots(scenario, seed, seconds, me);
    (
        system,
        analyse_all(&AnalysisConfig::from_config(config), snaps),
    )
}

/// Settings for a test: the config given, times in UTC, the user "me",
/// simulated processes.
pub fn settings(config: Config, system: Arc<SystemInfo>) -> Settings {
    Settings {
        clock: Clock::Utc,
        simulated: true,
        ..Settings::new(config, system, "me".into())
    }
}

/// An App that has seen `seconds` of `scenario`, at terminal size `size`,
/// times in UTC, the user "me".
pub fn app(scenario: &str, seed: u64, seconds: u64, size: (u16, u16)) -> App {
    app_with(Config::default(), scenario, seed, seconds, size)
}

/// As [`app`], with `config`.
pub fn app_with(config: Config, scenario: &str, seed: u64, seconds: u64, size: (u16, u16)) -> App {
    let system = snapshots(scenario, seed, 1, "me").0;
    app_from(settings(config, system), scenario, seed, seconds, size)
}

/// As [`app`], with `settings` (their config analyses the snapshots).
pub fn app_from(
    settings: Settings,
    scenario: &str,
    seed: u64,
    seconds: u64,
    size: (u16, u16),
) -> App {
    let (_, snaps) = analysed(scenario, seed, seconds, "me", &settings.config);
    let mut app = App::live(settings);
    app.update(Event::Resize(size.0, size.1));
    for s in snaps {
        app.update(Event::Snapshot(s));
    }
    app
}
