//! The memory bar, and a line that gives it the room its text leaves.

use ratatui::style::Style;
use ratatui::text::Span;

use super::figures::memory_level;
use crate::app::App;
use crate::config::Severity;
use crate::model::GpuSample;
use crate::ui::width_of;

/// The memory bar: used █, reserved ▒, free ░, the peak since start ┃.
pub fn memory_bar(app: &App, g: &GpuSample, peak: Option<u64>, width: u16) -> Vec<Span<'static>> {
    let t = app.theme();
    let Some(m) = g.mem else {
        return vec![Span::styled("N/A".to_string(), t.dim)];
    };
    let w = width as u64;
    let total = m.total.max(1);
    let cells = |b: u64| ((b as u128 * w as u128 + total as u128 / 2) / total as u128) as u64;
    let used = cells(m.used).min(w);
    let resv = cells(m.reserved).min(w - used);
    let free = w - used - resv;
    let sev = memory_level(app, g).map_or(Severity::Normal, |l| l.1);
    let used_style = if sev == Severity::Normal {
        t.mem_used
    } else {
        t.level(sev)
    };
    let mut chars: Vec<(char, Style)> = Vec::with_capacity(w as usize);
    chars.extend(std::iter::repeat_n(('█', used_style), used as usize));
    chars.extend(std::iter::repeat_n(('▒', t.mem_reserved), resv as usize));
    chars.extend(std::iter::repeat_n(('░', t.mem_free), free as usize));
    if let Some(p) = peak {
        let at = cells(p).min(w.saturating_sub(1)) as usize;
        if at >= used as usize && at < chars.len() {
            chars[at] = ('┃', t.peak_mark);
        }
    }
    // Merge runs of one style into spans.
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut run = String::new();
    let mut style = None;
    for (c, s) in chars {
        if style != Some(s) && !run.is_empty() {
            spans.push(Span::styled(
                std::mem::take(&mut run),
                style.unwrap_or_default(),
            ));
        }
        style = Some(s);
        run.push(c);
    }
    if !run.is_empty() {
        spans.push(Span::styled(run, style.unwrap_or_default()));
    }
    spans
}

/// A memory bar `bar` cells long between fixed text (the same length on
/// every card at a given width, so equal shares are equal lengths); when
/// the line does not fit, the least important groups after it go first.
pub(super) fn with_bar(
    app: &App,
    g: &GpuSample,
    before: Vec<Span<'static>>,
    mut after: Vec<(u8, Vec<Span<'static>>)>,
    bar: usize,
    width: usize,
) -> (Vec<Span<'static>>, usize) {
    let fixed = |a: &[(u8, Vec<Span>)]| {
        width_of(&before) + a.iter().map(|(_, s)| width_of(s)).sum::<usize>()
    };
    while fixed(&after) + bar > width && after.len() > 1 {
        let Some(i) = (0..after.len()).min_by_key(|i| (after[*i].0, std::cmp::Reverse(*i))) else {
            break;
        };
        after.remove(i);
    }
    let bar_w = bar.min(width);
    let peak = app.gpu_peak(i_of(g));
    let mut out = before;
    out.extend(memory_bar(app, g, peak.map(|p| p.0), bar_w as u16));
    out.extend(after.into_iter().flat_map(|(_, s)| s));
    let used = width_of(&out);
    (out, used)
}

fn i_of(g: &GpuSample) -> usize {
    g.index as usize
}
