#!/usr/bin/env bash
# Configures (once) and builds the sanitized tree, build-san/ (or
# $TGC_SAN_BUILD_DIR): clang-22 with AddressSanitizer, UndefinedBehaviorSanitizer
# and libFuzzer's coverage instrumentation (-DTGC_FUZZ=ON), without the CUDA
# backend (its kernels run under ASan on the emulator in the normal suite).
# One tree serves both scripts/test-sanitized.sh (the lit suite) and
# scripts/fuzz.sh (the harnesses linked with libFuzzer). Arguments are
# ninja targets.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TGC_SAN_BUILD_DIR:-$root/build-san}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DTGC_FUZZ=ON -DTGC_ENABLE_CUDA=OFF
fi
ninja -C "$build" "$@"
