#!/usr/bin/env python3
"""The cost of deadlines, per build, from runs of the bench's JSON.

Usage: dlcost.py DIR PREFIX BUILD1,BUILD2,...

Reads DIR/PREFIX_BUILD_N.json (N = 1, 2, ...), each the -json output of
one run of the bench binary of BUILD with both crisp and crisp+dl among
its systems, and prints a markdown table: per workload and build,
crisp+dl's time over crisp's in the same run (median, min-max over the
runs). Issue 13 asks for at most 1.15 on every workload. Example:

    for i in 1 2 3 4; do for b in old new; do
      /tmp/bench-$b -suite quick -system crisp,crisp+dl,phony -reps 3 -json > r/q_${b}_$i.json
    done; done
    python3 scripts/dlcost.py r q old,new
"""
import glob
import json
import statistics as st
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    d, pre, builds = sys.argv[1], sys.argv[2], sys.argv[3].split(',')
    ratios, order = {}, []
    for b in builds:
        files = sorted(glob.glob(f'{d}/{pre}_{b}_*.json'),
                       key=lambda f: int(f.rsplit('_', 1)[1].split('.')[0]))
        for f in files:
            doc = json.load(open(f))
            for w in doc['workloads']:
                c = {x['system']: x['median_ns'] for x in w['cells']}
                if c.get('crisp', 0) > 0 and c.get('crisp+dl', 0) > 0:
                    if w['workload'] not in order:
                        order.append(w['workload'])
                    ratios.setdefault((w['workload'], b), []).append(c['crisp+dl'] / c['crisp'])
    print('| workload | ' + ' | '.join(f'crisp+dl / crisp {b}' for b in builds) + ' |')
    print('|---|' + '---:|' * len(builds))
    for w in order:
        cells = []
        for b in builds:
            v = ratios.get((w, b))
            cells.append(f'{st.median(v):.2f} ({min(v):.2f}-{max(v):.2f})' if v else '')
        print(f'| {w} | ' + ' | '.join(cells) + ' |')


if __name__ == '__main__':
    main()
