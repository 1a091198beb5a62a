//! Where things go on screen, as pure geometry: drawing uses it, and so
//! does `update` (paging, which columns `s` cycles through).

use ratatui::layout::Rect;

use super::table::{HostCol, ProcCol, fit};

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

/// The drill-down's body: a title line and one line per GPU (at most half
/// the body), then the process table.
pub fn detail_split(body: Rect, gpus: usize) -> (Rect, Rect) {
    let top = (1 + gpus.max(1) as u16 + 1).min(body.height / 2).max(2);
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
