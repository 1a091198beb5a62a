//! Query results put together as the model: pure functions of the
//! samples, unit-tested without a server (`assemble/tests.rs`).

use std::collections::{BTreeMap, BTreeSet};

use super::client::{Labels, PromAlert, Sample, Series};
use super::model::{AlertRow, AlertSource, GpuRow, Health, Host, HostDetail, ProcRow, Scrape};
use super::queries::{HOST, HostQuery, Queries};
use crate::model::units::MIB;

pub(super) fn label<'a>(l: &'a Labels, k: &str) -> &'a str {
    l.get(k).map_or("", String::as_str)
}

/// Largest magnitude believed from Prometheus: nothing the fleet shows
/// comes near it (bytes, bytes/s, seconds); a value past it is garbage
/// (`1e308` showed as a 300-digit figure).
const PLAUSIBLE: f64 = 1e15;

fn finite(v: f64) -> Option<f64> {
    (v.is_finite() && v.abs() <= PLAUSIBLE).then_some(v)
}

/// A percentage: unknown outside 0–1000 %.
fn pct(v: f64) -> Option<f64> {
    finite(v).filter(|x| (0.0..=1000.0).contains(x))
}

/// A count (GPUs, alerts): unknown values count 0 (`+Inf` GPUs showed as
/// 4294967295).
fn count(v: f64) -> u32 {
    finite(v).map_or(0, |x| x.clamp(0.0, 1e6) as u32)
}

fn mib_bytes(v: f64) -> u64 {
    (v.max(0.0) * MIB as f64).round() as u64
}

/// One target's health from `up`, the age of its last scrape, its scrapes
/// in the last minute and the age of its last good scrape.
pub fn target_health(
    up: Option<f64>,
    age: Option<f64>,
    scrapes: Option<f64>,
    last_good: Option<f64>,
) -> Scrape {
    let last_good = last_good.and_then(finite);
    match up {
        None => Scrape {
            health: Health::Stale,
            age_s: last_good,
        },
        Some(v) if v < 0.5 => Scrape {
            health: Health::Down,
            age_s: last_good,
        },
        Some(_) => {
            let interval = 60.0 / scrapes.unwrap_or(1.0).max(1.0);
            let age = age.and_then(finite);
            let late = age.is_some_and(|a| a > 3.0 * interval.clamp(1.0, 300.0) + 1.0);
            Scrape {
                health: if late { Health::Stale } else { Health::Up },
                age_s: age,
            }
        }
    }
}

/// Per instance: `(host from up, up, scrape age, scrapes, last good age)`.
type TargetFacts = (String, Option<f64>, Option<f64>, Option<f64>, Option<f64>);

fn targets(
    by: &BTreeMap<HostQuery, Vec<Sample>>,
    last_good: &[Sample],
) -> BTreeMap<String, TargetFacts> {
    let mut out: BTreeMap<String, TargetFacts> = BTreeMap::new();
    let get = |q| by.get(&q).map_or(&[][..], Vec::as_slice);
    for s in get(HostQuery::Up) {
        let e = out
            .entry(label(&s.labels, "instance").to_owned())
            .or_default();
        e.0 = label(&s.labels, HOST).to_owned();
        // Two jobs scraping one instance: the worse counts.
        e.1 = Some(e.1.map_or(s.value, |v: f64| v.min(s.value)));
    }
    let facts: [(&[Sample], usize); 3] = [
        (get(HostQuery::ScrapeAge), 2),
        (get(HostQuery::Scrapes), 3),
        (last_good, 4),
    ];
    for (samples, field) in facts {
        for s in samples {
            let e = out
                .entry(label(&s.labels, "instance").to_owned())
                .or_default();
            let slot = match field {
                2 => &mut e.2,
                3 => &mut e.3,
                _ => &mut e.4,
            };
            *slot = Some(slot.map_or(s.value, |v: f64| v.max(s.value)));
        }
    }
    out
}

/// Targets whose last scrape failed, or that have GPU figures but no `up`
/// any more.
pub fn not_up(by: &BTreeMap<HostQuery, Vec<Sample>>) -> Vec<String> {
    let get = |q| by.get(&q).map_or(&[][..], Vec::as_slice);
    let up: BTreeMap<&str, f64> = get(HostQuery::Up)
        .iter()
        .map(|s| (label(&s.labels, "instance"), s.value))
        .collect();
    let mut out: BTreeSet<String> = up
        .iter()
        .filter(|(_, v)| **v < 0.5)
        .map(|(i, _)| (*i).to_owned())
        .collect();
    for s in get(HostQuery::Instances) {
        let i = label(&s.labels, "instance");
        if !up.contains_key(i) {
            out.insert(i.to_owned());
        }
    }
    out.into_iter().collect()
}

/// The hosts from the host queries' results, by name.
pub fn assemble_hosts(
    by: &BTreeMap<HostQuery, Vec<Sample>>,
    last_good: &[Sample],
    scoped: bool,
) -> Vec<Host> {
    let get = |q| by.get(&q).map_or(&[][..], Vec::as_slice);
    let mut hosts: BTreeMap<String, Host> = BTreeMap::new();
    for s in get(HostQuery::Instances) {
        let h = ensure(&mut hosts, label(&s.labels, HOST));
        let inst = label(&s.labels, "instance").to_owned();
        if !h.instances.contains(&inst) {
            h.instances.push(inst);
        }
        h.gpus = h.gpus.max(count(s.value));
    }
    memory(&mut hosts, get(HostQuery::Memory));
    type Set = fn(&mut Host, f64);
    let figures: [(HostQuery, Set); 5] = [
        (HostQuery::Fullest, |h, v| h.fullest_pct = pct(v)),
        (HostQuery::Util, |h, v| h.max_util_pct = pct(v)),
        (HostQuery::Growth, |h, v| h.growth_bps = finite(v)),
        (HostQuery::FullIn, |h, v| h.full_in_s = finite(v)),
        (HostQuery::Vramwatch, |h, v| h.process_data = v > 0.0),
    ];
    for (q, set) in figures {
        for s in get(q) {
            if let Some(h) = hosts.get_mut(label(&s.labels, HOST)) {
                set(h, s.value);
            }
        }
    }
    // Alerts by rule: every one counts, `leak` (one per process) is a leak.
    for s in get(HostQuery::Alerts) {
        if let Some(h) = hosts.get_mut(label(&s.labels, HOST)) {
            let n = count(s.value);
            h.alerts = h.alerts.saturating_add(n);
            if label(&s.labels, "alert") == "leak" {
                h.leaks = h.leaks.saturating_add(n);
            }
        }
    }
    let targets = targets(by, last_good);
    for h in hosts.values_mut() {
        h.scrape = worst(h.instances.iter().map(|i| {
            let t = targets.get(i).cloned().unwrap_or_default();
            target_health(t.1, t.2, t.3, t.4)
        }));
    }
    // A target that is down and never showed a GPU figure in the last ten
    // minutes: a host of the fleet only when the selector says which jobs
    // are the fleet's (else every down exporter of any job would be one).
    let known: BTreeSet<String> = hosts.values().flat_map(|h| h.instances.clone()).collect();
    for (inst, t) in &targets {
        if scoped && !known.contains(inst) && t.1.is_some_and(|v| v < 0.5) {
            let h = ensure(&mut hosts, if t.0.is_empty() { inst } else { &t.0 });
            h.instances.push(inst.clone());
            h.scrape = target_health(t.1, t.2, t.3, t.4);
        }
    }
    hosts.into_values().collect()
}

/// Memory per host from `(host, instance, __name__)` sums.
fn memory(hosts: &mut BTreeMap<String, Host>, samples: &[Sample]) {
    // Per host and target: used, free, reserved (MiB). A host with two
    // targets (vramwatch and dcgm-exporter on one node) reports its GPUs
    // twice: the target with the most memory counts.
    let mut mem: BTreeMap<(&str, &str), [Option<f64>; 3]> = BTreeMap::new();
    for s in samples {
        let i = match label(&s.labels, "__name__") {
            "DCGM_FI_DEV_FB_USED" => 0,
            "DCGM_FI_DEV_FB_FREE" => 1,
            "DCGM_FI_DEV_FB_RESERVED" => 2,
            _ => continue,
        };
        let key = (label(&s.labels, HOST), label(&s.labels, "instance"));
        mem.entry(key).or_default()[i] = finite(s.value);
    }
    for ((name, _), [used, free, resv]) in mem {
        let h = ensure(hosts, name);
        if let (Some(used), Some(free)) = (used, free) {
            let in_use = mib_bytes(used + resv.unwrap_or(0.0));
            let total = mib_bytes(used + resv.unwrap_or(0.0) + free);
            if h.total_bytes.is_none_or(|t| total > t) {
                h.used_bytes = Some(in_use);
                h.total_bytes = Some(total);
            }
        }
    }
}

fn ensure<'a>(hosts: &'a mut BTreeMap<String, Host>, name: &str) -> &'a mut Host {
    hosts.entry(name.to_owned()).or_insert_with(|| Host {
        name: name.to_owned(),
        ..Default::default()
    })
}

/// The worst of several targets' health (the oldest age among equals).
fn worst(all: impl Iterator<Item = Scrape>) -> Scrape {
    all.fold(None::<Scrape>, |acc, s| match acc {
        None => Some(s),
        Some(a) if s.health.badness() < a.health.badness() => Some(s),
        Some(a) if s.health.badness() == a.health.badness() => Some(Scrape {
            age_s: match (a.age_s, s.age_s) {
                (Some(x), Some(y)) => Some(x.max(y)),
                (x, y) => x.or(y),
            },
            ..a
        }),
        a => a,
    })
    .unwrap_or_default()
}

/// The key a process's series on one GPU join on: target, GPU, PID and
/// start (empty from exporters without `start_time`).
fn proc_key(l: &Labels) -> (String, String, String, String, String) {
    let k = |n| label(l, n).to_owned();
    (k("instance"), k("job"), k("gpu"), k("pid"), k("start_time"))
}

/// The key of `vramwatch_process_info`: target, PID and start.
fn info_key(l: &Labels) -> (String, String, String, String) {
    let k = |n| label(l, n).to_owned();
    (k("instance"), k("job"), k("pid"), k("start_time"))
}

/// Process rows from `topk`, with who they are from the
/// `vramwatch_process_info` of the same target, PID and start, and growth
/// and leak flags from the series of the same target, GPU, PID and start.
/// Without an info series (vramwatch before `vramwatch_process_info`) the
/// `user`, `command` and `container` labels of the row's own series count.
pub fn assemble_procs(top: &[Sample], figures: &[Sample]) -> Vec<ProcRow> {
    let mut growth: BTreeMap<_, f64> = BTreeMap::new();
    let mut leaks: BTreeSet<_> = BTreeSet::new();
    let mut infos: BTreeMap<_, &Labels> = BTreeMap::new();
    for s in figures {
        match label(&s.labels, "__name__") {
            "vramwatch_process_info" => {
                infos.insert(info_key(&s.labels), &s.labels);
            }
            "vramwatch_process_memory_growth_bytes_per_second" => {
                growth.insert(proc_key(&s.labels), s.value);
            }
            "vramwatch_process_leak_suspected" if s.value > 0.5 => {
                leaks.insert(proc_key(&s.labels));
            }
            _ => {}
        }
    }
    let mut rows: Vec<ProcRow> = top
        .iter()
        .filter(|s| s.value.is_finite())
        .map(|s| {
            let l = &s.labels;
            let key = proc_key(l);
            let (user, command, container) = match infos.get(&info_key(l)) {
                Some(i) => (
                    label(i, "user"),
                    label(i, "command"),
                    label(i, "container_id"),
                ),
                None => (label(l, "user"), label(l, "command"), label(l, "container")),
            };
            ProcRow {
                host: label(l, HOST).to_owned(),
                instance: key.0.clone(),
                gpu: label(l, "gpu").parse().unwrap_or(0),
                pid: label(l, "pid").parse().unwrap_or(0),
                user: user.to_owned(),
                command: command.to_owned(),
                container: container.to_owned(),
                mem_bytes: finite(s.value).map_or(0, |v| v.max(0.0) as u64),
                growth_bps: growth.get(&key).copied().and_then(finite),
                leak: leaks.contains(&key),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.mem_bytes
            .cmp(&a.mem_bytes)
            .then_with(|| (&a.host, a.gpu, a.pid).cmp(&(&b.host, b.gpu, b.pid)))
    });
    rows
}

/// The time grid of a range query.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    pub start: f64,
    pub step: f64,
    pub n: usize,
}

impl Grid {
    /// `series`' points on the grid (`None` where it has none).
    pub fn place(&self, s: &Series) -> Vec<Option<f64>> {
        let mut out = vec![None; self.n];
        for &(t, v) in &s.points {
            let i = ((t - self.start) / self.step).round();
            if i >= 0.0 && (i as usize) < self.n {
                out[i as usize] = finite(v);
            }
        }
        out
    }
}

/// One host's GPUs from its figures now and the two range queries.
pub fn assemble_detail(
    host: &str,
    now: &[Sample],
    mem: &[Series],
    util: &[Series],
    grid: Grid,
) -> HostDetail {
    let mut gpus: BTreeMap<u32, GpuRow> = BTreeMap::new();
    for s in now.iter().filter(|s| label(&s.labels, HOST) == host) {
        let Ok(i) = label(&s.labels, "gpu").parse::<u32>() else {
            continue;
        };
        let g = gpus.entry(i).or_insert_with(|| GpuRow {
            gpu: i,
            ..Default::default()
        });
        if let Some(m) = s.labels.get("modelName").filter(|m| !m.is_empty()) {
            g.model = m.clone();
        }
        let v = finite(s.value);
        match label(&s.labels, "__name__") {
            "DCGM_FI_DEV_FB_USED" => g.used_bytes = v.map(mib_bytes),
            "DCGM_FI_DEV_FB_FREE" => g.free_bytes = v.map(mib_bytes),
            "DCGM_FI_DEV_FB_RESERVED" => g.reserved_bytes = v.map(mib_bytes),
            "DCGM_FI_DEV_GPU_UTIL" => g.util_pct = v.and_then(pct),
            "DCGM_FI_DEV_GPU_TEMP" => g.temp_c = v,
            "DCGM_FI_DEV_POWER_USAGE" => g.power_w = v,
            "vramwatch_gpu_memory_growth_bytes_per_second" => g.growth_bps = v,
            "vramwatch_gpu_memory_seconds_to_full" => g.full_in_s = v,
            "vramwatch_gpu_memory_seconds_to_full_high" => g.full_in_high_s = v,
            _ => {}
        }
    }
    for (series, util) in [(mem, false), (util, true)] {
        for s in series {
            let Ok(i) = label(&s.labels, "gpu").parse::<u32>() else {
                continue;
            };
            if let Some(g) = gpus.get_mut(&i) {
                let points = grid.place(s);
                if util {
                    g.util_history = points;
                } else {
                    g.mem_history = points;
                }
            }
        }
    }
    HostDetail {
        host: host.to_owned(),
        gpus: gpus.into_values().collect(),
        procs: Vec::new(),
        history_s: 0,
    }
}

/// vramwatch's firing alerts and Prometheus's firing alerts about the
/// fleet's hosts (the host read from the same labels as for series).
pub fn assemble_alerts(own: &[Sample], prom: &[PromAlert], q: &Queries) -> Vec<AlertRow> {
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let mut rows: Vec<AlertRow> = own
        .iter()
        .map(|s| AlertRow {
            source: AlertSource::Vramwatch,
            host: label(&s.labels, HOST).to_owned(),
            name: label(&s.labels, "alert").to_owned(),
            severity: label(&s.labels, "severity").to_owned(),
            gpu: opt(label(&s.labels, "gpu")),
            pid: opt(label(&s.labels, "pid")),
            since: None,
            summary: String::new(),
        })
        .collect();
    for a in prom.iter().filter(|a| a.state == "firing") {
        let host = q
            .host_labels()
            .iter()
            .find_map(|l| a.labels.get(l).filter(|v| !v.is_empty()))
            .cloned()
            .unwrap_or_default();
        let note = a
            .annotations
            .get("summary")
            .or_else(|| a.annotations.get("description"))
            .map_or(String::new(), |s| crate::sanitize::clean_capped(s, 200));
        rows.push(AlertRow {
            source: AlertSource::Prometheus,
            host,
            name: label(&a.labels, "alertname").to_owned(),
            severity: label(&a.labels, "severity").to_owned(),
            gpu: opt(label(&a.labels, "gpu")),
            pid: opt(label(&a.labels, "pid")),
            since: a.active_at.clone(),
            summary: note,
        });
    }
    let rank = |s: &str| match s {
        "critical" | "page" => 0,
        "warn" | "warning" => 1,
        _ => 2,
    };
    rows.sort_by(|a, b| {
        (
            rank(&a.severity),
            &a.host,
            &a.name,
            &a.gpu,
            &a.pid,
            a.source,
        )
            .cmp(&(
                rank(&b.severity),
                &b.host,
                &b.name,
                &b.gpu,
                &b.pid,
                b.source,
            ))
    });
    rows
}

/// Keeps vramwatch's alerts and those of Prometheus's about a host of the
/// fleet (named by a host label, or by one of its targets' `instance`).
pub fn keep_fleet_alerts(rows: &mut Vec<AlertRow>, hosts: &[Host]) {
    let by_instance: BTreeMap<&str, &str> = hosts
        .iter()
        .flat_map(|h| h.instances.iter().map(|i| (i.as_str(), h.name.as_str())))
        .collect();
    let names: BTreeSet<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
    rows.retain_mut(|r| {
        if r.source == AlertSource::Vramwatch || names.contains(r.host.as_str()) {
            return true;
        }
        match by_instance.get(r.host.as_str()) {
            Some(h) => {
                r.host = (*h).to_owned();
                true
            }
            None => false,
        }
    });
}

#[cfg(test)]
mod tests;
