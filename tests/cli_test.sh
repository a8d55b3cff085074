#!/usr/bin/env bash
# End-to-end test of the autotune command line: a short tune that writes wisdom, loading it back,
# and the errors a user gets for bad input. Usage: cli_test.sh PATH/TO/autotune
set -u
at=$1
tmp=$(mktemp -d)
trap 'chattr -a "$tmp/ao" ${ao:+"$ao/d"} 2>/dev/null; chattr -i "$tmp/imm.S" 2>/dev/null; umount "$tmp/full" 2>/dev/null; rm -rf "$tmp" ${ao:+"$ao"}' EXIT
fails=0
check() {  # check DESCRIPTION COMMAND... : the command must succeed
  local what=$1; shift
  if "$@"; then echo "ok   - $what"; else echo "FAIL - $what"; fails=$((fails + 1)); fi
}

# --help documents every option.
"$at" --help >"$tmp/help" 2>&1
for opt in --emit --from --op --budget --seed --quick --isa --workload --show-plan --report --versus --svg --list-params --quiet --merge --show --keep-slower --min-speedup; do
  check "--help mentions $opt" grep -q -- "$opt" "$tmp/help"
done
check "--list-params lists every CopyParams field" bash -c "'$at' --list-params | grep -c -E '^  (operation|vector_width|unroll|prefetch_distance|prefetch_hint|prefetch_min|nt_threshold|rep_threshold|rep_stop|rep_resume|rep_chunk|rep_chunk_stop|rep_unit|rep_align_dst|rep_aligned_only|rep_aligned_from|rep_aligned_mutual|alias_window|rep_alias_window|rep_alias_loop|nt_pages|nt_width|loop_pipeline|shift_realign|loop_align|nop_form|register_bank|head_tail_width|head_tail_max|mask_max|mask_shift)' | grep -qx 31"

# A short tune writes wisdom and prints the table on stdout, progress on stderr.
"$at" --quick --budget 2 --keep-slower --seed 7 --emit "$tmp/best.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "short tune exits 0 (rc=$rc)" test $rc -eq 0
check "wisdom file written" test -s "$tmp/best.json"
check "table header on stdout" grep -q "Len  Src/Dst align  system memcpy GB/s  tuned GB/s  speedup" "$tmp/out"
check "77 table rows (the seeds' matrix)" bash -c "grep -cE '^ +[0-9]+M? +[0-9]+/[0-9]+ ' '$tmp/out' | grep -qx 77"
check "progress on stderr" grep -q "final:" "$tmp/err"
check "nothing but the table on stdout" bash -c "! grep -q 'kernel:' '$tmp/out'"
check "wisdom names schema, CPU and params" bash -c "grep -q '\"schema\": 1' '$tmp/best.json' && grep -q '\"signature\"' '$tmp/best.json' && grep -q '\"unroll\"' '$tmp/best.json'"

# A winner below --min-speedup is measured again in a process of its own (this program, --from
# a temporary file) and not written when that one is below the bar too: both ratios said.
mkdir "$tmp/td"
TMPDIR="$tmp/td" "$at" --quick --budget 1 --op clear_page --min-speedup 100 --emit "$tmp/never.json" >/dev/null 2>"$tmp/ms_err"; rc=$?
check "--min-speedup 100: exits 0 (rc=$rc)" test $rc -eq 0
check "--min-speedup 100: measured again in a second process, then refused" \
  grep -qE 'clear_page winner is [0-9.]+x the speed of the .* \([0-9.]+x in a second process\), below 100.000x: not written' "$tmp/ms_err"
check "--min-speedup 100: nothing written" bash -c "grep -q 'nothing written' '$tmp/ms_err' && test ! -e '$tmp/never.json'"
check "--min-speedup 100: the second process's temporary directory is removed" \
  bash -c "test -z \"\$(ls -A '$tmp/td')\""
# ... on the same workload: a .csv distribution is read again from its path (its stem names no
# shipped distribution), not looked up by name.
cp "$(dirname "$0")/../data/size-distributions/MemcpyGoogleQ.csv" "$tmp/mydist.csv"
"$at" --quick --budget 1 --workload "$tmp/mydist.csv" --min-speedup 100 --emit "$tmp/never.json" >/dev/null 2>"$tmp/ms_csv"; rc=$?
check "--min-speedup 100 on a .csv workload: the second process measures it (rc=$rc)" bash -c "test $rc -eq 0 && \
  grep -qE 'memcpy winner is [0-9.]+x .* \([0-9.]+x in a second process\), below 100.000x: not written' '$tmp/ms_csv'"
check "a .csv workload is shown by its file name, .csv kept (not read as a shipped distribution)" \
  grep -q 'workload mydist.csv:' "$tmp/ms_csv"
# A .csv workload named relative to the current directory: the wisdom keeps the file's absolute
# path, and --from in another directory measures on it again (by its stem it looked for a shipped
# distribution of that name, and failed in every directory).
(cd "$tmp" && "$at" -q --quick --budget 1 --op fill --workload ./mydist.csv --keep-slower --emit csvw.json >/dev/null 2>&1)
check "--workload ./FILE.csv: the wisdom keeps its absolute path" grep -q "\"workload\": \"$(cd "$tmp" && pwd -P)/mydist.csv\"" "$tmp/csvw.json"
(cd / && "$at" -q --from "$tmp/csvw.json" >"$tmp/csvw.out" 2>"$tmp/csvw.err"); rc=$?
check "... --from it in another directory measures the same distribution (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -qE '^mydist\.csv +[0-9]+ ' '$tmp/csvw.out'"
# ... in TMPDIR: where none can be made there, the winner is refused and the message says why.
TMPDIR="$tmp/missing" "$at" --quick --budget 1 --op clear_page --min-speedup 100 --emit "$tmp/never.json" >/dev/null 2>"$tmp/ms_err3"; rc=$?
check "--min-speedup 100, TMPDIR missing: refused, saying why (rc=$rc)" bash -c "test $rc -eq 0 && grep -q \
  'not measured in a second process: cannot make a temporary directory $tmp/missing/copysynth-remeasure' '$tmp/ms_err3' \
  && test ! -e '$tmp/never.json'"
"$at" --quick --min-speedup 1.0 --keep-slower --emit "$tmp/never.json" >/dev/null 2>&1; rc=$?
check "--min-speedup with --keep-slower refused (rc=$rc)" test $rc -eq 1
"$at" --quick --min-speedup 1.5x --emit "$tmp/never.json" >/dev/null 2>"$tmp/ms_err2"; rc=$?
check "--min-speedup 1.5x refused as a bad command line (rc=$rc)" bash -c "test $rc -eq 1 && grep -q -- '--min-speedup takes a number' '$tmp/ms_err2'"
"$at" --quick --min-speedup 1.0 >/dev/null 2>&1; rc=$?
check "--min-speedup without --emit refused (rc=$rc)" test $rc -eq 1

# --from loads it back, re-verifies and re-measures.
"$at" --from "$tmp/best.json" >"$tmp/out2" 2>"$tmp/err2"
rc=$?
check "--from exits 0 (rc=$rc)" test $rc -eq 0
check "--from prints the table" grep -q "speedup" "$tmp/out2"
check "--from says the code is identical" grep -q "identical to the tuned one" "$tmp/err2"

# --report against the peers, with another wisdom file's routine beside them (--versus).
cp "$tmp/best.json" "$tmp/second.json"
"$at" --from "$tmp/best.json" --report --versus "$tmp/second.json" >"$tmp/rep" 2>"$tmp/rep_err"
rc=$?
check "--report --versus exits 0 (rc=$rc)" test $rc -eq 0
check "--report has the seeds' matrix with a second.json column" grep -qE "^ +Len +Src/Dst +glibc .* second.json +tuned" "$tmp/rep"
check "--report has the misaligned-destination matrix" grep -q "vs aligned" "$tmp/rep"
check "--report says which targets are met" bash -c "grep -q '^performance targets' '$tmp/rep' && grep -cE '^  (met|MISSED)  ' '$tmp/rep' | grep -qxE '[5-9]'"
"$at" --from "$tmp/best.json" --versus "$tmp/second.json" >/dev/null 2>&1; rc=$?
check "--versus without --report refused (rc=$rc)" test $rc -eq 1

# More operations in the same file: fill and clear_page are added, the memcpy entry is kept.
"$at" --quick --budget 2 --keep-slower --op fill,clear_page --emit "$tmp/best.json" >"$tmp/out3" 2>"$tmp/err3"
rc=$?
check "--op fill,clear_page exits 0 (rc=$rc)" test $rc -eq 0
check "a table per operation" bash -c "grep -q '== fill ==' '$tmp/out3' && grep -q '== clear_page ==' '$tmp/out3'"
check "fill is compared with memset" grep -q "system memset GB/s" "$tmp/out3"
check "the existing memcpy entry is kept" grep -q "kept the memcpy entry" "$tmp/err3"
check "wisdom holds three entries" bash -c "grep -c '\"workload\": \"seeds\"' '$tmp/best.json' | grep -qx 3"
# --versus a file without this operation's entry (a tuning that kept the system memset): said,
# and the report made without that column (it used to stop there, after the other reports).
"$at" --from "$tmp/best.json" --op fill --report --workload MemcpyGoogleA --versus "$tmp/second.json" >"$tmp/rep_fill" 2>"$tmp/rep_fill_err"
rc=$?
check "--report --versus a file without fill exits 0 (rc=$rc)" test $rc -eq 0
check "--versus without a fill entry is said" grep -q "second.json has no fill entry" "$tmp/rep_fill_err"
check "the fill report is made without that column" bash -c "grep -q '^MemcpyGoogleA ' '$tmp/rep_fill' && ! grep -q 'second.json' '$tmp/rep_fill'"
# A routine that cannot be rebuilt (here the code hash of whichever of memcpy and fill comes later
# in the file no longer matches, as after an emitter change) stops the run before anything is
# measured, in --from's file and in --versus's: it used to stop after the earlier one's report.
late=$(grep -oE '"operation": "(memcpy|fill)"' "$tmp/best.json" | tail -1 | grep -oE '(memcpy|fill)"$' | tr -d '"')
sed '/"code_fnv1a64"/{N;s/"code_fnv1a64": "[0-9a-f]*",\(\n *"operation": "'"$late"'"\)/"code_fnv1a64": "0000000000000000",\1/}' \
  "$tmp/best.json" >"$tmp/stale.json"
check "the stale copy differs only in $late's hash" bash -c "diff '$tmp/best.json' '$tmp/stale.json' | grep -c '^[<>]' | grep -qx 2"
"$at" --from "$tmp/stale.json" --op memcpy,fill --report --workload MemcpyGoogleA >"$tmp/rep_stale" 2>"$tmp/rep_stale_err"
rc=$?
check "--from a stale $late entry fails before any report (rc=$rc)" bash -c "test $rc -eq 2 && ! test -s '$tmp/rep_stale' && grep -q 'rebuilt $late routine' '$tmp/rep_stale_err'"
"$at" --from "$tmp/best.json" --op memcpy,fill --report --workload MemcpyGoogleA --versus "$tmp/stale.json" >"$tmp/rep_stale" 2>"$tmp/rep_stale_err"
rc=$?
check "--versus a stale $late entry fails before any report (rc=$rc)" bash -c "test $rc -eq 2 && ! test -s '$tmp/rep_stale' && grep -q -- '--versus .*stale.json: .*rebuilt $late routine' '$tmp/rep_stale_err'"
check "--versus's stale-entry advice does not tell the user to overwrite the file compared against" bash -c "grep -q -- 'tune that one again into a file of its own' '$tmp/rep_stale_err' && ! grep -q 're-run autotune --emit on this host' '$tmp/rep_stale_err'"
"$at" --from "$tmp/best.json" --op fill >"$tmp/out4" 2>/dev/null
rc=$?
check "--from --op fill re-measures only fill (rc=$rc)" bash -c "test $rc -eq 0 && grep -q 'system memset' '$tmp/out4' && ! grep -q 'system memcpy' '$tmp/out4'"
printf 'not json' >"$tmp/garbage.json"
"$at" --quick --budget 1 --keep-slower --op clear_page --emit "$tmp/garbage.json" >/dev/null 2>"$tmp/err5"
check "an unmergeable file is moved aside, not lost" bash -c "test -s '$tmp/garbage.json.bak' && grep -q 'moved the existing' '$tmp/err5' && grep -q clear_page '$tmp/garbage.json'"
check "... with the real reason" grep -q "garbage.json.bak: .*not valid JSON" "$tmp/err5"
printf 'second text' >"$tmp/garbage.json"
"$at" --quick --budget 1 --keep-slower --op clear_page --emit "$tmp/garbage.json" >/dev/null 2>"$tmp/err5b"
check "a second unmergeable file gets its own backup; the first one stays" bash -c "grep -qx 'not json' '$tmp/garbage.json.bak' && grep -qx 'second text' '$tmp/garbage.json.bak.1'"
# --from ... --emit keeps what the target file holds for other operations.
cp "$tmp/best.json" "$tmp/three.json"
"$at" -q --from "$tmp/best.json" --op memcpy --emit "$tmp/three.json" >/dev/null 2>&1; rc=$?
check "--from --emit into a file of this CPU keeps its other entries (rc=$rc)" bash -c "test $rc -eq 0 && grep -c '\"workload\": \"seeds\"' '$tmp/three.json' | grep -qx 3"
mkdir -p "$tmp/adir.json"
"$at" --quick --budget 1 --keep-slower --op clear_page --emit "$tmp/adir.json" >/dev/null 2>"$tmp/e"; rc=$?
check "--emit onto a directory: refused before any work, nothing moved (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'is a directory' '$tmp/e' && test -d '$tmp/adir.json' && ! test -e '$tmp/adir.json.bak'"
"$at" --quick --budget 1 --keep-slower --op clear_page --emit "$tmp/no/such/dir/x.json" >/dev/null 2>"$tmp/e"; rc=$?
check "--emit into a missing directory: refused before any work (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'does not exist' '$tmp/e' && ! grep -q 'kernel:' '$tmp/e'"

# Bad input: clear error, exit status 2.
expect_error() {  # expect_error DESCRIPTION PATTERN FILE
  "$at" --from "$3" >/dev/null 2>"$tmp/e"
  local rc=$?
  check "$1: exit 2 (rc=$rc)" test $rc -eq 2
  check "$1: message matches '$2'" grep -q -- "$2" "$tmp/e"
}
sed 's/"signature": "[^"]*"/"signature": "GenuineIntel-6-85:sse2,avx"/' "$tmp/best.json" >"$tmp/other_cpu.json"
expect_error "another CPU" "tuned on CPU" "$tmp/other_cpu.json"
head -c 200 "$tmp/best.json" >"$tmp/truncated.json"
expect_error "truncated file" "not valid JSON" "$tmp/truncated.json"
sed 's/"schema": 1/"schema": 99/' "$tmp/best.json" >"$tmp/schema.json"
expect_error "other schema" "schema 99" "$tmp/schema.json"
sed 's/"unroll": [0-9]*/"unroll": 3/' "$tmp/best.json" >"$tmp/unroll.json"
expect_error "unroll out of range" "unroll = 3" "$tmp/unroll.json"
sed 's/"unroll": [0-9]*/"unroll": "four"/' "$tmp/best.json" >"$tmp/type.json"
expect_error "unroll of the wrong type" "entries\[0\].params.unroll" "$tmp/type.json"
expect_error "missing file" "cannot read wisdom file" "$tmp/does-not-exist.json"

# Fleets: --merge combines hosts keyed by CPU signature; --from, --emit and --show read fleets.
sed 's/"signature": "[^"]*"/"signature": "GenuineIntel-6-143:sse2,avx,avx2"/' "$tmp/best.json" >"$tmp/intel.json"
"$at" --merge "$tmp/intel.json" "$tmp/best.json" --emit "$tmp/fleet.json" >"$tmp/mout" 2>"$tmp/merr"
rc=$?
check "--merge exits 0 (rc=$rc)" test $rc -eq 0
check "--merge writes a schema-2 fleet of two CPUs" bash -c "grep -q '\"schema\": 2' '$tmp/fleet.json' && grep -q 'wrote .*: 2 CPU(s)' '$tmp/merr'"
check "--merge prints nothing on stdout" test ! -s "$tmp/mout"
"$at" --merge "$tmp/fleet.json" "$tmp/best.json" --emit "$tmp/fleet2.json" 2>"$tmp/merr2"
check "--merge again: the later file's entries replace the earlier ones, and it says so" \
  bash -c "grep -q 'memcpy replaced by the entry of $tmp/best.json' '$tmp/merr2' && grep -q ': 2 CPU(s)' '$tmp/merr2'"
# An output path that is a symbolic link is written through: the file it names changes, the link
# stays (a shared fleet file linked into place), and a file that is not an input moves aside
# next to the file the link names.
mkdir -p "$tmp/shared" && echo 'my notes' >"$tmp/shared/fleet.json" && ln -s shared/fleet.json "$tmp/link.json"
"$at" --merge "$tmp/intel.json" "$tmp/best.json" --emit "$tmp/link.json" 2>"$tmp/merr3"; rc=$?
check "--merge --emit LINK: the link stays, the file it names is the fleet, its old text in its .bak (rc=$rc)" \
  bash -c "test $rc -eq 0 && test -L '$tmp/link.json' && grep -q '\"schema\": 2' '$tmp/shared/fleet.json' && grep -qx 'my notes' '$tmp/shared/fleet.json.bak' && ! test -e '$tmp/link.json.bak'"
# A command line with bytes that are not UTF-8 (a Latin-1 file name) is written into the file's
# `command` with U+FFFD: the JSON writer threw on it after all the work, and nothing was written.
latin="$tmp/latin"$'\xe9'".json"
"$at" --merge "$tmp/best.json" --emit "$latin" 2>"$tmp/merr4"; rc=$?
check "--emit to a Latin-1 file name: written, not aborted, the byte as U+FFFD in its command (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -q \"\$2\" \"\$1\"" _ "$latin" '"command": ".*latin'$'\xef\xbf\xbd''.json'
# A file name too long for its temporary and backup names is refused before any work.
name_max=$(getconf NAME_MAX "$tmp")
long=$(printf 'x%.0s' $(seq 1 $((name_max - 5)))).json
"$at" --quick --emit "$tmp/$long" >/dev/null 2>"$tmp/e"; rc=$?
check "--emit of a $name_max-byte file name: refused before any work (rc=$rc)" \
  bash -c "test $rc -eq 2 && grep -q 'the file name is $name_max bytes; at most $((name_max - 8)) here' '$tmp/e' && ! grep -q candidates '$tmp/e'"
"$at" --from "$tmp/fleet.json" --op fill >"$tmp/fout" 2>"$tmp/ferr"
rc=$?
check "--from a fleet picks this CPU's entries (rc=$rc)" bash -c "test $rc -eq 0 && grep -q 'system memset' '$tmp/fout'"
"$at" -q --from "$tmp/fleet.json" --op fill --emit "$tmp/fleet_one.json" >/dev/null 2>"$tmp/ferr2"; rc=$?
check "--from a fleet --emit another file: this CPU's alone, the other CPU said to be left out (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -q 'holds the entries of 1 other CPU; .*fleet_one.json gets this CPU.s alone' '$tmp/ferr2'"
"$at" --show "$tmp/fleet.json" >"$tmp/show" 2>&1
rc=$?
check "--show exits 0 (rc=$rc)" test $rc -eq 0
check "--show: key=value lines only" bash -c "! grep -vqE '^[a-z_0-9]+(\[[0-9]+\])?(\.[a-z_0-9]+(\[[0-9]+\])?)*=' '$tmp/show'"
check "--show: the schema, two hosts, and this CPU's" bash -c "grep -qx 'wisdom.schema=2' '$tmp/show' && grep -qx 'wisdom.hosts=2' '$tmp/show' && grep -qx 'this_cpu.host=1' '$tmp/show'"
check "--show: each host's signature" bash -c "grep -qx 'host\[0\].cpu.signature=\"GenuineIntel-6-143:sse2,avx,avx2\"' '$tmp/show'"
check "--show: routine, thresholds, params and size classes of each entry" bash -c "grep -qE '^host\[1\].entry\[[0-9]\].routine=\"memcpy/' '$tmp/show' && grep -qE '^host\[1\].entry\[0\].threshold.rep_string=([0-9]+|never)$' '$tmp/show' && grep -q '^host\[1\].entry\[0\].params.unroll=' '$tmp/show' && grep -q '^host\[1\].entry\[0\].plan.class\[0\]=\"0\.\.' '$tmp/show'"
"$at" --show "$tmp/intel.json" >"$tmp/show2"
check "--show of another CPU's file says this CPU has no host" bash -c "grep -qx 'this_cpu.host=-1' '$tmp/show2' && grep -q '^this_cpu.note=\".*tuned on CPU' '$tmp/show2'"
"$at" --show "$tmp/truncated.json" >/dev/null 2>"$tmp/e"; rc=$?
check "--show of a truncated file: exit 2 and why (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'not valid JSON' '$tmp/e'"
"$at" --quick --budget 1 --keep-slower --op clear_page --emit "$tmp/fleet.json" >/dev/null 2>"$tmp/e2"
check "--emit into a fleet file adds this CPU's entry and keeps the other CPU" \
  bash -c "grep -q 'into the fleet file' '$tmp/e2' && '$at' --show '$tmp/fleet.json' | grep -qx 'wisdom.hosts=2' && '$at' --show '$tmp/fleet.json' | grep -q 'operation=\"clear_page\"'"

# The tuned routine as a .S file (--emit-asm): every flavour assembles with GNU as (linux and
# glibc preprocessed with the stub headers of tests/asm-stubs) to the same .text; errors.
stubs=$(cd "$(dirname "$0")" && pwd)/asm-stubs
for opt in --emit-asm --flavor --name --target --patch-table --emit-lib --lib-guard; do
  check "--help mentions $opt" grep -q -- "$opt" "$tmp/help"
done
"$at" --from "$tmp/best.json" --emit-asm "$tmp/plain.S" >/dev/null 2>"$tmp/asm_err"
rc=$?
check "--emit-asm exits 0 (rc=$rc)" test $rc -eq 0
check "--emit-asm says what it wrote" grep -q "wrote $tmp/plain.S: memcpy_copysynth, plain flavour" "$tmp/asm_err"
check "the header gives the command line" grep -qF "Command: autotune --from $tmp/best.json --emit-asm $tmp/plain.S" "$tmp/plain.S"
check "the header gives the ladder, the parameters and the CPU" bash -c "grep -q 'memcpy plan (ladder' '$tmp/plain.S' && grep -q 'vector_width=' '$tmp/plain.S' && grep -q 'Tuned on: ' '$tmp/plain.S'"
check "the plain file assembles with as" as --64 -o "$tmp/plain.o" "$tmp/plain.S"
# Two files joined into one still assemble: each routine's local labels carry its name.
"$at" -q --from "$tmp/best.json" --emit-asm "$tmp/second.S" --name second_copy >/dev/null 2>&1
check "two .S files joined into one assemble (labels named after each function)" \
  bash -c "cat '$tmp/plain.S' '$tmp/second.S' > '$tmp/joined.S' && as --64 -o '$tmp/joined.o' '$tmp/joined.S' &&
           nm '$tmp/joined.o' | grep -q ' T memcpy_copysynth' && nm '$tmp/joined.o' | grep -q ' T second_copy'"
# Written again: the same text replaces it quietly; a file edited since (the linux flavour asks
# for an EXPORT_SYMBOL line) is kept as FILE.bak first, and that is said.
"$at" --from "$tmp/best.json" --emit-asm "$tmp/again.S" >/dev/null 2>&1
"$at" -q --from "$tmp/best.json" --emit-asm "$tmp/again.S" >/dev/null 2>"$tmp/again.err"; rc=$?
check "--emit-asm over its own unedited file, with another command line (-q): no backup (rc=$rc)" \
  bash -c "test $rc -eq 0 && ! test -e '$tmp/again.S.bak'"
echo "/* my edit */" >>"$tmp/again.S"
"$at" -q --from "$tmp/best.json" --emit-asm "$tmp/again.S" >/dev/null 2>"$tmp/again.err"; rc=$?
check "--emit-asm over an edited file keeps it as FILE.bak and says so (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -qF 'my edit' '$tmp/again.S.bak' && ! grep -qF 'my edit' '$tmp/again.S' &&
           grep -qF 'it is kept as $tmp/again.S.bak' '$tmp/again.err'"
# The header's command line can be pasted back to a shell, and stays inside its C comment when
# a path holds "*/" (quoted as *''/, the same argument to a shell; the file assembles).
mkdir -p "$tmp/st*"
"$at" --from "$tmp/best.json" --emit-asm "$tmp/st*/x.S" >/dev/null 2>&1; rc=$?
check "--emit-asm into a directory named 'st*': the header's command line gives the same arguments back (rc=$rc)" \
  bash -c "test $rc -eq 0 && line=\$(sed -n 's/^ \* Command: //p' '$tmp/st*/x.S') &&
           eval \"set -- \$line\" && test \"\$5\" = '$tmp/st*/x.S' && test \$# -eq 5 &&
           grep -qF \"'$tmp/st*''/x.S'\" '$tmp/st*/x.S' && as --64 -o '$tmp/st.o' '$tmp/st*/x.S'"
# A carriage return in a path (which a terminal would take as Enter when pasted, and GCC's
# preprocessor as a newline): written as bash's $'...\r...', no CR in the file, and bash gives the
# path back.
crpath="$tmp/c"$'\r'"r/x.S"
mkdir -p "${crpath%/x.S}"
"$at" --from "$tmp/best.json" --emit-asm "$crpath" >/dev/null 2>&1; rc=$?
line=$(sed -n 's/^ \* Command: //p' "$crpath" 2>/dev/null)
back=$(eval "set -- $line" && printf '%s' "${5-}")
check "--emit-asm into a directory with a carriage return in its name: quoted, and the shell gives it back (rc=$rc)" \
  bash -c "test $rc -eq 0 && test \"\$1\" = \"\$2\" && grep -qF \"\\\$'$tmp/c\\\\rr/x.S'\" \"\$2\" && ! grep -q \$'\\r' \"\$2\"" \
  _ "$back" "$crpath"
# A backslash and a newline after a '*' in a path: the preprocessor joins the lines before it looks
# for the comment's end, so the header must keep them from forming one (gcc -c, not only as).
bspath="$tmp/a*"$'\\\n'"/x.S"
mkdir -p "${bspath%/x.S}"
"$at" --from "$tmp/best.json" --emit-asm "$bspath" >/dev/null 2>&1; rc=$?
check "--emit-asm into a directory named 'a*' + backslash + newline: the file builds with the preprocessor too (rc=$rc)" \
  bash -c "test $rc -eq 0 && g++ -c -x assembler-with-cpp -o '$tmp/bs.o' \"\$1\"" _ "$bspath"
# A wisdom file's CPU brand with '*', a backslash, a CR and '/': GCC's preprocessor takes the lone
# CR for a newline and joins it to the backslash, which ended the header's comment and assembled
# the brand's own instructions (a hostile-user test: a symbol `evil` before the routine's).
sed 's|"brand": "[^"]*"|"brand": "X*\\\\\\r/ .globl evil; evil: ud2 /*"|' "$tmp/best.json" >"$tmp/evil.json"
"$at" --from "$tmp/evil.json" --emit-asm "$tmp/evil.S" >/dev/null 2>&1; rc=$?
check "--emit-asm of a wisdom whose CPU brand holds '*', backslash, CR, '/': the brand stays in the comment (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -qF 'evil' '$tmp/evil.S' && g++ -c -x assembler-with-cpp -o '$tmp/evil.o' '$tmp/evil.S' &&
           ! nm '$tmp/evil.o' | grep -qw evil && nm '$tmp/evil.o' | grep -q ' T memcpy_copysynth'"
# `--emit-asm -`: the same text to standard output (as gcc -o -), no file named "-" made.
(cd "$tmp" && "$at" --from "$tmp/best.json" --emit-asm - >"$tmp/stdout.S" 2>"$tmp/e"); rc=$?
check "--emit-asm - writes the .S to standard output, the same as the file but for the command line (rc=$rc)" \
  bash -c "test $rc -eq 0 && ! test -e '$tmp/-' && grep -q 'to standard output: memcpy_copysynth' '$tmp/e' &&
           diff <(grep -v '^ \* Command: ' '$tmp/stdout.S') <(grep -v '^ \* Command: ' '$tmp/plain.S')"
"$at" -q --from "$tmp/best.json" --emit-asm - >/dev/full 2>"$tmp/e"; rc=$?
check "--emit-asm - into a full device: exit 2 and says so (rc=$rc)" \
  bash -c "test $rc -eq 2 && grep -q 'error writing the .S file to standard output: No space left' '$tmp/e'"
mkdir -p "$tmp/asm_dir"
"$at" -q --from "$tmp/best.json" --emit-asm "$tmp/asm_dir" >/dev/null 2>"$tmp/e"; rc=$?
check "--emit-asm DIR: refused as --emit refuses one, 'is a directory; give a file name' (rc=$rc)" \
  bash -c "test $rc -ne 0 && grep -q 'asm_dir: is a directory; give a file name' '$tmp/e'"
# Intel CET: the entry is endbr64, the object says IBT and SHSTK, and a CET link keeps them (GNU
# ld ANDs the property notes: an object without it fails under -z cet-report=error). The link is
# ld alone: Debian 12's crti.o/crtn.o lack the notes, so a gcc-driven CET link fails without them.
check "the plain file's entry is endbr64" bash -c "objdump -d '$tmp/plain.o' | grep -A1 '<memcpy_copysynth>:' | grep -q endbr64"
check "the plain object carries the IBT and SHSTK property (readelf -n)" bash -c "readelf -n '$tmp/plain.o' | grep -q 'x86 feature: IBT, SHSTK'"
check "... and links under -z cet-report=error, keeping it" bash -c "ld -shared -z cet-report=error -o '$tmp/plain.so' '$tmp/plain.o' && readelf -n '$tmp/plain.so' | grep -q 'x86 feature: IBT, SHSTK'"
# The routine's bytes start on the alignment boundary after the entry: plain's .text less the
# int3 padding and endbr64 (its first `align` bytes) is the preprocessed flavours' .text.
p2=$(sed -n 's/^\t\.p2align \([0-9]*\), 0xcc$/\1/p' "$tmp/plain.S" | head -1)
align=$((1 << ${p2:-4}))
for fl in linux glibc; do
  "$at" -q --from "$tmp/best.json" --emit-asm "$tmp/$fl.S" --flavor $fl --name "my_$fl" >/dev/null 2>&1
  check "--flavor $fl exits 0" test -s "$tmp/$fl.S"
  check "--flavor $fl assembles with its stub headers" bash -c "g++ -E -P -x assembler-with-cpp -I '$stubs' '$tmp/$fl.S' -o '$tmp/$fl.s' && as --64 -o '$tmp/$fl.o' '$tmp/$fl.s'"
  check "--flavor $fl gives the same routine bytes as plain" bash -c "objcopy -O binary --only-section=.text '$tmp/$fl.o' '$tmp/$fl.bin' && objcopy -O binary --only-section=.text '$tmp/plain.o' '$tmp/plain.bin' && tail -c +$((align + 1)) '$tmp/plain.bin' | cmp -s '$tmp/$fl.bin' -"
done
check "--flavor linux uses the kernel's macros" bash -c "grep -q '^SYM_FUNC_START(my_linux)' '$tmp/linux.S' && grep -q '^SYM_FUNC_END(my_linux)' '$tmp/linux.S' && grep -q '	RET' '$tmp/linux.S'"
check "--flavor glibc uses ENTRY/END and L()" bash -c "grep -q '^ENTRY_P2ALIGN (my_glibc, ' '$tmp/glibc.S' && grep -q '^END (my_glibc)' '$tmp/glibc.S' && grep -q '^L(' '$tmp/glibc.S'"
"$at" -q --from "$tmp/best.json" --isa sse2 --emit-asm "$tmp/cap.S" --target avx512 >/dev/null 2>&1
rc=$?
check "--target avx512 with --isa sse2: written without executing (rc=$rc)" bash -c "test $rc -eq 0 && grep -q 'not executed' '$tmp/cap.S' && grep -q 'Target: avx512' '$tmp/cap.S'"
"$at" -q --emit-asm "$tmp/x.S" >/dev/null 2>"$tmp/e"; rc=$?
check "--emit-asm without --from: exit 1 and what to do (rc=$rc)" bash -c "test $rc -eq 1 && grep -q 'give its wisdom file with --from' '$tmp/e'"
"$at" -q --from "$tmp/best.json" --emit-asm "$tmp/x.S" --flavor bsd >/dev/null 2>&1; rc=$?
check "unknown --flavor refused (rc=$rc)" test $rc -eq 1
"$at" -q --from "$tmp/best.json" --emit-asm "$tmp/x.S" --op memmove >/dev/null 2>"$tmp/e"; rc=$?
check "--emit-asm of an operation the file lacks: exit 2, names what it holds (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'has no memmove entry (it holds .*memcpy' '$tmp/e'"
"$at" -q --from "$tmp/best.json" --emit-asm "$tmp/x.S" --name 9lives >/dev/null 2>"$tmp/e"; rc=$?
check "a bad --name: exit 1 (rc=$rc)" bash -c "test $rc -eq 1 && grep -q 'is not a symbol GNU as takes' '$tmp/e'"
"$at" -q --from "$tmp/best.json" --emit-asm "$tmp/x.S" --name "" >/dev/null 2>&1; rc=$?
check "an empty --name: exit 1 (rc=$rc)" test $rc -eq 1
# One rule for --name, the writer's (check_asm_symbol): refused before any work, with the reason.
bad_name() {  # bad_name DESCRIPTION NAME REASON [OPTION...]
  local what=$1 name=$2 why=$3
  shift 3
  "$at" --from "$tmp/best.json" --emit-asm "$tmp/x.S" --name "$name" "$@" >/dev/null 2>"$tmp/e"
  local rc=$?
  check "--name $what: exit 1 (rc=$rc)" test $rc -eq 1
  check "--name $what: the error names it" grep -qF -- "--name \"$name\" is not a symbol GNU as takes" "$tmp/e"
  check "--name $what: says why" grep -qF -- "$why" "$tmp/e"
  check "--name $what: before any work" test "$(grep -c . "$tmp/e")" -eq 1
}
bad_name "'\$x' (AT&T reads an immediate)" '$x' "starts with '\$', which AT&T syntax reads as an immediate"
bad_name "empty" "" "it is empty"
bad_name "starting with a digit" "9lives" "it starts with a digit"
bad_name "with a space" "mem cpy" "it contains a space"
bad_name "linux in the linux flavour (the preprocessor replaces it)" "linux" "replaces the name linux" --flavor linux
bad_name "__x86_64__ in the plain flavour (gcc -c preprocesses it)" "__x86_64__" "\`gcc -c\` runs a .S file through the C preprocessor first, which replaces the name __x86_64__"
cp "$tmp/best.json" "$tmp/in.json"
"$at" -q --from "$tmp/in.json" --emit-asm "$tmp/in.json" >/dev/null 2>"$tmp/e"; rc=$?
check "--emit-asm onto its own --from file: refused, the wisdom intact (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'is the wisdom file --from reads' '$tmp/e' && cmp -s '$tmp/in.json' '$tmp/best.json'"
echo "my notes" >"$tmp/notes.S"
"$at" -q --from "$tmp/best.json" --emit-asm "$tmp/notes.S" >/dev/null 2>"$tmp/e"; rc=$?
check "--emit-asm onto a file copysynth did not write: refused, kept (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'not overwriting it' '$tmp/e' && grep -qx 'my notes' '$tmp/notes.S'"
"$at" -q --from "$tmp/best.json" --emit-asm "$tmp/plain.S" >/dev/null 2>&1; rc=$?
check "--emit-asm over its own earlier .S file is fine (rc=$rc)" test $rc -eq 0
# access() grants root every directory, /proc too, where no file can be made: the path is
# refused before the verification and the work, not after them.
if [ "$(id -u)" = 0 ] && [ -r /proc/self/maps ] && [ -w /proc ]; then  # -w: access(), which root passes
  "$at" --from "$tmp/best.json" --emit-asm /proc/copysynth-test.S >/dev/null 2>"$tmp/e"; rc=$?
  check "--emit-asm into /proc as root: exit 2 before the verification (rc=$rc)" \
    bash -c "test $rc -eq 2 && grep -q 'cannot create a file in /proc' '$tmp/e' && ! grep -qi 'verif' '$tmp/e'"
fi
# An append-only directory (chattr +a: root, and a file system with inode flags) takes new files
# but lets none be renamed over or removed: refused before the work, and nothing left in it.
mkdir "$tmp/ao"
if [ "$(id -u)" = 0 ] && command -v chattr >/dev/null && chattr +a "$tmp/ao" 2>/dev/null; then
  "$at" --from "$tmp/best.json" --emit-asm "$tmp/ao/x.S" >/dev/null 2>"$tmp/e"; rc=$?
  left=$(ls -A "$tmp/ao")
  chattr -a "$tmp/ao"
  check "--emit-asm into an append-only directory: exit 2 before the verification, nothing left there (rc=$rc, left: ${left:-nothing})" \
    bash -c "test $rc -eq 2 && grep -q 'is append-only (chattr +a)' '$tmp/e' && ! grep -qi 'verif' '$tmp/e' && test -z '$left'"
  # The same directory, mode 0333, for a user who cannot open it to read its flags: still refused
  # before the work (the probe file is made and cannot be removed), not accepted.
  if command -v setpriv >/dev/null; then
    nob=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    ao=$(mktemp -d /tmp/copysynth-ao.XXXXXX)
    chmod 0755 "$ao"
    cp "$tmp/best.json" "$ao/w.json"
    chmod 0644 "$ao/w.json"
    mkdir -m 0333 "$ao/d"
    if "${nob[@]}" "$at" --version >/dev/null 2>&1 && chattr +a "$ao/d" 2>/dev/null; then
      "${nob[@]}" "$at" --from "$ao/w.json" --emit-asm "$ao/d/x.S" >/dev/null 2>"$tmp/e"; rc=$?
      chattr -a "$ao/d"
      left=$(ls -A "$ao/d")
      check "--emit-asm into an append-only directory the user cannot read: exit 2 before the verification, nothing left (rc=$rc, left: ${left:-nothing})" \
        bash -c "test $rc -eq 2 && grep -q 'is append-only (chattr +a)' '$tmp/e' && ! grep -qi 'verif' '$tmp/e' && test -z '$left'"
    fi
    chattr -a "$ao/d" 2>/dev/null
    # Another user's file in a sticky directory (as /tmp): only its owner (or one with
    # CAP_FOWNER) may rename over it, so it is refused before the work, not after it.
    mkdir -m 1777 "$ao/st"
    "$at" -q --from "$ao/w.json" --emit-asm "$ao/st/x.S" >/dev/null 2>&1
    if [ -s "$ao/st/x.S" ]; then
      "${nob[@]}" "$at" --from "$ao/w.json" --emit-asm "$ao/st/x.S" >/dev/null 2>"$tmp/e"; rc=$?
      check "--emit-asm over root's file in a sticky directory, as nobody: exit 2 before the verification (rc=$rc)" \
        bash -c "test $rc -eq 2 && grep -q 'another user.s file in the sticky directory' '$tmp/e' && ! grep -qi 'verif' '$tmp/e'"
    fi
    rm -rf "$ao"
  fi
  # An existing file that cannot be replaced (chattr +i on the file itself): refused before the work.
  "$at" -q --from "$tmp/best.json" --emit-asm "$tmp/imm.S" >/dev/null 2>&1
  if chattr +i "$tmp/imm.S" 2>/dev/null; then
    "$at" --from "$tmp/best.json" --emit-asm "$tmp/imm.S" >/dev/null 2>"$tmp/e"; rc=$?
    chattr -i "$tmp/imm.S"
    check "--emit-asm over an immutable file: exit 2 before the verification (rc=$rc)" \
      bash -c "test $rc -eq 2 && grep -q 'the file is immutable (chattr +i)' '$tmp/e' && ! grep -qi 'verif' '$tmp/e'"
  fi
fi
# A file system with no block free takes an empty file but not the text: refused before the work
# (a 64 KiB tmpfs filled up; where this may mount one).
mkdir "$tmp/full"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=64k tmpfs "$tmp/full" 2>/dev/null; then
  head -c 1M /dev/zero >"$tmp/full/fill" 2>/dev/null
  "$at" --from "$tmp/best.json" --emit-asm "$tmp/full/x.S" >/dev/null 2>"$tmp/e"; rc=$?
  umount "$tmp/full"
  check "--emit-asm onto a full file system: exit 2 before the verification (rc=$rc)" \
    bash -c "test $rc -eq 2 && grep -q 'reports no block free' '$tmp/e' && ! grep -qi 'verif' '$tmp/e'"
fi
check "nothing written on error" test ! -e "$tmp/x.S"

# The commit-message table.
"$at" -q --from "$tmp/best.json" --op memcpy --patch-table >"$tmp/pt" 2>&1
rc=$?
check "--patch-table exits 0 (rc=$rc)" test $rc -eq 0
check "--patch-table: the seeds' layout" grep -qE '^ +Len  Src/Dst align +old +new  speedup$' "$tmp/pt"
check "--patch-table: old is the system memcpy, measured here, and which variant" \
  grep -qE "old = system memcpy \(glibc [0-9.]*, (the variant glibc picks for this CPU|GLIBC_TUNABLES=.*)\), new = copysynth" "$tmp/pt"
check "--patch-table: the command that made it" grep -qF "Command: autotune -q --from $tmp/best.json --op memcpy --patch-table" "$tmp/pt"
check "--patch-table: 77 rows" bash -c "grep -cE '^ *[0-9]+M? +[0-9]+/[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x$' '$tmp/pt' | grep -qx 77"

# The program is the judge (--app): glibc and the tuned routines alternating, a verdict per
# operation. best.json holds memcpy, fill and clear_page here (clear_page is not judged). The
# command sleeps when the memset candidate's library is preloaded (autotune puts each candidate's
# library in a directory named after it: .../memset/libcopysynth-tuned.so), so memset is slower
# on every run and must be dropped; sort's output is compared between configurations.
for opt in --app --runs --app-with --shim --app-output; do
  check "--help mentions $opt" grep -q -- "$opt" "$tmp/help"
done
seq 1 20000 | sed 's/$/ copysynth/' >"$tmp/lines.txt"
slow_memset="case \$LD_PRELOAD in */memset/*) sleep 0.3 ;; esac; sort -r '$tmp/lines.txt'"
"$at" --from "$tmp/best.json" --app "$slow_memset" --runs 2 --emit "$tmp/judged.json" >"$tmp/app" 2>"$tmp/app_err"
rc=$?
check "--app exits 0 (rc=$rc)" test $rc -eq 0
[ $rc -eq 0 ] || cat "$tmp/app_err"
check "--app prints the table: configuration, median ms, ratio, spread, verdict" grep -qE '^configuration +median ms +ratio +spread +verdict' "$tmp/app"
check "--app: a row for glibc, each operation alone and all together" bash -c "grep -qE '^glibc ' '$tmp/app' && grep -qE '^memcpy ' '$tmp/app' && grep -qE '^memset ' '$tmp/app' && grep -qE '^all ' '$tmp/app'"
check "--app: the slower memset is dropped, and said so" grep -qE '^memset .*(slower|within the spread but not faster): the system memset is kept' "$tmp/app"
check "--app: what is kept" grep -qE '^tuned: .*; system: .*memset' "$tmp/app"
check "--app: a progress line per round on stderr" bash -c "grep -q 'app: round 1/2:' '$tmp/app_err' && grep -q 'app: round 2/2:' '$tmp/app_err'"
"$at" --show "$tmp/judged.json" >"$tmp/jshow" 2>&1
check "--show: the verdicts of memcpy and fill" bash -c "grep -qx 'host\[0\].app_verdicts=2' '$tmp/jshow' && grep -qx 'host\[0\].app_verdict\[[01]\].operation=\"memcpy\"' '$tmp/jshow' && grep -qx 'host\[0\].app_verdict\[[01]\].operation=\"fill\"' '$tmp/jshow'"
check "--show: command, runs, with, ratio of a verdict" bash -c "grep -q '^host\[0\].app_verdict\[0\].command=\"case' '$tmp/jshow' && grep -qx 'host\[0\].app_verdict\[0\].runs=2' '$tmp/jshow' && grep -qx 'host\[0\].app_verdict\[0\].with=\"lib\"' '$tmp/jshow' && grep -qE '^host\[0\].app_verdict\[0\].ratio=[0-9.]+$' '$tmp/jshow'"
fill_v=$(sed -n 's/^host\[0\].app_verdict\[\([01]\)\].operation="fill"$/\1/p' "$tmp/jshow")
check "--show: fill not kept" grep -qx "host\[0\].app_verdict\[$fill_v\].kept=0" "$tmp/jshow"
check "the fill entry is removed from the judged wisdom; clear_page is left alone" bash -c "! grep -q 'entry\[[0-9]\].operation=\"fill\"' '$tmp/jshow' && grep -q 'entry\[[0-9]\].operation=\"clear_page\"' '$tmp/jshow'"
# Every verdict with kept=0 has no entry; every kept=1 has one.
consistent=0
while IFS= read -r line; do
  k=$(sed -n 's/^host\[0\].app_verdict\[\([0-9]\)\].operation=.*/\1/p' <<<"$line")
  op=$(sed -n 's/.*operation="\(.*\)"$/\1/p' <<<"$line")
  kept=$(sed -n "s/^host\[0\].app_verdict\[$k\].kept=//p" "$tmp/jshow")
  if grep -q "entry\[[0-9]\].operation=\"$op\"" "$tmp/jshow"; then has=1; else has=0; fi
  [ "$kept" = "$has" ] || consistent=1
done < <(grep 'app_verdict\[[0-9]\].operation=' "$tmp/jshow")
check "every verdict with kept=0 has no entry, every kept=1 one" test $consistent -eq 0
# Tuning a dropped operation again writes a new routine in its place and says the verdict goes.
cp "$tmp/judged.json" "$tmp/judged_again.json"
"$at" --quick --budget 1 --op fill --keep-slower --emit "$tmp/judged_again.json" >/dev/null 2>"$tmp/e"; rc=$?
check "--emit of a new fill over wisdom whose fill a program dropped: written, says the verdict goes with the old one (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -q 'the fill verdict of .*judged_again.json .* goes with it: this fill is a new routine that no program has judged' '$tmp/e'"
"$at" --from "$tmp/judged.json" --op fill --app true --runs 1 >/dev/null 2>"$tmp/e"; rc=$?
check "--app --op fill on wisdom without fill: exit 2, says so (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'has no fill entry to judge' '$tmp/e'"
# SIGTERM while --app's command runs: the command's process group ends too, the temporary files
# go, and autotune ends by the signal (its command ran on as an orphan before).
# The sleep's length is this test's own (its pid in the fraction): two runs of this test on one
# host (two CI roots side by side share /proc) saw each other's `sleep 31.25`.
slp="31.$$"
sleeping() {  # a `sleep $slp` process exists (/proc: procps may not be installed)
  local f
  for f in /proc/[0-9]*/cmdline; do [ "$(tr '\0' ' ' <"$f" 2>/dev/null)" = "sleep $slp " ] && return 0; done
  return 1
}
mkdir "$tmp/apptmp"
TMPDIR=$tmp/apptmp "$at" --from "$tmp/best.json" --op memcpy --app "sleep $slp; echo x" --runs 3 >/dev/null 2>&1 &
apid=$!
for _ in $(seq 1 100); do sleeping && break; sleep 0.2; done
kill -TERM $apid; wait $apid; rc=$?
sleep 0.5
sleeping && left=yes || left=no
check "SIGTERM during --app: autotune ends by it, the command is gone ($left left), no temporary files (rc=$rc)" \
  bash -c "test $rc -eq 143 && test $left = no && test -z \"\$(ls -A '$tmp/apptmp')\""
# A command that ignores SIGTERM: the second SIGTERM ends it with SIGKILL (autotune could not be
# interrupted while it waited).
TMPDIR=$tmp/apptmp "$at" --from "$tmp/best.json" --op memcpy --app "trap '' TERM; sleep $slp; echo x" --runs 3 >/dev/null 2>&1 &
apid=$!
for _ in $(seq 1 100); do sleeping && break; sleep 0.2; done
kill -TERM $apid; sleep 1; kill -TERM $apid 2>/dev/null; wait $apid; rc=$?
sleep 0.5
sleeping && left=yes || left=no
check "two SIGTERMs during --app of a command that ignores it: ended (rc=$rc), the command gone ($left left), no temporary files" \
  bash -c "test $rc -eq 143 && test $left = no && test -z \"\$(ls -A '$tmp/apptmp')\""
# SIGTERM at moments when no command runs (`true` ends at once; a candidate's library is being
# written): autotune starts no further run, removes its temporary files and ends by the signal
# (with signals ending autotune at once there, 29 of 30 such signals at 0.1-1 s left the directory).
sig_ok=0
for delay in 0.2 0.4 0.7; do
  TMPDIR=$tmp/apptmp "$at" -q --from "$tmp/best.json" --app /bin/true --runs 200 >/dev/null 2>&1 &
  apid=$!
  sleep $delay
  kill -TERM $apid; wait $apid; rc=$?
  [ $rc -eq 143 ] && [ -z "$(ls -A "$tmp/apptmp")" ] && sig_ok=$((sig_ok + 1))
  rm -rf "${tmp:?}/apptmp/"*
done
check "SIGTERM at 0.2, 0.4, 0.7 s into --app true: ended by it, no temporary files, each time ($sig_ok of 3)" test $sig_ok -eq 3
# A command that fails: under glibc (the command to fix) and under one candidate only (never kept);
# nothing written either way.
# A command whose programs never load the candidate (a shell builtin, a static program) would be
# judged from noise: refused before anything is timed (verdicts were written for `:`).
"$at" -q --from "$tmp/best.json" --op memcpy --app ':' --runs 1 --emit "$tmp/nothing.json" >/dev/null 2>"$tmp/e"; rc=$?
check "--app ':' (no program loads the candidate): exit 2, says why, nothing written (rc=$rc)" \
  bash -c "test $rc -eq 2 && grep -q 'started no program that loaded its LD_PRELOAD object .*libcopysynth-tuned.so (memcpy)' '$tmp/e' && test ! -e '$tmp/nothing.json'"
# Tune, then judge: the same command is refused before the search (it was refused after it).
"$at" --op memcpy --quick --app ':' --runs 1 --emit "$tmp/nothing.json" >/dev/null 2>"$tmp/e"; rc=$?
check "--op memcpy --app ':': refused before the search, nothing written (rc=$rc)" \
  bash -c "test $rc -eq 2 && grep -q 'started no program that loaded its LD_PRELOAD object .*(a stand-in for the candidates)' '$tmp/e' && ! grep -q 'winner' '$tmp/e' && test ! -e '$tmp/nothing.json'"
"$at" -q --from "$tmp/best.json" --op memcpy --app 'env -u LD_PRELOAD /bin/true' --runs 1 >/dev/null 2>"$tmp/e"; rc=$?
check "--app 'env -u LD_PRELOAD PROGRAM': judged (env loads it), the program that does not is named (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -q 'did not load the candidate.*: /bin/true' '$tmp/e'"
# ... and so is one whose output differs from run to run, or that fails with any preload: both
# were found only after the search, the second blamed on the tuned routine.
"$at" --op memcpy --quick --app '/bin/date +%N' --runs 1 --emit "$tmp/nothing.json" >/dev/null 2>"$tmp/e"; rc=$?
check "--op memcpy --app 'date +%N': refused before the search, output differing said (rc=$rc)" \
  bash -c "test $rc -eq 2 && grep -q 'wrote other output from one run to the next' '$tmp/e' && ! grep -q 'winner' '$tmp/e' && test ! -e '$tmp/nothing.json'"
"$at" --op memcpy --quick --app '/usr/bin/test -z "$LD_PRELOAD"' --runs 1 --emit "$tmp/nothing.json" >/dev/null 2>"$tmp/e"; rc=$?
check "--op memcpy --app 'test -z \$LD_PRELOAD': refused before the search, failing with any preload said (rc=$rc)" \
  bash -c "test $rc -eq 2 && grep -q 'fails whenever a library is preloaded' '$tmp/e' && ! grep -q 'winner' '$tmp/e' && test ! -e '$tmp/nothing.json'"
# ... but a command whose first run differs from the later ones (a stamp file) is judged, as
# --from ... --app judges it: the command runs once more before the stand-in is blamed.
"$at" -q --op memcpy --quick --app "if [ -e '$tmp/stamp' ]; then /bin/echo up to date; else /bin/echo building; touch '$tmp/stamp'; fi" \
  --runs 1 >/dev/null 2>"$tmp/e"; rc=$?
check "--op memcpy --app with a first-run effect (a stamp file): judged, not refused (rc=$rc)" test $rc -eq 0
[ $rc -eq 0 ] || cat "$tmp/e"
# A background job that keeps the command's output open no longer holds the run (and its time)
# until it ends: the run ends with the shell, and the job is killed then, so it never lives to
# make its file (before, each run waited for it and the file was made). No time is asserted.
rm -f "$tmp/outlived"
"$at" -q --from "$tmp/best.json" --op memcpy --app "(sleep 3; : >'$tmp/outlived') & /bin/true" --runs 1 >/dev/null 2>"$tmp/e"; rc=$?
sleep 4  # longer than the job would have lived
check "--app with a background job holding the output: killed when the shell exits, not waited for (rc=$rc)" \
  bash -c "test $rc -eq 0 && test ! -e '$tmp/outlived'"
# A background job the command leaves is ended after each run.
"$at" -q --from "$tmp/best.json" --op memcpy --app "sleep 7.$$ >/dev/null 2>&1 & /bin/true" --runs 1 >/dev/null 2>"$tmp/e"; rc=$?
left=$(grep -l '^sleep' /proc/[0-9]*/comm 2>/dev/null | while read -r f; do tr '\0' ' ' <"${f%comm}cmdline"; echo; done | grep -c "^sleep 7\.$$ \$")
check "--app leaves no background job of the command running (rc=$rc, $left left)" bash -c "test $rc -eq 0 && test $left -eq 0"
"$at" -q --from "$tmp/best.json" --app false --runs 1 --emit "$tmp/nothing.json" >/dev/null 2>"$tmp/e"; rc=$?
check "--app false: exit 2, names the command and the status (rc=$rc)" bash -c "test $rc -eq 2 && grep -q '\`false\` exited with status 1 with the system routines' '$tmp/e' && test ! -e '$tmp/nothing.json'"
"$at" -q --from "$tmp/best.json" --op memcpy --app '/bin/true; case $LD_PRELOAD in */memcpy/*) echo broken >&2; exit 5 ;; esac' --runs 1 --emit "$tmp/nothing.json" >/dev/null 2>"$tmp/e"; rc=$?
check "--app failing only with the tuned memcpy: exit 2, names it, its status and stderr (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'exited with status 5 with the tuned memcpy' '$tmp/e' && grep -q 'broken' '$tmp/e' && test ! -e '$tmp/nothing.json'"
"$at" -q --from "$tmp/best.json" --op memcpy --app '/bin/true; case $LD_PRELOAD in */memcpy/*) echo other ;; esac' --runs 1 >/dev/null 2>"$tmp/e"; rc=$?
check "--app with other output under the tuned memcpy: exit 2, says so (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'wrote other output with the tuned memcpy' '$tmp/e'"
# ld.so splits LD_PRELOAD at spaces and colons: a TMPDIR with one is refused before any run (the
# library was not loaded and the program judged as the candidate). A relative TMPDIR is made
# absolute, so a command that changes directory still loads the library.
mkdir -p "$tmp/sp ace"
TMPDIR="$tmp/sp ace" "$at" -q --from "$tmp/best.json" --op memcpy --app true --runs 1 >/dev/null 2>"$tmp/e"; rc=$?
check "--app with a TMPDIR holding a space: exit 2, says why and what to do (rc=$rc)" \
  bash -c "test $rc -eq 2 && grep -q \"holds a space or ':', at which ld.so splits LD_PRELOAD\" '$tmp/e' && grep -q 'set TMPDIR' '$tmp/e'"
mkdir -p "$tmp/rel"
(cd "$tmp" && TMPDIR=rel "$at" -q --from "$tmp/best.json" --op memcpy --runs 1 \
  --app 'cd / && { test -z "$LD_PRELOAD" || grep -qF libcopysynth-tuned /proc/self/maps; }' >/dev/null 2>"$tmp/e"); rc=$?
check "--app with a relative TMPDIR and a command that changes directory: the library is loaded (rc=$rc)" test $rc -eq 0
ln -s "$tmp/rel" "$tmp/lnk"
TMPDIR="$tmp/lnk/../lnk/" "$at" -q --from "$tmp/best.json" --op memcpy --runs 1 --app /bin/true >/dev/null 2>"$tmp/e"; rc=$?
check "--app with a TMPDIR through a link, '..' and a trailing '/': the library found loaded (rc=$rc)" test $rc -eq 0
# The shim as the candidate (start-up cost in every run), when this build has it beside autotune.
if [ ! -e "$(dirname "$at")/../api/libcopysynth-preload.so" ]; then
  echo "SKIP (part): --app-with shim: no libcopysynth-preload.so in $(dirname "$at")/../api/ (build the copysynth_preload target)"
elif [ -n "${COPYSYNTH_TEST_PRELOAD_FIRST:-}" ]; then
  # A sanitizer build's shim needs the ASan runtime first in LD_PRELOAD (preload_test.sh), which
  # a program the judge runs does not have.
  echo "SKIP (part): --app-with shim: this build's shim is ASan-built (the judge's programs cannot preload it alone)"
else
  # The user's COPYSYNTH_ variables do not reach the candidates (a profile recorded by the
  # judge's own runs, a verification in every timed run of the shim).
  COPYSYNTH_PROFILE="$tmp/judge.prof" "$at" -q --from "$tmp/best.json" --op memcpy --app-with shim --app "sort '$tmp/lines.txt'" --runs 1 >/dev/null 2>"$tmp/e"; rc=$?
  check "--app with COPYSYNTH_PROFILE set: the judge's runs record nothing (rc=$rc)" bash -c "test $rc -eq 0 && test ! -e '$tmp/judge.prof'"
  "$at" -q --from "$tmp/best.json" --op memcpy --app-with shim --app "sort '$tmp/lines.txt'" --runs 1 >"$tmp/app_shim" 2>"$tmp/e"; rc=$?
  check "--app-with shim exits 0 and says so (rc=$rc)" bash -c "test $rc -eq 0 && grep -q 'the LD_PRELOAD shim' '$tmp/app_shim' && grep -qE '^memcpy ' '$tmp/app_shim'"
  [ $rc -eq 0 ] || cat "$tmp/e"
fi
# Out of address space (ulimit -v): an allocation ended in std::terminate (SIGABRT), and candidates
# whose test buffers could not be mapped were left out as if their code had failed. Now a system
# error, exit 2, nothing written. Not in a sanitizer build (its runtime reserves terabytes).
if [ -n "${COPYSYNTH_TEST_SANITIZED:-}" ]; then
  echo "SKIP (part): ulimit -v: a sanitizer build ($COPYSYNTH_TEST_SANITIZED) reserves terabytes of address space"
else
  (ulimit -v 100000 && "$at" -q --op fill --quick --emit "$tmp/oom.json") >/dev/null 2>"$tmp/e"; rc=$?
  check "under ulimit -v 100000: a system error (exit 2), not an abort, nothing written (rc=$rc)" \
    bash -c "test $rc -eq 2 && grep -q '^autotune: error (system): .*ulimit -v' '$tmp/e' && test ! -e '$tmp/oom.json'"
fi
# Judged wisdom whose every tuned operation the program dropped: --emit-lib says that the judge
# kept nothing (not to tune again), and writes nothing.
"$at" -q --from "$tmp/best.json" --op memcpy,fill --app 'case $LD_PRELOAD in *copysynth*) sleep 0.3 ;; esac' --runs 1 \
  --emit "$tmp/none_kept.json" >/dev/null 2>&1; rc=$?
check "--app slower with every candidate: both dropped, the verdicts written (rc=$rc)" \
  bash -c "test $rc -eq 0 && '$at' --show '$tmp/none_kept.json' | grep -qx 'host\[0\].app_verdicts=2' && ! '$at' --show '$tmp/none_kept.json' | grep -qE 'entry\[[0-9]\]\.operation=\"(memcpy|fill)\"'"
"$at" -q --from "$tmp/none_kept.json" --emit-lib "$tmp/nolib" >/dev/null 2>"$tmp/e"; rc=$?
check "--emit-lib of wisdom the judge kept nothing of: exit 2, says so, not to tune (rc=$rc)" \
  bash -c "test $rc -eq 2 && grep -qE 'the judge \(autotune --app\) kept nothing: glibc.s (memcpy and memset|memset and memcpy) were as fast or faster on' '$tmp/e' && grep -q 'so there is no library to write' '$tmp/e' && ! grep -q 'tune one' '$tmp/e' && test ! -e '$tmp/nolib/libcopysynth-tuned.so.1' && test ! -L '$tmp/nolib/libcopysynth-tuned.so'"
# After a search: tuned, judged, then written.
"$at" -q --quick --budget 1 --keep-slower --op memmove --app /bin/true --runs 1 --emit "$tmp/tuned_judged.json" >"$tmp/tj" 2>&1; rc=$?
check "--op memmove --app after a search: judged and written (rc=$rc)" bash -c "test $rc -eq 0 && grep -qE '^memmove ' '$tmp/tj' && '$at' --show '$tmp/tuned_judged.json' | grep -qx 'host\[0\].app_verdict\[0\].operation=\"memmove\"'"
# Bad options: exit 1, before any work.
app_usage() {  # app_usage DESCRIPTION PATTERN ARGS...
  local what=$1 pattern=$2
  shift 2
  "$at" "$@" >/dev/null 2>"$tmp/e"
  local rc=$?
  check "$what: exit 1 (rc=$rc)" test $rc -eq 1
  check "$what: says '$pattern'" grep -q -- "$pattern" "$tmp/e"
}
app_usage "--runs 0" "--runs must be 1..1000" --from "$tmp/best.json" --app true --runs 0
app_usage "--runs 1001" "--runs must be 1..1000" --from "$tmp/best.json" --app true --runs 1001
app_usage "--runs without --app" "requires --app" --from "$tmp/best.json" --runs 3
app_usage "--app-with foo" "--app-with" --from "$tmp/best.json" --app true --app-with foo
app_usage "--app with clear_page" "clear_page has none" --from "$tmp/best.json" --app true --op clear_page
app_usage "--app ''" "--app needs a command" --from "$tmp/best.json" --app ''
app_usage "--shim with the library" "--shim applies to --app-with shim" --from "$tmp/best.json" --app true --shim /x.so
app_usage "--shim that is not there" "--shim /no/such.so: no such file" --from "$tmp/best.json" --app true --app-with shim --shim /no/such.so
app_usage "--app with --report" "excludes" --from "$tmp/best.json" --app true --report

# Wisdom tuned with a capped ISA is this CPU's too: --from and --show take it without --isa.
"$at" -q --quick --budget 1 --isa sse2 --op memcpy --emit "$tmp/capped.json" >/dev/null 2>&1
"$at" -q --from "$tmp/capped.json" >/dev/null 2>"$tmp/e"; rc=$?
check "--from of --isa sse2 wisdom on the host that made it (rc=$rc)" test $rc -eq 0
"$at" --show "$tmp/capped.json" >"$tmp/show3" 2>&1; rc=$?
check "--show of --isa sse2 wisdom picks it for this CPU (rc=$rc)" bash -c "test $rc -eq 0 && grep -qx 'this_cpu.host=0' '$tmp/show3'"

# Bad command lines: exit 1.
"$at" --budget -5 >/dev/null 2>&1; rc=$?
check "negative budget refused (rc=$rc)" test $rc -eq 1
"$at" --isa mmx >/dev/null 2>&1; rc=$?
check "unknown ISA refused (rc=$rc)" test $rc -eq 1
"$at" -q --quick --budget 1 --op memset >"$tmp/ms" 2>&1; rc=$?
check "--op memset is fill (rc=$rc)" bash -c "test $rc -eq 0 && grep -q 'system memset GB/s' '$tmp/ms'"
"$at" --op memcopy >/dev/null 2>&1; rc=$?
check "unknown operation refused (rc=$rc)" test $rc -eq 1
"$at" --budget nan >/dev/null 2>&1; rc=$?
check "a NaN budget refused (rc=$rc)" test $rc -eq 1
"$at" --budget abc >/dev/null 2>"$tmp/e"; rc=$?
check "a budget that is no number: exit 1, says so (rc=$rc)" bash -c "test $rc -eq 1 && grep -q 'takes a number of seconds' '$tmp/e'"
"$at" --seed -1 >/dev/null 2>&1; rc=$?
check "a negative seed refused (rc=$rc)" test $rc -eq 1
"$at" --list-params --emit "$tmp/lp.json" >/dev/null 2>"$tmp/e"; rc=$?
check "--list-params with --emit: refused, nothing written (it printed and ignored --emit) (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -q 'takes no other option (got --emit)' '$tmp/e' && ! test -e '$tmp/lp.json'"
"$at" --from "$tmp/best.json" --emit-asm "$tmp/w.S" --workload MemcpyGoogleA >/dev/null 2>"$tmp/e"; rc=$?
check "--emit-asm with --workload: refused (nothing is timed; it was ignored) (rc=$rc)" test $rc -eq 1
"$at" --seed 18446744073709551616 >/dev/null 2>"$tmp/e"; rc=$?
check "a seed beyond 2^64 - 1 refused, not read as 2^64 - 1 (rc=$rc)" bash -c "test $rc -eq 1 && grep -q -- '--seed takes a whole number from 0 to 18446744073709551615' '$tmp/e'"
"$at" --cold >/dev/null 2>&1; rc=$?
check "--cold with the seeds workload: exit 1 (rc=$rc)" test $rc -eq 1
"$at" --workload NoSuchDistribution >/dev/null 2>&1; rc=$?
check "an unknown workload: exit 1 (rc=$rc)" test $rc -eq 1
"$at" --from "$tmp/best.json" --budget 3 >/dev/null 2>&1; rc=$?
check "--from with --budget refused (rc=$rc)" test $rc -eq 1
"$at" --merge "$tmp/best.json" >/dev/null 2>&1; rc=$?
check "--merge without --emit refused (rc=$rc)" test $rc -eq 1
"$at" --merge "$tmp/best.json" --emit "$tmp/x.json" --op fill >/dev/null 2>&1; rc=$?
check "--merge with --op refused (rc=$rc)" test $rc -eq 1
# --merge takes the files right after it: given none before the next option, or files after
# another option's value, the message says so (CLI11 said "--merge requires --emit" for the first).
"$at" --merge --emit "$tmp/x.json" "$tmp/best.json" >/dev/null 2>"$tmp/morder1"; rc=$?
check "--merge --emit OUT FILE: exit 1, says --merge takes its files right after it (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -q 'merge was given no file.*right after it' '$tmp/morder1' && test ! -e '$tmp/x.json'"
"$at" --emit "$tmp/x.json" "$tmp/best.json" --merge "$tmp/best.json" >/dev/null 2>"$tmp/morder2"; rc=$?
check "--emit OUT FILE --merge FILE: exit 1, the same advice (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -q 'not expected.*right after it' '$tmp/morder2' && test ! -e '$tmp/x.json'"
# An option where a value should be: CLI11 took it as the value (--emit-lib --quiet made a
# directory named --quiet).
(cd "$tmp" && "$at" --from "$tmp/best.json" --emit-lib --quiet >/dev/null 2>"$tmp/optval"); rc=$?
check "--emit-lib --quiet: exit 1, says the next argument is an option, no directory --quiet (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -q 'emit-lib was given no value: the next argument, --quiet, is an option' '$tmp/optval' && ! test -e '$tmp/--quiet'"
(cd "$tmp" && timeout 20 "$at" --quick --emit - >/dev/null 2>"$tmp/optval3"); rc=$?
check "--emit - : exit 1 before any search, no file named - (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -q 'writes a file, not stdout' '$tmp/optval3' && ! test -e '$tmp/-'"
(cd "$tmp" && timeout 20 "$at" --emit -q --quick >/dev/null 2>"$tmp/optval2"); rc=$?
check "--emit -q (a short option): exit 1 before any search, no file -q (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -q 'emit was given no value: the next argument, -q, is an option' '$tmp/optval2' && ! test -e '$tmp/-q'"
"$at" --show >/dev/null 2>"$tmp/show0"; rc=$?
check "--show without a file: exit 1, says the file is missing (rc=$rc)" bash -c "test $rc -eq 1 && grep -q 'required FILE missing' '$tmp/show0'"
"$at" --show "$tmp/best.json" --show "$tmp/best.json" >/dev/null 2>"$tmp/show2"; rc=$?
check "--show A --show B: exit 1, says --show takes one file (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -q 'show takes one file' '$tmp/show2'"
"$at" --show "$tmp/best.json" --emit "$tmp/x.json" >/dev/null 2>&1; rc=$?
check "--show with --emit refused (rc=$rc)" test $rc -eq 1

# A profile (the format the shim's COPYSYNTH_PROFILE writes: runtime/include/copysynth/profile.hpp),
# written by hand: --show summarises it, --workload profile:FILE tunes for its calls.
z63=$(printf '0,%.0s' {1..63})
mod() { echo "[$1,${z63%,}]"; }  # 64 counts: $1 at offset 0
win='["memcpy",24,4090,100,"far"],["memset",64,0,0,"far"],["memcpy",5000,0,64,"alias4k"],["memcpy",24,4090,100,"far"]'
printf '%s\n' "{\"copysynth_profile\":1,\"program\":\"/usr/bin/prog\",\"pid\":42,\"reason\":\"exit\",\"cpu\":\"x\",\"window_calls\":64,\"sample_period\":4096,\"ops\":{\"memcpy\":{\"calls\":3,\"bytes\":5048,\"sizes\":[[24,24,2],[4096,5119,1]],\"src_mod64\":$(mod 3),\"dst_mod64\":$(mod 3),\"distance\":{\"far\":2,\"alias4k\":1,\"overlap\":0}},\"memmove\":{\"calls\":0,\"bytes\":0,\"sizes\":[],\"src_mod64\":$(mod 0),\"dst_mod64\":$(mod 0),\"distance\":{\"far\":0,\"alias4k\":0,\"overlap\":0}},\"memset\":{\"calls\":1,\"bytes\":64,\"sizes\":[[64,64,1]],\"src_mod64\":$(mod 0),\"dst_mod64\":$(mod 1),\"distance\":{\"far\":1,\"alias4k\":0,\"overlap\":0}}},\"windows\":[{\"thread\":1,\"first_call\":0,\"calls\":[$win]}]}" >"$tmp/prog.prof"
"$at" --show "$tmp/prog.prof" >"$tmp/pshow" 2>"$tmp/pshow_err"; rc=$?
check "--show of a profile exits 0 (rc=$rc)" test $rc -eq 0
check "--show of a profile: program, calls per operation" bash -c "grep -qx 'record\[0\].program=\"/usr/bin/prog\"' '$tmp/pshow' && grep -qx 'memcpy.calls=3' '$tmp/pshow' && grep -qx 'memmove.calls=0' '$tmp/pshow' && grep -qx 'memset.calls=1' '$tmp/pshow'"
check "--show of a profile: a size-class table" grep -qE '^  16-31 +66\.7 ' "$tmp/pshow"
"$at" --quick --budget 2 --workload "profile:$tmp/prog.prof" --emit "$tmp/prof.json" >"$tmp/pout" 2>"$tmp/perr"; rc=$?
check "--workload profile:FILE tunes memcpy (rc=$rc)" bash -c "test $rc -eq 0 && grep -q 'profile:' '$tmp/pout' && grep -q \"program's own windows\" '$tmp/perr'"
# (A winner clearly slower than the system memcpy on its workload is not written, and said.)
check "the wisdom names the profile as its workload, or says why nothing was written" \
  bash -c "grep -q '\"workload\": \"profile:$tmp/prog.prof\"' '$tmp/prof.json' 2>/dev/null || grep -q 'not written, programs keep the system memcpy' '$tmp/perr'"
# --report of a seeds-tuned entry on a program's calls: the report, then how to tune for those calls;
# of the entry tuned for them: no such note.
"$at" --from "$tmp/best.json" --op memcpy --report --workload "profile:$tmp/prog.prof" >"$tmp/prep" 2>/dev/null; rc=$?
check "--report of a seeds entry on a profile says how to tune for it (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -q 'read back' '$tmp/prep' && grep -qF 'note    this memcpy was tuned for seeds, not for these calls; to tune for them: autotune --op memcpy --workload profile:$tmp/prog.prof --emit FILE' '$tmp/prep'"
if [ -e "$tmp/prof.json" ]; then
  "$at" --from "$tmp/prof.json" --report >"$tmp/prep2" 2>/dev/null; rc=$?
  check "--report of the entry tuned for that profile: no note (rc=$rc)" bash -c "test $rc -eq 0 && grep -q 'read back' '$tmp/prep2' && ! grep -q 'note ' '$tmp/prep2'"
fi
"$at" --quick --budget 2 --op memmove --workload "profile:$tmp/prog.prof" >/dev/null 2>"$tmp/perr2"; rc=$?
check "--workload profile: an operation the program never called: exit 1, what it has (rc=$rc)" bash -c "test $rc -eq 1 && grep -q 'no memmove call; tune what it has: --op memcpy,fill' '$tmp/perr2'"
: >"$tmp/empty.prof"
"$at" --show "$tmp/empty.prof" >/dev/null 2>"$tmp/perr4"; rc=$?
check "--show of an empty file: exit 2, neither wisdom nor profile (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'is empty' '$tmp/perr4'"
(echo; cat "$tmp/prog.prof") >"$tmp/blank_first.prof"
"$at" --show "$tmp/blank_first.prof" >"$tmp/pshow5" 2>&1; rc=$?
check "--show of a profile after a blank line (rc=$rc)" bash -c "test $rc -eq 0 && grep -qx 'memcpy.calls=3' '$tmp/pshow5'"
head -c 100 "$tmp/prog.prof" >"$tmp/cut.prof"
"$at" --show "$tmp/cut.prof" >/dev/null 2>"$tmp/perr3"; rc=$?
check "--show of a truncated profile: exit 2, the file and line (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'cut.prof:1' '$tmp/perr3'"
# A profile that cannot be read as one fails the run whichever option reads it (exit 2, as a wisdom
# file --from cannot read); an operation it lacks is a bad command line (exit 1), said before any
# search, every such operation at once.
"$at" --quick --budget 1 --workload "profile:$tmp/cut.prof" >/dev/null 2>"$tmp/perr6"; rc=$?
check "--workload profile: of a truncated profile: exit 2 as --show, the file and line (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'cut.prof:1' '$tmp/perr6'"
# A whole record, then one cut short with no newline after it: the first stands, the cut one is
# left out and said (the whole file was refused).
{ cat "$tmp/prog.prof"; head -c 100 "$tmp/prog.prof"; } >"$tmp/cut2.prof"
"$at" --show "$tmp/cut2.prof" >"$tmp/pshow2" 2>/dev/null; rc=$?
check "--show of a profile whose last record is cut short: exit 0, one record, the cut line named (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -qx 'profile.records=1' '$tmp/pshow2' && grep -q '^profile.cut_short=.*cut2.prof:2: ' '$tmp/pshow2'"
"$at" -q --quick --budget 1 --op memcpy --workload "profile:$tmp/cut2.prof" >/dev/null 2>"$tmp/perr15"; rc=$?
check "... tuned on its whole records, with a warning that the cut one is left out (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -q 'warning: memcpy on profile:.*its last line, a record cut short, is left out' '$tmp/perr15'"
"$at" --quick --budget 1 --workload "profile:$tmp/empty.prof" >/dev/null 2>"$tmp/perr6"; rc=$?
check "--workload profile: of an empty file: exit 2 as --show (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'holds no profile records' '$tmp/perr6'"
"$at" --quick --budget 1 --op all --workload "profile:$tmp/prog.prof" >"$tmp/pall" 2>"$tmp/perr7"; rc=$?
check "--op all with a profile: exit 1 before any search, naming clear_page, memmove and what it has (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -q 'prog.prof: clear_page is not recorded in profiles (memcpy, memmove and memset are), and the program made no memmove call; tune what it has: --op memcpy,fill' '$tmp/perr7' && ! grep -q 'candidates built' '$tmp/perr7' && test ! -s '$tmp/pall'"
# The other kind of file, either way round: named, with the option that reads it.
"$at" --quick --budget 1 --workload "profile:$tmp/best.json" >/dev/null 2>"$tmp/perr8"; rc=$?
check "--workload profile:WISDOM: exit 2, it is a wisdom file, use --from (rc=$rc)" \
  bash -c "test $rc -eq 2 && grep -qF '$tmp/best.json is a wisdom file (autotune --emit), not a profile; use --from $tmp/best.json' '$tmp/perr8'"
cat "$tmp/prog.prof" "$tmp/prog.prof" >"$tmp/two.prof"
for p in prog.prof two.prof; do
  "$at" --from "$tmp/$p" >/dev/null 2>"$tmp/perr9"; rc=$?
  check "--from of a profile ($p): exit 2, it is a profile, use --workload profile: (rc=$rc)" \
    bash -c "test $rc -eq 2 && grep -qF '$tmp/$p is a profile, not a wisdom file; use --workload profile:$tmp/$p' '$tmp/perr9'"
done
# A command that runs other programs (a shell script) leaves their records too: a record of bash
# before the program's, in a file whose name has a comma. Without a selection all are tuned for,
# and the search names the programs; profile:FILE,program=NAME keeps one program's records, and
# the wisdom keeps the selection, so --from rebuilds the same workload.
sed 's|"program":"/usr/bin/prog","pid":42|"program":"/usr/bin/bash","pid":41|' "$tmp/prog.prof" >"$tmp/run,1.prof"
cat "$tmp/prog.prof" >>"$tmp/run,1.prof"
"$at" --show "$tmp/run,1.prof" >"$tmp/sshow" 2>&1; rc=$?
check "--show of two programs' records: a path, records and calls per program (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -qx 'profile.programs=2' '$tmp/sshow' && grep -qx 'program\[0\].path=\"/usr/bin/bash\"' '$tmp/sshow' && grep -qx 'program\[1\].path=\"/usr/bin/prog\"' '$tmp/sshow' && grep -qx 'program\[1\].records=1' '$tmp/sshow' && grep -qx 'program\[1\].calls=4' '$tmp/sshow' && grep -qx 'memcpy.calls=6' '$tmp/sshow'"
"$at" --quick --budget 1 --workload "profile:$tmp/run,1.prof" >/dev/null 2>"$tmp/serr"; rc=$?
check "--workload profile: of two programs: tuned for both, the programs and how to select one said (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -qF 'records of 2 programs, tuned for together: /usr/bin/bash (1 record, 4 calls), /usr/bin/prog (1 record, 4 calls); select one with profile:$tmp/run,1.prof,program=NAME' '$tmp/serr'"
"$at" --quick --budget 2 --keep-slower --workload "profile:$tmp/run,1.prof,program=prog" --emit "$tmp/sel.json" >"$tmp/sout" 2>"$tmp/serr2"; rc=$?
check "--workload profile:FILE,program=prog tunes for that program's record alone (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -q '(1 record, 3 memcpy calls' '$tmp/serr2' && ! grep -q 'records of 2 programs' '$tmp/serr2'"
check "the wisdom's workload keeps the selection" grep -qF "\"workload\": \"profile:$tmp/run,1.prof,program=prog\"" "$tmp/sel.json"
"$at" --from "$tmp/sel.json" >"$tmp/sfrom" 2>"$tmp/serr3"; rc=$?
check "--from that wisdom re-measures on the selected records (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -qF 'measuring profile:$tmp/run,1.prof,program=prog' '$tmp/serr3' && grep -q speedup '$tmp/sfrom'"
"$at" --quick --budget 1 --workload "profile:$tmp/run,1.prof,program=/usr/bin/bash" >/dev/null 2>"$tmp/serr4"; rc=$?
check "program=FULL_PATH selects too (rc=$rc)" bash -c "test $rc -eq 0 && grep -q '(1 record, 3 memcpy calls' '$tmp/serr4'"
"$at" --quick --budget 1 --workload "profile:$tmp/run,1.prof,program=nosuch" >"$tmp/snone" 2>"$tmp/serr5"; rc=$?
check "program=nosuch: exit 1 before any search, the programs the file has (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -qF 'profile $tmp/run,1.prof: no record of program \"nosuch\"; it has /usr/bin/bash (1 record, 4 calls), /usr/bin/prog (1 record, 4 calls); select one with profile:$tmp/run,1.prof,program=NAME' '$tmp/serr5' && ! grep -q 'candidates built' '$tmp/serr5' && test ! -s '$tmp/snone'"
"$at" --quick --budget 1 --workload "profile:$tmp/run,1.prof,program=" >/dev/null 2>"$tmp/serr6"; rc=$?
check "program= with no name: exit 1 (rc=$rc)" bash -c "test $rc -eq 1 && grep -q 'the program to select is empty' '$tmp/serr6'"
check "--help describes profile:FILE,program=NAME" grep -q "profile:FILE,program=NAME" "$tmp/help"
# A profile's path without "profile:" (read as a size distribution before).
for p in prog.prof "$tmp/prog.prof"; do
  (cd "$tmp" && "$at" --quick --budget 1 --workload "$p") >/dev/null 2>"$tmp/perr10"; rc=$?
  check "--workload $p: exit 1, use --workload profile:$p (rc=$rc)" \
    bash -c "test $rc -eq 1 && grep -qF 'is a profile (COPYSYNTH_PROFILE); use --workload profile:$p' '$tmp/perr10'"
done

# A trailing comma is a selector left out (exit 1), not a file that cannot be read (exit 2).
"$at" --quick --budget 1 --workload "profile:$tmp/prog.prof," >/dev/null 2>"$tmp/perr11"; rc=$?
check "--workload profile:FILE, (trailing comma): exit 1, names the selector (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -q 'is not the one selector a profile takes' '$tmp/perr11'"
# A name that ends in the cold mark would come back from the wisdom as another workload, cold:
# a profile file so named, and a distribution of the data directory so named.
cp "$tmp/prog.prof" "$tmp/p (cold)"
"$at" --quick --budget 1 --workload "profile:$tmp/p (cold)" >/dev/null 2>"$tmp/perr12"; rc=$?
check "--workload 'profile:FILE (cold)': exit 1 before any search, says why (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -q 'the mark the wisdom gives a cold replay' '$tmp/perr12' && ! grep -q 'candidates' '$tmp/perr12'"
mkdir -p "$tmp/dd" && cp "$tmp/mydist.csv" "$tmp/dd/Foo (cold).csv"
COPYSYNTH_DATA_DIR="$tmp/dd" "$at" --quick --budget 1 --workload "Foo (cold)" >/dev/null 2>"$tmp/perr14"; rc=$?
check "--workload 'NAME (cold)' of the data directory: exit 1 before any search (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -q 'give --cold' '$tmp/perr14' && ! grep -q 'candidates' '$tmp/perr14'"
# A profile of 3 memcpy calls: the warning that so few say little is a line of its own, said once,
# and with -q too.
check "a profile of 3 calls: the search warns once" \
  bash -c "test \$(grep -c '^autotune: warning: memcpy on profile:.*prog.prof: only 3 calls: a tuning for so few says little' '$tmp/perr') -eq 1"
# A refused winner is measured again by a second autotune sharing stderr, which said the warning
# again (seen once on Debian 13, where the winner on these 3 calls came out refused).
"$at" --quick --budget 1 --min-speedup 50 --workload "profile:$tmp/prog.prof" --emit "$tmp/refused.json" >/dev/null 2>"$tmp/perr15"; rc=$?
check "... and once when a second process measures the refused winner again (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -q 'in a second process' '$tmp/perr15' && test \$(grep -c '^autotune: warning: memcpy on profile:.*prog.prof: only 3 calls' '$tmp/perr15') -eq 1"
"$at" -q --quick --budget 1 --op memcpy --workload "profile:$tmp/prog.prof" >/dev/null 2>"$tmp/perr13"; rc=$?
check "... and with -q (rc=$rc)" \
  bash -c "test $rc -eq 0 && test \$(grep -c '^autotune: warning: memcpy on profile:.*prog.prof: only 3 calls' '$tmp/perr13') -eq 1"

# Paths that name no file, or a file that is not the kind asked for (a new user's review found
# each of these hanging, starting a search, or losing a file).
for opt in --from --show --emit --workload; do
  extra=(); case $opt in --emit | --workload) extra=(--quick --budget 1) ;; esac  # bounded, should it start
  "$at" "${extra[@]}" "$opt" "" >/dev/null 2>"$tmp/empty_err"; rc=$?
  check "$opt \"\": exit 1 before any work, names the option (rc=$rc)" \
    bash -c "test $rc -eq 1 && grep -q -- '$opt was given an empty value' '$tmp/empty_err' && ! grep -q 'candidates' '$tmp/empty_err'"
done
"$at" --from= --report >/dev/null 2>"$tmp/empty_eq"; rc=$?
check "--from= (empty, = form): exit 1, not the next argument taken as the file (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -q -- '--from= was given an empty value' '$tmp/empty_eq'"
"$at" --merge "$tmp/best.json" "" --emit "$tmp/m_empty.json" >/dev/null 2>&1; rc=$?
check "--merge with an empty file name: exit 1, nothing written (rc=$rc)" bash -c "test $rc -eq 1 && test ! -e '$tmp/m_empty.json'"
mkfifo "$tmp/fifo.json" "$tmp/fifo.csv"
timeout 20 "$at" --show "$tmp/fifo.json" >/dev/null 2>"$tmp/fifo_err"; rc=$?
check "--show FIFO: exit 2, said to be a FIFO, no hang (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'is a FIFO' '$tmp/fifo_err'"
timeout 20 "$at" --quick --budget 1 --workload "$tmp/fifo.csv" >/dev/null 2>"$tmp/fifo_err2"; rc=$?
check "--workload FIFO.csv: exit 2 as --show FIFO, said to be a FIFO, no hang (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'is a FIFO' '$tmp/fifo_err2'"
mkdir "$tmp/dir.json"
"$at" --show "$tmp/dir.json" >/dev/null 2>"$tmp/dir_err"; rc=$?
check "--show DIR: exit 2, said to be a directory, not empty (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'is a directory' '$tmp/dir_err'"
# --show escapes every string it prints, the file's own header included.
sed 's/"command": "[^"]*"/"command": "a\\u0001b\\nc\\u001b[31m"/' "$tmp/best.json" >"$tmp/ctrl.json"
"$at" --show "$tmp/ctrl.json" >"$tmp/ctrl_show" 2>&1
check "--show: control bytes of the file's command escaped, one line" \
  grep -qxF 'wisdom.command="a\001b\012c\033[31m"' "$tmp/ctrl_show"
# --merge --emit over a file that is not one of its inputs moves it aside, as --emit does.
echo "my notes" >"$tmp/notes.txt"
"$at" --merge "$tmp/best.json" --emit "$tmp/notes.txt" >/dev/null 2>"$tmp/merr3"; rc=$?
check "--merge --emit over another file: moved to .bak, said, then written (rc=$rc)" bash -c "test $rc -eq 0 && \
  grep -qx 'my notes' '$tmp/notes.txt.bak' && grep -q 'moved the existing' '$tmp/merr3' && grep -q '\"schema\": 2' '$tmp/notes.txt'"
cp "$tmp/fleet.json" "$tmp/fleet3.json"
"$at" --merge "$tmp/fleet3.json" "$tmp/best.json" --emit "$tmp/fleet3.json" >/dev/null 2>&1; rc=$?
check "--merge --emit over one of its inputs: replaced, no backup (rc=$rc)" bash -c "test $rc -eq 0 && test ! -e '$tmp/fleet3.json.bak'"
# --svg never replaces the wisdom file read, nor a file that is not an SVG image (before any work).
"$at" --from "$tmp/best.json" --report --svg "$tmp/best.json" >/dev/null 2>"$tmp/svg_err"; rc=$?
check "--svg over the --from file: refused before the report (rc=$rc)" bash -c "test $rc -eq 2 && \
  grep -q 'is the wisdom file' '$tmp/svg_err' && grep -q '\"schema\"' '$tmp/best.json'"
"$at" --from "$tmp/best.json" --report --svg "$tmp/notes.txt" >/dev/null 2>"$tmp/svg_err2"; rc=$?
check "--svg over a file that is not an SVG image: refused (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'is not an SVG image' '$tmp/svg_err2'"
mkfifo "$tmp/fifo.svg"
timeout 20 "$at" --from "$tmp/best.json" --report --svg "$tmp/fifo.svg" >/dev/null 2>"$tmp/svg_err3"; rc=$?
check "--svg FIFO: refused before the report, no hang (rc=$rc)" bash -c "test $rc -eq 2 && grep -q 'not a regular file' '$tmp/svg_err3'"
# --emit-lib into a directory holding the user's own files refuses before any work.
mkdir "$tmp/fifolib" && mkfifo "$tmp/fifolib/README"
timeout 20 "$at" -q --from "$tmp/best.json" --emit-lib "$tmp/fifolib" >/dev/null 2>"$tmp/lib_err2"; rc=$?
check "--emit-lib into a directory whose README is a FIFO: refused, no hang (rc=$rc)" \
  bash -c "test $rc -eq 2 && grep -q 'README is not a regular file' '$tmp/lib_err2'"
# A directory where the library file goes: refused before any work, not left mixed by a late rename.
mkdir -p "$tmp/dirlib/libcopysynth-tuned.so.1"
timeout 20 "$at" -q --from "$tmp/best.json" --emit-lib "$tmp/dirlib" >/dev/null 2>"$tmp/lib_err3"; rc=$?
check "--emit-lib into a directory whose libcopysynth-tuned.so.1 is a directory: refused (rc=$rc)" \
  bash -c "test $rc -eq 2 && grep -q 'libcopysynth-tuned.so.1 is not a regular file' '$tmp/lib_err3' && test ! -e '$tmp/dirlib/src'"
mkdir -p "$tmp/proj/src"; echo "# my project" >"$tmp/proj/README"; echo "int main(){}" >"$tmp/proj/src/main.c"
"$at" -q --from "$tmp/best.json" --emit-lib "$tmp/proj" >/dev/null 2>"$tmp/lib_err"; rc=$?
check "--emit-lib into a project's directory: refused, its files intact (rc=$rc)" bash -c "test $rc -eq 2 && \
  grep -q 'nothing was written' '$tmp/lib_err' && grep -qx '# my project' '$tmp/proj/README' && test -s '$tmp/proj/src/main.c'"

echo "$fails failure(s)"
test $fails -eq 0
