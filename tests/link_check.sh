#!/usr/bin/env bash
# The embedding API (libcopysynth.a, copysynth::copysynth) and the LD_PRELOAD shim verify and
# install routines with verify/ alone; neither may link the tuner (search, timing, reports,
# peers). Fails when:
#   1. copysynth_tuner (or copysynth_api_tune) is in the link closure CMake computed for
#      copysynth::copysynth or for the shim (tests/link_closure.cmake: LINK_LIBRARIES and the
#      link interfaces under them);
#   2. the shim defines a symbol that libcopysynth_tuner.a defines (its strong global symbols:
#      functions and data of tuner.cpp, timing.cpp, report.cpp, ...), i.e. a tuner object was
#      linked into it, or it names the search (copysynth::(anonymous namespace)::Search) or
#      measure_table;
#   3. an object of libcopysynth.a refers to such a symbol (the API would need the tuner to link).
#
# Usage: link_check.sh SHIM LIBCOPYSYNTH LIBTUNER "API_CLOSURE" "SHIM_CLOSURE"
set -u
shim=$1 api=$2 tuner=$3 api_closure=$4 shim_closure=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/check.sh
. "$(dirname "$0")/check.sh"

echo "copysynth::copysynth links: $api_closure"
echo "the shim links:             $shim_closure"
for pair in "copysynth::copysynth|$api_closure" "the shim|$shim_closure"; do
  who=${pair%%|*} closure=${pair#*|}
  check "$who does not link copysynth_tuner" bash -c "! tr ';' '\n' <<<'$closure' | grep -qx 'copysynth_tuner'"
  check "$who does not link copysynth_api_tune" bash -c "! tr ';' '\n' <<<'$closure' | grep -qx 'copysynth_api_tune'"
  check "$who links copysynth_verify" bash -c "tr ';' '\n' <<<'$closure' | grep -qx 'copysynth_verify'"
done

# Strong global definitions of the tuner archive (T text, D data, B bss, R read-only data; weak
# and inline definitions, which other objects may define as well, are left out).
nm --defined-only -g "$tuner" 2>/dev/null | awk 'NF == 3 && $2 ~ /^[TDBR]$/ { print $3 }' | sort -u >"$tmp/tuner"
check "libcopysynth_tuner.a defines the search (copysynth::tune; $(wc -l <"$tmp/tuner") strong symbols)" \
  bash -c "nm -C --defined-only -g '$tuner' | grep -q ' copysynth::tune('"
nm --defined-only "$shim" | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/shim"
comm -12 "$tmp/tuner" "$tmp/shim" >"$tmp/shim-tuner"
check "the shim defines no symbol of libcopysynth_tuner.a ($(wc -l <"$tmp/shim-tuner") found)" test ! -s "$tmp/shim-tuner"
head -5 "$tmp/shim-tuner" | c++filt
nm -C "$shim" | grep -E 'anonymous namespace\)::Search::|measure_table' >"$tmp/shim-search"
check "the shim holds neither the search nor measure_table ($(wc -l <"$tmp/shim-search") symbols)" test ! -s "$tmp/shim-search"
head -5 "$tmp/shim-search"
nm -u "$api" 2>/dev/null | awk '{ print $NF }' | sort -u >"$tmp/api-undef"
comm -12 "$tmp/tuner" "$tmp/api-undef" >"$tmp/api-tuner"
check "libcopysynth.a refers to no symbol of libcopysynth_tuner.a ($(wc -l <"$tmp/api-tuner") found)" test ! -s "$tmp/api-tuner"
head -5 "$tmp/api-tuner" | c++filt

echo "$fails failure(s)"
test $fails -eq 0
