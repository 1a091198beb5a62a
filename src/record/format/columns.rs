//! The columnar encoding of a snapshot line: `gpus` and `procs` as
//! objects of equally long arrays (docs/recording-format.md, "snapshot").

use std::sync::Arc;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};

use super::{LineError, ProcId, ProcessInfo, clean_opt};
use crate::model::{Bar1, GpuSample, GpuState, MemInfo, Millis, ProcKind, ProcSample, Snapshot};

/// Host CPU % is stored in whole percent, as the dashboard shows it: it
/// comes from 10 ms scheduler ticks, one tick in a one-second interval is
/// 1 %, so the digits a float carries beyond that are the interval's jitter
/// — and noise does not compress (the tenths were 11 % of a crowded
/// node's file). Ties go to even, as `{:.0}` formats them, so a replayed
/// figure reads as the live one did. Rounding again changes nothing.
pub fn cpu_precision(pct: f32) -> f32 {
    pct.round_ties_even()
}

/// One column: `f` of every row, as a JSON array.
struct Col<'a, T, F>(&'a [T], F);

impl<T, V: Serialize, F: Fn(&T) -> V> Serialize for Col<'_, T, F> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for row in self.0 {
            seq.serialize_element(&(self.1)(row))?;
        }
        seq.end()
    }
}

/// Writes a column that is always present.
macro_rules! col {
    ($map:ident, $rows:expr, $name:literal, $f:expr) => {
        $map.serialize_entry($name, &Col($rows, $f))?;
    };
}

/// Writes an optional column, leaving it out when every value is null.
macro_rules! opt_col {
    ($map:ident, $rows:expr, $name:literal, $f:expr) => {
        if $rows.iter().any(|r| ($f)(r).is_some()) {
            $map.serialize_entry($name, &Col($rows, $f))?;
        }
    };
}

pub(super) struct SnapshotOut<'a>(pub(super) &'a Snapshot);

impl Serialize for SnapshotOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("type", "snapshot")?;
        m.serialize_entry("seq", &self.0.seq)?;
        m.serialize_entry("t_ms", &self.0.t_ms)?;
        m.serialize_entry("gpus", &GpuCols(&self.0.gpus))?;
        m.serialize_entry("procs", &ProcCols(&self.0.procs))?;
        m.end()
    }
}

struct GpuCols<'a>(&'a [GpuSample]);

impl Serialize for GpuCols<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut m = s.serialize_map(None)?;
        if !r.is_empty() {
            col!(m, r, "index", |g: &GpuSample| g.index);
            col!(m, r, "state", |g: &GpuSample| g.state);
            opt_col!(m, r, "mem_used", |g: &GpuSample| g.mem.map(|x| x.used));
            opt_col!(m, r, "mem_reserved", |g: &GpuSample| g
                .mem
                .map(|x| x.reserved));
            opt_col!(m, r, "mem_free", |g: &GpuSample| g.mem.map(|x| x.free));
            opt_col!(m, r, "mem_total", |g: &GpuSample| g.mem.map(|x| x.total));
            opt_col!(m, r, "mem_peak", |g: &GpuSample| g.mem_peak);
            col!(m, r, "mem_reads", |g: &GpuSample| g.mem_reads);
            opt_col!(m, r, "bar1_used", |g: &GpuSample| g.bar1.map(|x| x.used));
            opt_col!(m, r, "bar1_total", |g: &GpuSample| g.bar1.map(|x| x.total));
            opt_col!(m, r, "util_gpu", |g: &GpuSample| g.util_gpu);
            opt_col!(m, r, "util_mem", |g: &GpuSample| g.util_mem);
            opt_col!(m, r, "temp_c", |g: &GpuSample| g.temp_c);
            opt_col!(m, r, "power_mw", |g: &GpuSample| g.power_mw);
            opt_col!(m, r, "power_limit_mw", |g: &GpuSample| g.power_limit_mw);
            opt_col!(m, r, "sm_clock_mhz", |g: &GpuSample| g.sm_clock_mhz);
            opt_col!(m, r, "mem_clock_mhz", |g: &GpuSample| g.mem_clock_mhz);
            opt_col!(m, r, "fan_pct", |g: &GpuSample| g.fan_pct);
            opt_col!(m, r, "pstate", |g: &GpuSample| g.pstate);
            opt_col!(m, r, "pcie_rx_kbs", |g: &GpuSample| g.pcie_rx_kbs);
            opt_col!(m, r, "pcie_tx_kbs", |g: &GpuSample| g.pcie_tx_kbs);
            opt_col!(m, r, "energy_mj", |g: &GpuSample| g.energy_mj);
            opt_col!(m, r, "ecc_volatile", |g: &GpuSample| g.ecc_volatile);
            opt_col!(m, r, "enc_util", |g: &GpuSample| g.enc_util);
            opt_col!(m, r, "dec_util", |g: &GpuSample| g.dec_util);
            opt_col!(m, r, "mem_temp_c", |g: &GpuSample| g.mem_temp_c);
            opt_col!(m, r, "ecc_sbe_volatile", |g: &GpuSample| g.ecc_sbe_volatile);
            opt_col!(m, r, "ecc_dbe_volatile", |g: &GpuSample| g.ecc_dbe_volatile);
            opt_col!(m, r, "pcie_replays", |g: &GpuSample| g.pcie_replays);
            opt_col!(m, r, "remapped_rows_cor", |g: &GpuSample| g
                .remapped_rows_cor);
            opt_col!(m, r, "remapped_rows_unc", |g: &GpuSample| g
                .remapped_rows_unc);
            opt_col!(m, r, "row_remap_failure", |g: &GpuSample| g
                .row_remap_failure);
            col!(m, r, "lag_ms", |g: &GpuSample| g.lag_ms);
        }
        m.end()
    }
}

struct ProcCols<'a>(&'a [ProcSample]);

impl Serialize for ProcCols<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut m = s.serialize_map(None)?;
        if !r.is_empty() {
            col!(m, r, "gpu", |p: &ProcSample| p.gpu);
            col!(m, r, "pid", |p: &ProcSample| p.pid);
            col!(m, r, "start_time", |p: &ProcSample| p.start_time);
            col!(m, r, "kind", |p: &ProcSample| p.kind);
            opt_col!(m, r, "mem", |p: &ProcSample| p.mem);
            opt_col!(m, r, "mem_peak", |p: &ProcSample| p.mem_peak);
            opt_col!(m, r, "sm_util", |p: &ProcSample| p.sm_util);
            opt_col!(m, r, "mem_util", |p: &ProcSample| p.mem_util);
            opt_col!(m, r, "enc_util", |p: &ProcSample| p.enc_util);
            opt_col!(m, r, "dec_util", |p: &ProcSample| p.dec_util);
            opt_col!(m, r, "cpu_pct", |p: &ProcSample| p
                .cpu_pct
                .map(cpu_precision));
            opt_col!(m, r, "rss", |p: &ProcSample| p.rss);
            // PyTorch allocator figures, as the process published them.
            opt_col!(m, r, "torch", |p: &ProcSample| p.torch.clone());
        }
        m.end()
    }
}

// ---- decoding ------------------------------------------------------------

#[derive(Deserialize)]
struct SnapshotIn {
    seq: u64,
    t_ms: Millis,
    // Always written (`{}` when empty): a line without them is damaged.
    gpus: GpuColsIn,
    procs: ProcColsIn,
}

#[derive(Default, Deserialize)]
struct GpuColsIn {
    index: Option<Vec<u32>>,
    state: Option<Vec<GpuState>>,
    mem_used: Option<Vec<Option<u64>>>,
    mem_reserved: Option<Vec<Option<u64>>>,
    mem_free: Option<Vec<Option<u64>>>,
    mem_total: Option<Vec<Option<u64>>>,
    mem_peak: Option<Vec<Option<u64>>>,
    mem_reads: Option<Vec<u32>>,
    bar1_used: Option<Vec<Option<u64>>>,
    bar1_total: Option<Vec<Option<u64>>>,
    util_gpu: Option<Vec<Option<u32>>>,
    util_mem: Option<Vec<Option<u32>>>,
    temp_c: Option<Vec<Option<u32>>>,
    power_mw: Option<Vec<Option<u32>>>,
    power_limit_mw: Option<Vec<Option<u32>>>,
    sm_clock_mhz: Option<Vec<Option<u32>>>,
    mem_clock_mhz: Option<Vec<Option<u32>>>,
    fan_pct: Option<Vec<Option<u32>>>,
    pstate: Option<Vec<Option<u32>>>,
    pcie_rx_kbs: Option<Vec<Option<u32>>>,
    pcie_tx_kbs: Option<Vec<Option<u32>>>,
    energy_mj: Option<Vec<Option<u64>>>,
    ecc_volatile: Option<Vec<Option<u64>>>,
    enc_util: Option<Vec<Option<u32>>>,
    dec_util: Option<Vec<Option<u32>>>,
    mem_temp_c: Option<Vec<Option<u32>>>,
    ecc_sbe_volatile: Option<Vec<Option<u64>>>,
    ecc_dbe_volatile: Option<Vec<Option<u64>>>,
    pcie_replays: Option<Vec<Option<u32>>>,
    remapped_rows_cor: Option<Vec<Option<u64>>>,
    remapped_rows_unc: Option<Vec<Option<u64>>>,
    row_remap_failure: Option<Vec<Option<bool>>>,
    lag_ms: Option<Vec<u32>>,
}

#[derive(Default, Deserialize)]
struct ProcColsIn {
    gpu: Option<Vec<u32>>,
    pid: Option<Vec<u32>>,
    start_time: Option<Vec<u64>>,
    kind: Option<Vec<ProcKind>>,
    mem: Option<Vec<Option<u64>>>,
    mem_peak: Option<Vec<Option<u64>>>,
    sm_util: Option<Vec<Option<u32>>>,
    mem_util: Option<Vec<Option<u32>>>,
    enc_util: Option<Vec<Option<u32>>>,
    dec_util: Option<Vec<Option<u32>>>,
    cpu_pct: Option<Vec<Option<f32>>>,
    rss: Option<Vec<Option<u64>>>,
    torch: Option<Vec<Option<crate::model::alloc::AllocStats>>>,
}

/// Checks a column's length; a missing column is `n` defaults.
fn column<T: Default + Clone>(
    c: Option<Vec<T>>,
    n: usize,
    table: &'static str,
    column: &'static str,
    key: &'static str,
) -> Result<std::vec::IntoIter<T>, LineError> {
    match c {
        None => Ok(vec![T::default(); n].into_iter()),
        Some(v) if v.len() == n => Ok(v.into_iter()),
        Some(v) => Err(LineError::Column {
            table,
            column,
            key,
            got: v.len(),
            want: n,
        }),
    }
}

/// Decodes a snapshot line; `lookup` gives the strings of a process by
/// `(gpu, pid, start_time)`.
/// The most processes one snapshot of a recording may hold: far more than
/// a node runs (8 GPUs × 300 processes is the simulator's crowded node),
/// few enough that the analysis of a hostile file stays bounded.
pub(crate) const MAX_SNAPSHOT_PROCS: usize = 16_384;

/// The most events one snapshot may carry (its own and the lines after
/// it); more are skipped as damage.
pub(crate) const MAX_SNAPSHOT_EVENTS: usize = 4_096;

/// The most GPUs one snapshot may hold.
pub(crate) const MAX_SNAPSHOT_GPUS: usize = 1_024;

pub(super) fn decode<'a>(
    text: &[u8],
    lookup: impl Fn(ProcId) -> Option<&'a ProcessInfo>,
) -> Result<Snapshot, LineError> {
    let s: SnapshotIn = serde_json::from_slice(text)?;
    Ok(Snapshot {
        seq: s.seq,
        t_ms: s.t_ms,
        gpus: gpus_from(s.gpus)?,
        procs: procs_from(s.procs, lookup)?,
        events: Vec::new(),
    })
}

macro_rules! columns {
    ($cols:ident, $n:expr, $table:literal, $key:literal; $($name:ident),*) => {
        $(let mut $name = column($cols.$name, $n, $table, stringify!($name), $key)?;)*
    };
}

fn gpus_from(c: GpuColsIn) -> Result<Vec<GpuSample>, LineError> {
    let index = c.index.unwrap_or_default();
    let n = index.len();
    if n > MAX_SNAPSHOT_GPUS {
        return Err(LineError::TooMany {
            what: "GPUs",
            got: n,
            max: MAX_SNAPSHOT_GPUS,
        });
    }
    columns!(c, n, "gpus", "index"; state, mem_used, mem_reserved, mem_free, mem_total,
        mem_peak, mem_reads, bar1_used, bar1_total, util_gpu, util_mem, temp_c, power_mw,
        power_limit_mw, sm_clock_mhz, mem_clock_mhz, fan_pct, pstate, pcie_rx_kbs,
        pcie_tx_kbs, energy_mj, ecc_volatile, enc_util, dec_util, mem_temp_c, ecc_sbe_volatile,
        ecc_dbe_volatile, pcie_replays, remapped_rows_cor, remapped_rows_unc, row_remap_failure,
        lag_ms);
    let mut out = Vec::with_capacity(n);
    for index in index {
        // `column` made every iterator exactly `n` long.
        let mut next = || {
            (
                mem_used.next().flatten(),
                mem_reserved.next().flatten(),
                mem_free.next().flatten(),
                mem_total.next().flatten(),
            )
        };
        let mem = match next() {
            (Some(used), Some(reserved), Some(free), Some(total)) => Some(MemInfo {
                used,
                reserved,
                free,
                total,
            }),
            _ => None,
        };
        let bar1 = match (bar1_used.next().flatten(), bar1_total.next().flatten()) {
            (Some(used), Some(total)) => Some(Bar1 { used, total }),
            _ => None,
        };
        out.push(GpuSample {
            index,
            state: state.next().unwrap_or_default(),
            mem,
            mem_peak: mem_peak.next().flatten(),
            mem_reads: mem_reads.next().unwrap_or_default(),
            bar1,
            util_gpu: util_gpu.next().flatten(),
            util_mem: util_mem.next().flatten(),
            temp_c: temp_c.next().flatten(),
            power_mw: power_mw.next().flatten(),
            power_limit_mw: power_limit_mw.next().flatten(),
            sm_clock_mhz: sm_clock_mhz.next().flatten(),
            mem_clock_mhz: mem_clock_mhz.next().flatten(),
            fan_pct: fan_pct.next().flatten(),
            pstate: pstate.next().flatten(),
            pcie_rx_kbs: pcie_rx_kbs.next().flatten(),
            pcie_tx_kbs: pcie_tx_kbs.next().flatten(),
            energy_mj: energy_mj.next().flatten(),
            ecc_volatile: ecc_volatile.next().flatten(),
            enc_util: enc_util.next().flatten(),
            dec_util: dec_util.next().flatten(),
            mem_temp_c: mem_temp_c.next().flatten(),
            ecc_sbe_volatile: ecc_sbe_volatile.next().flatten(),
            ecc_dbe_volatile: ecc_dbe_volatile.next().flatten(),
            pcie_replays: pcie_replays.next().flatten(),
            remapped_rows_cor: remapped_rows_cor.next().flatten(),
            remapped_rows_unc: remapped_rows_unc.next().flatten(),
            row_remap_failure: row_remap_failure.next().flatten(),
            lag_ms: lag_ms.next().unwrap_or_default(),
        });
    }
    Ok(out)
}

fn procs_from<'a>(
    c: ProcColsIn,
    lookup: impl Fn(ProcId) -> Option<&'a ProcessInfo>,
) -> Result<Vec<ProcSample>, LineError> {
    let pid = c.pid.unwrap_or_default();
    let n = pid.len();
    if n > MAX_SNAPSHOT_PROCS {
        return Err(LineError::TooMany {
            what: "processes",
            got: n,
            max: MAX_SNAPSHOT_PROCS,
        });
    }
    columns!(c, n, "procs", "pid"; gpu, start_time, kind, mem, mem_peak, sm_util, mem_util,
        enc_util, dec_util, cpu_pct, rss, torch);
    let mut out = Vec::with_capacity(n);
    for pid in pid {
        let mut p = ProcSample {
            pid,
            start_time: start_time.next().unwrap_or_default(),
            gpu: gpu.next().unwrap_or_default(),
            kind: kind.next().unwrap_or_default(),
            mem: mem.next().flatten(),
            mem_peak: mem_peak.next().flatten(),
            sm_util: sm_util.next().flatten(),
            mem_util: mem_util.next().flatten(),
            enc_util: enc_util.next().flatten(),
            dec_util: dec_util.next().flatten(),
            cpu_pct: cpu_pct.next().flatten(),
            rss: rss.next().flatten(),
            torch: torch.next().flatten().map(|mut t| {
                for v in [
                    &mut t.writer,
                    &mut t.torch_version,
                    &mut t.alloc_conf,
                    &mut t.cuda_visible_devices,
                ] {
                    clean_opt(v);
                }
                Arc::new(t)
            }),
            ..Default::default()
        };
        if let Some(info) = lookup((p.gpu, p.pid, p.start_time)) {
            info.fill(&mut p);
        }
        out.push(p);
    }
    Ok(out)
}
