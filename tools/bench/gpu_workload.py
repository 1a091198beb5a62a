#!/usr/bin/env python3
# Copied from the project's shared bench folder, 2026-12-01 (unchanged but for
# this comment), so the scripts in scripts/ need nothing outside the repo.
"""Real GPU memory workloads with known shapes, for tests and benchmarks on a
machine with an NVIDIA GPU and PyTorch.

Each role runs in its own process, so a monitor sees several PIDs:
  steady    holds a fixed block and keeps the GPU busy with matrix products
  leak      grows by a fixed step at a fixed rate (a leak), up to a cap
  sawtooth  allocates and frees a large block in cycles, emptying the cache
            so that the driver sees memory come and go
  oom       grows until CUDA raises out-of-memory, then exits with code 3
  idle      holds a small block and does nothing
Usage:
  gpu_workload.py [--seconds 60] [--device 0] ROLE[=N] ...
  e.g. gpu_workload.py --seconds 90 steady leak sawtooth idle=8
Each role prints one JSON line when it starts and when it stops, with its pid
and the bytes it holds, so a test can compare a monitor's figures with truth.
Environment: LEAK_MIB_PER_S (default 128), LEAK_CAP_GIB (default 24),
STEADY_GIB (default 16), SAW_GIB (default 8), SAW_PERIOD_S (default 6).
"""
import json, multiprocessing as mp, os, sys, time

MiB = 1 << 20
GiB = 1 << 30


def say(**kw):
    kw["t"] = round(time.time(), 3)
    print(json.dumps(kw), flush=True)


def role_main(role, seconds, device):
    import torch
    dev = torch.device(f"cuda:{device}")
    torch.cuda.set_device(dev)
    hold = []
    end = time.time() + seconds
    say(role=role, pid=os.getpid(), event="start")
    try:
        if role == "steady":
            hold.append(torch.empty(int(float(os.environ.get("STEADY_GIB", 16)) * GiB), dtype=torch.uint8, device=dev))
            a = torch.randn(8192, 8192, device=dev)
            while time.time() < end:
                a = (a @ a).tanh_()
                torch.cuda.synchronize()
        elif role == "leak":
            rate = float(os.environ.get("LEAK_MIB_PER_S", 128))
            cap = float(os.environ.get("LEAK_CAP_GIB", 24)) * GiB
            step = int(rate * MiB / 4)
            held = 0
            while time.time() < end:
                if held + step <= cap:
                    hold.append(torch.ones(step, dtype=torch.uint8, device=dev))
                    held += step
                time.sleep(0.25)
        elif role == "sawtooth":
            size = int(float(os.environ.get("SAW_GIB", 8)) * GiB)
            period = float(os.environ.get("SAW_PERIOD_S", 6))
            while time.time() < end:
                x = torch.ones(size, dtype=torch.uint8, device=dev)
                time.sleep(period / 2)
                del x
                torch.cuda.empty_cache()
                time.sleep(period / 2)
        elif role == "oom":
            while time.time() < end:
                hold.append(torch.empty(GiB, dtype=torch.uint8, device=dev))
                time.sleep(0.05)
        elif role == "idle":
            hold.append(torch.ones(256 * MiB, dtype=torch.uint8, device=dev))
            while time.time() < end:
                time.sleep(0.5)
        else:
            raise SystemExit(f"unknown role {role}")
    except torch.cuda.OutOfMemoryError:
        say(role=role, pid=os.getpid(), event="oom", held=sum(t.numel() for t in hold))
        os._exit(3)
    say(role=role, pid=os.getpid(), event="stop", held=sum(t.numel() for t in hold))


def main():
    args = sys.argv[1:]
    seconds, device = 60.0, 0
    roles = []
    while args:
        a = args.pop(0)
        if a == "--seconds":
            seconds = float(args.pop(0))
        elif a == "--device":
            device = int(args.pop(0))
        else:
            name, _, n = a.partition("=")
            roles += [name] * int(n or 1)
    if not roles:
        raise SystemExit(__doc__)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=role_main, args=(r, seconds, device)) for r in roles]
    for p in procs:
        p.start()
    for p in procs:
        p.join()


if __name__ == "__main__":
    main()
