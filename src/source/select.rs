//! Which GPUs a command shows: `--gpu LIST`, else `CUDA_VISIBLE_DEVICES`
//! when it is set, unless `--all-gpus`; and [`Selected`], the source that
//! exposes only those GPUs to the sampler.
//!
//! The chosen GPUs are numbered from 0 in the order listed, as CUDA numbers
//! the devices a program sees (`cuda:0` is the first entry of
//! `CUDA_VISIBLE_DEVICES`); each keeps its UUID and PCI bus id, which name
//! the physical GPU. (The sampler, the history and the screens key GPUs by
//! position, so the chosen GPUs cannot keep NVML's indexes.)

use std::sync::Arc;

use crate::model::{DeviceInfo, Millis, ProcSample, SystemInfo};
use crate::source::{
    FastReading, GpuProbe, HostFacts, NormalReading, ProbeError, SlowDue, SlowReading, Source,
    SourceError,
};

/// One entry of a GPU list, as `nvidia-smi -i` takes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuId {
    /// NVML's index (the simulator's, with `--demo`).
    Index(u32),
    /// A UUID or a unique prefix of one, with its `GPU-` (`MIG-` is refused).
    Uuid(String),
    /// A PCI bus id: `0000:18:00.0`, `00000000:18:00.0` or `18:00.0`.
    BusId(String),
}

impl GpuId {
    /// Parses one entry of `--gpu`.
    pub fn parse(s: &str) -> Result<GpuId, String> {
        let t = s.trim();
        let upper = t.to_ascii_uppercase();
        if t.is_empty() {
            Err("an empty entry".into())
        } else if upper.starts_with("MIG-") {
            Err(format!(
                "`{t}` is a MIG device; vramwatch shows whole GPUs: give the GPU's index or UUID"
            ))
        } else if upper.starts_with("GPU-") {
            Ok(GpuId::Uuid(t.to_owned()))
        } else if t.contains(':') {
            match bus_key(t) {
                Some(_) => Ok(GpuId::BusId(t.to_owned())),
                None => Err(format!("`{t}` is not a PCI bus id (like 0000:18:00.0)")),
            }
        } else {
            t.parse().map(GpuId::Index).map_err(|_| {
                format!("`{t}` is not a GPU index, UUID (GPU-...) or PCI bus id (0000:18:00.0)")
            })
        }
    }

    fn matches(&self, d: &DeviceInfo) -> bool {
        match self {
            GpuId::Index(i) => d.index == *i,
            GpuId::Uuid(u) => d
                .uuid
                .to_ascii_lowercase()
                .starts_with(&u.to_ascii_lowercase()),
            GpuId::BusId(b) => bus_key(b).is_some_and(|k| bus_key(&d.pci_bus_id) == Some(k)),
        }
    }
}

impl std::fmt::Display for GpuId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuId::Index(i) => write!(f, "{i}"),
            GpuId::Uuid(s) | GpuId::BusId(s) => f.write_str(s),
        }
    }
}

/// `[domain:]bus:device.function` → (domain, `bus:device.function`), in
/// lower case with the numbers unpadded, so `0000:18:00.0`,
/// `00000000:18:00.0` and `18:00.0` are one id.
fn bus_key(s: &str) -> Option<(u32, String)> {
    let parts: Vec<&str> = s.trim().split(':').collect();
    let (domain, bus, rest) = match parts.as_slice() {
        [d, b, r] => (u32::from_str_radix(d, 16).ok()?, *b, *r),
        [b, r] => (0, *b, *r),
        _ => return None,
    };
    let (dev, func) = rest.split_once('.')?;
    let n = |x: &str| u32::from_str_radix(x, 16).ok();
    Some((
        domain,
        format!("{:x}:{:x}.{:x}", n(bus)?, n(dev)?, n(func)?),
    ))
}

/// The most GPUs one index range (`0-7`) may name: more than any one host
/// has, few enough that a typo such as `0-70000` is refused, not expanded.
const MAX_RANGE: u32 = 64;

/// `--gpu LIST`: comma-separated [`GpuId`]s, at least one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuList(pub Vec<GpuId>);

impl GpuList {
    /// Parses `--gpu`'s value: entries as [`GpuId::parse`] takes them, and
    /// ranges of indexes (`0-3` for `0,1,2,3`); the error says which entry
    /// is wrong.
    pub fn parse(s: &str) -> Result<GpuList, String> {
        let mut ids = Vec::new();
        for entry in s.split(',') {
            match index_range(entry)? {
                Some(range) => ids.extend(range.map(GpuId::Index)),
                None => ids.push(GpuId::parse(entry)?),
            }
        }
        Ok(GpuList(ids))
    }
}

/// `a-b` with both ends indexes: the indexes from a to b. `None` for an
/// entry that is not a range (a UUID has dashes too, `-1` is a bad index).
fn index_range(entry: &str) -> Result<Option<std::ops::RangeInclusive<u32>>, String> {
    let t = entry.trim();
    let Some((a, b)) = t.split_once('-') else {
        return Ok(None);
    };
    let number = |x: &str| {
        let x = x.trim();
        (!x.is_empty() && x.bytes().all(|c| c.is_ascii_digit())).then(|| x.parse::<u32>().ok())
    };
    let (Some(a), Some(b)) = (number(a), number(b)) else {
        return Ok(None);
    };
    let (Some(a), Some(b)) = (a, b) else {
        return Err(format!("`{t}`: a GPU index is at most {}", u32::MAX));
    };
    if a > b {
        return Err(format!(
            "`{t}` counts down; a range of GPU indexes counts up, like {b}-{a}"
        ));
    }
    if b - a >= MAX_RANGE {
        return Err(format!(
            "`{t}` names {} GPUs; a range may name at most {MAX_RANGE}",
            u64::from(b - a) + 1
        ));
    }
    Ok(Some(a..=b))
}

/// Compactly, in a form [`GpuList::parse`] takes back: runs of three or
/// more consecutive indexes as a range (`0-9`; at most `MAX_RANGE` GPUs a
/// range), the rest as listed.
impl std::fmt::Display for GpuList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids = &self.0;
        let index = |k: usize| match ids.get(k) {
            Some(GpuId::Index(i)) => Some(*i),
            _ => None,
        };
        let mut parts = Vec::new();
        let mut k = 0;
        while k < ids.len() {
            let mut end = k;
            if let Some(first) = index(k) {
                let mut last = first;
                while end - k + 1 < MAX_RANGE as usize
                    && index(end + 1).is_some_and(|n| Some(n) == last.checked_add(1))
                {
                    end += 1;
                    last += 1;
                }
                if end - k >= 2 {
                    parts.push(format!("{first}-{last}"));
                    k = end + 1;
                    continue;
                }
            }
            parts.push(ids[k].to_string());
            k += 1;
        }
        f.write_str(&parts.join(","))
    }
}

/// Which GPUs to show.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Selection {
    /// `CUDA_VISIBLE_DEVICES` when it is set, else every GPU.
    #[default]
    Auto,
    /// `--all-gpus`: every GPU, whatever `CUDA_VISIBLE_DEVICES` says.
    All,
    /// `--gpu LIST`.
    List(GpuList),
}

/// What a selection comes to on one machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chosen {
    /// Positions in the source's GPU list, in the order shown; `None`:
    /// every GPU as the source has them.
    pub positions: Option<Vec<usize>>,
    /// Something to tell the user (entries of `CUDA_VISIBLE_DEVICES` that
    /// were ignored).
    pub note: Option<String>,
    /// What is shown, when not every GPU: `showing GPUs 2, 3 as 0, 1
    /// (--gpu 2,3)`.
    pub shown: Option<String>,
}

/// "GPUs 0-3" / "GPU 0" / "no GPU", for messages.
fn have(gpus: &[DeviceInfo]) -> String {
    match gpus {
        [] => "no GPU".into(),
        [one] => format!("GPU {}", one.index),
        [first, .., last] if last.index - first.index + 1 == gpus.len() as u32 => {
            format!("GPUs {}-{}", first.index, last.index)
        }
        _ => format!(
            "GPUs {}",
            gpus.iter()
                .map(|d| d.index.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The one GPU `id` names, or why not.
fn find(id: &GpuId, gpus: &[DeviceInfo]) -> Result<usize, String> {
    let hits: Vec<usize> = (0..gpus.len()).filter(|&i| id.matches(&gpus[i])).collect();
    match hits.as_slice() {
        [one] => Ok(*one),
        [] => Err(format!("`{id}` is none of this machine's {}", have(gpus))),
        many => Err(format!(
            "`{id}` matches GPUs {}; give more of the UUID",
            many.iter()
                .map(|&i| gpus[i].index.to_string())
                .collect::<Vec<_>>()
                .join(" and ")
        )),
    }
}

/// Resolves `selection` against the source's `gpus`, `cuda_visible` being
/// the value of `CUDA_VISIBLE_DEVICES` (`None`: not set).
///
/// `--gpu` is strict: every entry must name exactly one GPU. For
/// `CUDA_VISIBLE_DEVICES` vramwatch does as CUDA does: the entries are read
/// up to the first that names no GPU (that one and the rest are ignored,
/// with a note); when that leaves none, it is an error, since a program
/// there sees no GPU either.
pub fn resolve(
    selection: &Selection,
    cuda_visible: Option<&str>,
    gpus: &[DeviceInfo],
) -> Result<Chosen, SourceError> {
    let every = Chosen {
        positions: None,
        note: None,
        shown: None,
    };
    let (positions, note, origin) = match (selection, cuda_visible) {
        (Selection::All, _) | (Selection::Auto, None) => return Ok(every),
        (Selection::List(list), _) => {
            let mut out = Vec::new();
            for id in &list.0 {
                let i = find(id, gpus)
                    .map_err(|why| SourceError::Selection(format!("--gpu {list}: {why}")))?;
                if !out.contains(&i) {
                    out.push(i);
                }
            }
            (out, None, format!("--gpu {list}"))
        }
        (Selection::Auto, Some(value)) => {
            let mut out = Vec::new();
            let mut stopped = None;
            for entry in value.split(',') {
                let e = entry.trim();
                let found = match cuda_entry(e) {
                    Some(id) => find(&id, gpus),
                    None => Err(format!("`{e}` is not a GPU index or UUID")),
                };
                match found {
                    Ok(i) if !out.contains(&i) => out.push(i),
                    Ok(_) => {
                        stopped = Some(format!("`{e}` is listed twice"));
                        break;
                    }
                    Err(why) => {
                        stopped = Some(why);
                        break;
                    }
                }
            }
            let hint = "`--all-gpus` shows every GPU, `--gpu LIST` chooses";
            if out.is_empty() {
                let why = if value.trim().is_empty() {
                    "it is empty".to_owned()
                } else {
                    stopped.unwrap_or_default()
                };
                return Err(SourceError::Selection(format!(
                    "CUDA_VISIBLE_DEVICES={value} selects no GPU ({why}), so CUDA programs here see none; {hint}"
                )));
            }
            let note = stopped.map(|why| {
                format!(
                    "CUDA_VISIBLE_DEVICES={value}: {why}; it and the entries after it are ignored, as CUDA does ({hint})"
                )
            });
            (out, note, format!("CUDA_VISIBLE_DEVICES={value}"))
        }
    };
    if positions.iter().copied().eq(0..gpus.len()) {
        return Ok(Chosen {
            positions: None,
            note,
            shown: None,
        });
    }
    let list = |it: &mut dyn Iterator<Item = u32>| {
        it.map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
    };
    let shown = format!(
        "showing GPU{} {} as {} ({origin})",
        if positions.len() == 1 { "" } else { "s" },
        list(
            &mut positions
                .iter()
                .filter_map(|&p| gpus.get(p))
                .map(|d| d.index)
        ),
        list(&mut (0..positions.len() as u32)),
    );
    Ok(Chosen {
        positions: Some(positions),
        note,
        shown: Some(shown),
    })
}

/// One entry of `CUDA_VISIBLE_DEVICES` as CUDA reads it: an index, or a
/// UUID (prefix) with its `GPU-`; anything else ends the list.
fn cuda_entry(e: &str) -> Option<GpuId> {
    if e.to_ascii_uppercase().starts_with("GPU-") {
        Some(GpuId::Uuid(e.to_owned()))
    } else {
        e.parse().ok().map(GpuId::Index)
    }
}

/// A source that shows only some of another's GPUs, numbered from 0 in
/// the order chosen.
pub struct Selected {
    inner: Box<dyn Source>,
    /// Position here → position in `inner`.
    map: Vec<usize>,
    info: Arc<SystemInfo>,
}

impl Selected {
    /// `positions` are positions in `inner`'s GPU list (from [`resolve`]).
    pub fn new(inner: Box<dyn Source>, positions: Vec<usize>) -> Selected {
        let all = inner.system();
        let mut map = Vec::with_capacity(positions.len());
        let mut gpus = Vec::with_capacity(positions.len());
        for p in positions {
            if let Some(d) = all.gpus.get(p) {
                gpus.push(DeviceInfo {
                    index: gpus.len() as u32,
                    ..d.clone()
                });
                map.push(p);
            }
        }
        let info = Arc::new(SystemInfo {
            gpus,
            ..(*all).clone()
        });
        Selected { inner, map, info }
    }
}

impl Source for Selected {
    fn system(&self) -> Arc<SystemInfo> {
        self.info.clone()
    }

    fn probe(&self, index: usize) -> Box<dyn GpuProbe> {
        let inner = match self.map.get(index) {
            Some(&p) => self.inner.probe(p),
            None => Box::new(NotSelected),
        };
        Box::new(SelectedProbe {
            inner,
            index: index as u32,
        })
    }

    fn host_facts(&self) -> Box<dyn HostFacts> {
        Box::new(SelectedHost {
            inner: self.inner.host_facts(),
            map: self.map.clone(),
        })
    }
}

/// A probe of one chosen GPU: the inner source's, with its GPU's number
/// in errors made ours.
struct SelectedProbe {
    inner: Box<dyn GpuProbe>,
    index: u32,
}

impl SelectedProbe {
    fn ours(&self, e: ProbeError) -> ProbeError {
        match e {
            ProbeError::Lost { reason, .. } => ProbeError::Lost {
                index: self.index,
                reason,
            },
        }
    }
}

impl GpuProbe for SelectedProbe {
    fn fast(&mut self, t_ms: Millis) -> Result<FastReading, ProbeError> {
        self.inner.fast(t_ms).map_err(|e| self.ours(e))
    }

    fn memory(&mut self, t_ms: Millis) -> Result<FastReading, ProbeError> {
        self.inner.memory(t_ms).map_err(|e| self.ours(e))
    }

    fn normal(&mut self, t_ms: Millis, with_proc_util: bool) -> Result<NormalReading, ProbeError> {
        self.inner
            .normal(t_ms, with_proc_util)
            .map_err(|e| self.ours(e))
    }

    fn slow(&mut self, t_ms: Millis, due: SlowDue) -> Result<SlowReading, ProbeError> {
        self.inner.slow(t_ms, due).map_err(|e| self.ours(e))
    }
}

/// A probe for a position past the chosen GPUs (the sampler never asks
/// for one): it has no GPU.
struct NotSelected;

impl NotSelected {
    fn lost<T>() -> Result<T, ProbeError> {
        Err(ProbeError::Lost {
            index: u32::MAX,
            reason: "not a chosen GPU".into(),
        })
    }
}

impl GpuProbe for NotSelected {
    fn fast(&mut self, _: Millis) -> Result<FastReading, ProbeError> {
        Self::lost()
    }

    fn normal(&mut self, _: Millis, _: bool) -> Result<NormalReading, ProbeError> {
        Self::lost()
    }

    fn slow(&mut self, _: Millis, _: SlowDue) -> Result<SlowReading, ProbeError> {
        Self::lost()
    }
}

/// The inner source's host facts, asked about its own GPU numbers.
struct SelectedHost {
    inner: Box<dyn HostFacts>,
    map: Vec<usize>,
}

impl HostFacts for SelectedHost {
    fn enrich(&mut self, t_ms: Millis, procs: &mut [ProcSample], fresh: bool) {
        let inner_of = |g: u32| self.map.get(g as usize).map(|&p| p as u32);
        let ours: Vec<u32> = procs.iter().map(|p| p.gpu).collect();
        for p in procs.iter_mut() {
            p.gpu = inner_of(p.gpu).unwrap_or(p.gpu);
        }
        self.inner.enrich(t_ms, procs, fresh);
        for (p, g) in procs.iter_mut().zip(ours) {
            p.gpu = g;
        }
    }

    fn prime(&mut self, pids: &[u32]) -> bool {
        self.inner.prime(pids)
    }
}

#[cfg(test)]
mod tests;
