#!/usr/bin/env bash
# Runs in a bundle made by scripts/gpu-bundle.sh, on a machine with an
# NVIDIA GPU: every CUDA kernel against the CPU kernels, the 2-layer GPT-2
# trained on the GPU and on the CPU (losses within 1e-3 relative, f32 and
# bf16), the GPT-2 124M benchmark against PyTorch (with plans measured on
# the device and a profile), and compute-sanitizer: memcheck on training
# steps and on the kernel tests, racecheck on the attention kernels. The
# benchmark table (bench.md), the device (device.txt) and the PASS/FAIL lines
# (summary.txt) go to OUTDIR, and every check's log and files into one
# archive there, checks.tar.gz (a device's caller may take back only a few
# files); the exit status says whether every check passed.
#
#   bash run.sh OUTDIR [--no-bench] [--no-memcheck]
#
# TGC_RUN and TGC_CUDA_TESTS replace the bundle's binaries (the CUDA
# emulator's, to try this script without a GPU) and TGC_GPU_STEPS the 50
# training steps.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: run.sh OUTDIR [--no-bench] [--no-memcheck]}"
shift
bench=1 memcheck=1
for option in "$@"; do
  case "$option" in
  --no-bench) bench=0 ;;
  --no-memcheck) memcheck=0 ;;
  *)
    echo "run.sh: unknown option '$option'" >&2
    exit 2
    ;;
  esac
done
mkdir -p "$out/checks"
top="$out"
out="$out/checks"
export LD_LIBRARY_PATH="$here/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
# CUDA's own libraries come from the machine: the toolkit's folder, or
# wherever else they are (a Python environment's nvidia packages).
for lib in libcudart.so.13 libcublasLt.so.13 libcublas.so.13 libnccl.so.2; do
  if ! ldconfig -p 2> /dev/null | grep -q "$lib" &&
    [ ! -e "/usr/local/cuda/lib64/$lib" ]; then
    found="$(find / -name "$lib*" -not -path '/proc/*' 2> /dev/null | head -n 1)"
    [ -n "$found" ] && LD_LIBRARY_PATH="$(dirname "$found"):$LD_LIBRARY_PATH"
  fi
done
run="${TGC_RUN:-$here/bin/tgc-run}"
tests="${TGC_CUDA_TESTS:-$here/bin/tgc-cuda-tests}"
steps="${TGC_GPU_STEPS:-50}"
tgx="$here/tgx"
failed=0

check() {
  local name="$1"
  shift
  if "$@" > "$out/$name.log" 2>&1; then
    echo "PASS $name" | tee -a "$top/summary.txt"
  else
    echo "FAIL $name (exit $?; checks/$name.log in checks.tar.gz):" |
      tee -a "$top/summary.txt"
    failed=1
  fi
  tail -n 3 "$out/$name.log" | sed 's/^/    /'
}

# The CPU against the GPU from the same weights: every loss within 1e-3
# relative, half a bf16 rounding (2^-9): the 16-bit runs differ by one
# 16-bit rounding of attention's P and dS (test/cuda-emu/train-gpt2.test);
# f32 runs differ only in the order of their sums and in the GPU's own
# exp/tanh (a few ulps), far inside it.
compare() {
  local precision="$1" model="$tgx/gpt2-2layer-$1.tgx"
  "$run" "$model" --steps 0 --seed 11 --save "$out/init-$precision.safetensors" \
    --quiet &&
    "$run" "$model" --device cpu --load-weights "$out/init-$precision.safetensors" \
      --steps "$steps" --metrics "$out/$precision-cpu.jsonl" --quiet &&
    "$run" "$model" --device cuda --load-weights "$out/init-$precision.safetensors" \
      --steps "$steps" --metrics "$out/$precision-cuda.jsonl" &&
    python3 "$here/compare_losses.py" "$out/$precision-cpu.jsonl" \
      "$out/$precision-cuda.jsonl" 1e-3
}

memcheck() {
  command -v compute-sanitizer > /dev/null || {
    echo "compute-sanitizer not found"
    return 1
  }
  compute-sanitizer --tool memcheck --error-exitcode 1 "$@"
}

{
  nvidia-smi -L 2>&1 || echo "nvidia-smi not found"
  ldd "$run" "$tests" | grep "not found"
} | tee "$top/device.txt"
: > "$top/summary.txt"
check kernels "$tests" --gtest_brief=1
check train-f32 compare f32
check train-bf16 compare bf16
check train-8bit compare 8bit
check train-4bit compare 4bit
check train-adafactor compare adafactor
check train-accum compare accum
check train-f16 compare f16
check train-fused compare fused
check train-offload compare offload
check train-offload-all compare offload-all
check train-zero3 compare zero3
# The benchmark before compute-sanitizer, whose runs are the slowest.
if [ "$bench" = 1 ]; then
  check bench python3 "$here/bench_gpu.py" --prebuilt "$tgx" --bins \
    "$(dirname "$run")" --out "$top/bench.md"
fi
if [ "$memcheck" = 1 ]; then
  check memcheck-train memcheck "$run" "$tgx/gpt2-tiny.tgx" --device cuda \
    --steps 2 --quiet
  check memcheck-kernels memcheck "$tests" --gtest_brief=1
  # Shared-memory races in the kernels that share tiles between warps.
  check racecheck-attention compute-sanitizer --tool racecheck \
    --error-exitcode 1 "$tests" --gtest_brief=1 --gtest_filter='*ttention*'
fi
# Without the initial weights (up to 16 MiB each), which the logs describe.
rm -f "$out"/init-*.safetensors
tar czf "$top/checks.tar.gz" -C "$top" checks && rm -rf "$out"
exit "$failed"
