//! GPUs whose growth is fills levelling off ([`Analyzer::levelling_gpus`]).

use std::collections::HashMap;

use super::Analyzer;
use crate::analysis::Phase;

impl Analyzer {
    /// Each GPU whose live processes that grow (by phase, or flagged
    /// before the fill was seen) are all fills levelling off, with at least
    /// one: how much more their tensors will take, bytes. A process that
    /// grows without figures to tell (it does not publish them) or whose
    /// tensors do not slow keeps its GPU's forecast.
    pub(super) fn levelling_gpus(&self) -> HashMap<u32, f64> {
        let mut more: HashMap<u32, Option<f64>> = HashMap::new();
        for tr in self.procs.values().filter(|tr| tr.a.alive) {
            let gpu = tr.a.id.gpu;
            match tr.levelling {
                Some((level, now)) => {
                    if let Some(m) = more.entry(gpu).or_insert(Some(0.0)) {
                        *m += (level - now).max(0.0);
                    }
                }
                None if tr.series.phase.phase() == Phase::Growing || tr.leak.flag().is_some() => {
                    more.insert(gpu, None);
                }
                None => {}
            }
        }
        more.into_iter()
            .filter_map(|(g, m)| Some((g, m?)))
            .collect()
    }
}
