#!/usr/bin/env bash
# `cmake --install` and the installed package, as a user meets them: installs BUILD_DIR into a
# temporary prefix, checks what is there, builds examples/installed against it with
# find_package(copysynth) (CMAKE_PREFIX_PATH), tuned_copy.c and tuned_copy.cpp with pkg-config
# (tuned_copy.c also with --static), and runs them; tune_copy.c (copysynth_tune, from
# libcopysynth-tune.a) with copysynth::tune and with pkg-config copysynth-tune, run with a budget
# the tuner refuses (it must link and reach the tuner's check, not tune for a minute),
# the installed autotune (--show, and a distribution found in the prefix's share/) and the
# installed shim with this host's wisdom.
#
# Usage: install_test.sh BUILD_DIR SOURCE_DIR HOST_WISDOM CXX_COMPILER C_COMPILER
set -u
build=$1 src=$2 wisdom=$3 cxx=$4 cc=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/check.sh
. "$(dirname "$0")/check.sh"
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1
rc=$?
check "cmake --install exits 0 (rc=$rc)" test $rc -eq 0
[ $rc -eq 0 ] || tail -20 "$tmp/install.log"
libdir=$(dirname "$(find "$prefix" -name libcopysynth.a | head -1)")
for f in include/copysynth/copysynth.hpp include/copysynth/copysynth.h include/copysynth/version.h \
         include/copysynth/params.hpp include/copysynth/install.hpp include/copysynth/verify.hpp \
         include/copysynth/static_check.hpp include/copysynth/tuner.hpp bin/autotune \
         share/copysynth/size-distributions/MemcpyGoogleA.csv; do
  check "installed $f" test -s "$prefix/$f"
done
for f in libcopysynth.a libcopysynth-tune.a libcopysynth_tuner.a libcopysynth_verify.a libcopysynth_runtime.a \
         libcopysynth_templates.a libcopysynth_generator.a \
         libcopysynth-preload.so cmake/copysynth/copysynthConfig.cmake cmake/copysynth/copysynthConfigVersion.cmake \
         cmake/copysynth/copysynthTargets.cmake pkgconfig/copysynth.pc pkgconfig/copysynth-tune.pc; do
  check "installed lib/.../$f" test -s "$libdir/$f"
done
check "no test or example binary is installed" bash -c "! find '$prefix' -name 'test_*' -o -name 'preload_probe' | grep -q ."

# The installed autotune finds its own shipped distributions (<exe>/../share/copysynth/...), from
# any directory, with COPYSYNTH_DATA_DIR unset. OnlyInstalled.csv exists in the prefix alone, so
# neither the build tree's copy of data/ nor the configured prefix can be what answers.
dist=$prefix/share/copysynth/size-distributions
cp "$dist/MemcpyGoogleQ.csv" "$dist/OnlyInstalled.csv"
mkdir "$tmp/elsewhere"
(cd "$tmp/elsewhere" && env -u COPYSYNTH_DATA_DIR "$prefix/bin/autotune" --workload OnlyInstalled --quick --budget 1 -q) \
  >"$tmp/dist.out" 2>&1
rc=$?
check "installed autotune --workload OnlyInstalled (a distribution only the prefix has) exits 0 (rc=$rc)" test $rc -eq 0
check "... and times it (ns per call)" grep -q "OnlyInstalled" "$tmp/dist.out"
[ $rc -eq 0 ] || cat "$tmp/dist.out"
(cd "$tmp/elsewhere" && env -u COPYSYNTH_DATA_DIR "$prefix/bin/autotune" --workload NoSuchDistribution --quick -q) \
  >/dev/null 2>"$tmp/nodist.err"
check "installed autotune: an unknown distribution names the prefix's directory among those searched" \
  grep -q "looked in $dist" "$tmp/nodist.err"

# find_package(copysynth) from the prefix.
cmake -S "$src/examples/installed" -B "$tmp/app" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" >"$tmp/configure.log" 2>&1
rc=$?
check "configure examples/installed with CMAKE_PREFIX_PATH (rc=$rc)" test $rc -eq 0
[ $rc -eq 0 ] || tail -30 "$tmp/configure.log"
check "find_package(copysynth) reports the shim and autotune" grep -q "copysynth 0\.[0-9.]*: shim $libdir/libcopysynth-preload.so, autotune $prefix/bin/autotune" "$tmp/configure.log"
cmake --build "$tmp/app" -j2 >"$tmp/build.log" 2>&1
rc=$?
check "build examples/installed against the installed package (rc=$rc)" test $rc -eq 0
[ $rc -eq 0 ] || tail -30 "$tmp/build.log"
"$tmp/app/tuned_copy" "$wisdom" >"$tmp/cpp.out" 2>&1
rc=$?
cat "$tmp/cpp.out"
check "tuned_copy (C++, find_package) exits 0 (rc=$rc)" test $rc -eq 0
check "tuned_copy installed the host's memcpy, memmove and fill" \
  bash -c "grep -q '^installed memcpy = memcpy/' '$tmp/cpp.out' && grep -q '^installed memmove = memmove/' '$tmp/cpp.out' && grep -q '^installed fill = fill/' '$tmp/cpp.out'"
"$tmp/app/tuned_copy" "$tmp/none.json" >"$tmp/cpp2.out" 2>&1
rc=$?
check "tuned_copy without wisdom falls back and exits 0 (rc=$rc)" bash -c "test $rc -eq 0 && grep -q 'using the system routines: cannot read wisdom file' '$tmp/cpp2.out'"
# tune_copy (copysynth::tune): a budget of 0 s is refused by the tuner's check_budget, so the
# program linked the tuning library and reached the tuner, then copies with the system memcpy.
"$tmp/app/tune_copy" 0 >"$tmp/tune.out" 2>&1
rc=$?
cat "$tmp/tune.out"
check "tune_copy (C, copysynth::tune) refuses a 0 s budget with the tuner's message, exits 1 (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -q 'budget_seconds must be between 1 and 86400' '$tmp/tune.out' && grep -q 'memcpy system: copies ok' '$tmp/tune.out'"
check "tuned_copy (copysynth::copysynth alone) links no tuner library" \
  bash -c "! grep -q -E 'libcopysynth_tuner\.a|libcopysynth-tune\.a' '$tmp/app/CMakeFiles/tuned_copy.dir/link.txt'"

# find_package(copysynth) from a C-only project (project(... LANGUAGES C)): CMake links with the
# C compiler, which brings no C++ runtime (it was thousands of undefined references).
mkdir -p "$tmp/c-only-src"
cat >"$tmp/c-only-src/CMakeLists.txt" <<EOF_CMAKE
cmake_minimum_required(VERSION 3.16)
project(copysynth_c_only LANGUAGES C)
find_package(copysynth 0.2 REQUIRED)
add_executable(tuned_copy_c_only "$src/examples/installed/tuned_copy.c")
target_link_libraries(tuned_copy_c_only PRIVATE copysynth::copysynth)
add_executable(tune_copy_c_only "$src/examples/installed/tune_copy.c")
target_link_libraries(tune_copy_c_only PRIVATE copysynth::tune)
EOF_CMAKE
cmake -S "$tmp/c-only-src" -B "$tmp/c-only" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
  >"$tmp/c-only.log" 2>&1 && cmake --build "$tmp/c-only" >>"$tmp/c-only.log" 2>&1
rc=$?
check "a C-only CMake project (LANGUAGES C) links copysynth::copysynth and copysynth::tune (rc=$rc)" test $rc -eq 0
[ $rc -eq 0 ] || tail -20 "$tmp/c-only.log"
COPYSYNTH_WISDOM=$wisdom "$tmp/c-only/tuned_copy_c_only" >"$tmp/c-only.out" 2>&1
rc=$?
check "... and it runs with the tuned memcpy (rc=$rc)" bash -c "test $rc -eq 0 && grep -q 'memcpy memcpy/.*: copies ok' '$tmp/c-only.out'"
"$tmp/c-only/tune_copy_c_only" 0 >"$tmp/c-only-tune.out" 2>&1
rc=$?
check "... and its tune_copy reaches the tuner's budget check (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -q 'budget_seconds must be between 1 and 86400' '$tmp/c-only-tune.out'"

# pkg-config, from C.
export PKG_CONFIG_PATH=$libdir/pkgconfig
check "pkg-config knows copysynth $(pkg-config --modversion copysynth 2>/dev/null)" pkg-config --exists copysynth
incdir=$(pkg-config --cflags-only-I copysynth | sed 's/^-I//; s/ *$//')
check "pkg-config: the include dir holds copysynth.h ($incdir)" test -s "$incdir/copysynth/copysynth.h"
# shellcheck disable=SC2046
"$cc" "$src/examples/installed/tuned_copy.c" $(pkg-config --cflags copysynth) $(pkg-config --libs copysynth) \
  -o "$tmp/tuned_copy_c" 2>"$tmp/cc.log"
rc=$?
check "cc tuned_copy.c \$(pkg-config --cflags --libs copysynth) (rc=$rc)" test $rc -eq 0
[ $rc -eq 0 ] || cat "$tmp/cc.log"
COPYSYNTH_WISDOM=$wisdom "$tmp/tuned_copy_c" >"$tmp/c.out" 2>&1
rc=$?
cat "$tmp/c.out"
check "tuned_copy_c (C, pkg-config) exits 0 with the tuned memcpy (rc=$rc)" bash -c "test $rc -eq 0 && grep -q 'memcpy memcpy/.*: copies ok' '$tmp/c.out'"

# pkg-config copysynth-tune, from C: its libraries come before copysynth's, as a static link needs.
check "pkg-config --libs copysynth-tune puts -lcopysynth-tune and the tuner before -lcopysynth ($(pkg-config --libs copysynth-tune))" \
  bash -c "pkg-config --libs copysynth-tune | grep -q -- '-lcopysynth-tune -lcopysynth_tuner .*-lcopysynth -lcopysynth_verify'"
check "pkg-config --libs copysynth names no tuner library" bash -c "! pkg-config --libs copysynth | grep -q -E 'tune'"
# shellcheck disable=SC2046
"$cc" "$src/examples/installed/tune_copy.c" $(pkg-config --cflags --libs copysynth-tune) -o "$tmp/tune_copy_pc" 2>"$tmp/cc-tune.log"
rc=$?
check "cc tune_copy.c \$(pkg-config --cflags --libs copysynth-tune) (rc=$rc)" test $rc -eq 0
[ $rc -eq 0 ] || cat "$tmp/cc-tune.log"
"$tmp/tune_copy_pc" 0 >"$tmp/tune-pc.out" 2>&1
rc=$?
check "... and it reaches the tuner's budget check (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -q 'budget_seconds must be between 1 and 86400' '$tmp/tune-pc.out'"

# pkg-config from C++, as README shows it (g++ 12 needs -std=c++20 for the headers).
# shellcheck disable=SC2046
"$cxx" -std=c++20 "$src/examples/installed/tuned_copy.cpp" $(pkg-config --cflags --libs copysynth) \
  -o "$tmp/tuned_copy_pc" 2>"$tmp/cxx.log"
rc=$?
check "c++ -std=c++20 tuned_copy.cpp \$(pkg-config --cflags --libs copysynth) (rc=$rc)" test $rc -eq 0
[ $rc -eq 0 ] || head -30 "$tmp/cxx.log"
"$tmp/tuned_copy_pc" "$wisdom" >"$tmp/cpp-pc.out" 2>&1
rc=$?
check "tuned_copy (C++, pkg-config) exits 0 with the tuned memcpy (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -q '^installed memcpy = memcpy/' '$tmp/cpp-pc.out'"
# --static: Libs.private adds Zycore (what libZydis.a needs); linked against the shared system
# libraries it must still work (a fully static -static link needs libZydis.a, which Debian lacks).
check "pkg-config --static --libs copysynth adds -lZycore ($(pkg-config --static --libs copysynth))" \
  bash -c "pkg-config --static --libs copysynth | grep -q -- '-lZydis.* -lZycore'"
# shellcheck disable=SC2046
"$cc" "$src/examples/installed/tuned_copy.c" $(pkg-config --cflags --static --libs copysynth) \
  -o "$tmp/tuned_copy_static_flags" 2>"$tmp/cc-static.log"
rc=$?
check "cc tuned_copy.c \$(pkg-config --static --cflags --libs copysynth) (rc=$rc)" test $rc -eq 0
[ $rc -eq 0 ] || cat "$tmp/cc-static.log"
COPYSYNTH_WISDOM=$wisdom "$tmp/tuned_copy_static_flags" >"$tmp/c-static.out" 2>&1
check "... and it runs with the tuned memcpy" grep -q 'memcpy memcpy/.*: copies ok' "$tmp/c-static.out"

# The installed tool and shim.
"$prefix/bin/autotune" --show "$wisdom" >"$tmp/show" 2>&1
check "installed autotune --show reads the wisdom" grep -q '^this_cpu.host=0$' "$tmp/show"
env LD_PRELOAD="$libdir/libcopysynth-preload.so" COPYSYNTH_WISDOM="$wisdom" COPYSYNTH_PRELOAD_STATS=1 \
  cat "$wisdom" >/dev/null 2>"$tmp/shim.err"
check "the installed shim installs the host's routines in cat" grep -q "installed from $wisdom" "$tmp/shim.err"

echo "$fails failure(s)"
test $fails -eq 0
