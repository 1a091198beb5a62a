//! Which GPU of the new recording is which of the baseline's
//! (docs/baseline.md, "GPUs"): by the rule chosen ([`GpuMatch`]), then any
//! left on both sides by model, in index order.

use std::collections::BTreeMap;

use super::stats::GpuStats;

/// What a GPU is matched by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GpuKey {
    pub(crate) index: u32,
    pub(crate) name: String,
    pub(crate) in_use: bool,
}

impl GpuKey {
    pub(crate) fn of(g: &GpuStats) -> GpuKey {
        GpuKey {
            index: g.index,
            name: g.name.clone(),
            in_use: g.in_use(),
        }
    }
}

/// How GPUs are paired.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum GpuMatch {
    /// The only GPU in use on each side (same model), else by index.
    #[default]
    Auto,
    /// Same index.
    Index,
    /// Same model, the pairs that share the most matched processes first.
    Model,
    /// These (new, baseline) pairs only.
    Given(Vec<(u32, u32)>),
}

impl GpuMatch {
    /// `auto`, `index`, `model`, or pairs `NEW=OLD[,NEW=OLD…]`.
    pub(crate) fn parse(s: &str) -> Result<GpuMatch, String> {
        match s.trim() {
            "auto" => return Ok(GpuMatch::Auto),
            "index" => return Ok(GpuMatch::Index),
            "model" => return Ok(GpuMatch::Model),
            _ => {}
        }
        let bad = || {
            format!(
                "--match-gpu `{s}`: expected auto, index, model, or pairs of GPU indices NEW=BASELINE such as 0=1 or 0=1,1=0"
            )
        };
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for part in s.split(',') {
            let (a, b) = part.split_once('=').ok_or_else(bad)?;
            let a: u32 = a.trim().parse().map_err(|_| bad())?;
            let b: u32 = b.trim().parse().map_err(|_| bad())?;
            if pairs.iter().any(|&(x, y)| x == a || y == b) {
                return Err(format!(
                    "--match-gpu `{s}`: each GPU may be named once on each side"
                ));
            }
            pairs.push((a, b));
        }
        Ok(GpuMatch::Given(pairs))
    }
}

/// Why two GPUs were paired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GpuBasis {
    Index,
    /// The only GPU in use on each side.
    OnlyInUse,
    /// Same model, sharing matched processes.
    Processes,
    /// Same model, left over.
    Model,
    /// Named by the user.
    Given,
}

impl GpuBasis {
    pub(crate) fn name(self) -> &'static str {
        match self {
            GpuBasis::Index => "index",
            GpuBasis::OnlyInUse => "only_in_use",
            GpuBasis::Processes => "processes",
            GpuBasis::Model => "model",
            GpuBasis::Given => "given",
        }
    }
}

/// Pairs GPUs: (new, baseline, basis), by position in the slices. `procs`
/// are the matched processes as (new GPU index, baseline GPU index).
pub(crate) fn match_gpus(
    new: &[GpuKey],
    old: &[GpuKey],
    rule: &GpuMatch,
    procs: &[(u32, u32)],
) -> Result<Vec<(usize, usize, GpuBasis)>, String> {
    let mut out: Vec<(usize, usize, GpuBasis)> = Vec::new();
    let free = |out: &[(usize, usize, GpuBasis)], a: usize, b: usize| {
        !out.iter().any(|&(x, y, _)| x == a || y == b)
    };
    let by_index = |out: &mut Vec<(usize, usize, GpuBasis)>| {
        for (a, g) in new.iter().enumerate() {
            if let Some(b) = old.iter().position(|h| h.index == g.index)
                && free(out, a, b)
            {
                out.push((a, b, GpuBasis::Index));
            }
        }
    };
    match rule {
        GpuMatch::Given(pairs) => {
            for &(x, y) in pairs {
                let find = |gs: &[GpuKey], i: u32, side: &str| {
                    gs.iter().position(|g| g.index == i).ok_or_else(|| {
                        let have: Vec<String> = gs.iter().map(|g| g.index.to_string()).collect();
                        format!(
                            "--match-gpu: the {side} recording has no GPU {i} (it has GPU {})",
                            have.join(", ")
                        )
                    })
                };
                out.push((
                    find(new, x, "new")?,
                    find(old, y, "baseline")?,
                    GpuBasis::Given,
                ));
            }
            return Ok(out);
        }
        GpuMatch::Index => by_index(&mut out),
        GpuMatch::Auto => {
            let used = |gs: &[GpuKey]| {
                let v: Vec<usize> = (0..gs.len()).filter(|&i| gs[i].in_use).collect();
                v
            };
            match (used(new).as_slice(), used(old).as_slice()) {
                ([a], [b]) if new[*a].name == old[*b].name => {
                    out.push((*a, *b, GpuBasis::OnlyInUse))
                }
                _ => by_index(&mut out),
            }
        }
        GpuMatch::Model => {
            // Pairs of the same model by the matched processes they share.
            let mut shared: BTreeMap<(usize, usize), usize> = BTreeMap::new();
            for &(x, y) in procs {
                let a = new.iter().position(|g| g.index == x);
                let b = old.iter().position(|g| g.index == y);
                if let (Some(a), Some(b)) = (a, b)
                    && new[a].name == old[b].name
                {
                    *shared.entry((a, b)).or_default() += 1;
                }
            }
            let mut ranked: Vec<((usize, usize), usize)> = shared.into_iter().collect();
            ranked.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            for ((a, b), _) in ranked {
                if free(&out, a, b) {
                    out.push((a, b, GpuBasis::Processes));
                }
            }
        }
    }
    // The rest by model, in index order.
    for (a, g) in new.iter().enumerate() {
        if let Some(b) = (0..old.len()).find(|&b| free(&out, a, b) && g.name == old[b].name) {
            out.push((a, b, GpuBasis::Model));
        }
    }
    out.sort_by_key(|&(a, _, _)| new[a].index);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpus(list: &[(u32, &str, bool)]) -> Vec<GpuKey> {
        list.iter()
            .map(|&(index, name, in_use)| GpuKey {
                index,
                name: name.into(),
                in_use,
            })
            .collect()
    }

    #[test]
    fn gpus_pair_by_index_unless_one_is_in_use_on_each_side() {
        let h = "NVIDIA H200";
        let new = gpus(&[(0, h, true), (1, h, false)]);
        let old = gpus(&[(0, h, false), (1, h, true)]);
        // The one in use on each side, then the rest by model.
        let got = match_gpus(&new, &old, &GpuMatch::Auto, &[]).unwrap();
        assert_eq!(
            got,
            vec![(0, 1, GpuBasis::OnlyInUse), (1, 0, GpuBasis::Model)]
        );
        let got = match_gpus(&new, &old, &GpuMatch::Index, &[]).unwrap();
        assert_eq!(got, vec![(0, 0, GpuBasis::Index), (1, 1, GpuBasis::Index)]);
        // Both in use on each side: by index.
        let new = gpus(&[(0, h, true), (1, h, true)]);
        let old = gpus(&[(0, h, true), (1, h, true)]);
        let got = match_gpus(&new, &old, &GpuMatch::Auto, &[]).unwrap();
        assert_eq!(got, vec![(0, 0, GpuBasis::Index), (1, 1, GpuBasis::Index)]);
        // By model: where the matched processes ran.
        let got = match_gpus(&new, &old, &GpuMatch::Model, &[(0, 1), (0, 1), (1, 0)]).unwrap();
        assert_eq!(
            got,
            vec![(0, 1, GpuBasis::Processes), (1, 0, GpuBasis::Processes)]
        );
    }

    #[test]
    fn a_missing_gpu_stays_unmatched_or_pairs_by_model() {
        let new = gpus(&[(0, "A100", true), (1, "H200", true)]);
        let old = gpus(&[(0, "A100", true)]);
        let got = match_gpus(&new, &old, &GpuMatch::Auto, &[]).unwrap();
        assert_eq!(got, vec![(0, 0, GpuBasis::Index)]);
        // Renumbered (CUDA_VISIBLE_DEVICES): GPU 3 of the baseline is the
        // only H200 there.
        let old = gpus(&[(3, "H200", true), (0, "A100", true)]);
        let got = match_gpus(&new, &old, &GpuMatch::Auto, &[]).unwrap();
        assert_eq!(got, vec![(0, 1, GpuBasis::Index), (1, 0, GpuBasis::Model)]);
        let got = match_gpus(&new, &old, &GpuMatch::Given(vec![(1, 3)]), &[]).unwrap();
        assert_eq!(got, vec![(1, 0, GpuBasis::Given)]);
        let e = match_gpus(&new, &old, &GpuMatch::Given(vec![(1, 7)]), &[]).unwrap_err();
        assert!(
            e.contains("baseline recording has no GPU 7 (it has GPU 3, 0)"),
            "{e}"
        );
    }

    #[test]
    fn gpu_rules_parse() {
        assert_eq!(GpuMatch::parse("auto"), Ok(GpuMatch::Auto));
        assert_eq!(
            GpuMatch::parse("0=1, 1=0"),
            Ok(GpuMatch::Given(vec![(0, 1), (1, 0)]))
        );
        assert!(GpuMatch::parse("0=1,0=2").unwrap_err().contains("once"));
        assert!(
            GpuMatch::parse("zero")
                .unwrap_err()
                .contains("NEW=BASELINE")
        );
    }
}
