//! `vramwatch fleet` against the real thing: a real Prometheus (Debian's
//! package) scraping three `vramwatch serve --demo SCENARIO` instances
//! (told apart by a `host` label Prometheus adds) and one target serving
//! dcgm-exporter's text only. The fleet's figures must agree with what the
//! targets' `/metrics` say; sorting and the drill-down run through the pure
//! app and a TestBackend; a killed target turns down. Then the screens as
//! insta snapshots from fixed data, and the real binary in tmux against a
//! Prometheus that never answers.

mod binary;
mod screens;

use crate::common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use vramwatch::app::Clock;
use vramwatch::commands::fleet::{FleetArgs, Options, fetcher, summary_json};
use vramwatch::config::Config;
use vramwatch::fleet::app::{Event, FleetApp, FleetSettings};
use vramwatch::fleet::fetch::{Fetched, Fetcher, View, Want};
use vramwatch::fleet::model::{Health, Host};
use vramwatch::fleet::table::HostCol;
use vramwatch::theme::{Depth, Theme};

const MIB: u64 = 1 << 20;

/// A child process killed when the test ends, however it ends.
use crate::prometheus::{Killed, free_port, get};

/// `vramwatch serve --demo SCENARIO` on a free port. One snapshot a minute:
/// `/metrics` and every scrape during the test show the same figures.
fn start_vramwatch(scenario: &str) -> (Killed, SocketAddr) {
    crate::prometheus::serve(&["--demo", scenario, "--interval", "60s"])
}

/// What a node with dcgm-exporter alone serves: its names and labels
/// (`Hostname`), two GPUs, no `FB_RESERVED` (older releases), no processes.
const DCGM_TEXT: &str = "\
# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).
# TYPE DCGM_FI_DEV_FB_FREE gauge
DCGM_FI_DEV_FB_FREE{gpu=\"0\",UUID=\"GPU-a\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"dcgm-node\"} 61440
DCGM_FI_DEV_FB_FREE{gpu=\"1\",UUID=\"GPU-b\",device=\"nvidia1\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"dcgm-node\"} 20480
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-a\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"dcgm-node\"} 20480
DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-b\",device=\"nvidia1\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"dcgm-node\"} 61440
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"dcgm-node\"} 35
DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-b\",device=\"nvidia1\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"dcgm-node\"} 97
# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-a\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"dcgm-node\"} 51
DCGM_FI_DEV_GPU_TEMP{gpu=\"1\",UUID=\"GPU-b\",device=\"nvidia1\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"dcgm-node\"} 66
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"dcgm-node\"} 120.5
DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-b\",device=\"nvidia1\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"dcgm-node\"} 390.25
";

/// A tiny static HTTP responder: `DCGM_TEXT` for every request, on a
/// thread that lives as long as the test binary.
fn start_dcgm() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
            let mut head = Vec::new();
            let mut b = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match c.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&b[..n]),
                }
            }
            let _ = write!(
                c,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{DCGM_TEXT}",
                DCGM_TEXT.len()
            );
        }
    });
    addr
}

/// Prometheus scraping `targets` every second, each with its own labels.
fn start_prometheus(dir: &Path, targets: &[(SocketAddr, &str)]) -> (Killed, SocketAddr) {
    let mut cfg = String::from(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: gpu\n    static_configs:\n",
    );
    for (t, labels) in targets {
        cfg.push_str(&format!(
            "      - targets: ['{t}']\n        labels: {{{labels}}}\n"
        ));
    }
    let config = dir.join("prometheus.yml");
    std::fs::write(&config, cfg).unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("prometheus starts");
    (Killed(child), addr)
}

fn args(url: &str, selector: &str) -> FleetArgs {
    FleetArgs {
        prometheus: Some(url.into()),
        selector: Some(selector.into()),
        host_labels: vec![
            "host".into(),
            "Hostname".into(),
            "hostname".into(),
            "instance".into(),
        ],
        top: 50,
        timeout: Duration::from_secs(5),
        once: false,
        json: false,
        interval: Some(Duration::from_secs(1)),
        config: None,
        ascii: false,
        color: None,
    }
}

fn fleet_fetcher(prom: SocketAddr) -> Fetcher {
    let o = Options::resolve(&args(&format!("http://{prom}"), "{job=\"gpu\"}"), |_| None)
        .expect("options");
    fetcher(&o).expect("client")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Per GPU index of a target's `/metrics`: `(used, reserved, free)` MiB.
fn fb_of(text: &str) -> BTreeMap<u32, [u64; 3]> {
    let mut out: BTreeMap<u32, [u64; 3]> = BTreeMap::new();
    for line in text.lines() {
        let i = match line.split('{').next() {
            Some("DCGM_FI_DEV_FB_USED") => 0,
            Some("DCGM_FI_DEV_FB_RESERVED") => 1,
            Some("DCGM_FI_DEV_FB_FREE") => 2,
            _ => continue,
        };
        let gpu: u32 = line
            .split("gpu=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .and_then(|s| s.parse().ok())
            .unwrap();
        let v: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        out.entry(gpu).or_default()[i] = v;
    }
    out
}

/// `vramwatch_process_memory_bytes` values of a target's `/metrics`.
fn proc_bytes(text: &str) -> Vec<u64> {
    text.lines()
        .filter(|l| l.starts_with("vramwatch_process_memory_bytes{"))
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect()
}

/// The labels of an exposition line (`name{a="1",b="x\\"y"} v`), unescaped.
fn labels_of(line: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some((_, mut rest)) = line.split_once('{') else {
        return out;
    };
    while let Some((name, after)) = rest.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, e)) => value.push(e),
                    None => {}
                },
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        out.insert(name.trim_start_matches(',').to_owned(), value);
        rest = &after[end..];
        if rest.starts_with('}') {
            break;
        }
    }
    out
}

/// Who each process of a target's `/metrics` is, from
/// `vramwatch_process_info`: `(pid, start_time)` → `(user, command,
/// container_id)`.
fn proc_infos(text: &str) -> BTreeMap<(u32, String), (String, String, String)> {
    text.lines()
        .filter(|l| l.starts_with("vramwatch_process_info{"))
        .map(|l| {
            let mut m = labels_of(l);
            let mut take = |k: &str| m.remove(k).unwrap_or_else(|| panic!("no {k} in {l}"));
            let key = (take("pid").parse().unwrap(), take("start_time"));
            (key, (take("user"), take("command"), take("container_id")))
        })
        .collect()
}

fn settings(w: Duration) -> FleetSettings {
    let config = Config::default();
    FleetSettings {
        theme: Theme::new(config.display.theme, Depth::None),
        clock: Clock::Utc,
        prometheus: "http://prometheus:9090".into(),
        selector: "job=\"gpu\"".into(),
        interval: w,
        top: 50,
        config,
    }
}

fn key(app: &mut FleetApp, c: KeyCode) {
    let m = if matches!(c, KeyCode::Char(ch) if ch.is_ascii_uppercase()) {
        KeyModifiers::SHIFT
    } else {
        KeyModifiers::NONE
    };
    app.update(Event::Key(KeyEvent::new(c, m)));
}

fn screen(app: &FleetApp) -> String {
    let (w, h) = app.size();
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| vramwatch::fleet::ui::draw(f, app)).unwrap();
    let buf = t.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..h {
        let line: String = (0..w).map(|x| buf[(x, y)].symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Feeds a fetch result to the app as the loop would.
fn feed(app: &mut FleetApp, want: Want, at_ms: u64, f: Fetched) {
    app.update(Event::Tick(at_ms));
    app.update(Event::Fetched {
        want,
        at_ms,
        result: Ok(Box::new(f)),
    });
}

/// Three `vramwatch serve --demo` targets (`host` node-a, -b, -c), one
/// dcgm-exporter-only target (`Hostname` dcgm-node) and Prometheus
/// scraping them every second.
struct Rig {
    _a: Killed,
    b: Killed,
    _c: Killed,
    /// dcgm-node, node-a, node-b, node-c: the hosts in name order.
    addrs: [SocketAddr; 4],
    _prom: Killed,
    prom: SocketAddr,
    dir: tempfile::TempDir,
    rt: tokio::runtime::Runtime,
    f: Fetcher,
}

impl Rig {
    fn start() -> Rig {
        let (_a, a) = start_vramwatch("leak");
        let (b, b_addr) = start_vramwatch("training");
        let (_c, c) = start_vramwatch("demo");
        let d = start_dcgm();
        let dir = tempfile::tempdir().unwrap();
        let (_prom, prom) = start_prometheus(
            dir.path(),
            &[
                (a, "host: node-a"),
                (b_addr, "host: node-b"),
                (c, "host: node-c"),
                (d, ""),
            ],
        );
        Rig {
            _a,
            b,
            _c,
            addrs: [d, a, b_addr, c],
            _prom,
            prom,
            dir,
            rt: runtime(),
            f: fleet_fetcher(prom),
        }
    }

    fn fetch(&self, w: &Want) -> Result<Fetched, vramwatch::fleet::client::PromError> {
        self.rt.block_on(self.f.fetch(w))
    }

    fn metrics(&self, i: usize) -> String {
        let (status, text) = get(self.addrs[i], "/metrics").unwrap();
        assert_eq!(status, 200);
        text
    }

    /// The four hosts once each has been scraped and is up.
    fn wait_for_fleet(&self) -> Vec<Host> {
        let log = || std::fs::read_to_string(self.dir.path().join("prometheus.log"));
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            assert!(Instant::now() < deadline, "no fleet in time: {:?}", log());
            std::thread::sleep(Duration::from_millis(300));
            let Ok(r) = self.fetch(&Want::Hosts) else {
                continue;
            };
            let ready = r.hosts.len() == 4
                && r.hosts
                    .iter()
                    .all(|h| h.scrape.health == Health::Up && h.used_bytes.is_some());
            if ready {
                return r.hosts;
            }
        }
    }
}

#[test]
fn the_fleet_reads_a_real_prometheus() {
    if !common::tool_available("prometheus") {
        return;
    }
    let mut rig = Rig::start();
    let hosts = rig.wait_for_fleet();
    let names: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["dcgm-node", "node-a", "node-b", "node-c"]);
    hosts_agree_with_their_targets(&rig, &hosts);
    top_processes_are_the_biggest(&rig);
    drill_down_shows_a_host(&rig, &hosts);
    the_app_sorts_and_opens_hosts(&rig);
    once_json_summarises(&rig, &hosts);
    let r = rig.fetch(&Want::Events).expect("events");
    assert!(matches!(r.view, View::Events(_)));
    a_killed_target_turns_down(&mut rig);
}

/// Device figures agree with each target's /metrics.
fn hosts_agree_with_their_targets(rig: &Rig, hosts: &[Host]) {
    for (i, h) in hosts.iter().enumerate() {
        let fb = fb_of(&rig.metrics(i));
        let in_use: u64 = fb.values().map(|v| v[0] + v[1]).sum();
        let total: u64 = fb.values().map(|v| v[0] + v[1] + v[2]).sum();
        assert_eq!(h.gpus as usize, fb.len(), "{}", h.name);
        assert_eq!(h.used_bytes, Some(in_use * MIB), "{}", h.name);
        assert_eq!(h.total_bytes, Some(total * MIB), "{}", h.name);
        let fullest = fb
            .values()
            .map(|v| (v[0] + v[1]) as f64 * 100.0 / (v[0] + v[1] + v[2]) as f64)
            .fold(0.0, f64::max);
        let got = h.fullest_pct.unwrap();
        assert!((got - fullest).abs() < 1e-6, "{}: {got}", h.name);
        assert_eq!(h.process_data, h.name != "dcgm-node", "{}", h.name);
        assert_eq!(h.instances, [rig.addrs[i].to_string()]);
    }
    assert_eq!(hosts[0].max_util_pct, Some(97.0));
}

/// The fleet's top processes are the biggest of the three vramwatch targets.
fn top_processes_are_the_biggest(rig: &Rig) {
    let r = rig.fetch(&Want::Procs).expect("processes");
    let View::Procs(procs) = &r.view else {
        panic!("{:?}", r.view)
    };
    let mut all: Vec<u64> = (1..4).flat_map(|i| proc_bytes(&rig.metrics(i))).collect();
    all.sort_unstable_by(|x, y| y.cmp(x));
    all.truncate(50);
    let got: Vec<u64> = procs.iter().map(|p| p.mem_bytes).collect();
    assert_eq!(got, all);
    assert!(procs.iter().all(|p| p.host.starts_with("node-")));
    assert!(procs.iter().all(|p| p.pid > 0 && !p.user.is_empty()));
    // Who each is: the `vramwatch_process_info` of its target and PID (the
    // demo's PIDs are unique per node, so the start need not be matched).
    let infos: BTreeMap<String, _> = (1..4)
        .map(|i| (rig.addrs[i].to_string(), proc_infos(&rig.metrics(i))))
        .collect();
    for p in procs {
        let of_pid: Vec<_> = infos[&p.instance]
            .iter()
            .filter(|((pid, _), _)| *pid == p.pid)
            .map(|(_, who)| who)
            .collect();
        let who = (p.user.clone(), p.command.clone(), p.container.clone());
        assert_eq!(of_pid, [&who], "{}: pid {}", p.host, p.pid);
    }
    assert!(procs.iter().any(|p| !p.command.is_empty()));
    // The hosts' 11 queries, the top 50, and who they are with their
    // growth and leak flags (one query).
    assert_eq!(r.queries, 13);
    assert!(r.bytes > 0);
}

/// node-c's four GPUs, its processes and ten minutes of history.
fn drill_down_shows_a_host(rig: &Rig, hosts: &[Host]) {
    let want = Want::Host {
        name: "node-c".into(),
        instances: hosts[3].instances.clone(),
    };
    let r = rig.fetch(&want).expect("node-c");
    let View::Host(detail) = &r.view else {
        panic!("{:?}", r.view)
    };
    let text = rig.metrics(3);
    let fb = fb_of(&text);
    assert_eq!(detail.gpus.len(), 4);
    for g in &detail.gpus {
        let v = fb[&g.gpu];
        assert_eq!(g.used_bytes, Some(v[0] * MIB), "GPU {}", g.gpu);
        assert_eq!(g.free_bytes, Some(v[2] * MIB), "GPU {}", g.gpu);
        assert_eq!(g.model, "NVIDIA H200");
        assert!(g.mem_history.iter().any(Option::is_some), "GPU {}", g.gpu);
    }
    assert_eq!(detail.procs.len(), proc_bytes(&text).len().min(50));
}

/// The pure app over real results: sort by host, open dcgm-node.
fn the_app_sorts_and_opens_hosts(rig: &Rig) {
    let mut app = FleetApp::new(settings(Duration::from_secs(1)));
    app.update(Event::Resize(140, 40));
    feed(
        &mut app,
        Want::Hosts,
        1_000_000,
        rig.fetch(&Want::Hosts).unwrap(),
    );
    let text = screen(&app);
    for n in ["node-a", "node-b", "node-c", "dcgm-node"] {
        assert!(text.contains(n), "{text}");
    }
    let dcgm_line = text.lines().find(|l| l.contains("dcgm-node")).unwrap();
    assert!(dcgm_line.contains("no process data"), "{dcgm_line}");
    while app.host_sort().column != HostCol::Host {
        key(&mut app, KeyCode::Char('s'));
    }
    let order = |app: &FleetApp| -> Vec<String> {
        app.host_rows().iter().map(|h| h.name.clone()).collect()
    };
    assert_eq!(order(&app), ["dcgm-node", "node-a", "node-b", "node-c"]);
    key(&mut app, KeyCode::Char('I'));
    assert_eq!(order(&app), ["node-c", "node-b", "node-a", "dcgm-node"]);
    key(&mut app, KeyCode::Char('G'));
    key(&mut app, KeyCode::Enter);
    let want = app.want();
    assert!(matches!(&want, Want::Host { name, .. } if name == "dcgm-node"));
    let r = rig.fetch(&want).unwrap();
    feed(&mut app, want, 1_001_000, r);
    let text = screen(&app);
    assert!(text.contains("A100-S"), "{text}");
    assert!(text.contains("no process data"), "{text}");
}

/// `--once --json`: the same hosts, for scripts.
fn once_json_summarises(rig: &Rig, hosts: &[Host]) {
    let r = rig.fetch(&Want::Hosts).unwrap();
    let doc = summary_json(&format!("http://{}", rig.prom), "job=\"gpu\"", &r);
    assert_eq!(doc["summary"]["hosts"], 4);
    assert_eq!(doc["summary"]["hosts_without_process_data"], 1);
    assert_eq!(doc["hosts"][0]["name"], "dcgm-node");
    assert_eq!(doc["hosts"][0]["process_data"], false);
    assert_eq!(doc["hosts"][1]["scrape"]["health"], "up");
    let gpus: u64 = hosts.iter().map(|h| u64::from(h.gpus)).sum();
    assert_eq!(doc["summary"]["gpus"], gpus);
}

/// Kill node-b: within two scrape intervals (1 s) its line is down.
fn a_killed_target_turns_down(rig: &mut Rig) {
    rig.b.0.kill().unwrap();
    let _ = rig.b.0.wait();
    let t0 = Instant::now();
    let took = loop {
        let r = rig.fetch(&Want::Hosts).unwrap();
        let nb = r.hosts.iter().find(|h| h.name == "node-b");
        let nb = nb.expect("node-b stays listed");
        if matches!(nb.scrape.health, Health::Down | Health::Stale) {
            break t0.elapsed();
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "node-b still up");
        std::thread::sleep(Duration::from_millis(100));
    };
    eprintln!("node-b turned down {took:?} after it was killed");
    // Two scrape intervals, and a second for the query and the poll on a
    // busy machine.
    assert!(took <= Duration::from_secs(3), "down only after {took:?}");
    let r = rig.fetch(&Want::Hosts).unwrap();
    let others = r.hosts.iter().filter(|h| h.name != "node-b");
    assert!(others.into_iter().all(|h| h.scrape.health == Health::Up));
}

#[test]
fn an_unreachable_prometheus_is_a_clear_error() {
    let port = free_port();
    let o = Options::resolve(&args(&format!("http://127.0.0.1:{port}"), ""), |_| None).unwrap();
    let f = fetcher(&o).unwrap();
    let e = runtime()
        .block_on(f.fetch(&Want::Hosts))
        .unwrap_err()
        .to_string();
    assert!(e.contains(&format!("127.0.0.1:{port}")), "{e}");
    // Refused; or reset, where a server another test started meanwhile
    // took the free port and closed the connection (seen once, 2026-12-05).
    let e = e.to_lowercase();
    assert!(e.contains("refused") || e.contains("reset"), "{e}");
}

#[test]
fn a_silent_prometheus_times_out() {
    // Accepts connections, never answers.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let mut a = args(&format!("http://{addr}"), "");
    a.timeout = Duration::from_millis(300);
    let f = fetcher(&Options::resolve(&a, |_| None).unwrap()).unwrap();
    let t0 = Instant::now();
    let e = runtime()
        .block_on(f.fetch(&Want::Hosts))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no answer within 0.3s"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(3));
    drop(l);
}
