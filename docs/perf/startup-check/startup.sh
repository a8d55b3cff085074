#!/usr/bin/env bash
# The shim's whole start-up with wisdom, shim and wisdom file given in pairs (thirty-third round):
# per pair, the wall time of 200 `/bin/true` processes under it (microseconds per process) and
# the shim's own report over 41 more (COPYSYNTH_PRELOAD_STATS=1, "read, built and verified ... in
# N ms": the constructor's work, not the loading; min and median); `/bin/true` alone for scale.
# The pairs in turn within each round, 5 rounds; run on one vCPU (taskset -c 1). STARTUP_ROUNDS
# and STARTUP_PROCESSES change the 5 rounds and the 200 processes (thirty-fourth round).
#   usage: [STARTUP_ROUNDS=N] [STARTUP_PROCESSES=N] startup.sh LABEL=SHIM,WISDOM...
set -eu
stats() {  # shim wisdom
  for i in $(seq 41); do
    COPYSYNTH_WISDOM=$2 COPYSYNTH_PRELOAD_STATS=1 LD_PRELOAD=$1 /bin/true 2>&1 | grep -o ' in [0-9.]* ms' | grep -o '[0-9.]*'
  done | sort -n | awk '{a[NR]=$1} END {printf "report min %.1f median %.1f ms", a[1], a[int((NR+1)/2)]}'
}
wall() {  # shim wisdom ("" "" for none)
  local s e
  s=$(date +%s%N)
  for i in $(seq "$processes"); do COPYSYNTH_WISDOM=$2 LD_PRELOAD=$1 /bin/true; done
  e=$(date +%s%N)
  printf "wall %5d us/process" $(((e - s) / (processes * 1000)))
}
rounds=${STARTUP_ROUNDS:-5} processes=${STARTUP_PROCESSES:-200}
for round in $(seq "$rounds"); do
  printf 'round %d  %-22s %s\n' $round "no shim" "$(wall '' '')"
  for pair in "$@"; do
    label=${pair%%=*} rest=${pair#*=}
    shim=${rest%%,*} w=${rest#*,}
    printf 'round %d  %-22s %s  %s  (%d-byte wisdom)\n' $round "$label" "$(wall "$shim" "$w")" "$(stats "$shim" "$w")" "$(stat -c %s "$w")"
  done
done
