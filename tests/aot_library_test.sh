#!/usr/bin/env bash
# The ahead-of-time library (autotune --from WISDOM --emit-lib DIR) with this host's wisdom:
#
#   1. what it is: libcopysynth-tuned.so exports exactly memcpy, memmove, memset, their __*_chk
#      forms and copysynth_tuned_active, unversioned, as plain functions; the IBT/SHSTK property note,
#      a non-executable stack, BIND_NOW, no text relocation; unwind information for every
#      function; every object of the .a has the note, and a program with its own memcpy links
#      memmove from the .a;
#      the code of the library is the verified routines' (the same bytes as --emit-asm's file);
#   2. preload_probe (built here without sanitizers) under LD_PRELOAD, linked with
#      -lcopysynth-tuned, and linked statically with libcopysynth-tuned.a: the routines bind to
#      the library, copysynth_tuned_active() is 1, every check passes (the _FORTIFY_SOURCE abort
#      included);
#   3. zstd, xz and sqlite3 under LD_PRELOAD give bit for bit what they give without it, print
#      nothing on stderr (glibc's loader warns about IFUNCs of a preloaded library there), and bind
#      memcpy to the library (LD_DEBUG=bindings);
#   4. libraries whose guard names another CPU (--lib-guard: another vendor, another model of
#      this family, a feature this host lacks) fall back to the built-in routines on this host:
#      copysynth_tuned_active() is 0, the probe and xz stay correct;
#   5. errors: --emit-lib without --from, a bad --lib-guard; a DIR starting with '-'.
#
# Usage: aot_library_test.sh AUTOTUNE PROBE_SOURCE HOST_WISDOM CC
# Needs binutils, zstd, xz and sqlite3 (tools/install-deps.sh --test) and a static libc (libc6-dev).
set -u
at=$1 probe_src=$2 wisdom=$3 cc=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/check.sh
. "$(dirname "$0")/check.sh"

lib=$tmp/lib
# The wisdom read from a directory whose name ends a C comment ("st*/"): guard.S's header, which
# names it, must keep its comment whole to assemble.
mkdir "$tmp/st*"
cp "$wisdom" "$tmp/st*/w.json"
"$at" --from "$tmp/st*/w.json" --emit-lib "$lib" >"$tmp/emit.out" 2>"$tmp/emit.err"
rc=$?
check "--emit-lib exits 0 (rc=$rc)" test $rc -eq 0
check "guard.S names the wisdom with its '*/' made safe" grep -qF "st* /w.json" "$lib/src/guard.S"
sed 's/^/       /' "$tmp/emit.err" | grep -v '^       \(cpu\|features\|caches\|signature\):'
check "--emit-lib ran the full conformance suite on the six routines" \
  test "$(grep -c 'with the full conformance suite' "$tmp/emit.err")" -eq 6
check "--emit-lib read the code back" grep -q 'read back 6 routines from libcopysynth-tuned.so.1 and libcopysynth-tuned.a: byte for byte' "$tmp/emit.err"
so=$lib/libcopysynth-tuned.so
for f in libcopysynth-tuned.so.1 libcopysynth-tuned.so libcopysynth-tuned.a README copysynth-tuned.h src/guard.S src/libcopysynth-tuned.map; do
  check "--emit-lib wrote $f" test -s "$lib/$f"
done
# A versioned soname, as a distribution's libraries have: the file is libcopysynth-tuned.so.1 and
# says so in DT_SONAME; libcopysynth-tuned.so is a relative link to it (for -l and LD_PRELOAD).
check "libcopysynth-tuned.so is a link to libcopysynth-tuned.so.1" \
  bash -c "test -L '$so' && test \"\$(readlink '$so')\" = libcopysynth-tuned.so.1 && test -f '$lib/libcopysynth-tuned.so.1' && ! test -L '$lib/libcopysynth-tuned.so.1'"
check "its DT_SONAME is libcopysynth-tuned.so.1" \
  bash -c "readelf -d '$lib/libcopysynth-tuned.so.1' | grep -q 'Library soname: \[libcopysynth-tuned.so.1\]'"
check "the README names the CPU and how to deploy and remove it" \
  bash -c "grep -q 'AuthenticAMD\|GenuineIntel' '$lib/README' && grep -q 'LD_PRELOAD=' '$lib/README' && grep -q '/etc/ld.so.preload' '$lib/README' && grep -q '^Remove:' '$lib/README'"

# Again into the directory it wrote, with the wisdom file there too: allowed (README, src/ and the
# libraries replaced); a source it does not write in src/ is the user's: refused, kept.
# A scratch directory an interrupted run left (its process gone) is removed; a live process's kept.
cp "$wisdom" "$lib/wisdom.json"
# As an older copysynth left it: libcopysynth-tuned.so a regular file (no soname version).
cp --remove-destination "$lib/libcopysynth-tuned.so.1" "$lib/libcopysynth-tuned.so"
old_inode=$(stat -c %i "$lib/libcopysynth-tuned.so.1")
# Today's runs name theirs .copysynth-lib.XXXXXX; older ones .copysynth-lib-PID or -XXXXXX. A
# held lock keeps a directory whatever its name, one of digits too (a random name can be).
mkdir -p "$lib/.copysynth-lib-999999999/src" "$lib/.copysynth-lib-$$" "$lib/.copysynth-lib-unlocked" \
  "$lib/.copysynth-lib-held" "$lib/.copysynth-lib.unlocked" "$lib/.copysynth-lib.held" "$lib/.copysynth-lib-123456789"
for d in -unlocked -held .unlocked .held -123456789; do : >"$lib/.copysynth-lib$d/.lock"; done
exec 9>"$lib/.copysynth-lib-held/.lock" 8>"$lib/.copysynth-lib.held/.lock" 7>"$lib/.copysynth-lib-123456789/.lock"
flock 9; flock 8; flock 7  # this shell holds them, as live runs would
"$at" -q --from "$lib/wisdom.json" --emit-lib "$lib" >/dev/null 2>"$tmp/emit2.err"; rc=$?
check "--emit-lib again into its own directory: exit 0, the wisdom file kept (rc=$rc)" \
  bash -c "test $rc -eq 0 && test -s '$lib/libcopysynth-tuned.so' && test -s '$lib/wisdom.json'"
check "... an older regular libcopysynth-tuned.so replaced by the link, libcopysynth-tuned.so.1 by a new file" \
  bash -c "test -L '$lib/libcopysynth-tuned.so' && test \"\$(readlink '$lib/libcopysynth-tuned.so')\" = libcopysynth-tuned.so.1 && test \"\$(stat -c %i '$lib/libcopysynth-tuned.so.1')\" != $old_inode"
check "... the scratch directories of runs that are gone removed (by PID, by an unheld lock), live ones kept" \
  bash -c "! test -e '$lib/.copysynth-lib-999999999' && ! test -e '$lib/.copysynth-lib-unlocked' &&
           ! test -e '$lib/.copysynth-lib.unlocked' && test -d '$lib/.copysynth-lib-$$' && test -d '$lib/.copysynth-lib-held' &&
           test -d '$lib/.copysynth-lib.held' && test -d '$lib/.copysynth-lib-123456789' &&
           test \$(find '$lib' -maxdepth 1 -name '.copysynth-lib*' | wc -l) -eq 4"
exec 9>&- 8>&- 7>&-
rm -rf "$lib/.copysynth-lib-$$" "$lib/.copysynth-lib-held" "$lib/.copysynth-lib.held" "$lib/.copysynth-lib-123456789"
"$at" -q --from "$wisdom" --op clear_page --emit-lib "$tmp/cp-only" >/dev/null 2>"$tmp/emit-cp.err"; rc=$?
check "--emit-lib --op clear_page: exit 1, says --op names none of what the library holds (rc=$rc)" \
  bash -c "test $rc -eq 1 && grep -q -- '--op names none of them' '$tmp/emit-cp.err' && ! test -e '$tmp/cp-only'"
mkdir "$tmp/lib2" && cp -r "$lib/src" "$lib/README" "$tmp/lib2/" && echo "# mine" >"$tmp/lib2/src/mine.S"
"$at" -q --from "$wisdom" --emit-lib "$tmp/lib2" >/dev/null 2>"$tmp/emit3.err"; rc=$?
check "--emit-lib into a directory whose src/ holds another .S file: refused, the file kept (rc=$rc)" \
  bash -c "test $rc -eq 2 && grep -q 'src/ holds mine.S' '$tmp/emit3.err' && test -s '$tmp/lib2/src/mine.S'"

mkdir "$tmp/lib3" && echo '/* my header */' >"$tmp/lib3/copysynth-tuned.h"
"$at" -q --from "$wisdom" --emit-lib "$tmp/lib3" >/dev/null 2>"$tmp/emit4.err"; rc=$?
check "--emit-lib into a directory whose copysynth-tuned.h it did not write: refused, the file kept (rc=$rc)" \
  bash -c "test $rc -eq 2 && grep -q 'holds a copysynth-tuned.h that an earlier --emit-lib did not write' '$tmp/emit4.err' && grep -q 'my header' '$tmp/lib3/copysynth-tuned.h'"

# ---- 1. the objects ---------------------------------------------------------------------------------
exports=$(nm -D --defined-only "$so" | awk '{ print $3 }' | sort | tr '\n' ' ')
check "exports exactly the six routines and copysynth_tuned_active (got: $exports)" \
  test "$exports" = "__memcpy_chk __memmove_chk __memset_chk copysynth_tuned_active memcpy memmove memset "
check "... as functions (nm type T)" test "$(nm -D --defined-only "$so" | awk '$2 == "T"' | wc -l)" -eq 7
check "... unversioned, so that they bind memcpy@GLIBC_2.14 and the like" bash -c "! nm -D --defined-only '$so' | grep -q '@'"
check "IBT and SHSTK property note (readelf -n)" bash -c "readelf -n '$so' | grep -q 'x86 feature: IBT, SHSTK'"
check "non-executable stack (GNU_STACK RW)" bash -c "readelf -lW '$so' | grep GNU_STACK | grep -q ' RW  '"
check "RELRO and BIND_NOW" bash -c "readelf -lW '$so' | grep -q GNU_RELRO && readelf -dW '$so' | grep -q BIND_NOW"
check "no text relocations" bash -c "! readelf -dW '$so' | grep -q TEXTREL"
check "the only relocation is __chk_fail's" \
  bash -c "test \"\$(readelf -rW '$so' | grep -c R_X86_64)\" -eq 1 && readelf -rW '$so' | grep -q __chk_fail"
mkdir "$tmp/ar" && (cd "$tmp/ar" && ar x "$lib/libcopysynth-tuned.a")
for o in "$tmp"/ar/*.o; do
  check "$(basename "$o") in the .a has the IBT and SHSTK note" bash -c "readelf -n '$o' | grep -q 'x86 feature: IBT, SHSTK'"
done
# Unwind information for every function (an FDE of .eh_frame covering it whole), the exports,
# the guard and the routines: debuggers, profilers and backtrace() walk through them.
readelf -wF "$so" | awk '/ FDE / { split($NF, r, "[=.]"); print r[2], r[4] }' >"$tmp/fdes"
nm -S --defined-only "$so" | awk 'tolower($3) == "t" { print $1, $2, $4 }' >"$tmp/funcs"
uncovered=
while read -r addr size name; do
  a=$((0x$addr)) e=$((0x$addr + 0x$size)) ok=
  while read -r lo hi; do
    if [ $((0x$lo)) -le $a ] && [ $e -le $((0x$hi)) ]; then ok=1; break; fi
  done <"$tmp/fdes"
  [ -n "$ok" ] || uncovered="$uncovered$name "
done <"$tmp/funcs"
check "every function has unwind information: $(wc -l <"$tmp/funcs") functions, $(wc -l <"$tmp/fdes") FDEs (uncovered: ${uncovered:-none})" \
  bash -c "test -z '$uncovered' && test \$(wc -l <'$tmp/funcs') -ge 14"
# Every entry starts with endbr64: the exports and the routines they jump to.
objdump -d --no-show-raw-insn "$so" >"$tmp/so.dis"
for f in memcpy memmove memset __memcpy_chk __memmove_chk __memset_chk copysynth_tuned_active \
  __copysynth_tuned_memcpy __copysynth_baseline_memcpy __copysynth_tuned_memset __copysynth_baseline_memmove; do
  check "$f starts with endbr64" bash -c "grep -A1 '^[0-9a-f]* <$f>:' '$tmp/so.dis' | tail -1 | grep -q endbr64"
done
# The library's code is the verified routine's: its bytes equal those of --emit-asm's file (the
# writer compares with the JIT bytes itself; this checks the same through binutils alone).
bytes_of() {  # bytes_of FILE SYMBOL: the bytes of SYMBOL (nm -S: value, size; .text's address and offset)
  local f=$1 t v
  t=$(readelf -SW "$1" | awk '{ for (i = 1; i < NF; ++i) if ($i == ".text") print $(i + 2), $(i + 3) }')
  v=$(nm -S "$1" | awk -v s="$2" '$4 == s { print $1, $2 }')
  set -- $t $v
  [ $# -eq 4 ] || return 1
  od -An -tx1 -v -j $((0x$2 + 0x$3 - 0x$1)) -N $((0x$4)) "$f" 2>/dev/null
}
for op in memcpy memmove memset; do
  o=$op
  [ $op = memset ] && o=fill
  "$at" -q --from "$wisdom" --op $o --emit-asm "$tmp/$op.S" --name "__copysynth_tuned_$op" >/dev/null 2>&1 &&
    as --64 -o "$tmp/$op.o" "$tmp/$op.S"
  bytes_of "$so" "__copysynth_tuned_$op" >"$tmp/$op.lib.hex"
  bytes_of "$tmp/$op.o" "__copysynth_tuned_$op" >"$tmp/$op.asm.hex"
  check "the library's $op is byte for byte --emit-asm's ($(wc -w <"$tmp/$op.lib.hex") bytes)" \
    bash -c "test -s '$tmp/$op.lib.hex' && cmp -s '$tmp/$op.lib.hex' '$tmp/$op.asm.hex'"
done

# ---- 2. the probe: preloaded, linked, static --------------------------------------------------------
"$cc" -O2 -o "$tmp/probe" "$probe_src" -lpthread
check "probe built" test -x "$tmp/probe"
LD_PRELOAD=$so "$tmp/probe" --expect-lib libcopysynth-tuned --expect-active 1 >"$tmp/probe.out" 2>"$tmp/probe.err"
rc=$?
check "probe under LD_PRELOAD: every check passes, the routines are the library's, tuned (rc=$rc)" test $rc -eq 0
cat "$tmp/probe.out" "$tmp/probe.err"
check "probe without it: copysynth_tuned_active is not there" bash -c "! '$tmp/probe' --expect-active 1 >/dev/null 2>&1"
"$cc" -O2 -o "$tmp/probe-linked" "$probe_src" -L"$lib" -lcopysynth-tuned -Wl,-rpath,"$lib" -lpthread
"$tmp/probe-linked" --expect-lib libcopysynth-tuned --expect-active 1 >"$tmp/linked.out" 2>&1
rc=$?
check "probe linked with -lcopysynth-tuned (rc=$rc)" test $rc -eq 0
cat "$tmp/linked.out"
check "... and it needs libcopysynth-tuned.so.1, the soname, not the link's name" \
  bash -c "readelf -d '$tmp/probe-linked' | grep -q 'Shared library: \[libcopysynth-tuned.so.1\]'"
# The header declares copysynth_tuned_active for C and C++ alike (a C++ program that declared it
# itself without extern "C" failed to link).
printf '#include <copysynth-tuned.h>\nint main(void) { return copysynth_tuned_active() == 1 ? 0 : 1; }\n' >"$tmp/active.c"
cp "$tmp/active.c" "$tmp/active.cpp"
for src in active.c active.cpp; do
  comp=$cc; [ "$src" = active.cpp ] && comp=${CXX:-c++}
  $comp -Wall -Wextra -Werror -O2 -I"$lib" -o "$tmp/$src.bin" "$tmp/$src" -L"$lib" -lcopysynth-tuned -Wl,-rpath,"$lib" 2>"$tmp/$src.err"
  rc=$?
  "$tmp/$src.bin" 2>/dev/null
  check "$src includes copysynth-tuned.h, builds with -Wall -Wextra -Werror, links, and the tuned routines are active (rc=$rc, run $?)" \
    bash -c "test $rc -eq 0 && '$tmp/$src.bin'"
done
"$cc" -O2 -static -o "$tmp/probe-static" "$probe_src" "$lib/libcopysynth-tuned.a" -lpthread 2>"$tmp/static.err"
check "probe links statically with libcopysynth-tuned.a" test -x "$tmp/probe-static"
check "... its memcpy is the library's (nm)" bash -c "nm '$tmp/probe-static' | grep -q ' __copysynth_tuned_memcpy$'"
check "... and dynamic section: none (a static program)" bash -c "! readelf -dW '$tmp/probe-static' | grep -q NEEDED"
"$tmp/probe-static" --expect-active 1 >"$tmp/static.out" 2>&1
rc=$?
check "the static probe: every check passes with the tuned routines (rc=$rc)" test $rc -eq 0
cat "$tmp/static.out"

# A program that defines memcpy itself takes memmove and copysynth_tuned_active from the archive:
# each export is in an object of its own, so no duplicate definition of memcpy.
cat >"$tmp/own.c" <<'EOF2'
#include <stddef.h>
#include <string.h>
int copysynth_tuned_active(void);
void *memcpy(void *restrict d, const void *restrict s, size_t n) {
  unsigned char *a = d;
  const unsigned char *b = s;
  while (n--) *a++ = *b++;
  return d;
}
int main(void) {
  static char buf[300000];
  for (size_t i = 0; i < sizeof buf; ++i) buf[i] = (char)(i * 7);
  void *(*volatile mv)(void *, const void *, size_t) = memmove;
  mv(buf + 3, buf, sizeof buf - 3);
  for (size_t i = 3; i < sizeof buf; ++i)
    if (buf[i] != (char)((i - 3) * 7)) return 2;
  /* A fortified copy (_FORTIFY_SOURCE): __memcpy_chk from the archive, beside this memcpy. */
  static char dst[1000];
  volatile size_t n = 999;
  __builtin___memcpy_chk(dst, buf + 3, n, sizeof dst);
  if (dst[998] != buf[1001]) return 4;
  return copysynth_tuned_active() == 1 ? 0 : 3;
}
EOF2
"$cc" -O1 -o "$tmp/own" "$tmp/own.c" "$lib/libcopysynth-tuned.a" 2>"$tmp/own.err"
rc=$?
"$tmp/own" 2>/dev/null
run=$?
check "a program with its own memcpy links memmove and __memcpy_chk from libcopysynth-tuned.a, copies right, tuned (link rc=$rc, run $run)" \
  bash -c "test $rc -eq 0 && test $run -eq 0 && nm '$tmp/own' | grep -q ' __copysynth_tuned_memmove$' && nm '$tmp/own' | grep -q ' T __memcpy_chk$'"
sed 's/^/       /' "$tmp/own.err" | head -5

# The unwind information is right at the instructions that fault, not only present: each routine
# made to fault part way through a copy (its source or destination runs into a PROT_NONE page), in
# every size class from the masked class to rep movsb; the SIGSEGV handler's backtrace() must walk
# from the faulting instruction out through the caller. A wrong CFA there loses the caller (or
# crashes the unwinder). The same program with glibc's routines is the control.
cat >"$tmp/unwind.c" <<'EOF2'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

static sigjmp_buf env;
static volatile int walked, in_routine;
static const char *routine_file;
/* The routines' ranges in routine_file, as offsets from its load address (nm -S); none: any
   code of that file counts. */
static unsigned long ranges[16][2];
static int nranges;

static void on_segv(int sig, siginfo_t *si, void *ucv) {
  (void)sig, (void)si;
  /* Where the fault is: the interrupted instruction, in one of the routines. */
  const ucontext_t *uc = ucv;
  void *pc = (void *)uc->uc_mcontext.gregs[REG_RIP];
  Dl_info d;
  if (dladdr(pc, &d) && d.dli_fname && strstr(d.dli_fname, routine_file)) {
    const unsigned long off = (unsigned long)((char *)pc - (char *)d.dli_fbase);
    in_routine = nranges == 0;
    for (int i = 0; i < nranges; ++i)
      if (off >= ranges[i][0] && off < ranges[i][1]) in_routine = 1;
  }
  void *frames[64];
  int n = backtrace(frames, 64);
  for (int i = 0; i < n; ++i)
    if (dladdr(frames[i], &d) && d.dli_sname && strcmp(d.dli_sname, "copy_here") == 0) walked = 1;
  siglongjmp(env, 1);
}

volatile unsigned char sink;
/* Not inlined and not a tail call: its frame is the one the walk must reach. */
__attribute__((noinline)) void copy_here(int op, unsigned char *d, const unsigned char *s, size_t n) {
  if (op == 0) memcpy(d, s, n);
  else if (op == 1) memmove(d, s, n);
  else memset(d, 7, n);
  sink = d[0];
}

int main(int argc, char **argv) {
  routine_file = argc > 1 ? argv[1] : "libc.so";
  for (int i = 2; i + 1 < argc && nranges < 16; i += 2, ++nranges) {
    ranges[nranges][0] = strtoul(argv[i], NULL, 16);
    ranges[nranges][1] = ranges[nranges][0] + strtoul(argv[i + 1], NULL, 16);
  }
  void *warm[4];
  backtrace(warm, 4); /* loads the unwinder now, not inside the signal handler */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGSEGV, &sa, NULL);
  const size_t span = 8u << 20;
  unsigned char *region = mmap(NULL, span + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  unsigned char *other = malloc(span);
  if (region == MAP_FAILED || !other || mprotect(region + span, 4096, PROT_NONE) != 0) return 2;
  unsigned char *guard = region + span;
  static const size_t sizes[] = {9, 40, 100, 300, 1000, 5000, 20000, 70000, 300000, 3000000};
  static const char *names[] = {"memcpy", "memmove", "memset"};
  int bad = 0;
  for (int op = 0; op < 3; ++op)
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
      const size_t n = sizes[i], before = n / 2 + 1;  /* the copy runs n - before bytes into the guard */
      walked = in_routine = 0;
      if (sigsetjmp(env, 1) == 0) {
        if (op == 2) copy_here(op, guard - before, NULL, n);  /* the destination faults */
        else copy_here(op, other, guard - before, n);         /* the source faults */
        printf("FAIL %s %zu: no fault\n", names[op], n);
        bad = 1;
        continue;
      }
      if (!walked || !in_routine) bad = 1;
      printf("%s %s %zu: %s%s\n", walked && in_routine ? "ok  " : "FAIL", names[op], n,
             in_routine ? "faulted in the routine" : "the faulting instruction is not in the routines",
             walked ? ", backtrace() reached the caller" : ", backtrace() lost the caller");
    }
  return bad;
}
EOF2
"$cc" -O1 -fno-optimize-sibling-calls -fno-builtin -rdynamic -o "$tmp/unwind" "$tmp/unwind.c" -L"$lib" -lcopysynth-tuned -Wl,-rpath,"$lib" -ldl
brc=$?
"$cc" -O1 -fno-optimize-sibling-calls -fno-builtin -rdynamic -o "$tmp/unwind-glibc" "$tmp/unwind.c" -ldl
bcrc=$?
# The tuned routines' ranges (offset, size), so that a fault counts only inside them.
tuned_ranges=$(nm -S --defined-only "$so" | awk '$4 ~ /^__copysynth_tuned_/ { print $1, $2 }')
"$tmp/unwind-glibc" libc.so >"$tmp/unwind-glibc.out" 2>&1; crc=$?
"$tmp/unwind" libcopysynth-tuned $tuned_ranges >"$tmp/unwind.out" 2>&1; rc=$?
check "control: with glibc's routines each faulting copy is walked back to its caller (build rc=$bcrc, rc=$crc)" \
  bash -c "test $bcrc -eq 0 && test $crc -eq 0"
check "a fault inside each of the $(echo "$tuned_ranges" | wc -l) tuned routines, in every size class, is walked back to its caller (backtrace(), .eh_frame; build rc=$brc, rc=$rc)" \
  bash -c "test $brc -eq 0 && test $rc -eq 0 && test -n '$tuned_ranges'"
grep FAIL "$tmp/unwind.out" "$tmp/unwind-glibc.out" | head -10

# ---- 3. real programs -------------------------------------------------------------------------------
seq 1 200000 | awk '{ printf "%d %d copysynth %s\n", $1, ($1 * $1) % 9973, substr("abcdefghijklmnopqrstuvwxyz", 1 + $1 % 26) }' >"$tmp/input"
head -c 3000000 "$at" >>"$tmp/input"
for p in "zstd -q -T2 -6" "xz -q -T1 -3"; do
  set -- $p
  name=$1
  "$@" -c "$tmp/input" >"$tmp/ref.$name"
  LD_PRELOAD=$so "$@" -c "$tmp/input" >"$tmp/lib.$name" 2>"$tmp/lib.$name.err"
  check "$name: compressed output identical under the library" cmp "$tmp/ref.$name" "$tmp/lib.$name"
  check "$name: nothing on stderr under the library" test ! -s "$tmp/lib.$name.err"
  cat "$tmp/lib.$name.err"
  LD_PRELOAD=$so "$name" -q -d -c "$tmp/lib.$name" >"$tmp/lib.un$name"
  check "$name -d under the library gives the input" cmp "$tmp/input" "$tmp/lib.un$name"
  LD_DEBUG=bindings LD_PRELOAD=$so "$name" -q -d -c "$tmp/lib.$name" 2>&1 >/dev/null | grep -F 'libcopysynth-tuned.so' >"$tmp/bind.$name"
  check "$name binds memcpy to the library (LD_DEBUG=bindings)" grep -q "symbol \`memcpy'" "$tmp/bind.$name"
done
sql=$(dirname "$0")/preload_sqlite.sql
sqlite3 "$tmp/ref.db" <"$sql" >"$tmp/ref.sqlout" 2>&1
LD_PRELOAD=$so sqlite3 "$tmp/lib.db" <"$sql" >"$tmp/lib.sqlout" 2>&1
check "sqlite3: query output identical under the library (stderr included)" cmp "$tmp/ref.sqlout" "$tmp/lib.sqlout"
check "sqlite3: the query output is real (integrity ok)" grep -qx ok "$tmp/lib.sqlout"
check "sqlite3: database file identical under the library" cmp "$tmp/ref.db" "$tmp/lib.db"

# ---- 4. another CPU's guard: the built-in routines ---------------------------------------------------
host_sig=$("$at" --show "$wisdom" | sed -n 's/^host\[0\]\.cpu\.signature="\(.*\)"$/\1/p')
head=${host_sig%%:*} feats=${host_sig#*:}
vendor=${head%%-*} rest=${head#*-}
family=${rest%%-*} model=${rest#*-}
other_vendor=GenuineIntel
[ "$vendor" = GenuineIntel ] && other_vendor=AuthenticAMD
missing=
for f in avx avx2 avx512f avx512bw avx512vl bmi2 erms fsrm prefetchw; do
  case ",$feats," in *",$f,"*) ;; *) missing=$f; break ;; esac
done
guards=("$other_vendor-$family-$model:$feats" "$vendor-$family-$((model + 1)):$feats")
[ -n "$missing" ] && guards+=("$host_sig,$missing")
[ -z "$missing" ] && skip_part "this host has every feature copysynth knows: the 'a feature this host lacks' guard is not tried"
i=0
for g in "${guards[@]}"; do
  i=$((i + 1))
  "$at" -q --from "$wisdom" --emit-lib "$tmp/foreign$i" --lib-guard "$g" >/dev/null 2>"$tmp/foreign$i.err"
  check "--lib-guard $g: written" test -s "$tmp/foreign$i/libcopysynth-tuned.so"
  LD_PRELOAD=$tmp/foreign$i/libcopysynth-tuned.so "$tmp/probe" --expect-lib libcopysynth-tuned --expect-active 0 >"$tmp/f$i.out" 2>&1
  rc=$?
  check "... on this host it falls back to the built-in routines, and every probe check passes (rc=$rc)" test $rc -eq 0
  cat "$tmp/f$i.out"
done
LD_PRELOAD=$tmp/foreign1/libcopysynth-tuned.so xz -q -d -c "$tmp/ref.xz" >"$tmp/foreign.unxz"
check "xz -d under the fallback library gives the input" cmp "$tmp/input" "$tmp/foreign.unxz"
"$cc" -O2 -static -o "$tmp/probe-static-foreign" "$probe_src" "$tmp/foreign1/libcopysynth-tuned.a" -lpthread 2>/dev/null
"$tmp/probe-static-foreign" --expect-active 0 >"$tmp/sf.out" 2>&1
rc=$?
check "a static program with the fallback .a: the built-in routines, every check passes (rc=$rc)" test $rc -eq 0

# ---- 5. errors -------------------------------------------------------------------------------------
"$at" -q --emit-lib "$tmp/x" >/dev/null 2>"$tmp/e1"
rc=$?
check "--emit-lib without --from: exit 1 and what to do (rc=$rc)" bash -c "test $rc -eq 1 && grep -q 'give its wisdom file with --from' '$tmp/e1'"
"$at" -q --from "$wisdom" --emit-lib "$tmp/x" --lib-guard nonsense >/dev/null 2>"$tmp/e2"
rc=$?
check "--lib-guard nonsense: exit 1 (a bad command line), says what a signature is (rc=$rc)" bash -c "test $rc -eq 1 && grep -q 'is not a CPU signature' '$tmp/e2'"
check "... and writes nothing" bash -c "test ! -e '$tmp/x/libcopysynth-tuned.so.1' && test ! -L '$tmp/x/libcopysynth-tuned.so' && test ! -e '$tmp/x/libcopysynth-tuned.so'"
# A relative DIR whose name starts with '-': written (as, ld and ar never see it as an option).
(cd "$tmp" && "$at" -q --from "$wisdom" --op memcpy --emit-lib -dashlib >/dev/null 2>"$tmp/e6"); rc=$?
check "--emit-lib -dashlib (relative, starts with '-'): exit 0, the library written (rc=$rc)" \
  bash -c "test $rc -eq 0 && test -s '$tmp/-dashlib/libcopysynth-tuned.so.1' && test -s '$tmp/-dashlib/libcopysynth-tuned.a'"
# Re-emitted with --op memcpy over a library of three: the two functions it no longer replaces are
# said, --quiet or not (they were dropped without a word).
cp -a "$lib" "$tmp/lib4"
"$at" -q --from "$tmp/lib4/wisdom.json" --op memcpy --emit-lib "$tmp/lib4" >/dev/null 2>"$tmp/e7"; rc=$?
check "--emit-lib --op memcpy over a library of three: exit 0, says memmove and memset are no longer replaced (rc=$rc)" \
  bash -c "test $rc -eq 0 && grep -q 'also replaced memmove and memset; this one does not' '$tmp/e7' &&
           test \"\$(nm -D --defined-only '$tmp/lib4/libcopysynth-tuned.so.1' | awk '{ print \$3 }' | sort | tr '\n' ' ')\" = '__memcpy_chk copysynth_tuned_active memcpy '"
"$at" -q --from "$tmp/lib4/wisdom.json" --op memcpy --emit-lib "$tmp/lib4" >/dev/null 2>"$tmp/e8"; rc=$?
check "... and again: the library of memcpy alone replaced by one, nothing said (rc=$rc)" \
  bash -c "test $rc -eq 0 && ! grep -q 'also replaced' '$tmp/e8'"
# A DIR that cannot be made is said before the minutes of verification, with its cause.
: >"$tmp/afile"
"$at" -q --from "$wisdom" --emit-lib "$tmp/afile" >/dev/null 2>"$tmp/e4"; rc=$?
check "--emit-lib onto a file: exit 2, said before any verification (rc=$rc)" \
  bash -c "test $rc -eq 2 && grep -q 'a file of that name exists' '$tmp/e4' && ! grep -q 'conformance' '$tmp/e4'"
"$at" --from "$wisdom" --emit-lib "$tmp/no/lib" >/dev/null 2>"$tmp/e5"; rc=$?
check "--emit-lib under a missing parent: exit 2, said before any verification (rc=$rc)" \
  bash -c "test $rc -eq 2 && grep -q 'its parent .*/no does not exist' '$tmp/e5' && ! grep -q 'conformance' '$tmp/e5'"
# A guard of this CPU model that does not require what the tuned code uses (SSE2 alone, for AVX
# routines) would run that code on a CPU of the model whose OS disables AVX: refused.
if grep -q '"vector_width": \(32\|64\)' "$wisdom"; then
  "$at" -q --from "$wisdom" --emit-lib "$tmp/x" --lib-guard "$vendor-$family-$model:sse2" >/dev/null 2>"$tmp/e3"
  rc=$?
  check "--lib-guard of this model with sse2 alone: refused, says why (rc=$rc)" \
    bash -c "test $rc -eq 2 && grep -q 'does not require what the tuned' '$tmp/e3' && test ! -e '$tmp/x/libcopysynth-tuned.so.1' && test ! -L '$tmp/x/libcopysynth-tuned.so'"
else
  skip_part "the tuned routines use SSE2 alone: a guard of sse2 covers them"
fi

echo "$fails failure(s)"
test $fails -eq 0
