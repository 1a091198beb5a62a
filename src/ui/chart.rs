//! A time chart over History: x is seconds before the slot on screen, lines
//! break at gaps, y is labelled in the series' unit.

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

impl Widget for &TimeChart<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(t.border)
            .title(Span::styled(format!(" {} ", self.title), t.title));
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
        let mut datasets: Vec<Dataset> = Vec::new();
        let mut named = std::collections::HashSet::new();
        for (seg, s) in &segs {
            let mut d = Dataset::default()
                .data(seg)
                .style(s.style)
                .marker(if s.dots { Marker::Dot } else { Marker::Braille })
                .graph_type(if s.dots || seg.len() == 1 {
                    GraphType::Scatter
                } else {
                    GraphType::Line
                });
            if named.insert(s.name.clone()) {
                d = d.name(s.name.clone());
            }
            datasets.push(d);
        }
        let span = self.span_s.max(1.0);
        let x_labels = vec![
            Span::styled(format!("-{}", duration_short(span as u64)), t.dim),
            Span::styled(format!("-{}", duration_short((span / 2.0) as u64)), t.dim),
            Span::styled("now", t.dim),
        ];
        let y_labels = vec![
            Span::styled((self.y_label)(0.0), t.dim),
            Span::styled((self.y_label)(y_max / 2.0), t.dim),
            Span::styled((self.y_label)(y_max), t.dim),
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
            .legend_position(Some(ratatui::widgets::LegendPosition::TopLeft))
            .hidden_legend_constraints((
                ratatui::layout::Constraint::Ratio(1, 2),
                ratatui::layout::Constraint::Ratio(1, 2),
            ));
        if self
            .series
            .iter()
            .all(|s| s.points.iter().all(|p| p.1.is_none()))
        {
            block_only(&self.title, t, area, buf);
            return;
        }
        chart.render(area, buf);
    }
}

fn block_only(title: &str, t: &Theme, area: Rect, buf: &mut Buffer) {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border)
        .title(Span::styled(format!(" {title} "), t.title));
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
}
