#!/usr/bin/env bash
# Installs the Debian packages copysynth builds and tests with (Debian 12 "bookworm" or 13
# "trixie", x86-64). Installs only what is missing; needs root (or sudo) when something is.
#
# Usage: tools/install-deps.sh [--test] [--bench]
#   (no option)  what building, testing with ctest and tuning need
#   --test       also what tools/run-tests.sh needs: clang and its libFuzzer/sanitizer runtime
#                (compiler-rt) for the fuzz stage (g++'s ASan/UBSan runtimes come with g++);
#                zstd, xz-utils, sqlite3 and gzip, the real programs run under the LD_PRELOAD shim;
#                pkgconf, to build the installed-package example with pkg-config;
#                locales for the locale tests;
#                ansible-core and python3-apt for the fleet playbook's test
#   --bench      also Google Benchmark (bench/, copysynth_bench) and the DPDK headers (the
#                rte_memcpy peer); tools/bench-preload.sh needs the --test programs
set -euo pipefail

with_test=0
with_bench=0
for arg in "$@"; do
  case $arg in
    --test) with_test=1 ;;
    --bench) with_bench=1 ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps: unknown option '$arg' (usage: tools/install-deps.sh [--test] [--bench])" >&2; exit 2 ;;
  esac
done

if [ "$(uname -m)" != x86_64 ]; then
  echo "install-deps: copysynth generates and runs x86-64 code; this machine is $(uname -m)." >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-deps: no apt-get here. Install by hand: a C++20 compiler (g++ >= 12), CMake >= 3.25," >&2
  echo "  asmjit, Boost (headers), doctest, nlohmann-json 3, CLI11 and Zydis 4." >&2
  exit 1
fi

packages=(
  ca-certificates  # apt over https mirrors
  cmake make g++   # build
  binutils         # GNU as, ld, ar: autotune --emit-lib builds the library with them; the .S writer's tests
                   # assemble its output (g++ pulls it in too)
  libc6-dev        # libc.a: the ahead-of-time library's test links a static program (g++ pulls it in too)
  libasmjit-dev    # machine-code emission
  libboost-dev     # Boost.Hana (reflection of CopyParams)
  nlohmann-json3-dev
  libcli11-dev
  doctest-dev
  libzydis-dev     # disassembler for the static checker of emitted code (verify)
  libseccomp-dev   # the tests (built by default) deny executable memory with a seccomp filter
)

if [ $with_test -eq 1 ]; then
  # compiler-rt (libclang_rt.fuzzer, asan, ubsan) is packaged apart from clang and only recommended
  # by it. Debian 12's `clang` is clang 14, whose runtime is libclang-rt-14-dev; from Debian 13 on,
  # libclang-rt-dev follows the default clang the way `clang` does.
  # shellcheck disable=SC1091
  codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
  case $codename in
    bookworm) packages+=(clang libclang-rt-14-dev) ;;
    *) packages+=(clang libclang-rt-dev) ;;
  esac
  # Unmodified programs the LD_PRELOAD shim test runs (tests/preload_test.sh); pkg-config for the
  # installed-package test (tests/install_test.sh).
  packages+=(zstd xz-utils sqlite3 gzip pkgconf)
  # The locale definitions a decimal-comma locale is built from (localedef, in the locale tests).
  packages+=(locales)
  # The fleet playbook's test (tests/ansible_test.sh): Ansible, and python3-apt for its apt task.
  packages+=(ansible-core python3-apt)
fi
if [ $with_bench -eq 1 ]; then
  # rte_memcpy is header-inline: only libdpdk-dev's headers are used, no DPDK library is linked.
  packages+=(libbenchmark-dev libdpdk-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all build dependencies are installed." >&2
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "  run this script as root, or: apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done." >&2
