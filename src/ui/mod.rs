//! Drawing: `draw(frame, &App)` lays out the current screen; every part is
//! a widget over `&App` (no state is changed while drawing, nothing blocks).

pub(crate) mod allocator;
pub(crate) mod chart;
pub(crate) mod dialog;
pub(crate) mod events;
pub(crate) mod footer;
pub mod gpu_card;
pub(crate) mod gpu_view;
pub(crate) mod header;
pub(crate) mod help;
pub mod process_table;
pub(crate) mod process_view;
pub(crate) mod timeline;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Widget};

use crate::app::layout::{self, CardStyle, MIN_HEIGHT, MIN_WIDTH};
use crate::app::{App, Screen};

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, app: &App) {
    let area = frame.area();
    render(app, area, frame.buffer_mut());
}

/// Renders the whole screen into a buffer (what `draw` does; tests and
/// benchmarks call it directly), in ASCII only with `--ascii`.
pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    screen(app, area, buf);
    if app.config().display.ascii {
        crate::theme::ascii::asciify(buf);
    }
}

fn screen(app: &App, area: Rect, buf: &mut Buffer) {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!(
            "enlarge the terminal to at least {MIN_WIDTH}×{MIN_HEIGHT} (now {}×{})",
            area.width, area.height
        );
        ratatui::widgets::Paragraph::new(Span::styled(msg, app.theme().warn))
            .wrap(ratatui::widgets::Wrap { trim: true })
            .render(area, buf);
        return;
    }
    let o = layout::overview_sized(app, (area.width, area.height));
    (&header::HeaderBar(app)).render(o.header, buf);
    let body = Rect::new(
        0,
        o.cards.y,
        area.width,
        o.footer.y - o.cards.y - o.timeline.map_or(0, |t| t.height),
    );
    match app.screen() {
        Screen::Overview | Screen::Help => overview(app, &o, buf),
        Screen::Gpu(i) => (&gpu_view::GpuView { app, index: i }).render(body, buf),
        Screen::Process(id) => (&process_view::ProcessView { app, id }).render(body, buf),
    }
    if let Some(t) = o.timeline {
        (&timeline::Timeline(app)).render(t, buf);
    }
    (&footer::Footer(app)).render(o.footer, buf);
    if app.screen() == Screen::Help {
        (&help::Help(app)).render(area, buf);
    }
    if app.dialog().is_some() {
        (&dialog::DialogBox(app)).render(area, buf);
    }
}

fn overview(app: &App, o: &layout::Overview, buf: &mut Buffer) {
    let gpus = app.system().gpus.len();
    let sel = app.nav().selected_gpu;
    let slots = layout::gpu_slots(o, gpus, sel);
    for (i, r) in &slots {
        let (i, r) = (*i, *r);
        let selected = i == sel;
        match o.style {
            CardStyle::Full => match layout::side_width(r.width) {
                Some(side) => {
                    let card = Rect::new(r.x, r.y, r.width - side, r.height);
                    (&gpu_card::GpuCard {
                        app,
                        index: i,
                        selected,
                    })
                        .render(card, buf);
                    let panel = Rect::new(r.x + card.width, r.y, side, r.height);
                    (&gpu_card::TopProcesses { app, index: i }).render(panel, buf);
                }
                None => (&gpu_card::GpuCard {
                    app,
                    index: i,
                    selected,
                })
                    .render(r, buf),
            },
            CardStyle::TwoLine => (&gpu_card::GpuTwoLine {
                app,
                index: i,
                selected,
            })
                .render(r, buf),
            CardStyle::Compact => (&gpu_card::GpuLine {
                app,
                index: i,
                selected,
            })
                .render(r, buf),
        }
    }
    if o.style != CardStyle::Full && o.cards.height > 0 {
        let y = o.cards.bottom() - 1;
        let rule = Rect::new(0, y, o.cards.width, 1);
        Block::default()
            .borders(Borders::TOP)
            .border_style(app.theme().border)
            .render(rule, buf);
        if gpus > slots.len() {
            let note = format!(" {} of {} GPUs: Tab, then ↑↓ ", slots.len(), gpus);
            let x = o.cards.width.saturating_sub(note.chars().count() as u16);
            buf.set_string(x, y, note, app.theme().dim);
        }
    }
    (&process_table::ProcessTable(app)).render(o.table, buf);
    if let Some(d) = o.detail {
        (&process_table::DetailLine(app)).render(d, buf);
    }
    if let Some(e) = o.events {
        (&events::EventsPane(app)).render(e, buf);
    }
}

/// A trend as words, the same on a GPU's card and in a process's view:
/// "growing +510M/s", "stable", "volatile", "warming up". The rate is
/// shown only with a direction the phase (which has hysteresis) stands
/// by: a window's rate while the phase says stable is not a trend.
pub(crate) fn trend_words(phase: crate::analysis::Phase, rate_bps: f64) -> String {
    use crate::analysis::Phase;
    match phase {
        Phase::Growing | Phase::Shrinking => {
            format!(
                "{} {}",
                phase.name(),
                crate::model::units::rate_short(rate_bps)
            )
        }
        Phase::Unknown => "warming up".into(),
        p => p.name().to_owned(),
    }
}

/// Display width of spans.
pub(crate) fn width_of(spans: &[Span]) -> usize {
    spans.iter().map(Span::width).sum()
}

/// Groups of spans, each with how much it matters: while they are wider
/// than `width`, the least (the later of equals) goes whole, so a figure
/// is never cut from its label. Order is kept.
pub(crate) fn fit(mut groups: Vec<(u8, Vec<Span<'static>>)>, width: usize) -> Vec<Span<'static>> {
    let total = |g: &[(u8, Vec<Span>)]| g.iter().map(|(_, s)| width_of(s)).sum::<usize>();
    while total(&groups) > width && groups.len() > 1 {
        let Some(i) = (0..groups.len()).min_by_key(|i| (groups[*i].0, std::cmp::Reverse(*i)))
        else {
            break;
        };
        groups.remove(i);
    }
    groups.into_iter().flat_map(|(_, s)| s).collect()
}

/// How many of `len` rows a list of `height` lines shows, and how many it
/// leaves out: all of them when they fit, else all but the last line,
/// which says "+N more" of the rest.
pub(crate) fn rows_shown(len: usize, height: usize) -> (usize, usize) {
    if len <= height {
        (len, 0)
    } else {
        let shown = height.saturating_sub(1);
        (shown, len - shown)
    }
}

/// Groups of spans flowed into lines of `width`: a group is never broken
/// across lines (a value stays with its label), one wider than a line
/// gets a line of its own.
pub(crate) fn flow(
    groups: Vec<Vec<Span<'static>>>,
    width: usize,
) -> Vec<ratatui::text::Line<'static>> {
    let mut lines = Vec::new();
    let mut cur: Vec<Span<'static>> = Vec::new();
    let mut w = 0;
    for g in groups {
        let gw = width_of(&g);
        if !cur.is_empty() && w + gw > width {
            lines.push(ratatui::text::Line::from(std::mem::take(&mut cur)));
            w = 0;
        }
        // A group that opens a line loses its leading gap.
        let mut g = g;
        if cur.is_empty() {
            if let Some(first) = g.first_mut() {
                let trimmed = first.content.trim_start().to_string();
                first.content = trimmed.into();
            }
            w = width_of(&g);
        } else {
            w += gw;
        }
        cur.extend(g);
    }
    if !cur.is_empty() {
        lines.push(ratatui::text::Line::from(cur));
    }
    lines
}

#[cfg(test)]
mod tour_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn text(spans: &[Span]) -> String {
        spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn a_list_that_does_not_fit_counts_what_it_leaves_out() {
        assert_eq!(rows_shown(3, 5), (3, 0));
        assert_eq!(rows_shown(5, 5), (5, 0));
        // 38 rows in 4 lines: 3 listed and "+35 more" (3 + 35 = 38).
        assert_eq!(rows_shown(38, 4), (3, 35));
        assert_eq!(rows_shown(2, 0), (0, 2));
    }

    #[test]
    fn a_trend_has_a_rate_only_with_a_direction() {
        use crate::analysis::Phase;
        let mib = 1024.0 * 1024.0;
        assert_eq!(trend_words(Phase::Growing, 510.0 * mib), "growing +510M/s");
        assert_eq!(
            trend_words(Phase::Shrinking, -20.0 * mib),
            "shrinking -20M/s"
        );
        // A window's rate while the phase says stable or volatile is no trend.
        assert_eq!(trend_words(Phase::Stable, 680.0 * mib), "stable");
        assert_eq!(trend_words(Phase::Volatile, -400.0 * mib), "volatile");
        assert_eq!(trend_words(Phase::Unknown, 0.0), "warming up");
    }

    #[test]
    fn fitting_drops_whole_groups_least_first() {
        let g = |k, s: &str| (k, vec![Span::raw(s.to_string())]);
        let groups = vec![g(9, "mem 39%"), g(1, "  clocks 1980"), g(5, "  temp 67°C")];
        assert_eq!(
            text(&fit(groups.clone(), 80)),
            "mem 39%  clocks 1980  temp 67°C"
        );
        assert_eq!(text(&fit(groups.clone(), 20)), "mem 39%  temp 67°C");
        assert_eq!(text(&fit(groups, 3)), "mem 39%");
    }

    #[test]
    fn flowing_never_breaks_a_group() {
        let g = |s: &str| vec![Span::raw(s.to_string())];
        let lines = flow(
            vec![g("allocated 1G"), g("  reserved 2G"), g("  (0.0 s ago)")],
            26,
        );
        let t: Vec<String> = lines.iter().map(|l| text(&l.spans)).collect();
        assert_eq!(t, ["allocated 1G  reserved 2G", "(0.0 s ago)"]);
    }
}
