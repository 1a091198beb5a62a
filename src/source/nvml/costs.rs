//! What each NVML call costs (`vramwatch bench-sampler --calls`).

use nvml_wrapper::Device;
use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, PcieUtilCounter, TemperatureSensor,
};
use nvml_wrapper::error::NvmlError;
use std::time::{Duration, Instant};

use super::{init_error, nvml};
use crate::source::SourceError;

/// CPU and wall time of one kind of NVML call, averaged over `calls`.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct CallCost {
    pub call: &'static str,
    pub calls: u32,
    pub cpu_us: f64,
    pub wall_us: f64,
    pub ok: bool,
}

fn thread_cpu_us() -> f64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as f64 * 1e6 + t.tv_nsec() as f64 / 1e3)
        .unwrap_or(0.0)
}

/// CPU and wall time per kind of call, summed over every time it is timed.
#[derive(Default)]
struct Tally(Vec<CallCost>);

impl Tally {
    /// Times `calls` calls of `f` in a row, added to `call`'s totals.
    fn time(&mut self, call: &'static str, calls: u32, f: &mut dyn FnMut() -> bool) {
        let (c0, w0) = (thread_cpu_us(), Instant::now());
        let mut ok = true;
        for _ in 0..calls {
            ok &= f();
        }
        let (cpu_us, wall_us) = (thread_cpu_us() - c0, w0.elapsed().as_secs_f64() * 1e6);
        match self.0.iter_mut().find(|r| r.call == call) {
            Some(r) => {
                r.calls += calls;
                r.cpu_us += cpu_us;
                r.wall_us += wall_us;
                r.ok &= ok;
            }
            None => self.0.push(CallCost {
                call,
                calls,
                cpu_us,
                wall_us,
                ok,
            }),
        }
    }

    /// The averages per call, in the order first timed.
    fn into_costs(self) -> Vec<CallCost> {
        let mut out = self.0;
        for r in &mut out {
            let n = f64::from(r.calls.max(1));
            r.cpu_us /= n;
            r.wall_us /= n;
        }
        out
    }
}

/// What each NVML call costs on GPU `index` (for `bench-sampler --calls`):
/// thread CPU time and wall time per call.
pub(crate) fn call_costs(index: u32) -> Result<Vec<CallCost>, SourceError> {
    let nvml = nvml()?;
    let d = nvml.device_by_index(index).map_err(init_error)?;
    let mut tally = Tally::default();
    let mut time = |call, calls, f: &mut dyn FnMut() -> bool| tally.time(call, calls, f);
    time("memory_info (v2)", 50, &mut || d.memory_info().is_ok());
    time("running_compute_processes", 50, &mut || {
        d.running_compute_processes().is_ok()
    });
    time("running_graphics_processes", 50, &mut || {
        d.running_graphics_processes().is_ok()
    });
    time("utilization_rates", 50, &mut || {
        d.utilization_rates().is_ok()
    });
    time("temperature", 50, &mut || {
        d.temperature(TemperatureSensor::Gpu).is_ok()
    });
    time("power_usage", 50, &mut || d.power_usage().is_ok());
    time("enforced_power_limit", 50, &mut || {
        d.enforced_power_limit().is_ok()
    });
    time("clock_info(SM)", 50, &mut || {
        d.clock_info(Clock::SM).is_ok()
    });
    time("clock_info(Memory)", 50, &mut || {
        d.clock_info(Clock::Memory).is_ok()
    });
    time("performance_state", 50, &mut || {
        d.performance_state().is_ok()
    });
    time("bar1_memory_info", 20, &mut || d.bar1_memory_info().is_ok());
    let mut last = None;
    time("process_utilization_stats", 10, &mut || {
        let r = d.process_utilization_stats(last);
        if let Ok(v) = &r {
            last = v.iter().map(|s| s.timestamp).max().or(last);
        }
        matches!(r, Ok(_) | Err(NvmlError::NotFound))
    });
    // nvml-wrapper makes two NVML calls per read: the count (no buffer),
    // then the samples, but only the count when it is 0. Back to back, the
    // row above mostly finds no new sample: one call. With every buffered
    // sample asked for, each read makes both (what the sampler's reads,
    // seconds apart, do); with a timestamp in the future, only the count.
    // Their difference is what one call with a buffer sized in advance
    // would save (that needs the raw binding: `unsafe`). On an H200 it is
    // nothing: the count alone costs as much (docs/benchmarks.md).
    time("process_utilization_stats(all buffered)", 10, &mut || {
        matches!(
            d.process_utilization_stats(None),
            Ok(_) | Err(NvmlError::NotFound)
        )
    });
    time("process_utilization_stats(count only)", 10, &mut || {
        matches!(
            d.process_utilization_stats(u64::MAX),
            Ok(_) | Err(NvmlError::NotFound)
        )
    });
    time("pcie_throughput(Receive)", 3, &mut || {
        d.pcie_throughput(PcieUtilCounter::Receive).is_ok()
    });
    time("pcie_throughput(Send)", 3, &mut || {
        d.pcie_throughput(PcieUtilCounter::Send).is_ok()
    });
    time("total_energy_consumption", 5, &mut || {
        d.total_energy_consumption().is_ok()
    });
    time("total_ecc_errors(volatile)", 10, &mut || {
        d.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile)
            .is_ok()
    });
    Ok(tally.into_costs())
}

/// The lanes `spaced_costs` follows: the sampler's schedule, as
/// `bench-sampler` gives it (the config's, with `--interval`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spacing {
    /// The normal lane's period.
    pub interval: Duration,
    /// The fast lane's (device memory only); `None`: off.
    pub fast: Option<Duration>,
    /// Normal rounds between two process-utilisation reads (on screen).
    pub util_every: u64,
    /// The slow lane's period (ECC, PCIe replays); `None`: off.
    pub slow: Option<Duration>,
}

/// Most of the sampler's calls as it makes them, spaced out on `lanes`
/// (for `bench-sampler --calls --spaced --seconds N`): device memory on
/// the fast lane's period, the normal lane's calls every interval
/// (process utilisation every `util_every` rounds, with the last sample's
/// timestamp, as the probe asks; BAR1 every tenth round), ECC and PCIe
/// replays on the slow lane's period; each call timed on its own. Left
/// out: the field values, XID polling, PCIe throughput and energy, fans,
/// and the skip of process utilisation on an idle device. Back to back
/// (`call_costs`) a call finds the driver's caches warm; spaced out, as
/// the sampler makes them, it may not. The last row, `(whole loop)`, is
/// the thread's CPU over the run: what the calls' sum leaves out is the
/// loop and its wake-ups.
pub(crate) fn spaced_costs(
    index: u32,
    seconds: u64,
    lanes: Spacing,
) -> Result<Vec<CallCost>, SourceError> {
    let nvml = nvml()?;
    let d = nvml.device_by_index(index).map_err(init_error)?;
    let mut tally = Tally::default();
    let mut time = |call, f: &mut dyn FnMut() -> bool| tally.time(call, 1, f);
    // One tick per fast read (or per interval without a fast lane).
    let ms = |x: Duration| (x.as_millis() as u64).max(1);
    let interval = ms(lanes.interval);
    let tick_ms = lanes.fast.map_or(interval, ms).min(interval);
    let ticks = (seconds.max(1) * 1000 / tick_ms).max(1);
    let (c0, w0) = (thread_cpu_us(), Instant::now());
    let mut last = None;
    let (mut next_normal, mut next_slow, mut round) = (0u64, 0u64, 0u64);
    for tick in 0..ticks {
        let at = tick * tick_ms;
        if let Some(wait) = (w0 + Duration::from_millis(at)).checked_duration_since(Instant::now())
        {
            std::thread::sleep(wait);
        }
        time("memory_info (v2)", &mut || d.memory_info().is_ok());
        let slow_due = lanes.slow.is_some() && at >= next_slow;
        if slow_due {
            next_slow = next_slow.saturating_add(lanes.slow.map_or(u64::MAX, ms));
        }
        if at < next_normal {
            if slow_due {
                slow_calls(&d, &mut time);
            }
            continue;
        }
        // On average every interval, when it is not a whole number of
        // ticks too.
        next_normal += interval;
        let this_round = round;
        round += 1;
        time("running_compute_processes", &mut || {
            d.running_compute_processes().is_ok()
        });
        time("running_graphics_processes", &mut || {
            d.running_graphics_processes().is_ok()
        });
        time("utilization_rates", &mut || d.utilization_rates().is_ok());
        time("temperature", &mut || {
            d.temperature(TemperatureSensor::Gpu).is_ok()
        });
        time("power_usage", &mut || d.power_usage().is_ok());
        time("enforced_power_limit", &mut || {
            d.enforced_power_limit().is_ok()
        });
        time("clock_info(SM)", &mut || d.clock_info(Clock::SM).is_ok());
        time("clock_info(Memory)", &mut || {
            d.clock_info(Clock::Memory).is_ok()
        });
        time("performance_state", &mut || d.performance_state().is_ok());
        time("encoder_utilization", &mut || {
            d.encoder_utilization().is_ok()
        });
        time("decoder_utilization", &mut || {
            d.decoder_utilization().is_ok()
        });
        if this_round.is_multiple_of(10) {
            time("bar1_memory_info", &mut || d.bar1_memory_info().is_ok());
        }
        if this_round.is_multiple_of(lanes.util_every.max(1)) {
            time("process_utilization_stats", &mut || {
                let r = d.process_utilization_stats(last);
                if let Ok(v) = &r {
                    last = v.iter().map(|s| s.timestamp).max().or(last);
                }
                matches!(r, Ok(_) | Err(NvmlError::NotFound))
            });
            // Just after the read above, the count alone (a timestamp in
            // the future: nvml-wrapper's first call, which finds no sample
            // and stops): what one call of the two costs when spaced out.
            time("process_utilization_stats(count only, after)", &mut || {
                matches!(
                    d.process_utilization_stats(u64::MAX),
                    Ok(_) | Err(NvmlError::NotFound)
                )
            });
        }
        if slow_due {
            slow_calls(&d, &mut time);
        }
    }
    let mut out = tally.into_costs();
    out.push(CallCost {
        call: "(whole loop)",
        calls: 1,
        cpu_us: thread_cpu_us() - c0,
        wall_us: w0.elapsed().as_secs_f64() * 1e6,
        ok: true,
    });
    Ok(out)
}

/// The slow lane's ECC and PCIe-replay calls, timed.
fn slow_calls(d: &Device<'_>, time: &mut dyn FnMut(&'static str, &mut dyn FnMut() -> bool)) {
    time("total_ecc_errors(volatile) x2", &mut || {
        d.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile)
            .is_ok()
            & d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile)
                .is_ok()
    });
    time("pcie_replay_counter", &mut || {
        d.pcie_replay_counter().is_ok()
    });
}
