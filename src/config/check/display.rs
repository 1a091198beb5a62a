//! `[display]`: the theme, colours, the columns of the process table, the
//! charts' rows and the events pane.

use std::ops::Range;

use toml::Spanned;

use super::Validator;
use crate::config::load::{Position, cap};
use crate::config::raw::{self, Scalar, Text};
use crate::config::shape::closest;
use crate::config::{ColorDepth, Column, Display, EventsPane, MAX_CHART_ROWS, Theme};

impl Validator<'_> {
    pub(super) fn display(&mut self, r: raw::RawDisplay) -> Display {
        let d = Display::default();
        let theme = self.one_of(
            "[display] theme",
            r.theme.as_ref(),
            &[
                ("dark", Theme::Dark),
                ("light", Theme::Light),
                ("mono", Theme::Mono),
            ],
            d.theme,
        );
        let color = match &r.color {
            None => d.color,
            Some(f) => {
                let v = match &f.get_ref().value {
                    Scalar::Str(s) => match s.as_str() {
                        "auto" => Some(ColorDepth::Auto),
                        "16" => Some(ColorDepth::Ansi16),
                        "256" => Some(ColorDepth::Ansi256),
                        "truecolor" => Some(ColorDepth::TrueColor),
                        _ => None,
                    },
                    Scalar::Num(16.0) => Some(ColorDepth::Ansi16),
                    Scalar::Num(256.0) => Some(ColorDepth::Ansi256),
                    Scalar::Num(_) => None,
                };
                v.unwrap_or_else(|| {
                    let echo = self.echo(&f.span());
                    let must = self.must_be(&f.span(), "\"auto\", 16, 256 or \"truecolor\"");
                    self.bad(Some(f.span()), format!("[display] color = {echo}: {must}"));
                    d.color
                })
            }
        };
        let events = self.one_of(
            "[display] events",
            r.events.as_ref(),
            &[
                ("auto", EventsPane::Auto),
                ("open", EventsPane::Open),
                ("closed", EventsPane::Closed),
            ],
            d.events,
        );
        let columns = match &r.columns {
            None => d.columns.clone(),
            Some(list) => self.columns(list).unwrap_or(d.columns),
        };
        Display {
            theme,
            color,
            columns,
            mouse: Self::boolean(&r.mouse, d.mouse),
            ascii: Self::boolean(&r.ascii, d.ascii),
            chart_rows: self
                .whole(
                    &r.chart_rows,
                    "[display] chart_rows",
                    1..=MAX_CHART_ROWS as i64,
                )
                .map_or(d.chart_rows, |v| v as u16),
            events,
        }
    }

    /// One of `choices` by its name, `default` when absent; any other
    /// string is a problem naming them all.
    fn one_of<K, T: Copy>(
        &mut self,
        label: &str,
        f: Option<&Spanned<Text<K>>>,
        choices: &[(&str, T)],
        default: T,
    ) -> T {
        let Some(f) = f else {
            return default;
        };
        let name = self.string_of(label, f);
        if let Some(&(_, v)) = choices.iter().find(|(n, _)| Some(*n) == name.as_deref()) {
            return v;
        }
        if name.is_some() {
            let names: Vec<String> = choices.iter().map(|(n, _)| format!("\"{n}\"")).collect();
            let list = match names.split_last() {
                Some((last, [])) => last.clone(),
                Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                None => String::new(),
            };
            let echo = self.echo(&f.span());
            self.bad(Some(f.span()), format!("{label} = {echo}: must be {list}"));
        }
        default
    }

    fn columns(
        &mut self,
        list: &Spanned<Vec<Spanned<Text<raw::ColumnKind>>>>,
    ) -> Option<Vec<Column>> {
        let label = "[display] columns";
        if list.get_ref().is_empty() {
            self.bad(
                Some(list.span()),
                format!("{label} = []: list at least one column"),
            );
            return None;
        }
        let mut out: Vec<(Column, Range<usize>)> = Vec::new();
        let mut ok = true;
        for item in list.get_ref() {
            let Some(name) = self.string_of(label, item) else {
                ok = false;
                continue;
            };
            match Column::from_name(&name) {
                Some(c) => {
                    if let Some((_, first)) = out.iter().find(|(o, _)| *o == c) {
                        let at = Position::of(self.text, first.start);
                        self.bad(
                            Some(item.span()),
                            format!(
                                "{label}: `{}` is listed twice (first at column {})",
                                cap(&name),
                                at.column
                            ),
                        );
                        ok = false;
                    } else {
                        out.push((c, item.span()));
                    }
                }
                None => {
                    let names = Column::ALL.map(Column::name);
                    let hint = match closest(&name, names) {
                        Some(c) => format!("did you mean `{c}`?"),
                        None => format!("valid columns: {}", names.join(", ")),
                    };
                    let name = cap(&name);
                    self.bad(
                        Some(item.span()),
                        format!("{label}: unknown column `{name}`; {hint}"),
                    );
                    ok = false;
                }
            }
        }
        ok.then(|| out.into_iter().map(|(c, _)| c).collect())
    }
}
