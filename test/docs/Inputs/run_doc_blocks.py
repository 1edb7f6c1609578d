"""Runs every shell block of the docs, as a doctest runs a docstring's
examples, so that no command in them rots.

Each ```sh block of each FILE runs in a fresh directory (bash, -e and
pipefail) beside links to the build (`build`), `scripts`, `tools` and the
venvs, with the fixtures it names created first. An HTML comment on the
line before the fence, invisible where the Markdown is read, says what a
block needs:

  <!-- doctest: fixtures: llama-dir chats.jsonl -->   made before it runs
  <!-- doctest: needs: mpi -->                        skipped without mpirun
  <!-- doctest: skip: REASON -->                      not run; REASON says why

A skip without a reason is an error, as is a fixture this file does not
know. Prints one line a block (ran, skipped and why) and the totals;
exits 1 at the first block that fails, with its output.

Usage: run_doc_blocks.py --root SRC --bin BIN --work DIR FILE.md..."""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = re.compile(r"<!--\s*doctest:(.*?)-->")


def fixtures(root, bin_dir, hf47):
    """Each fixture: the commands (run in the block's directory) that make
    it, small enough to run in seconds on a CPU."""
    tgc_inputs = os.path.join(root, "test", "tools", "tgc", "Inputs")
    return {
        "llama-dir": [[hf47, os.path.join(tgc_inputs, "make_model_dir.py"),
                       "llama-dir"]],
        "chats.jsonl": [[sys.executable, os.path.join(tgc_inputs, "chats.py"),
                         "32", "chats.jsonl"]],
        "pairs.jsonl": [[sys.executable,
                         os.path.join(HERE, "preference_pairs.py"), "8",
                         "pairs.jsonl"]],
        "run.yaml": [["sh", "-c", "printf 'model: llama-dir\\ndata: "
                      "chats.jsonl\\nout: tuned\\nsteps: 20\\n' > run.yaml"]],
        "gpt2.mlir": [["sh", "-c", f"{bin_dir}/tgc-models gpt2 --preset 124M "
                       "--batch 8 > gpt2.mlir"]],
        "gpt2.tgx": [["sh", "-c", f"{bin_dir}/tgc-models gpt2 --preset tiny "
                      f"| {bin_dir}/tgc-compile - -o gpt2.tgx"]],
        "opt-dir": [[hf47, "-c", "import transformers as T; "
                     "T.OPTForCausalLM(T.OPTConfig(vocab_size=96, "
                     "hidden_size=64, ffn_dim=128, num_hidden_layers=2, "
                     "num_attention_heads=4, max_position_embeddings=512, "
                     "word_embed_proj_dim=64)).save_pretrained('opt-dir')"]],
        # Token ids below the OPT fixture's 96.
        "chats.tgcd": [["sh", "-c", f"{bin_dir}/tgc-data generate -o g.jsonl "
                        "--examples 32 --seed 1 --median 40 --max 120 "
                        "--pre-tokenized --vocab-size 96 && "
                        f"{bin_dir}/tgc-data encode --input g.jsonl "
                        "--vocab-size 96 -o chats.tgcd"]],
        "gpt2-1558M.mlir": [["sh", "-c", f"{bin_dir}/tgc-models gpt2 --preset "
                             "1558M --batch 1 > gpt2-1558M.mlir"]],
    }


def blocks(path):
    """(line, marks, text) of each ```sh block."""
    lines = open(path).read().split("\n")
    found = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            marks = {}
            if i > 0:
                for item in MARK.findall(lines[i - 1]):
                    for part in item.split(";"):
                        key, _, value = part.strip().partition(":")
                        marks[key.strip()] = value.strip()
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            indent = len(lines[i]) - len(lines[i].lstrip())
            found.append((i + 1, marks,
                          "\n".join(l[indent:] for l in lines[i + 1:j])))
            i = j
        i += 1
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    build = os.path.dirname(os.path.abspath(args.bin))
    hf47 = os.path.join(root, ".venv-hf47", "bin", "python")
    made = fixtures(root, os.path.abspath(args.bin), hf47)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    ran = skipped = 0
    for name in args.files:
        for line, marks, text in blocks(os.path.join(root, name)):
            where = f"{name}:{line}"
            unknown = set(marks) - {"skip", "fixtures", "needs"}
            if unknown:
                sys.exit(f"{where}: unknown doctest mark {sorted(unknown)}")
            if "skip" in marks:
                if not marks["skip"]:
                    sys.exit(f"{where}: a skip needs its reason")
                print(f"{where}: skipped: {marks['skip']}")
                skipped += 1
                continue
            if marks.get("needs") == "mpi" and not shutil.which("mpirun"):
                print(f"{where}: skipped: needs mpirun, which this machine lacks")
                skipped += 1
                continue
            work = os.path.join(args.work, f"{os.path.basename(name)}-{line}")
            shutil.rmtree(work, ignore_errors=True)
            os.makedirs(work)
            os.symlink(build, os.path.join(work, "build"))
            for link in ("scripts", "tools", ".venv-hf", ".venv-hf47"):
                if os.path.exists(os.path.join(root, link)):
                    os.symlink(os.path.join(root, link), os.path.join(work, link))
            for fixture in marks.get("fixtures", "").split():
                if fixture not in made:
                    sys.exit(f"{where}: unknown fixture '{fixture}'")
                for command in made[fixture]:
                    subprocess.run(command, cwd=work, check=True, env=env,
                                   stdout=subprocess.DEVNULL)
            block_env = dict(env)
            if marks.get("needs") == "mpi":
                # As lit's %mpirun: Open MPI's plugins leak at exit, in frames
                # LeakSanitizer cannot name, and containers forbid its
                # single-copy mechanism.
                asan = env.get("ASAN_OPTIONS", "")
                block_env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + \
                    "detect_leaks=0"
                block_env["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none"
            result = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text],
                                    cwd=work, env=block_env,
                                    capture_output=True, text=True)
            if result.returncode != 0:
                print(result.stdout[-4000:], file=sys.stderr)
                print(result.stderr[-4000:], file=sys.stderr)
                sys.exit(f"{where}: the block failed with status {result.returncode}")
            print(f"{where}: ran")
            ran += 1
    print(f"{ran} blocks ran, {skipped} skipped")


main()
