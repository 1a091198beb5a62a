//! The figures of a GPU as text, each graded and marked by its level:
//! memory, utilisation, temperature and power, and the trend and outlook
//! of its memory in words.

use ratatui::text::Span;

use crate::app::{App, GpuInsight};
use crate::config::Severity;
use crate::model::units::bytes_short;
use crate::model::{GpuSample, MemInfo};
use crate::theme::Theme;

/// Memory nobody accounts for on GPU `index` at `slot`.
pub fn unaccounted(app: &App, index: usize, slot: u64, g: &GpuSample) -> Option<u64> {
    let used = g.mem?.used;
    let sum: u64 = app
        .history()
        .processes()
        .filter(|s| s.id.gpu as usize == index)
        .filter_map(|s| s.at(slot).and_then(|p| p.mem))
        .sum();
    Some(used.saturating_sub(sum))
}

/// Memory % in use (used + reserved) and its severity.
pub fn memory_level(app: &App, g: &GpuSample) -> Option<(f64, Severity)> {
    let pct = g.mem?.used_pct();
    Some((pct, app.config().thresholds.memory.grade(pct)))
}

fn power_level(app: &App, g: &GpuSample) -> Option<(f64, Severity)> {
    let (p, l) = (g.power_mw?, g.power_limit_mw?);
    let pct = p as f64 * 100.0 / l.max(1) as f64;
    Some((pct, app.config().thresholds.power.grade(pct)))
}

/// A value with its severity: the text, then a one-cell mark (blank when
/// normal, so a change of level moves nothing: the value keeps its place
/// and the space before it, `79.6G  96%‼` as `79.6G  86% `), as the
/// fleet view marks its figures. The caller puts the space before it.
fn value(text: String, sev: Severity, t: &Theme) -> Vec<Span<'static>> {
    let mark = match Theme::mark(sev) {
        "" => " ",
        m => m,
    };
    vec![
        Span::styled(text, t.level(sev)),
        Span::styled(mark.to_string(), t.level(sev)),
    ]
}

/// "used{sep}total" at fixed widths (a changing figure does not move its
/// neighbours), then the graded percentage.
pub(super) fn used_of_total(app: &App, g: &GpuSample, m: MemInfo, sep: &str) -> Vec<Span<'static>> {
    let (pct, sev) = memory_level(app, g).unwrap_or((0.0, Severity::Normal));
    let mut out = vec![Span::raw(format!(
        " {:>6}{sep}{:<5} ",
        bytes_short(m.used),
        bytes_short(m.total)
    ))];
    out.extend(value(format!("{pct:>3.0}%"), sev, app.theme()));
    out
}

/// " 39%" after a label and a space, marked and coloured by level.
pub(super) fn mem_pct(app: &App, g: &GpuSample) -> Vec<Span<'static>> {
    let (pct, sev) = memory_level(app, g).unwrap_or((0.0, Severity::Normal));
    value(format!("{pct:>3.0}%"), sev, app.theme())
}

pub(super) fn util_pct(app: &App, g: &GpuSample) -> Vec<Span<'static>> {
    let t = app.theme();
    match g.util_gpu {
        Some(u) => value(
            format!("{u:>3}%"),
            app.config().thresholds.utilization.grade(u as f64),
            t,
        ),
        None => vec![Span::styled("N/A".to_string(), t.dim)],
    }
}

pub(super) fn temp(app: &App, g: &GpuSample) -> Option<Vec<Span<'static>>> {
    let c = g.temp_c?;
    let sev = app.config().thresholds.temperature.grade(c as f64);
    Some(value(format!("{c}°C"), sev, app.theme()))
}

/// "653/700 W" (or "653 W" without a limit), graded against the limit.
pub(super) fn power(app: &App, g: &GpuSample, with_limit: bool) -> Option<Vec<Span<'static>>> {
    let p = g.power_mw? / 1000;
    let sev = power_level(app, g).map_or(Severity::Normal, |l| l.1);
    let text = match g.power_limit_mw {
        Some(l) if with_limit => format!("{p}/{} W", l / 1000),
        _ => format!("{p} W"),
    };
    Some(value(text, sev, app.theme()))
}

/// How much room the outlook has.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Room {
    Full,
    /// Shorter words.
    Short,
    /// Shorter words, and no room for where a fill levels off.
    OneLine,
}

/// "full in ~57s (56s–1m06s)" or "at risk (peaks 97%)", graded; else
/// where a fill levels off.
pub(super) fn outlook(app: &App, ins: &GpuInsight, room: Room) -> Vec<Span<'static>> {
    let short = room != Room::Full;
    let t = app.theme();
    let mut out = Vec::new();
    if let Some(eta) = ins.full_in {
        let sev = if eta.surely_within(app.config().alerts.forecast_below.as_secs_f64()) {
            Severity::Critical
        } else {
            Severity::Warn
        };
        out.push(Span::styled("  full in ", t.label));
        let text = if short {
            eta.describe_short()
        } else {
            eta.describe()
        };
        out.extend(value(text, sev, t));
    } else if let Some(pct) = ins.at_risk_pct {
        out.push(Span::raw("  "));
        let text = if short {
            "at risk".to_string()
        } else {
            format!("at risk (peaks {pct:.0}%)")
        };
        out.extend(value(text, Severity::Critical, t));
    } else if let Some(b) = ins.levels_at.filter(|_| room != Room::OneLine) {
        let label = if short {
            "  levels ~"
        } else {
            "  levelling off at ~"
        };
        out.push(Span::styled(label, t.label));
        out.push(Span::raw(bytes_short(b)));
    }
    out
}
