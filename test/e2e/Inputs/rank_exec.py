"""Runs a command as one rank of an mpirun job, with arguments per rank.
Usage: rank_exec.py [--kill-rank R --kill-after SECONDS] -- COMMAND ARGS...
An argument holding `::` is a choice per rank, A::B: A on rank 0, B on
rank 1 (OMPI_COMM_WORLD_RANK). With --kill-rank, that rank's process is
killed (SIGKILL) SECONDS after it starts: a rank that dies mid-run."""
import os
import signal
import sys
import time

args = sys.argv[1:]
kill_rank, kill_after = -1, 0.0
while args and args[0] != "--":
    if args[0] == "--kill-rank":
        kill_rank = int(args[1])
    elif args[0] == "--kill-after":
        kill_after = float(args[1])
    else:
        sys.exit(f"rank_exec.py: unknown option {args[0]}")
    args = args[2:]
command = args[1:]
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
command = [a.split("::")[rank] if "::" in a else a for a in command]
if rank == kill_rank:
    target = os.getpid()  # the command, once exec'd below
    if os.fork() == 0:
        time.sleep(kill_after)
        os.kill(target, signal.SIGKILL)
        os._exit(0)
os.execvp(command[0], command)
