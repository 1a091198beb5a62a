#!/usr/bin/env python3
# Copied from the project's shared bench folder, 2026-12-01, so the scripts in
# scripts/ need nothing outside the repo. One change: a command that exits
# before the end no longer crashes it (ChildProcessError when reaped twice).
"""Measure what a terminal monitor costs while it runs, as a user would see it.

Runs COMMAND inside a pseudo-terminal of a fixed size for a fixed time and
reports, as one JSON object on stdout:
  cpu_pct       CPU time of the command and all its descendants, in percent
                of one core, over the measured window (after the warm-up)
  bytes_per_s   bytes the command wrote to the terminal per second over the
                window (what an SSH link must carry)
  rss_mib       peak resident memory (VmHWM) of the largest process in its tree
  first_paint_s seconds from start until the command had written 512 bytes
Usage:
  ptybench.py [--cols 120] [--rows 40] [--seconds 30] [--warmup 3]
              [--label NAME] [--keys STR] [--save FILE] -- COMMAND [ARGS...]
--keys sends those bytes to the terminal once, right after the warm-up.
--save FILE writes every byte the command wrote to the terminal to FILE.
Only the Python standard library is used; Linux only (reads /proc).
"""
import argparse, fcntl, json, os, pty, select, signal, struct, sys, termios, time


def tree(pid):
    """pid and all its descendants, from /proc."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
            ppid = int(s[s.rfind(")") + 2:].split()[1])
            kids.setdefault(ppid, []).append(int(d))
        except OSError:
            pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def cpu_seconds(pids):
    tck = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                s = f.read()
            fields = s[s.rfind(")") + 2:].split()
            # utime, stime, cutime, cstime (fields 14-17 of stat)
            total += sum(int(x) for x in fields[11:15]) / tck
        except OSError:
            pass
    return total


def peak_rss_mib(pids):
    best = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        best = max(best, int(line.split()[1]))
        except OSError:
            pass
    return best / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cols", type=int, default=120)
    ap.add_argument("--rows", type=int, default=40)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--label", default="")
    ap.add_argument("--keys", default="")
    ap.add_argument("--save", default="")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no command given")
    env = dict(os.environ, TERM=os.environ.get("BENCH_TERM", "xterm-256color"),
               COLUMNS=str(a.cols), LINES=str(a.rows))
    t0 = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(cmd[0], cmd, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", a.rows, a.cols, 0, 0))
    os.kill(pid, signal.SIGWINCH)
    total = 0
    saved = open(a.save, "wb") if a.save else None
    first_paint = None
    mark_bytes = mark_cpu = mark_t = None
    end = t0 + a.warmup + a.seconds
    pids = [pid]
    last_tree = 0.0
    while True:
        now = time.monotonic()
        if mark_t is None and now >= t0 + a.warmup:
            pids = tree(pid)
            mark_bytes, mark_cpu, mark_t = total, cpu_seconds(pids), now
            if a.keys:
                os.write(fd, a.keys.encode())
        if now >= end:
            break
        if now - last_tree > 1.0:
            pids = sorted(set(pids) | set(tree(pid)))
            last_tree = now
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            total += len(data)
            if saved:
                saved.write(data)
            if first_paint is None and total >= 512:
                first_paint = time.monotonic() - t0
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
    now = time.monotonic()
    pids = sorted(set(pids) | set(tree(pid)))
    cpu = cpu_seconds(pids)
    rss = peak_rss_mib(pids)
    try:
        alive = os.waitpid(pid, os.WNOHANG)[0] == 0
    except ChildProcessError:  # exited and already reaped in the loop
        alive = False
    if mark_t is None:
        mark_bytes, mark_cpu, mark_t = 0, 0.0, t0
    window = max(now - mark_t, 1e-9)
    result = {
        "label": a.label or " ".join(cmd),
        "cols": a.cols, "rows": a.rows,
        "window_s": round(window, 2),
        "cpu_pct": round(100.0 * (cpu - mark_cpu) / window, 3),
        "bytes_per_s": round((total - mark_bytes) / window, 1),
        "rss_mib": round(rss, 1),
        "first_paint_s": None if first_paint is None else round(first_paint, 3),
        "still_running_at_end": alive,
    }
    for p in reversed(pids):
        try:
            os.kill(p, signal.SIGTERM)
        except OSError:
            pass
    time.sleep(0.3)
    for p in reversed(pids):
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.waitpid(pid, 0)
    except OSError:
        pass
    if saved:
        saved.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
