//! The comparison on the real H200 corpus (tests/fixtures/corpus/): the
//! same workload scripts at two speeds, on other GPUs, with other PIDs.

use std::path::{Path, PathBuf};

use super::diff::{self, ProcRef};
use super::gpu_match::GpuBasis;
use super::matching::ProcBasis;
use super::tests::read;
use super::*;

fn corpus(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/corpus")
        .join(rel)
}

/// The programs matched, as (new GPU, baseline GPU, program, basis).
fn matched(cmp: &Comparison) -> Vec<(u32, u32, String, ProcBasis)> {
    cmp.procs
        .iter()
        .map(|p| (p.new.gpu, p.old.gpu, p.new.program.clone(), p.basis))
        .collect()
}

#[test]
fn the_same_scripts_pair_across_real_runs_at_other_speeds_and_gpus() {
    let new = corpus("quick/05-gpu0-healthy_train-s3.jsonl.zst");
    let old = corpus("heldout/08-gpu1-healthy_train-s2.jsonl.zst");
    let (n, o) = (read(&new), read(&old));
    let base = CompareOptions::new(new.clone(), old.clone());
    let cmp = compare(&n, &o, &base).unwrap();
    let p = |s: &str| s.to_owned();
    assert_eq!(
        matched(&cmp),
        vec![
            (1, 0, p("python fragment.py"), ProcBasis::Program),
            (0, 1, p("python healthy_train.py"), ProcBasis::Program),
        ]
    );
    let only = |v: &[ProcRef]| v.iter().map(|p| p.program.clone()).collect::<Vec<_>>();
    assert_eq!(only(&cmp.procs_only.0), ["python dataset_load.py"]);
    assert_eq!(only(&cmp.procs_only.1), ["python weights_load.py"]);
    // Both GPUs are in use on both sides: by index, with a note.
    assert!(cmp.gpus.iter().all(|g| g.basis == GpuBasis::Index));
    assert_eq!(cmp.elsewhere, [(0, 1), (1, 0)]);
    // By model, the GPUs follow their processes.
    let by_model = CompareOptions {
        match_gpu: GpuMatch::Model,
        ..base
    };
    let cmp = compare(&n, &o, &by_model).unwrap();
    let pairs: Vec<(u32, u32, GpuBasis)> = cmp
        .gpus
        .iter()
        .map(|g| (g.new.index, g.old.index, g.basis))
        .collect();
    assert_eq!(
        pairs,
        [(0, 1, GpuBasis::Processes), (1, 0, GpuBasis::Processes)]
    );
    assert!(cmp.elsewhere.is_empty());
    // The allocator's figures are there on both sides.
    let ht = &cmp.procs[1];
    assert_eq!(ht.alloc.len(), 5);
    let peak = |rows: &[diff::Row], k: &str| {
        rows.iter()
            .find(|r| r.key == k)
            .and_then(|r| r.new)
            .unwrap()
    };
    assert!(peak(&ht.alloc, "reserved_peak_bytes") <= peak(&ht.rows, "peak_bytes"));
}

#[test]
fn eval_spike_and_kv_plateau_pair_with_their_other_speed() {
    for (new, old, script) in [
        (
            "quick/02-gpu0-eval_spike-s3.jsonl.zst",
            "heldout/05-gpu1-eval_spike-s2.jsonl.zst",
            "python eval_spike.py",
        ),
        (
            "quick/06-gpu0-kv_plateau-s3.jsonl.zst",
            "heldout/07-gpu1-kv_plateau-s1.jsonl.zst",
            "python kv_plateau.py",
        ),
        (
            "quick/05-gpu0-healthy_train-s3.jsonl.zst",
            "tune/05-gpu0-healthy_train-s1.0.jsonl.zst",
            "python healthy_train.py",
        ),
    ] {
        let (new, old) = (corpus(new), corpus(old));
        let o = CompareOptions {
            match_gpu: GpuMatch::Model,
            ..CompareOptions::new(new.clone(), old.clone())
        };
        let (n, b) = (read(&new), read(&old));
        let cmp = compare(&n, &b, &o).unwrap();
        let m = matched(&cmp);
        let hit = m
            .iter()
            .find(|x| x.2 == script)
            .unwrap_or_else(|| panic!("{script} unmatched: {m:?}"));
        let g = cmp.gpus.iter().find(|g| g.new.index == hit.0).unwrap();
        assert_eq!(g.old.index, hit.1, "{script}: its GPUs are compared");
        // Nothing else of the same program is left unmatched on both sides.
        let left = |v: &[ProcRef]| v.iter().any(|p| p.program == script);
        assert!(!(left(&cmp.procs_only.0) && left(&cmp.procs_only.1)));
        let text = text::text(&n, &b, &cmp);
        assert!(
            text.contains(&format!("Process {script} (matched by program)")),
            "{text}"
        );
    }
}
