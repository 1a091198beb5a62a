#!/usr/bin/env python3
# Usage: scripts/gpu_compare.py BEFORE.csvs SNAP.json|METRICS.txt AFTER.csvs  (exit 0 when all agree)
"""Compare `vramwatch snapshot --json` with nvidia-smi, GPU by GPU and
process by process, in whole MiB as nvidia-smi prints them.

nvidia-smi is read just before (A) and just after (B) vramwatch. A figure
that did not move between A and B must agree exactly; one that moved (a
growing or sawtoothing process) must lie between A and B. Every PID that
nvidia-smi lists must be in vramwatch's list and the other way round.
The middle file is either `vramwatch snapshot --json` output or the text of
`vramwatch serve`'s /metrics (DCGM_FI_DEV_FB_* in MiB, per-process
vramwatch_process_memory_bytes).
Usage: gpu_compare.py A.csvs SNAP.json|METRICS.txt B.csvs   (see gpu-check.sh)
Exit status 0 when everything agrees, 1 otherwise.
"""
import json, sys

MiB = 1 << 20


def mib(b):
    """Bytes to whole MiB, rounded up as nvidia-smi does."""
    return -(-b // MiB)


def read_smi(path):
    gpus, apps = {}, {}
    section = None
    for line in open(path):
        line = line.strip()
        if line in ("#gpus", "#apps"):
            section = line
            continue
        if not line:
            continue
        f = [x.strip() for x in line.split(",")]
        if section == "#gpus":
            idx, uuid, used, resv, total, free = f[:6]
            gpus[int(idx)] = dict(uuid=uuid, used=int(used), reserved=int(resv), total=int(total), free=int(free))
        elif section == "#apps":
            uuid, pid, used = f[:3]
            apps[(uuid, int(pid))] = int(used)
    return gpus, apps


def parse_metrics(text):
    """A snapshot-shaped dict from Prometheus text (bytes from MiB exactly)."""
    import re
    line_re = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)\{(.*)\}\s+(\S+)')
    label_re = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
    gpus, uuids, procs = {}, {}, []
    for line in text.splitlines():
        m = line_re.match(line)
        if not m:
            continue
        name, labels, value = m.group(1), dict(label_re.findall(m.group(2))), float(m.group(3))
        if "gpu" not in labels:
            continue
        g = int(labels["gpu"])
        mem = gpus.setdefault(g, {"index": g, "mem": {}})["mem"]
        if "UUID" in labels:
            uuids[g] = labels["UUID"]
        if name == "DCGM_FI_DEV_FB_USED":
            mem["used"] = int(value) * MiB
        elif name == "DCGM_FI_DEV_FB_RESERVED":
            mem["reserved"] = int(value) * MiB
        elif name == "DCGM_FI_DEV_FB_FREE":
            mem["free"] = int(value) * MiB
        elif name == "vramwatch_gpu_memory_total_bytes":
            mem["total"] = int(value)
        elif name == "vramwatch_process_memory_bytes":
            procs.append({"gpu": g, "pid": int(labels["pid"]), "mem": int(value)})
    n = max(gpus) + 1 if gpus else 0
    return {
        "system": {"gpus": [{"uuid": uuids.get(i, "?")} for i in range(n)]},
        "gpus": [gpus[i] for i in sorted(gpus)],
        "procs": procs,
    }


def main():
    a_gpus, a_apps = read_smi(sys.argv[1])
    text = open(sys.argv[2]).read()
    snap = json.loads(text) if text.lstrip().startswith("{") else parse_metrics(text)
    b_gpus, b_apps = read_smi(sys.argv[3])
    ok = True
    rows = []

    def check(what, ours, a, b):
        nonlocal ok
        lo, hi = min(a, b), max(a, b)
        if a == b:
            good = ours == a
            how = "exact" if good else "MISMATCH"
        else:
            good = lo <= ours <= hi
            how = "moving, within" if good else "MISMATCH (moving)"
        ok &= good
        rows.append(f"{what:<44} vramwatch {ours:>8}  nvidia-smi {a:>8} / {b:>8}  {how}")

    uuid_of = {}
    for g in snap["gpus"]:
        i = g["index"]
        info = snap["system"]["gpus"][i]
        uuid_of[i] = info["uuid"]
        if i not in a_gpus:
            rows.append(f"GPU {i}: not listed by nvidia-smi  MISMATCH")
            ok = False
            continue
        m = g["mem"]
        check(f"GPU {i} memory.used (MiB)", mib(m["used"]), a_gpus[i]["used"], b_gpus[i]["used"])
        check(f"GPU {i} memory.reserved (MiB)", mib(m["reserved"]), a_gpus[i]["reserved"], b_gpus[i]["reserved"])
        check(f"GPU {i} memory.total (MiB)", mib(m["total"]), a_gpus[i]["total"], b_gpus[i]["total"])
        check(f"GPU {i} memory.free (MiB)", mib(m["free"]), a_gpus[i]["free"], b_gpus[i]["free"])
        if info["uuid"] != a_gpus[i]["uuid"]:
            rows.append(f"GPU {i} uuid {info['uuid']} vs {a_gpus[i]['uuid']}  MISMATCH")
            ok = False
    ours = {(uuid_of[p["gpu"]], p["pid"]): p for p in snap["procs"]}
    theirs = set(a_apps) | set(b_apps)
    for key in sorted(theirs | set(ours)):
        uuid, pid = key
        gpu = next((i for i, u in uuid_of.items() if u == uuid), "?")
        if key not in ours:
            # Started or ended between the reads: only a problem if listed in both A and B.
            if key in a_apps and key in b_apps:
                rows.append(f"GPU {gpu} PID {pid}: missing from vramwatch  MISMATCH")
                ok = False
            continue
        if key not in a_apps and key not in b_apps:
            rows.append(f"GPU {gpu} PID {pid}: not listed by nvidia-smi  MISMATCH")
            ok = False
            continue
        mem = ours[key]["mem"]
        a = a_apps.get(key, b_apps.get(key))
        b = b_apps.get(key, a)
        check(f"GPU {gpu} PID {pid} used_memory (MiB)", mib(mem or 0), a, b)
    print("\n".join(rows))
    n_pids = len(ours)
    print(f"\n{len(snap['gpus'])} GPUs, {n_pids} processes: " + ("ALL AGREE" if ok else "DISAGREEMENT"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
