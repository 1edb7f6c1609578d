"""Checks that every tg op reaches the runtime: each op of TGOps.td has a
kernel in format/include/tgc/format/Kernels.def (or is listed there in a
`// compile-only: tg.NAME` line), and each kernel names an op. (That each
kernel has a case in every backend's dispatch and in the loader's
verifier is checked by the compiler: the runtime builds with
-Werror=switch.)
Usage: check_kernels.py TGOps.td Kernels.def"""
import re
import sys

ods = open(sys.argv[1]).read()
table = open(sys.argv[2]).read()
ops = set(re.findall(r'^def TG_\w+Op : \w+<"(\w+)"', ods, re.M))
# An activation's `defm` makes the op and its gradient.
for name in re.findall(r'^defm TG_\w+ : TG_Activation<"(\w+)"', ods, re.M):
    ops |= {name, name + "_grad"}
kernels = set(re.findall(r'^TGC_KERNEL\(\w+, "tg\.(\w+)"\)', table, re.M))
kernels |= set(re.findall(r'^TGC_UNARY\(\w+, \w+, "tg\.(\w+)"', table, re.M))
for name in re.findall(r'^TGC_ACTIVATION\(\w+, \w+, "tg\.(\w+)"', table, re.M):
    kernels |= {name, name + "_grad"}
compile_only = set(re.findall(r'^// compile-only: tg\.(\w+)', table, re.M))
if not ops or not kernels:
    sys.exit("found no ops or no kernels: did a file's syntax change?")
problems = [f"tg.{op} has no kernel in Kernels.def (add one, or list it "
            "as compile-only)" for op in sorted(ops - kernels - compile_only)]
problems += [f"kernel tg.{k} names no op of TGOps.td"
             for k in sorted(kernels - ops)]
problems += [f"tg.{k} is both a kernel and compile-only"
             for k in sorted(kernels & compile_only)]
for problem in problems:
    print(problem)
print(f"{len(ops)} ops, {len(kernels)} kernels, {len(compile_only)} "
      f"compile-only, {len(problems)} problems")
sys.exit(1 if problems else 0)
