"""Sends signals to a run at a chosen moment and reports how it ended.
Usage: signal_run.py --when GLOB [--signal INT|TERM] [--again SECONDS]
                     [--truncate FILE] [--alongside COMMAND] -- COMMAND ARGS...
Starts COMMAND (SIGINT and SIGTERM at their defaults), waits until a file
matches GLOB (a save's temporary file, or the metrics written), then:
truncates FILE to 0 bytes and waits a second (--truncate), runs
--alongside (a shell command) while the save is under way and prints its
output, sends the signal, and again SECONDS later (--again). Prints the
run's output, `status N` (or `signal N`) and the temporary files
(`*.tmp.*`) left in GLOB's directory. Gives up after 60 s."""
import argparse
import glob
import os
import signal
import subprocess
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--when", required=True)
parser.add_argument("--signal", default="INT", choices=("INT", "TERM"))
parser.add_argument("--again", type=float)
parser.add_argument("--truncate")
parser.add_argument("--alongside")
parser.add_argument("command", nargs=argparse.REMAINDER)
args = parser.parse_args()
command = args.command[1:] if args.command[:1] == ["--"] else args.command
number = getattr(signal, "SIG" + args.signal)


def defaults():
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


run = subprocess.Popen(command, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, preexec_fn=defaults)
deadline = time.monotonic() + 60
while not glob.glob(args.when):
    if run.poll() is not None or time.monotonic() > deadline:
        sys.stdout.write(run.communicate()[0].decode(errors="replace"))
        sys.exit(f"nothing matched {args.when} while the run ran")
    time.sleep(0.01)
if args.truncate:
    os.truncate(args.truncate, 0)
    time.sleep(1.0)
if args.alongside:
    other = subprocess.run(args.alongside, shell=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
    print("alongside:", other.stdout.decode(errors="replace").strip(),
          f"(status {other.returncode})")
run.send_signal(number)
if args.again is not None:
    time.sleep(args.again)
    if run.poll() is None:
        run.send_signal(number)
try:
    output = run.communicate(timeout=60)[0]
except subprocess.TimeoutExpired:
    run.kill()
    sys.exit("the run did not stop within 60 s of the signal")
sys.stdout.write(output.decode(errors="replace"))
code = run.returncode
print(f"signal {-code}" if code < 0 else f"status {code}")
left = sorted(os.path.basename(p) for p in
              glob.glob(os.path.join(os.path.dirname(args.when), "*.tmp.*")))
print("temporary files left:", left)
