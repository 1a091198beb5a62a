//! The process table's rows at one moment: filtered and sorted. A pure
//! function of History and view state, shared by `update` (selection,
//! paging) and the UI (drawing), so both see the same order.

use std::cmp::Ordering;

use crate::config::Column;
use crate::history::{History, ProcId, ProcPoint, ProcSeries};
use crate::model::Millis;

use super::cmdline;
use super::insight::ProcInsight;
use super::view::Sort;
use crate::analysis::Phase;

/// One line of the table.
#[derive(Clone, Debug)]
pub struct Row<'a> {
    pub series: &'a ProcSeries,
    /// `None` for an exited process (its last point is in `last`).
    pub point: Option<&'a ProcPoint>,
    /// The newest point it has (for exited processes: the last before exit).
    pub last: Option<&'a ProcPoint>,
    pub exited: bool,
    /// Share of its GPU's total memory, %.
    pub mem_pct: Option<f64>,
    /// Growth in bytes/s, when known (from the analysis).
    pub rate: Option<f64>,
    /// Highest memory as of the slot (nothing later counts), and when.
    pub peak: Option<(u64, Millis)>,
    /// What the memory sort orders by: the reading, or for a process the
    /// analysis finds swinging (or cannot tell yet) the highest of the last
    /// [`SORT_HOLD_MS`] (none for an exited process).
    pub held_mem: Option<u64>,
}

/// How long a swinging process (`∿ swings`: an allocator that frees and
/// takes back gigabytes every few seconds) keeps its place in the memory
/// sort after a fall: it sorts by its highest reading of this long, so its
/// row stays put instead of jumping past its neighbours twice a cycle.
/// That made rows hard to follow and was much of the table's redrawing on
/// a real recording (`tests/fixtures/h200/leak-oom.jsonl.zst`: 802 row
/// moves in 247 snapshots by the reading, 89 holding every process so). A
/// process still `warming up` (too few samples for a phase: every process
/// in the dashboard's first seconds) is held the same way; every other
/// process sorts by its reading.
pub const SORT_HOLD_MS: Millis = 5_000;

impl Row<'_> {
    pub fn id(&self) -> ProcId {
        self.series.id
    }

    pub fn mem(&self) -> Option<u64> {
        self.point.and_then(|p| p.mem)
    }

    pub fn age_s(&self, now_ms: Millis) -> u64 {
        let start = if self.series.id.key.start_time > 0 {
            self.series.id.key.start_time * 1000
        } else {
            self.series.first_seen_ms
        };
        now_ms.saturating_sub(start) / 1000
    }
}

/// The filter line, read: `gpu:N` (or `gpu:0,2`) and `user:NAME` terms
/// narrow to GPUs and users; the rest is a case-insensitive substring of
/// the command, name, user, container or PID.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub gpus: Vec<u32>,
    /// Lower case.
    pub users: Vec<String>,
    /// Lower case; empty matches everything.
    pub text: String,
}

impl Filter {
    pub fn parse(s: &str) -> Filter {
        let mut f = Filter::default();
        let mut rest: Vec<String> = Vec::new();
        for w in s.split_whitespace() {
            let lower = w.to_lowercase();
            if let Some(v) = lower.strip_prefix("gpu:") {
                let ids: Vec<u32> = v.split(',').filter_map(|x| x.parse().ok()).collect();
                if !ids.is_empty() {
                    f.gpus.extend(ids);
                    continue;
                }
            } else if let Some(v) = lower.strip_prefix("user:")
                && !v.is_empty()
            {
                f.users.push(v.to_owned());
                continue;
            }
            rest.push(lower);
        }
        f.text = rest.join(" ");
        f
    }

    pub fn is_empty(&self) -> bool {
        self.gpus.is_empty() && self.users.is_empty() && self.text.is_empty()
    }
}

/// `filter` with its `key:` terms replaced by `key:value` (none when
/// `value` is `None`); the other terms kept in order.
pub fn with_term(filter: &str, key: &str, value: Option<&str>) -> String {
    let prefix = format!("{key}:");
    let mut terms: Vec<String> = filter
        .split_whitespace()
        .filter(|w| !w.to_lowercase().starts_with(&prefix))
        .map(str::to_owned)
        .collect();
    if let Some(v) = value {
        terms.insert(0, format!("{prefix}{v}"));
    }
    terms.join(" ")
}

/// Whether a process passes the filter.
pub fn matches(s: &ProcSeries, filter: &Filter) -> bool {
    let f = &s.facts;
    if !filter.gpus.is_empty() && !filter.gpus.contains(&s.id.gpu) {
        return false;
    }
    if !filter.users.is_empty()
        && !f
            .user
            .as_deref()
            .is_some_and(|u| filter.users.iter().any(|x| *x == u.to_lowercase()))
    {
        return false;
    }
    let needle = &filter.text;
    if needle.is_empty() {
        return true;
    }
    let texts = [
        f.command.as_deref(),
        f.name.as_deref(),
        f.user.as_deref(),
        f.container.as_deref(),
        f.container_name.as_deref(),
        f.pod.as_deref(),
        f.namespace.as_deref(),
    ];
    texts
        .into_iter()
        .flatten()
        .any(|t| t.to_lowercase().contains(needle.as_str()))
        || s.id.key.pid.to_string().contains(needle.as_str())
        || f.ns_pid
            .is_some_and(|p| p.to_string().contains(needle.as_str()))
}

/// The COMMAND cell of each row as the table shows it unscrolled: each
/// command abbreviated to `width` characters against the other rows
/// (`usize::MAX`: whole, interpreter paths and flags dropped).
pub fn shown_commands(rows: &[Row], width: usize) -> Vec<String> {
    let labels: Vec<&str> = rows.iter().map(|r| r.series.facts.label()).collect();
    cmdline::abbreviate_all(&labels, width)
}

/// Rows listed at `slot`, filtered and sorted. `insight` gives what the
/// analysis says of a process (its growth, whether it swings) where it
/// knows it. The command sort goes by the cell as shown in a COMMAND
/// column `command_width` wide ([`shown_commands`]), A to Z whatever the
/// case, then by PID.
pub fn rows_at<'a>(
    history: &'a History,
    slot: u64,
    filter: &str,
    sort: Sort,
    insight: &dyn Fn(&ProcSeries) -> Option<ProcInsight>,
    command_width: usize,
) -> Vec<Row<'a>> {
    let filter = Filter::parse(filter);
    let totals: Vec<Option<u64>> = (0..history.gpu_count())
        .map(|i| history.gpu_at(i, slot).and_then(|g| g.mem.map(|m| m.total)))
        .collect();
    // The oldest slot within the sort's hold (none to look back on when
    // the sort is not by memory).
    let by_memory = matches!(sort.column, Column::Memory | Column::MemoryPct);
    let held_from = match history.time_at(slot) {
        Some(now) if by_memory => history
            .slot_at_time(now.saturating_sub(SORT_HOLD_MS))
            .map_or(history.first_slot(), |s| s + 1),
        _ => slot,
    };
    let rows: Vec<Row<'a>> = history
        .processes_at(slot)
        .into_iter()
        .filter(|(s, _)| matches(s, &filter))
        .map(|(s, exited)| {
            let point = if exited { None } else { s.at(slot) };
            let last = point.or_else(|| s.at(s.last_slot));
            let total = totals.get(s.id.gpu as usize).copied().flatten();
            let ins = if exited { None } else { insight(s) };
            // Held where the analysis finds it swinging or cannot tell yet
            // (`warming up`: every process in the dashboard's first seconds).
            let swings = ins
                .as_ref()
                .is_some_and(|i| matches!(i.phase, Phase::Volatile | Phase::Unknown));
            let mem_pct = match (point.and_then(|p| p.mem), total) {
                (Some(m), Some(t)) if t > 0 => Some(m as f64 * 100.0 / t as f64),
                _ => None,
            };
            Row {
                series: s,
                point,
                last,
                exited,
                mem_pct,
                rate: ins.as_ref().map(ProcInsight::shown_rate),
                peak: history.proc_peak_at(s, slot),
                held_mem: point.and_then(|p| p.mem).map(|now| {
                    if swings {
                        (held_from..slot)
                            .filter_map(|x| s.at(x).and_then(|p| p.mem))
                            .fold(now, u64::max)
                    } else {
                        now
                    }
                }),
            }
        })
        .collect();
    // The command sort's key: the cell as shown, folded to lower case.
    let keys: Vec<(String, String)> = if sort.column == Column::Command {
        shown_commands(&rows, command_width)
            .into_iter()
            .map(|c| (c.to_lowercase(), c))
            .collect()
    } else {
        vec![Default::default(); rows.len()]
    };
    let mut keyed: Vec<((String, String), Row<'a>)> = keys.into_iter().zip(rows).collect();
    keyed.sort_by(|(ka, a), (kb, b)| {
        // Exited processes go last whatever the sort.
        a.exited
            .cmp(&b.exited)
            .then_with(|| {
                let o = compare(a, b, sort.column).then_with(|| ka.cmp(kb));
                if sort.descending { o.reverse() } else { o }
            })
            // Commands shown the same: by PID, whichever way (two ranks
            // of a job keep their order); other ties by GPU, then PID.
            .then_with(|| match sort.column {
                Column::Command => a.id().key.pid.cmp(&b.id().key.pid),
                _ => Ordering::Equal,
            })
            .then_with(|| a.id().cmp(&b.id()))
    });
    keyed.into_iter().map(|(_, r)| r).collect()
}

fn cmp_opt<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => Ordering::Equal,
    }
}

fn compare(a: &Row, b: &Row, column: Column) -> Ordering {
    let fa = &a.series.facts;
    let fb = &b.series.facts;
    match column {
        Column::Gpu => a.id().gpu.cmp(&b.id().gpu),
        Column::Pid => a.id().key.pid.cmp(&b.id().key.pid),
        Column::User => fa.user.cmp(&fb.user),
        Column::Container => fa.container_label().cmp(&fb.container_label()),
        Column::Kind => fa.kind.letter().cmp(fb.kind.letter()),
        Column::Memory | Column::MemoryPct => cmp_opt(a.held_mem, b.held_mem),
        Column::Trend => cmp_opt(a.rate, b.rate),
        Column::Peak => cmp_opt(a.peak.map(|p| p.0), b.peak.map(|p| p.0)),
        Column::Alloc => cmp_opt(
            a.last.and_then(ProcPoint::torch_allocated),
            b.last.and_then(ProcPoint::torch_allocated),
        ),
        Column::Sm => cmp_opt(
            a.last.and_then(|p| p.sm_util),
            b.last.and_then(|p| p.sm_util),
        ),
        Column::Cpu => cmp_opt(
            a.last.and_then(|p| p.cpu_pct),
            b.last.and_then(|p| p.cpu_pct),
        ),
        Column::Rss => cmp_opt(a.last.and_then(|p| p.rss), b.last.and_then(|p| p.rss)),
        // Older first when ascending: sort by start, reversed.
        Column::Age => b.series.first_seen_ms.cmp(&a.series.first_seen_ms),
        // By the cell as shown: the caller's key.
        Column::Command => Ordering::Equal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{GpuSample, MemInfo, ProcSample, Snapshot};

    fn history() -> History {
        let mut h = History::new(100, 1000, 60_000);
        let p = |pid, mem, user: &str, cmd: &str| ProcSample {
            pid,
            start_time: 5,
            gpu: 0,
            mem: Some(mem),
            sm_util: Some(pid % 100),
            user: Some(user.into()),
            command: Some(cmd.into()),
            ..Default::default()
        };
        let gpu = GpuSample {
            index: 0,
            mem: Some(MemInfo {
                used: 600,
                reserved: 0,
                free: 400,
                total: 1000,
            }),
            ..Default::default()
        };
        h.push(&Snapshot {
            t_ms: 1000,
            gpus: vec![gpu.clone()],
            procs: vec![
                p(10, 100, "alice", "python train.py"),
                p(11, 300, "bob", "vllm serve"),
                p(12, 200, "alice", "jupyter"),
                p(13, 50, "carol", "gone soon"),
            ],
            ..Default::default()
        });
        h.push(&Snapshot {
            t_ms: 2000,
            gpus: vec![gpu],
            procs: vec![
                p(10, 100, "alice", "python train.py"),
                p(11, 300, "bob", "vllm serve"),
                p(12, 200, "alice", "jupyter"),
            ],
            ..Default::default()
        });
        h
    }

    fn pids(rows: &[Row]) -> Vec<u32> {
        rows.iter().map(|r| r.id().key.pid).collect()
    }

    #[test]
    fn default_sort_is_memory_descending_with_exited_last() {
        let h = history();
        let rows = rows_at(&h, 1, "", Sort::default(), &|_| None, usize::MAX);
        assert_eq!(pids(&rows), vec![11, 12, 10, 13]);
        assert!(rows[3].exited && rows[3].point.is_none() && rows[3].last.is_some());
        assert_eq!(rows[0].mem_pct, Some(30.0));
    }

    #[test]
    fn a_swinging_process_keeps_its_place_for_the_hold_after_a_fall() {
        // PID 1 swings between 800 and 100 every 2 s; PID 2 holds 500;
        // PID 3 falls from 900 to 50 and stays there.
        let mut h = History::new(100, 1000, 60_000);
        let p = |pid, mem| ProcSample {
            pid,
            start_time: 5,
            gpu: 0,
            mem: Some(mem),
            ..Default::default()
        };
        for i in 0..12u64 {
            let swing = if (i / 2) % 2 == 0 { 800 } else { 100 };
            let fall = if i < 6 { 900 } else { 50 };
            h.push(&Snapshot {
                t_ms: 1000 * (i + 1),
                procs: vec![p(1, swing), p(2, 500), p(3, fall)],
                ..Default::default()
            });
        }
        let phase = |pid: u32| {
            if pid == 1 {
                Phase::Volatile
            } else {
                Phase::Stable
            }
        };
        let insight = |s: &ProcSeries| {
            Some(ProcInsight {
                rate_bps: 0.0,
                phase: phase(s.id.key.pid),
                leak: None,
                full_in: None,
            })
        };
        // Slot 11: PID 1 reads 100 (slots 10-11 low, 8-9 high); PID 3 has
        // read 50 for 6 s and is not swinging: it sorts by its reading.
        let rows = rows_at(&h, 11, "", Sort::default(), &insight, usize::MAX);
        assert_eq!(rows[0].mem(), Some(100));
        assert_eq!(pids(&rows), vec![1, 2, 3]);
        assert_eq!(rows[0].held_mem, Some(800));
        // Without the analysis (or once it no longer swings) the reading
        // decides, as before.
        assert_eq!(
            pids(&rows_at(&h, 11, "", Sort::default(), &|_| None, usize::MAX)),
            vec![2, 1, 3]
        );
        // The hold looks back SORT_HOLD_MS, never past the slot shown.
        let rows = rows_at(&h, 1, "", Sort::default(), &insight, usize::MAX);
        assert_eq!(pids(&rows), vec![3, 1, 2]);
        assert_eq!(rows[1].held_mem, Some(800));
        // At slot 3 PID 1 reads 100 after two lows; the last high (slot 1) is
        // 2 s back, within the hold.
        let rows = rows_at(&h, 3, "", Sort::default(), &insight, usize::MAX);
        assert_eq!(rows[1].id().key.pid, 1);
        assert_eq!((rows[1].mem(), rows[1].held_mem), (Some(100), Some(800)));
        // A process the analysis cannot judge yet (`warming up`) is held
        // too: at slot 8 PID 3's fall (slot 6) is 2 s old.
        let warming = |_: &ProcSeries| {
            Some(ProcInsight {
                rate_bps: 0.0,
                phase: Phase::Unknown,
                leak: None,
                full_in: None,
            })
        };
        assert_eq!(
            pids(&rows_at(&h, 8, "", Sort::default(), &warming, usize::MAX)),
            vec![3, 1, 2]
        );
        assert_eq!(
            pids(&rows_at(&h, 8, "", Sort::default(), &insight, usize::MAX)),
            vec![1, 2, 3]
        );
        // Once the fall has held SORT_HOLD_MS it sorts by its reading.
        assert_eq!(
            pids(&rows_at(&h, 11, "", Sort::default(), &warming, usize::MAX)),
            vec![1, 2, 3]
        );
    }

    #[test]
    fn sorting_by_other_columns_and_inverting() {
        let h = history();
        let by = |column, descending| {
            pids(&rows_at(
                &h,
                1,
                "",
                Sort { column, descending },
                &|_| None,
                usize::MAX,
            ))
        };
        assert_eq!(by(Column::Pid, false), vec![10, 11, 12, 13]);
        assert_eq!(by(Column::Pid, true), vec![12, 11, 10, 13]);
        assert_eq!(by(Column::User, false), vec![10, 12, 11, 13]);
        assert_eq!(by(Column::Command, false), vec![12, 10, 11, 13]);
    }

    #[test]
    fn the_command_sort_goes_by_the_cell_as_shown_then_pid() {
        let mut h = History::new(100, 1000, 60_000);
        let p = |pid, cmd: &str| ProcSample {
            pid,
            start_time: 5,
            gpu: 0,
            mem: Some(100),
            command: Some(cmd.into()),
            ..Default::default()
        };
        let rank = |r| format!("/usr/bin/python3 -u /srv/app/train.py --rank {r}");
        h.push(&Snapshot {
            t_ms: 1000,
            procs: vec![
                p(20, &rank(1)),
                p(21, &rank(0)),
                p(22, "/opt/vllm/bin/vllm serve m"),
                p(23, "Xorg :0"),
                p(24, "jupyter lab"),
                // Shown as PID 21 is (its interpreter's flag is not).
                p(25, "/usr/bin/python3 /srv/app/train.py --rank 0"),
                p(26, "perl z.pl"),
                p(27, "python3 alpha.py --a-flag-that-is-long"),
            ],
            ..Default::default()
        });
        let by = |descending, width| {
            let sort = Sort {
                column: Column::Command,
                descending,
            };
            pids(&rows_at(&h, 0, "", sort, &|_| None, width))
        };
        // Not by the path (`/opt/…` before `/usr/…`, `X` before `j`): by
        // what the cell shows, A to Z whatever the case; the same text by
        // PID, whichever way.
        assert_eq!(by(false, 60), [24, 26, 27, 21, 25, 20, 22, 23]);
        assert_eq!(by(true, 60), [23, 22, 20, 21, 25, 27, 26, 24]);
        // Narrow, a script's interpreter gives way: `alpha.py --a-fla…`
        // is shown, and sorts, before `perl z.pl`.
        assert_eq!(by(false, 20), [27, 24, 26, 21, 25, 20, 22, 23]);
    }

    #[test]
    fn filter_matches_command_user_container_and_pid() {
        let h = history();
        let f = |s: &str| pids(&rows_at(&h, 1, s, Sort::default(), &|_| None, usize::MAX));
        assert_eq!(f("ALICE"), vec![12, 10]);
        assert_eq!(f("vllm"), vec![11]);
        assert_eq!(f("12"), vec![12]);
        assert!(f("nothing-like-this").is_empty());
        // GPU and user terms, with text or alone.
        assert_eq!(f("gpu:0"), vec![11, 12, 10, 13]);
        assert!(f("gpu:1").is_empty());
        assert_eq!(f("user:alice"), vec![12, 10]);
        assert_eq!(f("user:alice train"), vec![10]);
        assert_eq!(f("USER:Bob gpu:0,1"), vec![11]);
        // An unfinished term is text, and matches nothing yet.
        assert!(f("gpu:").is_empty());
    }

    #[test]
    fn terms_are_replaced_not_repeated() {
        assert_eq!(with_term("", "gpu", Some("1")), "gpu:1");
        assert_eq!(with_term("python gpu:0", "gpu", Some("1")), "gpu:1 python");
        assert_eq!(with_term("gpu:1 python", "gpu", None), "python");
        assert_eq!(with_term("user:bob", "user", Some("alice")), "user:alice");
    }

    #[test]
    fn growth_rates_come_from_the_caller_and_sort() {
        let h = history();
        let rate = |s: &ProcSeries| {
            Some(ProcInsight {
                rate_bps: f64::from(s.id.key.pid),
                phase: Phase::Growing,
                leak: None,
                full_in: None,
            })
        };
        let rows = rows_at(
            &h,
            1,
            "",
            Sort {
                column: Column::Trend,
                descending: true,
            },
            &rate,
            usize::MAX,
        );
        assert_eq!(pids(&rows), vec![12, 11, 10, 13]);
        assert_eq!(rows[3].rate, None, "exited processes have no trend");
    }
}
