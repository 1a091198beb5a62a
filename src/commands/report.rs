//! `vramwatch report FILE [--svg OUT]`: a short summary of a recording —
//! duration, per-GPU peak and mean memory and utilisation, time spent
//! above each configured threshold, the processes that held the most
//! memory and when, the events — and optionally an SVG of memory over time
//! per GPU and per top process.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use plotters::prelude::*;

use crate::cli::{ReportArgs, SourceArgs};
use crate::commands::export::rfc3339;
use crate::config::{self, Level, Thresholds};
use crate::model::units::{GIB, bytes_short, duration_short};
use crate::model::{EventKind, Millis, Snapshot};
use crate::record::Recording;

/// Processes listed (and drawn) by peak memory.
const TOP: usize = 8;
/// Events listed one by one; the rest are counted.
const EVENTS_LISTED: usize = 20;
/// Points per series in the SVG (each bucket keeps its minimum and maximum,
/// so spikes survive).
const BUCKETS: usize = 1000;
/// Room above the highest line for the legend.
const HEADROOM: f64 = 1.5;

/// Min and max of a value in equal time buckets over the recording.
#[derive(Clone, Debug)]
struct Buckets {
    t0: Millis,
    span: Millis,
    min: Vec<f64>,
    max: Vec<f64>,
}

impl Buckets {
    fn new(t0: Millis, t1: Millis, n: usize) -> Buckets {
        Buckets {
            t0,
            span: (t1 - t0).max(1),
            min: vec![f64::NAN; n],
            max: vec![f64::NAN; n],
        }
    }

    fn add(&mut self, t: Millis, v: f64) {
        let n = self.min.len();
        let i = ((t.saturating_sub(self.t0) as u128 * n as u128 / self.span as u128) as usize)
            .min(n - 1);
        if self.min[i].is_nan() || v < self.min[i] {
            self.min[i] = v;
        }
        if self.max[i].is_nan() || v > self.max[i] {
            self.max[i] = v;
        }
    }

    /// Adds another series' buckets (same times).
    fn merge(&mut self, other: &Buckets) {
        for i in 0..self.min.len().min(other.min.len()) {
            if !other.min[i].is_nan() && (self.min[i].is_nan() || other.min[i] < self.min[i]) {
                self.min[i] = other.min[i];
            }
            if !other.max[i].is_nan() && (self.max[i].is_nan() || other.max[i] > self.max[i]) {
                self.max[i] = other.max[i];
            }
        }
    }

    /// (seconds since start, value) pairs: each bucket's min then max.
    fn points(&self, scale: f64) -> Vec<(f64, f64)> {
        let n = self.min.len();
        let mut out = Vec::with_capacity(2 * n);
        for i in 0..n {
            if self.min[i].is_nan() {
                continue;
            }
            let t = (i as f64 + 0.5) * self.span as f64 / n as f64 / 1000.0;
            out.push((t, self.min[i] * scale));
            if self.max[i] != self.min[i] {
                out.push((t, self.max[i] * scale));
            }
        }
        out
    }
}

/// Time a figure spent at or above a threshold's warn and crit levels, ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Above {
    warn: u64,
    crit: u64,
}

impl Above {
    fn add(&mut self, level: &Level, v: Option<f64>, dt: u64) {
        let Some(v) = v else { return };
        if v >= level.warn {
            self.warn += dt;
        }
        if v >= level.crit {
            self.crit += dt;
        }
    }
}

#[derive(Clone, Debug)]
struct GpuStats {
    index: u32,
    total: u64,
    peak: u64,
    peak_pct: f64,
    peak_at: Millis,
    used_sum: f64,
    used_n: u64,
    util_peak: Option<u32>,
    util_sum: f64,
    util_n: u64,
    mem: Above,
    temp: Above,
    power: Above,
    util: Above,
    series: Buckets,
}

#[derive(Clone, Debug)]
struct ProcStats {
    gpu: u32,
    pid: u32,
    peak: u64,
    peak_at: Millis,
    user: String,
    label: String,
    /// Processes (PIDs) merged into this one: the same command restarted.
    runs: usize,
    series: Buckets,
}

/// Everything the report says, from one pass over the snapshots.
#[derive(Debug)]
struct Summary {
    first: Millis,
    last: Millis,
    snapshots: usize,
    gpus: Vec<GpuStats>,
    procs: Vec<ProcStats>,
    events: Vec<crate::model::Event>,
}

impl Summary {
    fn new(first: Millis, last: Millis) -> Summary {
        Summary {
            first,
            last,
            snapshots: 0,
            gpus: Vec::new(),
            procs: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Adds snapshot `s`, which lasted `dt` ms (until the next one).
    fn add(
        &mut self,
        s: &Snapshot,
        dt: u64,
        th: &Thresholds,
        procs: &mut HashMap<(u32, u32, u64), ProcStats>,
    ) {
        self.snapshots += 1;
        self.events.extend(s.events.iter().cloned());
        for g in &s.gpus {
            let st = match self.gpus.iter_mut().position(|x| x.index == g.index) {
                Some(i) => &mut self.gpus[i],
                None => {
                    self.gpus.push(GpuStats {
                        index: g.index,
                        total: 0,
                        peak: 0,
                        peak_pct: 0.0,
                        peak_at: s.t_ms,
                        used_sum: 0.0,
                        used_n: 0,
                        util_peak: None,
                        util_sum: 0.0,
                        util_n: 0,
                        mem: Above::default(),
                        temp: Above::default(),
                        power: Above::default(),
                        util: Above::default(),
                        series: Buckets::new(self.first, self.last, BUCKETS),
                    });
                    self.gpus.last_mut().expect("just pushed")
                }
            };
            if let Some(m) = g.mem {
                // The fast lane's peak counts: it is what an allocation hit.
                let peak = g.mem_peak.unwrap_or(m.used).max(m.used);
                if peak > st.peak || st.used_n == 0 {
                    st.peak = peak;
                    st.peak_at = s.t_ms;
                    st.peak_pct = (peak + m.reserved) as f64 * 100.0 / m.total.max(1) as f64;
                }
                st.total = m.total;
                st.used_sum += m.used as f64;
                st.used_n += 1;
                st.series.add(s.t_ms, m.used as f64);
            }
            if let Some(u) = g.util_gpu {
                st.util_peak = Some(st.util_peak.map_or(u, |p| p.max(u)));
                st.util_sum += u as f64;
                st.util_n += 1;
            }
            st.mem.add(&th.memory, g.mem.map(|m| m.used_pct()), dt);
            st.temp.add(&th.temperature, g.temp_c.map(f64::from), dt);
            let power_pct = match (g.power_mw, g.power_limit_mw) {
                (Some(p), Some(l)) if l > 0 => Some(p as f64 * 100.0 / l as f64),
                _ => None,
            };
            st.power.add(&th.power, power_pct, dt);
            st.util.add(&th.utilization, g.util_gpu.map(f64::from), dt);
        }
        for p in &s.procs {
            let Some(mem) = p.mem_peak.or(p.mem) else {
                continue;
            };
            let e = procs
                .entry((p.gpu, p.pid, p.start_time))
                .or_insert_with(|| ProcStats {
                    gpu: p.gpu,
                    pid: p.pid,
                    peak: 0,
                    peak_at: s.t_ms,
                    user: String::new(),
                    label: String::new(),
                    runs: 1,
                    series: Buckets::new(self.first, self.last, BUCKETS),
                });
            if mem > e.peak {
                e.peak = mem;
                e.peak_at = s.t_ms;
            }
            e.user = p.user.as_deref().unwrap_or("?").to_owned();
            e.label = p.label().to_owned();
            e.series.add(s.t_ms, p.mem.unwrap_or(mem) as f64);
        }
    }

    /// Ranks the processes. Processes with the same command, user and GPU
    /// (a job restarted after each OOM) count as one, shown with the PID of
    /// its highest peak.
    fn finish(&mut self, procs: HashMap<(u32, u32, u64), ProcStats>) {
        let mut v: Vec<ProcStats> = procs.into_values().collect();
        v.sort_by(|a, b| {
            b.peak
                .cmp(&a.peak)
                .then(a.peak_at.cmp(&b.peak_at))
                .then(a.pid.cmp(&b.pid))
        });
        let mut jobs: Vec<ProcStats> = Vec::new();
        for p in v {
            match jobs
                .iter_mut()
                .find(|j| j.gpu == p.gpu && j.user == p.user && j.label == p.label)
            {
                Some(j) => {
                    j.runs += 1;
                    j.series.merge(&p.series);
                }
                None => jobs.push(p),
            }
        }
        jobs.truncate(TOP);
        self.procs = jobs;
        self.gpus.sort_by_key(|g| g.index);
    }
}

/// One pass over the recording.
fn collect(rec: &Recording, th: &Thresholds) -> Result<Summary> {
    let times = rec.times();
    let first = times.first().copied().unwrap_or(0);
    let last = times.last().copied().unwrap_or(first);
    let interval = rec.header().interval_ms.max(1);
    let mut sum = Summary::new(first, last);
    let mut procs = HashMap::new();
    for (i, s) in rec.iter().enumerate() {
        let s = s?;
        // A gap (the recorder was stopped) counts as two intervals at most.
        let dt = times
            .get(i + 1)
            .map_or(interval, |&n| n.saturating_sub(s.t_ms).min(2 * interval));
        sum.add(&s, dt, th, &mut procs);
    }
    sum.finish(procs);
    Ok(sum)
}

/// The time of day (UTC), with the date when the recording spans more
/// than one day.
fn clock(t: Millis, dated: bool) -> String {
    let s = rfc3339(t);
    let r = if dated { 5..19 } else { 11..19 };
    s.get(r).unwrap_or("?").replace('T', " ")
}

fn pct_of(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.0}%", part as f64 * 100.0 / whole as f64)
    }
}

fn above(ms: u64, span: u64) -> String {
    if ms == 0 {
        "-".into()
    } else {
        format!("{} ({})", duration_short(ms / 1000), pct_of(ms, span))
    }
}

fn level(l: &Level) -> (String, String) {
    (format!("{}", l.warn), format!("{}", l.crit))
}

fn text(rec: &Recording, sum: &Summary, th: &Thresholds) -> String {
    let h = rec.header();
    let sys = rec.system();
    let mut o = String::new();
    let span = sum.last.saturating_sub(sum.first) + h.interval_ms;
    let dated = rfc3339(sum.first).get(..10) != rfc3339(sum.last).get(..10);
    let at = if dated { 14 } else { 8 };
    let _ = writeln!(o, "Recording  {}", rec.path().display());
    let _ = writeln!(
        o,
        "Host       {} ({}), driver {}, CUDA {}; recorded by vramwatch {}",
        h.host,
        sys.source,
        sys.driver_version.as_deref().unwrap_or("N/A"),
        sys.cuda_version.as_deref().unwrap_or("N/A"),
        h.vramwatch_version
    );
    if sum.snapshots == 0 {
        let _ = writeln!(o, "Time       no snapshots");
        return o;
    }
    let _ = writeln!(
        o,
        "Time       {} to {} (UTC): {}, {} snapshots every {}",
        rfc3339(sum.first),
        rfc3339(sum.last),
        duration_short(span / 1000),
        sum.snapshots,
        humantime::format_duration(std::time::Duration::from_millis(h.interval_ms))
    );
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "GPU  NAME              MEMORY PEAK       {:>at$}    MEMORY MEAN   UTIL PEAK  UTIL MEAN",
        "AT"
    );
    for g in &sum.gpus {
        let name = sys
            .gpus
            .iter()
            .find(|d| d.index == g.index)
            .map_or("?", |d| d.name.as_str());
        let name: String = name.chars().take(16).collect();
        let mean = if g.used_n > 0 {
            g.used_sum / g.used_n as f64
        } else {
            0.0
        };
        let util_mean = (g.util_n > 0).then(|| g.util_sum / g.util_n as f64);
        let _ = writeln!(
            o,
            "{:>3}  {:<16}  {:>7} ({:>3.0}%)   {:>at$}  {:>7} ({})  {:>9}  {:>9}",
            g.index,
            name,
            bytes_short(g.peak),
            g.peak_pct,
            clock(g.peak_at, dated),
            bytes_short(mean as u64),
            pct_of(mean as u64, g.total),
            g.util_peak.map_or("N/A".into(), |u| format!("{u}%")),
            util_mean.map_or("N/A".into(), |u| format!("{u:.0}%")),
        );
    }
    let _ = writeln!(o);
    let (mw, mc) = level(&th.memory);
    let (tw, tc) = level(&th.temperature);
    let (pw, pc) = level(&th.power);
    let (uw, uc) = level(&th.utilization);
    let _ = writeln!(
        o,
        "Time at or above the thresholds (memory % of total, temperature °C, power % of limit, utilisation %):"
    );
    let heads = [
        format!("MEM≥{mw}%"),
        format!("MEM≥{mc}%"),
        format!("TEMP≥{tw}"),
        format!("TEMP≥{tc}"),
        format!("POWER≥{pw}%"),
        format!("POWER≥{pc}%"),
        format!("UTIL≥{uw}%"),
        format!("UTIL≥{uc}%"),
    ];
    let _ = write!(o, "GPU");
    for hd in &heads {
        let _ = write!(o, "  {hd:>13}");
    }
    let _ = writeln!(o);
    for g in &sum.gpus {
        let _ = write!(o, "{:>3}", g.index);
        for a in [g.mem, g.temp, g.power, g.util] {
            let _ = write!(
                o,
                "  {:>13}  {:>13}",
                above(a.warn, span),
                above(a.crit, span)
            );
        }
        let _ = writeln!(o);
    }
    let _ = writeln!(o);
    if sum.procs.is_empty() {
        let _ = writeln!(o, "No process used GPU memory.");
    } else {
        let _ = writeln!(o, "Top processes by peak memory:");
        let _ = writeln!(
            o,
            "   PEAK  {:<at$}  GPU      PID  USER          COMMAND",
            "AT"
        );
        for p in &sum.procs {
            let user: String = p.user.chars().take(12).collect();
            let label: String = p.label.chars().take(80).collect();
            let _ = writeln!(
                o,
                "{:>7}  {:>at$}  {:>3}  {:>7}  {:<12}  {}{}",
                bytes_short(p.peak),
                clock(p.peak_at, dated),
                p.gpu,
                p.pid,
                user,
                label,
                match p.runs {
                    1 => String::new(),
                    n => format!("  (ran {n} times: the peak run's PID)"),
                }
            );
        }
    }
    let _ = writeln!(o);
    if sum.events.is_empty() {
        let _ = writeln!(o, "No events.");
        return o;
    }
    let mut counts: Vec<(EventKind, usize)> = Vec::new();
    for e in &sum.events {
        match counts.iter_mut().find(|(k, _)| *k == e.kind) {
            Some((_, n)) => *n += 1,
            None => counts.push((e.kind, 1)),
        }
    }
    let summary: Vec<String> = counts
        .iter()
        .map(|(k, n)| format!("{n} {}", kind_name(*k)))
        .collect();
    let _ = writeln!(o, "Events ({}): {}", sum.events.len(), summary.join(", "));
    // Suspected OOMs first: they are why people open a recording.
    let mut listed: Vec<&crate::model::Event> = sum
        .events
        .iter()
        .filter(|e| e.kind == EventKind::SuspectedOom)
        .chain(
            sum.events
                .iter()
                .filter(|e| e.kind != EventKind::SuspectedOom),
        )
        .take(EVENTS_LISTED)
        .collect();
    listed.sort_by_key(|e| e.t_ms);
    for e in &listed {
        let _ = writeln!(o, "  {}  {}", clock(e.t_ms, dated), e.message);
    }
    if sum.events.len() > listed.len() {
        let _ = writeln!(
            o,
            "  ... and {} more (`jq 'select(.type == \"event\")' FILE` lists them all)",
            sum.events.len() - listed.len()
        );
    }
    o
}

fn kind_name(k: EventKind) -> &'static str {
    match k {
        EventKind::ProcessStarted => "process started",
        EventKind::ProcessExited => "process exited",
        EventKind::SuspectedOom => "suspected OOM",
        EventKind::ThresholdCrossed => "threshold crossed",
        EventKind::Alert => "alert",
        EventKind::GpuLost => "GPU lost",
        EventKind::Xid => "XID",
        EventKind::Note => "note",
    }
}

fn plot_err<E: std::fmt::Debug>(out: &Path) -> impl Fn(E) -> anyhow::Error + '_ {
    move |e| anyhow::anyhow!("drawing {}: {e:?}", out.display())
}

/// One chart of the SVG: named lines of GiB over time.
struct Panel {
    caption: String,
    /// Highest value any line reaches, GiB (the axis adds headroom).
    y_max: f64,
    legend_at: SeriesLabelPosition,
    lines: Vec<(String, Vec<(f64, f64)>)>,
}

/// The time axis both charts share.
struct TimeAxis {
    /// Seconds per axis unit.
    div: f64,
    max: f64,
    desc: String,
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: Panel,
    x: &TimeAxis,
    out: &Path,
) -> Result<()> {
    let err = plot_err(out);
    let mut chart = ChartBuilder::on(area)
        .caption(panel.caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x.max, 0f64..panel.y_max.max(0.001) * HEADROOM)
        .map_err(&err)?;
    chart
        .configure_mesh()
        .x_desc(x.desc.as_str())
        .y_desc("GiB")
        .draw()
        .map_err(&err)?;
    let any = !panel.lines.is_empty();
    for (i, (label, pts)) in panel.lines.into_iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts = pts.into_iter().map(|(t, v)| (t / x.div, v));
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(1)))
            .map_err(&err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
    }
    if any {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(panel.legend_at)
            .draw()
            .map_err(&err)?;
    }
    Ok(())
}

/// Two charts: memory used per GPU, and memory of the top processes.
fn svg(out: &Path, rec: &Recording, sum: &Summary) -> Result<()> {
    let span_s = (sum.last.saturating_sub(sum.first) as f64 / 1000.0).max(1.0);
    let (unit, div) = if span_s > 3.0 * 3600.0 {
        ("hours", 3600.0)
    } else if span_s > 180.0 {
        ("minutes", 60.0)
    } else {
        ("seconds", 1.0)
    };
    let x = TimeAxis {
        div,
        max: span_s / div,
        desc: format!("{unit} since {} UTC", rfc3339(sum.first)),
    };
    let gib = 1.0 / GIB as f64;
    let err = plot_err(out);
    let root = SVGBackend::new(out, (1200, 900)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let (top, bottom) = root.split_vertically(450);

    let gpus = Panel {
        caption: format!("GPU memory used: {}", rec.header().host),
        y_max: sum
            .gpus
            .iter()
            .map(|g| g.total.max(g.peak))
            .max()
            .unwrap_or(GIB) as f64
            * gib,
        legend_at: SeriesLabelPosition::UpperRight,
        lines: sum
            .gpus
            .iter()
            .map(|g| (format!("GPU {}", g.index), g.series.points(gib)))
            .collect(),
    };
    draw_panel(&top, gpus, &x, out)?;

    let procs = Panel {
        caption: format!("Top {} processes by peak memory", sum.procs.len()),
        y_max: sum.procs.iter().map(|p| p.peak).max().unwrap_or(GIB) as f64 * gib,
        legend_at: SeriesLabelPosition::UpperLeft,
        lines: sum
            .procs
            .iter()
            .map(|p| {
                let label: String = p.label.chars().take(40).collect();
                let name = match p.runs {
                    1 => format!("GPU {} PID {} {label}", p.gpu, p.pid),
                    n => format!("GPU {} {label} ({n} runs)", p.gpu),
                };
                (name, p.series.points(gib))
            })
            .collect(),
    };
    draw_panel(&bottom, procs, &x, out)?;
    root.present().map_err(&err)?;
    Ok(())
}

pub fn run(args: &ReportArgs, src: &SourceArgs) -> Result<()> {
    let cfg = config::load(src.config.as_deref())?;
    let rec = Recording::open(&args.file)?;
    for w in rec.warnings() {
        eprintln!("vramwatch: warning: {w}");
    }
    let sum = collect(&rec, &cfg.thresholds)?;
    let mut out = std::io::stdout().lock();
    out.write_all(text(&rec, &sum, &cfg.thresholds).as_bytes())?;
    out.flush()?;
    if let Some(out) = &args.svg {
        svg(out, &rec, &sum).with_context(|| format!("writing {}", out.display()))?;
        eprintln!("vramwatch: drew memory over time in {}", out.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{GpuSample, MemInfo, ProcSample};

    const T0: Millis = 1_764_000_000_000;

    fn snap(i: u64, used_gib: u64, temp: u32, proc_gib: u64) -> Snapshot {
        Snapshot {
            seq: i,
            t_ms: T0 + i * 1000,
            gpus: vec![GpuSample {
                index: 0,
                mem: Some(MemInfo {
                    used: used_gib * GIB,
                    reserved: 0,
                    free: (100 - used_gib) * GIB,
                    total: 100 * GIB,
                }),
                temp_c: Some(temp),
                util_gpu: Some(50),
                power_mw: Some(500_000),
                power_limit_mw: Some(1_000_000),
                ..Default::default()
            }],
            procs: vec![ProcSample {
                pid: 7,
                gpu: 0,
                mem: Some(proc_gib * GIB),
                command: Some("python train.py".into()),
                ..Default::default()
            }],
            events: Vec::new(),
        }
    }

    #[test]
    fn peaks_means_and_time_above_thresholds_come_from_the_samples() {
        let th = Thresholds::default();
        let snaps = [
            snap(0, 10, 40, 5),
            snap(1, 85, 85, 60),
            snap(2, 96, 91, 70),
            snap(3, 50, 40, 20),
        ];
        let mut sum = Summary::new(T0, T0 + 3000);
        let mut procs = HashMap::new();
        for s in &snaps {
            sum.add(s, 1000, &th, &mut procs);
        }
        sum.finish(procs);
        let g = &sum.gpus[0];
        assert_eq!(g.peak, 96 * GIB);
        assert_eq!(g.peak_at, T0 + 2000);
        assert_eq!(
            g.used_sum / g.used_n as f64,
            (10 + 85 + 96 + 50) as f64 / 4.0 * GIB as f64
        );
        // Memory ≥ 80 %: two samples; ≥ 95 %: one. Temperature ≥ 80: two, ≥ 90: one.
        assert_eq!(
            g.mem,
            Above {
                warn: 2000,
                crit: 1000
            }
        );
        assert_eq!(
            g.temp,
            Above {
                warn: 2000,
                crit: 1000
            }
        );
        // Power at 50 % of the limit, utilisation 50 %: never above.
        assert_eq!(g.power, Above::default());
        assert_eq!(g.util, Above::default());
        assert_eq!(sum.procs[0].peak, 70 * GIB);
        assert_eq!(sum.procs[0].peak_at, T0 + 2000);
    }

    #[test]
    fn buckets_keep_spikes() {
        let mut b = Buckets::new(0, 10_000, 10);
        for t in 0..10_000u64 {
            b.add(t, if t == 4_321 { 100.0 } else { 1.0 });
        }
        let pts = b.points(1.0);
        assert!(pts.iter().any(|&(_, v)| v == 100.0));
        assert!(pts.len() <= 20);
    }
}
