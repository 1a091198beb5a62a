//! Per-process series: the point kept per slot, the facts kept once, and
//! the History queries over processes (peaks as of a slot, who is listed).

use std::collections::VecDeque;
use std::sync::Arc;

use super::History;
use crate::model::{Millis, ProcId, ProcKind, ProcSample};

/// What changes per slot for a process.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProcPoint {
    pub mem: Option<u64>,
    pub mem_peak: Option<u64>,
    pub sm_util: Option<u32>,
    pub mem_util: Option<u32>,
    pub enc_util: Option<u32>,
    pub dec_util: Option<u32>,
    pub cpu_pct: Option<f32>,
    pub rss: Option<u64>,
    /// The allocator figures the sample carried, as published (shared with
    /// the slots before while the publish is the same): a paused or
    /// replayed analysis sees what the live one saw then, not the newest.
    pub torch: Option<Arc<crate::model::alloc::AllocStats>>,
}

impl ProcPoint {
    /// PyTorch allocator: bytes held by tensors.
    pub fn torch_allocated(&self) -> Option<u64> {
        self.torch.as_ref()?.devices.first().map(|d| d.allocated)
    }

    /// PyTorch allocator: bytes reserved from the driver.
    pub fn torch_reserved(&self) -> Option<u64> {
        self.torch.as_ref()?.devices.first().map(|d| d.reserved)
    }
}

/// What does not change for a process.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcFacts {
    pub kind: ProcKind,
    pub user: Option<Arc<str>>,
    pub name: Option<Arc<str>>,
    pub command: Option<Arc<str>>,
    pub container: Option<Arc<str>>,
    pub ns_pid: Option<u32>,
    /// The container's name, and its Kubernetes pod and namespace, where a
    /// local source says them (they may arrive some rounds after the
    /// process: the lookup is off the sampler's path).
    pub container_name: Option<Arc<str>>,
    pub pod: Option<Arc<str>>,
    pub namespace: Option<Arc<str>>,
}

impl ProcFacts {
    /// The container as the table shows it: its name, else its id.
    pub fn container_label(&self) -> Option<&str> {
        self.container_name.as_deref().or(self.container.as_deref())
    }

    /// `namespace/pod`, or the pod alone, where known.
    pub fn pod_label(&self) -> Option<String> {
        let pod = self.pod.as_deref()?;
        Some(match self.namespace.as_deref() {
            Some(ns) => format!("{ns}/{pod}"),
            None => pod.to_string(),
        })
    }

    /// The facts of a process first listed as `p`.
    pub(super) fn of(p: &ProcSample) -> ProcFacts {
        ProcFacts {
            kind: p.kind,
            user: p.user.clone(),
            name: p.name.clone(),
            command: p.command.clone(),
            container: p.container.clone(),
            ns_pid: p.ns_pid,
            container_name: p.container_name.clone(),
            pod: p.pod.clone(),
            namespace: p.namespace.clone(),
        }
    }

    /// Takes from `p` what is still missing: host facts can arrive a round
    /// late, container and pod names
    /// rounds later (their lookup is off the sampler's path). The kind is
    /// always the latest.
    pub(super) fn fill_missing(&mut self, p: &ProcSample) {
        if self.command.is_none() && p.command.is_some() {
            self.user = p.user.clone();
            self.name = p.name.clone();
            self.command = p.command.clone();
            self.container = p.container.clone();
            self.ns_pid = p.ns_pid;
        }
        if self.container_name.is_none() && p.container_name.is_some() {
            self.container_name = p.container_name.clone();
        }
        if self.pod.is_none() && p.pod.is_some() {
            self.pod = p.pod.clone();
            self.namespace = p.namespace.clone();
        }
        self.kind = p.kind;
    }

    /// The best label for the process: its command, else its name, else "?".
    pub fn label(&self) -> &str {
        self.command
            .as_deref()
            .filter(|c| !c.is_empty())
            .or(self.name.as_deref())
            .unwrap_or("?")
    }
}

/// One process's series: slot `first_slot + i` is `points[i]`.
#[derive(Clone, Debug)]
pub struct ProcSeries {
    pub id: ProcId,
    pub facts: ProcFacts,
    pub(super) first_slot: u64,
    pub(super) points: VecDeque<Option<ProcPoint>>,
    /// Last slot the process was listed in.
    pub last_slot: u64,
    /// When it was first and last seen.
    pub first_seen_ms: Millis,
    pub last_seen_ms: Millis,
    /// Highest memory ever seen (fast lane included), and when.
    pub peak: Option<(u64, Millis)>,
    /// The newest PyTorch allocator figures, if the process publishes them.
    pub torch: Option<Arc<crate::model::alloc::AllocStats>>,
}

impl ProcSeries {
    /// The point at global slot `slot`, if the process was listed then.
    pub fn at(&self, slot: u64) -> Option<&ProcPoint> {
        let i = slot.checked_sub(self.first_slot)?;
        self.points.get(i as usize)?.as_ref()
    }

    /// (slot, point) pairs from `from` (inclusive) to the newest.
    pub fn iter_from(&self, from: u64) -> impl Iterator<Item = (u64, Option<&ProcPoint>)> {
        let skip = from.saturating_sub(self.first_slot) as usize;
        let first = self.first_slot;
        self.points
            .iter()
            .enumerate()
            .skip(skip)
            .map(move |(i, p)| (first + i as u64, p.as_ref()))
    }

    pub fn first_slot(&self) -> u64 {
        self.first_slot
    }
}

impl History {
    /// A process's highest memory as of `slot` (see [`History::gpu_peak_at`]).
    pub fn proc_peak_at(&self, s: &ProcSeries, slot: u64) -> Option<(u64, Millis)> {
        if slot >= s.last_slot {
            return s.peak;
        }
        let from = s.first_slot.max(self.first_slot);
        s.iter_from(from)
            .take_while(|(sl, _)| *sl <= slot)
            .filter_map(|(sl, p)| {
                let p = p?;
                let m = p.mem_peak.or(p.mem)?.max(p.mem.unwrap_or(0));
                Some((m, self.time_at(sl)?))
            })
            .fold(None, |best: Option<(u64, Millis)>, (v, t)| match best {
                Some((b, _)) if b >= v => best,
                _ => Some((v, t)),
            })
    }

    pub fn process(&self, id: &ProcId) -> Option<&ProcSeries> {
        self.procs.get(id)
    }

    pub fn processes(&self) -> impl Iterator<Item = &ProcSeries> {
        self.procs.values()
    }

    /// Processes listed at `slot`, plus those that exited at most
    /// `exited_keep` before it (returned with `exited = true`).
    pub fn processes_at(&self, slot: u64) -> Vec<(&ProcSeries, bool)> {
        self.listed_at(slot).collect()
    }

    /// [`History::processes_at`] without collecting them (to count them
    /// each frame without allocating).
    pub fn listed_at(&self, slot: u64) -> impl Iterator<Item = (&ProcSeries, bool)> {
        let t = self.time_at(slot).unwrap_or(0);
        self.procs.values().filter_map(move |s| {
            if s.first_slot > slot {
                return None;
            }
            if s.at(slot).is_some() {
                return Some((s, false));
            }
            let exited =
                s.last_slot < slot && t.saturating_sub(s.last_seen_ms) <= self.exited_keep_ms;
            exited.then_some((s, true))
        })
    }
}
