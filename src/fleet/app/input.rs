//! The fleet dashboard's input: keys, the filter line and the mouse, each
//! turned into a change of [`FleetApp`]'s state or an [`Action`].

use crossterm::event::{KeyEvent, KeyEventKind, MouseEvent, MouseEventKind};

use super::*;

impl FleetApp {
    pub(super) fn move_selection(&mut self, delta: isize) {
        let t = self.table();
        let keys = self.keys(t);
        let h = self.table_height(t);
        self.navs[t as usize].moved(&keys, delta, h);
    }

    pub(super) fn on_key(&mut self, k: KeyEvent) -> Option<Action> {
        if k.kind == KeyEventKind::Release {
            return None;
        }
        if self.navs[self.table() as usize].filter_editing {
            self.on_filter_key(k);
            return None;
        }
        let intent = self.settings.config.keys.action(&k)?;
        if self.help {
            match intent {
                Intent::Quit => return Some(Action::Quit),
                Intent::Help | Intent::Back | Intent::Enter => self.help = false,
                _ => {}
            }
            return None;
        }
        self.on_intent(intent)
    }

    pub(super) fn on_intent(&mut self, intent: Intent) -> Option<Action> {
        let page = self.table_height(self.table()) as isize;
        match intent {
            Intent::Quit => return Some(Action::Quit),
            Intent::Suspend => return Some(Action::Suspend),
            Intent::Help => self.help = true,
            Intent::Up => self.move_selection(-1),
            Intent::Down => self.move_selection(1),
            Intent::PageUp => self.move_selection(-page),
            Intent::PageDown => self.move_selection(page),
            Intent::First | Intent::Home => self.move_selection(isize::MIN / 2),
            Intent::Last | Intent::End => self.move_selection(isize::MAX / 2),
            Intent::Enter => self.enter(),
            Intent::Back => self.back(),
            Intent::Filter => self.navs[self.table() as usize].filter_editing = true,
            Intent::SortNext | Intent::SortNextColumn => self.cycle_sort(true),
            Intent::SortPrev => self.cycle_sort(false),
            Intent::InvertSort => self.invert_sort(),
            Intent::NextPane => {
                let i = Tab::ALL.iter().position(|t| *t == self.tab).unwrap_or(0);
                self.show_tab(Tab::ALL[(i + 1) % Tab::ALL.len()]);
            }
            Intent::Events => self.show_tab(if self.tab == Tab::Events && self.open.is_none() {
                Tab::Hosts
            } else {
                Tab::Events
            }),
            Intent::Pause => self.paused = !self.paused,
            // `r`: the local dashboard's "record" key refreshes here.
            Intent::Record => self.refresh_now(),
            _ => {}
        }
        None
    }

    pub(super) fn show_tab(&mut self, tab: Tab) {
        self.tab = tab;
        self.open = None;
        self.refresh_soon();
        self.fix_all();
    }

    /// Enter: open the selected row's host.
    pub(super) fn enter(&mut self) {
        let host = match self.table() {
            Table::Detail => None,
            Table::Hosts => self.selected_of(Table::Hosts, |a| {
                a.host_rows().into_iter().map(|h| h.name.clone()).collect()
            }),
            Table::Procs => self.selected_of(Table::Procs, |a| {
                a.proc_rows().into_iter().map(|p| p.host.clone()).collect()
            }),
            Table::Events => self.selected_of(Table::Events, |a| {
                a.event_rows().into_iter().map(|e| e.host.clone()).collect()
            }),
        };
        let Some(host) = host.filter(|h| !h.is_empty()) else {
            return;
        };
        if self.detail.as_ref().is_some_and(|d| d.host != host) {
            self.detail = None;
        }
        self.open = Some(host);
        self.navs[Table::Detail as usize] = TableNav::default();
        self.refresh_soon();
        self.fix_all();
    }

    /// The host of the selected row of `t`, given each row's host.
    pub(super) fn selected_of(
        &self,
        t: Table,
        hosts: impl Fn(&Self) -> Vec<String>,
    ) -> Option<String> {
        let i = self.selected(t)?;
        hosts(self).into_iter().nth(i)
    }

    /// Esc: clear the filter, else close the host.
    pub(super) fn back(&mut self) {
        let t = self.table();
        if !self.navs[t as usize].filter.is_empty() {
            self.navs[t as usize].filter.clear();
            self.fix_all();
            return;
        }
        if self.open.take().is_some() {
            self.refresh_soon();
            self.fix_all();
        }
    }

    pub(super) fn cycle_sort(&mut self, forward: bool) {
        let w = self.size.0;
        match self.table() {
            Table::Hosts => {
                let shown: Vec<HostCol> = host_columns(w).into_iter().map(|c| c.0).collect();
                self.host_sort = table::next_host_sort(self.host_sort, &shown, forward);
            }
            Table::Procs | Table::Detail => {
                let host = self.table() == Table::Procs;
                let shown: Vec<ProcCol> = proc_columns(w, host).into_iter().map(|c| c.0).collect();
                self.proc_sort = table::next_proc_sort(self.proc_sort, &shown, forward);
            }
            Table::Events => {}
        }
        self.fix_all();
    }

    pub(super) fn invert_sort(&mut self) {
        match self.table() {
            Table::Hosts => self.host_sort.descending = !self.host_sort.descending,
            Table::Procs | Table::Detail => self.proc_sort.descending = !self.proc_sort.descending,
            Table::Events => {}
        }
        self.fix_all();
    }

    pub(super) fn on_filter_key(&mut self, k: KeyEvent) {
        use crossterm::event::{KeyCode, KeyModifiers};
        let t = self.table() as usize;
        let nav = &mut self.navs[t];
        match k.code {
            KeyCode::Enter => nav.filter_editing = false,
            KeyCode::Esc => {
                nav.filter_editing = false;
                nav.filter.clear();
            }
            KeyCode::Backspace => {
                nav.filter.pop();
            }
            KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                nav.filter_editing = false;
                nav.filter.clear();
            }
            KeyCode::Char(c)
                if !k.modifiers.contains(KeyModifiers::CONTROL)
                    && nav.filter.chars().count() < 64 =>
            {
                nav.filter.push(c);
            }
            _ => {}
        }
        nav.offset = 0;
        self.fix_all();
    }

    pub(super) fn on_mouse(&mut self, m: MouseEvent) {
        if !self.settings.config.display.mouse || self.help {
            return;
        }
        match m.kind {
            MouseEventKind::ScrollDown => self.move_selection(3),
            MouseEventKind::ScrollUp => self.move_selection(-3),
            _ => {}
        }
    }
}
