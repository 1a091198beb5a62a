#!/usr/bin/env python3
# Usage: scripts/peer_table.py RESULT.json ...  (ptybench.py results -> markdown table on stdout)
"""Turns ptybench.py results (one JSON object per file) into a markdown
table with vramwatch's figures as ratios of each peer's.
Usage: peer_table.py RESULT.json ..."""
import json, sys

rows = [json.load(open(p)) for p in sys.argv[1:]]
ours = next((r for r in rows if r["label"].startswith("vramwatch")), None)
print("| program | size | CPU % of a core | bytes/s to the terminal | peak RSS MiB | first paint s |")
print("| --- | --- | ---: | ---: | ---: | ---: |")
for r in rows:
    print(f"| {r['label']} | {r['cols']}×{r['rows']} | {r['cpu_pct']:.3f} | {r['bytes_per_s']:.0f} | "
          f"{r['rss_mib']:.1f} | {r['first_paint_s']} |")
if ours:
    print()
    for r in rows:
        if r is ours:
            continue
        def ratio(k):
            a, b = ours.get(k), r.get(k)
            return "n/a" if not a or not b else f"{a / b:.2f}×"
        print(f"- vramwatch vs {r['label']}: CPU {ratio('cpu_pct')}, bytes/s {ratio('bytes_per_s')}, "
              f"RSS {ratio('rss_mib')}, first paint {ratio('first_paint_s')}")
