#!/usr/bin/env bash
# Runs a command in a brand-new minimal Debian root (bookworm = Debian 12, glibc 2.36; trixie =
# Debian 13, glibc 2.41) on a clean clone of this repository's committed HEAD: the check that
# README's two commands work on both releases, and the way to measure against glibc 2.41's memcpy
# on a Debian 12 host (docs/performance.md).
#
# Usage: tools/in-debian.sh [--out DIR] SUITE 'COMMAND'
#   SUITE      bookworm or trixie
#   COMMAND    a shell line run as root in the clone (/work/project), e.g.
#                tools/in-debian.sh trixie 'tools/install-deps.sh --test && tools/run-tests.sh'
#   --out DIR  DIR (created if missing) is mounted at /out inside the root, for results:
#                tools/in-debian.sh --out docs/perf/debian13 trixie 'tools/perf-report.sh /out'
# Exit status: the command's. Needs root, mmdebstrap (installed with apt-get when missing) and
# unshare (util-linux). The base root is built once per suite (~1 min) and cached in
# ${COPYSYNTH_DEBIAN_CACHE:-/var/cache/copysynth-debian}; each run unpacks a fresh copy.
set -euo pipefail

out=""
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
if [ $# -ne 2 ]; then
  echo "in-debian: usage: tools/in-debian.sh [--out DIR] bookworm|trixie 'COMMAND'" >&2
  exit 2
fi
suite=$1 cmd=$2
case $suite in
  bookworm | trixie) ;;
  *) echo "in-debian: unknown suite '$suite' (bookworm = Debian 12, trixie = Debian 13)" >&2; exit 2 ;;
esac
if [ "$(id -u)" != 0 ]; then
  echo "in-debian: needs root (mmdebstrap, unshare, chroot); run it with sudo" >&2
  exit 2
fi
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  echo "in-debian: note: uncommitted changes are not in the clone (it is of HEAD $(git -C "$repo" rev-parse --short HEAD))" >&2
fi

cache=${COPYSYNTH_DEBIAN_CACHE:-/var/cache/copysynth-debian}
mkdir -p "$cache"
base=$cache/$suite.tar
if [ ! -s "$base" ]; then
  command -v mmdebstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq mmdebstrap >/dev/null; }
  # The host's mirrors, with the suite swapped in (deb822 sources or a classic sources.list).
  sources=$cache/$suite.sources
  if [ -s /etc/apt/sources.list.d/debian.sources ]; then
    sed -E "s/\b(bookworm|trixie)\b/$suite/g" /etc/apt/sources.list.d/debian.sources >"$sources"
  else
    sed -E "s/\b(bookworm|trixie)\b/$suite/g" /etc/apt/sources.list >"$sources.list"
    sources=$sources.list
  fi
  echo "in-debian: building a minimal $suite root (once; cached in $base)" >&2
  mmdebstrap --variant=minbase --include=ca-certificates,git "$suite" "$cache/$suite.partial.tar" "$sources" \
    >"$cache/mmdebstrap-$suite.log" 2>&1 || { echo "in-debian: mmdebstrap failed; see $cache/mmdebstrap-$suite.log" >&2; exit 1; }
  mv "$cache/$suite.partial.tar" "$base"
fi

root=$(mktemp -d "$cache/root-$suite-XXXXXX")
cleanup() { rm -rf "$root"; }
trap cleanup EXIT
tar -C "$root" -xf "$base"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/work" "$root/out"
git clone -q "$repo" "$root/work/project"
printf '%s\n' "$cmd" >"$root/work/cmd"
if [ -n "$out" ]; then
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
fi
echo "in-debian: $suite, HEAD $(git -C "$repo" rev-parse --short HEAD): $cmd" >&2
set +e
unshare --mount --fork bash -c '
  r=$1 out=$2
  mount -t proc proc "$r/proc" && mount --rbind /dev "$r/dev" && mount --rbind /sys "$r/sys" &&
    mount -t tmpfs tmpfs "$r/tmp" || exit 125
  if [ -n "$out" ]; then mount --bind "$out" "$r/out" || exit 125; fi
  chroot "$r" /usr/bin/env -i HOME=/root TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd /work/project && bash /work/cmd"
' _ "$root" "$out"
rc=$?
set -e
[ $rc = 125 ] && echo "in-debian: could not set up the root's mounts (unshare/mount need root)" >&2
exit $rc
