//! `vramwatch report FILE [--svg OUT]`: a short summary of a recording —
//! duration, per-GPU peak and mean memory and utilisation, time spent
//! above each configured threshold, the processes that held the most
//! memory and when, the events — and optionally an SVG of memory over time
//! per GPU and per top process.
//!
//! One pass over the recording as it streams by (memory does not grow with
//! its length) makes a `Summary` (`summary`); the text (`text`) and the SVG
//! (`svg`) only format it. Damaged lines are skipped and counted: the
//! report covers the rest, and the command then fails with exit code 1.
//! The SVG goes to a temporary file renamed over OUT once complete.

mod summary;
mod svg;
mod text;

use std::io::Write as _;

use anyhow::{Context, Result};

use crate::cli::{ReportArgs, SourceArgs, Usage};
use crate::compare::{self, Align, CompareOptions, GpuMatch, Metric};
use crate::config;
use crate::record::Reader;

pub fn run(args: &ReportArgs, src: &SourceArgs) -> Result<()> {
    if let Some(old) = &args.baseline {
        return compare::run(&compare_options(args, old)?);
    }
    if let Some(path) = &args.svg {
        crate::cli::not_an_input(path, &[&args.file], "--svg")?;
    }
    let cfg = config::load(src.config.as_deref())?;
    let mut rec = Reader::open(&args.file)?;
    let sum = summary::collect(&mut rec, &cfg.thresholds)?;
    for w in rec.warnings() {
        crate::tell!("vramwatch: warning: {w}");
    }
    for w in rec.damage().lines_for_people() {
        crate::tell!("vramwatch: warning: {w}");
    }
    let mut out = std::io::stdout().lock();
    out.write_all(text::text(rec.name(), rec.header(), &sum, &cfg.thresholds).as_bytes())
        .context("writing the report")?;
    out.flush().context("writing the report")?;
    if let Some(path) = &args.svg {
        let file = crate::commands::export::Output::create(path)?;
        let shown = |p: &std::path::Path| crate::sanitize::path(p);
        // Errors name the file asked for, not the temporary one.
        svg::svg(file.path(), &rec, &sum).map_err(|e| {
            let msg = e.to_string().replace(&shown(file.path()), &shown(path));
            crate::cli::Failure(msg)
        })?;
        file.commit()?;
        crate::tell!(
            "vramwatch: drew memory over time in {}",
            crate::sanitize::path(path)
        );
    }
    match rec.incomplete("report") {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// `report FILE --baseline OLD …` as the comparison's options; a limit
/// or rule that does not parse is a usage error.
fn compare_options(args: &ReportArgs, old: &std::path::Path) -> Result<CompareOptions> {
    let mut o = CompareOptions::new(args.file.clone(), old.to_path_buf());
    o.svg = args.svg.clone();
    o.json = args.json;
    o.fail_above = args
        .fail_above
        .as_deref()
        .map(compare::parse_threshold)
        .transpose()
        .map_err(Usage)?;
    o.metric = Metric::from_name(&args.metric).map_err(Usage)?;
    o.align = Align::from_name(&args.align).map_err(Usage)?;
    o.match_gpu = GpuMatch::parse(&args.match_gpu).map_err(Usage)?;
    Ok(o)
}
