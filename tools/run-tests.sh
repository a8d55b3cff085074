#!/usr/bin/env bash
# Builds copysynth and runs every test, in stages, stopping at the first failure:
#
#   release  Release build in build/, then ctest (the doctest suites, the CLI test, the examples)
#   asan     the same with AddressSanitizer + UndefinedBehaviorSanitizer (g++) in build-asan/
#   fuzz     the wisdom loader's libFuzzer target (clang) in build-fuzz/, run for
#            $COPYSYNTH_FUZZ_SECONDS seconds (default 60); any crash, leak or property violation fails
#
# Usage: tools/run-tests.sh [release|asan|fuzz|all]...   (default: all, in the order above)
# Needs: tools/install-deps.sh --test (clang and the libFuzzer runtime for the fuzz stage).
# Prints one line per stage with its wall time, and at the end "stages: N passed, N failed".
#
# The optional AOCL-LibMem peer: before the release and asan stages, when $COPYSYNTH_AOCL_SOURCE
# (default: ../shared/peers/aocl-libmem-5.3.tar.gz beside the repository) exists and
# build-aocl/libaocl-peer.a is missing or older than it or than tools/build-aocl-peer.sh, the
# peer is built into build-aocl/ (about 20 s of CPU time; log in build-aocl/build.log) and the
# stages' cmake picks it up. Without the source, or when that build fails, the tests run without
# it and say so. COPYSYNTH_AOCL_SOURCE=none skips it. COPYSYNTH_AOCL_CACHE_SIZES=L1D,L2,L3 is
# passed as --cache-sizes (and rebuilds a peer built with other sizes); without it a peer built
# with sizes is kept. The tests need only the peer's correctness, but later reports compare
# against this build: on a CPU whose CPUID leaf 0x8000001D is empty (some VMs) the script's
# warning is repeated here.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

fuzz_seconds=${COPYSYNTH_FUZZ_SECONDS:-60}
jobs=$(nproc 2>/dev/null || echo 2)

usage() {  # usage EXIT_STATUS
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
  exit "$1"
}

stages=()
for a in "$@"; do
  case $a in
    release | asan | fuzz) stages+=("$a") ;;
    all) stages+=(release asan fuzz) ;;
    -h | --help) usage 0 ;;
    *) echo "run-tests: unknown stage '$a'" >&2; usage 2 >&2 ;;
  esac
done
[ ${#stages[@]} -eq 0 ] && stages=(release asan fuzz)
case $fuzz_seconds in
  '' | *[!0-9]*) echo "run-tests: COPYSYNTH_FUZZ_SECONDS must be a whole number of seconds, got '$fuzz_seconds'" >&2; exit 2 ;;
esac

# Sanitizer runtimes before LLVM 18 (clang 14 on Debian 12, g++ 12's libasan) abort at start-up
# ("AddressSanitizer: DEADLYSIGNAL" in a loop) on kernels with vm.mmap_rnd_bits > 28: run the
# sanitized programs without address-space randomisation there.
no_aslr=()
if [ -r /proc/sys/vm/mmap_rnd_bits ] && [ "$(cat /proc/sys/vm/mmap_rnd_bits)" -gt 28 ] && command -v setarch >/dev/null; then
  no_aslr=(setarch "$(uname -m)" -R)
fi

summary=()
passed=0
failed=0

say() { echo "run-tests: $*" >&2; }

# finish STAGE START_SECONDS STATUS DETAIL
finish() {
  local t=$((SECONDS - $2))
  local line
  line=$(printf '%-8s %-6s %3dm%02ds  %s' "$1" "$3" $((t / 60)) $((t % 60)) "$4")
  summary+=("$line")
  echo >&2
  say "$line"
  if [ "$3" = passed ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo >&2
    echo "==== summary ====" >&2
    printf '%s\n' "${summary[@]}" >&2
    echo "stages: $passed passed, $failed failed"
    exit 1
  fi
}

# ctest_stage NAME BUILD_DIR CMAKE_ARGS... : configure, build, run ctest.
ctest_stage() {
  local name=$1 dir=$2 start=$SECONDS
  shift 2
  say "== $name: configure and build in $dir/ =="
  if ! cmake -S . -B "$dir" "$@"; then finish "$name" "$start" FAILED "cmake configure failed in $dir/"; fi
  if ! cmake --build "$dir" -j"$jobs"; then finish "$name" "$start" FAILED "build failed in $dir/ (errors above)"; fi
  say "== $name: ctest --test-dir $dir =="
  local log="$dir/run-tests-ctest.log"
  "${wrap[@]}" ctest --test-dir "$dir" --output-on-failure 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local count
  count=$(grep -Eo 'tests? failed out of [0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1)
  if [ "$rc" -ne 0 ]; then finish "$name" "$start" FAILED "ctest in $dir/ failed (output above; rerun: tools/run-tests.sh $name)"; fi
  if [ "${count:-0}" -eq 0 ]; then finish "$name" "$start" FAILED "ctest in $dir/ ran no test"; fi
  finish "$name" "$start" passed "${count:-?} tests"
}

# aocl_peer: build build-aocl/libaocl-peer.a when its source is there and it is out of date
# (header above). Never fails the run.
aocl_peer_done=
aocl_peer() {
  [ -n "$aocl_peer_done" ] && return 0
  aocl_peer_done=1
  local source=${COPYSYNTH_AOCL_SOURCE:-../shared/peers/aocl-libmem-5.3.tar.gz}
  local archive=build-aocl/libaocl-peer.a
  local sizes=${COPYSYNTH_AOCL_CACHE_SIZES:-}
  if [ "$source" = none ]; then
    say "AOCL-LibMem peer: skipped (COPYSYNTH_AOCL_SOURCE=none)"
  elif [ ! -e "$source" ]; then
    if [ -e "$archive" ]; then
      say "AOCL-LibMem peer: $source not found; using the existing $archive"
    else
      say "AOCL-LibMem peer: skipped ($source not found; tools/build-aocl-peer.sh --from AOCL_TREE_OR_ARCHIVE adds it)"
    fi
  elif [ -e "$archive" ] && [ "$archive" -nt "$source" ] && [ "$archive" -nt tools/build-aocl-peer.sh ] &&
    { [ -z "$sizes" ] || grep -qF "cache sizes $sizes (--cache-sizes)" build-aocl/README 2>/dev/null; }; then
    say "AOCL-LibMem peer: $archive is up to date ($(head -1 build-aocl/README 2>/dev/null))"
  else
    local start=$SECONDS
    mkdir -p build-aocl
    say "== AOCL-LibMem peer: tools/build-aocl-peer.sh --from $source ${sizes:+--cache-sizes $sizes }build-aocl (log: build-aocl/build.log) =="
    if tools/build-aocl-peer.sh --from "$source" ${sizes:+--cache-sizes "$sizes"} build-aocl >build-aocl/build.log 2>&1; then
      grep -h 'warning:' build-aocl/build.log >&2 || true
      say "AOCL-LibMem peer: built in $((SECONDS - start))s: $(head -1 build-aocl/README)"
    else
      rm -f "$archive"
      tail -5 build-aocl/build.log >&2
      say "AOCL-LibMem peer: its build failed (above; full log build-aocl/build.log): the tests run without it"
    fi
  fi
}

run_release() {
  aocl_peer
  wrap=()
  ctest_stage release build -DCMAKE_BUILD_TYPE=Release
}

run_asan() {
  # The ASAN_OPTIONS/UBSAN_OPTIONS the tests need are test properties (copysynth_sanitizer_test_env
  # in CMakeLists.txt), so `ctest --test-dir build-asan` run by hand behaves the same. Debug keeps assert() on; -O1 -g1
  # (line tables only) compiles the Boost.Hana-heavy sources in about 2/3 of -O2 -g's time and
  # still gives file:line in every sanitizer report.
  aocl_peer
  wrap=("${no_aslr[@]}")
  ctest_stage asan build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DCOPYSYNTH_SANITIZE=address,undefined
}

run_fuzz() {
  local start=$SECONDS dir=build-fuzz
  local cxx=${COPYSYNTH_FUZZ_CXX:-clang++}
  if ! command -v "$cxx" >/dev/null; then
    finish fuzz "$start" FAILED "$cxx not found: run tools/install-deps.sh --test (installs clang and the libFuzzer runtime)"
  fi
  say "== fuzz: configure and build fuzz_wisdom with $cxx in $dir/ =="
  if ! cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DCMAKE_CXX_COMPILER="$cxx" \
      -DCOPYSYNTH_FUZZ=ON; then
    finish fuzz "$start" FAILED "cmake configure failed in $dir/"
  fi
  if ! cmake --build "$dir" -j"$jobs" --target fuzz_wisdom fuzz_wisdom_seeds; then
    finish fuzz "$start" FAILED "build failed in $dir/ (errors above; a missing libclang_rt.fuzzer means: run tools/install-deps.sh --test)"
  fi
  local seeds=$dir/fuzz-seeds corpus=$dir/fuzz-corpus artifacts=$dir/fuzz-artifacts
  rm -rf "$seeds" "$artifacts"
  mkdir -p "$corpus" "$artifacts"
  if ! "${no_aslr[@]}" "$dir/tests/fuzz_wisdom_seeds" "$seeds"; then
    finish fuzz "$start" FAILED "fuzz_wisdom_seeds could not write the seed corpus"
  fi
  say "== fuzz: fuzz_wisdom for ${fuzz_seconds}s (new inputs kept in $corpus/) =="
  # The corpus directory is kept between runs, so a developer's repeated runs go deeper; the first
  # directory is where libFuzzer writes what it finds, the others are read-only seeds.
  # libFuzzer's progress (thousands of lines) goes to $dir/fuzz.log; its summary, or on failure
  # the end of the log with the report, is printed here.
  local log=$dir/fuzz.log
  if ! UBSAN_OPTIONS=print_stacktrace=1 "${no_aslr[@]}" "$dir/tests/fuzz_wisdom" "$corpus" "$seeds" tests/fuzz_corpus \
      -dict=tests/fuzz_wisdom.dict -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=16384 -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1; then
    tail -n 150 "$log" >&2
    local crash
    crash=$(ls -1 "$artifacts" 2>/dev/null | head -1)
    finish fuzz "$start" FAILED "fuzz_wisdom failed${crash:+ on $artifacts/$crash; reproduce: $dir/tests/fuzz_wisdom $artifacts/$crash} (full log: $log)"
  fi
  grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::' "$log" >&2
  finish fuzz "$start" passed "${fuzz_seconds}s of fuzzing, $(ls -1 "$corpus" | wc -l) inputs in $corpus/"
}

for s in "${stages[@]}"; do
  "run_$s"
done
echo >&2
echo "==== summary ====" >&2
printf '%s\n' "${summary[@]}" >&2
echo "stages: $passed passed, $failed failed"
