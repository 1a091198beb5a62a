//! The validated configuration every part of the program reads.
//!
//! `load.rs` reads a file ([`load`], [`load_file`], [`parse`]); the schema
//! as written is `raw.rs` (serde), serde's complaints are put in words by
//! `shape.rs`, values are checked by `check.rs`, and units (`1s`, `1GiB`,
//! `4MiB/s`) are read by `units.rs`. The documented default is
//! `config/default.toml`, embedded as [`DEFAULT_TOML`]; it parses to
//! exactly `Config::default()`.

mod check;
pub(crate) mod load;
pub(crate) mod raw;
mod shape;
pub(crate) mod units;

use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::time::Duration;

pub use load::{
    ConfigError, DEFAULT_TOML, Position, Problem, SCHEMA_VERSION, default_path, load, load_file,
    parse, resolve,
};
pub use shape::closest;

/// The range of `[sampling] interval`, and of `--interval` and
/// `snapshot --watch`: the command line and the file share one set of limits.
pub const INTERVAL_RANGE: RangeInclusive<Duration> =
    Duration::from_millis(100)..=Duration::from_secs(60);

/// Reads an interval as `[sampling] interval` is read (`500ms`, `1s`, `1m`),
/// within [`INTERVAL_RANGE`]; the error says why, without the value.
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    units::parse_duration_in(s, &INTERVAL_RANGE, ", as [sampling] interval")
}

/// Reads a listen address as `[serve] listen` is read: an IP address and a
/// port, no host names (`--listen`, `--serve` and the file use this one
/// check); the error says why, without the value.
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    units::parse_listen(s)
}

/// A warn and a critical level for one figure; `warn < crit` always.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Level {
    pub warn: f64,
    pub crit: f64,
}

impl Level {
    /// 0 below warn, 1 from warn, 2 from crit.
    pub fn grade(&self, v: f64) -> Severity {
        if v >= self.crit {
            Severity::Critical
        } else if v >= self.warn {
            Severity::Warn
        } else {
            Severity::Normal
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Normal,
    Warn,
    Critical,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Sampling {
    /// Display interval and normal lane, 100 ms ..= 60 s.
    pub interval: Duration,
    /// Fast lane (memory only), `None` = off; 10 ms ..= interval.
    pub fast_interval: Option<Duration>,
    /// Slow lane (PCIe, energy, ECC), `None` = off; 1 s ..= 1 h.
    pub slow_interval: Option<Duration>,
    /// PCIe throughput (read in the slow lane; each read samples for 20 ms),
    /// `None` = off; 1 s ..= 1 h, rounded to whole slow-lane periods.
    pub pcie_interval: Option<Duration>,
    /// The energy counter (read in the slow lane; ~5.5 ms of CPU per read
    /// on an H200), `None` = off; 1 s ..= 1 h, rounded to whole slow-lane
    /// periods.
    pub energy_interval: Option<Duration>,
    /// Process utilisation period while not on screen, interval ..= 1 h.
    pub proc_util_interval: Duration,
    /// Process utilisation period while on screen (the SM% column or a
    /// drill-down), interval ..= 1 h; a longer one than
    /// `proc_util_interval` is taken as that.
    pub proc_util_shown_interval: Duration,
    /// How much history is kept, 1 min ..= 7 days.
    pub history: Duration,
    /// How long an exited process stays listed (dimmed), 0 ..= 1 h.
    pub exited_keep: Duration,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            interval: Duration::from_secs(1),
            fast_interval: Some(Duration::from_millis(100)),
            slow_interval: Some(Duration::from_secs(5)),
            pcie_interval: Some(Duration::from_secs(30)),
            energy_interval: Some(Duration::from_secs(30)),
            proc_util_interval: Duration::from_secs(5),
            proc_util_shown_interval: Duration::from_secs(2),
            history: Duration::from_secs(3600),
            exited_keep: Duration::from_secs(300),
        }
    }
}

impl Config {
    /// Applies `--interval`, keeping the lanes consistent: the fast lane and
    /// the burst period no slower than the interval, process utilisation no
    /// faster.
    pub fn with_interval(mut self, interval: Option<Duration>) -> Config {
        if let Some(i) = interval {
            let s = &mut self.sampling;
            s.interval = i;
            s.fast_interval = s.fast_interval.map(|f| f.min(i));
            s.proc_util_interval = s.proc_util_interval.max(i);
            s.proc_util_shown_interval =
                s.proc_util_shown_interval.max(i).min(s.proc_util_interval);
            self.alerts.burst_interval = self.alerts.burst_interval.min(i);
        }
        self
    }

    /// The sampler's schedule: lanes from `[sampling]`, bursts from `[alerts]`.
    pub fn schedule(&self) -> crate::sampler::Schedule {
        let s = &self.sampling;
        crate::sampler::Schedule {
            interval: s.interval,
            fast: s.fast_interval,
            slow: s.slow_interval,
            pcie: s.pcie_interval,
            energy: s.energy_interval,
            proc_util: s.proc_util_interval,
            proc_util_shown: s.proc_util_shown_interval,
            burst: self
                .alerts
                .burst_level
                .map(|l| (l, self.alerts.burst_interval)),
            preview: false,
        }
    }
}

/// Percent levels except temperature (°C). Ranges: memory and
/// utilisation 0 ..= 100, temperature 0 ..= 150, power 0 ..= 200.
#[derive(Clone, Debug, PartialEq)]
pub struct Thresholds {
    /// Memory in use (used + reserved) as % of total.
    pub memory: Level,
    /// GPU temperature, °C.
    pub temperature: Level,
    /// Power draw as % of the enforced limit.
    pub power: Level,
    /// GPU utilisation, %.
    pub utilization: Level,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            memory: Level {
                warn: 80.0,
                crit: 95.0,
            },
            temperature: Level {
                warn: 80.0,
                crit: 90.0,
            },
            power: Level {
                warn: 90.0,
                crit: 98.0,
            },
            utilization: Level {
                warn: 90.0,
                crit: 99.0,
            },
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Alerts {
    /// Ring the terminal bell when an alert fires.
    pub bell: bool,
    /// Program and arguments run when an alert fires (no shell); the alert's
    /// fields are in `VRAMWATCH_ALERT_*` environment variables. Empty = none.
    pub command: Vec<String>,
    /// Alert when a GPU is forecast to be full in less than this; zero
    /// (`"off"` in the file) turns forecast alerts off. 10 s ..= 7 days.
    pub forecast_below: Duration,
    /// A process growing at least this fast (bytes/s, 1 KiB/s ..= 1 TiB/s) ...
    pub leak_min_rate: f64,
    /// ... for at least this long (1 s ..= 1 day) is flagged as leaking.
    pub leak_min_duration: Duration,
    /// Memory % (1 ..= 100) from which the fast lane speeds up (burst
    /// sampling); `None` = off.
    pub burst_level: Option<f64>,
    /// Fast-lane period while bursting, 10 ms ..= 1 s and no longer than
    /// `Sampling::fast_interval`.
    pub burst_interval: Duration,
}

impl Default for Alerts {
    fn default() -> Self {
        Alerts {
            bell: false,
            command: Vec::new(),
            forecast_below: Duration::from_secs(300),
            leak_min_rate: 4.0 * 1024.0 * 1024.0,
            leak_min_duration: Duration::from_secs(20),
            burst_level: Some(90.0),
            burst_interval: Duration::from_millis(50),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Theme {
    #[default]
    Dark,
    Light,
    /// No colour at all: symbols and bold/reverse only.
    Mono,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorDepth {
    /// Decide from NO_COLOR, COLORTERM and TERM.
    #[default]
    Auto,
    Ansi16,
    Ansi256,
    TrueColor,
}

/// Process table columns, in the order shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Column {
    Gpu,
    Pid,
    User,
    Container,
    Kind,
    Memory,
    MemoryPct,
    Trend,
    Peak,
    /// PyTorch allocator: allocated / reserved.
    Alloc,
    Sm,
    Cpu,
    Rss,
    Age,
    Command,
}

impl Column {
    pub const ALL: [Column; 15] = [
        Column::Gpu,
        Column::Pid,
        Column::User,
        Column::Container,
        Column::Kind,
        Column::Memory,
        Column::MemoryPct,
        Column::Trend,
        Column::Peak,
        Column::Alloc,
        Column::Sm,
        Column::Cpu,
        Column::Rss,
        Column::Age,
        Column::Command,
    ];

    /// The name used in the config file.
    pub fn name(self) -> &'static str {
        match self {
            Column::Gpu => "gpu",
            Column::Pid => "pid",
            Column::User => "user",
            Column::Container => "container",
            Column::Kind => "type",
            Column::Memory => "memory",
            Column::MemoryPct => "memory_pct",
            Column::Trend => "trend",
            Column::Peak => "peak",
            Column::Alloc => "alloc",
            Column::Sm => "sm",
            Column::Cpu => "cpu",
            Column::Rss => "rss",
            Column::Age => "age",
            Column::Command => "command",
        }
    }

    pub fn from_name(s: &str) -> Option<Column> {
        Column::ALL.into_iter().find(|c| c.name() == s)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Display {
    pub theme: Theme,
    pub color: ColorDepth,
    pub columns: Vec<Column>,
    /// Mouse capture (click to select, wheel to scroll).
    pub mouse: bool,
    /// ASCII only: no box drawing, blocks or other symbols outside ASCII,
    /// and text from other programs with non-ASCII characters as `?`
    /// (`--ascii`).
    pub ascii: bool,
    /// The most rows each GPU card's history charts grow to when the
    /// process table leaves rows empty (1: they never grow).
    pub chart_rows: u16,
    /// The overview's events pane when the dashboard starts.
    pub events: EventsPane,
}

/// Whether the overview shows the events pane (`[display] events` at the
/// start, then `e`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventsPane {
    /// In the rows the processes and the cards' charts leave empty, when
    /// there are enough of them (`app::layout::overview_for`); else hidden.
    Auto,
    /// Open: it takes its share of the screen.
    Open,
    /// Closed.
    Closed,
}

/// The largest `[display] chart_rows`.
pub const MAX_CHART_ROWS: u16 = 8;
/// `[display] chart_rows` by default. Each row costs terminal bytes, as
/// the charts scroll every second: on the sim's `training` at 120×40, 283
/// bytes/s with 1 row, 314 with 3, 375 with 8 (`cargo bench --bench
/// render`).
pub const DEFAULT_CHART_ROWS: u16 = 3;

impl Default for Display {
    fn default() -> Self {
        Display {
            theme: Theme::Dark,
            color: ColorDepth::Auto,
            columns: Column::ALL.to_vec(),
            mouse: true,
            ascii: false,
            chart_rows: DEFAULT_CHART_ROWS,
            events: EventsPane::Auto,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Where `r` in the dashboard writes recordings; `None` = the platform
    /// data dir's `vramwatch/recordings`. Always absolute (`~/` is expanded).
    pub dir: Option<PathBuf>,
    /// A recording file is rotated when it reaches this many bytes
    /// (1 MiB ..= 1 TiB).
    pub max_size: u64,
    /// Compress with zstd (`.jsonl.zst`).
    pub compress: bool,
    /// fsync this often, 100 ms ..= 1 h.
    pub sync_every: Duration,
}

impl Default for Record {
    fn default() -> Self {
        Record {
            dir: None,
            max_size: 1 << 30,
            compress: true,
            sync_every: Duration::from_secs(5),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Serve {
    /// Listen address; always parses as a `SocketAddr` (checked on load).
    pub listen: String,
    /// Name of the label that carries the host name on every series: a
    /// Prometheus label name none of vramwatch's own labels use (checked on
    /// load). `Hostname` as dcgm-exporter's releases write it.
    pub hostname_label: String,
    /// At most this many processes-on-a-GPU get series on `/metrics` (the
    /// ones holding the most memory), `0..=MAX_PROCESS_SERIES`.
    pub max_process_series: usize,
}

/// Largest `[serve] max_process_series`.
pub const MAX_PROCESS_SERIES: usize = 100_000;

/// Labels vramwatch's series carry (or Prometheus adds) that the host
/// label must not take the name of.
pub const TAKEN_LABELS: [&str; 21] = [
    "gpu",
    "UUID",
    "pci_bus_id",
    "device",
    "modelName",
    "DCGM_FI_DRIVER_VERSION",
    "pid",
    "start_time",
    "user",
    "command",
    "container_id",
    "state",
    "alert",
    "severity",
    "version",
    "source",
    "driver_version",
    "cuda_version",
    "instance",
    "job",
    "le",
];

/// A Prometheus label name (`[a-zA-Z_][a-zA-Z0-9_]*`, not `__…`) that no
/// other label of vramwatch's series has.
pub(crate) fn check_label_name(s: &str) -> Result<(), String> {
    let mut chars = s.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(
            "must be a Prometheus label name: letters, digits and `_`, not starting with a digit (e.g. \"Hostname\" or \"hostname\")".into(),
        );
    }
    if s.starts_with("__") {
        return Err("names starting with `__` are Prometheus's own".into());
    }
    if TAKEN_LABELS.contains(&s) {
        return Err(format!(
            "`{s}` is already a label of vramwatch's series (or one Prometheus adds); choose another, e.g. \"Hostname\" or \"hostname\""
        ));
    }
    Ok(())
}

impl Default for Serve {
    fn default() -> Self {
        Serve {
            listen: "127.0.0.1:9400".into(),
            hostname_label: "Hostname".into(),
            max_process_series: 500,
        }
    }
}

/// Everything, validated.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    pub sampling: Sampling,
    pub thresholds: Thresholds,
    pub alerts: Alerts,
    pub display: Display,
    /// Action name → key specs (e.g. "quit" → ["q", "ctrl-c"]); see keys.rs.
    pub keys: keys::KeyMap,
    pub record: Record,
    pub serve: Serve,
}

pub mod keys;

#[cfg(test)]
mod serve_tests {
    use super::load::parse;

    #[test]
    fn serve_keys_are_read_and_checked() {
        let c = parse(
            "[serve]\nhostname_label = \"hostname\"\nmax_process_series = 10\n",
            "t.toml",
        )
        .unwrap();
        assert_eq!(c.serve.hostname_label, "hostname");
        assert_eq!(c.serve.max_process_series, 10);
        for (text, want) in [
            (
                "hostname_label = \"9host\"",
                "must be a Prometheus label name",
            ),
            ("hostname_label = \"gpu\"", "already a label"),
            ("hostname_label = \"__host\"", "Prometheus's own"),
            ("max_process_series = -1", "a whole number from 0 to 100000"),
        ] {
            let e = parse(&format!("[serve]\n{text}\n"), "t.toml")
                .unwrap_err()
                .to_string();
            assert!(e.contains("[serve]") && e.contains(want), "{text}: {e}");
        }
    }
}

#[cfg(test)]
mod schedule_tests {
    #[test]
    fn the_default_config_samples_on_the_sampler_s_default_schedule() {
        assert_eq!(
            super::Config::default().schedule(),
            crate::sampler::Schedule::default()
        );
    }
}
