#!/usr/bin/env bash
# Measures copysynth on this machine for docs/performance.md: installs what the benchmarks need,
# builds Release (with the AMD AOCL-LibMem peer when its source is at hand), tunes memcpy,
# memmove and fill on the seeds' workload twice (the second run checks that tuning is
# reproducible), then compares the tuned routines with every peer (glibc, rep movsb, plain AVX2
# loops, AOCL-LibMem, DPDK rte_memcpy) on the seeds' matrix, the misaligned-destination matrix,
# the copy being used (32 KiB-64 MiB: alone, read back, source overwritten; warm and cold) and
# the eight production size distributions (throughput and read back), in one process,
# interleaved — in several processes, because one process's address-space layout can move a
# point by 10-30% (for glibc too).
#
# Usage: tools/perf-report.sh [OUT_DIR]        (default: perf-report/)
# Environment:
#   COPYSYNTH_REPORTS=N            report processes (default 3)
#   COPYSYNTH_AOCL_SOURCE=PATH     AOCL-LibMem tree or release archive (default:
#                                  ../shared/peers/aocl-libmem-5.3.tar.gz; none = without it)
#   COPYSYNTH_AOCL_CACHE_SIZES=L1D,L2,L3   passed to tools/build-aocl-peer.sh --cache-sizes, for
#                                  hosts whose CPUID lacks leaf 0x8000001D (AOCL then reads every
#                                  cache as 1 byte); docs/performance.md says which was used
# Writes into OUT_DIR:
#   host.txt              CPU, glibc, kernel, date, the AOCL build
#   best.json, tune.txt   the wisdom and the tables of the first tuning run (tune.log: progress)
#   best2.json, tune2.txt the second tuning run (same command, another process)
#   best-memcpy.json      the default run, `autotune --emit` (memcpy only; tune-memcpy.txt and
#                         tune-memcpy.log: its table and progress; no file when its winner was refused)
#   report-1..N.txt       `autotune --from best.json --report --versus best2.json`; each ends
#                         with the performance targets, met or MISSED
#   speedup.svg           the speedup over glibc of the first report
#   timing.txt            wall time of the tuning runs and of `autotune --quick`
# Takes about 25 minutes on 2 cores once the packages are installed. Needs root for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-perf-report}
mkdir -p "$out"
tools/install-deps.sh --bench
aocl_source=${COPYSYNTH_AOCL_SOURCE:-../shared/peers/aocl-libmem-5.3.tar.gz}
aocl_note="AOCL-LibMem peer: not built"
if [ "$aocl_source" != none ] && [ -e "$aocl_source" ]; then
  cs=()
  [ -n "${COPYSYNTH_AOCL_CACHE_SIZES:-}" ] && cs=(--cache-sizes "$COPYSYNTH_AOCL_CACHE_SIZES")
  if tools/build-aocl-peer.sh --from "$aocl_source" "${cs[@]}" build-aocl >"$out/aocl-build.log" 2>&1; then
    aocl_note="AOCL-LibMem peer: $(head -1 build-aocl/README)${cs:+ (--cache-sizes $COPYSYNTH_AOCL_CACHE_SIZES)}"
  else
    aocl_note="AOCL-LibMem peer: build failed (see aocl-build.log)"
  fi
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target autotune >/dev/null
at=build/tools/autotune
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "glibc: $(ldd --version | head -1)"
  echo "kernel: $(uname -r)"
  echo "cores: $(nproc)"
  echo "$aocl_note"
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
echo "perf-report: tuning ($at --op memcpy,memmove,fill --emit $out/best.json)" >&2
ops=memcpy,memmove,fill
timed "autotune --op $ops --emit best.json" "$at" --op "$ops" --emit "$out/best.json" >"$out/tune.txt" 2>"$out/tune.log"
grep -E '^(cpu|features|caches|signature):' "$out/tune.log" >>"$out/host.txt" || true
echo "perf-report: tuning again, for the reproducibility check ($at --op memcpy,memmove,fill --emit $out/best2.json)" >&2
timed "autotune --op $ops --emit best2.json" "$at" --op "$ops" --emit "$out/best2.json" >"$out/tune2.txt" 2>"$out/tune2.log"
timed "autotune --emit (memcpy only, the default)" "$at" --emit "$out/best-memcpy.json" >"$out/tune-memcpy.txt" 2>"$out/tune-memcpy.log"
timed "autotune --quick" "$at" --quick -q >/dev/null
reports=${COPYSYNTH_REPORTS:-3}
for i in $(seq 1 "$reports"); do
  echo "perf-report: comparing with the peers, process $i of $reports ($at --from $out/best.json --report --versus $out/best2.json)" >&2
  svg=()
  [ "$i" = 1 ] && svg=(--svg "$out/speedup.svg")
  "$at" --from "$out/best.json" --report --versus "$out/best2.json" "${svg[@]}" >"$out/report-$i.txt" 2>"$out/report-$i.log"
done
cat "$out/host.txt" "$out/timing.txt"
for i in $(seq 1 "$reports"); do
  echo "== report $i =="
  sed -n '/^performance targets/,/^$/p' "$out/report-$i.txt"
  grep -h 'geometric mean' "$out/report-$i.txt"
done
