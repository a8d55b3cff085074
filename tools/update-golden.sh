#!/usr/bin/env bash
# Rewrites the golden code files (tests/golden/code_hashes.txt and code_bytes.txt) from this
# tree's emit(), builds test_golden and runs it, then shows what changed.
#
# Usage: tools/update-golden.sh [BUILD_DIR]   (default: build; configured with cmake if missing)
#
# Run it only when a change is meant to move the emitted bytes. Every changed line means that
# every wisdom file (best.json) with that plan's params no longer loads (its code_fnv1a64
# differs): commit the files on their own, saying which change to emit() or the ladder moved the
# bytes and why that is worth it.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
case ${1:-} in -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target golden_gen test_golden
"$build/tests/golden_gen" tests/golden
"$build/tests/test_golden"
git --no-pager diff --stat -- tests/golden || true
