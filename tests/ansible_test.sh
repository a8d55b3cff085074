#!/usr/bin/env bash
# examples/ansible/copysynth-fleet.yml against this machine: an inventory of two names for it
# (host-a, host-b; connection local), each with its own prefix, wisdom and configuration
# directories in a temporary directory, so nothing outside it changes. host-b tunes with
# --isa avx2, so the merged fleet holds two host documents (two signatures). Checks that both
# installed, tuned, were fetched and merged, that the fleet file and the deployment lines are in
# place, and that the shim installs routines from the deployed file.
#
# Usage: ansible_test.sh BUILD_DIR SOURCE_DIR
# Skipped (ctest SKIP_RETURN_CODE 77, with the reason printed) where ansible-playbook is absent.
set -u
build=$1 src=$2
# shellcheck source=tests/check.sh
. "$(dirname "$0")/check.sh"
command -v ansible-playbook >/dev/null 2>&1 ||
  skip_test "ansible-playbook is not installed (Debian ansible-core: tools/install-deps.sh --test)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# What the controller ships: a `cmake --install` tree as a tarball.
cmake --install "$build" --prefix "$tmp/stage" >"$tmp/install.log" 2>&1
check "cmake --install into a staging prefix" test $? -eq 0
tar -C "$tmp/stage" -czf "$tmp/copysynth.tar.gz" .

flags=""
grep -q avx2 /proc/cpuinfo && flags="--isa avx2"
# The hosts and their tuning in the inventory (host variables: they must win over the playbook's
# defaults); every path as an extra variable (-e @FILE: the highest precedence), so whatever the
# playbook's defaults say, nothing outside $tmp is written.
cat >"$tmp/inventory.ini" <<INV
[copysynth]
host-a copysynth_tune_args="--op memcpy --quick --budget 1 --keep-slower"
host-b copysynth_tune_args="--op memcpy --quick --budget 1 --keep-slower $flags"

[copysynth:vars]
ansible_connection=local
ansible_python_interpreter=$(command -v python3)
INV
cat >"$tmp/paths.yml" <<VARS
copysynth_prefix_archive: "$tmp/copysynth.tar.gz"
copysynth_prefix: "$tmp/{{ inventory_hostname }}/prefix"
copysynth_var_dir: "$tmp/{{ inventory_hostname }}/var"
copysynth_etc_dir: "$tmp/{{ inventory_hostname }}/etc"
copysynth_environment_file: "$tmp/{{ inventory_hostname }}/etc/environment"
copysynth_ld_so_preload: "$tmp/{{ inventory_hostname }}/etc/ld.so.preload"
copysynth_fetch_dir: "$tmp/fetched"
copysynth_deploy: ld.so.preload
VARS
if [ "$(id -u)" -ne 0 ]; then
  # The apt task needs root; the package it names is installed by tools/install-deps.sh.
  echo "copysynth_install_packages: false" >>"$tmp/paths.yml"
fi
mkdir -p "$tmp/fetched"

# One fork: the two "hosts" are this machine, and tuning both at once would time each other.
ANSIBLE_NOCOLOR=1 ANSIBLE_PIPELINING=1 ANSIBLE_FORKS=1 ANSIBLE_LOCAL_TEMP="$tmp/ansible-local" ANSIBLE_REMOTE_TEMP="$tmp/ansible-remote" \
  ANSIBLE_HOME="$tmp/ansible-home" ANSIBLE_RETRY_FILES_ENABLED=0 \
  ansible-playbook -i "$tmp/inventory.ini" "$src/examples/ansible/copysynth-fleet.yml" -e @"$tmp/paths.yml" \
  >"$tmp/play.log" 2>&1
rc=$?
echo "ansible-playbook took ${SECONDS} s"
check "ansible-playbook exits 0 (rc=$rc)" test $rc -eq 0
[ $rc -eq 0 ] || tail -60 "$tmp/play.log"
check "the recap shows both hosts without failures" \
  bash -c "grep -Eq '^host-a +: ok=[0-9]+ +changed=[0-9]+ +unreachable=0 +failed=0' '$tmp/play.log' && grep -Eq '^host-b +: ok=[0-9]+ +changed=[0-9]+ +unreachable=0 +failed=0' '$tmp/play.log'"
for h in host-a host-b; do
  check "$h: autotune installed in its prefix" test -x "$tmp/$h/prefix/bin/autotune"
  check "$h: its wisdom fetched to the controller" test -s "$tmp/fetched/$h.json"
  check "$h: the fleet file deployed" cmp -s "$tmp/fetched/fleet.json" "$tmp/$h/etc/fleet.json"
  check "$h: COPYSYNTH_WISDOM in its environment file" \
    grep -qx "COPYSYNTH_WISDOM=$tmp/$h/etc/fleet.json" "$tmp/$h/etc/environment"
  check "$h: the shim in its ld.so.preload" grep -qx "$tmp/$h/prefix/lib/libcopysynth-preload.so" "$tmp/$h/etc/ld.so.preload"
  check "$h: copysynth.env names the wisdom and the shim" \
    bash -c "grep -qx 'COPYSYNTH_WISDOM=$tmp/$h/etc/fleet.json' '$tmp/$h/etc/copysynth.env' && grep -qx 'LD_PRELOAD=$tmp/$h/prefix/lib/libcopysynth-preload.so' '$tmp/$h/etc/copysynth.env'"
done
"$tmp/host-a/prefix/bin/autotune" --show "$tmp/fetched/fleet.json" >"$tmp/show" 2>&1
check "the merged file is a fleet (schema 2)" grep -qx 'wisdom.schema=2' "$tmp/show"
hosts=$(sed -n 's/^wisdom\.hosts=//p' "$tmp/show")
if [ -n "$flags" ]; then
  check "the fleet holds both signatures (host-b tuned with $flags): $hosts host documents" test "$hosts" -eq 2
else
  check "the fleet holds this machine's signature: $hosts host document(s)" test "$hosts" -ge 1
fi
check "this CPU finds its entry in the fleet" grep -q '^this_cpu\.host=[0-9]' "$tmp/show"
# The deployed lines as a program meets them.
(set -a; . "$tmp/host-b/etc/copysynth.env"; set +a; COPYSYNTH_PRELOAD_STATS=1 cat "$tmp/host-b/etc/fleet.json" >/dev/null 2>"$tmp/shim.err")
check "a program under the deployed shim and fleet installs copysynth's memcpy" grep -q "installed from" "$tmp/shim.err"
echo "$fails failure(s)"
test $fails -eq 0
