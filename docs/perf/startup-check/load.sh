#!/usr/bin/env bash
# What loading the shim costs a process before any wisdom is read (thirty-third round): `/bin/true`
# with nothing preloaded, with an empty shared object preloaded (what LD_PRELOAD costs by itself),
# and with each shim named (COPYSYNTH_WISDOM unset: the shim loads, says it is not set, and leaves
# the system's routines). Microseconds per process over 300 processes, the configurations in turn,
# 7 rounds; run on one vCPU (taskset -c 1).
#   usage: load.sh SHIM...
set -eu
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo 'int copysynth_load_check_empty;' >"$tmp/e.c"
cc -shared -fPIC -o "$tmp/empty.so" "$tmp/e.c"
per_process() {  # LD_PRELOAD value ("" for none)
  local s e
  s=$(date +%s%N)
  for i in $(seq 300); do LD_PRELOAD=$1 /bin/true 2>/dev/null; done
  e=$(date +%s%N)
  echo $(((e - s) / 300000))
}
for round in 1 2 3 4 5 6 7; do
  line="round $round  none $(per_process '')  empty $(per_process "$tmp/empty.so")"
  for so in "$@"; do line+="  $(basename "$so") $(per_process "$so")"; done
  echo "$line us/process"
done
