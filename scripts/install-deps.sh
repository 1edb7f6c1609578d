#!/usr/bin/env bash
# Installs what tgc needs to build and test on Debian 12: MLIR/LLVM 22 from
# Debian's packages, the build tools, and the Python pieces lit and the
# reference tests use. Idempotent: packages already present are skipped by
# apt-get itself; run as root (or with sudo available).
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi

PACKAGES=(
  cmake ninja-build g++ python3
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libgtest-dev libopenblas-dev flatbuffers-compiler libflatbuffers-dev
  python3-torch
  # Test only: the remat optimality test's exact baseline
  # (test/Transforms/Inputs/checkmate.py, a MILP solved with CBC).
  coinor-cbc python3-pulp
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -ne 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi
