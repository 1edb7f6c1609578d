#!/usr/bin/env bash
# Packs what a GPU machine needs to check and measure the CUDA backend into
# one folder (default gpu-bundle/, ignored by git), for machines that have
# CUDA but neither MLIR, OpenBLAS nor a network: tgc-run and the CUDA
# kernel tests built here, the shared libraries they need beyond the C/C++
# runtime and CUDA's own, the executables (.tgx) compiled here, and
# run.sh (scripts/gpu-run.sh), which runs every GPU check and the benchmark
# there and writes the logs and the table into one folder:
#
#   bash scripts/gpu-bundle.sh            # here
#   bash gpu-bundle/run.sh "$OUT"         # on the GPU machine
#
# Under 64 MiB, so that it travels with the working tree.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TGC_BUILD_DIR:-$root/build}"
out="${1:-$root/gpu-bundle}"
bin="$build/bin"

# TGC_BUNDLE_NO_BUILD=1 packs what is built (the test of this script).
if [ "${TGC_BUNDLE_NO_BUILD:-0}" != 1 ]; then
  bash "$root/scripts/build.sh" tgc-run tgc-cuda-tests tgc-models tgc-compile
fi
[ -x "$bin/tgc-cuda-tests" ] || {
  echo "gpu-bundle: this build has no CUDA backend (no nvcc found)" >&2
  exit 1
}

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/tgx"
cp "$bin/tgc-run" "$bin/tgc-cuda-tests" "$out/bin/"
strip "$out/bin/"*

# The libraries the device's image may lack: what the binaries link, and
# OpenBLAS, which the CPU backend opens at run time (its OpenMP build when
# installed; it is found through run.sh's LD_LIBRARY_PATH).
openblas=/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0
[ -e "$openblas" ] || openblas="$(ldconfig -p | awk '/libopenblas.so.0 / {print $NF; exit}')"
[ -n "$openblas" ] && cp -L "$openblas" "$out/lib/libopenblas.so.0"
ldd "$bin/tgc-run" "$bin/tgc-cuda-tests" ${openblas:+"$openblas"} |
  awk '/=> \// {print $3}' | sort -u |
  while read -r lib; do
    case "$(basename "$lib")" in
    libc.so* | libm.so* | libstdc++* | libgcc_s* | libpthread* | libdl.so* | \
      librt.so* | ld-linux* | libcuda* | libcublas*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
    esac
  done

# The models of the GPU checks: test/gpu/gpt2-cuda-vs-cpu.test's 2-layer
# GPT-2 (f32 and bf16, and the optimizers' variants) and
# test/gpu/memcheck.test's tiny one.
"$bin/tgc-models" gpt2 --n-layer 2 --n-head 4 --n-embd 128 --vocab-size 512 \
  --block-size 64 --batch 8 --seq-len 64 -o "$out/tgx/gpt2-2layer.mlir"
"$bin/tgc-compile" "$out/tgx/gpt2-2layer.mlir" -o "$out/tgx/gpt2-2layer-f32.tgx"
"$bin/tgc-compile" "$out/tgx/gpt2-2layer.mlir" --amp=bf16 \
  -o "$out/tgx/gpt2-2layer-bf16.tgx"
# The same with 8-bit and 4-bit AdamW state, and with Adafactor (their CUDA
# kernels).
"$bin/tgc-compile" "$out/tgx/gpt2-2layer.mlir" --optimizer-state=8bit \
  -o "$out/tgx/gpt2-2layer-8bit.tgx"
"$bin/tgc-compile" "$out/tgx/gpt2-2layer.mlir" --optimizer-state=4bit \
  -o "$out/tgx/gpt2-2layer-4bit.tgx"
"$bin/tgc-compile" "$out/tgx/gpt2-2layer.mlir" --optimizer=adafactor \
  -o "$out/tgx/gpt2-2layer-adafactor.tgx"
# Gradient accumulation: the grad_step entry, and the update on no batch.
"$bin/tgc-compile" "$out/tgx/gpt2-2layer.mlir" --grad-accum=4 \
  --clip-grad-norm=1 -o "$out/tgx/gpt2-2layer-accum.tgx"
# f16 with dynamic loss scaling (the updates read the skip predicate on the
# device), and bf16 with tg-fuse's tg.linear (cuBLASLt epilogues); both run
# the fused 16-bit attention.
"$bin/tgc-compile" "$out/tgx/gpt2-2layer.mlir" --amp=f16 \
  -o "$out/tgx/gpt2-2layer-f16.tgx"
"$bin/tgc-compile" "$out/tgx/gpt2-2layer.mlir" --amp=bf16 --fuse \
  -o "$out/tgx/gpt2-2layer-fused.tgx"
# zero3 at world size 1 (no mpirun there): the parameters' gathers and the
# gradients' reduce-scatters on NCCL when it loads (else host memory).
"$bin/tgc-compile" "$out/tgx/gpt2-2layer.mlir" --amp=bf16 \
  --data-parallel=zero3 --world-size 1 -o "$out/tgx/gpt2-2layer-zero3.tgx"
# The optimizer state in pinned, mapped host memory (8-bit, and bf16 with
# the update in the backward pass, which reaches it mid-backward).
"$bin/tgc-compile" "$out/tgx/gpt2-2layer.mlir" --optimizer-state=8bit \
  --offload=optimizer -o "$out/tgx/gpt2-2layer-offload.tgx"
# The activations too (--offload=all): the copy engine's transfers to the
# pinned region and back, on a 2-layer GPT-2 wide enough that its blocks'
# checkpoints ([8, 256, 128] f32, 1 MiB) move.
"$bin/tgc-models" gpt2 --n-layer 2 --n-head 4 --n-embd 128 --vocab-size 512 \
  --block-size 256 --batch 8 --seq-len 256 -o "$out/tgx/gpt2-2layer-wide.mlir"
"$bin/tgc-compile" "$out/tgx/gpt2-2layer-wide.mlir" --amp=bf16 \
  --optimizer-state=8bit --remat=blocks --offload=all \
  -o "$out/tgx/gpt2-2layer-offload-all.tgx"
"$bin/tgc-models" gpt2 --preset tiny --batch 2 --seq-len 32 \
  -o "$out/tgx/gpt2-tiny.mlir"
"$bin/tgc-compile" "$out/tgx/gpt2-tiny.mlir" -o "$out/tgx/gpt2-tiny.tgx"
# The benchmark's GPT-2 124M at B=8 and 16, f32 and bf16, and its plans
# measured on the device: GPT-2 124M with and without the state in host
# memory, and (unless TGC_BUNDLE_LARGE=0) --fit's choices for GPT-2 1558M
# and Llama-3-8B.
large=()
[ "${TGC_BUNDLE_LARGE:-1}" = 0 ] && large=(--no-large)
python3 "$root/bench/gpu/bench_gpu.py" --build "$build" --prepare "$out/tgx" \
  "${large[@]}" > /dev/null
rm -f "$out/tgx/"*.mlir

cp "$root/scripts/gpu-run.sh" "$out/run.sh"
cp "$root/test/gpu/Inputs/compare_losses.py" "$root/test/e2e/Inputs/bounds.py" \
  "$root/bench/gpu/bench_gpu.py" \
  "$out/"
du -sh "$out" | cut -f1 | sed 's/^/gpu-bundle: /'
# The same compressed, to travel (tar xJf gpu-bundle.tar.xz there): xz -3
# on every core, 4x faster than the default (-6, one thread) for a file
# 40% larger (91 MB -> 17.7 MB in 10.6 s, against 12.8 MB in 40.6 s, on
# 2 cores).
XZ_OPT="${XZ_OPT:--T0 -3}" tar -C "$(dirname "$out")" -cJf "$out.tar.xz" "$(basename "$out")"
du -sh "$out.tar.xz" | cut -f1 | sed 's/^/gpu-bundle: compressed /' 
