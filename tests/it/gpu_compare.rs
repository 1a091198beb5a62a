//! scripts/gpu_compare.py, the judge of the H200 check, judged itself on
//! simulated data: agreement passes, a one-MiB difference or a missing PID
//! fails.

use crate::common;

use std::process::Command;

const MIB: u64 = 1 << 20;

fn snapshot() -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_vramwatch"))
        .args(["snapshot", "--demo", "--json"])
        .output()
        .expect("run vramwatch");
    serde_json::from_slice(&out.stdout).expect("json")
}

/// nvidia-smi's CSVs as they would read the same moment.
fn smi(v: &serde_json::Value, tweak: impl Fn(&mut u64, &str)) -> String {
    let mut s = String::from("#gpus\n");
    for g in v["gpus"].as_array().unwrap() {
        let i = g["index"].as_u64().unwrap();
        let uuid = v["system"]["gpus"][i as usize]["uuid"].as_str().unwrap();
        let m = &g["mem"];
        let mut used = m["used"].as_u64().unwrap().div_ceil(MIB);
        tweak(&mut used, &format!("gpu{i}"));
        s += &format!(
            "{i}, {uuid}, {used}, {}, {}, {}\n",
            m["reserved"].as_u64().unwrap().div_ceil(MIB),
            m["total"].as_u64().unwrap().div_ceil(MIB),
            m["free"].as_u64().unwrap().div_ceil(MIB)
        );
    }
    s += "#apps\n";
    for p in v["procs"].as_array().unwrap() {
        let uuid = v["system"]["gpus"][p["gpu"].as_u64().unwrap() as usize]["uuid"]
            .as_str()
            .unwrap();
        let pid = p["pid"].as_u64().unwrap();
        let mut mem = p["mem"].as_u64().unwrap().div_ceil(MIB);
        tweak(&mut mem, &format!("pid{pid}"));
        if mem != u64::MAX {
            s += &format!("{uuid}, {pid}, {mem}\n");
        }
    }
    s
}

fn judge(a: &str, snap: &serde_json::Value, b: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let (pa, ps, pb) = (
        dir.path().join("a"),
        dir.path().join("s"),
        dir.path().join("b"),
    );
    std::fs::write(&pa, a).unwrap();
    std::fs::write(&ps, serde_json::to_vec(snap).unwrap()).unwrap();
    std::fs::write(&pb, b).unwrap();
    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/gpu_compare.py"
        ))
        .args([&pa, &ps, &pb])
        .output()
        .expect("python3");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn the_comparison_passes_agreement_and_catches_differences() {
    if !common::tool_available("python3") {
        return;
    }
    let v = snapshot();
    let same = smi(&v, |_, _| {});
    let (ok, out) = judge(&same, &v, &same);
    assert!(ok && out.contains("ALL AGREE"), "{out}");

    // One MiB off on GPU 1, unchanged between the reads: a mismatch.
    let off = smi(&v, |x, what| {
        if what == "gpu1" {
            *x += 1
        }
    });
    let (ok, out) = judge(&off, &v, &off);
    assert!(
        !ok && out.contains("GPU 1 memory.used (MiB)") && out.contains("MISMATCH"),
        "{out}"
    );

    // A figure that moved between the reads is judged by the range.
    let grew = smi(&v, |x, what| {
        if what == "gpu1" {
            *x += 64
        }
    });
    let (ok, out) = judge(&same, &v, &grew);
    assert!(ok && out.contains("moving, within"), "{out}");

    // A PID nvidia-smi lists in both reads that vramwatch lacks.
    let pid = v["procs"][0]["pid"].as_u64().unwrap();
    let mut fewer = v.clone();
    fewer["procs"].as_array_mut().unwrap().remove(0);
    let (ok, out) = judge(&same, &fewer, &same);
    assert!(
        !ok && out.contains(&format!("PID {pid}: missing from vramwatch")),
        "{out}"
    );
}
