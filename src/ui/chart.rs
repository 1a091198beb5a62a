//! A time chart over History: x is seconds before the slot on screen, lines
//! break at gaps, y is labelled in the series' unit. The legend is in the
//! title line, never over the data; one chart has one unit.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Widget};

use crate::model::units::duration_short;
use crate::theme::Theme;

/// One line of a chart: points (seconds, value), `None` = gap.
pub struct Series {
    pub name: String,
    pub style: Style,
    pub points: Vec<(f64, Option<f64>)>,
    /// Draw as dots instead of a line.
    pub dots: bool,
}

/// A bordered chart of several series sharing axes.
pub struct TimeChart<'a> {
    pub title: String,
    pub series: Vec<Series>,
    /// Seconds of history on the x axis (ends at 0 = the slot on screen).
    pub span_s: f64,
    /// Value range; `None` = from 0 to the largest value.
    pub y_max: Option<f64>,
    pub y_label: &'a dyn Fn(f64) -> String,
    pub theme: &'a Theme,
}

/// Splits a series at its gaps into runs of points.
pub(crate) fn segments(points: &[(f64, Option<f64>)]) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    for &(x, y) in points {
        match y {
            Some(y) if y.is_finite() => cur.push((x, y)),
            _ => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

impl TimeChart<'_> {
    /// The title, then each series' mark and name in its colour, as many
    /// as fit in `width`. Where a legend of several series does not fit
    /// beside the title but fits alone, it is shown alone, tighter (its
    /// names say what the chart is: "━SM ━mem bw"), rather than leave a
    /// series unnamed.
    fn title_line(&self, width: usize) -> Line<'static> {
        let t = self.theme;
        let mut seen = std::collections::HashSet::new();
        let named: Vec<&Series> = self
            .series
            .iter()
            .filter(|s| seen.insert(s.name.as_str()))
            .collect();
        let mark = |s: &Series| if s.dots { "•" } else { "━" };
        let wide: Vec<String> = named
            .iter()
            .map(|s| format!("{} {} ", mark(s), s.name))
            .collect();
        let title_w = self.title.chars().count() + 2;
        let wide_w: usize = wide.iter().map(|e| e.chars().count()).sum();
        let tight: Vec<String> = named
            .iter()
            .map(|s| format!("{}{} ", mark(s), s.name))
            .collect();
        let tight_w = 1 + tight.iter().map(|e| e.chars().count()).sum::<usize>();
        if named.len() >= 2 && title_w + wide_w > width && tight_w <= width {
            let mut spans = vec![Span::raw(" ")];
            spans.extend(
                tight
                    .into_iter()
                    .zip(&named)
                    .map(|(e, s)| Span::styled(e, s.style)),
            );
            return Line::from(spans);
        }
        let mut spans = vec![Span::styled(format!(" {} ", self.title), t.title)];
        let mut used = title_w;
        for (entry, s) in wide.into_iter().zip(&named) {
            let w = entry.chars().count();
            if used + w > width {
                break;
            }
            used += w;
            spans.push(Span::styled(entry, s.style));
        }
        Line::from(spans)
    }
}

impl Widget for &TimeChart<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(t.border)
            .title(self.title_line(area.width.saturating_sub(2) as usize));
        let y_max = self.y_max.unwrap_or_else(|| {
            self.series
                .iter()
                .flat_map(|s| s.points.iter().filter_map(|p| p.1))
                .fold(0.0f64, f64::max)
                * 1.1
        });
        let y_max = if y_max > 0.0 { y_max } else { 1.0 };
        let segs: Vec<(Vec<(f64, f64)>, &Series)> = self
            .series
            .iter()
            .flat_map(|s| segments(&s.points).into_iter().map(move |seg| (seg, s)))
            .collect();
        // Unnamed: the legend is the title line's.
        let mut datasets: Vec<Dataset> = Vec::new();
        for (seg, s) in &segs {
            let d = Dataset::default()
                .data(seg)
                .style(s.style)
                .marker(if s.dots { Marker::Dot } else { Marker::Braille })
                .graph_type(if s.dots || seg.len() == 1 {
                    GraphType::Scatter
                } else {
                    GraphType::Line
                });
            datasets.push(d);
        }
        let span = self.span_s.max(1.0);
        // A narrow chart: two time labels, and the unit in the title only
        // (ratatui gives the y labels a third of the width at most).
        let narrow = area.width < 30;
        let x_labels = if narrow {
            let s = span as u64;
            let short = if s >= 60 {
                format!("-{}m", s / 60)
            } else {
                format!("-{s}s")
            };
            vec![Span::styled(short, t.dim), Span::styled("now", t.dim)]
        } else {
            vec![
                Span::styled(format!("-{}", duration_short(span as u64)), t.dim),
                Span::styled(format!("-{}", duration_short((span / 2.0) as u64)), t.dim),
                Span::styled("now", t.dim),
            ]
        };
        let y_text = |v: f64| {
            let l = (self.y_label)(v);
            if narrow {
                l.trim_end_matches(|c: char| !c.is_ascii_digit()).to_owned()
            } else {
                l
            }
        };
        let y_labels = vec![
            Span::styled(y_text(0.0), t.dim),
            Span::styled(y_text(y_max / 2.0), t.dim),
            Span::styled(y_text(y_max), t.dim),
        ];
        let chart = Chart::new(datasets)
            .block(block)
            .x_axis(
                Axis::default()
                    .bounds([-span, 0.0])
                    .labels(x_labels)
                    .style(t.dim),
            )
            .y_axis(
                Axis::default()
                    .bounds([0.0, y_max])
                    .labels(y_labels)
                    .style(t.dim),
            )
            .legend_position(None);
        if self
            .series
            .iter()
            .all(|s| s.points.iter().all(|p| p.1.is_none()))
        {
            block_only(self.title_line(area.width as usize), t, area, buf);
            return;
        }
        chart.render(area, buf);
    }
}

fn block_only(title: Line<'static>, t: &Theme, area: Rect, buf: &mut Buffer) {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border)
        .title(title);
    let inner = block.inner(area);
    block.render(area, buf);
    Line::from(Span::styled(" no data", t.dim)).render(inner, buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_split_lines() {
        let p = [
            (0.0, Some(1.0)),
            (1.0, None),
            (2.0, Some(2.0)),
            (3.0, Some(3.0)),
            (4.0, Some(f64::NAN)),
        ];
        assert_eq!(
            segments(&p),
            vec![vec![(0.0, 1.0)], vec![(2.0, 2.0), (3.0, 3.0)]]
        );
        assert!(segments(&[]).is_empty());
    }

    fn chart<'a>(theme: &'a Theme, names: &[&str]) -> TimeChart<'a> {
        TimeChart {
            title: "utilisation %".into(),
            series: names
                .iter()
                .map(|&name| Series {
                    name: name.into(),
                    style: Style::default(),
                    points: Vec::new(),
                    dots: false,
                })
                .collect(),
            span_s: 60.0,
            y_max: Some(100.0),
            y_label: &|v| format!("{v:.0}"),
            theme,
        }
    }

    fn text(l: &Line) -> String {
        l.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn a_legend_that_does_not_fit_beside_the_title_is_shown_alone() {
        let theme = Theme::new(crate::config::Theme::Dark, crate::theme::Depth::TrueColor);
        let c = chart(&theme, &["SM", "mem bw"]);
        // Room for all: the title and each series.
        assert_eq!(text(&c.title_line(40)), " utilisation % ━ SM ━ mem bw ");
        // An 80-column GPU view's chart (14 inside): the legend alone,
        // every series named.
        assert_eq!(text(&c.title_line(14)), " ━SM ━mem bw ");
        // Too narrow even for that: the title, and what fits beside it.
        assert_eq!(text(&c.title_line(12)), " utilisation % ");
        // One series: its title stays (the name says nothing alone).
        let one = chart(&theme, &["SM"]);
        assert_eq!(text(&one.title_line(14)), " utilisation % ");
    }
}
