//! Where things go on screen, as pure geometry: drawing uses it, and so
//! does `update` (paging, which columns `s` cycles through).

use ratatui::layout::Rect;

use super::table::{GPU_MEMORY_TEXT, GpuCol, HostCol, ProcCol, fit};

/// Smallest terminal the fleet draws in.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 10;

/// Where the parts of the screen go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Areas {
    pub header: Rect,
    pub status: Rect,
    pub body: Rect,
    pub footer: Rect,
}

pub fn areas((w, h): (u16, u16)) -> Areas {
    let row = |y| Rect::new(0, y, w, 1);
    Areas {
        header: row(0),
        status: row(1),
        body: Rect::new(0, 2, w, h.saturating_sub(3)),
        footer: row(h.saturating_sub(1)),
    }
}

/// The drill-down's body: a title line, the GPU column titles and one line
/// per GPU (at most half the body), a rule, then the process table.
pub fn detail_split(body: Rect, gpus: usize) -> (Rect, Rect) {
    let top = (2 + gpus.max(1) as u16 + 1).min(body.height / 2).max(3);
    let procs = Rect::new(
        body.x,
        body.y + top,
        body.width,
        body.height.saturating_sub(top),
    );
    (Rect::new(body.x, body.y, body.width, top), procs)
}

/// The host table's columns at `width`.
pub fn host_columns(width: u16) -> Vec<(HostCol, u16)> {
    fit(
        &HostCol::ALL,
        HostCol::spec,
        width,
        &[(HostCol::Host, 28), (HostCol::Memory, 44)],
    )
}

/// A process table's columns at `width` (`host`: with the host column).
pub fn proc_columns(width: u16, host: bool) -> Vec<(ProcCol, u16)> {
    let all: Vec<ProcCol> = ProcCol::ALL
        .into_iter()
        .filter(|c| host || *c != ProcCol::Host)
        .collect();
    fit(
        &all,
        ProcCol::spec,
        width,
        // In tiers: the command gets room before the host name grows long.
        &[
            (ProcCol::Host, 16),
            (ProcCol::Command, 60),
            (ProcCol::User, 12),
            (ProcCol::Host, 24),
            (ProcCol::Command, 400),
        ],
    )
}

/// The drill-down's GPU columns at `width`: the memory bar grows to a
/// sixth of the width (8 to 30 cells), the sparklines share the rest.
pub fn gpu_columns(width: u16) -> Vec<(GpuCol, u16)> {
    let bar = (width / 6).clamp(8, 30);
    let mut cols = fit(
        &GpuCol::ALL,
        GpuCol::spec,
        width,
        &[(GpuCol::Memory, bar + GPU_MEMORY_TEXT)],
    );
    let used: u16 = cols.iter().map(|c| c.1).sum::<u16>() + cols.len().saturating_sub(1) as u16;
    let mut room = width.saturating_sub(used);
    let sparks = cols
        .iter()
        .filter(|c| matches!(c.0, GpuCol::MemHistory | GpuCol::UtilHistory))
        .count() as u16;
    if let Some(each) = room.checked_div(sparks) {
        let each = each.min(40 - 8);
        for c in cols
            .iter_mut()
            .filter(|c| matches!(c.0, GpuCol::MemHistory | GpuCol::UtilHistory))
        {
            c.1 += each;
            room -= each;
        }
    }
    if let Some(m) = cols.iter_mut().find(|c| c.0 == GpuCol::Memory) {
        m.1 += room.min(30u16.saturating_sub(m.1.saturating_sub(GPU_MEMORY_TEXT)));
    }
    cols
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_columns_fill_the_width_or_stop_short_of_it() {
        for w in [MIN_WIDTH, 80, 100, 120, 140, 200, 300] {
            let cols = gpu_columns(w);
            let used: u16 = cols.iter().map(|c| c.1).sum::<u16>() + cols.len() as u16 - 1;
            assert!(used <= w, "{w}: {used}");
            if (100..=200).contains(&w) {
                assert_eq!(cols.len(), GpuCol::ALL.len(), "{w}");
            }
        }
    }
}
