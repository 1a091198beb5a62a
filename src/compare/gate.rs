//! The gate (`--fail-above` on one metric of every matched GPU and
//! process) and its one-line reason (docs/baseline.md, "The gate").

use crate::model::units::bytes_short;

use super::diff::{GpuDiff, ProcDiff, Row};
use super::{Metric, Threshold};

/// A figure over the threshold.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Over {
    /// "GPU 0", "process train.py (PID 7 on GPU 0)".
    pub(crate) what: String,
    pub(crate) old: f64,
    pub(crate) new: f64,
}

/// The outcome of `--fail-above`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Gate {
    pub(crate) metric: Metric,
    pub(crate) threshold: Threshold,
    pub(crate) passed: bool,
    /// One line: why it failed, or what came closest.
    pub(crate) reason: String,
    pub(crate) over: Vec<Over>,
    /// Figures compared.
    pub(crate) checked: usize,
}

/// Whether `new` exceeds `old` by more than `t` (exactly, for whole
/// numbers).
pub(crate) fn exceeds(old: f64, new: f64, t: &Threshold) -> bool {
    let whole = |v: f64| v.fract() == 0.0 && v.abs() < 9.0e15;
    match *t {
        Threshold::Percent { num, den, .. } if whole(old) && whole(new) => {
            let (o, n) = (old as i128, new as i128);
            (n - o) * 100 * i128::from(den) > o.abs() * i128::from(num)
        }
        Threshold::Percent { num, den, .. } => {
            (new - old) * 100.0 * den as f64 > old.abs() * num as f64
        }
        Threshold::Bytes(b) => new - old > b as f64,
    }
}

/// Checks `metric` of every matched GPU and process against `t`.
pub(crate) fn gate(gpus: &[GpuDiff], procs: &[ProcDiff], metric: Metric, t: &Threshold) -> Gate {
    let key = metric.key();
    let mut figures: Vec<(String, f64, f64)> = Vec::new();
    let value = |rows: &[Row]| {
        let r = rows.iter().find(|r| r.key == key)?;
        Some((r.old?, r.new?))
    };
    for g in gpus {
        if let Some((o, n)) = value(&g.rows) {
            figures.push((gpu_name(g), o, n));
        }
    }
    for p in procs {
        if let Some((o, n)) = value(&p.rows) {
            figures.push((proc_name(p), o, n));
        }
    }
    let over: Vec<Over> = figures
        .iter()
        .filter(|f| exceeds(f.1, f.2, t))
        .map(|(what, old, new)| Over {
            what: what.clone(),
            old: *old,
            new: *new,
        })
        .collect();
    let name = metric.name();
    let rise = |o: f64, n: f64| match t {
        Threshold::Percent { .. } if o != 0.0 => (n - o) / o.abs(),
        Threshold::Percent { .. } if n == o => 0.0,
        Threshold::Percent { .. } => f64::INFINITY * (n - o).signum(),
        Threshold::Bytes(_) => n - o,
    };
    let worst = |v: &mut dyn Iterator<Item = (&str, f64, f64)>| {
        v.max_by(|a, b| rise(a.1, a.2).total_cmp(&rise(b.1, b.2)))
            .map(|(w, o, n)| (w.to_owned(), o, n))
    };
    let describe = |(what, o, n): (String, f64, f64)| {
        let pct = if o != 0.0 {
            format!("{:+.1}%", (n - o) * 100.0 / o.abs())
        } else {
            "from 0".to_owned()
        };
        let (verb, by) = if n >= o {
            ("rose", n - o)
        } else {
            ("fell", o - n)
        };
        format!(
            "{name} of {what} {verb} {} ({pct}: {} → {})",
            bytes_short(by.round() as u64),
            bytes_short(o.max(0.0).round() as u64),
            bytes_short(n.max(0.0).round() as u64),
        )
    };
    let (passed, reason) = if figures.is_empty() {
        (
            false,
            format!(
                "--fail-above {t}: no GPU or process of the new recording matched one of the baseline's with a {name} to compare, so nothing could be checked"
            ),
        )
    } else if let Some(w) = worst(&mut over.iter().map(|o| (o.what.as_str(), o.old, o.new))) {
        let more = match over.len() {
            1 => String::new(),
            n => format!(" (and {} more over it)", n - 1),
        };
        let d = describe(w);
        (
            false,
            format!("{d}: more than --fail-above {t} allows{more}"),
        )
    } else {
        let w = worst(&mut figures.iter().map(|f| (f.0.as_str(), f.1, f.2)));
        let d = w.map(describe).unwrap_or_default();
        (
            true,
            format!(
                "{name} within --fail-above {t} for all {} compared; closest: {d}",
                figures.len()
            ),
        )
    };
    Gate {
        metric,
        threshold: t.clone(),
        passed,
        reason,
        over,
        checked: figures.len(),
    }
}

pub(crate) fn gpu_name(g: &GpuDiff) -> String {
    if g.new.index == g.old.index {
        format!("GPU {}", g.new.index)
    } else {
        format!("GPU {} (baseline GPU {})", g.new.index, g.old.index)
    }
}

pub(crate) fn proc_name(p: &ProcDiff) -> String {
    let prog = crate::sanitize::clean_capped(&p.new.program, 60);
    format!("process {prog} (PID {} on GPU {})", p.new.pid, p.new.gpu)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::parse_threshold;

    fn t(s: &str) -> Threshold {
        parse_threshold(s).unwrap()
    }

    #[test]
    fn the_gate_fails_only_strictly_above() {
        assert!(!exceeds(100.0, 105.0, &t("5%")));
        assert!(exceeds(100.0, 106.0, &t("5%")));
        assert!(!exceeds(100.0, 105.0, &t("5")));
        let mib = 1048576.0;
        assert!(!exceeds(100.0 * mib, 105.0 * mib, &t("5%")));
        assert!(exceeds(100.0 * mib, 105.0 * mib + 1.0, &t("5%")));
        assert!(!exceeds(1000.0, 1005.0, &t("0.5%")));
        assert!(exceeds(1000.0, 1006.0, &t("0.5%")));
        // 0.1 % is exact although 0.1 is not a binary fraction.
        assert!(!exceeds(1000.0, 1001.0, &t("0.1%")));
        assert!(!exceeds(100.0 * mib, 220.0 * mib, &t("120MiB")));
        assert!(exceeds(100.0 * mib, 220.0 * mib + 1.0, &t("120MiB")));
        // Fractions (means) compare as numbers.
        assert!(!exceeds(100.5, 105.0, &t("5%")));
        assert!(exceeds(100.0, 105.25, &t("5%")));
        // From nothing, any rise is over a percentage.
        assert!(exceeds(0.0, 1.0, &t("5%")));
        assert!(!exceeds(0.0, 0.0, &t("5%")));
    }
}
