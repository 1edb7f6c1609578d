#!/bin/bash
# Remakes the .tgx seeds of tgc-fuzz-tgx with the tools of a build (after a
# change of the format, whose version the runtime checks first: an old
# seed stops there and fuzzes nothing). Small on purpose: the harness runs
# a step only when its memory is under 256 KiB.
#   bash fuzz/make-tgx-seeds.sh [build/bin]
set -euo pipefail
bin=${1:-build/bin}
here=$(cd "$(dirname "$0")" && pwd)/corpus/tgx
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin/tgc-models" mlp --widths 4,3,2 --batch 5 > "$tmp/mlp.mlir"
"$bin/tgc-models" gpt2 --n-layer 1 --n-head 2 --n-embd 16 --vocab-size 32 \
  --seq-len 8 --batch 2 > "$tmp/gpt2.mlir"
compile() { "$bin/tgc-compile" "$@" 2> /dev/null; }
compile "$tmp/mlp.mlir" -o "$here/mlp.tgx"
compile "$tmp/mlp.mlir" -o "$here/mlp-sgd.tgx" --optimizer=sgd --momentum=0.9
compile "$tmp/mlp.mlir" -o "$here/mlp-accum.tgx" --grad-accum=2 \
  --clip-grad-norm=1.0
compile "$tmp/gpt2.mlir" -o "$here/gpt2-tiny.tgx"
compile "$tmp/gpt2.mlir" -o "$here/gpt2-tiny-f16.tgx" --amp=f16
# A 4-bit base: the table of 4-bit weights, quantized as drawn.
compile "$tmp/gpt2.mlir" -o "$here/gpt2-tiny-qlora.tgx" \
  --lora=rank=4,alpha=8,targets=c_attn --quantize-frozen=nf4
