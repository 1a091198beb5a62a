//! `vramwatch bench-sampler` (hidden): what the sampler costs against the
//! raw cost of the NVML calls it makes, measured in one run, on the
//! current schedule (the config's, with `--interval`).
//!
//! Process utilisation, the most expensive call, is read every
//! `proc_util_shown_interval` while it is on screen and every
//! `proc_util_interval` otherwise
//! (`sampler::OnScreen`), so both cadences are measured, one after
//! the other: `hidden` (`record`, `serve`, the dashboard without its SM%
//! column) and `shown` (the dashboard with SM% or a drill-down on screen).
//! For each, phase 1 makes the same calls on the same schedule from one
//! plain thread (no channels, no assembling, no host facts) and counts the
//! process's CPU time; phase 2 runs the real `Sampler` for as long and
//! counts the same. The ratio is the sampler's overhead. Both phases count
//! the process-utilisation reads. A run takes four times `--seconds`.

use std::io::Write as _;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sys::resource::{UsageWho, getrusage};

use crate::model::now_ms;
use crate::sampler::counting::CountingSource;
use crate::sampler::{OnScreen, Sampler, Schedule};
use crate::source::Source;

/// This process's resident memory (VmRSS), KiB.
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// CPU seconds (user + system) this process has used.
pub fn cpu_seconds() -> f64 {
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(u) => {
            let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        }
        Err(_) => 0.0,
    }
}

/// What one cadence of process utilisation costs, raw and in the sampler.
#[derive(Debug, serde::Serialize)]
pub struct ModeCosts {
    /// `hidden` or `shown`.
    pub mode: &'static str,
    /// Who reads process utilisation on this cadence.
    pub used_by: &'static str,
    pub raw_cpu_s: f64,
    pub sampler_cpu_s: f64,
    pub raw_pct_of_core: f64,
    pub sampler_pct_of_core: f64,
    pub raw_pct_per_gpu: f64,
    pub sampler_pct_per_gpu: f64,
    /// Sampler CPU over raw CPU (goal: at most 1.25).
    pub ratio: f64,
    /// Process-utilisation reads per minute and GPU.
    pub raw_proc_util_reads_per_min_per_gpu: f64,
    pub sampler_proc_util_reads_per_min_per_gpu: f64,
    /// The sampler's process-utilisation reads of each GPU (the same
    /// cadence on every GPU).
    pub sampler_proc_util_reads_by_gpu: Vec<u64>,
    pub snapshots: u64,
    pub fast_reads_per_snapshot: f64,
}

/// The schedule measured.
#[derive(Debug, serde::Serialize)]
pub struct ScheduleFigures {
    pub interval_ms: u64,
    pub fast_ms: Option<u64>,
    pub slow_ms: Option<u64>,
    pub pcie_ms: Option<u64>,
    pub energy_ms: Option<u64>,
    /// Process utilisation while not on screen.
    pub proc_util_ms: u64,
    pub proc_util_every_rounds: u64,
    /// Process utilisation while on screen.
    pub proc_util_shown_ms: u64,
    pub proc_util_shown_every_rounds: u64,
    pub burst: Option<(f64, u64)>,
}

impl ScheduleFigures {
    fn of(s: &Schedule) -> ScheduleFigures {
        let ms = |d: Duration| d.as_millis() as u64;
        ScheduleFigures {
            interval_ms: ms(s.interval),
            fast_ms: s.fast.map(ms),
            slow_ms: s.slow.map(ms),
            pcie_ms: s.pcie.map(ms),
            energy_ms: s.energy.map(ms),
            proc_util_ms: ms(s.proc_util),
            proc_util_every_rounds: s.proc_util_every(),
            proc_util_shown_ms: ms(s.proc_util_shown),
            proc_util_shown_every_rounds: s.proc_util_shown_every(),
            burst: s.burst.map(|(l, d)| (l, ms(d))),
        }
    }
}

/// The figures of one measurement.
#[derive(Debug, serde::Serialize)]
pub struct Costs {
    /// Of each phase (four phases in all).
    pub seconds: f64,
    pub gpus: usize,
    pub source: String,
    pub schedule: ScheduleFigures,
    pub modes: Vec<ModeCosts>,
    pub rss_kib_end: u64,
}

/// The cadences measured: (mode, process utilisation on screen, who).
const MODES: [(&str, bool, &str); 2] = [
    (
        "hidden",
        false,
        "record, serve, the dashboard without its SM% column",
    ),
    (
        "shown",
        true,
        "the dashboard with its SM% column or a drill-down on screen",
    ),
];

/// One lane's clock in the raw loop: due once its time has come, and then
/// set to its next time after `now`, so a lane that fell behind skips rather
/// than bursts, and the loop never sleeps until a time already past.
struct LaneClock {
    next: Instant,
    every: Duration,
}

impl LaneClock {
    fn new(start: Instant, every: Option<Duration>) -> LaneClock {
        LaneClock {
            next: start,
            // An off lane still keeps a clock, an hour long, that is never acted on.
            every: every
                .unwrap_or(Duration::from_secs(3600))
                .max(Duration::from_millis(1)),
        }
    }

    fn due(&mut self, now: Instant) -> bool {
        if now < self.next {
            return false;
        }
        while self.next <= now {
            self.next += self.every;
        }
        true
    }
}

/// Phase 1: the calls alone, on the sampler's schedule (process
/// utilisation on the cadence `wanted` gives), from one thread.
fn raw_calls(source: &dyn Source, schedule: Schedule, wanted: bool, run: Duration) -> f64 {
    let n = source.system().gpus.len();
    let mut main: Vec<_> = (0..n).map(|i| source.probe(i)).collect();
    let mut slow: Vec<_> = (0..n).map(|i| source.probe(i)).collect();
    let mut util = vec![schedule.proc_util_cadence(); n];
    let start = Instant::now();
    let cpu0 = cpu_seconds();
    let mut normal_clock = LaneClock::new(start, Some(schedule.interval));
    let mut fast_clock = LaneClock::new(start, schedule.fast);
    let mut slow_clock = LaneClock::new(start, schedule.slow);
    let mut rounds = 0u64;
    let mut slow_rounds = 0u64;
    while start.elapsed() < run {
        let now = Instant::now();
        let t = now_ms();
        let (normal_due, fast_due) = (normal_clock.due(now), fast_clock.due(now));
        if normal_due {
            for (p, u) in main.iter_mut().zip(&mut util) {
                let with_util = u.due(rounds, wanted);
                if with_util {
                    u.sent(rounds);
                }
                let _ = p.normal(t, with_util);
            }
            rounds += 1;
        } else if fast_due && schedule.fast.is_some() {
            for p in &mut main {
                let _ = p.memory(t);
            }
        }
        if slow_clock.due(now) && schedule.slow.is_some() {
            // PCIe and energy on their own periods, as the sampler reads them.
            let due = schedule.slow_due(slow_rounds);
            slow_rounds += 1;
            for p in &mut slow {
                let _ = p.slow(t, due);
            }
        }
        let wake = fast_clock.next.min(normal_clock.next).min(slow_clock.next);
        std::thread::sleep(wake.saturating_duration_since(Instant::now()));
    }
    cpu_seconds() - cpu0
}

/// Phase 2: the real sampler, headless, with process utilisation on
/// screen or not.
async fn sampler(
    source: Box<dyn Source>,
    schedule: Schedule,
    wanted: bool,
    run: Duration,
) -> (f64, u64, f64) {
    let cpu0 = cpu_seconds();
    let flag = OnScreen::default();
    // As the dashboard: a drill-down or the overview at the usual widths
    // shows both process utilisation and host facts.
    flag.set_util(wanted);
    flag.set_host(wanted);
    let (s, mut rx) = Sampler::spawn_with(source, schedule, flag);
    let end = tokio::time::Instant::now() + run;
    let (mut snaps, mut reads) = (0u64, 0u64);
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(end) => break,
            r = rx.recv() => if let Some(snap) = r {
                snaps += 1;
                reads += snap.gpus.iter().map(|g| g.mem_reads as u64).sum::<u64>();
            }
        }
    }
    let cpu = cpu_seconds() - cpu0;
    drop(s);
    let per = if snaps == 0 {
        0.0
    } else {
        reads as f64 / snaps as f64
    };
    (cpu, snaps, per)
}

/// Measures both cadences: raw, then sampler, `seconds` each.
pub fn run(
    open: &dyn Fn() -> Result<Box<dyn Source>>,
    schedule: Schedule,
    seconds: u64,
) -> Result<Costs> {
    let run = Duration::from_secs(seconds.max(1));
    let secs = run.as_secs_f64();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let system = open()?.system();
    let gpus = system.gpus.len();
    let per_gpu_min = |reads: u64| reads as f64 / gpus.max(1) as f64 / (secs / 60.0);
    let pct = |cpu: f64| cpu / secs * 100.0;
    let mut modes = Vec::new();
    for (mode, wanted, used_by) in MODES {
        let raw_source = CountingSource::new(open()?);
        let raw_reads = raw_source.reads();
        let raw = raw_calls(&raw_source, schedule, wanted, run);
        drop(raw_source);
        let source = CountingSource::new(open()?);
        let reads = source.reads();
        let (cpu, snapshots, per) = rt.block_on(sampler(Box::new(source), schedule, wanted, run));
        modes.push(ModeCosts {
            mode,
            used_by,
            raw_cpu_s: raw,
            sampler_cpu_s: cpu,
            raw_pct_of_core: pct(raw),
            sampler_pct_of_core: pct(cpu),
            raw_pct_per_gpu: pct(raw) / gpus.max(1) as f64,
            sampler_pct_per_gpu: pct(cpu) / gpus.max(1) as f64,
            ratio: if raw > 0.0 { cpu / raw } else { f64::NAN },
            raw_proc_util_reads_per_min_per_gpu: per_gpu_min(raw_reads.total()),
            sampler_proc_util_reads_per_min_per_gpu: per_gpu_min(reads.total()),
            sampler_proc_util_reads_by_gpu: (0..gpus).map(|g| reads.of(g)).collect(),
            snapshots,
            fast_reads_per_snapshot: per,
        });
    }
    Ok(Costs {
        seconds: secs,
        gpus,
        source: system.source.clone(),
        schedule: ScheduleFigures::of(&schedule),
        modes,
        rss_kib_end: rss_kib(),
    })
}

/// One line per cadence, for a person reading the run.
fn summary(c: &Costs) -> String {
    c.modes
        .iter()
        .map(|m| {
            format!(
                "{} ({}): raw {:.3} %, sampler {:.3} % of a core ({:.2}x raw; {:.3} % per GPU), {:.1} process-utilisation reads/min/GPU",
                m.mode,
                m.used_by,
                m.raw_pct_of_core,
                m.sampler_pct_of_core,
                m.ratio,
                m.sampler_pct_per_gpu,
                m.sampler_proc_util_reads_per_min_per_gpu,
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// How `bench-sampler --calls` times NVML's calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Calls {
    /// Each call many times in a row (`--calls`).
    BackToBack,
    /// On the sampler's schedule, for `--seconds` (`--calls --spaced`).
    Spaced,
}

/// `vramwatch bench-sampler`: prints the figures as JSON (and a summary
/// on standard error).
pub fn run_cli(
    seconds: u64,
    calls: Option<Calls>,
    source: &crate::cli::SourceArgs,
    me: &str,
) -> Result<()> {
    let config = || -> Result<crate::config::Config> {
        Ok(crate::config::load(source.config.as_deref())?.with_interval(source.interval))
    };
    if let Some(how) = calls {
        let rss0 = rss_kib();
        let costs = match how {
            Calls::BackToBack => crate::source::nvml::call_costs(0)?,
            Calls::Spaced => {
                let s = config()?.schedule();
                let lanes = crate::source::nvml::Spacing {
                    interval: s.interval,
                    fast: s.fast,
                    util_every: s.proc_util_shown_every(),
                    slow: s.slow,
                };
                crate::source::nvml::spaced_costs(0, seconds, lanes)?
            }
        };
        writeln!(
            std::io::stdout(),
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "rss_kib_before_nvml": rss0,
                "rss_kib_after_calls": rss_kib(),
                "calls": costs,
            }))?
        )?;
        return Ok(());
    }
    let (demo, seed, me) = (source.demo.clone(), source.seed, me.to_owned());
    let open = move || -> Result<Box<dyn Source>> {
        Ok(crate::source::open(demo.as_deref(), seed, &me, 0)?)
    };
    let costs = run(&open, config()?.schedule(), seconds)?;
    writeln!(
        std::io::stdout(),
        "{}",
        serde_json::to_string_pretty(&costs)?
    )?;
    crate::tell!("{}", summary(&costs));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_cadences_are_measured_and_shown_reads_every_round() {
        let open =
            || -> Result<Box<dyn Source>> { Ok(crate::source::open(Some("demo"), 1, "me", 0)?) };
        let schedule = Schedule {
            interval: Duration::from_millis(100),
            // Every fifth round while not on screen.
            proc_util: Duration::from_millis(500),
            proc_util_shown: Duration::from_millis(100),
            ..Default::default()
        };
        let c = run(&open, schedule, 1).unwrap();
        assert_eq!(c.gpus, 4);
        assert_eq!(c.schedule.proc_util_every_rounds, 5);
        let modes: Vec<_> = c.modes.iter().map(|m| m.mode).collect();
        assert_eq!(modes, ["hidden", "shown"]);
        let (hidden, shown) = (&c.modes[0], &c.modes[1]);
        for (what, h, s) in [
            (
                "raw",
                hidden.raw_proc_util_reads_per_min_per_gpu,
                shown.raw_proc_util_reads_per_min_per_gpu,
            ),
            (
                "sampler",
                hidden.sampler_proc_util_reads_per_min_per_gpu,
                shown.sampler_proc_util_reads_per_min_per_gpu,
            ),
        ] {
            // About 120 and 600 a minute; a loaded machine skips rounds.
            assert!(
                h > 0.0 && s >= 3.0 * h,
                "{what}: hidden {h}/min, shown {s}/min"
            );
        }
        assert!(shown.snapshots > 0 && hidden.ratio.is_finite());
        assert!(summary(&c).contains("hidden (record, serve"));
    }

    #[test]
    fn a_lane_clock_always_moves_past_now() {
        let start = Instant::now();
        for every in [None, Some(Duration::from_millis(100))] {
            let mut c = LaneClock::new(start, every);
            assert!(c.due(start), "due at the start");
            assert!(c.next > start, "{every:?}: next {:?}", c.next - start);
            assert!(!c.due(start), "not due twice at one instant");
        }
        // Behind by 3.5 periods: due once, then the next time is after now.
        let mut c = LaneClock::new(start, Some(Duration::from_millis(100)));
        let late = start + Duration::from_millis(350);
        assert!(c.due(late));
        assert_eq!(c.next, start + Duration::from_millis(400));
        assert!(!c.due(late));
    }
}
