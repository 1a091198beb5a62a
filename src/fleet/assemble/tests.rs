//! Assembling query results into the model, without a server.

use super::*;

fn s(pairs: &[(&str, &str)], value: f64) -> Sample {
    Sample {
        labels: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        value,
    }
}

fn results() -> BTreeMap<HostQuery, Vec<Sample>> {
    let mut by = BTreeMap::new();
    by.insert(
        HostQuery::Instances,
        vec![
            s(&[(HOST, "a"), ("instance", "a:9400")], 2.0),
            s(&[(HOST, "d"), ("instance", "d:9400")], 1.0),
        ],
    );
    by.insert(
        HostQuery::Memory,
        vec![
            s(&[(HOST, "a"), ("__name__", "DCGM_FI_DEV_FB_USED")], 1000.0),
            s(
                &[(HOST, "a"), ("__name__", "DCGM_FI_DEV_FB_RESERVED")],
                24.0,
            ),
            s(&[(HOST, "a"), ("__name__", "DCGM_FI_DEV_FB_FREE")], 1024.0),
            // dcgm-exporter without FB_RESERVED.
            s(&[(HOST, "d"), ("__name__", "DCGM_FI_DEV_FB_USED")], 10.0),
            s(&[(HOST, "d"), ("__name__", "DCGM_FI_DEV_FB_FREE")], 90.0),
        ],
    );
    by.insert(HostQuery::Fullest, vec![s(&[(HOST, "a")], 75.5)]);
    by.insert(HostQuery::Growth, vec![s(&[(HOST, "a")], 2e6)]);
    by.insert(HostQuery::FullIn, vec![s(&[(HOST, "a")], f64::NAN)]);
    by.insert(
        HostQuery::Alerts,
        vec![
            s(&[(HOST, "a"), ("alert", "forecast")], 1.0),
            s(&[(HOST, "a"), ("alert", "leak")], 2.0),
        ],
    );
    by.insert(HostQuery::Vramwatch, vec![s(&[(HOST, "a")], 1.0)]);
    by.insert(
        HostQuery::Up,
        vec![
            s(&[(HOST, "a"), ("instance", "a:9400")], 1.0),
            s(&[(HOST, "d"), ("instance", "d:9400")], 0.0),
            s(&[(HOST, "x:1"), ("instance", "x:1")], 0.0),
            s(&[(HOST, "y:1"), ("instance", "y:1")], 1.0),
        ],
    );
    by.insert(
        HostQuery::ScrapeAge,
        vec![
            s(&[("instance", "a:9400")], 0.5),
            s(&[("instance", "d:9400")], 0.4),
        ],
    );
    by.insert(HostQuery::Scrapes, vec![s(&[("instance", "a:9400")], 60.0)]);
    by
}

fn last_good() -> Vec<Sample> {
    vec![s(&[("instance", "d:9400")], 12.0)]
}

#[test]
fn hosts_are_put_together_from_their_queries() {
    assert_eq!(not_up(&results()), ["d:9400", "x:1"]);
    let hosts = assemble_hosts(&results(), &last_good(), false);
    assert_eq!(hosts.len(), 2, "{hosts:#?}");
    let a = &hosts[0];
    assert_eq!((a.name.as_str(), a.gpus), ("a", 2));
    assert_eq!(a.used_bytes, Some(1024 * MIB));
    assert_eq!(a.total_bytes, Some(2048 * MIB));
    assert_eq!(a.fullest_pct, Some(75.5));
    assert_eq!(a.growth_bps, Some(2e6));
    assert_eq!(a.full_in_s, None, "NaN is no forecast");
    assert_eq!((a.alerts, a.leaks, a.process_data), (3, 2, true));
    assert_eq!(a.scrape.health, Health::Up);
    let d = &hosts[1];
    assert_eq!(d.used_bytes, Some(10 * MIB));
    assert_eq!(d.total_bytes, Some(100 * MIB));
    assert!(!d.process_data);
    assert_eq!(
        (d.scrape.health, d.scrape.age_s),
        (Health::Down, Some(12.0))
    );
    // With a selector, a down target that never showed GPUs is a host too.
    let scoped = assemble_hosts(&results(), &last_good(), true);
    assert_eq!(scoped.len(), 3);
    assert_eq!(scoped[2].name, "x:1");
    assert_eq!(scoped[2].scrape.health, Health::Down);
}

#[test]
fn health_reads_up_its_age_and_the_interval() {
    let up = target_health(Some(1.0), Some(2.0), Some(60.0), None);
    assert_eq!(up.health, Health::Up);
    // 1 s interval: 3 intervals and a second late is stale.
    let late = target_health(Some(1.0), Some(4.5), Some(60.0), None);
    assert_eq!(late.health, Health::Stale);
    // 15 s interval: 4.5 s is on time.
    assert_eq!(
        target_health(Some(1.0), Some(4.5), Some(4.0), None).health,
        Health::Up
    );
    let gone = target_health(None, None, None, Some(30.0));
    assert_eq!((gone.health, gone.age_s), (Health::Stale, Some(30.0)));
    let down = target_health(Some(0.0), Some(0.2), Some(60.0), None);
    assert_eq!((down.health, down.age_s), (Health::Down, None));
}

/// A process series as vramwatch exports it now: `gpu`, `Hostname`,
/// `pid`, `start_time`, and the target's labels.
fn proc_series(name: &str, pid: &str, h: &str, gpu: &str, start: &str, v: f64) -> Sample {
    let inst = format!("{h}:1");
    let mut pairs = vec![
        (HOST, h),
        ("instance", inst.as_str()),
        ("job", "gpu"),
        ("Hostname", h),
        ("gpu", gpu),
        ("pid", pid),
        ("start_time", start),
    ];
    if !name.is_empty() {
        pairs.push(("__name__", name));
    }
    s(&pairs, v)
}

/// `vramwatch_process_info`: who a process is, per target, PID and start.
fn info(pid: &str, h: &str, start: &str, user: &str, cmd: &str, container: &str) -> Sample {
    let inst = format!("{h}:1");
    s(
        &[
            ("__name__", "vramwatch_process_info"),
            ("instance", inst.as_str()),
            ("job", "gpu"),
            ("Hostname", h),
            ("pid", pid),
            ("start_time", start),
            ("user", user),
            ("command", cmd),
            ("container_id", container),
        ],
        1.0,
    )
}

#[test]
fn processes_join_who_they_are_growth_and_leaks_by_labels() {
    let top = vec![
        proc_series("", "1", "a", "0", "100", 100.0),
        proc_series("", "2", "b", "0", "100", 300.0),
        proc_series("", "3", "a", "0", "100", 200.0),
        // PID 1 on a second GPU: one process, one info series.
        proc_series("", "1", "a", "1", "100", 50.0),
    ];
    let growth = "vramwatch_process_memory_growth_bytes_per_second";
    let leak = "vramwatch_process_leak_suspected";
    let figures = vec![
        info("1", "a", "100", "ann", "python train.py", "c0ffee"),
        info("3", "a", "100", "bob", "python eval.py", ""),
        // The same PID on another host is another process.
        info("2", "a", "100", "eve", "sleep", ""),
        info("2", "b", "100", "carl", "python serve.py", ""),
        // An earlier process with PID 3 on the same host is another one.
        info("3", "a", "50", "mallory", "old", ""),
        proc_series(growth, "1", "a", "0", "100", 5e6),
        proc_series(leak, "1", "a", "0", "100", 1.0),
        proc_series(leak, "3", "a", "0", "100", 0.0),
        proc_series(leak, "3", "a", "0", "50", 1.0),
        proc_series(growth, "2", "a", "0", "100", 9e9),
    ];
    let rows = assemble_procs(&top, &figures);
    let pids: Vec<(u32, u32)> = rows.iter().map(|r| (r.pid, r.gpu)).collect();
    assert_eq!(pids, [(2, 0), (3, 0), (1, 0), (1, 1)]);
    let who: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| (r.user.as_str(), r.command.as_str(), r.container.as_str()))
        .collect();
    assert_eq!(
        who,
        [
            ("carl", "python serve.py", ""),
            ("bob", "python eval.py", ""),
            ("ann", "python train.py", "c0ffee"),
            ("ann", "python train.py", "c0ffee"),
        ]
    );
    assert_eq!(rows[2].growth_bps, Some(5e6));
    assert!(rows[2].leak && !rows[1].leak && !rows[3].leak);
    assert_eq!(rows[3].growth_bps, None);
    assert_eq!(rows[0].growth_bps, None);
    assert_eq!(rows[0].host, "b");
}

#[test]
fn processes_of_older_exporters_keep_their_own_labels() {
    // vramwatch before `vramwatch_process_info`: who a process is on every
    // series, no `start_time`.
    let old = |name: &str, v: f64| {
        let mut pairs = vec![
            (HOST, "a"),
            ("instance", "a:1"),
            ("job", "gpu"),
            ("Hostname", "a"),
            ("UUID", "GPU-1"),
            ("gpu", "0"),
            ("pid", "7"),
            ("user", "ann"),
            ("command", "python train.py"),
            ("container", "c0ffee"),
        ];
        if !name.is_empty() {
            pairs.push(("__name__", name));
        }
        s(&pairs, v)
    };
    let figures = vec![
        old("vramwatch_process_memory_growth_bytes_per_second", 1e6),
        old("vramwatch_process_leak_suspected", 1.0),
    ];
    let rows = assemble_procs(&[old("", 100.0)], &figures);
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(
        (r.user.as_str(), r.command.as_str(), r.container.as_str()),
        ("ann", "python train.py", "c0ffee")
    );
    assert_eq!((r.growth_bps, r.leak), (Some(1e6), true));
}

#[test]
fn the_drill_down_places_history_on_its_grid() {
    let now = vec![
        s(
            &[
                (HOST, "a"),
                ("gpu", "0"),
                ("__name__", "DCGM_FI_DEV_FB_USED"),
                ("modelName", "NVIDIA H200"),
            ],
            100.0,
        ),
        s(
            &[
                (HOST, "a"),
                ("gpu", "0"),
                ("__name__", "DCGM_FI_DEV_FB_FREE"),
            ],
            900.0,
        ),
        s(
            &[
                (HOST, "a"),
                ("gpu", "0"),
                ("__name__", "DCGM_FI_DEV_GPU_UTIL"),
            ],
            42.0,
        ),
        s(
            &[
                (HOST, "other"),
                ("gpu", "1"),
                ("__name__", "DCGM_FI_DEV_FB_USED"),
            ],
            1.0,
        ),
    ];
    let mut labels = Labels::new();
    labels.insert("gpu".into(), "0".into());
    let mem = vec![Series {
        labels,
        points: vec![(100.0, 10.0), (120.0, 30.0)],
    }];
    let grid = Grid {
        start: 100.0,
        step: 10.0,
        n: 3,
    };
    let d = assemble_detail("a", &now, &mem, &[], grid);
    assert_eq!(d.gpus.len(), 1);
    let g = &d.gpus[0];
    assert_eq!(g.model, "NVIDIA H200");
    assert_eq!(g.total_bytes(), Some(1000 * MIB));
    assert_eq!(g.in_use_pct(), Some(10.0));
    assert_eq!(g.mem_history, vec![Some(10.0), None, Some(30.0)]);
    assert!(g.util_history.is_empty());
}

#[test]
fn prometheus_alerts_are_kept_for_fleet_hosts_only() {
    let q = Queries::new("", &[], 5).unwrap();
    let own = vec![s(
        &[
            (HOST, "a"),
            ("alert", "leak"),
            ("severity", "warn"),
            ("gpu", "0"),
            ("pid", "7"),
        ],
        1.0,
    )];
    let alert = |labels: &[(&str, &str)], state: &str| PromAlert {
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        annotations: Labels::new(),
        state: state.into(),
        active_at: None,
    };
    let prom = vec![
        alert(
            &[
                ("alertname", "GPUMemoryAlmostFull"),
                ("severity", "critical"),
                ("Hostname", "a"),
            ],
            "firing",
        ),
        alert(&[("alertname", "Pending"), ("Hostname", "a")], "pending"),
        alert(
            &[("alertname", "DiskFull"), ("instance", "db:9100")],
            "firing",
        ),
        alert(
            &[("alertname", "ByTarget"), ("instance", "a:9400")],
            "firing",
        ),
    ];
    let mut rows = assemble_alerts(&own, &prom, &q);
    let hosts = vec![Host {
        name: "a".into(),
        instances: vec!["a:9400".into()],
        ..Default::default()
    }];
    keep_fleet_alerts(&mut rows, &hosts);
    let names: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.name.as_str(), r.host.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("GPUMemoryAlmostFull", "a"),
            ("leak", "a"),
            ("ByTarget", "a")
        ]
    );
}

/// Values no exporter writes (`+Inf` GPUs, a percentage of 1e308) are
/// unknown, not figures: a fuzzing pass saw "GPUS 4294967295" and a
/// 300-digit percentage.
#[test]
fn implausible_values_are_unknown() {
    let mut by = results();
    by.insert(
        HostQuery::Instances,
        vec![s(&[(HOST, "a"), ("instance", "a:9400")], f64::INFINITY)],
    );
    by.insert(HostQuery::Fullest, vec![s(&[(HOST, "a")], 1e308)]);
    by.insert(HostQuery::Util, vec![s(&[(HOST, "a")], -5.0)]);
    by.insert(HostQuery::Growth, vec![s(&[(HOST, "a")], 1e300)]);
    let hosts = assemble_hosts(&by, &last_good(), false);
    let a = &hosts[0];
    assert_eq!(a.name, "a");
    assert_eq!(a.gpus, 0);
    assert_eq!(
        (a.fullest_pct, a.max_util_pct, a.growth_bps),
        (None, None, None)
    );
}
