#!/usr/bin/env bash
# Builds AMD AOCL-LibMem (BSD-3-Clause; AMD's memcpy/memmove/memset tuned per Zen generation) as
# an optional peer for copysynth, from a source tree or release archive that you name. copysynth
# does not carry AOCL-LibMem's code: this script only builds what you point it at, in a temporary
# copy (your tree is not modified).
#
# Usage: tools/build-aocl-peer.sh --from TREE_OR_ARCHIVE [--zen zenN] [--cache-sizes L1D,L2,L3] [OUT_DIR]
#   --from PATH   an AOCL-LibMem source tree (the folder with its top CMakeLists.txt) or a release
#                 archive of one (.tar.gz, .tgz, .tar.xz, .tar.bz2, .tar), e.g. aocl-libmem-5.3.tar.gz
#                 from https://github.com/amd/aocl-libmem/releases (tested with 5.3)
#   --zen zenN    the Zen generation to build for, zen1..zen5 (default: the one AOCL-LibMem's own
#                 configure-time detection picks for this CPU; it needs an AMD Zen CPU). zen1-3 use
#                 AVX2, zen4-5 AVX-512: a variant runs only on CPUs with its instructions
#   --cache-sizes L1D,L2,L3   bytes (suffix K or M allowed), e.g. 48K,1M,32M: the cache sizes
#                 AOCL's thresholds are computed from, instead of what its constructor reads with
#                 CPUID leaf 0x8000001D. For hosts that do not provide that leaf (TOPOEXT clear,
#                 as in some VMs), where AOCL reads every cache as 1 byte and uses non-temporal
#                 stores from 2 KiB on; patches AOCL-LibMem 5.3's src/cache_info.c in the copy
#                 Without it, the script reads that leaf here first, as AOCL's constructor
#                 will: where it reports no caches, the peer is still built (the tests need only
#                 its correctness) but the script warns, suggests sizes from CPUID's legacy
#                 leaves 0x80000005/6, and the README and build line say so (autotune --report
#                 and copysynth_bench repeat it beside every AOCL-LibMem figure)
#   OUT_DIR       where the results go (default: build-aocl, which cmake picks up by itself)
#
# Writes:
#   OUT_DIR/libaocl-peer.a      AOCL's objects with the entry points renamed aocl_memcpy,
#                               aocl_memmove, aocl_memset (the C signatures of memcpy, memmove,
#                               memset) and its weak memcpy/memmove/memset/str* aliases made
#                               local, so linking it does NOT replace the program's own memcpy;
#                               plus what copysynth reads about the build: the Zen generation,
#                               a line of text and AOCL's thresholds (copysynth_aocl_peer_*).
#                               Link with -Wl,-u,aocl_memcpy (cmake does: COPYSYNTH_AOCL_PEER);
#                               the pulled-in object's constructor reads CPUID and the cache
#                               sizes and sets AOCL's thresholds, as in a real program.
#   OUT_DIR/libaocl-libmem.so   the same build as an ordinary shared library that replaces
#                               memcpy, memmove, memset and their fortified __*_chk forms (the
#                               six symbols libcopysynth-preload.so replaces), for LD_PRELOAD
#                               comparisons of real programs (tools/bench-preload.sh)
#   OUT_DIR/README              what was built: version, Zen variant, compiler and its flags
#
# Built without LTO (upstream passes -flto=auto, whose objects cannot be renamed) and without
# AOCL's tools/ (validators, benchmarks). Takes about 20 s of CPU time. Needs: cmake, make, gcc,
# binutils (nm, objcopy, ar).
set -euo pipefail

me=build-aocl-peer
die() { echo "$me: $*" >&2; exit 1; }
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "$1"; }

from='' zen='' out='' caches=''
while [ $# -gt 0 ]; do
  case $1 in
    --from) [ $# -ge 2 ] || die "--from needs a path: an AOCL-LibMem source tree or release archive"; from=$2; shift 2 ;;
    --from=*) from=${1#--from=}; shift ;;
    --zen) [ $# -ge 2 ] || die "--zen needs a value: zen1, zen2, zen3, zen4 or zen5"; zen=$2; shift 2 ;;
    --zen=*) zen=${1#--zen=}; shift ;;
    --cache-sizes) [ $# -ge 2 ] || die "--cache-sizes needs L1D,L2,L3 in bytes, e.g. 48K,1M,32M"; caches=$2; shift 2 ;;
    --cache-sizes=*) caches=${1#--cache-sizes=}; shift ;;
    -h | --help) usage 0 ;;
    -*) echo "$me: unknown option '$1'" >&2; usage 2 >&2 ;;
    *) [ -z "$out" ] || die "one OUT_DIR only (got '$out' and '$1')"; out=$1; shift ;;
  esac
done
case $zen in
  '' | zen[1-5]) ;;
  *) die "--zen $zen: not a Zen generation AOCL-LibMem builds for; use zen1, zen2, zen3, zen4 or zen5" ;;
esac
# bytes KIND VALUE: VALUE (N, NK or NM) in bytes, or an error naming KIND
bytes() {
  case $2 in
    *[!0-9KM]* | '' | [KM]* | *[KM]?*) die "--cache-sizes: $1 '$2' is not a size in bytes (N, NK or NM)" ;;
    *K) echo $((${2%K} * 1024)) ;;
    *M) echo $((${2%M} * 1024 * 1024)) ;;
    *) echo "$2" ;;
  esac
}
cache_l1d='' cache_l2='' cache_l3=''
if [ -n "$caches" ]; then
  IFS=, read -r c1 c2 c3 extra <<<"$caches"
  if [ -z "${c3:-}" ] || [ -n "${extra:-}" ]; then die "--cache-sizes $caches: give three sizes, L1D,L2,L3 (per core, per core, per CCX), e.g. 48K,1M,32M"; fi
  cache_l1d=$(bytes L1D "$c1") && cache_l2=$(bytes L2 "$c2") && cache_l3=$(bytes L3 "$c3") || exit 1
fi
[ -n "$from" ] || { echo "$me: say where AOCL-LibMem's source is: --from TREE_OR_ARCHIVE" >&2; usage 2 >&2; }
[ -e "$from" ] || die "--from $from: no such file or folder"
for tool in cmake make gcc nm objcopy ar; do
  command -v "$tool" >/dev/null || die "$tool not found (install cmake, make, gcc and binutils)"
done
[ "$(uname -m)" = x86_64 ] || die "AOCL-LibMem is x86-64 code; this machine is $(uname -m)"

out=${out:-build-aocl}
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/aocl-peer.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --- the source: a copy of the tree, or the archive unpacked --------------------------------
is_aocl_tree() { [ -f "$1/CMakeLists.txt" ] && grep -q 'project(aocl-libmem' "$1/CMakeLists.txt" && [ -d "$1/src/uarch" ]; }
if [ -d "$from" ]; then
  is_aocl_tree "$from" || die "$from is not an AOCL-LibMem source tree (no CMakeLists.txt with project(aocl-libmem) and src/uarch/ there)"
  cp -R "$from" "$work/src"
else
  mkdir "$work/unpacked"
  tar -C "$work/unpacked" -xf "$from" 2>"$work/tar.log" ||
    die "$from: not an archive tar can unpack ($(head -1 "$work/tar.log")); pass a .tar.gz/.tar.xz/.tar.bz2 or a source tree"
  top=
  for d in "$work/unpacked" "$work/unpacked"/*; do
    if [ -d "$d" ] && is_aocl_tree "$d"; then top=$d; break; fi
  done
  [ -n "$top" ] || die "$from does not hold an AOCL-LibMem source tree (no CMakeLists.txt with project(aocl-libmem) and src/uarch/ at its top or one folder down)"
  mv "$top" "$work/src"
fi
src=$work/src
version=$(sed -n 's/^set(LIBMEM_VERSION_STRING \([0-9.]*\)).*/\1/p' "$src/CMakeLists.txt" | head -1)
# No LTO (objects must be editable by objcopy) and no tools/ (the validators and benchmarks triple
# the configure time and are not needed here).
sed -i 's/ -flto=auto//' "$src/src/CMakeLists.txt"
if [ -n "$caches" ]; then
  # After each CPUID-derived size in get_cache_info(), the given one.
  ci=$src/src/cache_info.c
  for c in "l1d_per_core:$cache_l1d" "l2_per_core:$cache_l2" "l3_per_ccx:$cache_l3"; do
    field=${c%%:*}
    [ "$(grep -c "^ *zen_cache->$field *= " "$ci" 2>/dev/null)" = 1 ] ||
      die "--cache-sizes: $ci has no single 'zen_cache->$field = ' line to follow (written for AOCL-LibMem 5.3); build without --cache-sizes"
    sed -i "s/^\( *\)zen_cache->$field *= .*/&\n\1zen_cache->$field = ${c#*:}; \/* build-aocl-peer.sh --cache-sizes *\//" "$ci"
  done
fi
# shellcheck disable=SC2016  # ${...} here is CMake's, not the shell's
sed -i 's|^add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/tools)|# (tools/ left out by build-aocl-peer.sh)|' "$src/CMakeLists.txt"

# --- the cache sizes AOCL's constructor will read here ---------------------------------------
# Its get_cache_info() (src/cache_info.c) multiplies out CPUID leaf 0x8000001D, subleaves 0 (L1d),
# 2 (L2) and 3 (L3): ways x partitions x line size x sets (AMD64 APM vol. 3, CPUID Fn8000_001D).
# A guest whose hypervisor clears TOPOEXT gets zeros there, so every cache is 1 byte. The legacy
# leaves Fn8000_0005 ECX (L1d KiB) and Fn8000_0006 ECX/EDX (L2 KiB, L3 in 512 KiB units) are
# only suggestions: a VM can report the L3 there as the whole host's.
cpuid_note=''
if [ -z "$caches" ]; then
  cat >"$work/caches.c" <<'EOF'
#include <cpuid.h>
#include <stdio.h>
static unsigned long size(unsigned sub) {
  unsigned a, b, c, d;
  __cpuid_count(0x8000001D, sub, a, b, c, d);
  return (unsigned long)(((b >> 22) & 0x3ff) + 1) * (((b >> 12) & 0x3ff) + 1) * ((b & 0xfff) + 1) * (c + 1UL);
}
int main(void) {
  unsigned a, b, c, d, l1 = 0, l2 = 0, l3 = 0;
  __cpuid(0x80000000, a, b, c, d);
  const unsigned max = a;
  if (max >= 0x80000005) { __cpuid(0x80000005, a, b, c, d); l1 = c >> 24; }
  if (max >= 0x80000006) { __cpuid(0x80000006, a, b, c, d); l2 = c >> 16; l3 = (d >> 18) * 512; }
  if (max >= 0x8000001D) printf("%lu %lu %lu", size(0), size(2), size(3));
  else printf("1 1 1");
  printf(" %uK %uK %uK\n", l1, l2, l3);
  return 0;
}
EOF
  if gcc -O1 -o "$work/caches" "$work/caches.c" 2>/dev/null && read -r s1 s2 s3 g1 g2 g3 < <("$work/caches"); then
    if [ "$s1" -le 1 ] || [ "$s2" -le 1 ] || [ "$s3" -le 1 ]; then
      cpuid_note="CPUID leaf 0x8000001D reports no caches on the build host (TOPOEXT clear, as in some VMs): AOCL-LibMem reads every cache as 1 byte there and uses non-temporal stores from 2 KiB on, a weaker peer than on hardware; rebuild with --cache-sizes L1D,L2,L3"
      echo "$me: warning: $cpuid_note (CPUID's legacy leaves say L1d $g1, L2 $g2, L3 $g3 here; check the L3 against the CPU's specification, e.g. 32M per CCX on Zen 3-5)" >&2
    fi
  fi
fi

# --- configure and build with AOCL's own CMake ---------------------------------------------
args=(-D CMAKE_C_COMPILER=gcc -D CMAKE_BUILD_TYPE=Release -G "Unix Makefiles")
[ -n "$zen" ] && args+=(-D "ALMEM_ARCH=$zen")
echo "$me: configuring AOCL-LibMem ${version:-(unknown version)} from $from${zen:+ for $zen}" >&2
cmake "${args[@]}" -S "$src" -B "$work/b" >"$work/cfg.log" 2>&1 ||
  { tail -20 "$work/cfg.log" >&2; die "AOCL-LibMem's cmake configure failed (its output above)"; }
if [ -z "$zen" ]; then
  # Without ALMEM_ARCH, AOCL's src/CMakeLists.txt runs tools/detect_cpu_info.c ("arch") and says
  # "## Compiling for Native CPU - ZEN<n> ..."; on another CPU it builds no variant at all.
  zen=$(sed -n 's/.*Compiling for Native CPU - ZEN\([0-9]\).*/zen\1/p' "$work/cfg.log" | head -1)
  if [ -z "$zen" ]; then
    cpu=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')
    die "AOCL-LibMem found no Zen generation it supports on this CPU (${cpu:-unknown}): it builds a native variant for AMD Zen 1-5 only. Pass --zen zenN to build one anyway (zen1-3 need AVX2, zen4-5 AVX-512 to run)"
  fi
  picked_by="AOCL-LibMem's configure-time CPU detection (tools/detect_cpu_info.c)"
else
  picked_by="--zen $zen"
fi
n=${zen#zen}
if [ "$n" -ge 4 ] && ! grep -qw avx512f /proc/cpuinfo; then
  echo "$me: warning: $zen uses AVX-512, which this CPU lacks: the peer builds but cannot run here (copysynth leaves it out)" >&2
elif ! grep -qw avx2 /proc/cpuinfo; then
  echo "$me: warning: $zen uses AVX2, which this CPU lacks: the peer builds but cannot run here (copysynth leaves it out)" >&2
fi
if grep -q "Compiler doesn't support arch specific flag for $zen" "$work/cfg.log"; then
  flags="$([ "$n" -ge 4 ] && echo "-mavx512f -mavx512bw -mavx512vbmi" || echo "-mavx2") -mbmi -mbmi2 -mlzcnt (AOCL's fallback: gcc $(gcc -dumpfullversion) has no -march=znver$n)"
else
  flags="-march=znver$n"
fi
echo "$me: building the $zen variant ($flags)" >&2
jobs=$(nproc 2>/dev/null || echo 2)
make -C "$work/b" -j"$jobs" aocl-libmem_static >"$work/build.log" 2>&1 ||
  { tail -20 "$work/build.log" >&2; die "building AOCL-LibMem failed (the end of its log above)"; }

# --- the peer archive: renamed entry points, no weak aliases --------------------------------
mkdir "$work/o"
(cd "$work/o" && ar x "$work/b/src/libaocl-libmem.a")
cp -R "$work/o" "$work/so"  # untouched objects for the shared library
renames=()
for op in memcpy memmove memset; do
  sym=__${op}_$zen
  nm "$work/o"/*.o 2>/dev/null | awk -v s="$sym" '$2 == "T" && $3 == s {f = 1} END {exit !f}' ||
    die "the build has no $sym: is $from AOCL-LibMem 5.x? (its entry points are named __<function>_zen<N>)"
  renames+=(--redefine-sym "$sym=aocl_$op")
done
for o in "$work/o"/*.o; do
  weak=()
  while read -r s; do weak+=(-L "$s"); done < <(nm "$o" | awk '$2 == "W" {print $3}')
  objcopy "${weak[@]}" "${renames[@]}" "$o"
done
build_line="AOCL-LibMem ${version:-?} $zen variant (__memcpy_$zen, __memmove_$zen, __memset_$zen, picked by $picked_by), gcc $(gcc -dumpfullversion) -O3 $flags, no LTO${caches:+, cache sizes $caches (--cache-sizes) instead of those CPUID gives}${cpuid_note:+; $cpuid_note}"
# What copysynth reads about the build (tuner/src/peers.cpp, by weak references): the Zen
# generation, the line above, and the thresholds AOCL's constructor computed on this CPU (the
# globals of its src/threshold.c; a stub returning 0 where a version has other names).
thresholds=(__nt_start_threshold __repmov_start_threshold __repmov_stop_threshold __repstore_start_threshold __repstore_stop_threshold)
have_thresholds=1
for t in "${thresholds[@]}"; do
  nm "$work/o/libmem.c.o" 2>/dev/null | awk -v s="$t" '$2 == "D" && $3 == s {f = 1} END {exit !f}' || have_thresholds=0
done
{
  echo "/* Written by copysynth's tools/build-aocl-peer.sh: which AOCL-LibMem build this archive holds. */"
  echo "#include <stdint.h>"
  echo "const int copysynth_aocl_peer_zen = $n;"
  echo "const char copysynth_aocl_peer_build[] = \"$build_line\";"
  if [ "$have_thresholds" = 1 ]; then
    for t in "${thresholds[@]}"; do echo "extern uint64_t $t;"; done
    echo "int copysynth_aocl_peer_thresholds(uint64_t t[5]) {"
    i=0
    for t in "${thresholds[@]}"; do echo "  t[$i] = $t;"; i=$((i + 1)); done
    echo "  return 1;"
    echo "}"
  else
    echo "int copysynth_aocl_peer_thresholds(uint64_t t[5]) { (void)t; return 0; }"
  fi
} >"$work/peer_info.c"
gcc -O2 -fPIC -c "$work/peer_info.c" -o "$work/o/copysynth_aocl_peer_info.o"
rm -f "$out/libaocl-peer.a"
ar rcs "$out/libaocl-peer.a" "$work/o"/*.o
[ "$(nm "$out/libaocl-peer.a" | awk '$2 == "W"' | wc -l)" -eq 0 ] || die "weak aliases are left in libaocl-peer.a (objcopy -L did not take)"
for op in memcpy memmove memset; do
  nm "$out/libaocl-peer.a" | awk -v s="aocl_$op" '$2 == "T" && $3 == s {f = 1} END {exit !f}' || die "libaocl-peer.a has no aocl_$op after renaming"
done

# --- the shared library for LD_PRELOAD ------------------------------------------------------
# AOCL's own libaocl-libmem.so also replaces strlen, strcmp and 11 more; this one exports what
# libcopysynth-preload.so exports (api/src/preload.map), so the two change the same calls. The
# __*_chk forms (glibc's _FORTIFY_SOURCE entry points) check the length and call AOCL's routine.
cat >"$work/chk.c" <<'EOF'
/* Written by copysynth's tools/build-aocl-peer.sh: the fortified entry points on top of
   AOCL-LibMem's memcpy/memmove/memset (glibc's contract: abort when dstlen < n). */
#include <stddef.h>
extern void *memcpy(void *, const void *, size_t);
extern void *memmove(void *, const void *, size_t);
extern void *memset(void *, int, size_t);
extern void __chk_fail(void) __attribute__((noreturn));
void *__memcpy_chk(void *d, const void *s, size_t n, size_t dlen) { if (dlen < n) __chk_fail(); return memcpy(d, s, n); }
void *__memmove_chk(void *d, const void *s, size_t n, size_t dlen) { if (dlen < n) __chk_fail(); return memmove(d, s, n); }
void *__memset_chk(void *d, int c, size_t n, size_t dlen) { if (dlen < n) __chk_fail(); return memset(d, c, n); }
EOF
cat >"$work/so.map" <<'EOF'
{ global: memcpy; memmove; memset; __memcpy_chk; __memmove_chk; __memset_chk; local: *; };
EOF
gcc -shared -O2 -fPIC -fno-builtin -o "$out/libaocl-libmem.so" "$work/chk.c" \
  "$work/so/memcpy_$zen.c.o" "$work/so/memmove_$zen.c.o" "$work/so/memset_$zen.c.o" "$work/so/libmem.c.o" \
  -Wl,--version-script="$work/so.map" -Wl,-Bsymbolic -Wl,--no-undefined -Wl,-z,now 2>"$work/so.log" ||
  { cat "$work/so.log" >&2; die "linking libaocl-libmem.so failed"; }
exported=$(nm -D --defined-only "$out/libaocl-libmem.so" | awk '{print $3}' | sort | tr '\n' ' ')
[ "$exported" = "__memcpy_chk __memmove_chk __memset_chk memcpy memmove memset " ] ||
  die "libaocl-libmem.so exports '$exported', not memcpy memmove memset and their __*_chk forms"

cat >"$out/README" <<EOF
$build_line
Built by copysynth's tools/build-aocl-peer.sh from $from on $(date -u +%Y-%m-%dT%H:%MZ), on: $(grep -m1 '^model name' /proc/cpuinfo | sed 's/.*: //') (family $(awk -F': ' '/^cpu family/ {print $2; exit}' /proc/cpuinfo) model $(awk -F': ' '/^model\t/ {print $2; exit}' /proc/cpuinfo)).
libaocl-peer.a       aocl_memcpy, aocl_memmove, aocl_memset (renamed; weak aliases local): link with -Wl,-u,aocl_memcpy
libaocl-libmem.so    memcpy, memmove, memset, __memcpy_chk, __memmove_chk, __memset_chk: LD_PRELOAD=$out/libaocl-libmem.so PROGRAM
AOCL-LibMem is BSD-3-Clause (its LICENSE.txt); these files are built from your copy of it and are not part of copysynth.
EOF
cat "$out/README"
