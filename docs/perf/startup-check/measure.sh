#!/usr/bin/env bash
# The shim's start-up check (COPYSYNTH_PRELOAD_VERIFY=startup) and its default quick check, as the
# shim reports them (COPYSYNTH_PRELOAD_STATS=1: "read, built and verified ... in N ms"), for the
# three routines of docs/perf/debian12/best.json together and for each alone; 5 runs each.
set -eu
repo=$(git rev-parse --show-toplevel)
shim=${1:-$repo/build/api/libcopysynth-preload.so}
w=$repo/docs/perf/debian12/best.json
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp "$w" "$tmp/all.json"
for op in memcpy memmove fill; do
  python3 -c "import json,sys; d=json.load(open('$w')); d['entries']=[e for e in d['entries'] if e['operation']=='$op']; json.dump(d, open('$tmp/$op.json','w'))"
done
for check in quick startup; do
  for f in all memcpy memmove fill; do
    printf '%-8s %-8s' "$check" "$f"
    for i in 1 2 3 4 5; do
      extra=(); [ $check = startup ] && extra=(COPYSYNTH_PRELOAD_VERIFY=startup)
      env "${extra[@]}" COPYSYNTH_WISDOM=$tmp/$f.json COPYSYNTH_PRELOAD_STATS=1 LD_PRELOAD=$shim /bin/true 2>&1 |
        grep -o ' in [0-9.]* ms' | tr -d '\n'
    done
    echo
  done
done
