//! `vramwatch bench-sampler` (hidden): what the sampler costs against the
//! raw cost of the NVML calls it makes, measured in one run.
//!
//! Phase 1 makes the same calls on the same schedule from one plain thread
//! (no channels, no assembling, no host facts) and counts the process's CPU
//! time. Phase 2 runs the real `Sampler` for as long and counts the same.
//! The ratio is the sampler's overhead.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sys::resource::{UsageWho, getrusage};

use crate::model::now_ms;
use crate::sampler::{Sampler, Schedule};
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

/// The figures of one measurement.
#[derive(Debug, serde::Serialize)]
pub struct Costs {
    pub seconds: f64,
    pub gpus: usize,
    pub raw_cpu_s: f64,
    pub sampler_cpu_s: f64,
    pub raw_pct_of_core: f64,
    pub sampler_pct_of_core: f64,
    pub ratio: f64,
    pub snapshots: u64,
    pub fast_reads_per_snapshot: f64,
    pub rss_kib_end: u64,
}

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

/// Phase 1: the calls alone, on the sampler's schedule, from one thread.
fn raw_calls(source: &dyn Source, schedule: Schedule, run: Duration) -> f64 {
    let n = source.system().gpus.len();
    let mut main: Vec<_> = (0..n).map(|i| source.probe(i)).collect();
    let mut slow: Vec<_> = (0..n).map(|i| source.probe(i)).collect();
    let pcie_every = schedule.pcie_every();
    let util_every = schedule.proc_util_every();
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
            for p in &mut main {
                let _ = p.normal(t, rounds.is_multiple_of(util_every));
            }
            rounds += 1;
        } else if fast_due && schedule.fast.is_some() {
            for p in &mut main {
                let _ = p.memory(t);
            }
        }
        if slow_clock.due(now) && schedule.slow.is_some() {
            let pcie_due = pcie_every.is_some_and(|every| slow_rounds.is_multiple_of(every));
            slow_rounds += 1;
            for p in &mut slow {
                let _ = p.slow(t, pcie_due);
            }
        }
        let wake = fast_clock.next.min(normal_clock.next).min(slow_clock.next);
        std::thread::sleep(wake.saturating_duration_since(Instant::now()));
    }
    cpu_seconds() - cpu0
}

/// Phase 2: the real sampler, headless.
async fn sampler(source: Box<dyn Source>, schedule: Schedule, run: Duration) -> (f64, u64, f64) {
    let cpu0 = cpu_seconds();
    let (s, mut rx) = Sampler::spawn(source, schedule);
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

pub fn run(
    open: &dyn Fn() -> Result<Box<dyn Source>>,
    schedule: Schedule,
    seconds: u64,
) -> Result<Costs> {
    let run = Duration::from_secs(seconds.max(1));
    let raw_source = open()?;
    let gpus = raw_source.system().gpus.len();
    let raw = raw_calls(raw_source.as_ref(), schedule, run);
    drop(raw_source);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let (cpu, snapshots, per) = rt.block_on(sampler(open()?, schedule, run));
    let secs = run.as_secs_f64();
    Ok(Costs {
        seconds: secs,
        gpus,
        raw_cpu_s: raw,
        sampler_cpu_s: cpu,
        raw_pct_of_core: raw / secs * 100.0,
        sampler_pct_of_core: cpu / secs * 100.0,
        ratio: if raw > 0.0 { cpu / raw } else { f64::NAN },
        snapshots,
        fast_reads_per_snapshot: per,
        rss_kib_end: rss_kib(),
    })
}

/// `vramwatch bench-sampler`: prints the figures as JSON.
pub fn run_cli(seconds: u64, calls: bool, source: &crate::cli::SourceArgs, me: &str) -> Result<()> {
    if calls {
        let rss0 = rss_kib();
        let costs = crate::source::nvml::call_costs(0)?;
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "rss_kib_before_nvml": rss0,
                "rss_kib_after_calls": rss_kib(),
                "calls": costs,
            }))?
        );
        return Ok(());
    }
    let config = crate::config::load(source.config.as_deref())?.with_interval(source.interval);
    let (demo, seed, me) = (source.demo.clone(), source.seed, me.to_owned());
    let open = move || -> Result<Box<dyn Source>> {
        Ok(crate::source::open(demo.as_deref(), seed, &me, 0)?)
    };
    let costs = run(&open, config.schedule(), seconds)?;
    println!("{}", serde_json::to_string_pretty(&costs)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
