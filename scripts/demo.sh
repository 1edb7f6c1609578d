#!/usr/bin/env bash
# Sets up, builds and runs tgc's main job on the built-in example: generates
# GPT-2 small (124M), verifies it in tgc-opt, and prints its parameter count
# and op statistics.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TGC_BUILD_DIR:-$root/build}"
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh"
"$build/bin/tgc-models" gpt2 --preset 124M |
  "$build/bin/tgc-opt" --tg-model-stats -o /dev/null
