#!/usr/bin/env bash
# Sets up, builds and runs every tgc test: the README's test command, and
# what CI runs.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh"
bash "$root/scripts/build.sh" check-tgc
