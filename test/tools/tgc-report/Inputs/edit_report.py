"""Writes a copy of a JSON file with one Python statement applied to it (as
`r`), for tests that need a report damaged in one field.

  edit_report.py IN OUT STATEMENT
"""
import json
import sys

r = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(r, open(sys.argv[2], "w"), indent=1)
