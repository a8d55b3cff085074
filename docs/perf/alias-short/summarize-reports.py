#!/usr/bin/env python3
"""Summarizes reports-ab/: per report process (old-N: the timing loop before the thirty-ninth
round, new-N: after), the seeds' rows below 0.97x the best peer, the geometric mean over the 77
points against the best peer, and the geometric mean over the 1-48-byte rows of the tuned
routine's GB/s over AOCL-LibMem's, src 0 and src 4 bytes off.
  usage: summarize-reports.py [DIR]   (default: reports-ab beside this script)"""
import math, os, re, sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), 'reports-ab')


def parse(path):
    mode, names, short, below, gm = False, None, {}, None, None
    for line in open(path):
        if line.startswith('seeds matrix'):
            mode = True
            continue
        if line.startswith('geometric mean over 77'):
            mode = False
            gm = float(re.search(r'best peer ([\d.]+)x', line).group(1))
        m = re.search(r"every seeds' point .*?: (\d+) of 77", line)
        if m:
            below = int(m.group(1))
        t = line.split()
        if mode and t and t[0] == 'Len':
            names = t[2:-5]
            continue
        if mode and names and len(t) > 8 and '/' in t[1] and t[0].isdigit() and int(t[0]) <= 48:
            v = dict(zip(names, map(float, t[2:2 + len(names)])))
            short.setdefault(t[1].split('/')[0], []).append(v['tuned'] / v['aocl'])
    g = {k: math.exp(sum(map(math.log, v)) / len(v)) for k, v in short.items()}
    return below, gm, g


for v in ('old', 'new'):
    rows = [parse(os.path.join(d, f'{v}-{i}.txt')) for i in range(1, 7) if os.path.exists(os.path.join(d, f'{v}-{i}.txt'))]
    print(f'{v}: seeds below 0.97x the best peer', [r[0] for r in rows])
    print(f'{v}: geometric mean vs the best peer', ' '.join('%.3f' % r[1] for r in rows))
    print(f'{v}: 1-48 bytes, tuned/AOCL-LibMem GB/s, src 0', ' '.join('%.2f' % r[2]['0'] for r in rows))
    print(f'{v}: 1-48 bytes, tuned/AOCL-LibMem GB/s, src 4', ' '.join('%.2f' % r[2]['4'] for r in rows))
