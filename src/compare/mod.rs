//! `vramwatch report NEW --baseline OLD`: compares two recordings
//! (docs/baseline.md).
//!
//! Each recording is read once, as it streams by, on a thread of its own
//! (`stats`: per-GPU and per-process figures in bounded memory); the
//! processes and GPUs are matched (`matching`, `normalize`), the figures
//! diffed and the gate checked (`diff`), and the result written as a
//! table (`text`), JSON (`json`) and an SVG overlay (`svg`).

mod diff;
mod gate;
mod gpu_match;
mod json;
mod matching;
mod normalize;
mod progress;
mod series;
mod stats;
mod svg;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_corpus;
mod text;

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::cli::{Failure, Usage};
use crate::model::units::{GIB, KIB, MIB};
use crate::record::RecordError;

pub(crate) use diff::{GpuDiff, GpuRef, ProcDiff, ProcRef};
pub(crate) use gpu_match::GpuMatch;
use stats::RunStats;

/// Which figure `--fail-above` checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Metric {
    #[default]
    Peak,
    Mean,
    P95,
}

impl Metric {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Metric::Peak => "peak",
            Metric::Mean => "mean",
            Metric::P95 => "p95",
        }
    }

    /// `peak`, `mean` or `p95`.
    pub(crate) fn from_name(s: &str) -> Result<Metric, String> {
        match s {
            "peak" => Ok(Metric::Peak),
            "mean" => Ok(Metric::Mean),
            "p95" => Ok(Metric::P95),
            _ => Err(format!("--metric `{s}`: expected peak, mean or p95")),
        }
    }

    /// The row it reads.
    fn key(self) -> &'static str {
        match self {
            Metric::Peak => "peak_bytes",
            Metric::Mean => "mean_bytes",
            Metric::P95 => "p95_bytes",
        }
    }
}

/// Where the two runs' time axes start in the SVG.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Align {
    /// Each GPU's t=0 is its first snapshot with a process on it (else
    /// the first snapshot).
    #[default]
    Start,
    /// The clock: t=0 is the earlier of the two recordings' first
    /// snapshots.
    Wall,
}

impl Align {
    /// `start` or `wall`.
    pub(crate) fn from_name(s: &str) -> Result<Align, String> {
        match s {
            "start" => Ok(Align::Start),
            "wall" => Ok(Align::Wall),
            _ => Err(format!("--align `{s}`: expected start or wall")),
        }
    }
}

/// How much more the new run may use than the baseline before the gate
/// fails: `num / den` percent, or bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Threshold {
    Percent { num: u64, den: u64 },
    Bytes(u64),
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Threshold::Percent { num, den } => {
                let whole = num / den;
                let mut frac = num % den;
                write!(f, "{whole}")?;
                if frac > 0 {
                    write!(f, ".")?;
                    let mut d = den;
                    while frac > 0 && d > 1 {
                        d /= 10;
                        write!(f, "{}", frac / d)?;
                        frac %= d;
                    }
                }
                write!(f, "%")
            }
            Threshold::Bytes(b) if b % GIB == 0 => write!(f, "{}GiB", b / GIB),
            Threshold::Bytes(b) if b % MIB == 0 => write!(f, "{}MiB", b / MIB),
            Threshold::Bytes(b) if b % KIB == 0 => write!(f, "{}KiB", b / KIB),
            Threshold::Bytes(b) => write!(f, "{b}B"),
        }
    }
}

const THRESHOLD_FORMS: &str =
    "a percentage (5%, 0.5%, or 5 meaning 5%) or an amount of memory (120MiB, 1GiB, 1.5G, 512M)";

/// Parses `--fail-above`: `5%`, `0.5%`, `5` (percent), or an amount with a
/// binary unit `B`, `K`/`KiB`, `M`/`MiB`, `G`/`GiB`, `T`/`TiB` (case does
/// not matter; up to 6 decimals).
pub(crate) fn parse_threshold(s: &str) -> Result<Threshold, String> {
    let t = s.trim();
    let bad = |why: &str| format!("--fail-above `{s}`: {why}; expected {THRESHOLD_FORMS}");
    if t.starts_with('-') {
        return Err(bad("must not be negative"));
    }
    let t = t.strip_prefix('+').unwrap_or(t);
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = (&t[..end], t[end..].trim());
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits_ok = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() && frac.is_empty() || !digits_ok(int) || !digits_ok(frac) {
        return Err(bad("no number"));
    }
    if frac.len() > 6 || int.len() > 12 {
        return Err(bad("too many digits"));
    }
    let den = 10u64.pow(frac.len() as u32);
    let num = format!("{int}{frac}")
        .parse::<u64>()
        .map_err(|_| bad("no number"))?;
    let scale: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "%" => return Ok(Threshold::Percent { num, den }),
        "b" => 1,
        "k" | "kib" => KIB,
        "m" | "mib" => MIB,
        "g" | "gib" => GIB,
        "t" | "tib" => 1 << 40,
        "kb" | "mb" | "gb" | "tb" => {
            return Err(bad(&format!(
                "{unit} is ambiguous: use {}iB, a binary unit as vramwatch prints",
                &unit[..1].to_ascii_uppercase()
            )));
        }
        _ => return Err(bad(&format!("unknown unit `{unit}`"))),
    };
    let bytes = u128::from(num) * u128::from(scale) / u128::from(den);
    u64::try_from(bytes)
        .map(Threshold::Bytes)
        .map_err(|_| bad("too large"))
}

/// What `report NEW --baseline OLD` is asked to do.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CompareOptions {
    pub(crate) new: PathBuf,
    pub(crate) baseline: PathBuf,
    /// Draw the overlay here.
    pub(crate) svg: Option<PathBuf>,
    /// JSON on standard output instead of the table.
    pub(crate) json: bool,
    pub(crate) fail_above: Option<Threshold>,
    pub(crate) metric: Metric,
    pub(crate) align: Align,
    pub(crate) match_gpu: GpuMatch,
}

impl CompareOptions {
    /// NEW against OLD, everything else by default.
    pub(crate) fn new(new: PathBuf, baseline: PathBuf) -> CompareOptions {
        CompareOptions {
            new,
            baseline,
            svg: None,
            json: false,
            fail_above: None,
            metric: Metric::Peak,
            align: Align::Start,
            match_gpu: GpuMatch::Auto,
        }
    }
}

/// Everything the comparison says.
#[derive(Clone, Debug)]
pub(crate) struct Comparison {
    pub(crate) gpus: Vec<GpuDiff>,
    pub(crate) procs: Vec<ProcDiff>,
    /// Matched nothing: (new, baseline).
    pub(crate) gpus_only: (Vec<GpuRef>, Vec<GpuRef>),
    pub(crate) procs_only: (Vec<ProcRef>, Vec<ProcRef>),
    pub(crate) gate: Option<gate::Gate>,
    /// Matched processes ran on GPUs that were not compared with each
    /// other: (new GPU, baseline GPU).
    pub(crate) elsewhere: Vec<(u32, u32)>,
    /// The widest p95 histogram bucket used: the most a p95 is above the
    /// truth.
    pub(crate) p95_resolution: u64,
}

/// Matches and diffs two runs; checks the gate if one is asked for. An
/// error is a usage error (a `--match-gpu` GPU that is not there).
pub(crate) fn compare(
    new: &RunStats,
    old: &RunStats,
    opts: &CompareOptions,
) -> Result<Comparison, String> {
    use gpu_match::GpuKey;
    use matching::Ident;
    let ids = |r: &RunStats| r.procs.iter().map(Ident::of).collect::<Vec<_>>();
    let pp = matching::match_procs(&ids(new), &ids(old));
    let proc_gpus: Vec<(u32, u32)> = pp
        .iter()
        .map(|&(a, b, _)| (new.procs[a].id.gpu, old.procs[b].id.gpu))
        .collect();
    let keys = |r: &RunStats| r.gpus.iter().map(GpuKey::of).collect::<Vec<_>>();
    let gp = gpu_match::match_gpus(&keys(new), &keys(old), &opts.match_gpu, &proc_gpus)?;
    let gpus: Vec<GpuDiff> = gp
        .iter()
        .map(|&(a, b, basis)| diff::gpu_diff(&new.gpus[a], &old.gpus[b], basis))
        .collect();
    let procs: Vec<ProcDiff> = pp
        .iter()
        .map(|&(a, b, basis)| diff::proc_diff(&new.procs[a], &old.procs[b], basis))
        .collect();
    let mut elsewhere: Vec<(u32, u32)> = proc_gpus
        .iter()
        .copied()
        .filter(|&(x, y)| !gpus.iter().any(|g| g.new.index == x && g.old.index == y))
        .collect();
    elsewhere.sort_unstable();
    elsewhere.dedup();
    let gpus_only = (
        diff::gpu_refs(new, |i| !gp.iter().any(|m| m.0 == i)),
        diff::gpu_refs(old, |i| !gp.iter().any(|m| m.1 == i)),
    );
    let procs_only = (
        diff::proc_refs(new, |i| !pp.iter().any(|m| m.0 == i)),
        diff::proc_refs(old, |i| !pp.iter().any(|m| m.1 == i)),
    );
    let gate = opts
        .fail_above
        .as_ref()
        .map(|t| gate::gate(&gpus, &procs, opts.metric, t));
    let widths = new.gpus.iter().chain(&old.gpus).map(|g| g.mem.hist.width());
    let pwidths = new
        .procs
        .iter()
        .chain(&old.procs)
        .map(|p| p.mem.hist.width());
    Ok(Comparison {
        gpus,
        procs,
        gpus_only,
        procs_only,
        gate,
        elsewhere,
        p95_resolution: widths.chain(pwidths).max().unwrap_or(MIB),
    })
}

/// A recording read for a comparison.
pub(crate) struct Read {
    pub(crate) stats: RunStats,
    /// Warnings and damage, for standard error.
    pub(crate) warnings: Vec<String>,
    /// Damage: the comparison covers the rest, then exits 1.
    pub(crate) incomplete: Option<RecordError>,
}

/// Compares the recordings `opts` names: writes the table (or JSON) to
/// standard output and the SVG if asked. Errors: [`Usage`] for what the
/// user must fix (exit 2), [`Failure`] when the gate fails (exit 1, the
/// error's message is its one-line reason), and the reader's errors.
pub(crate) fn run(opts: &CompareOptions) -> Result<()> {
    run_to(opts, &mut std::io::stdout().lock())
}

/// [`run`], writing the table or JSON to `stdout`.
fn run_to(opts: &CompareOptions, stdout: &mut dyn std::io::Write) -> Result<()> {
    if let Some(path) = &opts.svg {
        crate::cli::not_an_input(path, &[&opts.new, &opts.baseline], "--svg")?;
    }
    let (new, old) = progress::read_both(&opts.new, &opts.baseline)?;
    for w in new.warnings.iter().chain(&old.warnings) {
        crate::tell!("vramwatch: warning: {w}");
    }
    let cmp = compare(&new.stats, &old.stats, opts).map_err(Usage)?;
    let out = if opts.json {
        json::json(&new.stats, &old.stats, &cmp)?
    } else {
        text::text(&new.stats, &old.stats, &cmp)
    };
    stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
        .context("writing the comparison")?;
    if let Some(path) = &opts.svg {
        let drawn = svg::svg(&new.stats, &old.stats, &cmp, opts.align);
        write_file(path, drawn.as_bytes())?;
        crate::tell!(
            "vramwatch: drew the two runs in {}",
            crate::sanitize::path(path)
        );
    }
    if let Some(g) = cmp.gate.as_ref().filter(|g| !g.passed) {
        return Err(Failure(g.reason.clone()).into());
    }
    match new.incomplete.or(old.incomplete) {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// Writes `bytes` to `path` through a temporary file beside it renamed
/// over it once complete (a FIFO, a device or a link is written in place:
/// a link is written through, not replaced).
fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let what = || format!("writing {}", crate::sanitize::path(path));
    let special = std::fs::metadata(path).is_ok_and(|m| !m.is_file())
        || std::fs::symlink_metadata(path).is_ok_and(|l| l.file_type().is_symlink());
    if special {
        return std::fs::write(path, bytes).with_context(what);
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let res = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res.with_context(what)
}
