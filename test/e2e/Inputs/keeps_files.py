"""Runs a command that must fail cleanly and leave the user's files alone.
Usage: keeps_files.py FILE... -- COMMAND ARGS...
Prints the command's output, then `status N; files unchanged` and exits 0
when the command failed with a status (not a signal) in under 60 s and
every FILE has the bytes it had before; otherwise says what went wrong and
exits 1."""
import hashlib
import subprocess
import sys

split = sys.argv.index("--")
files, command = sys.argv[1:split], sys.argv[split + 1:]


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


before = {path: digest(path) for path in files}
try:
    done = subprocess.run(command, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=60)
except subprocess.TimeoutExpired:
    sys.exit("the command hung (still running after 60 s)")
sys.stdout.write(done.stdout.decode(errors="replace"))
if done.returncode < 0:
    sys.exit(f"the command died of signal {-done.returncode}")
if done.returncode == 0:
    sys.exit("the command succeeded, but it should have failed")
changed = [path for path in files if digest(path) != before[path]]
if changed:
    sys.exit(f"changed: {', '.join(changed)}")
print(f"status {done.returncode}; files unchanged")
