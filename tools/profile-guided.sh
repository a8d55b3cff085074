#!/usr/bin/env bash
# Profile-guided tuning of the real programs of tools/real-programs.sh, end to end (the walk-through
# of docs/profile-guided.md; a benchmark, not a test):
#   1. record  each program under the shim with COPYSYNTH_PROFILE=OUT/NAME.prof (glibc's routines)
#   2. show    autotune --show OUT/NAME.prof > OUT/NAME.show
#   3. tune    autotune --op OPS --workload profile:OUT/NAME.prof --emit OUT/NAME.tuned.json, OPS
#              being the operations with at least 1000 recorded calls
#   4. judge   autotune --from OUT/NAME.tuned.json --app 'COMMAND' --runs RUNS --emit OUT/NAME.json:
#              each operation keeps its tuned routine only where the program is not slower with it
#   5. compare tools/bench-preload.sh -w SEEDS -P NAME=OUT/NAME.json ...: glibc, the seeds-tuned
#              shim and library, AOCL-LibMem where built, and each program's profile-tuned library
#
# Usage: tools/profile-guided.sh [-n RUNS] [-w SEEDS_WISDOM] [-q] [-o OUT] [BUILD_DIR]
#   -o OUT    where the profiles, summaries, wisdom and logs go (default profile-guided/)
#   -w FILE   the seeds-tuned wisdom to compare with (default: OUT/seeds.json, tuned now if absent)
#   -n RUNS   rounds of the judge and of bench-preload (default 11)
#   -q        --quick searches (a few seconds per operation instead of about a minute)
#   BUILD_DIR a Release build (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/real-programs.sh

runs=11
out=profile-guided
seeds=
quick=
while getopts "n:w:o:qh" opt; do
  case $opt in
    n) runs=$OPTARG ;;
    w) seeds=$OPTARG ;;
    o) out=$OPTARG ;;
    q) quick=--quick ;;
    *) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
build=${1:-build}
shim=$(realpath "$build/api/libcopysynth-preload.so")
at=$(realpath "$build/tools/autotune")
mkdir -p "$out"
out=$(realpath "$out")
make_program_inputs "$out" "$at"
say() { echo "profile-guided: $*" >&2; }

if [ -z "$seeds" ]; then
  seeds=$out/seeds.json
  if [ ! -s "$seeds" ]; then
    say "tuning memcpy, memmove and fill on the seeds' matrix: $seeds"
    "$at" $quick -q --op memcpy,memmove,fill --emit "$seeds" >"$out/seeds.table"
  fi
fi

pflags=()
for name in sqlite xz zstd gzip; do
  cmd=$(program_command "$name" "$out")
  prof=$out/$name.prof
  rm -f "$prof"
  say "$name: recording ($cmd)"
  t0=$(date +%s%N)
  sh -c "exec env COPYSYNTH_PROFILE=$prof LD_PRELOAD=$shim $cmd"
  say "$name: recorded in $((($(date +%s%N) - t0) / 1000000)) ms"
  "$at" --show "$prof" >"$out/$name.show"
  ops=
  for op in memcpy memmove memset; do
    calls=$(sed -n "s/^$op\.calls=//p" "$out/$name.show")
    [ "${calls:-0}" -ge 1000 ] && ops+=${ops:+,}$([ $op = memset ] && echo fill || echo $op)
  done
  if [ -z "$ops" ]; then
    say "$name: fewer than 1000 calls of every operation; nothing to tune"
    continue
  fi
  say "$name: tuning $ops for its profile"
  rm -f "$out/$name.tuned.json"
  "$at" $quick -q --op "$ops" --workload "profile:$prof" --emit "$out/$name.tuned.json" >"$out/$name.table"
  if [ ! -e "$out/$name.tuned.json" ]; then
    say "$name: no winner faster than glibc's routines on the profile; nothing to judge"
    continue
  fi
  say "$name: judging with the program ($runs rounds)"
  rm -f "$out/$name.json"
  "$at" --from "$out/$name.tuned.json" --app "$cmd" --runs "$runs" --emit "$out/$name.json" | tee "$out/$name.judge"
  pflags+=(-P "$name=$out/$name.json")
done
say "comparing: glibc, seeds-tuned shim and library, AOCL-LibMem, profile-tuned library"
tools/bench-preload.sh -n "$runs" -w "$seeds" "${pflags[@]}" "$build" | tee "$out/bench.txt"
