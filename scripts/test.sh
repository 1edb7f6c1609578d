#!/usr/bin/env bash
# Sets up, builds and runs every tgc test: the README's test command, and
# what CI runs. After the suite on the normal build: its numerics-sensitive
# part again under the CPU kernel set next below this machine's own
# (scripts/test-kernel-sets.sh: OpenBLAS's kernels and the vector math of an
# AVX2 CPU on an AVX-512 one, of an AVX-only CPU on an AVX2 one), the same
# suite on an
# AddressSanitizer + UBSan build (scripts/test-sanitized.sh), and every
# fuzzing harness for a bounded time (scripts/fuzz.sh; TGC_FUZZ_SECONDS,
# default 20 per harness).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh"
bash "$root/scripts/build.sh" check-tgc
bash "$root/scripts/test-kernel-sets.sh"
bash "$root/scripts/test-sanitized.sh"
bash "$root/scripts/fuzz.sh" --time "${TGC_FUZZ_SECONDS:-20}" --seed 1
