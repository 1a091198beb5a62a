//! The fleet's screens from fixed data: insta snapshots of the text (at
//! 80×24 and 140×40) and the status line when Prometheus fails.

use std::time::Duration;

use crossterm::event::KeyCode;

use vramwatch::fleet::app::{Event, FleetApp};
use vramwatch::fleet::fetch::{Fetched, View, Want};
use vramwatch::fleet::model::{
    AlertRow, AlertSource, GpuRow, Health, Host, HostDetail, ProcRow, Scrape,
};

use super::{MIB, feed, key, screen, settings};

/// An insta snapshot in tests/it/snapshots, with the other screens'.
fn snap(name: impl Into<String>, text: String) {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("../snapshots");
    s.bind(|| insta::assert_snapshot!(name.into(), text));
}

fn fixed_hosts() -> Vec<Host> {
    let h = |name: &str, gpus: u32, used_g: u64, total_g: u64, fullest: f64| Host {
        name: name.into(),
        instances: vec![format!("{name}:9400")],
        gpus,
        used_bytes: Some(used_g << 30),
        total_bytes: Some(total_g << 30),
        fullest_pct: Some(fullest),
        max_util_pct: Some(88.0),
        process_data: true,
        scrape: Scrape {
            health: Health::Up,
            age_s: Some(1.0),
        },
        ..Default::default()
    };
    let mut a = h("gpu-a01", 8, 900, 1120, 97.4);
    a.growth_bps = Some(48.0 * MIB as f64);
    // Its GPU 2 at risk (the detail's): the least central estimate over
    // its GPUs is "now", which the hosts table says as "at risk".
    a.full_in_s = Some(0.0);
    a.alerts = 2;
    a.leaks = 1;
    let b = h("gpu-a02", 8, 400, 1120, 61.0);
    let mut c = h("gpu-b01", 4, 0, 560, 0.0);
    c.used_bytes = None;
    c.total_bytes = None;
    c.fullest_pct = None;
    c.max_util_pct = None;
    c.scrape = Scrape {
        health: Health::Down,
        age_s: Some(42.0),
    };
    let mut d = h("dcgm-07", 2, 80, 160, 75.0);
    d.process_data = false;
    vec![a, b, c, d]
}

fn fixed_procs() -> Vec<ProcRow> {
    let p = |host: &str, gpu: u32, pid: u32, user: &str, g: u64, cmd: &str| ProcRow {
        host: host.into(),
        instance: format!("{host}:9400"),
        gpu,
        pid,
        user: user.into(),
        command: cmd.into(),
        container: String::new(),
        mem_bytes: g << 30,
        growth_bps: Some(0.0),
        leak: false,
    };
    let mut leak = p("gpu-a01", 3, 4242, "bob", 70, "python serve.py --port 8000");
    leak.growth_bps = Some(48.0 * MIB as f64);
    leak.leak = true;
    vec![
        p(
            "gpu-a01",
            0,
            1001,
            "ann",
            120,
            "torchrun --nproc 8 train.py",
        ),
        p("gpu-a02", 1, 2002, "cy", 96, "python finetune.py"),
        leak,
    ]
}

fn fixed(view: View) -> Fetched {
    Fetched {
        hosts: fixed_hosts(),
        view,
        warnings: Vec::new(),
        queries: 13,
        bytes: 41_000,
        took: Duration::from_millis(37),
    }
}

fn fixed_detail() -> HostDetail {
    let gpu = |i: u32, used_g: u64| GpuRow {
        gpu: i,
        model: "NVIDIA H200".into(),
        used_bytes: Some(used_g << 30),
        reserved_bytes: Some(MIB * 600),
        free_bytes: Some((140 - used_g) << 30),
        util_pct: Some(90.0),
        temp_c: Some(61.0),
        power_w: Some(540.0),
        growth_bps: (i == 3).then_some(48.0 * MIB as f64),
        // GPU 3 growing, full in ~3m10s; GPU 2 at risk: "≤44s".
        full_in_s: match i {
            3 => Some(190.0),
            2 => Some(0.0),
            _ => None,
        },
        full_in_high_s: match i {
            3 => Some(250.0),
            2 => Some(44.0),
            _ => None,
        },
        mem_history: (0..61).map(|k| Some((k as f64).min(90.0))).collect(),
        util_history: (0..61).map(|k| Some((k % 10) as f64 * 10.0)).collect(),
    };
    HostDetail {
        host: "gpu-a01".into(),
        gpus: (0..4).map(|i| gpu(i, 100 + 10 * i as u64)).collect(),
        procs: fixed_procs()
            .into_iter()
            .filter(|p| p.host == "gpu-a01")
            .collect(),
        history_s: 600,
    }
}

fn fixed_app(size: (u16, u16)) -> FleetApp {
    let mut app = FleetApp::new(settings(Duration::from_secs(5)));
    app.update(Event::Resize(size.0, size.1));
    feed(&mut app, Want::Hosts, 1_767_225_600_000, fixed(View::Hosts));
    app
}

#[test]
fn screens_at_two_sizes() {
    for size in [(80, 24), (140, 40)] {
        let tag = format!("{}x{}", size.0, size.1);
        let mut app = fixed_app(size);
        snap(format!("hosts_{tag}"), screen(&app));
        key(&mut app, KeyCode::Tab);
        feed(
            &mut app,
            Want::Procs,
            1_767_225_601_000,
            fixed(View::Procs(fixed_procs())),
        );
        snap(format!("procs_{tag}"), screen(&app));
        key(&mut app, KeyCode::Char('e'));
        let alerts = vec![
            AlertRow {
                source: AlertSource::Prometheus,
                host: "gpu-a01".into(),
                name: "GPUMemoryAlmostFull".into(),
                severity: "critical".into(),
                gpu: Some("3".into()),
                pid: None,
                since: Some("2026-01-01T00:00:00Z".into()),
                summary: "GPU 3 on gpu-a01 is 97% full".into(),
            },
            AlertRow {
                source: AlertSource::Vramwatch,
                host: "gpu-a01".into(),
                name: "leak".into(),
                severity: "warn".into(),
                gpu: Some("3".into()),
                pid: Some("4242".into()),
                since: None,
                summary: String::new(),
            },
        ];
        feed(
            &mut app,
            Want::Events,
            1_767_225_602_000,
            fixed(View::Events(alerts)),
        );
        snap(format!("events_{tag}"), screen(&app));
        // Back to the hosts, fullest first: Enter opens gpu-a01.
        key(&mut app, KeyCode::Tab);
        key(&mut app, KeyCode::Enter);
        assert_eq!(app.open_host(), Some("gpu-a01"));
        let want = app.want();
        feed(
            &mut app,
            want,
            1_767_225_603_000,
            fixed(View::Host(fixed_detail())),
        );
        snap(format!("detail_{tag}"), screen(&app));
    }
}

#[test]
fn the_status_line_says_when_prometheus_fails() {
    let mut app = fixed_app((100, 20));
    app.update(Event::Tick(1_767_225_605_000));
    app.update(Event::Fetched {
        want: Want::Hosts,
        at_ms: 1_767_225_607_000,
        result: Err("http://prometheus:9090/api/v1/query: no answer within 5.0s".into()),
    });
    let text = screen(&app);
    let status = text.lines().nth(1).unwrap();
    assert!(status.contains("no answer within 5.0s"), "{status}");
    assert!(status.contains("last good data 7s ago"), "{status}");
    assert!(status.contains("retry in 1s"), "{status}");
    // The data shown is still the last good one.
    assert!(text.contains("gpu-a01"), "{text}");
    snap("error_100x20", text);
}

#[test]
fn ascii_draws_the_fleet_with_ascii_only() {
    let mut s = settings(Duration::from_secs(5));
    s.config.display.ascii = true;
    let mut app = FleetApp::new(s);
    app.update(Event::Resize(140, 40));
    feed(&mut app, Want::Hosts, 1_767_225_600_000, fixed(View::Hosts));
    let t = screen(&app);
    assert!(t.is_ascii(), "{t}");
    assert!(t.contains("gpu-a01"), "{t}");
    assert!(!screen(&fixed_app((140, 40))).is_ascii());
}
