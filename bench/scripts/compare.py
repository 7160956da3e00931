#!/usr/bin/env python3
"""Compare builds of crisp run in alternation by the bench runner.

Usage: compare.py DIR PREFIX BUILD1,BUILD2,... [SYSTEM]

Reads DIR/PREFIX_BUILD_N.json (N = 1, 2, ...), each the -json output of
one run of the bench binary of BUILD, and prints a markdown table: per
workload, crisp's median time per build and crisp's time over the
fastest peer library *in the same run* (median, min-max over the runs).
The ratio is the figure that counts on a shared machine: both sides of
it ran in the same process at the same time. SYSTEM (default crisp)
names the column compared, such as crisp+dl for crisp with deadlines.
A second table gives what SYSTEM allocated per operation (bytes) and
the collections per run, medians over every run of the build (reports
without allocation figures show a dash). Example, two builds
alternated four times:

    for i in 1 2 3 4; do for b in old new; do
      /tmp/bench-$b -suite quick -system crisp,phony,protoactor -reps 3 -json > r/q_${b}_$i.json
    done; done
    python3 scripts/compare.py r q old,new
"""
import json
import os
import statistics as st
import sys

PEERS = ('phony', 'protoactor', 'hollywood', 'goakt')


def load(d, pre, b):
    runs = []
    for i in range(1, 100):
        f = os.path.join(d, f'{pre}_{b}_{i}.json')
        if not os.path.exists(f):
            break
        try:
            doc = json.load(open(f))
        except ValueError:
            continue
        r = {}
        for w in doc['workloads']:
            for c in w['cells']:
                if c.get('median_ns'):
                    r[(w['workload'], c['system'])] = c['median_ns']
                if c.get('alloc_bytes'):
                    r[('alloc', w['workload'], c['system'])] = [a / w['ops'] for a in c['alloc_bytes']]
                    r[('gc', w['workload'], c['system'])] = c.get('gc_cycles', [])
        runs.append(r)
    return runs


def main():
    d, pre, bins = sys.argv[1], sys.argv[2], sys.argv[3].split(',')
    me = sys.argv[4] if len(sys.argv) > 4 else 'crisp'
    R = {b: load(d, pre, b) for b in bins}
    wls = []
    for r in R[bins[0]]:
        for k in r:
            if len(k) == 2 and k[0] not in wls:
                wls.append(k[0])

    def med(b, w, s):
        v = [r[(w, s)] for r in R[b] if (w, s) in r]
        return st.median(v) if v else None

    def ratio(b, w, peer):
        v = [r[(w, me)] / r[(w, peer)] for r in R[b] if (w, me) in r and (w, peer) in r]
        return (st.median(v), min(v), max(v)) if v else None

    print('runs: ' + ', '.join(f'{b} {len(R[b])}' for b in bins))
    print()
    print('| workload | ' + ' | '.join(f'{me} {b} ms' for b in bins) + ' | fastest peer | '
          + ' | '.join(f'{me}/peer {b}' for b in bins) + ' |')
    print('|---|' + '---:|' * len(bins) + '---|' + '---:|' * len(bins))
    for w in wls:
        peers = [p for p in PEERS if med(bins[0], w, p)]
        if not peers:
            continue
        best = min(peers, key=lambda p: med(bins[0], w, p))
        cells = []
        for b in bins:
            m = med(b, w, me)
            cells.append(f'{m / 1e6:.2f}' if m else '—')
        rs = []
        for b in bins:
            r = ratio(b, w, best)
            rs.append(f'{r[0]:.2f} ({r[1]:.2f}-{r[2]:.2f})' if r else '—')
        print(f'| {w} | ' + ' | '.join(cells) + f' | {best} | ' + ' | '.join(rs) + ' |')

    def pooled(b, kind, w):
        v = [x for r in R[b] for x in r.get((kind, w, me), [])]
        return st.median(v) if v else None

    print()
    print('| workload | ' + ' | '.join(f'{me} {b} B/op | {b} collections' for b in bins) + ' |')
    print('|---|' + '---:|---:|' * len(bins))
    for w in wls:
        cells = []
        for b in bins:
            a, g = pooled(b, 'alloc', w), pooled(b, 'gc', w)
            cells += [f'{a:.0f}' if a is not None else '—', f'{g:g}' if g is not None else '—']
        print(f'| {w} | ' + ' | '.join(cells) + ' |')


if __name__ == '__main__':
    main()
