#!/usr/bin/env python3
"""Record examples/agent/self-correction.jsonl, the transcript `make demo`
replays with `corral run --model replay:...`.

The model's side is scripted (tests/model-server plays it, checking that
each turn sees the previous error); the code runs for real in corral's
jails on the demo dataset, and `--record` writes the exchange.  The turns
are the classic self-correction run: NameError, FileNotFoundError,
KeyError, a look at the columns, a missing optional dependency, success.

    examples/agent/record.py build/corral
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

TASK = ("Find the top 5 products by revenue in sales.csv, plot the monthly trend, "
        "flag anomalous days, and write a short report.")
COMMENT = ("Scripted for the demo, not recorded from a model: no model is reachable on the machine it was "
           "made on. The model's turns were written by hand (examples/agent/record.py); the code in them ran "
           "for real in corral's jails, and the observations are what it printed.")
ANSWER = """\
Top 5 products by revenue (2025): Whatsit 703,296.00; Gizmo 437,400.00; Gadget 248,744.00;
Thingamajig 158,264.70; Widget 100,450.00.

Four anomalous days (each day against the same weekday in the surrounding nine weeks):
- 2025-05-04 Gizmo: 13,284.00, about 9x its usual level (a bulk order?)
- 2025-07-20 Widget: 1,500.00, about 7x usual
- 2025-10-15 Whatsit: 0.00, no sales at all (a refund or an outage?)
- 2025-11-23 Gadget: 651.00, mildly high

Files: output/top5.csv, output/trend.png (monthly revenue of the top 5),
output/anomalies.csv and output/report.md."""


def code(name):
    with open(os.path.join(HERE, name)) as f:
        return f.read()


def main():
    corral = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "corral"))
    turns = [
        tool_call("run_python", code="top = df.groupby('product')['revenue'].sum()\nprint(top)\n"),
        tool_call("run_python", code="import pandas as pd\ndf = pd.read_csv('sales.csv')\nprint(df.head())\n")
        | {"expect": {"contains": ["NameError"]}},
        tool_call("run_python", code="import pandas as pd\ndf = pd.read_csv('input/sales.csv')\n"
                                     "print(df.groupby('product_name')['Revenue'].sum())\n")
        | {"expect": {"contains": ["FileNotFoundError"]}},
        tool_call("run_python", code="import pandas as pd\ndf = pd.read_csv('input/sales.csv')\n"
                                     "print(df.columns.tolist())\nprint(df.dtypes)\nprint(len(df), 'rows')\n")
        | {"expect": {"contains": ["KeyError: 'product_name'"]}},
        tool_call("run_python", code=code("step5.py"))
        | {"expect": {"contains": ["['Date', 'Product', 'Region', 'Units', 'Revenue']"]}},
        tool_call("run_python", code=code("step6.py"))
        | {"expect": {"contains": ["Missing optional dependency 'tabulate'"]}},
        text(ANSWER) | {"expect": {"contains": ["4 anomalous days", "created output/report.md"]}},
    ]
    out = os.path.join(HERE, "self-correction.jsonl")
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(turns) as srv:
        subprocess.run([sys.executable, os.path.join(ROOT, "examples", "analysis", "generate.py"),
                        os.path.join(tmp, "sales.csv")], check=True)
        if os.path.exists(out):
            os.unlink(out)
        r = subprocess.run([corral, "run", "--base-url", srv.base_url, "--model", "scripted", "--no-trace",
                            "-q", "--record", out, "-i", os.path.join(tmp, "sales.csv"), TASK], cwd=tmp)
    srv.assert_ok()
    if r.returncode != 0:
        raise SystemExit(f"corral run exited {r.returncode}")
    with open(out) as f:
        recorded = f.read()
    with open(out, "w") as f:
        f.write(json.dumps({"comment": COMMENT}) + "\n" + recorded)
    os.chmod(out, 0o644)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
