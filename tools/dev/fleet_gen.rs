//! A synthetic fleet for `vramwatch fleet` at scale: OpenMetrics text of
//! HOSTS hosts × GPUS GPUs × PROCS processes per host over MINUTES minutes
//! (every STEP seconds), the series vramwatch and dcgm-exporter export with
//! the labels Prometheus adds (`job`, `instance`, `host`); the last tenth of
//! the hosts run dcgm-exporter only, two hosts stopped answering five
//! minutes ago. With `--bench` (the default) it then backfills them with
//! `promtool tsdb create-blocks-from openmetrics`, starts Prometheus on the
//! blocks and measures refreshes of each fleet screen: the queries (wall
//! time, response bytes) and one frame drawn.
//!
//! ```sh
//! cargo run --release --example fleet_gen                  # 128 × 8 × 40, 1 h, bench
//! cargo run --release --example fleet_gen -- --no-bench --out /tmp/fleet
//! cargo run --release --example fleet_gen -- --hosts 16 --minutes 10
//! ```
//!
//! The data runs from MINUTES before now to 15 minutes after, so the
//! instant queries (at Prometheus's now) find fresh samples however long
//! the backfill takes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // a dev tool

use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use vramwatch::app::Clock;
use vramwatch::commands::fleet::{FleetArgs, Options, fetcher};
use vramwatch::config::Config;
use vramwatch::fleet::app::{Event, FleetApp, FleetSettings};
use vramwatch::fleet::fetch::Want;
use vramwatch::theme::{Depth, Theme};

const MIB: u64 = 1 << 20;
const TOTAL_MIB: u64 = 143_771;
const RESERVED_MIB: u64 = 616;
const FUTURE_S: u64 = 15 * 60;

struct Opts {
    hosts: usize,
    gpus: usize,
    procs: usize,
    minutes: u64,
    step: u64,
    out: Option<PathBuf>,
    bench: bool,
    rounds: usize,
    /// Use the blocks already in OUT/data (within 15 minutes of writing).
    reuse: bool,
}

fn opts() -> Opts {
    let mut o = Opts {
        hosts: 128,
        gpus: 8,
        procs: 40,
        minutes: 60,
        step: 15,
        out: None,
        bench: true,
        rounds: 5,
        reuse: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut val = || it.next().expect("a value after the flag").clone();
        let n = |v: String| v.parse::<u64>().expect("a number");
        match flag.as_str() {
            "--hosts" => o.hosts = n(val()) as usize,
            "--gpus" => o.gpus = n(val()) as usize,
            "--procs" => o.procs = n(val()) as usize,
            "--minutes" => o.minutes = n(val()),
            "--step" => o.step = n(val()),
            "--rounds" => o.rounds = n(val()) as usize,
            "--out" => o.out = Some(PathBuf::from(val())),
            "--reuse" => o.reuse = true,
            "--no-bench" => o.bench = false,
            other => panic!("unknown argument {other}; see the doc comment"),
        }
    }
    o
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

struct Proc {
    gpu: usize,
    pid: u64,
    user: String,
    command: String,
    base: u64,
    /// Bytes per second.
    growth: u64,
}

struct HostSim {
    name: String,
    dcgm_only: bool,
    /// The last sample time (down hosts stop early).
    end: u64,
    procs: Vec<Proc>,
}

fn fleet(o: &Opts, now: u64) -> Vec<HostSim> {
    let mut rng = Rng(0x5eed_f1ee7);
    let dcgm_from = o.hosts - o.hosts / 10;
    (0..o.hosts)
        .map(|h| {
            let procs = (0..o.procs)
                .map(|p| {
                    let leaky = rng.below(50) == 0;
                    Proc {
                        gpu: p % o.gpus,
                        pid: 10_000 + rng.below(4_000_000),
                        user: format!("user{:02}", rng.below(40)),
                        command: format!("python train.py --config exp{}.yaml", rng.below(500)),
                        base: (1 + rng.below(140_000 / (o.procs / o.gpus).max(1) as u64)) * MIB / 2,
                        growth: if leaky { (1 + rng.below(8)) * MIB } else { 0 },
                    }
                })
                .collect();
            HostSim {
                name: format!("gpu-n{h:03}"),
                dcgm_only: h >= dcgm_from,
                end: if h == 3 || h == 40 {
                    now - 300
                } else {
                    now + FUTURE_S
                },
                procs,
            }
        })
        .collect()
}

/// The OpenMetrics text being written, and what it holds so far.
struct Out {
    w: BufWriter<std::fs::File>,
    series: u64,
    samples: u64,
    line: String,
}

impl Out {
    /// A family's TYPE line; its series follow.
    fn family(&mut self, name: &str) {
        writeln!(self.w, "# TYPE {name} gauge").unwrap();
    }

    /// One series: `name{labels} v t` for every sample time.
    fn series(&mut self, name: &str, labels: &str, times: &[u64], v: impl Fn(u64, usize) -> f64) {
        for (k, &t) in times.iter().enumerate() {
            self.line.clear();
            let _ = writeln!(self.line, "{name}{{{labels}}} {} {t}", v(t, k));
            self.w.write_all(self.line.as_bytes()).unwrap();
        }
        self.series += 1;
        self.samples += times.len() as u64;
    }
}

/// What every family needs: the sample times and the fleet.
struct Gen<'a> {
    o: &'a Opts,
    hosts: &'a [HostSim],
    t0: u64,
    all: Vec<u64>,
}

impl Gen<'_> {
    fn times(&self, h: &HostSim) -> Vec<u64> {
        self.all.iter().copied().filter(|t| *t <= h.end).collect()
    }

    fn vramwatch(&self) -> impl Iterator<Item = &HostSim> {
        self.hosts.iter().filter(|h| !h.dcgm_only)
    }

    /// up: 1 while answering, then 0 (a host that stopped).
    fn up(&self, out: &mut Out) {
        out.family("up");
        for h in self.hosts {
            out.series("up", &target(h), &self.all, |t, _| {
                f64::from(u8::from(t <= h.end))
            });
        }
    }

    /// dcgm-exporter's device families, every host.
    fn dcgm(&self, out: &mut Out) {
        type Dev = (&'static str, fn(&HostSim, usize, u64, u64) -> Option<f64>);
        let fields: [Dev; 6] = [
            ("DCGM_FI_DEV_FB_USED", |h, g, t0, t| {
                Some((gpu_used(h, g, t0, t) / MIB) as f64)
            }),
            ("DCGM_FI_DEV_FB_FREE", |h, g, t0, t| {
                Some((TOTAL_MIB - RESERVED_MIB - gpu_used(h, g, t0, t) / MIB) as f64)
            }),
            ("DCGM_FI_DEV_FB_RESERVED", |h, _, _, _| {
                (!h.dcgm_only).then_some(RESERVED_MIB as f64)
            }),
            ("DCGM_FI_DEV_GPU_UTIL", |_, g, _, t| {
                Some(((t / 15 + g as u64 * 7) % 101) as f64)
            }),
            ("DCGM_FI_DEV_GPU_TEMP", |_, g, _, t| {
                Some(40.0 + ((t / 60 + g as u64) % 35) as f64)
            }),
            ("DCGM_FI_DEV_POWER_USAGE", |_, g, _, t| {
                Some(100.0 + ((t / 15 + g as u64 * 13) % 600) as f64)
            }),
        ];
        for (name, v) in fields {
            out.family(name);
            for h in self.hosts {
                let times = self.times(h);
                for g in (0..self.o.gpus).filter(|g| v(h, *g, self.t0, self.t0).is_some()) {
                    let labels = format!(
                        "gpu=\"{g}\",UUID=\"GPU-{:08x}-{g:04}\",device=\"nvidia{g}\",modelName=\"NVIDIA H200\",Hostname=\"{}\",{}",
                        h.name.len() * 7919 + g,
                        h.name,
                        target(h)
                    );
                    out.series(name, &labels, &times, |t, _| {
                        v(h, g, self.t0, t).unwrap_or(0.0)
                    });
                }
            }
        }
    }

    /// vramwatch's per-GPU analysis: growth, forecast.
    fn gpu_analysis(&self, out: &mut Out) {
        let growth = "vramwatch_gpu_memory_growth_bytes_per_second";
        out.family(growth);
        for h in self.vramwatch() {
            let times = self.times(h);
            for g in 0..self.o.gpus {
                out.series(growth, &own(h, g), &times, |_, _| growth_of(h, g) as f64);
            }
        }
        let full = "vramwatch_gpu_memory_seconds_to_full";
        out.family(full);
        for h in self.vramwatch() {
            let times = self.times(h);
            for g in (0..self.o.gpus).filter(|g| growth_of(h, *g) > 0) {
                out.series(full, &own(h, g), &times, |t, _| {
                    let free = (TOTAL_MIB - RESERVED_MIB) * MIB - gpu_used(h, g, self.t0, t);
                    free as f64 / growth_of(h, g) as f64
                });
            }
        }
    }

    /// vramwatch_alert_active: four rules per GPU (`forecast` firing where
    /// memory grows), and one `leak` series per leaking process.
    fn alerts(&self, out: &mut Out) {
        let name = "vramwatch_alert_active";
        out.family(name);
        let rules = [
            ("at_risk", "warn"),
            ("memory", "critical"),
            ("forecast", "warn"),
            ("gpu_lost", "critical"),
        ];
        for h in self.vramwatch() {
            let times = self.times(h);
            for g in 0..self.o.gpus {
                for (alert, sev) in rules {
                    let firing = alert == "forecast" && growth_of(h, g) > 0;
                    let labels = format!(
                        "alert=\"{alert}\",severity=\"{sev}\",gpu=\"{g}\",pid=\"\",Hostname=\"{}\",{}",
                        h.name,
                        target(h)
                    );
                    out.series(name, &labels, &times, |_, _| f64::from(u8::from(firing)));
                }
            }
            for p in h.procs.iter().filter(|p| p.growth > 0) {
                let labels = format!(
                    "alert=\"leak\",severity=\"warn\",gpu=\"{}\",pid=\"{}\",Hostname=\"{}\",{}",
                    p.gpu,
                    p.pid,
                    h.name,
                    target(h)
                );
                out.series(name, &labels, &times, |_, _| 1.0);
            }
        }
    }

    /// The snapshot counter and the process families.
    fn procs(&self, out: &mut Out) {
        out.family("vramwatch_snapshot_seq");
        for h in self.vramwatch() {
            let labels = format!("Hostname=\"{}\",{}", h.name, target(h));
            out.series("vramwatch_snapshot_seq", &labels, &self.times(h), |_, k| {
                k as f64
            });
        }
        type PV = fn(&Proc, u64, u64) -> f64;
        let families: [(&str, PV); 3] = [
            ("vramwatch_process_memory_bytes", |p, t0, t| {
                (p.base + p.growth * (t - t0)) as f64
            }),
            (
                "vramwatch_process_memory_growth_bytes_per_second",
                |p, _, _| p.growth as f64,
            ),
            ("vramwatch_process_leak_suspected", |p, _, _| {
                f64::from(u8::from(p.growth > 0))
            }),
        ];
        for (name, v) in families {
            out.family(name);
            for h in self.vramwatch() {
                let times = self.times(h);
                for p in &h.procs {
                    let labels = format!(
                        "gpu=\"{}\",UUID=\"GPU-{:04}\",Hostname=\"{}\",pid=\"{}\",user=\"{}\",command=\"{}\",container=\"\",{}",
                        p.gpu,
                        p.gpu,
                        h.name,
                        p.pid,
                        p.user,
                        p.command,
                        target(h)
                    );
                    out.series(name, &labels, &times, |t, _| v(p, self.t0, t));
                }
            }
        }
    }
}

/// The labels Prometheus adds to a target's series.
fn target(h: &HostSim) -> String {
    format!(
        "job=\"gpu\",instance=\"{}:9400\",host=\"{}\"",
        h.name, h.name
    )
}

/// vramwatch's own per-GPU labels.
fn own(h: &HostSim, g: usize) -> String {
    format!(
        "gpu=\"{g}\",UUID=\"GPU-{g:04}\",device=\"nvidia{g}\",Hostname=\"{}\",{}",
        h.name,
        target(h)
    )
}

fn growth_of(h: &HostSim, g: usize) -> u64 {
    h.procs
        .iter()
        .filter(|p| p.gpu == g)
        .map(|p| p.growth)
        .sum()
}

fn gpu_used(h: &HostSim, g: usize, t0: u64, t: u64) -> u64 {
    let procs: u64 = h
        .procs
        .iter()
        .filter(|p| p.gpu == g)
        .map(|p| p.base + p.growth * (t - t0))
        .sum();
    (procs + 600 * MIB).min((TOTAL_MIB - RESERVED_MIB) * MIB)
}

/// Writes the OpenMetrics text; returns (series, samples).
fn write(o: &Opts, hosts: &[HostSim], t0: u64, path: &Path) -> (u64, u64) {
    let file = std::fs::File::create(path).unwrap();
    let mut out = Out {
        w: BufWriter::with_capacity(1 << 20, file),
        series: 0,
        samples: 0,
        line: String::with_capacity(256),
    };
    let end = t0 + o.minutes * 60 + FUTURE_S;
    let all = (0..)
        .map(|k| t0 + k * o.step)
        .take_while(|t| *t <= end)
        .collect();
    let g = Gen { o, hosts, t0, all };
    g.up(&mut out);
    g.dcgm(&mut out);
    g.gpu_analysis(&mut out);
    g.alerts(&mut out);
    g.procs(&mut out);
    writeln!(out.w, "# EOF").unwrap();
    out.w.flush().unwrap();
    (out.series, out.samples)
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn ready(addr: SocketAddr) -> bool {
    let Ok(mut c) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return false;
    };
    let _ = write!(c, "GET /-/ready HTTP/1.0\r\n\r\n");
    let mut s = String::new();
    let _ = std::io::Read::read_to_string(&mut c, &mut s);
    s.starts_with("HTTP/1.0 200") || s.starts_with("HTTP/1.1 200")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// `promtool tsdb create-blocks-from openmetrics`, timed.
fn backfill(om: &Path, data: &Path) {
    let t = Instant::now();
    let st = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(om)
        .arg(data)
        .stdout(Stdio::null())
        .status()
        .expect("promtool runs");
    assert!(st.success(), "promtool failed");
    println!("backfill: promtool took {:.1} s", t.elapsed().as_secs_f64());
}

/// Prometheus on the blocks in `data`, scraping nothing, once it is ready.
fn start_prometheus(dir: &Path, data: &Path) -> (Killed, SocketAddr) {
    let cfg = dir.join("prometheus.yml");
    std::fs::write(&cfg, "global:\n  scrape_interval: 15s\n").unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let prom = Killed(
        Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!("--storage.tsdb.path={}", data.display()))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--storage.tsdb.retention.time=30d")
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("prometheus starts"),
    );
    let t = Instant::now();
    while !ready(addr) {
        assert!(
            t.elapsed() < Duration::from_secs(300),
            "Prometheus not ready"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    println!("prometheus ready after {:.1} s", t.elapsed().as_secs_f64());
    (prom, addr)
}

fn bench(o: &Opts, dir: &Path, om: &Path) {
    let data = dir.join("data");
    if !o.reuse {
        backfill(om, &data);
    }
    let (_prom, addr) = start_prometheus(dir, &data);
    let args = FleetArgs {
        prometheus: Some(format!("http://{addr}")),
        selector: Some("{job=\"gpu\"}".into()),
        host_labels: ["host", "Hostname", "hostname", "instance"]
            .map(String::from)
            .to_vec(),
        top: 50,
        timeout: Duration::from_secs(60),
        once: false,
        json: false,
        // The default interval: the last-good-scrape subquery's step.
        interval: None,
        config: None,
        ascii: false,
        color: None,
    };
    let opts = Options::resolve(&args, |_| None).unwrap();
    let f = fetcher(&opts).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let config = Config::default();
    let mut app = FleetApp::new(FleetSettings {
        theme: Theme::new(config.display.theme, Depth::TrueColor),
        clock: Clock::Utc,
        prometheus: opts.url.clone(),
        selector: opts.queries.matchers().to_owned(),
        interval: opts.interval,
        top: 50,
        config,
    });
    let (w, h) = (200u16, 60u16);
    app.update(Event::Resize(w, h));
    // Warm up: the first query reads the blocks' index from disk.
    let first = rt.block_on(f.fetch(&Want::Hosts)).unwrap();
    println!(
        "hosts seen: {} ({} not up), first refresh {} ms",
        first.hosts.len(),
        first
            .hosts
            .iter()
            .filter(|h| h.scrape.health != vramwatch::fleet::model::Health::Up)
            .count(),
        first.took.as_millis()
    );
    let host = first.hosts.iter().find(|h| h.process_data).unwrap().clone();
    profile(&rt, &f, &host.instances, o.rounds);
    let at = vramwatch::model::now_ms();
    app.update(Event::Tick(at));
    app.update(Event::Fetched {
        want: Want::Hosts,
        at_ms: at,
        result: Ok(Box::new(first)),
    });
    screens(o, &rt, &f, &mut app, &host);
}

/// Each screen as a user reaches it, refreshed `o.rounds` times: the
/// queries, a frame, the bytes.
fn screens(
    o: &Opts,
    rt: &tokio::runtime::Runtime,
    f: &vramwatch::fleet::fetch::Fetcher,
    app: &mut FleetApp,
    host: &vramwatch::fleet::model::Host,
) {
    let (w, h) = app.size();
    let key = |app: &mut FleetApp, c: KeyCode| {
        app.update(Event::Key(KeyEvent::from(c)));
    };
    println!(
        "\n| screen | queries | refresh: queries + frame (median / max of {}) | frame alone | bytes fetched |",
        o.rounds
    );
    println!("| --- | ---: | ---: | ---: | ---: |");
    let screens = ["hosts", "host drill-down", "processes", "events"];
    for label in screens {
        // Go there as a user would.
        match label {
            "host drill-down" => {
                key(app, KeyCode::Char('g'));
                let i = app
                    .host_rows()
                    .iter()
                    .position(|h| h.name == host.name)
                    .unwrap();
                for _ in 0..i {
                    key(app, KeyCode::Down);
                }
                key(app, KeyCode::Enter);
            }
            "processes" => {
                key(app, KeyCode::Esc);
                key(app, KeyCode::Tab);
            }
            "events" => key(app, KeyCode::Char('e')),
            _ => {}
        }
        let want = app.want();
        let (mut total, mut frames, mut bytes, mut queries) = (Vec::new(), Vec::new(), 0, 0);
        for _ in 0..o.rounds {
            let t = Instant::now();
            let fetched = rt.block_on(f.fetch(&want)).unwrap();
            let q = t.elapsed();
            (bytes, queries) = (fetched.bytes, fetched.queries);
            let at = vramwatch::model::now_ms();
            app.update(Event::Tick(at));
            app.update(Event::Fetched {
                want: want.clone(),
                at_ms: at,
                result: Ok(Box::new(fetched)),
            });
            let tf = Instant::now();
            let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
            vramwatch::fleet::ui::render(app, buf.area, &mut buf);
            let frame = tf.elapsed().as_secs_f64() * 1000.0;
            frames.push(frame);
            total.push(q.as_secs_f64() * 1000.0 + frame);
        }
        let max = total.iter().copied().fold(0.0, f64::max);
        println!(
            "| {label} | {queries} | {:.0} ms / {:.0} ms | {:.1} ms | {:.0} KB |",
            median(total),
            max,
            median(frames),
            bytes as f64 / 1000.0
        );
    }
}

/// Each query alone, one after another: the median of `rounds`.
fn profile(
    rt: &tokio::runtime::Runtime,
    f: &vramwatch::fleet::fetch::Fetcher,
    instances: &[String],
    rounds: usize,
) {
    use vramwatch::fleet::queries::{HostQuery, instance_matcher};
    let q = &f.queries;
    let one = instance_matcher(instances);
    let mut all: Vec<(String, String)> = HostQuery::ALL
        .iter()
        .map(|h| (format!("{h:?}"), q.host_query(*h)))
        .collect();
    all.push(("top processes".into(), q.top_procs(50, "")));
    let pids: Vec<u32> = (0..50).map(|i| 10_000 + i * 7).collect();
    all.push(("their growth and leaks".into(), q.proc_figures(&pids, "")));
    all.push(("last good (one target)".into(), q.last_good(&one)));
    all.push(("host: GPUs now".into(), q.host_gpus(&one)));
    all.push(("events".into(), q.alerts_firing()));
    println!("\n| query (alone) | median | series | bytes |");
    println!("| --- | ---: | ---: | ---: |");
    for (name, text) in all {
        let mut times = Vec::new();
        let mut n = 0;
        let b0 = f.client.fetched_bytes();
        for _ in 0..rounds {
            let t = Instant::now();
            n = rt.block_on(f.client.query(&text)).unwrap().len();
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let bytes = (f.client.fetched_bytes() - b0) / rounds as u64;
        println!("| {name} | {:.1} ms | {n} | {bytes} |", median(times));
    }
}

fn main() {
    let o = opts();
    let tmp = tempfile::tempdir().unwrap();
    let dir = o.out.clone().unwrap_or_else(|| tmp.path().to_owned());
    std::fs::create_dir_all(&dir).unwrap();
    let now = vramwatch::model::now_ms() / 1000;
    let t0 = (now - o.minutes * 60) / o.step * o.step;
    let hosts = fleet(&o, now);
    let om = dir.join("fleet.om");
    let t = Instant::now();
    let (series, samples) = if o.reuse {
        (0, 0)
    } else {
        write(&o, &hosts, t0, &om)
    };
    let size = std::fs::metadata(&om).map(|m| m.len()).unwrap_or(0);
    println!(
        "wrote {}: {} hosts × {} GPUs × {} processes/host, {} min every {} s (+{} min ahead): {series} series, {samples} samples, {} MB in {:.1} s",
        om.display(),
        o.hosts,
        o.gpus,
        o.procs,
        o.minutes,
        o.step,
        FUTURE_S / 60,
        size / 1_000_000,
        t.elapsed().as_secs_f64()
    );
    if o.bench {
        bench(&o, &dir, &om);
    }
}
