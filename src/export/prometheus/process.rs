//! Per-process families (`vramwatch_process_*` from the snapshot) and the
//! label set of a process, shared with the PyTorch, analysis and peak
//! families.

use std::collections::BTreeMap;

use crate::model::alloc::DeviceAlloc;
use crate::model::{ProcId, ProcSample, Snapshot, SystemInfo};
use crate::sanitize;

use super::{Family, Kind, Labels, Value, labels};

/// Longest `command` label value, in characters (an ellipsis marks a cut).
pub(crate) const MAX_COMMAND_LABEL: usize = 64;

/// A process's command as a label value: sanitised (no control characters
/// or escape sequences), cut to [`MAX_COMMAND_LABEL`] characters.
pub(crate) fn command_label(raw: &str) -> String {
    let clean = sanitize::clean_capped(raw, MAX_COMMAND_LABEL + 1);
    if clean.chars().count() > MAX_COMMAND_LABEL {
        let mut cut: String = clean.chars().take(MAX_COMMAND_LABEL - 1).collect();
        cut.push('…');
        cut
    } else {
        clean
    }
}

/// One process on one GPU as exported: duplicates of `(gpu, pid)` merged.
#[derive(Clone, Debug)]
pub(super) struct ProcRow {
    pub(super) id: ProcId,
    pub(super) labels: String,
    pub(super) mem: Option<u64>,
    /// PyTorch allocator figures on this GPU, when published.
    pub(super) torch: Option<DeviceAlloc>,
}

/// The processes of `snap`, sorted by `(gpu, pid)` (so that
/// [`Labels::proc_labels`] can search them), their labels escaped once.
pub(super) fn rows(system: &SystemInfo, snap: &Snapshot) -> Vec<ProcRow> {
    // One series per (gpu, pid): a PID listed twice on one GPU (MIG
    // instances) is one process whose memory adds up.
    let mut merged: BTreeMap<(u32, u32), (&ProcSample, Option<u64>)> = BTreeMap::new();
    for p in &snap.procs {
        merged
            .entry((p.gpu, p.pid))
            .and_modify(|(_, m)| *m = add(*m, p.mem))
            .or_insert((p, p.mem));
    }
    merged
        .into_values()
        .map(|(p, mem)| {
            let uuid = system
                .gpus
                .iter()
                .find(|d| d.index == p.gpu)
                .map_or("", |d| d.uuid.as_str());
            let mut l = String::new();
            labels(
                &mut l,
                &[
                    ("gpu", p.gpu.to_string().as_str()),
                    ("UUID", uuid),
                    ("Hostname", system.host.as_str()),
                    ("pid", p.pid.to_string().as_str()),
                    ("user", p.user.as_deref().unwrap_or("")),
                    ("command", command_label(p.label()).as_str()),
                    ("container", p.container.as_deref().unwrap_or("")),
                ],
            );
            ProcRow {
                id: p.id(),
                labels: l,
                mem,
                torch: p.torch.as_ref().and_then(|t| t.devices.first().cloned()),
            }
        })
        .collect()
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.saturating_add(b)),
        (a, b) => a.or(b),
    }
}

/// The memory each process holds, one sample per process that has a value.
pub(super) fn write(l: &Labels, out: &mut String) {
    let mut fam = Family::new(
        out,
        "vramwatch_process_memory_bytes",
        Kind::Gauge,
        "GPU memory a process holds on one GPU, bytes.",
    );
    for r in &l.procs {
        fam.maybe(&r.labels, r.mem.map(Value::Int));
    }
}
