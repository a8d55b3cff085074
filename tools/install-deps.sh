#!/usr/bin/env bash
# Installs the Debian packages copysynth builds and tests with (Debian 12 "bookworm" or 13
# "trixie", x86-64). Installs only what is missing; needs root (or sudo) when something is.
set -euo pipefail

if [ "$(uname -m)" != x86_64 ]; then
  echo "install-deps: copysynth generates and runs x86-64 code; this machine is $(uname -m)." >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-deps: no apt-get here. Install by hand: a C++20 compiler (g++ >= 12), CMake >= 3.25," >&2
  echo "  asmjit, Boost (headers), doctest, nlohmann-json 3 and CLI11." >&2
  exit 1
fi

packages=(
  ca-certificates  # apt over https mirrors
  cmake make g++   # build
  libasmjit-dev    # machine-code emission
  libboost-dev     # Boost.Hana (reflection of CopyParams)
  nlohmann-json3-dev
  libcli11-dev
  doctest-dev
)

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
