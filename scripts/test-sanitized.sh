#!/usr/bin/env bash
# The whole lit suite against the AddressSanitizer + UndefinedBehaviorSanitizer
# build of the compiler, runtime and tools (build-san/, scripts/build-sanitized.sh;
# the CUDA backend is left out: its kernels run under ASan on the emulator in
# the normal suite). Any out-of-bounds access, use after free, leak or
# undefined behaviour in a test aborts that test.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
bash "$root/scripts/build-sanitized.sh" check-tgc
