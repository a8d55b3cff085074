#!/usr/bin/env python3
"""Summarizes alias-short's output (several processes' outputs concatenated, each opening with its
first "layout" line): per setup, source offset and length group (1-48, 64-128 bytes), the
geometric mean over the group's lengths of the tuned routine's time over AOCL-LibMem's and over
glibc's, then the median and range of those over the processes.
  usage: summarize.py RUNS.txt"""
import collections, math, re, sys

processes, per = [], None
for line in open(sys.argv[1]):
    if line.startswith('layout'):
        setup = ('alias' if 'BenchBuffers' in line else 'no-alias') + '/' + ('reload' if 'reloaded' in line else 'regs')
        if setup == 'alias/regs':  # the first setup of a process
            per = collections.defaultdict(list)
            processes.append(per)
        continue
    m = re.search(r'^\s+(\d+) src\+(\d): tuned\s+([\d.]+) aocl\s+([\d.]+) glibc\s+([\d.]+)', line)
    if m:
        n, so = int(m.group(1)), m.group(2)
        t, a, g = map(float, m.group(3, 4, 5))
        per[(setup, so, '1-48' if n <= 48 else '64-128')].append((t / a, t / g))
agg = collections.defaultdict(list)
for per in processes:
    for k, v in per.items():
        agg[k].append(tuple(math.exp(sum(math.log(x[i]) for x in v) / len(v)) for i in (0, 1)))
print(f'{len(processes)} processes; tuned time / peer time (below 1: the tuned routine is faster)')
for k in sorted(agg):
    ra, rg = sorted(x[0] for x in agg[k]), sorted(x[1] for x in agg[k])
    print('%-16s src+%s %-7s vs aocl: median %.2f range %.2f-%.2f | vs glibc: median %.2f range %.2f-%.2f' %
          (k[0], k[1], k[2], ra[len(ra) // 2], ra[0], ra[-1], rg[len(rg) // 2], rg[0], rg[-1]))
