//! The snapshot at a slot, rebuilt from what History kept.

use super::History;
use crate::model::{ProcSample, Snapshot};

impl History {
    /// Rebuilds the snapshot at `slot` from what was kept (for pause and
    /// replay): GPUs as sampled, processes from their series and facts.
    pub fn snapshot_at(&self, slot: u64) -> Option<Snapshot> {
        if self.is_gap(slot) {
            return None;
        }
        let t_ms = self.time_at(slot)?;
        let gpus = (0..self.gpus.len())
            .filter_map(|i| self.gpu_at(i, slot).cloned())
            .collect();
        let mut procs: Vec<ProcSample> = self
            .procs
            .values()
            .filter_map(|s| {
                let p = s.at(slot)?;
                Some(ProcSample {
                    pid: s.id.key.pid,
                    start_time: s.id.key.start_time,
                    gpu: s.id.gpu,
                    kind: s.facts.kind,
                    mem: p.mem,
                    mem_peak: p.mem_peak,
                    sm_util: p.sm_util,
                    mem_util: p.mem_util,
                    enc_util: p.enc_util,
                    dec_util: p.dec_util,
                    user: s.facts.user.clone(),
                    name: s.facts.name.clone(),
                    command: s.facts.command.clone(),
                    container: s.facts.container.clone(),
                    ns_pid: s.facts.ns_pid,
                    cpu_pct: p.cpu_pct,
                    rss: p.rss,
                    // As sampled then (the newest figures would be a
                    // look ahead: a replay's demand forecast used a later
                    // `allocated_peak`, its tensors a publish every slot).
                    torch: p.torch.clone(),
                    container_name: s.facts.container_name.clone(),
                    pod: s.facts.pod.clone(),
                    namespace: s.facts.namespace.clone(),
                    // The pod UID is not kept in history.
                    ..Default::default()
                })
            })
            .collect();
        procs.sort_by_key(|p| (p.gpu, p.pid));
        Some(Snapshot {
            seq: slot,
            t_ms,
            gpus,
            procs,
            events: Vec::new(),
        })
    }
}
