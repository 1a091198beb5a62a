//! The fleet as plain data: hosts, their GPUs and processes, alerts. Built
//! from query results by `fetch`, read by `app` and `ui`, printed by
//! `--once --json`.

use serde::Serialize;

/// Scrape health of a host's targets, worst first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Health {
    /// The last scrape failed (`up == 0`).
    Down,
    /// Prometheus has not scraped it for over three of its intervals, or no
    /// longer has an `up` for it (removed from its targets).
    Stale,
    /// Scraped on time.
    Up,
    #[default]
    Unknown,
}

impl Health {
    pub fn name(self) -> &'static str {
        match self {
            Health::Down => "down",
            Health::Stale => "stale",
            Health::Up => "up",
            Health::Unknown => "?",
        }
    }

    /// Rank for "worst": down < stale < unknown < up.
    pub fn badness(self) -> u8 {
        match self {
            Health::Down => 0,
            Health::Stale => 1,
            Health::Unknown => 2,
            Health::Up => 3,
        }
    }
}

/// A host's scrape health and its age: seconds since the last scrape (up,
/// stale) or since the last successful one (down; `None`: not within the
/// last ten minutes).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Scrape {
    pub health: Health,
    pub age_s: Option<f64>,
}

/// One host: every figure is over its GPUs; `None` where no target reports
/// it (a dcgm-exporter node has no growth, forecast or processes).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Host {
    pub name: String,
    /// The Prometheus targets (`instance`) its figures come from.
    pub instances: Vec<String>,
    pub gpus: u32,
    /// Device memory in use (used + reserved), bytes.
    pub used_bytes: Option<u64>,
    pub total_bytes: Option<u64>,
    /// The fullest GPU: memory in use, % of its total.
    pub fullest_pct: Option<f64>,
    /// The busiest GPU's utilisation, %.
    pub max_util_pct: Option<f64>,
    /// The fastest-growing GPU, bytes/s.
    pub growth_bps: Option<f64>,
    /// The soonest forecast time to full, seconds.
    pub full_in_s: Option<f64>,
    /// vramwatch alert series firing.
    pub alerts: u32,
    /// Processes flagged as leaking.
    pub leaks: u32,
    /// vramwatch reports this host (processes, growth, forecasts); false
    /// for dcgm-exporter alone.
    pub process_data: bool,
    pub scrape: Scrape,
}

impl Host {
    /// Memory in use, % of the host's total.
    pub fn used_pct(&self) -> Option<f64> {
        let (u, t) = (self.used_bytes?, self.total_bytes?);
        (t > 0).then(|| u as f64 * 100.0 / t as f64)
    }
}

/// One GPU of a host, as the drill-down shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GpuRow {
    pub gpu: u32,
    pub model: String,
    pub used_bytes: Option<u64>,
    pub reserved_bytes: Option<u64>,
    pub free_bytes: Option<u64>,
    pub util_pct: Option<f64>,
    pub temp_c: Option<f64>,
    pub power_w: Option<f64>,
    pub growth_bps: Option<f64>,
    pub full_in_s: Option<f64>,
    /// The forecast's latest end, seconds.
    pub full_in_high_s: Option<f64>,
    /// Memory in use, % of total, over the last ten minutes (oldest
    /// first; `None`: no sample).
    pub mem_history: Vec<Option<f64>>,
    pub util_history: Vec<Option<f64>>,
}

impl GpuRow {
    pub fn total_bytes(&self) -> Option<u64> {
        let parts = [self.used_bytes, self.reserved_bytes, self.free_bytes];
        let known: Vec<u64> = parts.iter().flatten().copied().collect();
        (self.used_bytes.is_some() && self.free_bytes.is_some()).then(|| known.iter().sum())
    }

    /// Used + reserved, % of total.
    pub fn in_use_pct(&self) -> Option<f64> {
        let total = self.total_bytes()?;
        let in_use = self.used_bytes? + self.reserved_bytes.unwrap_or(0);
        (total > 0).then(|| in_use as f64 * 100.0 / total as f64)
    }
}

/// One process on one GPU of one host.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ProcRow {
    pub host: String,
    pub instance: String,
    pub gpu: u32,
    pub pid: u32,
    pub user: String,
    pub command: String,
    pub container: String,
    pub mem_bytes: u64,
    pub growth_bps: Option<f64>,
    pub leak: bool,
}

/// A host opened with Enter.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HostDetail {
    pub host: String,
    pub gpus: Vec<GpuRow>,
    /// Its processes, most memory first (at most the `--top` count).
    pub procs: Vec<ProcRow>,
    /// Seconds the sparklines cover.
    pub history_s: u64,
}

/// Where an alert comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AlertSource {
    /// `vramwatch_alert_active == 1`.
    Vramwatch,
    /// Prometheus's own rules (`/api/v1/alerts`).
    Prometheus,
}

/// An alert firing somewhere in the fleet.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AlertRow {
    pub source: AlertSource,
    pub host: String,
    pub name: String,
    pub severity: String,
    pub gpu: Option<String>,
    pub pid: Option<String>,
    /// Prometheus alerts: when it became active (RFC 3339).
    pub since: Option<String>,
    /// Prometheus alerts: the `summary` (or `description`) annotation.
    pub summary: String,
}

/// What `--once --json` prints, and the hosts screen's totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub hosts: usize,
    pub hosts_up: usize,
    pub hosts_stale: usize,
    pub hosts_down: usize,
    pub hosts_without_process_data: usize,
    pub gpus: u64,
    pub used_bytes: u64,
    pub total_bytes: u64,
    pub alerts: u64,
    pub leaks: u64,
}

impl Summary {
    pub fn of(hosts: &[Host]) -> Summary {
        let mut s = Summary {
            hosts: hosts.len(),
            ..Default::default()
        };
        for h in hosts {
            match h.scrape.health {
                Health::Up => s.hosts_up += 1,
                Health::Stale => s.hosts_stale += 1,
                Health::Down => s.hosts_down += 1,
                Health::Unknown => {}
            }
            s.hosts_without_process_data += usize::from(!h.process_data);
            s.gpus += u64::from(h.gpus);
            s.used_bytes += h.used_bytes.unwrap_or(0);
            s.total_bytes += h.total_bytes.unwrap_or(0);
            s.alerts += u64::from(h.alerts);
            s.leaks += u64::from(h.leaks);
        }
        s
    }
}
