#!/usr/bin/env bash
# Makes .venv-torch2: torch 2 (from PyPI, about 5 GB with its CUDA
# libraries) and torchao, for bench/optim8.py's comparison with torchao's
# low-bit optimizers (bench/torchao_optim.py). Benchmarks only: the tests
# use Debian's torch 1.13.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv-torch2"
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install -q torch==2.5.1 torchao==0.7.0 numpy
"$venv/bin/python" -c "import torch, torchao; print('torch', torch.__version__, 'torchao', torchao.__version__)"
