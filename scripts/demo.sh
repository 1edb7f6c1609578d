#!/usr/bin/env bash
# Sets up, builds and runs tgc's main job on the built-in example: generates
# a small GPT-2, compiles its training step (autodiff, AdamW, memory plan)
# and trains it 200 steps on the CPU on the built-in synthetic task.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TGC_BUILD_DIR:-$root/build}"
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh"
work="$build/demo"
mkdir -p "$work"
"$build/bin/tgc-models" gpt2 --preset tiny -o "$work/gpt2-tiny.mlir"
"$build/bin/tgc-compile" "$work/gpt2-tiny.mlir" -o "$work/gpt2-tiny.tgx" \
  --memory-report="$work/gpt2-tiny.memory.json"
"$build/bin/tgc-run" "$work/gpt2-tiny.tgx" --steps 200 \
  --metrics "$work/gpt2-tiny.metrics.jsonl" --log-every 20
