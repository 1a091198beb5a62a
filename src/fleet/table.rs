//! The fleet's tables as pure functions: their columns (which fit a
//! width, in which order), sorting, filtering and the selection state. The
//! app and the drawing share them, so `s` cycles through the columns shown.

use std::cmp::Ordering;

use super::model::{AlertRow, Host, ProcRow};

/// A column of the hosts table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HostCol {
    Host,
    Gpus,
    Memory,
    Fullest,
    Util,
    Growth,
    FullIn,
    Alerts,
    Leaks,
    Scrape,
}

/// A column of the process tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProcCol {
    Host,
    Gpu,
    Pid,
    User,
    Memory,
    Growth,
    /// The leak flag, in a cell of its own so the growth stays aligned.
    Leak,
    Command,
}

/// A column of the drill-down's GPU lines (not sortable: GPUs in order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuCol {
    Gpu,
    Model,
    /// The bar, "in use / total" and the % (its flexible part is the bar).
    Memory,
    Growth,
    /// The sparklines of memory in use and utilisation.
    MemHistory,
    UtilHistory,
    Util,
    Temp,
    Power,
    FullIn,
}

/// A table's column and whether it is shown biggest (or worst) first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sort<C> {
    pub column: C,
    pub descending: bool,
}

/// Selection, scroll and filter of one table; rows are found by key.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableNav {
    pub selected: Option<String>,
    pub offset: usize,
    pub filter: String,
    pub filter_editing: bool,
}

/// A column: its title, width (the flexible ones: the least), whether it
/// is right-aligned, and its priority (the lowest goes first when narrow).
pub struct Spec {
    pub title: &'static str,
    pub width: u16,
    pub right: bool,
    pub keep: u8,
}

impl Spec {
    pub const fn new(title: &'static str, width: u16, right: bool, keep: u8) -> Spec {
        Spec {
            title,
            width,
            right,
            keep,
        }
    }
}

impl HostCol {
    pub const ALL: [HostCol; 10] = [
        HostCol::Host,
        HostCol::Gpus,
        HostCol::Memory,
        HostCol::Fullest,
        HostCol::Util,
        HostCol::Growth,
        HostCol::FullIn,
        HostCol::Alerts,
        HostCol::Leaks,
        HostCol::Scrape,
    ];

    pub fn spec(self) -> Spec {
        let s = Spec::new;
        match self {
            HostCol::Host => s("HOST", 10, false, 10),
            HostCol::Gpus => s("GPUS", 5, true, 8),
            HostCol::Memory => s("MEMORY", 20, false, 9),
            HostCol::Fullest => s("FULLEST", 8, true, 7),
            HostCol::Util => s("UTIL", 5, true, 2),
            HostCol::Growth => s("GROWTH", 8, true, 4),
            HostCol::FullIn => s("FULL IN", 8, true, 6),
            HostCol::Alerts => s("ALERTS", 7, true, 5),
            HostCol::Leaks => s("LEAKS", 6, true, 3),
            HostCol::Scrape => s("SCRAPE", 10, false, 8),
        }
    }

    /// Names A to Z and the soonest forecast first; figures biggest first;
    /// scrape health worst first.
    fn descending_first(self) -> bool {
        !matches!(self, HostCol::Host | HostCol::FullIn | HostCol::Scrape)
    }
}

impl ProcCol {
    pub const ALL: [ProcCol; 8] = [
        ProcCol::Host,
        ProcCol::Gpu,
        ProcCol::Pid,
        ProcCol::User,
        ProcCol::Memory,
        ProcCol::Growth,
        ProcCol::Leak,
        ProcCol::Command,
    ];

    pub fn spec(self) -> Spec {
        let s = Spec::new;
        match self {
            ProcCol::Host => s("HOST", 10, false, 9),
            ProcCol::Gpu => s("GPU", 4, true, 7),
            ProcCol::Pid => s("PID", 7, true, 6),
            ProcCol::User => s("USER", 9, false, 4),
            ProcCol::Memory => s("GPU MEM", 8, true, 10),
            ProcCol::Growth => s("GROWTH", 8, true, 5),
            ProcCol::Leak => s("LEAK", 4, false, 5),
            ProcCol::Command => s("COMMAND", 10, false, 8),
        }
    }

    fn descending_first(self) -> bool {
        matches!(self, ProcCol::Memory | ProcCol::Growth | ProcCol::Leak)
    }
}

/// The memory cell's fixed part: " 29.0G / 140G" and " 98%▲".
pub const GPU_MEMORY_TEXT: u16 = 20;

impl GpuCol {
    pub const ALL: [GpuCol; 10] = [
        GpuCol::Gpu,
        GpuCol::Model,
        GpuCol::Memory,
        GpuCol::Growth,
        GpuCol::MemHistory,
        GpuCol::UtilHistory,
        GpuCol::Util,
        GpuCol::Temp,
        GpuCol::Power,
        GpuCol::FullIn,
    ];

    /// The sparklines' titles add the span they cover ("MEM 10m").
    pub fn spec(self) -> Spec {
        let s = Spec::new;
        match self {
            GpuCol::Gpu => s("GPU", 3, true, 10),
            GpuCol::Model => s("MODEL", 6, false, 8),
            GpuCol::Memory => s("MEMORY", 8 + GPU_MEMORY_TEXT, false, 10),
            GpuCol::Growth => s("GROWTH", 8, true, 6),
            GpuCol::MemHistory => s("MEM", 8, false, 2),
            GpuCol::UtilHistory => s("UTIL", 8, false, 1),
            GpuCol::Util => s("UTIL", 5, true, 7),
            GpuCol::Temp => s("TEMP", 5, true, 5),
            GpuCol::Power => s("POWER", 5, true, 4),
            GpuCol::FullIn => s("FULL IN", 7, true, 3),
        }
    }
}

/// The columns of `all` that fit `width` (one space between), in order,
/// with their widths: the lowest `keep` is dropped first; the room left
/// goes to `flex` columns, in turn, up to each one's maximum.
pub fn fit<C: Copy + PartialEq>(
    all: &[C],
    spec: impl Fn(C) -> Spec,
    width: u16,
    flex: &[(C, u16)],
) -> Vec<(C, u16)> {
    let mut cols: Vec<C> = all.to_vec();
    let need = |cols: &[C]| -> u16 {
        cols.iter().map(|c| spec(*c).width).sum::<u16>() + cols.len().saturating_sub(1) as u16
    };
    while need(&cols) > width && cols.len() > 1 {
        let Some(i) = (0..cols.len()).min_by_key(|i| spec(cols[*i]).keep) else {
            break;
        };
        cols.remove(i);
    }
    let mut room = width.saturating_sub(need(&cols));
    let mut out: Vec<(C, u16)> = cols.iter().map(|c| (*c, spec(*c).width)).collect();
    for (c, max) in flex {
        if let Some(e) = out.iter_mut().find(|e| e.0 == *c) {
            let add = room.min(max.saturating_sub(e.1));
            e.1 += add;
            room -= add;
        }
    }
    out
}

/// The next sort among `shown` (forward or back); a column no longer shown
/// starts at either end.
pub fn next_sort<C: Copy + PartialEq>(
    cur: Sort<C>,
    shown: &[C],
    forward: bool,
    descending_first: impl Fn(C) -> bool,
) -> Sort<C> {
    if shown.is_empty() {
        return cur;
    }
    let n = shown.len() as isize;
    let d = if forward { 1 } else { -1 };
    let i = shown
        .iter()
        .position(|c| *c == cur.column)
        .map_or(if forward { -1 } else { 0 }, |i| i as isize);
    let column = shown[(i + d).rem_euclid(n) as usize];
    Sort {
        column,
        descending: descending_first(column),
    }
}

pub fn next_host_sort(cur: Sort<HostCol>, shown: &[HostCol], forward: bool) -> Sort<HostCol> {
    next_sort(cur, shown, forward, HostCol::descending_first)
}

pub fn next_proc_sort(cur: Sort<ProcCol>, shown: &[ProcCol], forward: bool) -> Sort<ProcCol> {
    next_sort(cur, shown, forward, ProcCol::descending_first)
}

/// Compares two optional figures: `None` last whichever the direction.
fn opt<T: PartialOrd>(a: Option<T>, b: Option<T>, desc: bool) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => {
            let o = x.partial_cmp(&y).unwrap_or(Ordering::Equal);
            if desc { o.reverse() } else { o }
        }
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

fn dir(o: Ordering, desc: bool) -> Ordering {
    if desc { o.reverse() } else { o }
}

/// Hosts whose name or a target contains `filter` (any case), sorted.
pub fn host_rows<'a>(hosts: &'a [Host], filter: &str, sort: Sort<HostCol>) -> Vec<&'a Host> {
    let f = filter.to_lowercase();
    let mut rows: Vec<&Host> = hosts
        .iter()
        .filter(|h| {
            f.is_empty()
                || h.name.to_lowercase().contains(&f)
                || h.instances.iter().any(|i| i.to_lowercase().contains(&f))
        })
        .collect();
    let d = sort.descending;
    rows.sort_by(|a, b| {
        let o = match sort.column {
            HostCol::Host => dir(a.name.cmp(&b.name), d),
            HostCol::Gpus => dir(a.gpus.cmp(&b.gpus), d),
            HostCol::Memory => opt(a.used_bytes, b.used_bytes, d),
            HostCol::Fullest => opt(a.fullest_pct, b.fullest_pct, d),
            HostCol::Util => opt(a.max_util_pct, b.max_util_pct, d),
            HostCol::Growth => opt(a.growth_bps, b.growth_bps, d),
            HostCol::FullIn => opt(a.full_in_s, b.full_in_s, d),
            HostCol::Alerts => dir(a.alerts.cmp(&b.alerts), d),
            HostCol::Leaks => dir(a.leaks.cmp(&b.leaks), d),
            HostCol::Scrape => dir(a.scrape.health.badness().cmp(&b.scrape.health.badness()), d),
        };
        o.then_with(|| a.name.cmp(&b.name))
    });
    rows
}

/// A process's key in its table.
pub fn proc_key(p: &ProcRow) -> String {
    format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{}",
        p.host, p.instance, p.gpu, p.pid
    )
}

/// Processes whose host, user, command, container or PID contains
/// `filter` (any case), sorted.
pub fn proc_rows<'a>(procs: &'a [ProcRow], filter: &str, sort: Sort<ProcCol>) -> Vec<&'a ProcRow> {
    let f = filter.to_lowercase();
    let mut rows: Vec<&ProcRow> = procs
        .iter()
        .filter(|p| {
            f.is_empty()
                || [&p.host, &p.user, &p.command, &p.container]
                    .iter()
                    .any(|s| s.to_lowercase().contains(&f))
                || p.pid.to_string() == f
        })
        .collect();
    let d = sort.descending;
    rows.sort_by(|a, b| {
        let o = match sort.column {
            ProcCol::Host => dir(a.host.cmp(&b.host), d),
            ProcCol::Gpu => dir(a.gpu.cmp(&b.gpu), d),
            ProcCol::Pid => dir(a.pid.cmp(&b.pid), d),
            ProcCol::User => dir(a.user.cmp(&b.user), d),
            ProcCol::Memory => dir(a.mem_bytes.cmp(&b.mem_bytes), d),
            ProcCol::Growth => opt(a.growth_bps, b.growth_bps, d),
            ProcCol::Leak => dir(a.leak.cmp(&b.leak), d),
            ProcCol::Command => dir(a.command.cmp(&b.command), d),
        };
        o.then_with(|| b.mem_bytes.cmp(&a.mem_bytes))
            .then_with(|| (&a.host, a.gpu, a.pid).cmp(&(&b.host, b.gpu, b.pid)))
    });
    rows
}

/// An alert's key in its table.
pub fn alert_key(a: &AlertRow) -> String {
    format!(
        "{:?}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
        a.source,
        a.host,
        a.name,
        a.gpu.as_deref().unwrap_or(""),
        a.pid.as_deref().unwrap_or("")
    )
}

impl TableNav {
    /// The selected row's index among `keys` (the first when the selected
    /// one is gone).
    pub fn index(&self, keys: &[String]) -> Option<usize> {
        if keys.is_empty() {
            return None;
        }
        let i = self
            .selected
            .as_ref()
            .and_then(|s| keys.iter().position(|k| k == s));
        Some(i.unwrap_or(self.offset.min(keys.len() - 1)))
    }

    /// Moves the selection by `delta` rows and scrolls it into a window of
    /// `height` rows.
    pub fn moved(&mut self, keys: &[String], delta: isize, height: usize) {
        let Some(cur) = self.index(keys) else {
            self.selected = None;
            self.offset = 0;
            return;
        };
        let next = (cur as isize)
            .saturating_add(delta)
            .clamp(0, keys.len() as isize - 1) as usize;
        self.selected = Some(keys[next].clone());
        self.scroll(keys, height);
    }

    /// Keeps the selection (or the first row) valid and on screen.
    pub fn scroll(&mut self, keys: &[String], height: usize) {
        let Some(sel) = self.index(keys) else {
            self.selected = None;
            self.offset = 0;
            return;
        };
        self.selected = Some(keys[sel].clone());
        let h = height.max(1);
        if sel < self.offset {
            self.offset = sel;
        } else if sel >= self.offset + h {
            self.offset = sel + 1 - h;
        }
        self.offset = self.offset.min(keys.len().saturating_sub(h));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, fullest: Option<f64>) -> Host {
        Host {
            name: name.into(),
            fullest_pct: fullest,
            ..Default::default()
        }
    }

    #[test]
    fn missing_figures_sort_last_both_ways() {
        let hosts = vec![
            host("a", None),
            host("b", Some(50.0)),
            host("c", Some(90.0)),
        ];
        let mut sort = Sort {
            column: HostCol::Fullest,
            descending: true,
        };
        let names = |s| -> Vec<String> {
            host_rows(&hosts, "", s)
                .iter()
                .map(|h| h.name.clone())
                .collect()
        };
        assert_eq!(names(sort), ["c", "b", "a"]);
        sort.descending = false;
        assert_eq!(names(sort), ["b", "c", "a"]);
    }

    #[test]
    fn narrow_tables_drop_the_least_kept_columns() {
        let all = fit(&HostCol::ALL, HostCol::spec, 200, &[(HostCol::Host, 28)]);
        assert_eq!(all.len(), HostCol::ALL.len());
        assert_eq!(all[0], (HostCol::Host, 28));
        let narrow = fit(&HostCol::ALL, HostCol::spec, 80, &[]);
        let cols: Vec<HostCol> = narrow.iter().map(|c| c.0).collect();
        assert!(!cols.contains(&HostCol::Util) && cols.contains(&HostCol::Scrape));
        let used: u16 = narrow.iter().map(|c| c.1).sum::<u16>() + narrow.len() as u16 - 1;
        assert!(used <= 80);
    }

    #[test]
    fn sort_cycles_through_the_columns_shown() {
        let shown = [HostCol::Host, HostCol::Fullest, HostCol::Scrape];
        let s = Sort {
            column: HostCol::Fullest,
            descending: true,
        };
        let n = next_host_sort(s, &shown, true);
        assert_eq!((n.column, n.descending), (HostCol::Scrape, false));
        let n = next_host_sort(n, &shown, true);
        assert_eq!((n.column, n.descending), (HostCol::Host, false));
        let p = next_host_sort(n, &shown, false);
        assert_eq!(p.column, HostCol::Scrape);
    }

    #[test]
    fn the_selection_follows_its_row_and_stays_visible() {
        let keys: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        let mut t = TableNav::default();
        t.moved(&keys, 7, 3);
        assert_eq!(t.selected.as_deref(), Some("7"));
        assert_eq!(t.offset, 5);
        let fewer: Vec<String> = keys.iter().filter(|k| *k != "7").cloned().collect();
        t.scroll(&fewer, 3);
        assert!(t.selected.is_some());
        t.moved(&keys, -100, 3);
        assert_eq!((t.selected.as_deref(), t.offset), (Some("0"), 0));
    }
}
