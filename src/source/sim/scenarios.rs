//! The scenarios `--demo` names: which GPUs, which processes, and how
//! each one's memory moves.

use super::{Busy, Shape, SimGpu, SimProc, noise};
use crate::model::ProcKind;
use crate::model::units::{GIB, MIB};

pub(super) type Built = (u32, Vec<SimGpu>, Vec<SimProc>);

fn gpus(n: usize) -> Vec<SimGpu> {
    vec![SimGpu { ghost: 0 }; n]
}

fn proc(
    pid: u32,
    gpu: u32,
    user: &'static str,
    command: &str,
    shape: Shape,
    busy: Busy,
) -> SimProc {
    SimProc {
        pid,
        gpus: vec![gpu],
        user,
        command: command.to_owned(),
        container: None,
        pod: None,
        kind: ProcKind::Compute,
        start: 0.0,
        end: None,
        respawn: None,
        shape,
        busy,
        cpu_pct: 100.0,
        rss: 3 * GIB,
        torch: false,
    }
}

fn training_shape(scale: u64) -> Shape {
    Shape::Training {
        weights: 28 * GIB / scale,
        optimizer: 22 * GIB / scale,
        optimizer_at: 15.0,
        activations: 26 * GIB / scale,
        step_s: 2.4,
        eval_every: 45.0,
        eval_bytes: 6 * GIB / scale,
    }
}

pub(super) fn demo() -> Built {
    let mut g = gpus(4);
    // Something in another container holds memory on GPU 2.
    g[2].ghost = 2 * GIB;
    let mut p = Vec::new();
    // GPU 0 and 3: one DDP training job, two ranks.
    for (rank, gpu) in [(0u32, 0u32), (1, 3)] {
        let mut t = proc(
            48_211 + rank,
            gpu,
            "$me",
            &format!("python train.py --model llama-8b --ddp --rank {rank} --batch 16 --lr 3e-4"),
            training_shape(1),
            Busy::Training,
        );
        t.cpu_pct = 160.0;
        t.rss = 11 * GIB;
        t.torch = true;
        p.push(t);
    }
    // GPU 1: a steady job and a leak that runs into OOM and is restarted.
    let mut steady = proc(
        31_877,
        1,
        "alice",
        "python finetune.py --config configs/sft.yaml",
        Shape::Steady { bytes: 96 * GIB },
        Busy::Light(55),
    );
    steady.container = Some("7f3c2a91d0be");
    p.push(steady);
    let mut leaky = proc(
        52_090,
        1,
        "$me",
        "python eval_loop.py --cache-outputs",
        Shape::Leak {
            base: 3 * GIB,
            rate: 512.0 * MIB as f64,
        },
        Busy::Light(25),
    );
    leaky.start = 4.0;
    leaky.respawn = Some(12.0);
    leaky.cpu_pct = 95.0;
    p.push(leaky);
    // GPU 2: an inference server filling its KV cache, and a notebook.
    let mut serve = proc(
        20_310,
        2,
        "svc-infer",
        "vllm serve meta-llama/Llama-3.1-70B --gpu-memory-utilization 0.85",
        Shape::Inference {
            weights: 70 * GIB,
            kv: 44 * GIB,
            tau: 14.0,
        },
        Busy::Serving,
    );
    serve.container = Some("c41d9e0f5a27");
    serve.pod = Some(("inference", "llm-serve-0", "vllm"));
    serve.cpu_pct = 45.0;
    serve.rss = 24 * GIB;
    p.push(serve);
    let mut nb = proc(
        27_415,
        2,
        "bob",
        "/opt/conda/bin/python -m ipykernel_launcher -f kernel-3f1a.json",
        Shape::Steady { bytes: 5 * GIB },
        Busy::None,
    );
    nb.cpu_pct = 0.5;
    p.push(nb);
    // GPU 3: short spikes that a 1 s poll mostly misses.
    let mut spiky = proc(
        39_004,
        3,
        "bob",
        "python bench_attention.py --seq 32768",
        Shape::Spiky {
            base: 2 * GIB,
            spike: 30 * GIB,
            every: 17.0,
            width: 0.35,
        },
        Busy::Light(30),
    );
    spiky.start = 2.0;
    p.push(spiky);
    // A display server holds a little graphics memory on GPU 0.
    let mut xorg = proc(
        1_822,
        0,
        "root",
        "/usr/lib/xorg/Xorg :0 -nolisten tcp",
        Shape::Steady { bytes: 20 * MIB },
        Busy::None,
    );
    xorg.kind = ProcKind::Graphics;
    xorg.cpu_pct = 0.3;
    xorg.rss = 90 * MIB;
    p.push(xorg);
    // A short job that starts and finishes within the first two minutes.
    let mut short = proc(
        55_120,
        3,
        "alice",
        "python export_onnx.py --fp16",
        Shape::Steady { bytes: 9 * GIB },
        Busy::Light(60),
    );
    short.start = 20.0;
    short.end = Some(75.0);
    p.push(short);
    (4, g, p)
}

pub(super) fn training() -> Built {
    let mut t = proc(
        48_211,
        0,
        "$me",
        "python train.py --model llama-8b --batch 16 --lr 3e-4",
        training_shape(1),
        Busy::Training,
    );
    t.cpu_pct = 160.0;
    t.rss = 11 * GIB;
    t.torch = true;
    (1, gpus(1), vec![t])
}

pub(super) fn leak() -> Built {
    let mut l = proc(
        52_090,
        0,
        "$me",
        "python eval_loop.py --cache-outputs",
        Shape::Leak {
            base: 3 * GIB,
            rate: 1024.0 * MIB as f64,
        },
        Busy::Light(25),
    );
    l.respawn = Some(15.0);
    let idle = proc(
        27_415,
        0,
        "bob",
        "python -m http.server-gpu-warm",
        Shape::Steady { bytes: GIB },
        Busy::None,
    );
    (1, gpus(1), vec![l, idle])
}

pub(super) fn inference() -> Built {
    let mut s = proc(
        20_310,
        0,
        "svc-infer",
        "vllm serve meta-llama/Llama-3.1-70B --gpu-memory-utilization 0.85",
        Shape::Inference {
            weights: 70 * GIB,
            kv: 44 * GIB,
            tau: 14.0,
        },
        Busy::Serving,
    );
    s.container = Some("c41d9e0f5a27");
    (1, gpus(1), vec![s])
}

pub(super) fn idle() -> Built {
    let p = vec![
        proc(
            27_415,
            0,
            "bob",
            "/opt/conda/bin/python -m ipykernel_launcher",
            Shape::Steady { bytes: 300 * MIB },
            Busy::None,
        ),
        proc(
            27_999,
            1,
            "$me",
            "python -c import torch; torch.zeros(1).cuda(); input()",
            Shape::Steady { bytes: 2 * MIB },
            Busy::None,
        ),
    ];
    (2, gpus(2), p)
}

pub(super) fn crowded(seed: u64) -> Built {
    const USERS: [&str; 8] = [
        "$me",
        "alice",
        "bob",
        "carol",
        "dave",
        "erin",
        "svc-infer",
        "frank",
    ];
    const CONTAINERS: [Option<&str>; 4] = [None, Some("7f3c2a91d0be"), Some("c41d9e0f5a27"), None];
    let mut p = Vec::with_capacity(300);
    for i in 0..300u32 {
        let r = |k: u64| noise(seed, i as u64, k);
        let gpu = i % 8;
        // ~37 processes per GPU averaging ~3.2 GiB keeps every board below full.
        let size = ((512 * MIB) as f64 + r(1) * 4.0 * GIB as f64) as u64;
        let (shape, busy, cmd) = match (r(2) * 10.0) as u32 {
            0..=3 => (
                Shape::Steady { bytes: size },
                Busy::Light((r(3) * 20.0) as u32),
                format!("python worker.py --shard {i}"),
            ),
            4..=5 => (
                training_shape(24),
                Busy::Light(8),
                format!(
                    "python train.py --exp sweep-{i} --lr {:.0e}",
                    1e-4 * (1.0 + r(4) * 9.0)
                ),
            ),
            6..=7 => (
                Shape::Inference {
                    weights: size / 2,
                    kv: size / 2,
                    tau: 20.0 + r(5) * 60.0,
                },
                Busy::Light(6),
                format!("python serve.py --port {}", 8000 + i),
            ),
            8 => (
                Shape::Spiky {
                    base: size / 4,
                    spike: size / 2,
                    every: 10.0 + r(6) * 30.0,
                    width: 0.5,
                },
                Busy::Light(4),
                format!("python bench.py --case {i}"),
            ),
            _ => (
                Shape::Steady { bytes: 64 * MIB },
                Busy::None,
                format!("python -m ipykernel_launcher -f kernel-{i:04}.json"),
            ),
        };
        let mut sp = proc(
            10_000 + i * 37,
            gpu,
            USERS[(r(7) * USERS.len() as f64) as usize % USERS.len()],
            &cmd,
            shape,
            busy,
        );
        sp.container = CONTAINERS[(r(8) * 4.0) as usize % 4];
        sp.start = (r(9) * 30.0).floor();
        sp.cpu_pct = (r(10) * 120.0) as f32;
        sp.rss = (256.0 * MIB as f64 + r(11) * 6.0 * GIB as f64) as u64;
        p.push(sp);
    }
    (8, gpus(8), p)
}
