import copy
import json

with open("data/config.json") as f:
    base = json.load(f)
scenarios = {}
for name, vat, target in (("baseline", base["vat"], base["target_units"]), ("low-vat", 0.055, 2500),
                          ("stretch", base["vat"], 4000)):
    cfg = copy.deepcopy(base)
    cfg["vat"] = vat
    cfg["target_units"] = target
    cfg["regions"]["North"]["manager"] += f" ({name})"
    scenarios[name] = cfg
assert base["regions"]["North"]["manager"] == "m-north"
with open("scenarios.json", "w") as f:
    json.dump(scenarios, f, indent=1)
print({k: (v["vat"], v["target_units"]) for k, v in scenarios.items()})
