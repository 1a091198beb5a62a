//! What the App is started with and never changes.

use std::sync::Arc;

use crate::config::Config;
use crate::model::{Millis, SystemInfo};
use crate::theme::{Depth, Theme};

/// How times are shown: local time for people, UTC for tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    Local,
    Utc,
}

impl Clock {
    /// `HH:MM:SS` of a unix-ms time.
    pub fn hms(self, t_ms: Millis) -> String {
        use chrono::{DateTime, Local, Utc};
        let Some(utc) = DateTime::<Utc>::from_timestamp_millis(t_ms as i64) else {
            return "--:--:--".into();
        };
        match self {
            Clock::Local => utc.with_timezone(&Local).format("%H:%M:%S").to_string(),
            Clock::Utc => utc.format("%H:%M:%S").to_string(),
        }
    }
}

/// Fixed for the App's life.
#[derive(Clone, Debug)]
pub struct Settings {
    pub config: Config,
    pub system: Arc<SystemInfo>,
    /// The user running vramwatch: other users' processes are dimmed.
    pub me: String,
    /// Terminate and kill are off.
    pub read_only: bool,
    /// Processes are simulated: signals are not sent.
    pub simulated: bool,
    pub clock: Clock,
    pub theme: Theme,
    /// Where the Prometheus exporter listens (`--serve`), shown in the
    /// header; `None` when it does not run.
    pub serving: Option<String>,
}

impl Settings {
    /// Local time, full colour, signals allowed.
    pub fn new(config: Config, system: Arc<SystemInfo>, me: String) -> Settings {
        let theme = Theme::new(config.display.theme, Depth::TrueColor);
        Settings {
            config,
            system,
            me,
            read_only: false,
            simulated: false,
            clock: Clock::Local,
            theme,
            serving: None,
        }
    }
}
