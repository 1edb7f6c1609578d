"""Checks a tgc-report run page as a browser rendered it (chromium
--dump-dom): no script errors, and for every run and panel as many points
as the metrics file has values of that metric, ending at its last one.

  check_run_page.py DOM METRICS...
"""
import html
import json
import math
import re
import sys

dom = open(sys.argv[1]).read()
runs = [[json.loads(line) for line in open(path) if line.strip()]
        for path in sys.argv[2:]]


def fail(message):
    sys.exit("run page check failed: " + message)


errors = re.search(r'<div id="errors">(.*?)</div>', dom, re.S)
if errors is None:
    fail("no #errors element: the page did not load")
if errors.group(1).strip():
    fail("script errors: " + html.unescape(errors.group(1)))
checks = re.search(r'<pre id="checks">(.*?)</pre>', dom, re.S)
if checks is None or not checks.group(1).strip():
    fail("the script did not run to its end (#checks is empty)")
drawn = json.loads(html.unescape(checks.group(1)))
if drawn["runs"] != len(runs):
    fail(f"{drawn['runs']} runs drawn, {len(runs)} files given")


def throughput(rows):
    for row in rows:
        for key in row:
            if key.endswith("_per_s") and key != "real_tokens_per_s":
                return key
    return None


panels = {"training loss": lambda rows: "loss",
          "validation loss": lambda rows: "eval_loss",
          "learning rate": lambda rows: "lr",
          "throughput (a second)": throughput,
          "loss scale": lambda rows: "loss_scale"}
checked = 0
for title, key_of in panels.items():
    expected = []
    for rows in runs:
        key = key_of(rows)
        points = [(row["step"], row[key]) for row in rows
                  if key and isinstance(row.get(key), (int, float))
                  and not isinstance(row.get(key), bool)
                  and math.isfinite(row[key])
                  and (title != "loss scale" or row[key] > 0)]
        expected.append(points)
    if not any(expected):
        if title in drawn["panels"]:
            fail(f"panel '{title}' drawn without data")
        continue
    if title not in drawn["panels"]:
        fail(f"panel '{title}' missing")
    for r, (points, got) in enumerate(zip(expected, drawn["panels"][title])):
        if got["points"] != len(points):
            fail(f"'{title}' of run {r}: {got['points']} points drawn, the "
                 f"file has {len(points)}")
        if points and list(got["last"]) != list(points[-1]):
            fail(f"'{title}' of run {r} ends at {got['last']}, the file at "
                 f"{points[-1]}")
        checked += 1
print(f"run page drawn without script errors: {len(drawn['panels'])} "
      f"panels, {checked} curves checked")
