"""Checks a tgc-report plan page as a browser rendered it (chromium
--dump-dom): no script errors, and what it drew (#checks) against the
report itself: the peak it marks is the report's peak and the op where the
drawn total is largest, and at every sampled op the categories it stacked
are the report's (persistent tensors by kind, the timeline's live bytes by
kind) and sum to the plan's bytes there (the persistent region's device
part plus the arena's live bytes).

  check_page.py DOM REPORT [OTHER]
"""
import html
import json
import re
import sys

dom = open(sys.argv[1]).read()
report = json.load(open(sys.argv[2]))
other = len(sys.argv) > 3


def fail(message):
    sys.exit("page check failed: " + message)


errors = re.search(r'<div id="errors">(.*?)</div>', dom, re.S)
if errors is None:
    fail("no #errors element: the page did not load")
if errors.group(1).strip():
    fail("script errors: " + html.unescape(errors.group(1)))
checks = re.search(r'<pre id="checks">(.*?)</pre>', dom, re.S)
if checks is None or not checks.group(1).strip():
    fail("the script did not run to its end (#checks is empty)")
drawn = json.loads(html.unescape(checks.group(1)))

timeline = report["timeline"]
device = report["persistent_bytes"] - report["host_bytes"]
totals = [device + sum(row) for row in timeline["bytes"]]
peak = report["peak"]["op_index"]
if drawn["ops"] != report["ops"]:
    fail(f"{drawn['ops']} ops drawn, the report has {report['ops']}")
if drawn["report_peak_op"] != peak or drawn["drawn_peak_op"] != peak:
    fail(f"peak marked at #{drawn['report_peak_op']}, drawn highest at "
         f"#{drawn['drawn_peak_op']}; the report's peak is #{peak}")
if max(totals) != totals[peak]:
    fail("the report's peak is not its largest total")
if sum(timeline["bytes"][peak]) != report["peak_live_bytes"]:
    fail("the timeline at the peak is not the report's peak live bytes")
persistent = {}
for tensor in report["persistent"]:
    if not tensor.get("host"):
        persistent[tensor["kind"]] = persistent.get(tensor["kind"], 0) + \
            tensor["bytes"]
for sample in drawn["samples"]:
    op, by = sample["op"], sample["by_category"]
    if sample["total"] != totals[op] or sum(by.values()) != totals[op]:
        fail(f"at #{op} the page drew {sample['total']} bytes "
             f"(categories {sum(by.values())}), the plan has {totals[op]}")
    for kind, value in persistent.items():
        if by.get(kind) != value:
            fail(f"at #{op} '{kind}' is {by.get(kind)}, not {value}")
    for kind, value in zip(timeline["kinds"], timeline["bytes"][op]):
        if by.get(kind, 0) != value:
            fail(f"at #{op} '{kind}' is {by.get(kind)}, not {value}")
breakdown = sum(report["peak"]["breakdown"].values())
padding = device - sum(persistent.values())
if breakdown + padding != totals[peak]:
    fail(f"the breakdown at the peak sums to {breakdown} (+{padding} of "
         f"padding), the plan to {totals[peak]}")
if drawn["recomputed_marks"] != len(report["remat"]["ops"]):
    fail(f"{drawn['recomputed_marks']} recomputed ops marked, the report "
         f"has {len(report['remat']['ops'])}")
if drawn["compare"] != other:
    fail("the second plan is " + ("missing" if other else "drawn"))
print(f"page drawn without script errors: peak #{peak} "
      f"({totals[peak]} bytes), {len(drawn['samples'])} ops checked, "
      f"{drawn['areas']} areas, {drawn['recomputed_marks']} recomputed ops"
      + (", compared" if other else ""))
