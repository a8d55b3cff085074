#!/usr/bin/env bash
# Measures copysynth on this machine for docs/performance.md: installs what the benchmarks need,
# builds Release, tunes memcpy on the seeds' workload, then compares the tuned routine with every
# peer (glibc, rep movsb, plain AVX2 loops, DPDK rte_memcpy) on the seeds' matrix and the eight
# production size distributions, in one process, interleaved.
#
# Usage: tools/perf-report.sh [OUT_DIR]        (default: perf-report/)
# Writes OUT_DIR/best.json, OUT_DIR/tune.txt (the tuning table), OUT_DIR/report.txt (the peer
# tables, read bandwidth) and OUT_DIR/speedup.svg, and OUT_DIR/host.txt (CPU, glibc, kernel).
# Takes about 5 minutes on 2 cores once the packages are installed. Needs root for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-perf-report}
mkdir -p "$out"
tools/install-deps.sh --bench
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target autotune >/dev/null
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "glibc: $(ldd --version | head -1)"
  echo "kernel: $(uname -r)"
  echo "cores: $(nproc)"
  build/tools/autotune --list-params >/dev/null  # fails early if the build is broken
} >"$out/host.txt"
echo "perf-report: tuning (build/tools/autotune --emit $out/best.json)" >&2
build/tools/autotune --emit "$out/best.json" >"$out/tune.txt" 2>"$out/tune.log"
grep -E '^(cpu|features|caches|signature):' "$out/tune.log" >>"$out/host.txt" || true
echo "perf-report: comparing with the peers (build/tools/autotune --from $out/best.json --report)" >&2
build/tools/autotune --from "$out/best.json" --report --svg "$out/speedup.svg" >"$out/report.txt" 2>"$out/report.log"
cat "$out/host.txt" "$out/report.txt"
