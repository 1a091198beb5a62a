//! Per-process families (`vramwatch_process_*` from the snapshot) and the
//! label set of a process, shared with the PyTorch, analysis and peak
//! families.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::alloc::DeviceAlloc;
use crate::model::{ProcId, ProcSample, Snapshot, SystemInfo};
use crate::sanitize;

use super::{Family, Kind, Labels, Render, Value, labels};

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
    /// `gpu`, the host label, `pid`, `start_time`: escaped once.
    pub(super) labels: String,
    pub(super) mem: Option<u64>,
    /// PyTorch allocator figures on this GPU, when published.
    pub(super) torch: Option<DeviceAlloc>,
}

/// The processes of a snapshot as exported.
pub(super) struct Rows {
    /// The processes-on-a-GPU that get series, sorted by `(gpu, pid)` (so
    /// that [`Labels::proc_labels`] can search them).
    pub(super) rows: Vec<ProcRow>,
    /// One `vramwatch_process_info` label set per process of `rows`.
    pub(super) infos: Vec<String>,
    /// Processes-on-a-GPU left out by the cap.
    pub(super) dropped: usize,
}

/// The processes of `snap`: merged per `(gpu, pid)`, the
/// `render.max_process_series` holding the most memory kept, their labels
/// escaped once.
pub(super) fn rows(system: &SystemInfo, snap: &Snapshot, render: &Render) -> Rows {
    // One series per (gpu, pid): a PID listed twice on one GPU (MIG
    // instances) is one process whose memory adds up.
    let mut merged: BTreeMap<(u32, u32), (&ProcSample, Option<u64>)> = BTreeMap::new();
    for p in &snap.procs {
        merged
            .entry((p.gpu, p.pid))
            .and_modify(|(_, m)| *m = add(*m, p.mem))
            .or_insert((p, p.mem));
    }
    let mut kept: Vec<(&ProcSample, Option<u64>)> = merged.into_values().collect();
    let dropped = kept.len().saturating_sub(render.max_process_series);
    if dropped > 0 {
        // The most memory first (unknown last), then by (gpu, pid) so that
        // equal figures keep the same processes from one scrape to the next.
        kept.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then_with(|| (a.0.gpu, a.0.pid).cmp(&(b.0.gpu, b.0.pid)))
        });
        kept.truncate(render.max_process_series);
        kept.sort_by_key(|(p, _)| (p.gpu, p.pid));
    }
    let host = (render.host_label.as_str(), system.host.as_str());
    let mut seen = BTreeSet::new();
    let mut infos = Vec::new();
    let rows = kept
        .into_iter()
        .map(|(p, mem)| {
            let pid = p.pid.to_string();
            let start = p.start_time.to_string();
            if seen.insert(p.key()) {
                infos.push(info_labels(host, &pid, &start, p));
            }
            let mut l = String::new();
            labels(
                &mut l,
                &[
                    ("gpu", p.gpu.to_string().as_str()),
                    host,
                    ("pid", pid.as_str()),
                    ("start_time", start.as_str()),
                ],
            );
            ProcRow {
                id: p.id(),
                labels: l,
                mem,
                torch: p.torch.as_ref().and_then(|t| t.devices.first().cloned()),
            }
        })
        .collect();
    Rows {
        rows,
        infos,
        dropped,
    }
}

/// Longest `container`, `pod`, `namespace` or `pod_uid` label value.
const MAX_K8S_LABEL: usize = 253;

/// The `vramwatch_process_info` labels of a process. `container`, `pod`,
/// `namespace` (dcgm-exporter's names) and `pod_uid` only when known, as
/// dcgm-exporter does: a process outside Kubernetes keeps the same series
/// as before, and Prometheus treats a missing label as an empty one.
fn info_labels(host: (&str, &str), pid: &str, start: &str, p: &ProcSample) -> String {
    let command = command_label(p.label());
    let mut pairs = vec![
        host,
        ("pid", pid),
        ("start_time", start),
        ("user", p.user.as_deref().unwrap_or("")),
        ("command", command.as_str()),
        ("container_id", p.container.as_deref().unwrap_or("")),
    ];
    let known = [
        ("container", &p.container_name),
        ("pod", &p.pod),
        ("namespace", &p.namespace),
        ("pod_uid", &p.pod_uid),
    ]
    .map(|(k, v)| {
        (
            k,
            v.as_deref()
                .map(|v| sanitize::clean_capped(v, MAX_K8S_LABEL)),
        )
    });
    for (k, v) in &known {
        if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
            pairs.push((k, v));
        }
    }
    let mut l = String::new();
    labels(&mut l, &pairs);
    l
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.saturating_add(b)),
        (a, b) => a.or(b),
    }
}

/// Who each process is, the memory each holds, and how many the cap left
/// out.
pub(super) fn write(l: &Labels, out: &mut String) {
    let mut fam = Family::new(
        out,
        "vramwatch_process_info",
        Kind::Gauge,
        "Always 1: who a GPU process is (user, command line, container; Kubernetes pod, namespace, container when known); join on pid and start_time.",
    );
    for info in &l.infos {
        fam.sample(info, Value::Int(1));
    }
    let mut fam = Family::new(
        out,
        "vramwatch_process_memory_bytes",
        Kind::Gauge,
        "GPU memory a process holds on one GPU, bytes.",
    );
    for r in &l.procs {
        fam.maybe(&r.labels, r.mem.map(Value::Int));
    }
    Family::new(
        out,
        "vramwatch_process_series_dropped",
        Kind::Gauge,
        "Processes (one per GPU they use) this scrape has no series for: over [serve] max_process_series, those holding the least memory.",
    )
    .sample(&l.host, Value::Int(l.dropped as u64));
}

#[cfg(test)]
mod k8s_tests {
    use super::super::Render;
    use super::super::tests::{demo, render_with, samples};

    #[test]
    fn pod_labels_only_when_known_and_sanitised() {
        let (sys, mut snap) = demo();
        let pid = snap.procs[0].pid;
        for p in snap.procs.iter_mut().filter(|p| p.pid == pid) {
            p.container_name = Some("trainer".into());
            p.pod = Some("resnet-\u{1b}[31mtrain".into());
            p.namespace = Some("ml-team".into());
            p.pod_uid = Some("0d2a3b4c-5e6f-4a1b-9c8d-7e6f5a4b3c2d".into());
        }
        let text = render_with(&sys, &snap, None, &Render::default());
        let info = samples(&text, "vramwatch_process_info");
        let mine: Vec<_> = info
            .iter()
            .filter(|(s, _)| s.contains(&format!("pid=\"{pid}\"")))
            .collect();
        assert_eq!(mine.len(), 1);
        assert!(
            mine[0].0.ends_with(
                ",container=\"trainer\",pod=\"resnet-train\",namespace=\"ml-team\",pod_uid=\"0d2a3b4c-5e6f-4a1b-9c8d-7e6f5a4b3c2d\"}"
            ),
            "{}",
            mine[0].0
        );
        for (s, _) in info
            .iter()
            .filter(|(s, _)| !s.contains(&format!("pid=\"{pid}\"")))
        {
            // Only the demo's own pod (no UID: its names come from the
            // kubelet's links, its UID would from the cgroup).
            assert!(!s.contains("pod_uid="), "{s}");
            assert_eq!(s.contains("pod="), s.contains("pod=\"llm-serve-0\""), "{s}");
        }
    }
}
