#!/usr/bin/env bash
# Configures (once) and builds tgc into build/ with CMake and Ninja.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TGC_BUILD_DIR:-$root/build}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
fi
ninja -C "$build" "$@"
