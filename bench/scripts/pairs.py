#!/usr/bin/env python3
"""Whole-process pairs: two builds of crisp started in turn, the ratio
pair by pair.

Usage: pairs.py DIR PREFIX NEW OLD [SYSTEM]

Reads DIR/PREFIX_NEW_N.json and DIR/PREFIX_OLD_N.json (N = 1, 2, ...),
each the -json output of one process of the bench binary of that build
run for one workload, and prints, per workload, the median over the
pairs of NEW's time over OLD's, their range, and each build's median
and range. A process's time is the median of its repetitions, so each
pair compares two processes started one after the other: on a shared
machine whose speed drifts between sittings (and within one), that is
the figure to quote for a change whose effect shows only across whole
processes (the hand-off, the Proc stash). SYSTEM (default crisp) names
the system compared. Example, eight pairs of threadring beside two
hogs:

    for i in $(seq 8); do for b in new old; do
      /tmp/bench-$b -suite all -workload threadring -system crisp \\
        -reps 5 -hogs 2 -json > r/tr_${b}_$i.json
    done; done
    python3 scripts/pairs.py r tr new old

That is how BENCHMARKS.md's "whole-process pairs" were measured since
the thirtieth session.
"""
import statistics as st
import sys

from compare import load  # each run's median_ns per (workload, system)


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    d, prefix, new, old = sys.argv[1:5]
    system = sys.argv[5] if len(sys.argv) == 6 else 'crisp'
    a, b = load(d, prefix, new), load(d, prefix, old)
    pairs = min(len(a), len(b))
    if pairs == 0:
        sys.exit(f'pairs.py: no {prefix}_{new}_N.json and {prefix}_{old}_N.json pairs in {d}')
    print(f'| workload | {new} / {old} (pairs) | {new}, ms | {old}, ms |')
    print('|---|---:|---:|---:|')
    keys = set().union(*a[:pairs], *b[:pairs])
    for w in sorted(k[0] for k in keys if len(k) == 2 and k[1] == system):
        k = (w, system)
        xs = [(r[k] / 1e6, s[k] / 1e6) for r, s in zip(a[:pairs], b[:pairs]) if k in r and k in s]
        if not xs:
            continue
        rs = [x / y for x, y in xs]
        na, nb = [x for x, _ in xs], [y for _, y in xs]
        print(f'| {w} | {st.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f}; {len(xs)}) '
              f'| {st.median(na):.1f} ({min(na):.1f}-{max(na):.1f}) '
              f'| {st.median(nb):.1f} ({min(nb):.1f}-{max(nb):.1f}) |')


if __name__ == '__main__':
    main()
