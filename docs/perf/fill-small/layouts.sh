#!/bin/bash
# Three builds of autotune that differ only in compare()'s timing code; each times the same
# wisdom's fill against glibc (autotune --from, the seeds' matrix, first 14 rows).
set -e
cd "$(git rev-parse --show-toplevel)"
W=docs/perf/fill-small/best-4a50f59.json
run() { echo "== $1"; for i in 1 2; do COPYSYNTH_AOCL_CACHE_SIZES=48K,1M,32M taskset -c 1 build/tools/autotune --from $W --op fill -q 2>&1 | sed -n "1p;2p;12,15p;18,19p"; done; }
cmake --build build -j2 --target autotune >/dev/null
run "A: HEAD ($(git rev-parse --short HEAD)) as committed: the loop reloads dst, size and calls through the lambda's captures after each call"
python3 - <<'PY'
p='tuner/src/timing.cpp'; s=open(p).read()
old="""        t0 = tsc_begin();
        if (use == Use::kCopy)
          for (unsigned c = 0; c < calls; ++c) fn(dst, 0x5A, size);"""
new="""        std::uint8_t* const d = dst;
        const std::uint64_t n = size;
        const unsigned cn = calls;
        t0 = tsc_begin();
        if (use == Use::kCopy)
          for (unsigned c = 0; c < cn; ++c) fn(d, 0x5A, n);"""
assert old in s; open(p,'w').write(s.replace(old,new))
PY
cmake --build build -j2 --target autotune >/dev/null
run "B: the fill loop's dst, size and calls copied into locals first (held in registers)"
git checkout -q tuner/src/timing.cpp
python3 - <<'PY'
p='tuner/src/timing.cpp'; s=open(p).read()
old="""  std::uint64_t stamp = 0;
  auto run_batch"""
new="""  std::uint64_t stamp = 0;
  if (std::getenv("CS_NEVER_SET")) std::fprintf(stderr, "%p %p\\n", (void*)&size, (void*)&calls);
  auto run_batch"""
assert old in s; s=s.replace(old,new)
if '#include <cstdio>' not in s: s = '#include <cstdio>\n' + s
open(p,'w').write(s)
PY
cmake --build build -j2 --target autotune >/dev/null
run "C: as A, with one fprintf (never executed) added to compare() before the loop lambda"
git checkout -q tuner/src/timing.cpp
cmake --build build -j2 --target autotune >/dev/null
