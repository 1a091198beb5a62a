//! Reads the two recordings at once, a thread each, with a progress bar on
//! standard error when it is a terminal and the files are large.

use std::io::IsTerminal as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::Usage;
use crate::model::units::MIB;
use crate::record::Reader;

use super::Read;
use super::stats::Collector;

/// Files smaller than this together read without a bar.
const BAR_FROM: u64 = 16 * MIB;

/// Reads `path` to the end; `done` follows the bytes read.
fn read(path: &Path, done: &AtomicU64) -> Result<Read> {
    let mut rec = Reader::open(path)?;
    let mut c = Collector::new(rec.name(), rec.header());
    let mut n = 0u64;
    while let Some(s) = rec.next() {
        c.add(&s?);
        n += 1;
        if n.is_multiple_of(64) {
            done.store(rec.stats().file_bytes, Ordering::Relaxed);
        }
    }
    done.store(rec.stats().file_bytes, Ordering::Relaxed);
    let stats = c.finish();
    if stats.snapshots == 0 {
        return Err(Usage(format!(
            "{}: no snapshots in it, nothing to compare (an empty recording, or one cut off before its first snapshot)",
            rec.name()
        ))
        .into());
    }
    let mut warnings: Vec<String> = rec.warnings().to_vec();
    warnings.extend(rec.damage().lines_for_people());
    if stats.untracked > 0 {
        warnings.push(format!(
            "{}: more than {} processes: {} more were not compared",
            rec.name(),
            super::stats::MAX_PROCS,
            stats.untracked
        ));
    }
    Ok(Read {
        stats,
        warnings,
        incomplete: rec.incomplete("comparison"),
    })
}

/// Reads the new recording and the baseline, each on its own thread.
pub(super) fn read_both(new: &Path, old: &Path) -> Result<(Read, Read)> {
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let total = size(new) + size(old);
    let bar = (std::io::stderr().is_terminal() && total >= BAR_FROM).then(|| bar(total));
    let (a, b) = (AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|sc| {
        let hn = std::thread::Builder::new()
            .name("vw-read-new".into())
            .spawn_scoped(sc, || read(new, &a))?;
        let ho = std::thread::Builder::new()
            .name("vw-read-old".into())
            .spawn_scoped(sc, || read(old, &b))?;
        if let Some(bar) = &bar {
            while !(hn.is_finished() && ho.is_finished()) {
                bar.set_position(a.load(Ordering::Relaxed) + b.load(Ordering::Relaxed));
                std::thread::sleep(Duration::from_millis(100));
            }
            bar.finish_and_clear();
        }
        let join = |h: std::thread::ScopedJoinHandle<'_, Result<Read>>| {
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
        };
        let rn = join(hn);
        let ro = join(ho);
        Ok((rn?, ro?))
    })
}

const TEMPLATE: &str =
    "reading recordings [{bar:30}] {percent:>3}%  {binary_bytes} of {binary_total_bytes}";

/// `reading recordings [=======>      ]  45%  12.3 MiB of 27.1 MiB` on
/// standard error, redrawn at most 10 times a second.
fn bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(10));
    // The template is a constant: it parses.
    if let Ok(style) = ProgressStyle::with_template(TEMPLATE) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_s_template_parses_and_the_bar_counts_bytes() {
        assert!(ProgressStyle::with_template(TEMPLATE).is_ok());
        let b = bar(100 * MIB);
        b.set_position(50 * MIB);
        assert_eq!(b.length(), Some(100 * MIB));
        assert_eq!(b.position(), 50 * MIB);
        b.finish_and_clear();
    }
}
