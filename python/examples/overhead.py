"""Measures what vramwatch_torch costs the program it runs in.

    python3 python/examples/overhead.py            # real PyTorch, GPU 0
    python3 python/examples/overhead.py --fake     # no GPU: the test fake

Prints, as JSON:
- the cost of one publish (collect + JSON + atomic write), min/median/p99 µs,
  and of its parts: memory_stats() per device, memory_snapshot(), the write;
- the share of a step that publishing takes at the default interval for a
  50 ms step: publish CPU µs x (50 ms / 500 ms) / 50 ms (the CPU time, not
  the wall time: waits on the disk happen with the GIL released);
- with --steps N (default 200): the mean time of a ~50 ms step with the
  publisher off and on (at the default interval and at 0.05 s), measured, so
  GIL contention shows too.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def summary(us):
    return {
        "n": len(us),
        "min_us": round(min(us), 1),
        "median_us": round(statistics.median(us), 1),
        "p99_us": round(percentile(us, 0.99), 1),
    }


def setup_fake(devices):
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    import fake_torch

    cuda = fake_torch.install()
    cuda.init(count=max(devices, 8))
    for i in range(devices):
        cuda.use(i, allocated=(30 + i) << 30, reserved=(40 + i) << 30, inactive_split=3 << 30, retries=2)
    # A cache of ~2000 blocks in 200 segments, like a mid-sized model's.
    cuda.segments = [
        fake_torch.segment(i % devices, [((k + 1) << 20, "active_allocated" if k % 3 else "inactive") for k in range(10)])
        for i in range(200)
    ]

    def step(target_s):
        # A CPU-bound step holding the GIL, the worst case for contention.
        end = time.perf_counter() + target_s
        x = 0
        while time.perf_counter() < end:
            x += 1

    return cuda, step


def setup_real(devices):
    import torch

    tensors = []
    for d in range(devices):
        dev = torch.device("cuda", d)
        # A realistic cache: a few thousand tensors of assorted sizes.
        for k in range(3000):
            tensors.append(torch.empty(((k * 7919) % 4096 + 1) * 256, dtype=torch.uint8, device=dev))
    a = torch.randn(8192, 8192, device="cuda:0")
    torch.cuda.synchronize()

    def matmuls(n):
        for _ in range(n):
            a @ a
        torch.cuda.synchronize()

    # Size a step to ~50 ms.
    matmuls(3)
    t0 = time.perf_counter()
    matmuls(10)
    per = (time.perf_counter() - t0) / 10
    reps = max(1, round(0.05 / per))

    def step(target_s):
        matmuls(reps)

    step.tensors = tensors
    return torch.cuda, step


def time_steps(step, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        step(0.05)
        times.append(time.perf_counter() - t0)
    return statistics.mean(times) * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fake", action="store_true", help="use the test fake instead of PyTorch")
    ap.add_argument("--devices", type=int, default=1, help="devices the program uses (default 1)")
    ap.add_argument("--publishes", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=200, help="steps per step-time block; 0 to skip")
    ap.add_argument("--blocks", type=int, default=5, help="off/on blocks, interleaved (default 5)")
    ap.add_argument("--dir", default=None, help="where to write (default: a new directory under $XDG_RUNTIME_DIR, else /tmp)")
    args = ap.parse_args()

    cuda, step = (setup_fake if args.fake else setup_real)(args.devices)

    import vramwatch_torch
    from vramwatch_torch import _files, _publisher

    base = args.dir or os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    directory = tempfile.mkdtemp(prefix="vramwatch-overhead-", dir=base)
    os.chmod(directory, 0o700)
    out = {"torch": "fake" if args.fake else sys.modules["torch"].__version__, "devices": args.devices, "dir": directory}

    # Parts.
    stats_us = []
    for _ in range(args.publishes):
        t0 = time.perf_counter()
        cuda.memory_stats(0)
        stats_us.append((time.perf_counter() - t0) * 1e6)
    out["memory_stats_per_device"] = summary(stats_us)
    nested = getattr(cuda, "memory_stats_as_nested_dict", None)
    if nested is not None:
        nested_us = []
        for _ in range(args.publishes):
            t0 = time.perf_counter()
            nested(0)
            nested_us.append((time.perf_counter() - t0) * 1e6)
        out["memory_stats_as_nested_dict_per_device"] = summary(nested_us)
    snap_us = []
    for _ in range(min(args.publishes, 50)):
        t0 = time.perf_counter()
        cuda.memory_snapshot()
        snap_us.append((time.perf_counter() - t0) * 1e6)
    out["memory_snapshot"] = summary(snap_us)
    out["memory_snapshot_period_s"] = round(
        max(_publisher._collect.SNAPSHOT_MIN_PERIOD_S, statistics.median(snap_us) / 1e6 / _publisher._collect.SNAPSHOT_BUDGET), 2
    )
    payload = b"x" * 900
    write_us = []
    for _ in range(args.publishes):
        t0 = time.perf_counter()
        _files.write_atomically(directory, 1, payload)
        write_us.append((time.perf_counter() - t0) * 1e6)
    out["atomic_write"] = summary(write_us)

    # Whole publishes, as the thread does them (the snapshot probe runs at
    # its own budgeted rate, as in real use).
    # Wall time, and CPU time of this thread: a publish waiting on the disk
    # (ext4 flushes a file renamed over another) waits with the GIL released,
    # so the CPU time is what the program's own threads can lose.
    p = _publisher.Publisher(directory, 0.5, largest_free=True)
    pub_us = []
    cpu_us = []
    for _ in range(args.publishes):
        t0 = time.perf_counter()
        c0 = time.thread_time()
        ok = p.publish()
        cpu_us.append((time.thread_time() - c0) * 1e6)
        pub_us.append((time.perf_counter() - t0) * 1e6)
        assert ok, "publish failed"
    out["publish"] = summary(pub_us)
    out["publish_cpu"] = summary(cpu_us)
    out["file_bytes"] = os.path.getsize(p.path)
    median = statistics.median(cpu_us)
    # At 2 Hz a 50 ms step sees 0.1 publishes.
    out["step_share_pct_50ms_at_0.5s"] = round(median * (0.05 / 0.5) / 50_000 * 100, 5)
    out["cpu_share_pct_of_one_core"] = round(median * 2 / 1e6 * 100, 5)
    p.remove_file()

    if args.steps:
        # Interleaved blocks, so drift in the machine's load hits both sides.
        step(0.05)
        runs = {"off": [], "on_0.5s": [], "on_0.05s": []}
        for _ in range(args.blocks):
            runs["off"].append(time_steps(step, args.steps))
            for name, interval in (("on_0.5s", 0.5), ("on_0.05s", 0.05)):
                vramwatch_torch.start(interval=interval, directory=directory, handle_signals=False)
                runs[name].append(time_steps(step, args.steps))
                vramwatch_torch.stop()
        mean = {k: statistics.mean(v) for k, v in runs.items()}
        out["step_ms"] = {k: round(v, 3) for k, v in mean.items()}
        out["step_delta_pct"] = {
            k: round((mean[k] - mean["off"]) / mean["off"] * 100, 3) for k in ("on_0.5s", "on_0.05s")
        }
        out["step_ms_spread_off"] = [round(x, 3) for x in runs["off"]]
    os.rmdir(directory) if not os.listdir(directory) else None
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
