//! A [`Source`] that counts the process-utilisation reads its probes make
//! (the expensive call), per GPU: what `bench-sampler` reports and the
//! sampler's tests check the cadence with.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::model::{Millis, SystemInfo};
use crate::source::{
    FastReading, GpuProbe, HostFacts, NormalReading, ProbeError, SlowDue, SlowReading, Source,
};

/// Process-utilisation reads so far, per GPU; shared by every probe of the
/// source and cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct UtilReads(Arc<Vec<AtomicU64>>);

impl UtilReads {
    fn new(gpus: usize) -> UtilReads {
        UtilReads(Arc::new((0..gpus).map(|_| AtomicU64::new(0)).collect()))
    }

    /// Reads of GPU `gpu` so far.
    pub(crate) fn of(&self, gpu: usize) -> u64 {
        self.0.get(gpu).map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Reads of every GPU so far.
    pub(crate) fn total(&self) -> u64 {
        self.0.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

/// `inner`, counting its probes' process-utilisation reads.
pub(crate) struct CountingSource {
    inner: Box<dyn Source>,
    reads: UtilReads,
}

impl CountingSource {
    pub(crate) fn new(inner: Box<dyn Source>) -> CountingSource {
        let reads = UtilReads::new(inner.system().gpus.len());
        CountingSource { inner, reads }
    }

    pub(crate) fn reads(&self) -> UtilReads {
        self.reads.clone()
    }
}

impl Source for CountingSource {
    fn system(&self) -> Arc<SystemInfo> {
        self.inner.system()
    }

    fn probe(&self, index: usize) -> Box<dyn GpuProbe> {
        Box::new(CountingProbe {
            inner: self.inner.probe(index),
            reads: self.reads.clone(),
            gpu: index,
        })
    }

    fn host_facts(&self) -> Box<dyn HostFacts> {
        self.inner.host_facts()
    }
}

struct CountingProbe {
    inner: Box<dyn GpuProbe>,
    reads: UtilReads,
    gpu: usize,
}

impl GpuProbe for CountingProbe {
    fn fast(&mut self, t_ms: Millis) -> Result<FastReading, ProbeError> {
        self.inner.fast(t_ms)
    }

    fn memory(&mut self, t_ms: Millis) -> Result<FastReading, ProbeError> {
        self.inner.memory(t_ms)
    }

    fn normal(&mut self, t_ms: Millis, with_proc_util: bool) -> Result<NormalReading, ProbeError> {
        if with_proc_util && let Some(c) = self.reads.0.get(self.gpu) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.normal(t_ms, with_proc_util)
    }

    fn slow(&mut self, t_ms: Millis, due: SlowDue) -> Result<SlowReading, ProbeError> {
        self.inner.slow(t_ms, due)
    }
}
