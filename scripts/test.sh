#!/usr/bin/env bash
# Sets up, builds and runs every tgc test: the README's test command, and
# what CI runs. After the suite on the normal build: its numerics-sensitive
# part again under the CPU kernel set next below this machine's own
# (scripts/test-kernel-sets.sh: OpenBLAS's kernels and the vector math of an
# AVX2 CPU on an AVX-512 one, of an AVX-only CPU on an AVX2 one), the same
# suite on an
# AddressSanitizer + UBSan build (scripts/test-sanitized.sh), and every
# fuzzing harness, linked with libFuzzer in that same build, for a bounded
# time (scripts/fuzz.sh; TGC_FUZZ_SECONDS, default 20 per harness). Each
# phase's time is printed as it ends.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# Each phase's wall time, printed as it ends and as a table at the end.
times=()
phase() {
  local name="$1" start=$SECONDS
  shift
  "$@"
  times+=("$(printf '%-16s %6d s' "$name" $((SECONDS - start)))")
  echo "test.sh: $name took $((SECONDS - start)) s"
}
phase install-deps bash "$root/scripts/install-deps.sh"
phase build bash "$root/scripts/build.sh"
phase check-tgc bash "$root/scripts/build.sh" check-tgc
phase kernel-sets bash "$root/scripts/test-kernel-sets.sh"
phase sanitized bash "$root/scripts/test-sanitized.sh"
phase fuzz bash "$root/scripts/fuzz.sh" --time "${TGC_FUZZ_SECONDS:-20}" --seed 1
printf '%s\n' "${times[@]}"
