//! `vramwatch export FILE --csv`: a recording as a flat CSV table for
//! spreadsheets and data tools: one row per GPU per snapshot, or with
//! `--processes` one row per process per snapshot (a long table; `--process
//! PID` keeps one process's rows). Every memory figure is there twice: in
//! MiB (`*_mib`, a float for reading) and in bytes (`*_bytes`, the exact
//! integer). Power is in W, energy in J; an empty cell is a reading the GPU
//! did not give. A process's `kind` is spelled as in the recording and the
//! snapshot JSON: `compute`, `graphics` or `both`.
//!
//! Each row also carries the analysis as the dashboard had it at that
//! moment (the recording is analysed snapshot by snapshot, nothing from
//! later counts): per GPU the growth rate, phase, the forecast's seconds to
//! full (central, earliest, latest), the at-risk share, the leaking
//! processes and the alerts raised then; per process its growth, phase and
//! leak flag.
//!
//! The recording is streamed (memory does not grow with it); damaged lines
//! are skipped and counted, and then the command fails with exit code 1
//! after writing what could be read. Text from the recording is cleaned
//! of control characters, and a cell a spreadsheet would take for a
//! formula (`=`, `+`, `-`, `@` first) gets a `'` in front. With `-o` the
//! CSV goes to a temporary file beside the target, moved into place once
//! complete: a failure leaves no partial file, and an existing file is
//! replaced only with `--force`.

use std::borrow::Cow;
use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::analysis::{AnalysisConfig, Analyzer};
use crate::cli::ExportArgs;
use crate::model::units::MIB;
use crate::model::{GpuSample, ProcKind, ProcSample};
use crate::pipeline::{Analyzed, analyse};
use crate::record::{Reader, RecordError};

#[derive(Default, Serialize)]
struct GpuRow<'a> {
    time: &'a str,
    t_ms: u64,
    seq: u64,
    gpu: u32,
    state: &'static str,
    mem_used_mib: Option<f64>,
    mem_used_bytes: Option<u64>,
    mem_reserved_mib: Option<f64>,
    mem_reserved_bytes: Option<u64>,
    mem_free_mib: Option<f64>,
    mem_free_bytes: Option<u64>,
    mem_total_mib: Option<f64>,
    mem_total_bytes: Option<u64>,
    mem_used_pct: Option<f64>,
    /// The highest `used` of the fast lane's reads since the snapshot
    /// before.
    mem_peak_mib: Option<f64>,
    mem_peak_bytes: Option<u64>,
    unaccounted_mib: Option<f64>,
    unaccounted_bytes: Option<u64>,
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

#[derive(Default, Serialize)]
struct ProcRow<'a> {
    time: &'a str,
    t_ms: u64,
    seq: u64,
    gpu: u32,
    pid: u32,
    start_time: u64,
    /// `compute`, `graphics` or `both`, as the recording spells it.
    kind: ProcKind,
    mem_mib: Option<f64>,
    mem_bytes: Option<u64>,
    mem_peak_mib: Option<f64>,
    mem_peak_bytes: Option<u64>,
    sm_util_pct: Option<u32>,
    mem_util_pct: Option<u32>,
    enc_util_pct: Option<u32>,
    dec_util_pct: Option<u32>,
    cpu_pct: Option<f32>,
    rss_mib: Option<f64>,
    rss_bytes: Option<u64>,
    user: Option<Cow<'a, str>>,
    container: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    command: Option<Cow<'a, str>>,
    growth_bps: Option<f64>,
    phase: &'static str,
    /// 1 while the analysis flags the process as leaking, else 0.
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
    let unaccounted = unaccounted(g, &s.procs);
    GpuRow {
        time,
        t_ms: s.t_ms,
        seq: s.seq,
        gpu: g.index,
        state: state(g),
        mem_used_mib: g.mem.map(|m| mib(m.used)),
        mem_used_bytes: g.mem.map(|m| m.used),
        mem_reserved_mib: g.mem.map(|m| mib(m.reserved)),
        mem_reserved_bytes: g.mem.map(|m| m.reserved),
        mem_free_mib: g.mem.map(|m| mib(m.free)),
        mem_free_bytes: g.mem.map(|m| m.free),
        mem_total_mib: g.mem.map(|m| mib(m.total)),
        mem_total_bytes: g.mem.map(|m| m.total),
        mem_used_pct: g.mem.map(|m| (m.used_pct() * 100.0).round() / 100.0),
        mem_peak_mib: g.mem_peak.map(mib),
        mem_peak_bytes: g.mem_peak,
        unaccounted_mib: unaccounted.map(mib),
        unaccounted_bytes: unaccounted,
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
        kind: p.kind,
        mem_mib: p.mem.map(mib),
        mem_bytes: p.mem,
        mem_peak_mib: p.mem_peak.map(mib),
        mem_peak_bytes: p.mem_peak,
        sm_util_pct: p.sm_util,
        mem_util_pct: p.mem_util,
        enc_util_pct: p.enc_util,
        dec_util_pct: p.dec_util,
        cpu_pct: p.cpu_pct,
        rss_mib: p.rss.map(mib),
        rss_bytes: p.rss,
        user: p.user.as_deref().map(cell),
        container: p.container.as_deref().map(cell),
        name: p.name.as_deref().map(cell),
        command: p.command.as_deref().map(cell),
        growth_bps: pa.and_then(|x| x.rate).map(|r| r.bps.round()),
        phase: pa.map_or("", |x| x.phase.name()),
        leak: pa.map(|x| u8::from(x.leak.is_some())),
    }
}

/// Text from a recording as a CSV cell: control characters removed, and a
/// `'` before what a spreadsheet would run as a formula.
fn cell(s: &str) -> Cow<'_, str> {
    let formula = |t: &str| {
        t.starts_with(['\t', '\r']) || t.trim_start().starts_with(['=', '+', '-', '@', '\u{FF1D}'])
    };
    let clean = if s.chars().any(char::is_control) {
        Cow::Owned(crate::sanitize::clean(s))
    } else {
        Cow::Borrowed(s)
    };
    if formula(s) || formula(&clean) {
        Cow::Owned(format!("'{clean}"))
    } else {
        clean
    }
}

/// Memory no listed process accounts for (a saturating sum: figures from
/// a file may be anything).
fn unaccounted(g: &GpuSample, procs: &[ProcSample]) -> Option<u64> {
    let used = g.mem?.used;
    let sum = procs
        .iter()
        .filter(|p| p.gpu == g.index)
        .filter_map(|p| p.mem)
        .fold(0u64, u64::saturating_add);
    Some(used.saturating_sub(sum))
}

/// `2026-11-20T10:00:01.500Z` (a time past the year 9999, which only a
/// damaged file holds, as milliseconds).
pub fn rfc3339(t_ms: u64) -> String {
    crate::record::when(t_ms)
}

/// The sampling interval a recording says, as the analysis may use it.
pub(crate) fn interval_of(ms: u64) -> std::time::Duration {
    std::time::Duration::from_millis(ms.clamp(100, 3_600_000))
}

pub fn run(args: &ExportArgs) -> Result<()> {
    let mut rec = Reader::open(&args.file)?;
    let file = rec.name().to_owned();
    let system = rec.header().system.clone();
    if let Some(g) = args.gpu
        && !system.gpus.iter().any(|d| d.index == g)
    {
        let idx: Vec<String> = system.gpus.iter().map(|d| d.index.to_string()).collect();
        bail!(
            "--gpu {g}: {file} has GPU{} {}",
            if idx.len() == 1 { "" } else { "s" },
            if idx.is_empty() {
                "none".into()
            } else {
                idx.join(", ")
            }
        );
    }
    let rows = match &args.output {
        Some(p) => {
            crate::cli::not_an_input(p, &[&args.file], "-o")?;
            let mut out = Output::create_for(p, args.force)?;
            let rows = write_rows(&mut rec, args, out.writer()?)?;
            if rows > 0 || args.process.is_none() {
                out.commit()?;
            }
            rows
        }
        None => write_rows(&mut rec, args, std::io::stdout().lock())?,
    };
    for w in rec.warnings() {
        crate::tell!("vramwatch: warning: {w}");
    }
    for w in rec.damage().lines_for_people() {
        crate::tell!("vramwatch: warning: {w}");
    }
    if let Some(pid) = args.process
        && rows == 0
    {
        bail!(
            "PID {pid} does not appear in {file}{}",
            args.gpu.map_or(String::new(), |g| format!(" on GPU {g}"))
        );
    }
    if let Some(p) = &args.output {
        crate::tell!(
            "vramwatch: wrote {rows} rows to {}",
            crate::sanitize::path(p)
        );
    }
    match rec.incomplete("CSV") {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// Writes the rows of every snapshot; an error reading the recording or
/// writing the output stops it.
fn write_rows<W: Write>(rec: &mut Reader, args: &ExportArgs, out: W) -> Result<u64> {
    let name = output_name(args.output.as_deref());
    let mut csv = csv::Writer::from_writer(BufWriter::with_capacity(1 << 16, out));
    let mut rows = 0u64;
    // The analysis as the dashboard would have had it, with the recording's
    // interval.
    let interval = interval_of(rec.header().interval_ms);
    let config = crate::config::Config::default().with_interval(Some(interval));
    let mut analyzer = Analyzer::new(&AnalysisConfig::from_config(&config));
    let gpu_ok = |g: u32| args.gpu.is_none_or(|want| want == g);
    let by_process = args.processes || args.process.is_some();
    for s in rec.by_ref() {
        let a = analyse(&mut analyzer, std::sync::Arc::new(s?));
        let s = &*a.snapshot;
        let time = rfc3339(s.t_ms);
        if by_process {
            let pid_ok = |p: u32| args.process.is_none_or(|want| want == p);
            for p in s.procs.iter().filter(|p| pid_ok(p.pid) && gpu_ok(p.gpu)) {
                csv.serialize(proc_row(&time, &a, p))
                    .map_err(csv_error)
                    .with_context(|| format!("writing {name}"))?;
                rows += 1;
            }
        } else {
            for g in s.gpus.iter().filter(|g| gpu_ok(g.index)) {
                csv.serialize(gpu_row(&time, &a, g))
                    .map_err(csv_error)
                    .with_context(|| format!("writing {name}"))?;
                rows += 1;
            }
        }
    }
    if rows == 0 && args.process.is_none() {
        // No row: the header alone, so that the table still has its
        // columns (a data tool refuses an empty file).
        let head = if by_process {
            header_of(&ProcRow::default())
        } else {
            header_of(&GpuRow::default())
        };
        csv.write_record(&head)
            .map_err(csv_error)
            .with_context(|| format!("writing {name}"))?;
    }
    csv.flush().with_context(|| format!("writing {name}"))?;
    Ok(rows)
}

/// The column names of a CSV of `T` rows.
fn header_of<T: Serialize>(row: &T) -> Vec<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Serialising plain data into memory cannot fail.
    let _ = w.serialize(row);
    let text = w.into_inner().unwrap_or_default();
    let mut r = csv::Reader::from_reader(&text[..]);
    r.headers()
        .map(|h| h.iter().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// A CSV error, with an I/O error as itself (so a closed pipe, as in
/// `vramwatch export ... | head`, is recognised as one).
fn csv_error(e: csv::Error) -> anyhow::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(io) => io.into(),
        csv::ErrorKind::Serialize(msg) => anyhow::anyhow!("{msg}"),
        _ => anyhow::anyhow!("the CSV writer failed"),
    }
}

fn output_name(p: Option<&Path>) -> String {
    p.map_or_else(|| "standard output".into(), crate::sanitize::path)
}

/// An output file: a temporary file beside it until complete, then
/// renamed over it; removed if not completed. A FIFO, a device or a link
/// (`-o /dev/stdout`) is written in place.
pub(crate) struct Output {
    path: PathBuf,
    temp: Option<PathBuf>,
    file: Option<File>,
    /// Whether an existing file may be replaced.
    overwrite: bool,
}

impl Output {
    /// An output that replaces an existing file.
    pub(crate) fn create(path: &Path) -> Result<Output> {
        Output::create_for(path, true)
    }

    /// An output that replaces an existing regular file only when
    /// `overwrite` (else an error saying to pass --force, before anything
    /// is read, and again when moving the file into place if one appeared
    /// meanwhile).
    pub(crate) fn create_for(path: &Path, overwrite: bool) -> Result<Output> {
        let name = output_name(Some(path));
        // A link (`/dev/stdout` -> `/proc/self/fd/1` -> a file), even one
        // whose target is not there yet, is written through, not replaced
        // by a file of its own; so are a FIFO and a device.
        let link = fs::symlink_metadata(path).is_ok_and(|l| l.file_type().is_symlink());
        let meta = fs::metadata(path).ok();
        if let Some(m) = &meta {
            if m.is_dir() {
                bail!("-o {name}: is a directory; give a file name");
            }
            if m.is_file() && !overwrite {
                return Err(RecordError::Exists { path: name }.into());
            }
        }
        let file_or_none = meta.as_ref().is_none_or(|m| m.is_file());
        if link || !file_or_none {
            let file = OpenOptions::new()
                .write(true)
                .create(link)
                .truncate(file_or_none)
                .open(path)
                .with_context(|| format!("opening {name}"))?;
            return Ok(Output {
                path: path.to_owned(),
                temp: None,
                file: Some(file),
                overwrite,
            });
        }
        let Some(base) = path.file_name() else {
            bail!("-o {name}: give a file name");
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
            _ => PathBuf::from("."),
        };
        let mut last = None;
        for n in 0..100 {
            let temp = dir.join(format!(
                ".{}.{}.{n}.tmp",
                base.to_string_lossy(),
                std::process::id()
            ));
            match OpenOptions::new().write(true).create_new(true).open(&temp) {
                Ok(file) => {
                    return Ok(Output {
                        path: path.to_owned(),
                        temp: Some(temp),
                        file: Some(file),
                        overwrite,
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!("creating a temporary file beside {name} to write it")
                    });
                }
            }
        }
        let e = last.unwrap_or_else(|| std::io::Error::other("no name free"));
        Err(e).with_context(|| format!("creating a temporary file beside {name} to write it"))
    }

    /// Where to write: the temporary file, or the target when written in
    /// place.
    pub(crate) fn path(&self) -> &Path {
        self.temp.as_deref().unwrap_or(&self.path)
    }

    fn writer(&mut self) -> Result<&mut File> {
        self.file.as_mut().context("the output file is closed")
    }

    /// Puts the complete file in place.
    pub(crate) fn commit(mut self) -> Result<()> {
        let name = output_name(Some(&self.path));
        if let Some(f) = self.file.take() {
            // A pipe or a device cannot be synced (EINVAL): only files.
            if f.metadata().is_ok_and(|m| m.is_file()) {
                f.sync_all().with_context(|| format!("writing {name}"))?;
            }
        }
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        let placed = if self.overwrite {
            fs::rename(&temp, &self.path)
        } else {
            place_new(&temp, &self.path)
        };
        if let Err(e) = placed {
            let _ = fs::remove_file(&temp);
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                return Err(RecordError::Exists { path: name }.into());
            }
            return Err(e).with_context(|| format!("writing {name}"));
        }
        Ok(())
    }
}

/// Moves `temp` to `path` unless `path` exists (`AlreadyExists` then): a
/// hard link fails rather than replace a file; where links are not
/// supported, a check just before the rename.
fn place_new(temp: &Path, path: &Path) -> std::io::Result<()> {
    match fs::hard_link(temp, path) {
        Ok(()) => fs::remove_file(temp),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(e),
        Err(_) if fs::symlink_metadata(path).is_ok() => {
            Err(std::io::Error::from(std::io::ErrorKind::AlreadyExists))
        }
        Err(_) => fs::rename(temp, path),
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = fs::remove_file(temp);
        }
    }
}
