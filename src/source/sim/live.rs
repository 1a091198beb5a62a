//! The simulator as a [`Source`]: probes and host facts that read the
//! world at the time they are asked.

use std::sync::Arc;

use super::{EnergyMeter, SimWorld};
use crate::model::{Millis, ProcSample, SystemInfo};
use crate::source::{
    FastReading, GpuProbe, HostFacts, NormalReading, ProbeError, SlowDue, SlowReading, Source,
};

/// The simulator as a live source: probes read the world at the time they
/// are asked.
pub struct SimSource {
    world: Arc<SimWorld>,
    me: String,
}

impl SimSource {
    /// `me` is the user name given to the processes "you" own.
    pub fn new(world: SimWorld, me: String) -> SimSource {
        SimSource {
            world: Arc::new(world),
            me,
        }
    }
}

impl Source for SimSource {
    fn system(&self) -> Arc<SystemInfo> {
        self.world.info.clone()
    }

    fn probe(&self, index: usize) -> Box<dyn GpuProbe> {
        Box::new(SimProbe {
            world: self.world.clone(),
            gpu: index as u32,
            meter: EnergyMeter::default(),
        })
    }

    fn host_facts(&self) -> Box<dyn HostFacts> {
        Box::new(SimHost {
            world: self.world.clone(),
            me: self.me.clone(),
            held: Default::default(),
        })
    }
}

struct SimProbe {
    world: Arc<SimWorld>,
    gpu: u32,
    meter: EnergyMeter,
}

impl GpuProbe for SimProbe {
    fn fast(&mut self, t_ms: Millis) -> Result<FastReading, ProbeError> {
        Ok(self.world.fast(self.gpu, t_ms))
    }

    fn normal(&mut self, t_ms: Millis, with_proc_util: bool) -> Result<NormalReading, ProbeError> {
        Ok(self.world.normal(self.gpu, t_ms, with_proc_util))
    }

    fn slow(&mut self, t_ms: Millis, due: SlowDue) -> Result<SlowReading, ProbeError> {
        // The meter integrates power at every read; the counter is only
        // reported when due, as NVML's is.
        let mut r = self.world.slow(self.gpu, t_ms, &mut self.meter);
        if !due.pcie {
            (r.pcie_read, r.pcie_rx_kbs, r.pcie_tx_kbs) = (false, None, None);
        }
        if !due.energy {
            (r.energy_read, r.energy_mj) = (false, None);
        }
        Ok(r)
    }
}

struct SimHost {
    world: Arc<SimWorld>,
    me: String,
    /// CPU % and RSS of each process at its last fresh read.
    held: std::collections::HashMap<(u32, u64), (Option<f32>, Option<u64>)>,
}

impl HostFacts for SimHost {
    fn enrich(&mut self, t_ms: Millis, procs: &mut [ProcSample], fresh: bool) {
        self.world.enrich(t_ms, &self.me, procs);
        let mut held = std::collections::HashMap::with_capacity(procs.len());
        for p in procs.iter_mut() {
            let key = (p.pid, p.start_time);
            match self.held.get(&key) {
                Some(&(cpu, rss)) if !fresh => (p.cpu_pct, p.rss) = (cpu, rss),
                _ => {}
            }
            held.insert(key, (p.cpu_pct, p.rss));
        }
        self.held = held;
    }
}
