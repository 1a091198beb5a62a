//! When each lane runs ([`Schedule`]), when a GPU's fast lane speeds up
//! (burst sampling: [`wants_burst`]), and when process utilisation is read
//! ([`OnScreen`], [`UtilCadence`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::model::GpuSample;
use crate::source::SlowDue;

/// When each lane runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    /// Display interval: the normal lane, one snapshot per interval.
    pub interval: Duration,
    /// Fast lane (memory only); `None` turns it off.
    pub fast: Option<Duration>,
    /// Slow lane (ECC, XID, and PCIe and energy when due); `None` turns it
    /// off.
    pub slow: Option<Duration>,
    /// PCIe throughput period (whole slow-lane periods); `None` = off.
    pub pcie: Option<Duration>,
    /// Energy counter period (whole slow-lane periods); `None` = off.
    pub energy: Option<Duration>,
    /// Process utilisation period while nobody looks at it (rounded to
    /// whole intervals): `record`, `serve`, the dashboard without its SM%
    /// column.
    pub proc_util: Duration,
    /// Process utilisation period while it is on screen ([`OnScreen`]),
    /// rounded to whole intervals; never longer than `proc_util`.
    pub proc_util_shown: Duration,
    /// Burst sampling: from this memory % the fast lane runs at this period.
    pub burst: Option<(f64, Duration)>,
    /// The first snapshot is a preview: memory and the process lists only,
    /// with the first full read (utilisation, power, clocks, per-process
    /// SM%: ~10 ms of cold NVML calls on an H200) started as soon as it is
    /// out. For the dashboard's first frame; `record` and `serve` start
    /// with a full read.
    pub preview: bool,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            interval: Duration::from_secs(1),
            fast: Some(Duration::from_millis(100)),
            slow: Some(Duration::from_secs(5)),
            pcie: Some(Duration::from_secs(30)),
            energy: Some(Duration::from_secs(30)),
            proc_util: Duration::from_secs(5),
            proc_util_shown: Duration::from_secs(2),
            burst: Some((90.0, Duration::from_millis(50))),
            preview: false,
        }
    }
}

impl Schedule {
    /// Slow rounds between two PCIe reads (`None`: never).
    pub fn pcie_every(&self) -> Option<u64> {
        self.slow_rounds_of(self.pcie)
    }

    /// Slow rounds between two energy reads (`None`: never).
    pub fn energy_every(&self) -> Option<u64> {
        self.slow_rounds_of(self.energy)
    }

    /// What slow round `round` (0 = the first) reads: everything at the
    /// first, then PCIe and energy each every so many rounds.
    pub fn slow_due(&self, round: u64) -> SlowDue {
        let due = |every: Option<u64>| every.is_some_and(|n| round.is_multiple_of(n));
        SlowDue {
            pcie: due(self.pcie_every()),
            energy: due(self.energy_every()),
        }
    }

    /// `period` in whole slow-lane periods, at least one.
    fn slow_rounds_of(&self, period: Option<Duration>) -> Option<u64> {
        let (period, slow) = (period?, self.slow?);
        Some(((period.as_millis() / slow.as_millis().max(1)) as u64).max(1))
    }

    /// Normal rounds between two process-utilisation reads while it is
    /// not on screen (at least 1).
    pub fn proc_util_every(&self) -> u64 {
        self.rounds_of(self.proc_util)
    }

    /// Normal rounds between two process-utilisation reads while it is on
    /// screen (at least 1, at most [`Schedule::proc_util_every`]).
    pub fn proc_util_shown_every(&self) -> u64 {
        self.rounds_of(self.proc_util_shown)
            .min(self.proc_util_every())
    }

    /// `period` in whole normal rounds, at least one.
    fn rounds_of(&self, period: Duration) -> u64 {
        let n = period.as_millis() / self.interval.as_millis().max(1);
        (n as u64).max(1)
    }

    /// The cadence of one GPU's process-utilisation reads.
    pub(crate) fn proc_util_cadence(&self) -> UtilCadence {
        UtilCadence::new(self.proc_util_every(), self.proc_util_shown_every())
    }
}

/// Which per-process figures are on screen now, set by whoever shows them
/// and read by the sampler at every round: process utilisation (the
/// dashboard's SM% column at its current width, or a process's drill-down)
/// and host facts (its CPU% or RSS column, or a drill-down). Cheap to
/// clone; a clone shares the flags. Both off by default, as for `record`
/// and `serve`, which show nothing: they read both every `proc_util`.
#[derive(Clone, Debug, Default)]
pub struct OnScreen {
    util: Arc<AtomicBool>,
    host: Arc<AtomicBool>,
}

impl OnScreen {
    /// Says whether process utilisation is on screen; the next round
    /// follows it.
    pub fn set_util(&self, shown: bool) {
        self.util.store(shown, Ordering::Relaxed);
    }

    /// Whether process utilisation is on screen.
    pub fn util(&self) -> bool {
        self.util.load(Ordering::Relaxed)
    }

    /// Says whether host facts (CPU %, RSS) are on screen; the next round
    /// follows it.
    pub fn set_host(&self, shown: bool) {
        self.host.store(shown, Ordering::Relaxed);
    }

    /// Whether host facts are on screen.
    pub fn host(&self) -> bool {
        self.host.load(Ordering::Relaxed)
    }
}

/// When one GPU's process utilisation is read (the expensive call:
/// docs/benchmarks.md), or the host's CPU % and RSS of the processes: at
/// the first round; then once every `shown` rounds while it is wanted
/// ([`Schedule::proc_util_shown_every`]), else once every `every` rounds
/// ([`Schedule::proc_util_every`]). A round after it becomes wanted reads
/// it as soon as the last read is `shown` rounds old; until then the last
/// figures stay on screen as they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UtilCadence {
    every: u64,
    shown: u64,
    /// The round of the last read sent with process utilisation.
    last: Option<u64>,
}

impl UtilCadence {
    pub(crate) fn new(every: u64, shown: u64) -> UtilCadence {
        let every = every.max(1);
        UtilCadence {
            every,
            shown: shown.clamp(1, every),
            last: None,
        }
    }

    /// Whether round `round`'s read should include process utilisation.
    pub(crate) fn due(&self, round: u64, wanted: bool) -> bool {
        let every = if wanted { self.shown } else { self.every };
        self.last
            .is_none_or(|last| round.saturating_sub(last) >= every)
    }

    /// Round `round`'s read went out with process utilisation. (A read that
    /// could not be sent, the GPU still busy, is not noted: the next round
    /// asks again.)
    pub(crate) fn sent(&mut self, round: u64) {
        self.last = Some(round);
    }
}

/// Burst sampling stops only this many percentage points below its level,
/// so memory hovering at the level does not toggle the lane every read.
pub(crate) const BURST_HYSTERESIS_PCT: f64 = 2.0;

/// Whether the fast lane of `gpu` should run at the burst rate, given the
/// configured `level_pct` (`None`: burst sampling off) and whether it is
/// bursting now. Starts at `level_pct` (the interval's peak read counts,
/// [`GpuSample::peak_pct_full`]), stops below `level_pct -`
/// [`BURST_HYSTERESIS_PCT`]. A GPU without a memory reading keeps its
/// current state.
pub fn wants_burst(gpu: &GpuSample, level_pct: Option<f64>, bursting: bool) -> bool {
    let Some(level) = level_pct.filter(|l| l.is_finite()) else {
        return false;
    };
    let Some(pct) = gpu.peak_pct_full() else {
        return bursting;
    };
    if bursting {
        pct >= level - BURST_HYSTERESIS_PCT
    } else {
        pct >= level
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MemInfo;

    /// The rounds out of `rounds` whose read includes process utilisation,
    /// `wanted(round)` saying whether it is on screen then.
    fn reads(every: u64, rounds: u64, wanted: impl Fn(u64) -> bool) -> Vec<u64> {
        reads_shown(every, 1, rounds, wanted)
    }

    /// As [`reads`], read every `shown` rounds while on screen.
    fn reads_shown(every: u64, shown: u64, rounds: u64, wanted: impl Fn(u64) -> bool) -> Vec<u64> {
        let mut c = UtilCadence::new(every, shown);
        let mut out = Vec::new();
        for r in 0..rounds {
            if c.due(r, wanted(r)) {
                c.sent(r);
                out.push(r);
            }
        }
        out
    }

    #[test]
    fn process_utilisation_on_screen_is_read_every_shown_interval() {
        assert_eq!(reads(5, 6, |_| true), vec![0, 1, 2, 3, 4, 5]);
        let s = Schedule::default();
        assert_eq!(
            s.proc_util_shown_every(),
            2,
            "the default: every 2 s at 1 s"
        );
        assert_eq!(reads_shown(5, 2, 7, |_| true), vec![0, 2, 4, 6]);
        // Shown from round 3, three rounds after the last read: read at
        // once, then every second round.
        assert_eq!(reads_shown(5, 2, 9, |r| r >= 3), vec![0, 3, 5, 7]);
        // Shown from round 3, a round after a hidden-cadence read (round
        // 2): that figure is a round old, so the next read is at round 4.
        assert_eq!(reads_shown(2, 2, 9, |r| r >= 3), vec![0, 2, 4, 6, 8]);
        // Never slower than the hidden cadence.
        assert_eq!(UtilCadence::new(3, 10), UtilCadence::new(3, 3));
        let s = Schedule {
            proc_util_shown: Duration::from_secs(10),
            ..Default::default()
        };
        assert_eq!(s.proc_util_shown_every(), 5);
    }

    #[test]
    fn process_utilisation_not_on_screen_is_read_every_proc_util_interval() {
        let every = Schedule::default().proc_util_every();
        assert_eq!(every, 5, "the default: every 5 s at a 1 s interval");
        assert_eq!(reads(every, 16, |_| false), vec![0, 5, 10, 15]);
        // proc_util_interval = interval: every round, as before.
        assert_eq!(reads(1, 4, |_| false), vec![0, 1, 2, 3]);
    }

    #[test]
    fn shown_again_the_next_round_reads_it_then_the_slow_cadence_resumes() {
        // Hidden, shown at rounds 7..=8, hidden again.
        let shown = |r| (7..=8).contains(&r);
        assert_eq!(reads(5, 20, shown), vec![0, 5, 7, 8, 13, 18]);
    }

    #[test]
    fn a_read_that_could_not_be_sent_is_asked_for_again() {
        let mut c = UtilCadence::new(5, 1);
        assert!(c.due(0, false));
        // Round 0's read was not sent (the GPU busy): round 1 asks again.
        assert!(c.due(1, false));
        c.sent(1);
        assert!(!c.due(2, false));
        assert!(c.due(6, false));
    }

    #[test]
    fn the_on_screen_flags_are_shared_by_their_clones_and_apart() {
        let w = OnScreen::default();
        assert!(!w.util() && !w.host(), "off unless someone shows them");
        let ui = w.clone();
        ui.set_util(true);
        assert!(w.util() && !w.host());
        ui.set_host(true);
        ui.set_util(false);
        assert!(!w.util() && w.host());
    }

    /// The slow rounds out of `rounds` that read PCIe and energy.
    fn slow_reads(s: &Schedule, rounds: u64) -> (Vec<u64>, Vec<u64>) {
        let due: Vec<SlowDue> = (0..rounds).map(|r| s.slow_due(r)).collect();
        let which = |f: fn(&SlowDue) -> bool| {
            (0..rounds)
                .filter(|&r| f(&due[r as usize]))
                .collect::<Vec<_>>()
        };
        (which(|d| d.pcie), which(|d| d.energy))
    }

    #[test]
    fn energy_is_read_at_the_first_slow_round_then_every_energy_interval() {
        let s = Schedule::default();
        assert_eq!(s.energy_every(), Some(6), "30 s of 5 s slow rounds");
        assert_eq!(s.slow_due(0), SlowDue::ALL, "the first round reads all");
        let (pcie, energy) = slow_reads(&s, 13);
        assert_eq!(energy, vec![0, 6, 12]);
        assert_eq!(pcie, vec![0, 6, 12]);
        // Its own period, independent of PCIe's, rounded to whole rounds.
        let s = Schedule {
            energy: Some(Duration::from_millis(12_500)),
            pcie: None,
            ..Default::default()
        };
        assert_eq!(slow_reads(&s, 7), (vec![], vec![0, 2, 4, 6]));
        // Shorter than the slow lane: every round; off: never.
        let s = Schedule {
            energy: Some(Duration::from_secs(1)),
            ..Default::default()
        };
        assert_eq!(slow_reads(&s, 3).1, vec![0, 1, 2]);
        let s = Schedule {
            energy: None,
            ..Default::default()
        };
        assert_eq!(s.energy_every(), None);
        assert_eq!(slow_reads(&s, 7).1, Vec::<u64>::new());
        // No slow lane at all: nothing is due.
        let s = Schedule {
            slow: None,
            ..Default::default()
        };
        assert_eq!(s.slow_due(0), SlowDue::default());
    }

    #[test]
    fn schedule_rounds_process_utilisation_to_whole_intervals() {
        let s = Schedule {
            proc_util: Duration::from_millis(2500),
            ..Default::default()
        };
        assert_eq!(s.proc_util_every(), 2);
        let s = Schedule {
            proc_util: Duration::from_millis(10),
            ..Default::default()
        };
        assert_eq!(s.proc_util_every(), 1);
    }

    fn gpu(used: u64, peak: Option<u64>) -> GpuSample {
        GpuSample {
            mem: Some(MemInfo {
                used,
                reserved: 1,
                free: 99 - used,
                total: 100,
            }),
            mem_peak: peak,
            ..Default::default()
        }
    }

    #[test]
    fn starts_at_the_level_and_stops_below_it_with_hysteresis() {
        let l = Some(90.0);
        assert!(!wants_burst(&gpu(80, None), l, false));
        assert!(wants_burst(&gpu(89, None), l, false));
        assert!(wants_burst(&gpu(87, None), l, true));
        assert!(!wants_burst(&gpu(87, None), l, false));
        assert!(!wants_burst(&gpu(86, None), l, true));
    }

    #[test]
    fn a_fast_lane_peak_starts_it() {
        assert!(wants_burst(&gpu(50, Some(95)), Some(90.0), false));
    }

    #[test]
    fn off_or_unknown() {
        assert!(!wants_burst(&gpu(99, None), None, true));
        assert!(!wants_burst(&gpu(99, None), Some(f64::NAN), true));
        let none = GpuSample::default();
        assert!(wants_burst(&none, Some(90.0), true));
        assert!(!wants_burst(&none, Some(90.0), false));
        let mut zero = gpu(0, None);
        zero.mem = Some(MemInfo::default());
        assert_eq!(zero.peak_pct_full(), Some(0.0));
    }
}
