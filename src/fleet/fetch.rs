//! One refresh: the queries a screen needs, sent at once (the hosts' in one
//! round, then what depends on their answers), put together as the model
//! by `assemble`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::future::join_all;

use super::assemble::{
    Grid, assemble_alerts, assemble_detail, assemble_hosts, assemble_procs, keep_fleet_alerts,
    label, not_up,
};
use super::client::{Client, PromError};
use super::model::{AlertRow, Host, HostDetail, ProcRow};
use super::queries::{HostQuery, Queries, instance_matcher};

/// What a refresh fetches besides the hosts: the screen on show.
#[derive(Clone, Debug, PartialEq)]
pub enum Want {
    Hosts,
    Procs,
    Host {
        name: String,
        instances: Vec<String>,
    },
    Events,
}

/// The screen-specific part of a refresh.
#[derive(Clone, Debug, PartialEq)]
pub enum View {
    Hosts,
    Procs(Vec<ProcRow>),
    Host(HostDetail),
    Events(Vec<AlertRow>),
}

/// A refresh's results.
#[derive(Clone, Debug, PartialEq)]
pub struct Fetched {
    pub hosts: Vec<Host>,
    pub view: View,
    /// Queries that failed without spoiling the rest (a missing figure).
    pub warnings: Vec<String>,
    pub queries: usize,
    /// Response body bytes of this refresh.
    pub bytes: u64,
    pub took: Duration,
}

/// What a refresh needs: the client, the queries and their limits.
pub struct Fetcher {
    pub client: Client,
    pub queries: Queries,
    /// Rows of the process tables.
    pub top: usize,
    /// How far back the drill-down's sparklines reach.
    pub history: Duration,
    /// A selector was given: targets down without any GPU figure are hosts.
    pub scoped: bool,
}

/// Queries whose failure fails the refresh; the others only lose a figure.
const ESSENTIAL: [HostQuery; 3] = [HostQuery::Instances, HostQuery::Memory, HostQuery::Up];

impl Fetcher {
    /// The hosts, and what `want` adds, in one round of concurrent queries.
    pub async fn fetch(&self, want: &Want) -> Result<Fetched, PromError> {
        let t0 = Instant::now();
        let b0 = self.client.fetched_bytes();
        let r0 = self.client.requests();
        let (hosts, view) = futures::join!(self.hosts(), self.view(want));
        let (hosts, mut warnings) = hosts?;
        let (mut view, view_warnings) = view?;
        warnings.extend(view_warnings);
        if let View::Events(rows) = &mut view {
            keep_fleet_alerts(rows, &hosts);
        }
        Ok(Fetched {
            hosts,
            view,
            warnings,
            queries: (self.client.requests() - r0) as usize,
            bytes: self.client.fetched_bytes() - b0,
            took: t0.elapsed(),
        })
    }

    async fn hosts(&self) -> Result<(Vec<Host>, Vec<String>), PromError> {
        let texts: Vec<String> = HostQuery::ALL
            .iter()
            .map(|q| self.queries.host_query(*q))
            .collect();
        let answers = join_all(texts.iter().map(|t| self.client.query(t))).await;
        let mut by = BTreeMap::new();
        let mut warnings = Vec::new();
        for (q, a) in HostQuery::ALL.into_iter().zip(answers) {
            match a {
                Ok(s) => {
                    by.insert(q, s);
                }
                Err(e) if ESSENTIAL.contains(&q) => return Err(e),
                Err(e) => warnings.push(format!("the {} query: {e}", q.what())),
            }
        }
        // Then, only for targets not up: when they last answered.
        let not_up = not_up(&by);
        let mut last_good = Vec::new();
        if !not_up.is_empty() {
            let q = self.queries.last_good(&instance_matcher(&not_up));
            match self.client.query(&q).await {
                Ok(s) => last_good = s,
                Err(e) => warnings.push(format!("LastGood: {e}")),
            }
        }
        Ok((assemble_hosts(&by, &last_good, self.scoped), warnings))
    }

    /// The screen-specific queries: the view, and what went wrong without
    /// failing it.
    async fn view(&self, want: &Want) -> Result<(View, Vec<String>), PromError> {
        match want {
            Want::Hosts => Ok((View::Hosts, Vec::new())),
            Want::Procs => Ok((View::Procs(self.procs("").await?), Vec::new())),
            Want::Host { name, instances } => {
                let d = self.host_detail(name, instances).await?;
                Ok((View::Host(d), Vec::new()))
            }
            Want::Events => {
                let q = self.queries.alerts_firing();
                let (own, prom) = futures::join!(self.client.query(&q), self.client.alerts());
                // Prometheus's own alerts are a bonus: without them (a
                // server that does not serve /api/v1/alerts) the list
                // still shows vramwatch's, and the status line says why.
                let (prom, warnings) = match prom {
                    Ok(p) => (p, Vec::new()),
                    Err(e) => (Vec::new(), vec![format!("Prometheus's alerts: {e}")]),
                };
                let rows = assemble_alerts(&own?, &prom, &self.queries);
                Ok((View::Events(rows), warnings))
            }
        }
    }

    /// The biggest processes (of the targets `extra` selects, or all),
    /// then who those PIDs are (`vramwatch_process_info`) and their growth
    /// and leak flags, in one query.
    async fn procs(&self, extra: &str) -> Result<Vec<ProcRow>, PromError> {
        let q = &self.queries;
        let top = self.client.query(&q.top_procs(self.top, extra)).await?;
        let mut pids: Vec<u32> = top
            .iter()
            .filter_map(|s| label(&s.labels, "pid").parse().ok())
            .collect();
        pids.sort_unstable();
        pids.dedup();
        let figures = if pids.is_empty() {
            Vec::new()
        } else {
            self.client.query(&q.proc_figures(&pids, extra)).await?
        };
        Ok(assemble_procs(&top, &figures))
    }

    async fn host_detail(&self, name: &str, instances: &[String]) -> Result<HostDetail, PromError> {
        if instances.is_empty() {
            return Ok(HostDetail {
                host: name.to_owned(),
                history_s: self.history.as_secs(),
                ..Default::default()
            });
        }
        let extra = instance_matcher(instances);
        let q = &self.queries;
        let end = crate::model::now_ms() as f64 / 1000.0;
        let span = self.history.as_secs_f64().max(60.0);
        let step = (span / 60.0).max(1.0).round();
        let start = end - span;
        let (gpus, mem, util) = (
            q.host_gpus(&extra),
            q.gpu_memory_pct(&extra),
            q.gpu_util(&extra),
        );
        let (now, mem, util, procs) = futures::join!(
            self.client.query(&gpus),
            self.client.query_range(&mem, start, end, step),
            self.client.query_range(&util, start, end, step),
            self.procs(&extra),
        );
        let grid = Grid {
            start,
            step,
            n: (span / step) as usize + 1,
        };
        let mut d = assemble_detail(name, &now?, &mem?, &util?, grid);
        d.procs = procs?.into_iter().filter(|p| p.host == name).collect();
        d.history_s = span as u64;
        Ok(d)
    }
}
