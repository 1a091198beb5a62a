#!/usr/bin/env python3
"""Per-thread CPU of a running program over a window, by thread name:
utime + stime of each /proc/PID/task/TID/stat at the start and the end,
as % of one core (10 ms ticks: over 25 s one tick is 0.04 %). Prints one
JSON line. Usage: threads.py PID SECONDS (docs/benchmarks.md)"""
import json, os, sys, time


def read(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            s = open(f"/proc/{pid}/task/{tid}/stat").read()
        except OSError:
            continue  # the thread ended meanwhile
        name = s[s.index("(") + 1:s.rindex(")")]
        f = s[s.rindex(")") + 2:].split()
        out[(tid, name)] = int(f[11]) + int(f[12])
    return out


def main():
    try:
        pid, secs = int(sys.argv[1]), float(sys.argv[2])
        if pid <= 0 or not 0 < secs <= 3600:
            raise ValueError
    except (IndexError, ValueError):
        print("usage: threads.py PID SECONDS (PID a running process, SECONDS 0 to 3600)", file=sys.stderr)
        sys.exit(2)
    tck = os.sysconf("SC_CLK_TCK")
    try:
        a = read(pid)
        t0 = time.monotonic()
        time.sleep(secs)
        b = read(pid)
    except FileNotFoundError:
        sys.exit(f"threads.py: no process {pid} (or it ended during the window)")
    dt = time.monotonic() - t0
    res = {}
    for k, v in b.items():
        res[k[1]] = res.get(k[1], 0) + (v - a.get(k, 0)) / tck / dt * 100
    print(json.dumps({"window_s": round(dt, 1),
                      "pct_by_thread": {k: round(v, 3) for k, v in sorted(res.items())},
                      "total_pct": round(sum(res.values()), 3)}))


if __name__ == "__main__":
    main()
