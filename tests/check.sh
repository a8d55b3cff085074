# copysynth tests — helpers for the shell tests (sourced): check, and the failure count.
fails=0
check() {  # check DESCRIPTION COMMAND... : the command must succeed
  local what=$1
  shift
  if "$@"; then echo "ok   - $what"; else echo "FAIL - $what"; fails=$((fails + 1)); fi
}
