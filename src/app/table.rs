//! The process table's selection, scrolling, sort and filter.

use super::App;
use super::rows::Row;
use super::view::Sort;
use crate::config::Column;
use crate::history::ProcId;

/// Numbers sort biggest first, names A to Z.
fn default_descending(c: Column) -> bool {
    !matches!(
        c,
        Column::User
            | Column::Container
            | Column::Command
            | Column::Kind
            | Column::Gpu
            | Column::Pid
    )
}

impl App {
    /// Keeps a valid selection: the top row until the user chooses one,
    /// then the same process while it is listed, else the row at the same
    /// place.
    pub(super) fn fix_selection(&mut self) {
        // The memory sort holds by what the analysis says at the slot on
        // screen: bring a paused screen's analysis there first.
        self.sync_paused();
        let ids: Vec<ProcId> = self.rows().iter().map(Row::id).collect();
        if ids.is_empty() {
            self.table.selected = None;
            self.table.offset = 0;
            return;
        }
        if !self.table.pinned {
            self.table.selected = Some(ids[0]);
        } else if self.table.selected.is_none_or(|s| !ids.contains(&s)) {
            let i = self.table.offset.min(ids.len() - 1);
            self.table.selected = Some(ids[i]);
        }
        self.keep_selection_visible();
    }

    pub(super) fn keep_selection_visible(&mut self) {
        let rows = self.rows();
        let n = rows.len();
        let sel = self.selected_index(&rows).unwrap_or(0);
        drop(rows);
        let h = self.table_height().max(1);
        let t = &mut self.table;
        if sel < t.offset {
            t.offset = sel;
        } else if sel >= t.offset + h {
            t.offset = sel + 1 - h;
        }
        t.offset = t.offset.min(n.saturating_sub(h));
    }

    pub(super) fn move_selection(&mut self, delta: isize) {
        let rows = self.rows();
        if rows.is_empty() {
            return;
        }
        let cur = self.selected_index(&rows).unwrap_or(0) as isize;
        let next = (cur + delta).clamp(0, rows.len() as isize - 1) as usize;
        let id = rows[next].id();
        drop(rows);
        self.table.selected = Some(id);
        // Back on the top row by `g` or the arrows: follow the top again.
        self.table.pinned = next != 0;
        self.keep_selection_visible();
    }

    /// Selects the process at table row `i` (a click).
    pub(super) fn select_row(&mut self, i: usize) {
        if let Some(id) = self.rows().get(i).map(Row::id) {
            self.select_id(id);
            self.nav.focus = super::Pane::Procs;
        }
    }

    /// Selects process `id` and keeps the selection on it (not on the
    /// top row) as the table moves.
    pub(super) fn select_id(&mut self, id: ProcId) {
        self.table.selected = Some(id);
        self.table.pinned = true;
    }

    /// Sorts by `column` (a click on its header); on the column already
    /// sorted by, inverts.
    pub(super) fn sort_by(&mut self, column: Column) {
        if column == Column::MemoryPct {
            return self.sort_by(Column::Memory);
        }
        if self.table.sort.column == column {
            return self.invert_sort();
        }
        self.table.sort = Sort {
            column,
            descending: default_descending(column) != self.table.inverted,
        };
        self.keep_selection_visible();
    }

    /// Width of the table's COMMAND column at the terminal's size, where
    /// it is shown (the table is as wide as the terminal).
    pub fn command_width(&self) -> Option<usize> {
        let width = self.nav.size.0;
        if width == 0 {
            return None;
        }
        super::layout::command_column_width(&self.settings.config.display.columns, width)
    }

    /// Shift-←/→: scrolls the command column by `delta` characters, until
    /// the end of the longest command is in view.
    pub(super) fn scroll_command(&mut self, delta: i32) {
        let lens: Vec<usize> = self
            .rows()
            .iter()
            .map(|r| r.series.facts.label().chars().count())
            .collect();
        let max = super::cmdline::max_scroll(lens, self.command_width().unwrap_or(8));
        let next = (self.table.hscroll as i64 + delta as i64).clamp(0, max as i64);
        self.table.hscroll = next.min(u16::MAX as i64) as u16;
    }

    /// `s`/`>` (forward) and `<` (back) through the columns shown at the
    /// current width.
    pub(super) fn cycle_sort(&mut self, forward: bool) {
        let cols: Vec<Column> =
            super::layout::sortable_columns(&self.settings.config.display.columns, self.nav.size.0);
        if cols.is_empty() {
            return;
        }
        let d = if forward { 1 } else { -1 };
        // From a column no longer shown, start at either end.
        let i = cols
            .iter()
            .position(|c| *c == self.table.sort.column)
            .map_or(if d > 0 { -1 } else { 0 }, |i| i as isize);
        let n = cols.len() as isize;
        let next = cols[((i + d).rem_euclid(n)) as usize];
        // A column's own direction, turned while the user has inverted.
        self.table.sort = Sort {
            column: next,
            descending: default_descending(next) != self.table.inverted,
        };
        self.keep_selection_visible();
    }

    pub(super) fn invert_sort(&mut self) {
        self.table.sort.descending = !self.table.sort.descending;
        self.table.inverted =
            self.table.sort.descending != default_descending(self.table.sort.column);
        self.keep_selection_visible();
    }

    /// A key while the filter line has the keyboard.
    pub(super) fn on_filter_key(&mut self, k: crossterm::event::KeyEvent) {
        use crossterm::event::{KeyCode, KeyModifiers};
        let f = &mut self.table;
        let mut cleared = false;
        match k.code {
            KeyCode::Enter => f.filter_editing = false,
            KeyCode::Backspace => {
                f.filter.pop();
            }
            KeyCode::Char(c) if !k.modifiers.contains(KeyModifiers::CONTROL) => {
                // At most 64 characters; more are ignored.
                let room = f.filter.chars().count() < 64;
                f.filter.extend(room.then_some(c));
            }
            // Esc, or Ctrl-C (a plain 'c' is text, above).
            KeyCode::Esc | KeyCode::Char('c') => {
                f.filter_editing = false;
                f.filter.clear();
                cleared = true;
            }
            _ => {}
        }
        self.table.offset = 0;
        // Typing follows the top match; clearing keeps the process found.
        self.table.pinned = cleared && self.table.selected.is_some();
        self.fix_selection();
    }

    /// Replaces the filter's `key:` term (a click on a GPU, `u`).
    pub(super) fn set_filter_term(&mut self, key: &str, value: Option<&str>) {
        self.table.filter = super::rows::with_term(&self.table.filter, key, value);
        self.table.offset = 0;
        self.table.pinned = false;
        self.fix_selection();
    }

    pub(super) fn start_filter(&mut self) {
        self.table.filter_editing = true;
        self.nav.focus = super::Pane::Procs;
    }

    /// Clears the filter; false when there was none.
    pub(super) fn clear_filter(&mut self) -> bool {
        if self.table.filter.is_empty() {
            return false;
        }
        self.table.filter.clear();
        // The process the filter found stays selected (as htop's does).
        self.table.pinned = self.table.selected.is_some();
        self.fix_selection();
        true
    }
}
