# copysynth tests — helpers for the shell tests (sourced): check, the failure count, and skips
# that are seen: a test that cannot run here says "SKIP: reason" and exits 77, which ctest reports
# as skipped (SKIP_RETURN_CODE 77 in tests/CMakeLists.txt), never as passed; a check that cannot
# run here says "SKIP (part): reason".
fails=0
check() {  # check DESCRIPTION COMMAND... : the command must succeed
  local what=$1
  shift
  if "$@"; then echo "ok   - $what"; else echo "FAIL - $what"; fails=$((fails + 1)); fi
}
skip_test() {  # skip_test REASON: the whole test cannot run here
  echo "SKIP: $*"
  exit 77
}
skip_part() {  # skip_part REASON: one check cannot run here; the others still count
  echo "SKIP (part): $*"
}
