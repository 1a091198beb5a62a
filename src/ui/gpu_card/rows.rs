//! The text lines of a full card: memory (line 1), readings (line 3),
//! and where memory is going with the slow lane (line 4), each figure
//! with its importance for when the line does not fit.

use ratatui::text::Span;

use super::GpuCard;
use super::bar::with_bar;
use super::figures::{Room, outlook, power, temp, unaccounted, used_of_total, util_pct};
use crate::analysis::Phase;
use crate::model::GpuSample;
use crate::model::units::bytes_short;
use crate::theme::Theme;

impl GpuCard<'_> {
    /// Line 1: the memory bar, used of total, reserved, unaccounted, peak.
    pub(super) fn memory_line(&self, g: &GpuSample, slot: u64, w: usize) -> Vec<Span<'static>> {
        let app = self.app;
        let t = app.theme();
        let Some(m) = g.mem else {
            return vec![
                Span::styled("mem ", t.label),
                Span::styled("N/A".to_string(), t.dim),
            ];
        };
        let mut after: Vec<(u8, Vec<Span>)> = vec![(9, used_of_total(app, g, m, " / "))];
        after.push((
            5,
            vec![
                Span::styled("  reserved ", t.label),
                Span::raw(bytes_short(m.reserved)),
            ],
        ));
        if let Some(u) = unaccounted(app, self.index, slot, g) {
            after.push((
                4,
                vec![
                    Span::styled("  unaccounted ", t.label),
                    Span::raw(bytes_short(u)),
                ],
            ));
        }
        // The time of the peak is in the GPU view: here it would change
        // with every new peak and cost bytes on every redraw.
        if let Some((p, _)) = app.gpu_peak(self.index) {
            after.push((
                6,
                vec![
                    Span::styled("  peak ", t.label),
                    Span::styled(bytes_short(p), t.peak_mark),
                ],
            ));
        }
        let before = vec![Span::styled("mem ", t.label)];
        // One bar width for every card (it depends on the width alone), so
        // that equal shares are equal lengths from card to card: what the
        // widest text leaves ("mem ", " 99.9G / 140G  85%▲", reserved,
        // unaccounted and peak, each figure at most five characters).
        const WIDEST_TEXT: usize = 4 + 16 + 5 + 16 + 19 + 12;
        let w = w.saturating_sub(1);
        let bar = w.saturating_sub(WIDEST_TEXT).clamp(10, 60);
        with_bar(app, g, before, after, bar, w).0
    }

    /// Line 3: utilisation, memory bandwidth, temperature, power, clocks
    /// and fan, each labelled.
    pub(super) fn readings(&self, g: &GpuSample) -> Vec<(u8, Vec<Span<'static>>)> {
        let app = self.app;
        let t = app.theme();
        let na = || Span::styled("N/A".to_string(), t.dim);
        let mut out: Vec<(u8, Vec<Span>)> = Vec::new();
        let mut util = vec![Span::styled("util ", t.label)];
        util.extend(util_pct(app, g));
        out.push((9, util));
        out.push((
            3,
            vec![
                Span::styled("  mem bandwidth", t.label),
                Span::raw(g.util_mem.map_or(" N/A".into(), |u| format!(" {u}%"))),
            ],
        ));
        let mut tc = vec![Span::styled("  temp ", t.label)];
        tc.extend(temp(app, g).unwrap_or_else(|| vec![na()]));
        out.push((8, tc));
        let mut pw = vec![Span::styled("  power ", t.label)];
        pw.extend(power(app, g, true).unwrap_or_else(|| vec![na()]));
        out.push((7, pw));
        if g.sm_clock_mhz.is_some() || g.mem_clock_mhz.is_some() {
            let mhz = |c: Option<u32>| c.map_or("N/A".into(), |c| c.to_string());
            out.push((
                2,
                vec![
                    Span::styled("  clocks sm ", t.label),
                    Span::raw(mhz(g.sm_clock_mhz)),
                    Span::styled(" mem ", t.label),
                    Span::raw(format!("{} MHz", mhz(g.mem_clock_mhz))),
                ],
            ));
        }
        if app
            .system()
            .gpus
            .get(self.index)
            .is_some_and(|d| d.num_fans > 0)
        {
            out.push((
                1,
                vec![
                    Span::styled("  fan ", t.label),
                    Span::raw(g.fan_pct.map_or("N/A".into(), |f| format!("{f}%"))),
                ],
            ));
        }
        out
    }

    /// Line 4: where memory is going (processes, trend, forecast), then the
    /// slow lane (PCIe, BAR1, ECC).
    pub(super) fn trend(&self, g: &GpuSample, slot: u64) -> Vec<(u8, Vec<Span<'static>>)> {
        let app = self.app;
        let t = app.theme();
        let i = self.index;
        let procs = app
            .history()
            .processes()
            .filter(|s| s.id.gpu as usize == i && s.at(slot).is_some())
            .count();
        let mut out: Vec<(u8, Vec<Span>)> = vec![(
            6,
            vec![
                Span::styled("procs ", t.label),
                Span::raw(procs.to_string()),
            ],
        )];
        if let Some(ins) = app.gpu_insight(i) {
            let style = match ins.phase {
                Phase::Growing => t.warn,
                Phase::Unknown => t.dim,
                _ => t.text,
            };
            out.push((
                9,
                vec![
                    Span::styled("  trend ", t.label),
                    Span::styled(crate::ui::trend_words(ins.phase, ins.rate_bps), style),
                ],
            ));
            let o = outlook(app, &ins, Room::Full);
            if !o.is_empty() {
                out.push((9, o));
            }
        }
        out.extend(slow_lane(g, t));
        out
    }
}

/// PCIe throughput, BAR1 and volatile ECC errors, where known.
fn slow_lane(g: &GpuSample, t: &Theme) -> Vec<(u8, Vec<Span<'static>>)> {
    let mut out = Vec::new();
    if let (Some(rx), Some(tx)) = (g.pcie_rx_kbs, g.pcie_tx_kbs) {
        out.push((
            2,
            vec![
                Span::styled("  PCIe ", t.label),
                Span::raw(format!(
                    "↓{} ↑{}/s",
                    bytes_short(rx as u64 * 1024),
                    bytes_short(tx as u64 * 1024)
                )),
            ],
        ));
    }
    if let Some(b) = g.bar1 {
        out.push((
            1,
            vec![
                Span::styled("  BAR1 ", t.label),
                Span::raw(format!("{}/{}", bytes_short(b.used), bytes_short(b.total))),
            ],
        ));
    }
    if let Some(e) = g.ecc_volatile
        && e > 0
    {
        out.push((8, vec![Span::styled(format!("  ECC errors {e}"), t.crit)]));
    }
    out
}
