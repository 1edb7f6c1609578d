"""Sets fields of a config.json in place, each value parsed as JSON (for
tests of settings the import refuses).
Usage: edit_config.py CONFIG.json FIELD=VALUE..."""
import json
import sys

path = sys.argv[1]
with open(path) as f:
    config = json.load(f)
for item in sys.argv[2:]:
    field, value = item.split("=", 1)
    config[field] = json.loads(value)
with open(path, "w") as f:
    json.dump(config, f, indent=2)
