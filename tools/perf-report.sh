#!/usr/bin/env bash
# Measures copysynth on this machine for docs/performance.md: installs what the benchmarks need,
# builds Release, tunes memcpy on the seeds' workload twice (the second run checks that tuning is
# reproducible), then compares the tuned routine with every peer (glibc, rep movsb, plain AVX2
# loops, DPDK rte_memcpy) on the seeds' matrix, the misaligned-destination matrix and the eight
# production size distributions, in one process, interleaved — three times, in three processes,
# because one process's address-space layout can move a point by 10-30% (for glibc too).
#
# Usage: tools/perf-report.sh [OUT_DIR]        (default: perf-report/)
# Writes into OUT_DIR:
#   host.txt              CPU, glibc, kernel, date
#   best.json, tune.txt   the wisdom and the table of the first tuning run (tune.log: progress)
#   best2.json, tune2.txt the second tuning run (same command, another process)
#   report-1..3.txt       `autotune --from best.json --report --versus best2.json`, three processes;
#                         each ends with the performance targets, met or MISSED
#   speedup.svg           the speedup over glibc of the first report
#   timing.txt            wall time of the tuning runs and of `autotune --quick`
# Takes about 3 minutes on 2 cores once the packages are installed. Needs root for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-perf-report}
mkdir -p "$out"
tools/install-deps.sh --bench
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target autotune >/dev/null
at=build/tools/autotune
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "glibc: $(ldd --version | head -1)"
  echo "kernel: $(uname -r)"
  echo "cores: $(nproc)"
  "$at" --list-params >/dev/null  # fails early if the build is broken
} >"$out/host.txt"
: >"$out/timing.txt"
timed() {  # timed LABEL COMMAND...: runs it, appends its wall time to timing.txt
  local label=$1 t0 t1
  shift
  t0=$(date +%s%N)
  "$@"
  t1=$(date +%s%N)
  t=$(((t1 - t0) / 100000000))
  echo "$label: $((t / 10)).$((t % 10)) s" >>"$out/timing.txt"
}
echo "perf-report: tuning ($at --emit $out/best.json)" >&2
timed "autotune --emit best.json" "$at" --emit "$out/best.json" >"$out/tune.txt" 2>"$out/tune.log"
grep -E '^(cpu|features|caches|signature):' "$out/tune.log" >>"$out/host.txt" || true
echo "perf-report: tuning again, for the reproducibility check ($at --emit $out/best2.json)" >&2
timed "autotune --emit best2.json" "$at" --emit "$out/best2.json" >"$out/tune2.txt" 2>"$out/tune2.log"
timed "autotune --quick" "$at" --quick -q >/dev/null
for i in 1 2 3; do
  echo "perf-report: comparing with the peers, process $i of 3 ($at --from $out/best.json --report --versus $out/best2.json)" >&2
  svg=()
  [ "$i" = 1 ] && svg=(--svg "$out/speedup.svg")
  "$at" --from "$out/best.json" --report --versus "$out/best2.json" "${svg[@]}" >"$out/report-$i.txt" 2>"$out/report-$i.log"
done
cat "$out/host.txt" "$out/timing.txt"
for i in 1 2 3; do
  echo "== report $i =="
  sed -n '/^targets/,$p' "$out/report-$i.txt"
  grep -h 'geometric mean' "$out/report-$i.txt"
done
