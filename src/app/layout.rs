//! Where things go, as pure functions of the terminal size: the drawing
//! code and `App::update` (paging, mouse clicks) share them.

use ratatui::layout::Rect;

use crate::app::App;
use crate::app::view::EventsPane;
use crate::config::Column;

/// Below this the dashboard asks for a larger terminal.
pub const MIN_WIDTH: u16 = 50;
pub const MIN_HEIGHT: u16 = 12;

/// Lines of a full GPU card, borders included, its history chart one row.
pub const CARD_HEIGHT: u16 = 6;
/// Lines of a two-line GPU card.
pub const TWO_LINE_HEIGHT: u16 = 2;
/// Process rows the overview keeps before the GPU cards get more room.
pub const MIN_TABLE_ROWS: u16 = 8;
/// Lines the events pane gets at least, its rule included.
const EVENTS_MIN: u16 = 5;
/// From this width a full card has its GPU's top processes beside it.
pub const SIDE_MIN_WIDTH: u16 = 160;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CardStyle {
    /// A bordered card of four lines per GPU.
    Full,
    /// Two labelled lines per GPU.
    TwoLine,
    /// One line per GPU, when even two do not fit.
    Compact,
}

fn timeline_height(replay: bool) -> u16 {
    if replay { 2 } else { 0 }
}

/// The terminal filled by priority: full cards whenever they leave the
/// table [`MIN_TABLE_ROWS`] rows (and the events pane its lines), else two
/// labelled lines per GPU, else one.
pub fn card_style(size: (u16, u16), gpus: usize, show_events: bool, replay: bool) -> CardStyle {
    let (_, h) = size;
    let body = h.saturating_sub(2 + timeline_height(replay)) as u32;
    // The table's header row, its rows and the detail line.
    let table = (MIN_TABLE_ROWS + 2) as u32;
    let events = if show_events { EVENTS_MIN as u32 } else { 0 };
    let n = gpus as u32;
    if n * CARD_HEIGHT as u32 + table + events <= body {
        CardStyle::Full
    } else if n * TWO_LINE_HEIGHT as u32 + 1 + table + events <= body {
        CardStyle::TwoLine
    } else {
        CardStyle::Compact
    }
}

/// The parts of the overview.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overview {
    pub header: Rect,
    pub style: CardStyle,
    pub cards: Rect,
    /// Rows of each full card's history chart: 1, more where the process
    /// table leaves rows empty ([`overview_for`]).
    pub chart: u16,
    /// The process table, its header row included.
    pub table: Rect,
    /// The selected process's whole command, under the table.
    pub detail: Option<Rect>,
    /// The events pane, its rule included.
    pub events: Option<Rect>,
    /// The replay timeline.
    pub timeline: Option<Rect>,
    pub footer: Rect,
}

/// Lays out the overview for `size`.
pub fn overview(size: (u16, u16), gpus: usize, show_events: bool, replay: bool) -> Overview {
    let (w, h) = size;
    let header = Rect::new(0, 0, w, 1.min(h));
    let footer = Rect::new(0, h.saturating_sub(1), w, 1.min(h));
    let timeline_h = timeline_height(replay);
    let style = card_style(size, gpus, show_events, replay);
    let n = gpus.min(u16::MAX as usize / CARD_HEIGHT as usize) as u16;
    let card_lines = match style {
        CardStyle::Full => n * CARD_HEIGHT,
        // Lines plus a rule under them.
        CardStyle::TwoLine => n * TWO_LINE_HEIGHT + 1,
        CardStyle::Compact => n.min(h / 3) + 1,
    };
    let mut y = 1;
    let cards = Rect::new(0, y, w, card_lines.min(h.saturating_sub(3)));
    y += cards.height;
    let bottom = h.saturating_sub(1 + timeline_h);
    let rest = bottom.saturating_sub(y);
    let events_h = if show_events {
        (rest / 3).max(EVENTS_MIN.min(rest / 2)).min(rest)
    } else {
        0
    };
    let table_h = rest.saturating_sub(events_h);
    // The detail line, where the table keeps a header and two rows.
    let detail_h = u16::from(table_h >= 4);
    let table = Rect::new(0, y, w, table_h - detail_h);
    let detail = (detail_h > 0).then(|| Rect::new(0, y + table.height, w, 1));
    let events = show_events.then(|| Rect::new(0, y + table_h, w, events_h));
    let timeline = replay.then(|| Rect::new(0, bottom, w, timeline_h));
    Overview {
        header,
        style,
        cards,
        chart: 1,
        table,
        detail,
        events,
        timeline,
        footer,
    }
}

/// Rows of each full card's history chart when the table's body has
/// `body` rows and `listed` processes to show: the rows the table leaves
/// (it keeps one for "no processes"), split evenly over the `gpus` cards,
/// up to `max` (`[display] chart_rows`); 1 when the processes fill the
/// table.
pub fn chart_rows(body: u16, listed: usize, gpus: usize, max: u16) -> u16 {
    if gpus == 0 {
        return 1;
    }
    let spare = body.saturating_sub(rows_needed(listed)) as usize;
    (1 + spare / gpus).min(max.max(1) as usize) as u16
}

/// How the overview places the events pane: as `[display] events` or `e`
/// left it, and whether a pane shown unasked was shown at the last update
/// (it then stays in fewer rows, [`EVENTS_AUTO_KEEP`], so that a process
/// or two coming and going does not make it blink, nor take it from under
/// the arrows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventsRows {
    pub pane: EventsPane,
    pub held: bool,
}

impl From<EventsPane> for EventsRows {
    fn from(pane: EventsPane) -> Self {
        EventsRows { pane, held: false }
    }
}

/// The overview as drawn with `listed` processes in the table: laid out as
/// [`overview`] (the events pane open only when `events` is
/// [`EventsPane::Open`]), then full cards' charts grow into the table's rows
/// that the processes leave empty, up to `chart_max` rows ([`chart_rows`]),
/// and with [`EventsPane::Auto`] the events pane takes the rows still left
/// when there are enough of them ([`auto_events`]; with every card style).
/// The card style, an open events pane and the timeline stay where
/// [`overview`] puts them; with as many processes as rows (`usize::MAX`: as
/// many as any) it is [`overview`].
pub fn overview_for(
    size: (u16, u16),
    gpus: usize,
    events: impl Into<EventsRows>,
    replay: bool,
    listed: usize,
    chart_max: u16,
) -> Overview {
    let events = events.into();
    let mut o = overview(size, gpus, events.pane == EventsPane::Open, replay);
    if o.style == CardStyle::Full {
        let body = o.table.height.saturating_sub(1);
        let chart = chart_rows(body, listed, gpus, chart_max);
        // Full cards leave the table its rows: every GPU's card is on screen.
        let grow = (chart - 1) * gpus.min(u16::MAX as usize) as u16;
        if chart > 1 && grow <= body {
            o.chart = chart;
            o.cards.height += grow;
            o.table.y += grow;
            // Its bottom, the detail line under it and the events pane stay.
            o.table.height -= grow;
        }
    }
    if events.pane == EventsPane::Open {
        give_events_the_spare_rows(&mut o, listed);
    }
    if events.pane == EventsPane::Auto {
        let least = if events.held {
            EVENTS_AUTO_KEEP
        } else {
            EVENTS_AUTO_MIN
        };
        auto_events(&mut o, listed, least);
    }
    o
}

/// Rows the table must leave empty, the rule included, for the events pane
/// to be shown in them unasked ([`EventsPane::Auto`]).
pub const EVENTS_AUTO_MIN: u16 = 6;
/// Rows a pane shown unasked keeps while it is shown: fewer than
/// [`EVENTS_AUTO_MIN`], so that it does not come and go with each process.
pub const EVENTS_AUTO_KEEP: u16 = 2;

/// Table rows `listed` processes need below the header: one each, or one
/// for the "no processes" line.
fn rows_needed(listed: usize) -> u16 {
    listed.clamp(1, u16::MAX as usize) as u16
}

/// Rows of the table below its `listed` processes (and its "no
/// processes" line) and its header.
fn spare_rows(o: &Overview, listed: usize) -> u16 {
    o.table
        .height
        .saturating_sub(rows_needed(listed).saturating_add(1))
}

/// Shrinks the table by `rows`, the detail line following it; returns
/// the row below them, where an events pane under the table begins.
fn shrink_table(o: &mut Overview, rows: u16) -> u16 {
    o.table.height -= rows;
    let mut below = o.table.bottom();
    if let Some(d) = o.detail.as_mut() {
        d.y = below;
        below += d.height;
    }
    below
}

/// The events pane in the rows under the table's `listed` processes that
/// are left when the cards have grown, when there are at least `least`:
/// the table shrinks to its processes, the detail line follows it, the
/// pane takes the rest.
fn auto_events(o: &mut Overview, listed: usize, least: u16) {
    let spare = spare_rows(o, listed);
    if o.events.is_some() || spare < least {
        return;
    }
    let top = shrink_table(o, spare);
    o.events = Some(Rect::new(o.table.x, top, o.table.width, spare));
}

/// An open events pane takes the rows under the table's `listed`
/// processes that the cards left: the table shrinks to its processes, the
/// detail line follows it, and the pane grows up into the rest (at 120×40
/// with four GPUs it had kept a third of the body while nine of the
/// table's rows stayed blank).
fn give_events_the_spare_rows(o: &mut Overview, listed: usize) {
    let spare = spare_rows(o, listed);
    if o.events.is_none() || spare == 0 {
        return;
    }
    let top = shrink_table(o, spare);
    if let Some(e) = o.events.as_mut() {
        e.height += e.y - top;
        e.y = top;
    }
}

/// Processes the overview's table lists, whatever its filter (typing a
/// filter does not resize the cards): the rows it needs before the cards'
/// charts get the rest ([`overview_for`]).
pub fn listed(app: &App) -> usize {
    app.slot()
        .map_or(0, |slot| app.history().listed_at(slot).count())
}

/// The overview as `app` draws it now: its terminal size, GPUs, panes and
/// the processes listed (what `update` needs for the mouse).
pub fn overview_of(app: &App) -> Overview {
    overview_sized(app, app.size())
}

/// The overview as `app` draws it in a terminal of `size`.
pub fn overview_sized(app: &App, size: (u16, u16)) -> Overview {
    overview_for(
        size,
        app.system().gpus.len(),
        app.events_rows(),
        app.replaying(),
        listed(app),
        app.config().display.chart_rows,
    )
}

/// Lines of one full card in `o`, borders included.
pub fn card_height(o: &Overview) -> u16 {
    CARD_HEIGHT + o.chart.saturating_sub(1)
}

/// Where each GPU shown goes: (index, area). Full cards stack; lines
/// scroll so the selected GPU is in view, above the rule.
pub fn gpu_slots(o: &Overview, gpus: usize, selected: usize) -> Vec<(usize, Rect)> {
    let c = o.cards;
    let per = match o.style {
        CardStyle::Full => card_height(o),
        CardStyle::TwoLine => TWO_LINE_HEIGHT,
        CardStyle::Compact => 1,
    };
    let room = match o.style {
        CardStyle::Full => c.height,
        _ => c.height.saturating_sub(1),
    };
    let fit = (room / per) as usize;
    let first = selected
        .min(gpus.saturating_sub(1))
        .saturating_sub(fit.saturating_sub(1));
    (first..gpus)
        .take(fit)
        .enumerate()
        .map(|(row, i)| (i, Rect::new(c.x, c.y + row as u16 * per, c.width, per)))
        .collect()
}

/// The GPU at screen row `y`, if a GPU is drawn there.
pub fn gpu_at(o: &Overview, gpus: usize, selected: usize, y: u16) -> Option<usize> {
    gpu_slots(o, gpus, selected)
        .into_iter()
        .find(|(_, r)| y >= r.y && y < r.bottom())
        .map(|(i, _)| i)
}

/// Width of the panel of top processes beside a full card, when the
/// terminal is wide enough for one.
pub fn side_width(width: u16) -> Option<u16> {
    (width >= SIDE_MIN_WIDTH).then(|| (width * 2 / 5).clamp(50, 100))
}

/// The rows of the table body (below its header row) when the processes
/// fill it (the charts have not grown into it).
pub fn table_body(size: (u16, u16), gpus: usize, show_events: bool, replay: bool) -> Rect {
    let t = overview(size, gpus, show_events, replay).table;
    Rect::new(t.x, t.y + 1, t.width, t.height.saturating_sub(1))
}

/// The column whose header is at `x` in a table `width` wide.
pub fn column_at(configured: &[Column], width: u16, x: u16) -> Option<Column> {
    let cols = fit_columns(configured, width);
    let spans = column_spans(&cols, width);
    cols.into_iter()
        .zip(spans)
        .find(|(_, (cx, w))| x >= *cx && x <= cx + w)
        .map(|(c, _)| c)
}

/// A centred box of at most `w`×`h` inside `area`.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

// ---- the process table's columns ------------------------------------------

/// (fixed width, drop priority: higher goes first when narrow).
fn spec(c: Column) -> (u16, u8) {
    match c {
        // Room for the sort arrow after the title.
        Column::Gpu => (4, 1),
        Column::Pid => (7, 0),
        Column::User => (9, 3),
        Column::Container => (12, 7),
        Column::Kind => (5, 8),
        Column::Memory => (8, 0),
        Column::MemoryPct => (5, 5),
        Column::Trend => (12, 2),
        Column::Peak => (7, 4),
        Column::Alloc => (13, 7),
        Column::Sm => (4, 3),
        Column::Cpu => (5, 6),
        Column::Rss => (7, 6),
        Column::Age => (6, 5),
        Column::Command => (0, 0),
    }
}

/// The command column gets at least a quarter of the width (12..=40).
pub fn command_width(width: u16) -> u16 {
    (width / 4).clamp(12, 40)
}

/// The columns `s`, `<` and `>` cycle through: those shown at `width`, so
/// the sort never lands on a column the user cannot see.
pub fn sortable_columns(configured: &[Column], width: u16) -> Vec<Column> {
    fit_columns(configured, width)
        .into_iter()
        .filter(|c| *c != Column::MemoryPct)
        .collect()
}

/// Columns that fit in `width`, in configured order; COMMAND takes the rest.
pub fn fit_columns(configured: &[Column], width: u16) -> Vec<Column> {
    let mut cols: Vec<Column> = configured.to_vec();
    let command_min = command_width(width);
    let need = |cols: &[Column]| -> u16 {
        cols.iter().map(|c| spec(*c).0 + 1).sum::<u16>()
            + if cols.contains(&Column::Command) {
                command_min
            } else {
                0
            }
    };
    while need(&cols) > width {
        let Some((i, _)) = cols
            .iter()
            .enumerate()
            .filter(|(_, c)| spec(**c).1 > 0)
            .max_by_key(|(i, c)| (spec(**c).1, *i))
        else {
            break;
        };
        cols.remove(i);
    }
    cols
}

/// Width of the COMMAND column in a table `width` wide, where it is shown:
/// what the table draws each command in, and what its sort and scroll go by.
pub fn command_column_width(configured: &[Column], width: u16) -> Option<usize> {
    let cols = fit_columns(configured, width);
    let spans = column_spans(&cols, width);
    cols.iter()
        .zip(&spans)
        .find(|(c, _)| **c == Column::Command)
        .map(|(_, s)| s.1 as usize)
}

/// (x, width) of each column within a row `width` wide; COMMAND takes what
/// is left. Laid out by hand: the table is drawn every frame and a generic
/// table widget's layout solving cost most of the frame.
pub fn column_spans(cols: &[Column], width: u16) -> Vec<(u16, u16)> {
    let fixed: u16 = cols
        .iter()
        .filter(|c| **c != Column::Command)
        .map(|c| spec(*c).0 + 1)
        .sum();
    let mut x = 0u16;
    cols.iter()
        .map(|c| {
            let w = match c {
                Column::Command => width.saturating_sub(fixed).max(1),
                c => spec(*c).0,
            };
            let span = (x, w.min(width.saturating_sub(x)));
            x = x.saturating_add(w + 1).min(width);
            span
        })
        .collect()
}

#[cfg(test)]
mod tests;
