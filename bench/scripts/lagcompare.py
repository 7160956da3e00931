#!/usr/bin/env python3
"""Compare crispbench lag runs of two builds.

Usage: lagcompare.py DIR PREFIX A,B [MECHANISM]

Reads DIR/PREFIX_A_*.json and DIR/PREFIX_B_*.json, each the output of
`crispbench timeliness lag ... --format json`, and prints a markdown
table with one row per cell (load, pending deadlines, hogs): the lag
p99 of every run of MECHANISM (default crisp), in milliseconds, sorted,
with the median, for each build.
"""
import glob
import json
import statistics
import sys
from collections import defaultdict


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    d, prefix, builds = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    mech = sys.argv[4] if len(sys.argv) > 4 else "crisp"
    cells = defaultdict(lambda: defaultdict(list))
    runs = {}
    for b in builds:
        files = sorted(glob.glob(f"{d}/{prefix}_{b}_*.json"))
        runs[b] = 0
        for f in files:
            try:
                j = json.load(open(f))
            except (OSError, ValueError):
                continue
            runs[b] += 1
            for c in j["lag"]["cells"]:
                key = (c["load"], c["pending"], c["hogs"])
                for r in c["runs"].get(mech, []):
                    cells[key][b].append(r["lag"]["p99_ns"] / 1e6)
    print("files: " + ", ".join(f"{b} {runs[b]}" for b in builds))
    print()
    head = "| load | pending | hogs | " + " | ".join(f"{b}: lag p99 ms, each run (median)" for b in builds) + " |"
    print(head)
    print("|---|---:|---:|" + "---|" * len(builds))
    for key in sorted(cells, key=lambda k: (k[2], k[1], k[0])):
        cols = []
        for b in builds:
            v = sorted(cells[key][b])
            if not v:
                cols.append("")
                continue
            cols.append(", ".join(f"{x:.2f}" for x in v) + f" ({statistics.median(v):.2f})")
        print(f"| {key[0]} | {key[1]:,} | {key[2]} | " + " | ".join(cols) + " |")


if __name__ == "__main__":
    main()
