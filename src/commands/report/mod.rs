//! `vramwatch report FILE [--svg OUT]`: a short summary of a recording —
//! duration, per-GPU peak and mean memory and utilisation, time spent
//! above each configured threshold, the processes that held the most
//! memory and when, the events — and optionally an SVG of memory over time
//! per GPU and per top process.
//!
//! One pass over the recording makes a `Summary` (`summary`); the text
//! (`text`) and the SVG (`svg`) only format it.

mod summary;
mod svg;
mod text;

use std::io::Write as _;

use anyhow::{Context, Result};

use crate::cli::{ReportArgs, SourceArgs};
use crate::config;
use crate::record::Recording;

pub fn run(args: &ReportArgs, src: &SourceArgs) -> Result<()> {
    let cfg = config::load(src.config.as_deref())?;
    let rec = Recording::open(&args.file)?;
    for w in rec.warnings() {
        eprintln!("vramwatch: warning: {w}");
    }
    let sum = summary::collect(&rec, &cfg.thresholds)?;
    let mut out = std::io::stdout().lock();
    out.write_all(text::text(&rec, &sum, &cfg.thresholds).as_bytes())?;
    out.flush()?;
    if let Some(out) = &args.svg {
        svg::svg(out, &rec, &sum).with_context(|| format!("writing {}", out.display()))?;
        eprintln!("vramwatch: drew memory over time in {}", out.display());
    }
    Ok(())
}
