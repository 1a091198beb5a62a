//! The fleet dashboard's state. `FleetApp::update(Event) -> Option<Action>`
//! is its only mutator, pure like the local dashboard's: refreshes are
//! `Action::Fetch`es the event loop carries out and answers with
//! `Event::Fetched`; time comes in as `Event::Tick`. Scheduling (the
//! interval, backoff after failures, a fetch at once when the screen
//! changes) lives here, so it is tested without a network.

use std::time::Duration;

use crossterm::event::{KeyEvent, MouseEvent};

use super::fetch::{Fetched, View, Want};
use super::layout::{areas, detail_split, host_columns, proc_columns};
use super::model::{AlertRow, Host, HostDetail, ProcRow, Scrape};
use super::table::{
    self, HostCol, ProcCol, Sort, TableNav, alert_key, host_rows, proc_key, proc_rows,
};
use crate::app::Clock;
use crate::config::Config;
use crate::config::keys::Action as Intent;
use crate::model::Millis;
use crate::theme::Theme;

/// Fixed for the app's life.
#[derive(Clone, Debug)]
pub struct FleetSettings {
    /// Keys, thresholds and the mouse setting of the local dashboard.
    pub config: Config,
    pub theme: Theme,
    pub clock: Clock,
    /// The Prometheus base URL, shown in the status line.
    pub prometheus: String,
    /// The selector's matchers (may be empty).
    pub selector: String,
    pub interval: Duration,
    /// Rows fetched for the process tables.
    pub top: usize,
}

#[cfg(test)]
impl FleetSettings {
    /// Plain settings for tests: no colour, UTC, a 5 s interval.
    pub(crate) fn for_tests() -> FleetSettings {
        let config = Config::default();
        FleetSettings {
            theme: Theme::new(config.display.theme, crate::theme::Depth::None),
            clock: Clock::Utc,
            prometheus: "http://p:9090".into(),
            selector: String::new(),
            interval: Duration::from_secs(5),
            top: 50,
            config,
        }
    }
}

/// The top-level screens, in Tab order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    Hosts,
    Procs,
    Events,
}

impl Tab {
    pub const ALL: [Tab; 3] = [Tab::Hosts, Tab::Procs, Tab::Events];

    pub fn name(self) -> &'static str {
        match self {
            Tab::Hosts => "hosts",
            Tab::Procs => "processes",
            Tab::Events => "events",
        }
    }
}

/// What the app hears.
#[derive(Clone, Debug)]
pub enum Event {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Resize(u16, u16),
    /// The wall clock, unix ms.
    Tick(Millis),
    /// A refresh ended (`at_ms`: when).
    Fetched {
        want: Want,
        at_ms: Millis,
        result: Result<Box<Fetched>, String>,
    },
}

/// What the event loop is asked to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Quit,
    Suspend,
    /// Refresh: fetch the hosts and this screen's figures.
    Fetch(Want),
}

/// How refreshes went.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Status {
    /// When the last refresh succeeded.
    pub last_ok_ms: Option<Millis>,
    /// The last refresh's error, while refreshes fail.
    pub error: Option<String>,
    /// Refreshes failed in a row.
    pub failures: u32,
    /// Queries that failed without failing the refresh.
    pub warnings: Vec<String>,
    pub in_flight: bool,
    /// When the next refresh is due.
    pub next_ms: Millis,
    /// The last good refresh: queries, response bytes, milliseconds.
    pub queries: usize,
    pub bytes: u64,
    pub took_ms: u64,
}

/// The wait before retrying after `failures` failed refreshes in a row:
/// 1 s, 2 s, 4 s, ... up to the larger of the interval and 30 s.
pub fn backoff(failures: u32, interval: Duration) -> Duration {
    let cap = interval.max(Duration::from_secs(30));
    let exp = failures.saturating_sub(1).min(16);
    Duration::from_secs(1u64 << exp).min(cap)
}

/// Everything the fleet dashboard knows.
pub struct FleetApp {
    settings: FleetSettings,
    tab: Tab,
    /// The host opened with Enter.
    open: Option<String>,
    size: (u16, u16),
    hosts: Vec<Host>,
    procs: Vec<ProcRow>,
    detail: Option<HostDetail>,
    events: Vec<AlertRow>,
    navs: [TableNav; 4],
    host_sort: Sort<HostCol>,
    proc_sort: Sort<ProcCol>,
    help: bool,
    paused: bool,
    /// A refresh was asked for (a new screen, `r`): it runs even paused.
    forced: bool,
    status: Status,
    now_ms: Millis,
}

/// Index of each table's [`TableNav`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Hosts = 0,
    Procs = 1,
    Detail = 2,
    Events = 3,
}

impl FleetApp {
    pub fn new(settings: FleetSettings) -> FleetApp {
        FleetApp {
            settings,
            tab: Tab::Hosts,
            open: None,
            size: (80, 24),
            hosts: Vec::new(),
            procs: Vec::new(),
            detail: None,
            events: Vec::new(),
            navs: Default::default(),
            host_sort: Sort {
                column: HostCol::Fullest,
                descending: true,
            },
            proc_sort: Sort {
                column: ProcCol::Memory,
                descending: true,
            },
            help: false,
            paused: false,
            forced: false,
            status: Status::default(),
            now_ms: 0,
        }
    }

    // ---- what drawing reads -------------------------------------------

    pub fn settings(&self) -> &FleetSettings {
        &self.settings
    }
    pub fn theme(&self) -> &Theme {
        &self.settings.theme
    }
    pub fn config(&self) -> &Config {
        &self.settings.config
    }
    pub fn tab(&self) -> Tab {
        self.tab
    }
    /// The host opened with Enter, if any.
    pub fn open_host(&self) -> Option<&str> {
        self.open.as_deref()
    }
    pub fn size(&self) -> (u16, u16) {
        self.size
    }
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }
    /// The drill-down's figures, once fetched for the host open.
    pub fn detail(&self) -> Option<&HostDetail> {
        self.detail
            .as_ref()
            .filter(|d| Some(d.host.as_str()) == self.open.as_deref())
    }
    pub fn nav(&self, t: Table) -> &TableNav {
        &self.navs[t as usize]
    }
    pub fn host_sort(&self) -> Sort<HostCol> {
        self.host_sort
    }
    pub fn proc_sort(&self) -> Sort<ProcCol> {
        self.proc_sort
    }
    pub fn help(&self) -> bool {
        self.help
    }
    pub fn paused(&self) -> bool {
        self.paused
    }
    pub fn status(&self) -> &Status {
        &self.status
    }
    pub fn now_ms(&self) -> Millis {
        self.now_ms
    }

    /// A host's scrape health as shown: its age as fetched plus the time
    /// since that fetch, so it keeps growing while refreshes fail.
    pub fn scrape_shown(&self, h: &Host) -> Scrape {
        let since = self
            .status
            .last_ok_ms
            .map_or(0, |ok| self.now_ms.saturating_sub(ok));
        Scrape {
            health: h.scrape.health,
            age_s: h.scrape.age_s.map(|a| a + since as f64 / 1000.0),
        }
    }

    /// The table that has the keyboard.
    pub fn table(&self) -> Table {
        match (self.open.is_some(), self.tab) {
            (true, _) => Table::Detail,
            (false, Tab::Hosts) => Table::Hosts,
            (false, Tab::Procs) => Table::Procs,
            (false, Tab::Events) => Table::Events,
        }
    }

    /// The hosts table as shown: filtered and sorted.
    pub fn host_rows(&self) -> Vec<&Host> {
        host_rows(&self.hosts, &self.nav(Table::Hosts).filter, self.host_sort)
    }

    /// The fleet's top processes as shown.
    pub fn proc_rows(&self) -> Vec<&ProcRow> {
        proc_rows(&self.procs, &self.nav(Table::Procs).filter, self.proc_sort)
    }

    /// The open host's processes as shown.
    pub fn detail_rows(&self) -> Vec<&ProcRow> {
        let procs = self.detail().map_or(&[][..], |d| d.procs.as_slice());
        proc_rows(procs, &self.nav(Table::Detail).filter, self.proc_sort)
    }

    /// The alerts as shown.
    pub fn event_rows(&self) -> Vec<&AlertRow> {
        let f = self.nav(Table::Events).filter.to_lowercase();
        self.events
            .iter()
            .filter(|a| {
                f.is_empty()
                    || a.host.to_lowercase().contains(&f)
                    || a.name.to_lowercase().contains(&f)
            })
            .collect()
    }

    fn keys(&self, t: Table) -> Vec<String> {
        match t {
            Table::Hosts => self.host_rows().iter().map(|h| h.name.clone()).collect(),
            Table::Procs => self.proc_rows().into_iter().map(proc_key).collect(),
            Table::Detail => self.detail_rows().into_iter().map(proc_key).collect(),
            Table::Events => self.event_rows().into_iter().map(alert_key).collect(),
        }
    }

    /// The selected row's index in table `t` as shown.
    pub fn selected(&self, t: Table) -> Option<usize> {
        self.nav(t).index(&self.keys(t))
    }

    /// Rows of table `t` that fit on screen.
    pub fn table_height(&self, t: Table) -> usize {
        let body = areas(self.size).body;
        let h = match t {
            Table::Detail => {
                let gpus = self.detail().map_or(1, |d| d.gpus.len());
                detail_split(body, gpus).1.height
            }
            _ => body.height,
        };
        h.saturating_sub(1).max(1) as usize
    }

    /// What a refresh fetches now.
    pub fn want(&self) -> Want {
        if let Some(name) = &self.open {
            let instances = self
                .hosts
                .iter()
                .find(|h| &h.name == name)
                .map_or_else(Vec::new, |h| h.instances.clone());
            return Want::Host {
                name: name.clone(),
                instances,
            };
        }
        match self.tab {
            Tab::Hosts => Want::Hosts,
            Tab::Procs => Want::Procs,
            Tab::Events => Want::Events,
        }
    }

    // ---- the mutator ----------------------------------------------------

    pub fn update(&mut self, event: Event) -> Option<Action> {
        match event {
            Event::Key(k) => {
                if let Some(a) = self.on_key(k) {
                    return Some(a);
                }
            }
            Event::Mouse(m) => self.on_mouse(m),
            Event::Resize(w, h) => {
                self.size = (w, h);
                self.fix_all();
            }
            Event::Tick(now) => self.now_ms = self.now_ms.max(now),
            Event::Fetched {
                want,
                at_ms,
                result,
            } => self.on_fetched(want, at_ms, result),
        }
        self.due()
    }

    /// Starts a refresh when one is due and none is running.
    fn due(&mut self) -> Option<Action> {
        let first = self.status.last_ok_ms.is_none() && self.status.failures == 0;
        // No clock yet (no Tick): nothing is due.
        if self.now_ms == 0 || self.status.in_flight || self.now_ms < self.status.next_ms {
            return None;
        }
        if self.paused && !first && !self.forced {
            return None;
        }
        self.forced = false;
        self.status.in_flight = true;
        Some(Action::Fetch(self.want()))
    }

    /// Asks for a refresh at once (`r`).
    fn refresh_now(&mut self) {
        self.status.next_ms = self.now_ms;
        self.forced = true;
    }

    /// The screen changed: its figures at once, unless refreshes are
    /// failing (then the backoff decides; the last good data is shown).
    fn refresh_soon(&mut self) {
        if self.status.error.is_none() {
            self.refresh_now();
        }
    }

    fn on_fetched(&mut self, want: Want, at_ms: Millis, result: Result<Box<Fetched>, String>) {
        self.now_ms = self.now_ms.max(at_ms);
        self.status.in_flight = false;
        let interval = self.settings.interval.as_millis() as Millis;
        match result {
            Ok(f) => {
                let f = *f;
                self.hosts = f.hosts;
                match f.view {
                    View::Hosts => {}
                    View::Procs(p) => self.procs = p,
                    View::Host(d) => self.detail = Some(d),
                    View::Events(e) => self.events = e,
                }
                let s = &mut self.status;
                s.last_ok_ms = Some(at_ms);
                s.error = None;
                s.failures = 0;
                s.warnings = f.warnings;
                s.queries = f.queries;
                s.bytes = f.bytes;
                s.took_ms = f.took.as_millis() as u64;
                s.next_ms = at_ms + interval;
            }
            Err(e) => {
                let s = &mut self.status;
                s.failures += 1;
                s.error = Some(e);
                s.next_ms =
                    at_ms + backoff(s.failures, self.settings.interval).as_millis() as Millis;
            }
        }
        // The screen changed while this refresh ran: fetch its figures now.
        if want != self.want() && self.status.error.is_none() {
            self.refresh_now();
        }
        self.fix_all();
    }

    /// Keeps every table's selection valid and visible.
    fn fix_all(&mut self) {
        for t in [Table::Hosts, Table::Procs, Table::Detail, Table::Events] {
            let keys = self.keys(t);
            let h = self.table_height(t);
            self.navs[t as usize].scroll(&keys, h);
        }
    }
}

mod input;

#[cfg(test)]
mod tests;
