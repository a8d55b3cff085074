#!/usr/bin/env bash
# Times unmodified Debian programs with and without the LD_PRELOAD shim (a benchmark, not a test;
# the numbers go into docs/performance.md, "Real programs under the shim").
#
# Usage: tools/bench-preload.sh [-n RUNS] [-w WISDOM] [BUILD_DIR]
#   BUILD_DIR  a Release build (default build/) with api/libcopysynth-preload.so and tools/autotune
#   -w WISDOM  the wisdom to use (default: tune memcpy, memmove and fill now, about 2 minutes)
#   -n RUNS    runs of each program with and without the shim (default 11)
#
# Workloads (each also run once before timing, as a warm-up):
#   sqlite3  tests/preload_sqlite.sql on an in-memory database (no disk I/O): 60000 rows built,
#            indexed, aggregated, updated, vacuumed and queried (~6 M memcpy calls)
#   xz -d    decompressing 6 MB (text and machine code) to /dev/null (~300 k memcpy calls)
#   zstd -d  decompressing 10 MB to /dev/null (few, large copies)
#   true     /bin/true: the shim's start-up cost alone (read, build and verify the wisdom)
# Runs alternate (without, with, without, ...) so that drift on a shared machine hits both alike.
# Prints per workload the median wall time of each and two ratios, shim / glibc: of the medians,
# and the median of the per-pair ratios. Needs zstd, xz-utils, sqlite3 (tools/install-deps.sh --test).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=11
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
shim=$build/api/libcopysynth-preload.so
at=$build/tools/autotune
for f in "$shim" "$at"; do
  [ -e "$f" ] || { echo "bench-preload: $f not found: build first (cmake --build $build)" >&2; exit 2; }
done
for p in sqlite3 xz zstd; do
  command -v "$p" >/dev/null || { echo "bench-preload: $p not installed (tools/install-deps.sh --test)" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "$wisdom" ]; then
  echo "bench-preload: tuning memcpy, memmove and fill for this host (about 2 minutes)" >&2
  "$at" --op memcpy,memmove,fill --quiet --emit "$tmp/best.json" >/dev/null
  wisdom=$tmp/best.json
fi
COPYSYNTH_WISDOM=$wisdom COPYSYNTH_PRELOAD_STATS=1 LD_PRELOAD=$shim /bin/true 2>"$tmp/installed"
if ! grep -q "installed from" "$tmp/installed"; then
  echo "bench-preload: the shim did not install the wisdom:" >&2
  cat "$tmp/installed" >&2
  exit 1
fi
sed 's/^copysynth-preload\[[0-9]*\]: /shim: /' "$tmp/installed"

seq 1 240000 | awk '{ printf "%d %d copysynth %s\n", $1, ($1 * $1) % 9973, substr("abcdefghijklmnopqrstuvwxyz", 1 + $1 % 26) }' >"$tmp/input"
head -c 3000000 "$at" >>"$tmp/input"
zstd -q -T1 -6 -c "$tmp/input" >"$tmp/input.zst"
head -c 6000000 "$tmp/input" | xz -q -T1 -3 -c >"$tmp/input.xz"

# run WORKLOAD [SHIM]: one run, with the shim when SHIM is given (both through env, alike).
run() {
  local pre=()
  [ $# -gt 1 ] && pre=(LD_PRELOAD="$2" COPYSYNTH_WISDOM="$wisdom")
  case $1 in
    sqlite) env "${pre[@]}" sqlite3 :memory: <tests/preload_sqlite.sql >/dev/null ;;
    xz) env "${pre[@]}" xz -q -d -c "$tmp/input.xz" >/dev/null ;;
    zstd) env "${pre[@]}" zstd -q -d -c "$tmp/input.zst" >/dev/null ;;
    true) env "${pre[@]}" /bin/true ;;
  esac
}
now_ns() { date +%s%N; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '\n%-8s %6s %12s %12s %16s %20s\n' workload runs "glibc ms" "shim ms" "ratio (medians)" "ratio (pair median)"
for w in sqlite xz zstd true; do
  run "$w"
  run "$w" "$shim"
  : >"$tmp/a"
  : >"$tmp/b"
  : >"$tmp/r"
  for ((i = 0; i < runs; i++)); do
    t0=$(now_ns)
    run "$w"
    t1=$(now_ns)
    run "$w" "$shim"
    t2=$(now_ns)
    echo $((t1 - t0)) >>"$tmp/a"
    echo $((t2 - t1)) >>"$tmp/b"
    awk -v a=$((t1 - t0)) -v b=$((t2 - t1)) 'BEGIN { printf "%.6f\n", b / a }' >>"$tmp/r"
  done
  ma=$(median <"$tmp/a")
  mb=$(median <"$tmp/b")
  mr=$(median <"$tmp/r")
  awk -v w="$w" -v n="$runs" -v a="$ma" -v b="$mb" -v r="$mr" \
    'BEGIN { printf "%-8s %6d %12.2f %12.2f %16.3f %20.3f\n", w, n, a / 1e6, b / 1e6, b / a, r }'
done
echo
echo "ratio < 1: faster with the shim. The shim's start-up cost is in every run (see 'true')."
