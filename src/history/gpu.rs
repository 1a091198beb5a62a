//! Per-GPU series: a GPU's sample at a slot, its whole series, its peak
//! (since start or as of a slot), and its figures in clock-aligned buckets.

use super::History;
use crate::model::{GpuSample, Millis};

/// How a time bucket sums up its samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agg {
    Max,
    Mean,
}

impl History {
    pub fn gpu_count(&self) -> usize {
        self.gpus.len()
    }

    /// GPU `index`'s sample at `slot` (None in a gap or before it existed).
    pub fn gpu_at(&self, index: usize, slot: u64) -> Option<&GpuSample> {
        let i = slot.checked_sub(self.first_slot)?;
        self.gpus.get(index)?.get(i as usize)?.as_ref()
    }

    /// GPU `index`'s samples from the oldest slot kept to the newest.
    pub fn gpu_series(&self, index: usize) -> impl Iterator<Item = Option<&GpuSample>> {
        self.gpus
            .get(index)
            .into_iter()
            .flat_map(|s| s.iter().map(Option::as_ref))
    }

    /// Highest memory ever seen on GPU `index` (fast lane included), and when.
    pub fn gpu_peak(&self, index: usize) -> Option<(u64, Millis)> {
        self.gpu_peaks.get(index).copied().flatten()
    }

    /// The highest memory on GPU `index` as of `slot`: since start at the
    /// newest slot, else over the slots kept up to `slot` (nothing read
    /// after `slot` counts: a paused or replayed screen shows no peak from
    /// its future).
    pub fn gpu_peak_at(&self, index: usize, slot: u64) -> Option<(u64, Millis)> {
        if self.last_slot().is_none_or(|last| slot >= last) {
            return self.gpu_peak(index);
        }
        let series = self.gpus.get(index)?;
        let upto = slot.checked_sub(self.first_slot)? as usize;
        series
            .iter()
            .zip(&self.times)
            .take(upto + 1)
            .filter_map(|(g, &t)| {
                let g = g.as_ref()?;
                let m = g.mem?;
                Some((g.mem_peak.unwrap_or(m.used).max(m.used), t))
            })
            .fold(None, |best: Option<(u64, Millis)>, (v, t)| match best {
                Some((b, _)) if b >= v => best,
                _ => Some((v, t)),
            })
    }

    /// GPU `index`'s figure `f` in `n` time buckets of `bucket_ms`, aligned
    /// to the clock, ending with the bucket that holds `upto` (still
    /// filling). Each bucket is the max (or mean) of its samples; `None`
    /// where it has none. Sparklines drawn this way shift once per bucket,
    /// not once per sample, which keeps terminal output small.
    pub fn gpu_buckets(
        &self,
        index: usize,
        upto: u64,
        n: usize,
        bucket_ms: u64,
        agg: Agg,
        f: impl Fn(&GpuSample) -> Option<u64>,
    ) -> Vec<Option<u64>> {
        let bucket_ms = bucket_ms.max(1);
        let mut out: Vec<Option<u64>> = vec![None; n];
        let Some(t_end) = self.time_at(upto) else {
            return out;
        };
        if n == 0 {
            return out;
        }
        let last = t_end / bucket_ms;
        let first = last.saturating_sub(n as u64 - 1);
        let mut sums = vec![(0u128, 0u64); n];
        let mut slot = upto;
        while let Some(t) = self.time_at(slot) {
            let b = t / bucket_ms;
            if b < first {
                break;
            }
            if b <= last
                && let Some(v) = self.gpu_at(index, slot).and_then(&f)
            {
                let i = (b - first) as usize + (n - (last - first + 1) as usize);
                out[i] = Some(out[i].map_or(v, |o| o.max(v)));
                sums[i].0 += v as u128;
                sums[i].1 += 1;
            }
            if slot == self.first_slot {
                break;
            }
            slot -= 1;
        }
        if agg == Agg::Mean {
            for (o, (sum, count)) in out.iter_mut().zip(sums) {
                if count > 0 {
                    *o = Some((sum / count as u128) as u64);
                }
            }
        }
        out
    }
}
