#!/usr/bin/env bash
# Records what a refactoring must leave unchanged, to compare two builds:
#   scripts/same-bits.sh BUILD_BIN OUT
# compiles the tiny GPT-2, the MLP and BERT in nine configurations (f32,
# accumulation, bf16 + remat + tf32, f16 with SGD momentum and loss
# scaling, shape buckets, LoRA + 8-bit state, 8-bit Adafactor, ZeRO-2 over
# two ranks) into OUT (executables and memory reports), and writes the
# losses and loss scales of 4 CPU steps and, with the CUDA emulator, 3
# emulated steps of eight of them (OUT/*.loss). Run it with the build
# before and the build after, then `cmp` the two directories' *.tgx,
# *.json and *.loss files: a refactoring leaves every byte as it was.
set -euo pipefail
bin="$(cd "$1" && pwd)"
mkdir -p "$2"
out="$(cd "$2" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
"$bin/tgc-models" mlp > m.mlir
"$bin/tgc-models" gpt2 --preset tiny --batch 2 --seq-len 16 > g.mlir
"$bin/tgc-models" bert --preset tiny --batch 2 --seq-len 16 > b.mlir
compile() { name=$1; shift; "$bin/tgc-compile" "$@" -o "$out/$name.tgx" 2> /dev/null; }
compile m m.mlir --memory-report "$out/m.json"
compile g g.mlir --memory-report "$out/g.json"
compile ga g.mlir --grad-accum=2 --memory-report "$out/ga.json"
compile gr g.mlir --amp=bf16 --remat=blocks --allow-tf32
compile gf g.mlir --amp=f16 --optimizer=sgd --momentum=0.9
compile b b.mlir --seq-buckets=8,16 --memory-report "$out/b.json"
compile ml m.mlir --lora=rank=2,targets=layers.0 --optimizer-state=8bit
compile g8 g.mlir --optimizer-state=8bit --optimizer=adafactor
compile gd g.mlir --world-size 2 --data-parallel=zero2
losses() {
  python3 -c "import json, sys
for line in open(sys.argv[1]):
    row = json.loads(line)
    print(row.get('loss'), row.get('loss_scale'))" "$1"
}
for c in m g ga gr gf b ml g8; do
  "$bin/tgc-run" "$out/$c.tgx" --device cpu --steps 4 --quiet \
    --metrics "$tmp/$c.cpu.jsonl" > /dev/null 2>&1
  losses "$tmp/$c.cpu.jsonl" > "$out/$c.cpu.loss"
  if [ -x "$bin/tgc-run-cuda-emu" ]; then
    "$bin/tgc-run-cuda-emu" "$out/$c.tgx" --device cuda --steps 3 --quiet \
      --metrics "$tmp/$c.emu.jsonl" > /dev/null 2>&1
    losses "$tmp/$c.emu.jsonl" > "$out/$c.emu.loss"
  fi
done
echo "same-bits: $(ls "$out" | wc -l) files in $out"
