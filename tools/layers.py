#!/usr/bin/env python3
# Copied from the project's shared tools (2026-12-01) so CI enforces the layering: prints the
# module graph, cycles and long files; exits 1 on a cycle.
"""Which top-level modules of a Rust crate use which, and the cycles between them.

Reads src/ of the crate in the current directory (or --src DIR). A module is
a top-level file or folder under src/ (src/sampler.rs -> sampler, src/ui/ ->
ui). An edge a -> b means some file of a names `crate::b` (in a `use` or a
path). Prints the edges, the strongly connected groups (cycles), and the
files longest in lines; exits 1 when there is a cycle, so it can gate a
layering rule. --max-lines N also lists files over N lines (not counted as
failure). Comments and string literals are skipped roughly (// lines, and
text between quotes on one line).
Usage: layers.py [--src src] [--max-lines 600] [--json]
"""
import argparse, json, os, re, sys

ap = argparse.ArgumentParser()
ap.add_argument("--src", default="src")
ap.add_argument("--max-lines", type=int, default=600)
ap.add_argument("--json", action="store_true")
a = ap.parse_args()

mods = {}
for name in sorted(os.listdir(a.src)):
    p = os.path.join(a.src, name)
    if name in ("main.rs", "lib.rs"):
        continue
    if os.path.isdir(p):
        mods[name] = [os.path.join(r, f) for r, _, fs in os.walk(p) for f in fs if f.endswith(".rs")]
    elif name.endswith(".rs"):
        m = name[:-3]
        mods.setdefault(m, []).append(p)

ref = re.compile(r"\bcrate::(\w+)")
group = re.compile(r"\bcrate::\{([^}]*)\}")
strip_str = re.compile(r'"(?:\\.|[^"\\])*"')
edges, long_files = {}, []
for m, files in mods.items():
    for f in files:
        text = open(f, encoding="utf-8", errors="replace").read()
        n = text.count("\n")
        if n > a.max_lines:
            long_files.append((n, f))
        in_tests = False
        for line in text.splitlines():
            s = line.strip()
            if s.startswith("#[cfg(test)]"):
                in_tests = True  # crude: everything after a cfg(test) is test code
            if in_tests or s.startswith("//"):
                continue
            s = strip_str.sub('""', s)
            targets = set(ref.findall(s))
            for g in group.findall(s):
                targets |= {t.strip().split("::")[0] for t in g.split(",") if t.strip()}
            for t in targets:
                if t in mods and t != m:
                    edges.setdefault(m, {}).setdefault(t, set()).add(os.path.relpath(f))

# Tarjan's strongly connected components
index, low, stack, on, sccs, i = {}, {}, [], set(), [], [0]
def visit(v):
    index[v] = low[v] = i[0]; i[0] += 1; stack.append(v); on.add(v)
    for w in edges.get(v, {}):
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            sccs.append(sorted(comp))
sys.setrecursionlimit(10000)
for v in mods:
    if v not in index:
        visit(v)

if a.json:
    print(json.dumps({"edges": {k: sorted(v) for k, v in edges.items()}, "cycles": sccs,
                      "long_files": sorted(long_files, reverse=True)}))
else:
    for m in sorted(edges):
        print(f"{m} -> {', '.join(sorted(edges[m]))}")
    for c in sccs:
        print("CYCLE: " + " <-> ".join(c))
        for x in c:
            for y in c:
                if y in edges.get(x, {}):
                    print(f"   {x} -> {y}: {', '.join(sorted(edges[x][y]))}")
    for n, f in sorted(long_files, reverse=True):
        print(f"LONG: {os.path.relpath(f)} {n} lines (> {a.max_lines})")
    print(f"{len(mods)} modules, {sum(len(v) for v in edges.values())} edges, {len(sccs)} cycles, {len(long_files)} files over {a.max_lines} lines")
sys.exit(1 if sccs else 0)
