# shellcheck shell=bash
# The real programs copysynth is judged on, shared by tools/bench-preload.sh (wall time under
# glibc, the shim, the library, AOCL-LibMem) and tools/profile-guided.sh (record, tune, judge):
#   sqlite   sqlite3 with tests/preload_sqlite.sql on an in-memory database (no disk I/O): 60000
#            rows built, indexed, aggregated, updated, vacuumed and queried (~6 M memcpy calls)
#   xz       xz -d: decompressing 6 MB (text and machine code) to /dev/null (~300 k memcpy calls)
#   zstd     zstd -d: decompressing 10 MB to /dev/null (few, large copies)
#   gzip     gzip -d: decompressing 33 MB (the same data three times) to /dev/null: inflate copies
#            most matches through memcpy (~2.5 M calls, 12 bytes on average)
#   perl     perl copying an 8 MB string 500 times (a copy-on-write copy, then one byte changed):
#            501 memmove calls of 8 MB (the shim's count), where the rep and non-temporal classes decide
#   true     /bin/true: start-up cost alone
# Source it from the repository root; needs sqlite3, xz-utils, zstd, gzip (tools/install-deps.sh
# --test) and perl (perl-base, Essential in Debian).

real_programs=(sqlite xz zstd gzip perl true)

# make_program_inputs DIR AUTOTUNE: the compressed inputs in DIR (text, then the autotune binary's
# bytes as machine code).
make_program_inputs() {
  seq 1 240000 | awk '{ printf "%d %d copysynth %s\n", $1, ($1 * $1) % 9973, substr("abcdefghijklmnopqrstuvwxyz", 1 + $1 % 26) }' >"$1/input"
  head -c 3000000 "$2" >>"$1/input"
  zstd -q -T1 -6 -c "$1/input" >"$1/input.zst"
  head -c 6000000 "$1/input" | xz -q -T1 -3 -c >"$1/input.xz"
  cat "$1/input" "$1/input" "$1/input" | gzip -6 -c >"$1/input.gz"
}

# program_command NAME DIR: the shell command of a program on the inputs in DIR (output discarded).
program_command() {
  case $1 in
    sqlite) echo "sqlite3 :memory: <$PWD/tests/preload_sqlite.sql >/dev/null" ;;
    xz) echo "xz -q -d -c $2/input.xz >/dev/null" ;;
    zstd) echo "zstd -q -d -c $2/input.zst >/dev/null" ;;
    gzip) echo "gzip -d -c $2/input.gz >/dev/null" ;;
    perl) echo "perl -e 'my \$x = \"a\" x 8e6; for (1..500) { my \$y = \$x; substr(\$y, 0, 1, \"b\") }'" ;;
    true) echo "/bin/true" ;;
    *) return 1 ;;
  esac
}
