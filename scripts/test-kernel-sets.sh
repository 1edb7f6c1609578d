#!/usr/bin/env bash
# Runs the numerics-sensitive part of the suite (the runtime's and the CUDA
# emulator's kernel tests, and the e2e and emulator tests but those of bad
# input and faults) once more under each
# CPU kernel set this machine can execute besides its own, so that a
# difference that would show on another x86-64 shows here:
#   avx     OpenBLAS's Sandybridge kernels, SSE2 vector math (an AVX-only CPU)
#   avx2    OpenBLAS's Haswell kernels, AVX2 vector math (AMD Zen, Intel
#           before Skylake-SP)
#   avx512  OpenBLAS's SkylakeX kernels, AVX-512 vector math
# The set the machine picks by itself (the last it supports) already ran in
# the main suite (scripts/test.sh) and is skipped, and so are the sets below
# the next one down (CI's time); `--all` runs every set.
# Each set is checked to be the one tgc-run reports before its tests run,
# and the script ends by listing which sets ran.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TGC_BUILD_DIR:-$root/build}"
all=0
[ "${1:-}" = "--all" ] && all=1

flags="$(grep -m1 '^flags' /proc/cpuinfo || true)"
has() { [[ " $flags " == *" $1 "* ]]; }
sets=()
has avx && sets+=("avx Sandybridge sse2")
has avx2 && has fma && sets+=("avx2 Haswell avx2")
has avx512f && has avx512bw && has avx512dq && has avx512vl && has avx512cd &&
  sets+=("avx512 SkylakeX avx512f")
if [ "$all" = 0 ] && [ "${#sets[@]}" -gt 0 ]; then
  unset 'sets[${#sets[@]}-1]' # the native set ran in the main suite
  # and of the others only the nearest below it: avx2 on an AVX-512 CPU
  # (the other kind of machine CI lands on), avx on an AVX2 one; CI's
  # machines differ, so between them every set runs.
  if [ "${#sets[@]}" -gt 1 ]; then sets=("${sets[${#sets[@]}-1]}"); fi
fi

model="$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "test-kernel-sets: CPU $model"
if [ "${#sets[@]}" -eq 0 ]; then
  echo "test-kernel-sets: no kernel set besides the native one"
  exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$build/bin/tgc-models" mlp --batch 4 > "$tmp/m.mlir"
"$build/bin/tgc-compile" "$tmp/m.mlir" -o "$tmp/m.tgx" > /dev/null

# Tests whose results do not depend on the kernels: bad and hostile input,
# faults, file conversion, planning (--fit), start-up, the emulator's own
# checks and the bundle; the 1000-step convergence run, whose 2% bound no
# kernel set comes near (the short bitwise checks of the same option still
# run); and the pairings that compare two tgc runs bit for bit on one
# kernel set (rematerialization, the update in the backward pass, state in
# host memory, resume, grouped updates, folded casts, the bshd attention
# layout, fused residual gradients, the kept log-sum-exp, CUDA graphs on
# and off), and the launch counts, which hold on any kernel set alike: together
# about 7 minutes of a set's run.
no_numerics='(bad-inputs|hostile-inputs|user-files|signals|dataset-errors|dataset-text|data-parallel-faults|load-weights-dtypes|hub-weights|fit|fit-large|start-up|convergence|remat-training|optimizer-in-backward|offload|checkpoint-resume|fuse-updates|fold-casts|attention-layout|fuse-residuals|keep-attention-lse|cuda-emu/(errors|emulator|memcheck|gpu-bundle|initial-values|cuda-graphs|estimate-launches))\.test'

ran=()
for set in "${sets[@]}"; do
  read -r name core math <<< "$set"
  export OPENBLAS_CORETYPE="$core" TGC_VECMATH="$math"
  line="$("$build/bin/tgc-run" "$tmp/m.tgx" --steps 1 | grep 'OpenBLAS')"
  case "$line" in
  *"OpenBLAS $core kernels"*"vector math $math"*) ;;
  *)
    echo "test-kernel-sets: asked for $core and $math, tgc-run reports: $line" >&2
    exit 1
    ;;
  esac
  echo "test-kernel-sets: $name ($line)"
  /usr/lib/llvm-22/bin/lit -sv "$build/test" \
    --filter '(e2e/|cuda-emu/|Unit/gtest/.*/tgc-unit-tests/|Unit/gtest-cuda-emu/|Unit/cuda-kernels)' \
    --filter-out "$no_numerics"
  ran+=("$name: OpenBLAS $core, vector math $math")
done
unset OPENBLAS_CORETYPE TGC_VECMATH
echo "test-kernel-sets: passed under"
for r in "${ran[@]}"; do echo "  $r"; done
