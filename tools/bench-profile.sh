#!/usr/bin/env bash
# Times the recording of a program's own copies (COPYSYNTH_PROFILE) in unmodified Debian programs
# (a benchmark, not a test; the figures go into docs/performance.md, "Recording a profile
# (COPYSYNTH_PROFILE): overhead"). Four configurations, each run once per round in a rotating
# order:
#   glibc     no preload
#   shim      LD_PRELOAD=libcopysynth-preload.so with the wisdom
#   record    the same, recording (COPYSYNTH_PROFILE)
#   rec-sys   the shim recording without wisdom (glibc's routines serve the calls)
# Workloads: the programs of tools/real-programs.sh (sqlite3, xz -d, zstd -d, gzip -d, perl,
# /bin/true: start-up and the record at exit alone), on the same inputs as tools/bench-preload.sh.
#
# Usage: tools/bench-profile.sh [-n RUNS] -w WISDOM [BUILD_DIR]
#   BUILD_DIR  a Release build (default build/) with api/libcopysynth-preload.so and tools/autotune
#   -n RUNS    rounds (default 9)
# Prints per workload the median wall time of each configuration (ms) and the medians over the
# rounds of record/shim and rec-sys/glibc (the recording's cost; 1.10 is 10 % slower), and the
# calls each run recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/real-programs.sh

runs=9
wisdom=
while getopts "n:w:h" opt; do
  case $opt in
    n) runs=$OPTARG ;;
    w) wisdom=$OPTARG ;;
    *) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
build=${1:-build}
shim=$(realpath "$build/api/libcopysynth-preload.so")
at=$build/tools/autotune
[ -n "$wisdom" ] || { echo "bench-profile: give the wisdom with -w (autotune --emit FILE)" >&2; exit 2; }
wisdom=$(realpath "$wisdom")
for p in sqlite3 xz zstd gzip; do
  command -v "$p" >/dev/null || { echo "bench-profile: $p not installed (tools/install-deps.sh --test)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

configs=(glibc shim record rec-sys)
declare -A pre=([glibc]="" [shim]="LD_PRELOAD=$shim COPYSYNTH_WISDOM=$wisdom"
                [record]="LD_PRELOAD=$shim COPYSYNTH_WISDOM=$wisdom COPYSYNTH_PROFILE=$tmp/prof"
                [rec-sys]="LD_PRELOAD=$shim COPYSYNTH_PROFILE=$tmp/prof")

make_program_inputs "$tmp" "$at"

# run WORKLOAD CONFIG: one run; the shell without the preload execs the program with it.
run() {
  sh -c "exec env ${pre[$2]} $(program_command "$1" "$tmp")" 2>>"$tmp/stderr.$2"
  rm -f "$tmp/prof"
}
now_ns() { date +%s%N; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '%-7s %4s' workload runs
for c in "${configs[@]}"; do printf ' %10s' "$c ms"; done
printf ' %12s %14s %s\n' record/shim rec-sys/glibc "calls recorded"
k=${#configs[@]}
for w in "${real_programs[@]}"; do
  for c in "${configs[@]}"; do run "$w" "$c"; done  # warm-up
  # The calls one run records (memcpy+memmove+memset), from the record's "calls" fields.
  sh -c "exec env ${pre[record]} $(program_command "$w" "$tmp")"
  calls=$(grep -o '"calls":[0-9]*,"bytes"' "$tmp/prof" | tr -dc '0-9\n' | awk '{ s += $1 } END { print s }')
  rm -f "$tmp/prof"
  for c in "${configs[@]}"; do : >"$tmp/t.$c"; done
  : >"$tmp/r.rec"
  : >"$tmp/r.sys"
  for ((i = 0; i < runs; i++)); do
    declare -A t=()
    for ((j = 0; j < k; j++)); do
      c=${configs[$(((i + j) % k))]}
      t0=$(now_ns)
      run "$w" "$c"
      t[$c]=$(($(now_ns) - t0))
      echo "${t[$c]}" >>"$tmp/t.$c"
    done
    awk -v a="${t[shim]}" -v b="${t[record]}" 'BEGIN { printf "%.6f\n", b / a }' >>"$tmp/r.rec"
    awk -v a="${t[glibc]}" -v b="${t[rec-sys]}" 'BEGIN { printf "%.6f\n", b / a }' >>"$tmp/r.sys"
    unset t
  done
  printf '%-8s %4d' "$w" "$runs"
  for c in "${configs[@]}"; do awk -v v="$(median <"$tmp/t.$c")" 'BEGIN { printf " %10.1f", v / 1e6 }'; done
  awk -v a="$(median <"$tmp/r.rec")" -v b="$(median <"$tmp/r.sys")" -v n="$calls" 'BEGIN { printf " %12.3f %14.3f %s\n", a, b, n }'
done
for c in "${configs[@]}"; do
  [ -s "$tmp/stderr.$c" ] && echo "$c: $(wc -l <"$tmp/stderr.$c") lines on stderr, e.g. $(head -1 "$tmp/stderr.$c")"
done
exit 0
