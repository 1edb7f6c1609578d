# lit configuration of the tgc test suite.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "TGC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tgc_obj_root, "test")
# test/.lit_test_times.txt: each test's seconds on a 2-core machine (the
# larger of the normal and the sanitized build), read by lit when the build
# has no times of its own (a clean clone, as in CI), so that the longest
# tests start first and none of them is left running alone at the end.
# Refresh it from build/test/.lit_test_times.txt when tests change much.

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["tgc", "tgc-opt", "tgc-models", "tgc-compile", "tgc-run", "tgc-report",
     "tgc-tblgen",
     "tgc-unit-tests",
     "tgc-analysis-tests",
     "tgc-cuda-tests", "tgc-cuda-tests-emu", "tgc-cuda-emu-tests",
     "tgc-run-cuda-emu", "tgc-cuda-tests-emu-asan", "tgc-run-cuda-emu-asan",
     "tgc-fuzz-tgx", "tgc-fuzz-safetensors", "tgc-fuzz-tokens", "tgc-fuzz-dataset",
     "tgc-fuzz-ir"],
    [config.tgc_tools_dir])

# Tools called from helper scripts rather than from RUN lines directly.
config.substitutions.append(("%tgc_opt", os.path.join(config.tgc_tools_dir, "tgc-opt")))
config.substitutions.append(("%python", "/usr/bin/python3"))
# The include paths of a TableGen run over the tg ODS (tgc-tblgen).
config.substitutions.append(
    ("%tblgen_includes", "-I %s -I %s" % (os.path.join(config.tgc_src_root, "include"),
                                          config.mlir_include_dir)))
config.substitutions.append(("%tgc_run", os.path.join(config.tgc_tools_dir, "tgc-run")))

# A real browser for tgc-report's pages (Debian's chromium, headless).
import shutil
chromium = shutil.which("chromium")
if chromium:
    config.available_features.add("chromium")
    config.substitutions.append(("%chromium", chromium))

# PyTorch (Debian's python3-torch) as the numerical reference.
import subprocess
if subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("torch")
config.substitutions.append(("%tgc_bin", config.tgc_tools_dir))
config.substitutions.append(("%tgc_obj_root", config.tgc_obj_root))

# Hugging Face's transformers and PEFT, in the venv scripts/install-deps.sh
# makes (on Debian's torch).
hf_python = os.path.join(os.path.dirname(os.path.dirname(__file__)), ".venv-hf",
                         "bin", "python")
if os.path.exists(hf_python) and subprocess.run(
        [hf_python, "-c", "import peft, transformers"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("peft")
    config.available_features.add("transformers")
    config.substitutions.append(("%hfpython", hf_python))

# transformers 4.47.1 (Llama with grouped-query attention, Mistral, Qwen2),
# in a second venv scripts/install-deps.sh makes.
hf47_python = os.path.join(os.path.dirname(os.path.dirname(__file__)),
                           ".venv-hf47", "bin", "python")
if os.path.exists(hf47_python) and subprocess.run(
        [hf47_python, "-c", "import transformers; from transformers import Qwen2Config"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("transformers-llama")
    config.substitutions.append(("%hf47python", hf47_python))
    # PEFT 0.13 beside it: LoRA on Mixtral's experts against PEFT's own.
    if subprocess.run([hf47_python, "-c", "import peft"],
                      stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode == 0:
        config.available_features.add("peft-llama")

# Hugging Face's tokenizers (in the same venv), which tools/python/tgc-data.py
# needs for text; pre-tokenized data and `generate` run under %python.
if os.path.exists(hf_python) and subprocess.run(
        [hf_python, "-c", "import tokenizers"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("tokenizers")
    config.substitutions.append(("%tokpython", hf_python))
config.substitutions.append(
    ("%tgc_data", os.path.join(config.tgc_src_root, "tools", "python", "tgc-data.py")))
# tgc-import (Debian's torch), with the tools of this build.
config.substitutions.append(
    ("%tgc_import", "/usr/bin/python3 " +
     os.path.join(config.tgc_src_root, "tools", "python", "tgc-import.py") +
     " --tools " + config.tgc_tools_dir))

# The exact rematerialization baseline: PuLP with Debian's CBC (coinor-cbc).
import shutil
if shutil.which("cbc") and subprocess.run(
        ["/usr/bin/python3", "-c", "import pulp"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("pulp")

# Data parallelism: `mpi` when Open MPI's mpirun is there (tgc-run is
# built with MPI wherever libopenmpi-dev is installed). `%mpirun` starts
# two ranks (`%mpirun3` three, `%mpirun4` four) on any machine: more ranks than cores (CI
# has two), as root, and without the shared-memory single-copy mechanism
# containers forbid. Under
# the sanitizers (scripts/test-sanitized.sh) its ranks skip LeakSanitizer:
# Open MPI's plugins leave allocations behind at exit, in frames LSan
# cannot name (nor suppress); tgc's code on those paths is leak-checked by
# the single-process tests.
if shutil.which("mpirun"):
    config.available_features.add("mpi")
    asan = os.environ.get("ASAN_OPTIONS", "")
    asan = (asan + ":" if asan else "") + "detect_leaks=0"
    # (%mpirun3 and %mpirun4 first: %mpirun is a prefix of them.)
    for name, ranks in (("%mpirun4", 4), ("%mpirun3", 3), ("%mpirun", 2)):
        config.substitutions.append(
            (name, "env ASAN_OPTIONS=" + asan + " mpirun -n " + str(ranks) +
             " --oversubscribe"))
    for name, value in (("OMPI_ALLOW_RUN_AS_ROOT", "1"),
                        ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
                        ("OMPI_MCA_btl_vader_single_copy_mechanism", "none"),
                        ("OMPI_MCA_rmaps_base_oversubscribe", "1")):
        config.environment[name] = value

# The CUDA backend: `cuda-build` when it was built, `cuda` when a GPU is
# there to run it (nvidia-smi lists one), `cuda-emu` when its code also runs
# on the CUDA emulator (runtime/cuda-emu, built with it).
if config.tgc_have_cuda == "ON":
    config.available_features.add("cuda-build")
    config.available_features.add("cuda-emu")
    # ... and, when built, on the emulator under AddressSanitizer.
    if os.path.exists(os.path.join(config.tgc_tools_dir,
                                   "tgc-run-cuda-emu-asan")):
        config.available_features.add("cuda-emu-asan")
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, timeout=60)
        if listed.returncode == 0 and b"GPU" in listed.stdout:
            config.available_features.add("cuda")
    except (OSError, subprocess.TimeoutExpired):
        pass

# A build with AddressSanitizer and UBSan (scripts/test-sanitized.sh):
# long training runs that measure numerics only, with no code path the
# shorter tests do not also take, are left to the plain build there.
# The bitwise pairings of in_backward_pairs.py train %{pair_steps} steps: 20,
# or 6 there (the code paths are the same; only their repetition differs).
sanitized = getattr(config, "tgc_sanitize", "").upper() in (
    "ON", "1", "TRUE", "YES")
if sanitized:
    config.available_features.add("sanitized")
config.substitutions.append(("%{pair_steps}", "6" if sanitized else "20"))

# Tests that compare runs at 1 and 2 threads need 2 cores.
if len(os.sched_getaffinity(0)) >= 2:
    config.available_features.add("cores-2")

# The CPU kernel set under test (scripts/test-kernel-sets.sh): OpenBLAS's
# kernels (OPENBLAS_CORETYPE) and the vectorized math's instruction set
# (TGC_VECMATH) reach the tools, so that one machine runs the suite as a
# machine with other instruction sets would.
for name in ("OPENBLAS_CORETYPE", "TGC_VECMATH"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
