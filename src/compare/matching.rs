//! Which process and which GPU of the new recording is which of the
//! baseline's: never by PID (docs/baseline.md, "Matching").
//!
//! Processes, in two rounds, each pairing the k-th process (in order of
//! start) with a key in one run with the k-th with the same key in the
//! other:
//! 1. **command**: the normalised command line ([`normalise`]) and the user;
//! 2. **program**: among those left, the program and script
//!    ([`program`]) and the user.
//!
//! GPUs: `gpu_match`.

use std::collections::BTreeMap;

use super::normalize::{normalise, program};
use super::stats::ProcStats;

/// Why two processes were paired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProcBasis {
    Command,
    Program,
}

impl ProcBasis {
    pub(crate) fn name(self) -> &'static str {
        match self {
            ProcBasis::Command => "command",
            ProcBasis::Program => "program",
        }
    }
}

/// What a process is matched by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ident {
    pub(crate) command: String,
    pub(crate) program: String,
    pub(crate) user: String,
    /// Start (unix s, else first seen), first seen (ms), GPU, PID.
    pub(crate) order: (u64, u64, u32, u32),
}

impl Ident {
    pub(crate) fn of(p: &ProcStats) -> Ident {
        let start = match p.id.key.start_time {
            0 => p.first_seen / 1000,
            s => s,
        };
        Ident {
            command: normalise(&p.command, p.id.key.pid),
            program: program(&p.command),
            user: p.user.clone(),
            order: (start, p.first_seen, p.id.gpu, p.id.key.pid),
        }
    }
}

/// Pairs processes: (new, baseline, basis), by position in the slices.
pub(crate) fn match_procs(new: &[Ident], old: &[Ident]) -> Vec<(usize, usize, ProcBasis)> {
    let mut out = Vec::new();
    let mut new_left = vec![true; new.len()];
    let mut old_left = vec![true; old.len()];
    for basis in [ProcBasis::Command, ProcBasis::Program] {
        let key = |i: &Ident| match basis {
            ProcBasis::Command => (i.command.clone(), i.user.clone()),
            ProcBasis::Program => (i.program.clone(), i.user.clone()),
        };
        let group = |ids: &[Ident], left: &[bool]| {
            let mut g: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
            for (n, id) in ids.iter().enumerate().filter(|(n, _)| left[*n]) {
                g.entry(key(id)).or_default().push(n);
            }
            for v in g.values_mut() {
                v.sort_by_key(|&n| ids[n].order);
            }
            g
        };
        let olds = group(old, &old_left);
        for (k, news) in group(new, &new_left) {
            let Some(os) = olds.get(&k) else { continue };
            for (&a, &b) in news.iter().zip(os) {
                new_left[a] = false;
                old_left[b] = false;
                out.push((a, b, basis));
            }
        }
    }
    out.sort_by_key(|&(a, _, _)| new[a].order);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(cmd: &str, pid: u32, user: &str, start: u64, gpu: u32) -> Ident {
        Ident {
            command: normalise(cmd, pid),
            program: program(cmd),
            user: user.into(),
            order: (start, start * 1000, gpu, pid),
        }
    }

    fn pairs(new: &[Ident], old: &[Ident]) -> Vec<(usize, usize, ProcBasis)> {
        match_procs(new, old)
    }

    use ProcBasis::{Command as C, Program as P};

    #[test]
    fn a_new_pid_is_the_same_process() {
        let old = [id("python train.py --cfg a.yaml", 100, "u", 10, 0)];
        let new = [id("python train.py --cfg a.yaml", 90_000, "u", 500, 1)];
        assert_eq!(pairs(&new, &old), vec![(0, 0, C)]);
    }

    #[test]
    fn volatile_arguments_do_not_stop_a_match() {
        let old = [id(
            "python t.py --port 29500 --out /tmp/a1/x --run 2026-11-30T10:00:00 --id 3fa9c2d1 --pid 100",
            100,
            "u",
            10,
            0,
        )];
        let new = [id(
            "python t.py --port 29611 --out /tmp/zz/x --run 2026-12-01T11:12:13 --id 77ab01ff --pid 555",
            555,
            "u",
            20,
            0,
        )];
        assert_eq!(pairs(&new, &old), vec![(0, 0, C)]);
    }

    #[test]
    fn restarted_jobs_pair_in_order_of_start_and_extra_runs_stay_unmatched() {
        let old = [
            id("python train.py", 10, "u", 100, 0),
            id("python train.py", 11, "u", 200, 0),
        ];
        // Three runs this time (two restarts after OOMs), listed out of order.
        let new = [
            id("python train.py", 52, "u", 900, 0),
            id("python train.py", 50, "u", 700, 0),
            id("python train.py", 51, "u", 800, 0),
        ];
        assert_eq!(pairs(&new, &old), vec![(1, 0, C), (2, 1, C)]);
    }

    #[test]
    fn reordered_starts_of_different_jobs_still_pair_by_command() {
        let old = [
            id("python eval.py", 1, "u", 10, 0),
            id("python train.py", 2, "u", 20, 0),
        ];
        let new = [
            id("python train.py", 3, "u", 10, 0),
            id("python eval.py", 4, "u", 20, 0),
        ];
        assert_eq!(pairs(&new, &old), vec![(0, 1, C), (1, 0, C)]);
    }

    #[test]
    fn extra_processes_and_other_users_are_unmatched() {
        let old = [id("python train.py", 1, "alice", 10, 0)];
        let new = [
            id("python train.py", 2, "bob", 10, 0),
            id("python train.py", 3, "alice", 11, 0),
            id("nvtop", 4, "alice", 12, 0),
        ];
        assert_eq!(pairs(&new, &old), vec![(1, 0, C)]);
    }

    #[test]
    fn changed_options_fall_back_to_the_program() {
        let old = [
            id(
                "python3 /w/healthy_train.py --device 1 --speed 2 --seconds 40",
                1196,
                "root",
                10,
                1,
            ),
            id("python3 /w/weights_load.py --device 0", 1267, "root", 20, 0),
        ];
        let new = [
            id(
                "python3 /w/healthy_train.py --device 0 --speed 3 --seconds 35",
                1401,
                "root",
                10,
                0,
            ),
            id("python3 /w/dataset_load.py --device 1", 1470, "root", 30, 1),
        ];
        assert_eq!(pairs(&new, &old), vec![(0, 0, P)]);
    }

    #[test]
    fn exact_matches_are_taken_before_program_matches() {
        let old = [
            id("python train.py --cfg b.yaml", 1, "u", 10, 0),
            id("python train.py --cfg a.yaml", 2, "u", 20, 0),
        ];
        let new = [
            id("python train.py --cfg a.yaml", 3, "u", 10, 0),
            id("python train.py --cfg c.yaml", 4, "u", 20, 0),
        ];
        assert_eq!(pairs(&new, &old), vec![(0, 1, C), (1, 0, P)]);
    }
}
