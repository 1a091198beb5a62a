//! GPU cards, as big as the terminal allows (`app::layout::card_style`): a
//! bordered card per GPU (memory bar with used, reserved and peak;
//! sparklines of per-interval memory peaks and utilisation; readings;
//! growth and forecast), with the GPU's top processes beside it on wide
//! terminals; two labelled lines per GPU; or one line when space is short.
//! Every figure has its label, and a line that does not fit drops its
//! least important figures whole.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Widget};

use crate::app::{App, Pane};
use crate::model::{GpuSample, GpuState};
use crate::ui::fit;

mod bar;
mod figures;
mod lines;
mod rows;
mod spark;
pub use bar::memory_bar;
pub use figures::{memory_level, unaccounted};
pub use lines::{GpuLine, GpuTwoLine, TopProcesses};
pub use spark::SAMPLES_PER_CELL;

/// One GPU at the slot on screen.
pub struct GpuCard<'a> {
    pub app: &'a App,
    pub index: usize,
    pub selected: bool,
}

impl Widget for &GpuCard<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let slot = app.slot().unwrap_or(0);
        let g = app.history().gpu_at(self.index, slot);
        let block = self.block(g);
        let inner = block.inner(area);
        block.render(area, buf);
        let Some(g) = g.filter(|g| g.state != GpuState::Lost) else {
            Line::from(Span::styled(
                " no readings: the GPU is lost or not yet sampled",
                app.theme().crit,
            ))
            .render(inner, buf);
            return;
        };
        // One line each, as many as fit, in this order; the charts get
        // the rows a taller card has beyond four (`layout::overview_for`).
        let row = |n: u16| Rect::new(inner.x, inner.y + n, inner.width, 1);
        let w = inner.width as usize;
        Line::from(self.memory_line(g, slot, w)).render(row(0), buf);
        if inner.height < 2 {
            return;
        }
        let chart_h = inner.height.saturating_sub(3).max(1);
        let charts = Rect::new(inner.x, inner.y + 1, inner.width, chart_h);
        self.sparklines(g, slot, charts, buf);
        let next = 1 + chart_h;
        if inner.height < next + 1 {
            return;
        }
        Line::from(fit(self.readings(g), w)).render(row(next), buf);
        if inner.height < next + 2 {
            return;
        }
        Line::from(fit(self.trend(g, slot), w)).render(row(next + 1), buf);
    }
}

impl GpuCard<'_> {
    /// The border, with the GPU's number, name and state on the left and
    /// its P-state and bus id on the right.
    fn block(&self, g: Option<&GpuSample>) -> Block<'static> {
        let app = self.app;
        let t = app.theme();
        let i = self.index;
        let info = app.system().gpus.get(i);
        let name = info.map_or("GPU", |d| d.name.as_str());
        let border = if self.selected && app.nav().focus == Pane::Gpus {
            t.focus_border
        } else {
            t.border
        };
        let mut title = vec![
            Span::styled(format!(" GPU {i} "), t.title),
            Span::styled(format!("{name} "), t.text),
        ];
        if let Some(g) = g
            && g.state != GpuState::Ok
        {
            let (txt, st) = match g.state {
                GpuState::Lost => (" LOST ", t.crit),
                _ => (" stale ", t.warn),
            };
            title.push(Span::styled(txt, st));
        }
        let right = g
            .map(|g| {
                let mut s = String::new();
                if let Some(p) = g.pstate {
                    s.push_str(&format!(" P{p}"));
                }
                if let Some(d) = info {
                    s.push_str(&format!(" {} ", d.pci_bus_id));
                }
                s
            })
            .unwrap_or_default();
        Block::default()
            .borders(Borders::ALL)
            .border_style(border)
            .title(Line::from(title))
            .title(Line::from(Span::styled(right, t.dim)).right_aligned())
    }
}
