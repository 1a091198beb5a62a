"""Fragments the PyTorch CUDA caching allocator on purpose, with
vramwatch_torch publishing, so vramwatch has something to show: reserved far
above allocated, inactive split blocks, allocator retries (and, unless
--no-oom, one caught out-of-memory error).

    python3 python/examples/fragment.py                 # GPU 0, 8 GiB cap
    python3 python/examples/fragment.py --hold 120      # keep it up longer
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python3 python/examples/fragment.py

How: the process is capped with torch.cuda.set_per_process_memory_fraction
(so it fragments its own share and leaves the rest of the GPU alone).

1. Checkerboard: odd-sized blocks under 10 MiB (served by splitting 20 MiB
   segments) fill ~45 % of the cap; every other one is freed. The holes are
   inactive split blocks: reserved, free, unusable for anything bigger.
2. Two tensors of a quarter of what is left under the cap are allocated
   and freed: whole free segments in the cache.
3. Rounds of one large tensor, each larger than the last, so no cached
   block fits it and a new segment would pass the cap: the allocator frees
   its whole free segments and retries (num_alloc_retries + 1 per round).
4. Unless --no-oom: one allocation larger than the cap, caught
   (num_ooms + 1).
5. Holds for --hold seconds with a training-like loop (activations
   allocated and freed) so allocated moves while reserved stays.

Prints one JSON line per phase with the allocator's figures, and at the end
the file vramwatch reads. Exits 1 if no retry happened.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import vramwatch_torch  # noqa: E402

GIB = 1 << 30
MIB = 1 << 20


def figures(torch, dev):
    s = torch.cuda.memory_stats(dev)
    return {
        "allocated": s.get("allocated_bytes.all.current", 0),
        "reserved": s.get("reserved_bytes.all.current", 0),
        "inactive_split": s.get("inactive_split_bytes.all.current", 0),
        "retries": s.get("num_alloc_retries", 0),
        "ooms": s.get("num_ooms", 0),
    }


def report(torch, dev, phase, **extra):
    f = figures(torch, dev)
    f.update(extra)
    print(json.dumps({"phase": phase, **{k: (round(v / GIB, 3) if isinstance(v, int) and v > MIB else v) for k, v in f.items()}}), flush=True)
    vramwatch_torch.publish_now()
    return f


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--cap-gib", type=float, default=8.0, help="memory cap for this process (default 8)")
    ap.add_argument("--rounds", type=int, default=8, help="large-allocation rounds, one retry each (default 8)")
    ap.add_argument("--no-oom", action="store_true", help="skip the caught out-of-memory error")
    ap.add_argument("--hold", type=float, default=60.0, help="seconds to keep running afterwards (default 60)")
    args = ap.parse_args()

    started = vramwatch_torch.start()
    import torch

    if not torch.cuda.is_available():
        sys.exit("fragment.py: no CUDA device")
    dev = args.device
    torch.cuda.set_device(dev)
    total = torch.cuda.get_device_properties(dev).total_memory
    cap = int(args.cap_gib * GIB)
    if cap > total:
        sys.exit("fragment.py: --cap-gib %.1f is more than the device's %.1f GiB" % (args.cap_gib, total / GIB))
    torch.cuda.set_per_process_memory_fraction(cap / total, dev)
    print(json.dumps({"vramwatch_torch": started, "file": vramwatch_torch.path(), "pid": os.getpid(),
                      "device": torch.cuda.get_device_name(dev), "cap_gib": args.cap_gib,
                      "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF")}), flush=True)

    def empty(nbytes):
        return torch.empty(int(nbytes), dtype=torch.uint8, device=dev)

    # 1. Checkerboard of odd sizes below 10 MiB.
    blocks = []
    i = 0
    while torch.cuda.memory_reserved(dev) < 0.45 * cap:
        size = (1 + (i * 7) % 9) * MIB + (i % 5) * 96 * 1024 + 512
        blocks.append(empty(size))
        i += 1
    del blocks[::2]
    report(torch, dev, "checkerboard", blocks_kept=len(blocks))

    # What the cap leaves once the checkerboard is reserved.
    r0 = figures(torch, dev)["reserved"]
    room = cap - r0
    if room < 2 * GIB:
        sys.exit("fragment.py: only %.2f GiB left under the cap; raise --cap-gib" % (room / GIB))

    # 2. Whole free segments in the cache: two tensors of room/4, freed.
    whole = [empty(room // 4), empty(room // 4)]
    del whole
    report(torch, dev, "whole_free_segments")

    # 3. Rounds of one large tensor of size s_r, from room/2 up to room,
    # rising: no cached free block fits it (all are smaller), and a new
    # segment would pass the cap (what is cached, room/2 or s_(r-1), plus
    # s_r is more than room), but it fits once the cached whole segments
    # are released. That release-and-retry is num_alloc_retries.
    lo, hi = room // 2 + 64 * MIB, room - 64 * MIB
    rounds = max(1, args.rounds)
    for r in range(rounds):
        size = lo + (hi - lo) * r // max(1, rounds - 1)
        try:
            big = empty(size)
            del big
        except torch.cuda.OutOfMemoryError:
            report(torch, dev, "round_oom", round=r, size_gib=round(size / GIB, 3))
            break
        report(torch, dev, "round", round=r, size_gib=round(size / GIB, 3))

    # 4. A caught out-of-memory error.
    if not args.no_oom:
        try:
            empty(cap + GIB)
            print(json.dumps({"phase": "oom", "error": "no OOM: the cap did not hold"}), flush=True)
        except torch.cuda.OutOfMemoryError as e:
            report(torch, dev, "oom_caught", message=str(e).splitlines()[0][:120])

    # 5. Hold, with activations coming and going inside the holes.
    end = time.monotonic() + args.hold
    k = 0
    while time.monotonic() < end:
        acts = [empty((3 + (k + j) % 17) * MIB) for j in range(40)]
        time.sleep(0.3)
        del acts
        time.sleep(0.2)
        k += 1
    final = report(torch, dev, "final")
    path = vramwatch_torch.path()
    if path:
        with open(path) as f:
            print(f.read(), flush=True)
    if final["retries"] == 0:
        print("fragment.py: no allocator retry happened (alloc conf: %s)"
              % os.environ.get("PYTORCH_CUDA_ALLOC_CONF"), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
