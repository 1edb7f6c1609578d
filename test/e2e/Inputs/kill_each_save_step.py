"""Kills a directory save at each of its steps in turn (issue 49).

Usage: kill_each_save_step.py OLD [--fallback] -- COMMAND ARGS...

COMMAND saves into the directory named by the argument `{}`. The script
first runs it to completion over a copy of OLD, which gives the new
directory. Then, for N = 1, 2, ...: a fresh copy of OLD, the command with
TGC_TEST_ABORT_AT_SAVE_STEP=N (tgc-run aborts at the N-th step of the save:
each file written, each link, the swap, each removal), and a check that the
directory holds exactly the old files or exactly the new ones (names, bytes,
links; the user's other files included), until a run completes. With
--fallback the save is told to swap with two renames instead of one
exchange (TGC_TEST_NO_RENAME_EXCHANGE), where a kill between the two may
also leave the directory absent with the old one, whole, beside it (and
the next save must put it back and save over it). Finally
no staging directory may be left beside it. Prints a summary and exits 1 on
the first directory that is neither."""
import hashlib
import os
import shutil
import signal
import subprocess
import sys

split = sys.argv.index("--")
options, command = sys.argv[1:split], sys.argv[split + 1:]
old = options[0]
fallback = "--fallback" in options
parent = os.path.dirname(os.path.abspath(old))


def snapshot(root):
    """Every entry under root: file bytes (hashed), link targets, dirs."""
    if not os.path.isdir(root):
        return None
    entries = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(directory, name)
            key = os.path.relpath(path, root)
            if os.path.islink(path):
                entries[key] = "link:" + os.readlink(path)
            elif os.path.isdir(path):
                entries[key] = "dir"
            else:
                with open(path, "rb") as f:
                    entries[key] = hashlib.sha256(f.read()).hexdigest()
    return entries


def fresh_copy(target):
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(old, target, symlinks=True)


def run(target, step):
    env = dict(os.environ)
    env.pop("TGC_TEST_ABORT_AT_SAVE_STEP", None)
    if step:
        env["TGC_TEST_ABORT_AT_SAVE_STEP"] = str(step)
    if fallback:
        env["TGC_TEST_NO_RENAME_EXCHANGE"] = "1"
    args = [target if a == "{}" else a for a in command]
    return subprocess.run(args, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=120)


def staging_left(target):
    prefix = "." + os.path.basename(target) + ".tgc-save."
    return sorted(n for n in os.listdir(parent) if n.startswith(prefix))


def clear_staging(target):
    for name in staging_left(target):
        shutil.rmtree(os.path.join(parent, name))


old_files = snapshot(old)
new_dir = os.path.join(parent, "kill-new")
fresh_copy(new_dir)
done = run(new_dir, 0)
if done.returncode != 0:
    sys.exit("the save failed: " + done.stderr.decode(errors="replace"))
new_files = snapshot(new_dir)
if new_files == old_files:
    sys.exit("the new directory equals the old one: nothing to tell apart")
if staging_left(new_dir):
    sys.exit("a completed save left " + ", ".join(staging_left(new_dir)))

work = os.path.join(parent, "kill-work")
counts = {"old": 0, "new": 0, "absent, old beside it": 0}
step = 0
while True:
    step += 1
    if step > 500:
        sys.exit("the save never completed")
    fresh_copy(work)
    clear_staging(work)
    done = run(work, step)
    if done.returncode == 0:
        break
    if done.returncode != -signal.SIGABRT:
        sys.exit(f"step {step}: the save ended with status {done.returncode}"
                 f" rather than the injected abort: "
                 + done.stderr.decode(errors="replace"))
    now = snapshot(work)
    if now == old_files:
        counts["old"] += 1
    elif now == new_files:
        counts["new"] += 1
    elif now is None and fallback and any(
            snapshot(os.path.join(parent, n)) == old_files
            for n in staging_left(work)):
        counts["absent, old beside it"] += 1
        # The next save puts the old directory back first, then saves:
        # the user's files come through.
        if run(work, 0).returncode != 0 or snapshot(work) != new_files:
            sys.exit("a save after a kill between the renames did not "
                     "give the new directory")
        if staging_left(work):
            sys.exit("a save after a kill between the renames left " +
                     ", ".join(staging_left(work)))
    else:
        sys.exit(f"killed at step {step}, the directory is neither the old "
                 f"model nor the new one")
    # The next save after a kill completes and cleans what the kill left.
    if step == 2:
        if run(work, 0).returncode != 0 or snapshot(work) != new_files:
            sys.exit("a save after a kill did not complete")
        if staging_left(work):
            sys.exit("a save after a kill left " +
                     ", ".join(staging_left(work)))
if snapshot(work) != new_files or staging_left(work):
    sys.exit("the completed save is not the new directory, or left staging")
print(f"killed at each of {step - 1} steps: "
      + ", ".join(f"{v} {k}" for k, v in counts.items() if v)
      + f"; step {step} completed the save")
shutil.rmtree(work)
shutil.rmtree(new_dir)
