#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds tgc with the CUDA backend and runs
# the GPU tests (the CUDA kernels against the CPU kernels, CPU and GPU
# training compared, compute-sanitizer memcheck) and the rest of the suite.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="/usr/local/cuda/bin:$PATH"
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh"
nvidia-smi -L
/usr/lib/llvm-22/bin/lit -v "${TGC_BUILD_DIR:-$root/build}/test/gpu" \
  "${TGC_BUILD_DIR:-$root/build}/test/Unit"
