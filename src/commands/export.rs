//! `vramwatch export FILE --csv`: a recording as a flat CSV table for
//! spreadsheets: one row per GPU per snapshot, or with `--process PID` one
//! row per sample of that process. Memory is in MiB, power in W, energy in
//! J; an empty cell is a reading the GPU did not give.
//!
//! Each row also carries the analysis as the dashboard had it at that
//! moment (the recording is analysed snapshot by snapshot, nothing from
//! later counts): per GPU the growth rate, phase, the forecast's seconds to
//! full (central, earliest, latest), the at-risk share, the leaking
//! processes and the alerts raised then; per process its growth, phase and
//! leak flag.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::analysis::{AnalysisConfig, Analyzer};
use crate::cli::ExportArgs;
use crate::model::units::MIB;
use crate::model::{GpuSample, ProcSample};
use crate::pipeline::{Analyzed, analyse};
use crate::record::Recording;

#[derive(Serialize)]
struct GpuRow<'a> {
    time: &'a str,
    t_ms: u64,
    seq: u64,
    gpu: u32,
    state: &'static str,
    mem_used_mib: Option<f64>,
    mem_reserved_mib: Option<f64>,
    mem_free_mib: Option<f64>,
    mem_total_mib: Option<f64>,
    mem_used_pct: Option<f64>,
    mem_peak_mib: Option<f64>,
    unaccounted_mib: Option<f64>,
    processes: usize,
    util_gpu_pct: Option<u32>,
    util_mem_pct: Option<u32>,
    temp_c: Option<u32>,
    power_w: Option<f64>,
    power_limit_w: Option<f64>,
    sm_clock_mhz: Option<u32>,
    mem_clock_mhz: Option<u32>,
    fan_pct: Option<u32>,
    pstate: Option<u32>,
    pcie_rx_kbs: Option<u32>,
    pcie_tx_kbs: Option<u32>,
    energy_j: Option<f64>,
    ecc_volatile: Option<u64>,
    /// ms from the start of the sampling round to this GPU's read.
    lag_ms: u32,
    growth_bps: Option<f64>,
    phase: &'static str,
    full_in_s: Option<f64>,
    full_in_low_s: Option<f64>,
    full_in_high_s: Option<f64>,
    at_risk_pct: Option<f64>,
    leaking_processes: Option<u32>,
    /// Alerts raised at this snapshot, by kind, `;`-separated.
    alerts: String,
}

#[derive(Serialize)]
struct ProcRow<'a> {
    time: &'a str,
    t_ms: u64,
    seq: u64,
    gpu: u32,
    pid: u32,
    start_time: u64,
    kind: &'static str,
    mem_mib: Option<f64>,
    mem_peak_mib: Option<f64>,
    sm_util_pct: Option<u32>,
    mem_util_pct: Option<u32>,
    enc_util_pct: Option<u32>,
    dec_util_pct: Option<u32>,
    cpu_pct: Option<f32>,
    rss_mib: Option<f64>,
    user: Option<&'a str>,
    container: Option<&'a str>,
    name: Option<&'a str>,
    command: Option<&'a str>,
    growth_bps: Option<f64>,
    phase: &'static str,
    leak: Option<u8>,
}

fn mib(b: u64) -> f64 {
    b as f64 / MIB as f64
}

fn state(g: &GpuSample) -> &'static str {
    match g.state {
        crate::model::GpuState::Ok => "ok",
        crate::model::GpuState::Stale => "stale",
        crate::model::GpuState::Lost => "lost",
    }
}

/// Rounds a figure the analysis estimated to what it is worth.
fn est(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn gpu_row<'a>(time: &'a str, a: &Analyzed, g: &GpuSample) -> GpuRow<'a> {
    let s = &*a.snapshot;
    let ga = a.assessment.gpu(g.index);
    let age = |made: u64| s.t_ms.saturating_sub(made) as f64 / 1000.0;
    let f = ga.and_then(|x| x.forecast);
    GpuRow {
        time,
        t_ms: s.t_ms,
        seq: s.seq,
        gpu: g.index,
        state: state(g),
        mem_used_mib: g.mem.map(|m| mib(m.used)),
        mem_reserved_mib: g.mem.map(|m| mib(m.reserved)),
        mem_free_mib: g.mem.map(|m| mib(m.free)),
        mem_total_mib: g.mem.map(|m| mib(m.total)),
        mem_used_pct: g.mem.map(|m| (m.used_pct() * 100.0).round() / 100.0),
        mem_peak_mib: g.mem_peak.map(mib),
        unaccounted_mib: g.unaccounted(&s.procs).map(mib),
        processes: s.procs.iter().filter(|p| p.gpu == g.index).count(),
        util_gpu_pct: g.util_gpu,
        util_mem_pct: g.util_mem,
        temp_c: g.temp_c,
        power_w: g.power_mw.map(|p| p as f64 / 1000.0),
        power_limit_w: g.power_limit_mw.map(|p| p as f64 / 1000.0),
        sm_clock_mhz: g.sm_clock_mhz,
        mem_clock_mhz: g.mem_clock_mhz,
        fan_pct: g.fan_pct,
        pstate: g.pstate,
        pcie_rx_kbs: g.pcie_rx_kbs,
        pcie_tx_kbs: g.pcie_tx_kbs,
        energy_j: g.energy_mj.map(|e| e as f64 / 1000.0),
        ecc_volatile: g.ecc_volatile,
        lag_ms: g.lag_ms,
        growth_bps: ga.and_then(|x| x.rate).map(|r| r.bps.round()),
        phase: ga.map_or("", |x| x.phase.name()),
        full_in_s: f.map(|f| est((f.eta_s - age(f.made_ms)).max(0.0))),
        full_in_low_s: f.map(|f| est((f.low_s - age(f.made_ms)).max(0.0))),
        full_in_high_s: f.and_then(|f| f.high_s.map(|h| est((h - age(f.made_ms)).max(0.0)))),
        at_risk_pct: ga.and_then(|x| x.at_risk_pct).map(est),
        leaking_processes: ga.map(|x| x.leaking),
        alerts: a
            .alerts
            .iter()
            .filter(|x| x.gpu == Some(g.index))
            .map(|x| x.kind.name())
            .collect::<Vec<_>>()
            .join(";"),
    }
}

fn proc_row<'a>(time: &'a str, a: &Analyzed, p: &'a ProcSample) -> ProcRow<'a> {
    let s = &*a.snapshot;
    let pa = a.assessment.process(&p.id());
    ProcRow {
        time,
        t_ms: s.t_ms,
        seq: s.seq,
        gpu: p.gpu,
        pid: p.pid,
        start_time: p.start_time,
        kind: p.kind.letter(),
        mem_mib: p.mem.map(mib),
        mem_peak_mib: p.mem_peak.map(mib),
        sm_util_pct: p.sm_util,
        mem_util_pct: p.mem_util,
        enc_util_pct: p.enc_util,
        dec_util_pct: p.dec_util,
        cpu_pct: p.cpu_pct,
        rss_mib: p.rss.map(mib),
        user: p.user.as_deref(),
        container: p.container.as_deref(),
        name: p.name.as_deref(),
        command: p.command.as_deref(),
        growth_bps: pa.and_then(|x| x.rate).map(|r| r.bps.round()),
        phase: pa.map_or("", |x| x.phase.name()),
        leak: pa.map(|x| u8::from(x.leak.is_some())),
    }
}

/// `2026-11-20T10:00:01.500Z`.
pub fn rfc3339(t_ms: u64) -> String {
    humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_millis(t_ms))
        .to_string()
}

pub fn run(args: &ExportArgs) -> Result<()> {
    let rec = Recording::open(&args.file)?;
    for w in rec.warnings() {
        eprintln!("vramwatch: warning: {w}");
    }
    let file = args.file.display();
    if let Some(g) = args.gpu
        && !rec.system().gpus.iter().any(|d| d.index == g)
    {
        bail!(
            "--gpu {g}: {file} has GPU{} {}",
            if rec.system().gpus.len() == 1 {
                ""
            } else {
                "s"
            },
            gpu_list(&rec)
        );
    }
    if let Some(pid) = args.process
        && !rec
            .processes()
            .any(|p| p.pid == pid && args.gpu.is_none_or(|g| g == p.gpu))
    {
        bail!(
            "PID {pid} does not appear in {file}{}",
            args.gpu.map_or(String::new(), |g| format!(" on GPU {g}"))
        );
    }
    let out: Box<dyn Write> = match &args.output {
        Some(p) => Box::new(File::create(p).with_context(|| format!("creating {}", p.display()))?),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut csv = csv::Writer::from_writer(BufWriter::with_capacity(1 << 16, out));
    let rows = write_rows(&rec, args, &mut csv)?;
    csv.flush()
        .with_context(|| format!("writing {}", output_name(args.output.as_deref())))?;
    if let Some(p) = &args.output {
        eprintln!("vramwatch: wrote {rows} rows to {}", p.display());
    }
    Ok(())
}

fn write_rows<W: Write>(
    rec: &Recording,
    args: &ExportArgs,
    csv: &mut csv::Writer<W>,
) -> Result<u64> {
    let out = output_name(args.output.as_deref());
    let mut rows = 0u64;
    // The analysis as the dashboard would have had it, with the recording's
    // interval.
    let interval = std::time::Duration::from_millis(rec.header().interval_ms.max(100));
    let config = crate::config::Config::default().with_interval(Some(interval));
    let mut analyzer = Analyzer::new(&AnalysisConfig::from_config(&config));
    for s in rec.iter() {
        let a = analyse(&mut analyzer, std::sync::Arc::new(s?));
        let s = &*a.snapshot;
        let time = rfc3339(s.t_ms);
        let gpu_ok = |g: u32| args.gpu.is_none_or(|want| want == g);
        if let Some(pid) = args.process {
            for p in s.procs.iter().filter(|p| p.pid == pid && gpu_ok(p.gpu)) {
                csv.serialize(proc_row(&time, &a, p))
                    .map_err(csv_error)
                    .with_context(|| format!("writing {out}"))?;
                rows += 1;
            }
        } else {
            for g in s.gpus.iter().filter(|g| gpu_ok(g.index)) {
                csv.serialize(gpu_row(&time, &a, g))
                    .map_err(csv_error)
                    .with_context(|| format!("writing {out}"))?;
                rows += 1;
            }
        }
    }
    Ok(rows)
}

/// A CSV error, with an I/O error as itself (so a closed pipe, as in
/// `vramwatch export ... | head`, is recognised as one).
fn csv_error(e: csv::Error) -> anyhow::Error {
    if !e.is_io_error() {
        return e.into();
    }
    match e.into_kind() {
        csv::ErrorKind::Io(io) => io.into(),
        other => anyhow::anyhow!("{other:?}"),
    }
}

fn output_name(p: Option<&Path>) -> String {
    p.map_or_else(|| "standard output".into(), |p| p.display().to_string())
}

fn gpu_list(rec: &Recording) -> String {
    let idx: Vec<String> = rec
        .system()
        .gpus
        .iter()
        .map(|d| d.index.to_string())
        .collect();
    if idx.is_empty() {
        "none".into()
    } else {
        idx.join(", ")
    }
}
