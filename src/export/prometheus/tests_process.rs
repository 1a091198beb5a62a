//! Process series: `vramwatch_process_info` and the slim figures joined to
//! it, the cap on processes, and the host label's name.

use super::tests::{demo, render_with, samples};
use super::*;
use crate::source::sim::SimWorld;

const T0: u64 = 1_764_000_000_000;

/// The label names of a series, in order.
fn names(series: &str) -> Vec<&str> {
    let inner = series
        .split_once('{')
        .map_or("", |(_, r)| r.trim_end_matches('}'));
    inner
        .split("\",")
        .filter(|p| !p.is_empty())
        .map(|p| p.split('=').next().unwrap_or(""))
        .collect()
}

#[test]
fn one_info_series_per_process_and_slim_figures_that_join_it() {
    let (sys, snap) = demo();
    let text = render_with(&sys, &snap, None, &Render::default());
    let info = samples(&text, "vramwatch_process_info");
    let procs: std::collections::BTreeSet<_> = snap.procs.iter().map(|p| p.key()).collect();
    assert_eq!(info.len(), procs.len());
    for (s, v) in &info {
        assert_eq!(*v, "1");
        // The demo's vLLM server runs in a Kubernetes pod (its names as the
        // kubelet's links give them, no pod UID); the rest are bare.
        let mut want = vec![
            "Hostname",
            "pid",
            "start_time",
            "user",
            "command",
            "container_id",
        ];
        if s.contains("pod=") {
            want.extend(["container", "pod", "namespace"]);
        }
        assert_eq!(names(s), want);
    }
    for fam in [
        "vramwatch_process_memory_bytes",
        "vramwatch_process_memory_peak_bytes",
        "vramwatch_torch_allocated_bytes",
    ] {
        let all = samples(&text, fam);
        assert!(!all.is_empty(), "{fam}");
        for (s, _) in all {
            assert_eq!(names(s), ["gpu", "Hostname", "pid", "start_time"], "{s}");
            // Every figure has its info series.
            let key = s.split_once("pid=").unwrap().1.trim_end_matches('}');
            assert!(info.iter().any(|(i, _)| i.contains(key)), "{s}");
        }
    }
    assert_eq!(
        samples(&text, "vramwatch_process_series_dropped"),
        [(
            "vramwatch_process_series_dropped{Hostname=\"sim-node\"}",
            "0"
        )]
    );
}

#[test]
fn the_cap_keeps_the_processes_holding_the_most_memory() {
    let w = SimWorld::new("crowded", 3, T0).unwrap();
    let sys = w.info();
    let snap = w.snapshot(0, T0 + 60_000, "me");
    let opts = Render {
        max_process_series: 50,
        ..Render::default()
    };
    let text = render_with(&sys, &snap, None, &opts);
    let mem = samples(&text, "vramwatch_process_memory_bytes");
    assert_eq!(mem.len(), 50);
    let mut all: Vec<u64> = snap.procs.iter().filter_map(|p| p.mem).collect();
    all.sort_unstable_by(|a, b| b.cmp(a));
    let mut kept: Vec<u64> = mem.iter().map(|(_, v)| v.parse().unwrap()).collect();
    kept.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(kept, all[..50]);
    assert!(samples(&text, "vramwatch_process_memory_peak_bytes").len() <= 50);
    assert!(samples(&text, "vramwatch_process_info").len() <= 50);
    let dropped = samples(&text, "vramwatch_process_series_dropped");
    assert_eq!(dropped[0].1, (snap.procs.len() - 50).to_string());
    // 0: no process series at all, still the count.
    let none = Render {
        max_process_series: 0,
        ..Render::default()
    };
    let text = render_with(&sys, &snap, None, &none);
    assert!(samples(&text, "vramwatch_process_memory_bytes").is_empty());
    assert!(!text.contains("# TYPE vramwatch_process_info"));
    assert_eq!(
        samples(&text, "vramwatch_process_series_dropped")[0].1,
        snap.procs.len().to_string()
    );
}

#[test]
fn the_host_label_takes_the_configured_name_everywhere() {
    let (sys, snap) = demo();
    let opts = Render {
        host_label: "hostname".into(),
        ..Render::default()
    };
    let text = render_with(&sys, &snap, None, &opts);
    assert!(!text.contains("Hostname="));
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        assert!(l.contains("hostname=\"sim-node\""), "{l}");
    }
}
