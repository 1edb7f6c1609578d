"""Runs a job that must fail, and checks that it ends by itself.
Usage: expect_job_ends.py LIMIT COMMAND ARGS...
Prints the job's output, then `ended with status N in under LIMIT s`, and
exits 0 when it failed (a non-zero status) within LIMIT seconds; exits 1
when it succeeded, or hung and had to be stopped."""
import subprocess
import sys
import time

limit = float(sys.argv[1])
start = time.monotonic()
try:
    done = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=limit)
except subprocess.TimeoutExpired as stopped:
    sys.stdout.write((stopped.output or b"").decode(errors="replace"))
    sys.exit(f"the job was still running after {limit:g} s: it hangs")
sys.stdout.write(done.stdout.decode(errors="replace"))
if done.returncode == 0:
    sys.exit("the job succeeded, but it should have failed")
print(f"ended with status {done.returncode} in under {limit:g} s "
      f"({time.monotonic() - start:.1f} s)")
