#!/usr/bin/env bash
# Installs what tgc needs to build and test on Debian 12: MLIR/LLVM 22 from
# Debian's packages, the build tools, and the Python pieces lit and the
# reference tests use. Idempotent: packages already present are skipped by
# apt-get itself; run as root (or with sudo available).
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi

PACKAGES=(
  cmake ninja-build g++ python3
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  # tgc-tblgen links LLVM's static TableGen and Support libraries, whose
  # link interface names zstd's shared library.
  libzstd-dev
  libgtest-dev flatbuffers-compiler libflatbuffers-dev
  # The CPU backend: OpenBLAS's GEMMs (its OpenMP build shares the kernels'
  # thread pool; the pthread build is the fallback) and SLEEF's vectorized
  # math.
  libopenblas-dev libopenblas0-openmp libsleef-dev
  python3-torch
  # tools/python/tgc-data.py and tgcd.py (datasets of examples) read and write
  # arrays with numpy.
  python3-numpy
  # Data parallelism: Open MPI runs the CPU backend's collectives and
  # starts multi-process jobs (mpirun -n N tgc-run).
  libopenmpi-dev openmpi-bin
  # The runtime's command lines and JSON: CLI11 and nlohmann-json (headers).
  libcli11-dev nlohmann-json3-dev
  # The fuzzing harnesses: clang and its libFuzzer and sanitizer runtimes,
  # matching LLVM 22 (scripts/fuzz.sh).
  clang-22 libclang-rt-22-dev
  # Test only: the remat optimality test's exact baseline
  # (test/Transforms/Inputs/checkmate.py, a MILP solved with CBC).
  coinor-cbc python3-pulp
  # Test only: the venv for transformers and PEFT (below).
  python3-venv
  # Bench only: the training curves of bench/optim8.py.
  python3-matplotlib
  # Test only: tgc-report's pages opened in a real browser, headless
  # (test/tools/tgc-report), and the pictures of them in docs/plan.md.
  chromium
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -ne 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi

# Test only: Hugging Face's transformers and PEFT, to check that tgc's LoRA
# adapter files load into PEFT and merge as it merges them
# (test/e2e/torch/lora-peft.test). They run on Debian's torch 1.13 in a
# venv that sees the system packages; --no-deps keeps pip from replacing
# torch. Optional: without a package index the test is unsupported.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-hf"
if ! "$VENV/bin/python" -c "import peft, transformers" 2>/dev/null; then
  if /usr/bin/python3 -m venv --system-site-packages "$VENV" &&
     "$VENV/bin/pip" install -q --no-deps transformers==4.30.2 peft==0.4.0 \
       accelerate==0.20.3 huggingface_hub==0.16.4 safetensors==0.3.1 \
       tokenizers==0.13.3 regex pyyaml filelock tqdm requests packaging \
       psutil fsspec typing_extensions; then
    echo "install-deps: transformers and PEFT in $VENV"
  else
    echo "install-deps: could not install transformers and PEFT (the PEFT test will be unsupported)"
  fi
fi

# Test only: transformers 4.47.1, the last release that runs on Debian's
# torch 1.13 and the first reference here for Llama with grouped-query
# attention, Mistral and Qwen2 (test/e2e/torch/llama-vs-transformers.test).
# Its own venv, as it needs newer tokenizers and safetensors than PEFT 0.4's
# transformers; about 15 s with a package index, unsupported without.
VENV47="$ROOT/.venv-hf47"
if ! "$VENV47/bin/python" -c "from transformers import Qwen2Config" 2>/dev/null; then
  if /usr/bin/python3 -m venv --system-site-packages "$VENV47" &&
     "$VENV47/bin/pip" install -q --no-deps transformers==4.47.1 \
       huggingface_hub==0.26.5 safetensors==0.4.5 tokenizers==0.21.0 regex \
       pyyaml filelock tqdm requests packaging fsspec typing_extensions; then
    echo "install-deps: transformers 4.47.1 in $VENV47"
  else
    echo "install-deps: could not install transformers 4.47.1 (the Llama-family tests will be unsupported)"
  fi
fi

# PEFT 0.13.2 (and the accelerate it imports) beside transformers 4.47.1:
# the reference for LoRA on Mixtral's experts (test/tools/tgc-import/
# hf-moe.test), which PEFT 0.4's transformers predates.
if [ -x "$VENV47/bin/python" ] && ! "$VENV47/bin/python" -c "import peft" 2>/dev/null; then
  if "$VENV47/bin/pip" install -q --no-deps peft==0.13.2 accelerate==1.1.1 \
       psutil; then
    echo "install-deps: PEFT 0.13.2 in $VENV47"
  else
    echo "install-deps: could not install PEFT in $VENV47 (LoRA on experts against PEFT will be unsupported)"
  fi
fi

# Jinja (and MarkupSafe) in both venvs: tgc-data renders a tokenizer
# directory's chat template with it (the template language transformers'
# apply_chat_template uses), and the tests compare with apply_chat_template.
for venv in "$VENV" "$VENV47"; do
  if [ -x "$venv/bin/python" ] && ! "$venv/bin/python" -c "import jinja2" 2>/dev/null; then
    "$venv/bin/pip" install -q --no-deps jinja2==3.1.4 markupsafe==2.1.5 ||
      echo "install-deps: could not install jinja2 in $venv (chat templates will be unsupported)"
  fi
done
