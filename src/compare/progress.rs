//! Reads the two recordings at once, a thread each, with a progress bar on
//! standard error when it is a terminal and the files are large.

use std::io::{IsTerminal as _, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Result;

use crate::cli::Usage;
use crate::model::units::MIB;
use crate::record::Reader;

use super::Read;
use super::stats::Collector;

/// Files smaller than this together read without a bar.
const BAR_FROM: u64 = 16 * MIB;
const BAR_WIDTH: usize = 30;

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
    let bar = std::io::stderr().is_terminal() && total >= BAR_FROM;
    let (a, b) = (AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|sc| {
        let hn = std::thread::Builder::new()
            .name("vw-read-new".into())
            .spawn_scoped(sc, || read(new, &a))?;
        let ho = std::thread::Builder::new()
            .name("vw-read-old".into())
            .spawn_scoped(sc, || read(old, &b))?;
        if bar {
            while !(hn.is_finished() && ho.is_finished()) {
                let done = a.load(Ordering::Relaxed) + b.load(Ordering::Relaxed);
                draw(done, total);
                std::thread::sleep(Duration::from_millis(100));
            }
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[2K");
            let _ = e.flush();
        }
        let join = |h: std::thread::ScopedJoinHandle<'_, Result<Read>>| {
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
        };
        let rn = join(hn);
        let ro = join(ho);
        Ok((rn?, ro?))
    })
}

/// `reading recordings [=======>      ]  45%  12.3 of 27.1 MiB`
fn bar_line(done: u64, total: u64) -> String {
    let frac = (done as f64 / total.max(1) as f64).clamp(0.0, 1.0);
    let filled = (frac * BAR_WIDTH as f64) as usize;
    let mut bar = "=".repeat(filled);
    if filled < BAR_WIDTH {
        bar.push('>');
    }
    format!(
        "reading recordings [{bar:<BAR_WIDTH$}] {:>3.0}%  {:.1} of {:.1} MiB",
        frac * 100.0,
        done as f64 / MIB as f64,
        total as f64 / MIB as f64
    )
}

fn draw(done: u64, total: u64) {
    let mut e = std::io::stderr().lock();
    let _ = write!(e, "\r{}", bar_line(done, total));
    let _ = e.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_fills_with_the_bytes_read() {
        assert_eq!(
            bar_line(0, 100 * MIB),
            "reading recordings [>                             ]   0%  0.0 of 100.0 MiB"
        );
        let half = bar_line(50 * MIB, 100 * MIB);
        assert!(
            half.contains("[===============>              ]  50%"),
            "{half}"
        );
        assert!(bar_line(100 * MIB, 100 * MIB).contains(&format!("[{}] 100%", "=".repeat(30))));
    }
}
