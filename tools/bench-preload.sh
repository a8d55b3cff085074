#!/usr/bin/env bash
# Times unmodified Debian programs under four configurations (a benchmark, not a test; the numbers
# go into docs/performance.md, "Real programs under the shim and the library"):
#   glibc  no preload: glibc's own memcpy, memmove and memset
#   shim   LD_PRELOAD=libcopysynth-preload.so with the wisdom (JIT, verified at start-up)
#   lib    LD_PRELOAD=libcopysynth-tuned.so, the ahead-of-time library `autotune --from WISDOM
#          --emit-lib` writes from the same wisdom (no work at start-up)
#   aocl   LD_PRELOAD=AMD AOCL-LibMem's shared library, when one is given or found (-a); left out,
#          and said so, otherwise
#   prof   with -P: the library written from another wisdom for one workload (a profile-tuned one:
#          docs/profile-guided.md); "-" for the workloads without one
#
# Usage: tools/bench-preload.sh [-n RUNS] [-w WISDOM] [-a AOCL_SO] [-P WORKLOAD=WISDOM]...
#                               [-x WORKLOADS] [BUILD_DIR]
#   BUILD_DIR  a Release build (default build/) with api/libcopysynth-preload.so and tools/autotune
#   -w WISDOM  the wisdom to use (default: tune memcpy, memmove and fill now, about 2 minutes)
#   -a AOCL_SO AOCL-LibMem as a shared library replacing memcpy, memmove and memset (default:
#              $COPYSYNTH_AOCL_SO, else build-aocl/libaocl-libmem.so when it exists)
#   -P W=FILE  the "prof" configuration of workload W: the library of wisdom FILE (repeatable)
#   -x LIST    the workloads to run, comma-separated (default sqlite,xz,zstd,gzip,perl,true)
#   -n RUNS    rounds (default 11); each round runs every configuration once, in a rotating order
#
# Workloads (tools/real-programs.sh says what each runs; each is also run once per configuration
# before timing, as a warm-up): sqlite, xz, zstd, gzip, perl, true.
# Prints per workload the median wall time of each configuration (ms) and, for each other
# configuration, the median over the rounds of its time / glibc's time in the same round (and
# lib / aocl); < 1 is faster. Needs zstd, xz-utils, sqlite3, gzip (tools/install-deps.sh --test)
# and binutils (the library is assembled and linked here).
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/real-programs.sh

runs=11
wisdom=
aocl=${COPYSYNTH_AOCL_SO:-}
workloads=sqlite,xz,zstd,gzip,perl,true
declare -A prof_wisdom=()
while getopts "n:w:a:P:x:h" opt; do
  case $opt in
    n) runs=$OPTARG ;;
    w) wisdom=$OPTARG ;;
    a) aocl=$OPTARG ;;
    P)
      case $OPTARG in
        sqlite=?* | xz=?* | zstd=?* | gzip=?* | perl=?* | true=?*) prof_wisdom[${OPTARG%%=*}]=$(realpath "${OPTARG#*=}") ;;
        *) echo "bench-preload: -P takes WORKLOAD=WISDOM with WORKLOAD one of sqlite, xz, zstd, gzip, perl, true" >&2; exit 2 ;;
      esac ;;
    x) workloads=$OPTARG ;;
    *) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
for w in ${workloads//,/ }; do
  case $w in
    sqlite | xz | zstd | gzip | perl | true) ;;
    *) echo "bench-preload: unknown workload '$w' in -x (sqlite, xz, zstd, gzip, perl, true)" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
build=${1:-build}
shim=$build/api/libcopysynth-preload.so
at=$build/tools/autotune
for f in "$shim" "$at"; do
  [ -e "$f" ] || { echo "bench-preload: $f not found: build first (cmake --build $build)" >&2; exit 2; }
done
for p in sqlite3 xz zstd gzip; do
  command -v "$p" >/dev/null || { echo "bench-preload: $p not installed (tools/install-deps.sh --test)" >&2; exit 2; }
done
if [ -z "$aocl" ] && [ -e build-aocl/libaocl-libmem.so ]; then aocl=build-aocl/libaocl-libmem.so; fi
if [ -n "$aocl" ] && [ ! -e "$aocl" ]; then
  echo "bench-preload: AOCL-LibMem library $aocl not found (-a or COPYSYNTH_AOCL_SO)" >&2
  exit 2
fi
[ -n "$aocl" ] && aocl=$(realpath "$aocl")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "$wisdom" ]; then
  echo "bench-preload: tuning memcpy, memmove and fill for this host (about 2 minutes)" >&2
  "$at" --op memcpy,memmove,fill --quiet --emit "$tmp/best.json" >/dev/null
  wisdom=$tmp/best.json
fi
wisdom=$(realpath "$wisdom")
COPYSYNTH_WISDOM=$wisdom COPYSYNTH_PRELOAD_STATS=1 LD_PRELOAD=$(realpath "$shim") /bin/true 2>"$tmp/installed"
if ! grep -q "installed from" "$tmp/installed"; then
  echo "bench-preload: the shim did not install the wisdom:" >&2
  cat "$tmp/installed" >&2
  exit 1
fi
sed 's/^copysynth-preload\[[0-9]*\]: /shim: /' "$tmp/installed"
if ! "$at" -q --from "$wisdom" --emit-lib "$tmp/lib" 2>"$tmp/lib.err"; then
  echo "bench-preload: autotune --emit-lib failed:" >&2
  cat "$tmp/lib.err" >&2
  exit 1
fi
lib=$tmp/lib/libcopysynth-tuned.so
sed -n 's/^Routines.*//; s/^  \(__copysynth_tuned_[a-z]*\)  \(.*\)/lib: \1 = \2/p' "$tmp/lib/README"

# -P: one library per profile-tuned wisdom.
declare -A prof_lib=()
for w in "${!prof_wisdom[@]}"; do
  # (--show's whole output first: grep -q stops reading at the first match, and autotune, still
  # writing, would die of SIGPIPE, which pipefail turns into "no entry" at random.)
  "$at" --show "${prof_wisdom[$w]}" >"$tmp/show.txt"
  if ! grep -q '^host\[[0-9]*\]\.entries=[1-9]' "$tmp/show.txt"; then
    # `autotune --app` left every operation to the system routines (its verdicts are in the file):
    # "prof" is then the program as it is, with no preload.
    prof_lib[$w]=none
    echo "prof ($w): no entry left in ${prof_wisdom[$w]} (the judge kept the system routines): no preload"
    continue
  fi
  if ! "$at" -q --from "${prof_wisdom[$w]}" --emit-lib "$tmp/prof-$w" 2>"$tmp/lib.err"; then
    echo "bench-preload: autotune --from ${prof_wisdom[$w]} --emit-lib failed:" >&2
    cat "$tmp/lib.err" >&2
    exit 1
  fi
  prof_lib[$w]=$tmp/prof-$w/libcopysynth-tuned.so
  sed -n "s/^  \(__copysynth_tuned_[a-z]*\)  \(.*\)/prof ($w): \1 = \2/p" "$tmp/prof-$w/README"
done

configs=(glibc shim lib)
declare -A pre=([glibc]="" [shim]="LD_PRELOAD=$(realpath "$shim") COPYSYNTH_WISDOM=$wisdom" [lib]="LD_PRELOAD=$lib")
if [ -n "$aocl" ]; then
  configs+=(aocl)
  pre[aocl]="LD_PRELOAD=$aocl"
  echo "aocl: $aocl"
  # tools/build-aocl-peer.sh writes a README beside the library; on a CPU whose CPUID leaf
  # 0x8000001D is empty that build streams from 2 KiB on (README.md, "The AOCL-LibMem peer").
  if grep -qs 'reports no caches' "$(dirname "$aocl")/README"; then
    echo "aocl: warning: built without --cache-sizes on a CPU whose CPUID leaf 0x8000001D is empty ($(dirname "$aocl")/README): a weaker AOCL-LibMem than on hardware" >&2
  fi
else
  echo "aocl: no AOCL-LibMem shared library given (-a FILE, COPYSYNTH_AOCL_SO) or at build-aocl/libaocl-libmem.so; left out"
fi

[ ${#prof_lib[@]} -gt 0 ] && configs+=(prof)

make_program_inputs "$tmp" "$at"

# run WORKLOAD CONFIG: one run (every configuration through env, alike); stderr into a file per
# configuration, reported at the end (glibc's loader warns there about IFUNCs of a preloaded
# library, as AOCL-LibMem's are).
run() {  # the shell without the preload; it execs the program with it (env VAR=... PROGRAM)
  sh -c "exec env ${pre[$2]} $(program_command "$1" "$tmp")" 2>>"$tmp/stderr.$2"
}
now_ns() { date +%s%N; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '\n%-7s %4s' workload runs
for c in "${configs[@]}"; do printf ' %9s' "$c ms"; done
for c in "${configs[@]:1}"; do printf ' %11s' "$c/glibc"; done
[ -n "$aocl" ] && printf ' %9s' "lib/aocl"
printf '\n'
for w in ${workloads//,/ }; do
  # This workload's configurations: "prof" only where -P named a wisdom for it.
  wc=()
  for c in "${configs[@]}"; do
    if [ "$c" = prof ]; then
      [ -n "${prof_lib[$w]:-}" ] || continue
      if [ "${prof_lib[$w]}" = none ]; then pre[prof]=; else pre[prof]="LD_PRELOAD=${prof_lib[$w]}"; fi
    fi
    wc+=("$c")
  done
  k=${#wc[@]}
  for c in "${wc[@]}"; do
    run "$w" "$c"
    : >"$tmp/t.$c"
  done
  : >"$tmp/r.lib_aocl"
  for ((i = 0; i < runs; i++)); do
    declare -A t=()
    for ((j = 0; j < k; j++)); do  # rotate the order each round against drift
      c=${wc[$(((i + j) % k))]}
      t0=$(now_ns)
      run "$w" "$c"
      t[$c]=$(($(now_ns) - t0))
      echo "${t[$c]}" >>"$tmp/t.$c"
    done
    for c in "${wc[@]:1}"; do
      awk -v a="${t[glibc]}" -v b="${t[$c]}" 'BEGIN { printf "%.6f\n", b / a }' >>"$tmp/r.$c"
    done
    [ -n "$aocl" ] && awk -v a="${t[aocl]}" -v b="${t[lib]}" 'BEGIN { printf "%.6f\n", b / a }' >>"$tmp/r.lib_aocl"
    unset t
  done
  printf '%-8s %4d' "$w" "$runs"
  for c in "${configs[@]}"; do
    if [ -s "$tmp/t.$c" ]; then awk -v v="$(median <"$tmp/t.$c")" 'BEGIN { printf " %9.2f", v / 1e6 }'; else printf ' %9s' -; fi
  done
  for c in "${configs[@]:1}"; do
    if [ -s "$tmp/r.$c" ]; then awk -v v="$(median <"$tmp/r.$c")" 'BEGIN { printf " %11.3f", v }'; else printf ' %11s' -; fi
  done
  [ -n "$aocl" ] && awk -v v="$(median <"$tmp/r.lib_aocl")" 'BEGIN { printf " %9.3f", v }'
  printf '\n'
  rm -f "$tmp"/r.* "$tmp"/t.*
done
echo
for c in "${configs[@]}"; do
  if [ -s "$tmp/stderr.$c" ]; then
    echo "$c: $(wc -l <"$tmp/stderr.$c") lines on stderr, e.g. $(sort "$tmp/stderr.$c" | uniq -c | sort -rn | head -1 | sed 's/^ *//')"
  fi
done
echo "Ratios: the median over the rounds of each run's time / glibc's (lib/aocl: the library's / AOCL's)"
echo "in the same round; < 1 is faster. The shim's start-up cost is in every one of its runs (see 'true')."
