#!/usr/bin/env bash
# The whole lit suite against an AddressSanitizer + UndefinedBehaviorSanitizer
# build of the compiler, runtime and tools (build-asan/; the CUDA backend is
# left out: its kernels run under ASan on the emulator in the normal suite).
# Any out-of-bounds access, use after free, leak or undefined behaviour in a
# test aborts that test.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TGC_ASAN_BUILD_DIR:-$root/build-asan}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DTGC_SANITIZE=ON -DTGC_ENABLE_CUDA=OFF
fi
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
ninja -C "$build" check-tgc
